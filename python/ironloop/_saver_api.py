"""LangGraph's ``BaseCheckpointSaver`` API on ironloop's savers: a view onto their
storage with LangGraph's shapes.

The savers keep the engine's records (``src/checkpoint``: deltas, snapshots, sealed
text, run leases); these methods read and write those records through the Rust saver
(``_saver_get`` / ``_saver_list`` / ``_saver_put`` ...) and show each as LangGraph's
``CheckpointTuple``: a ``Checkpoint`` dict (``v``, ``id``, ``ts``, ``channel_values``,
``channel_versions``, ``versions_seen``, ``updated_channels``), its metadata, its parent's
config and its pending writes as ``(task_id, channel, value)``.

Two kinds of record are shown:

- one saved through this API (``put``): its snapshot holds the whole checkpoint LangGraph
  gave (values encoded as checkpoint JSON, LangGraph's own fields under ``langgraph``), so
  it reads back as it was put;
- one the engine wrote (a step's writes from its parent): its channel values are the
  thread's state at that checkpoint as the compiled graph that ran on the saver in this
  process loads it (reducers applied). With no such graph, each channel shows its value
  in the nearest snapshot and the writes after it, the last write of a channel winning.

``attach`` puts the methods on ``MemorySaver``, ``SqliteSaver`` and ``PostgresSaver``.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from ironloop._ironloop import (
    _checkpoint_decode,
    _checkpoint_encode,
    _saver_delete_checkpoints,
    _saver_get,
    _saver_list,
    _saver_put,
    _saver_thread_keys,
    _saver_writes,
)
from ironloop.errors import CheckpointNotFoundError

#: Separates a thread id from a subgraph's namespace in a storage key (the engine's
#: ``checkpoint::NS_SEP``).
NS_SEP = "\x1f"

#: The ``v`` of a checkpoint the engine wrote (LangGraph 1.2's checkpoint format).
CHECKPOINT_VERSION = 4

#: LangGraph's fixed write indexes of its special channels (``WRITES_IDX_MAP``): a
#: task's error, interrupt or resume answer replaces the one before it.
SPECIAL_WRITE_IDX = {"__error__": -1, "__scheduled__": -2, "__interrupt__": -3, "__resume__": -4}


class CheckpointTuple(NamedTuple):
    """A checkpoint with its config, metadata, parent's config and pending writes
    (LangGraph's ``CheckpointTuple``)."""

    config: dict[str, Any]
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    parent_config: dict[str, Any] | None = None
    pending_writes: list[tuple[str, str, Any]] | None = None


# ---------------------------------------------------------------------------------
# Keys and configs


async def _to_thread(func: Any, /, *args: Any) -> Any:
    """``asyncio.to_thread``, importing asyncio only when an ``a…`` method runs: a sync
    program never imports it (tests/python/test_cold_paths.py)."""
    import asyncio

    return await asyncio.to_thread(func, *args)


def thread_key(thread_id: str, checkpoint_ns: str) -> str:
    """The storage key of a thread's namespace (the engine's ``thread_key``)."""
    return f"{thread_id}{NS_SEP}{checkpoint_ns}" if checkpoint_ns else thread_id


def split_key(key: str) -> tuple[str, str]:
    """``(thread_id, checkpoint_ns)`` of a storage key."""
    thread_id, _, ns = key.partition(NS_SEP)
    return thread_id, ns


def _configurable(config: dict[str, Any] | None, method: str) -> dict[str, Any]:
    conf = (config or {}).get("configurable") or {}
    if "thread_id" not in conf:
        raise ValueError(
            f"{method} needs config['configurable']['thread_id'], got {config!r}: pass "
            "{'configurable': {'thread_id': ...}}"
        )
    return conf


def _config(thread_id: str, ns: str, checkpoint_id: str) -> dict[str, Any]:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def keys_of_thread(saver: Any, thread_id: str) -> list[str]:
    """The thread's storage keys, its root first, then its subgraphs' namespaces."""
    prefix = thread_id + NS_SEP
    found = [k for k in _saver_thread_keys(saver) if k == thread_id or k.startswith(prefix)]
    return sorted(found, key=lambda k: (k != thread_id, k))


# ---------------------------------------------------------------------------------
# Values: checkpoint JSON, as the engine stores them


def _encode(value: Any) -> Any:
    return json.loads(_checkpoint_encode(value))


def _decode(tree: Any) -> Any:
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return tree
    return _checkpoint_decode(json.dumps(tree))


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat()


def _seconds(ts: Any) -> float:
    if isinstance(ts, str):
        try:
            return datetime.fromisoformat(ts).timestamp()
        except ValueError:
            pass
    return datetime.now(timezone.utc).timestamp()


# ---------------------------------------------------------------------------------
# The graphs that ran on a saver (to fold an engine record's writes through reducers)

_GRAPHS: dict[int, list[weakref.ref[Any]]] = {}


def remember_graph(saver: Any, graph: Any) -> None:
    """Notes that ``graph`` keeps its checkpoints in ``saver``: the view shows the
    channel values of the engine's records as that graph loads them."""
    if saver is None or isinstance(saver, bool):
        return
    # Forget the savers whose graphs are all gone (compiling is rare; the table small).
    for gone in [k for k, rs in _GRAPHS.items() if all(r() is None for r in rs)]:
        del _GRAPHS[gone]
    refs = [r for r in _GRAPHS.get(id(saver), []) if _alive_on(r, saver)]
    refs.append(weakref.ref(graph))
    _GRAPHS[id(saver)] = refs


def _alive_on(ref: weakref.ref[Any], saver: Any) -> bool:
    g = ref()
    return g is not None and g.checkpointer is saver


def _graph_for(saver: Any, ns: str) -> Any:
    """The latest graph compiled with ``saver``, or for a namespace the subgraph its
    nodes lead to (``node:task|node:task``); ``None`` when there is none."""
    from ironloop._compiled_state import _subgraph_of

    refs = [r for r in _GRAPHS.get(id(saver), []) if _alive_on(r, saver)]
    if not refs:
        return None
    graph: Any = refs[-1]()
    for segment in filter(None, ns.split("|")):
        if graph is None:
            return None
        graph = _subgraph_of(graph.builder.actions.get(segment.split(":", 1)[0]))
    return graph


# ---------------------------------------------------------------------------------
# Records -> CheckpointTuple


def _engine_values(saver: Any, key: str, rec: dict[str, Any]) -> dict[str, Any]:
    """The channel values at an engine record: the graph's state there, else the
    nearest snapshot with the writes after it applied (last write wins)."""
    thread_id, ns = split_key(key)
    graph = _graph_for(saver, ns)
    if graph is not None:
        snap = graph._state(_config(thread_id, ns, rec["id"]), False, saver if ns else None)
        state = snap.values
        return dict(state) if isinstance(state, dict) else {"__root__": state}
    by_id = {r["id"]: r for r in map(json.loads, _saver_list(saver, key, None, None))}
    chain = [rec]
    while chain[-1].get("snapshot") is None and chain[-1].get("parent_id") in by_id:
        chain.append(by_id[chain[-1]["parent_id"]])
    values: dict[str, Any] = {}
    for r in reversed(chain):
        snapshot = r.get("snapshot")
        if isinstance(snapshot, dict):
            values.update(snapshot.get("values") or {})
        for w in r.get("writes") or []:
            if not w["channel"].startswith("__"):
                values[w["channel"]] = w["value"]
    return {k: _decode(v) for k, v in values.items()}


def _checkpoint(saver: Any, key: str, rec: dict[str, Any]) -> dict[str, Any]:
    snapshot = rec.get("snapshot")
    snapshot = snapshot if isinstance(snapshot, dict) else {}
    lg = snapshot.get("langgraph")
    if isinstance(lg, dict):
        values = {k: _decode(v) for k, v in (snapshot.get("values") or {}).items()}
        return {
            "v": lg.get("v", CHECKPOINT_VERSION),
            "id": rec["id"],
            "ts": lg.get("ts") or _iso(rec["created_at"]),
            "channel_values": values,
            "channel_versions": lg.get("channel_versions") or {},
            "versions_seen": lg.get("versions_seen") or {},
            "updated_channels": lg.get("updated_channels"),
        }
    return {
        "v": CHECKPOINT_VERSION,
        "id": rec["id"],
        "ts": _iso(rec["created_at"]),
        "channel_values": _engine_values(saver, key, rec),
        "channel_versions": dict(snapshot.get("versions") or {}),
        "versions_seen": {},
        "updated_channels": sorted({w["channel"] for w in rec.get("writes") or []}) or None,
    }


def _metadata(rec: dict[str, Any]) -> dict[str, Any]:
    stored = rec.get("metadata")
    md = _decode(stored) if isinstance(stored, dict) else {}
    md = dict(md) if isinstance(md, dict) else {}
    md.setdefault("source", rec.get("source"))
    md.setdefault("step", rec.get("step"))
    md.setdefault("parents", {})
    return md


def _writes(text: str) -> list[tuple[str, str, Any]]:
    return [(w["task_id"], w["channel"], _decode(w["value"])) for w in json.loads(text)]


def _tuple(saver: Any, key: str, rec: dict[str, Any], writes_text: str) -> CheckpointTuple:
    thread_id, ns = split_key(key)
    parent = rec.get("parent_id")
    return CheckpointTuple(
        config=_config(thread_id, ns, rec["id"]),
        checkpoint=_checkpoint(saver, key, rec),
        metadata=_metadata(rec),
        parent_config=_config(thread_id, ns, parent) if parent else None,
        pending_writes=_writes(writes_text),
    )


# ---------------------------------------------------------------------------------
# The API


def get_tuple(self: Any, config: dict[str, Any]) -> CheckpointTuple | None:
    """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's latest
    in ``checkpoint_ns``), or ``None`` when there is none."""
    conf = _configurable(config, "get_tuple")
    key = thread_key(conf["thread_id"], conf.get("checkpoint_ns") or "")
    try:
        got = _saver_get(self, key, conf.get("checkpoint_id"))
    except CheckpointNotFoundError:
        return None
    if got is None:
        return None
    record, writes = got
    return _tuple(self, key, json.loads(record), writes)


def get(self: Any, config: dict[str, Any]) -> dict[str, Any] | None:
    """The ``Checkpoint`` dict of ``get_tuple``, or ``None``."""
    tup = get_tuple(self, config)
    return tup.checkpoint if tup is not None else None


def list_(
    self: Any,
    config: dict[str, Any] | None,
    *,
    filter: dict[str, Any] | None = None,
    before: dict[str, Any] | None = None,
    limit: int | None = None,
) -> Iterator[CheckpointTuple]:
    """Checkpoints newest first: of every thread (``config=None``), of one thread
    (all its namespaces unless ``checkpoint_ns`` is given), or the one
    ``checkpoint_id``; those whose metadata holds ``filter``'s items, older than
    ``before``'s checkpoint, at most ``limit``."""
    conf = (config or {}).get("configurable") or {}
    if "thread_id" in conf:
        ns = conf.get("checkpoint_ns")
        keys = (
            keys_of_thread(self, conf["thread_id"])
            if ns is None
            else [thread_key(conf["thread_id"], ns)]
        )
    else:
        keys = sorted(_saver_thread_keys(self))
    only = conf.get("checkpoint_id")
    before_id = ((before or {}).get("configurable") or {}).get("checkpoint_id")
    left = limit
    for key in keys:
        records = [json.loads(r) for r in _saver_list(self, key, None, None)]
        if before_id is not None:
            ids = [r["id"] for r in records]
            records = (
                records[ids.index(before_id) + 1 :]
                if before_id in ids
                else [r for r in records if r["id"] < before_id]
            )
        for rec in records:
            if left is not None and left <= 0:
                return
            if only is not None and rec["id"] != only:
                continue
            tup = _tuple(self, key, rec, _saver_writes(self, key, rec["id"]))
            if filter and any(tup.metadata.get(k) != v for k, v in filter.items()):
                continue
            if left is not None:
                left -= 1
            yield tup


def put(
    self: Any,
    config: dict[str, Any],
    checkpoint: dict[str, Any],
    metadata: dict[str, Any],
    new_versions: dict[str, Any],
) -> dict[str, Any]:
    """Saves a LangGraph ``Checkpoint`` as a child of ``config``'s ``checkpoint_id``;
    returns the config naming it. Its whole ``channel_values`` are kept with it (the
    engine's snapshot), so ``new_versions`` only says what changed."""
    conf = _configurable(config, "put")
    thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns") or ""
    versions = checkpoint.get("channel_versions") or {}
    values = checkpoint.get("channel_values") or {}
    snapshot = {
        "v": 1,
        "values": {k: _encode(v) for k, v in values.items()},
        "versions": {k: v for k, v in versions.items() if isinstance(v, int)},
        "langgraph": {
            "v": checkpoint.get("v", CHECKPOINT_VERSION),
            "ts": checkpoint.get("ts"),
            "channel_versions": dict(versions),
            "versions_seen": {
                k: dict(v) for k, v in (checkpoint.get("versions_seen") or {}).items()
            },
            "updated_channels": checkpoint.get("updated_channels"),
        },
    }
    md = dict(metadata or {})
    step = md.get("step")
    record = {
        "snapshot": snapshot,
        "id": checkpoint["id"],
        "parent_id": conf.get("checkpoint_id"),
        "step": step if isinstance(step, int) else -1,
        "source": str(md.get("source") or "update"),
        "writes": [],
        "next": [],
        "created_at": _seconds(checkpoint.get("ts")),
        "metadata": _encode(md),
    }
    _saver_put(self, thread_key(thread_id, ns), [json.dumps(record)], [])
    return _config(thread_id, ns, checkpoint["id"])


def put_writes(
    self: Any,
    config: dict[str, Any],
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> None:
    """Saves a task's writes as pending writes of ``config``'s checkpoint (the first
    write of a ``(task_id, index)`` is kept, as LangGraph's savers keep it)."""
    conf = _configurable(config, "put_writes")
    if "checkpoint_id" not in conf:
        raise ValueError(
            "put_writes needs config['configurable']['checkpoint_id']: pass the config put returned"
        )
    pending = [
        {
            "task_id": task_id,
            "idx": SPECIAL_WRITE_IDX.get(channel, i),
            "node": task_path,
            "channel": channel,
            "value": _encode(value),
        }
        for i, (channel, value) in enumerate(writes)
    ]
    key = thread_key(conf["thread_id"], conf.get("checkpoint_ns") or "")
    _saver_put(self, key, [], [(conf["checkpoint_id"], json.dumps(pending))])


def copy_thread(self: Any, source_thread_id: str, target_thread_id: str) -> None:
    """Copies a thread, every checkpoint of it and of its subgraphs' namespaces with
    their metadata and pending writes, to ``target_thread_id``: its history, not only
    its latest state. Each namespace is copied in one transaction."""
    for key in keys_of_thread(self, source_thread_id):
        records = [json.loads(r) for r in _saver_list(self, key, None, None)]
        records.reverse()  # parents first
        writes = [(r["id"], _saver_writes(self, key, r["id"])) for r in records]
        _, ns = split_key(key)
        _saver_put(
            self,
            thread_key(target_thread_id, ns),
            [json.dumps(r) for r in records],
            [(cid, w) for cid, w in writes if w != "[]"],
        )


def delete_for_runs(self: Any, run_ids: Sequence[str]) -> None:
    """Deletes the checkpoints (and their pending writes) whose metadata names one of
    ``run_ids`` as its ``run_id``, in every thread and namespace."""
    runs = {str(r) for r in run_ids}
    if not runs:
        return
    for key in _saver_thread_keys(self):
        gone = [
            rec["id"]
            for rec in map(json.loads, _saver_list(self, key, None, None))
            if str(_metadata(rec).get("run_id")) in runs
        ]
        if gone:
            _saver_delete_checkpoints(self, key, gone)


def prune(self: Any, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
    """Trims threads' histories: ``"keep_latest"`` keeps each namespace's latest
    checkpoint (and its pending writes), ``"delete"`` deletes the threads."""
    if strategy not in ("keep_latest", "delete"):
        raise ValueError(f"strategy must be 'keep_latest' or 'delete', got {strategy!r}")
    for thread_id in thread_ids:
        if strategy == "delete":
            self.delete_thread(thread_id)
            continue
        for key in keys_of_thread(self, thread_id):
            old = [json.loads(r)["id"] for r in _saver_list(self, key, None, None)][1:]
            if old:
                _saver_delete_checkpoints(self, key, old)


def sweep(self: Any, *, ttl: float, strategy: str = "delete") -> list[str]:
    """Applies a time to live: the threads whose latest checkpoint is older than
    ``ttl`` seconds are pruned with ``strategy`` (``"delete"``: gone; ``"keep_latest"``:
    only their latest checkpoints left), as LangGraph's checkpointer TTL does. Returns
    those threads' ids. Run it periodically (a cron, a worker's loop): the savers
    keep no timer of their own."""
    if not ttl > 0:
        raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
    cutoff = datetime.now(timezone.utc).timestamp() - ttl
    old = []
    for key in _saver_thread_keys(self):
        thread_id, ns = split_key(key)
        latest = _saver_list(self, key, 1, None)
        if not ns and latest and json.loads(latest[0])["created_at"] < cutoff:
            old.append(thread_id)
    prune(self, old, strategy=strategy)
    return sorted(old)


# ---------------------------------------------------------------------------------
# The a… forms: the same calls off the event loop


def _off_loop(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The ``a…`` form ``name`` of ``fn``: the same call, in a worker thread."""

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return await _to_thread(functools.partial(fn, *args, **kwargs))

    call.__name__ = call.__qualname__ = name
    return call


def _off_loop_iter(name: str, fn: Callable[..., Iterator[Any]]) -> Callable[..., Any]:
    """The ``a…`` form ``name`` of the iterator ``fn``: an async iterator over what
    ``fn`` yields, read whole in a worker thread."""

    @functools.wraps(fn)
    async def each(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for item in await _to_thread(lambda: list(fn(*args, **kwargs))):
            yield item

    each.__name__ = each.__qualname__ = name
    return each


def _delete_thread(self: Any, thread_id: str) -> None:
    self.delete_thread(thread_id)


_SYNC: dict[str, Callable[..., Any]] = {
    "get_tuple": get_tuple,
    "get": get,
    "list": list_,
    "put": put,
    "put_writes": put_writes,
    "copy_thread": copy_thread,
    "delete_for_runs": delete_for_runs,
    "prune": prune,
    "sweep": sweep,
}

#: The methods ``attach`` puts on each saver class, by name: the sync ones, and
#: their ``a…`` forms (``delete_thread``'s too; ``alist`` is an async iterator).
METHODS: dict[str, Callable[..., Any]] = {
    **_SYNC,
    "alist": _off_loop_iter("alist", list_),
    **{
        f"a{name}": _off_loop(f"a{name}", fn)
        for name, fn in {**_SYNC, "delete_thread": _delete_thread}.items()
        if name != "list"
    },
}


def attach(*classes: type) -> None:
    """Puts LangGraph's saver API on the saver classes (methods of the Rust classes,
    as if written there: a subclass inherits them)."""
    for cls in classes:
        for name, fn in METHODS.items():
            setattr(cls, name, fn)
