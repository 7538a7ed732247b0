"""Runs: started as asyncio tasks on the server's loop, their stream events fanned out
to every client that streams or joins them, their records kept in ``Records``.

A run's second run on a busy thread is ordered by the engine itself
(``config["multitask_strategy"]``: the run lease queues, steers or rolls back);
this module only refuses ``"reject"`` up front with a 409 and names the outcome of
each run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ironloop._constants import INTERRUPT
from ironloop.errors import RunRolledBackError
from ironloop.types import Command

from .db import Records, now
from .events import SOURCES, EventsView
from .graphs import ServedGraph
from .serde import RawJSON, dumps, to_jsonable
from .state import snapshot_json, thread_interrupts

log = logging.getLogger("ironloop.serve")

#: The API's stream modes and the engine's they are made from.
STREAM_MODES: dict[str, tuple[str, ...]] = {
    "values": ("values",),
    "updates": ("updates",),
    "custom": ("custom",),
    "messages-tuple": ("messages",),
    "messages": ("messages",),
    "debug": ("debug",),
    "tasks": ("tasks",),
    "checkpoints": ("checkpoints",),
    "tools": ("tools",),
    "events": SOURCES,
}
MULTITASK = ("reject", "interrupt", "rollback", "enqueue")
#: Events kept per run for clients that join its stream late (``stream_resumable``).
MAX_KEPT_EVENTS = 10_000


@dataclass
class RunSpec:
    """What a client asked a run to do (checked by ``run_routes``)."""

    graph: ServedGraph
    assistant_id: str
    input: Any
    command: dict[str, Any] | None
    config: dict[str, Any]
    context: Any
    metadata: dict[str, Any]
    stream_modes: list[str]
    subgraphs: bool
    resumable: bool
    interrupt_before: list[str] | None
    interrupt_after: list[str] | None
    multitask_strategy: str
    durability: str | None
    checkpoint_id: str | None
    on_disconnect: str
    raw: dict[str, Any]
    #: The thread's metadata once the run starts (its graph named), when it changes.
    thread_metadata: dict[str, Any] | None = None
    #: Where the run's result is POSTed when it ends (LangGraph's ``webhook``).
    webhook: str | None = None


@dataclass
class ActiveRun:
    record: dict[str, Any]
    spec: RunSpec
    listeners: list[asyncio.Queue[tuple[str, str, str] | None]] = field(default_factory=list)
    kept: list[tuple[str, str, str]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set once the engine streams its first item (it holds the thread's turn) or it
    #: has ended: a later run may then steer it.
    began: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set when a later run interrupts or rolls this one back.
    steered: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    seq: int = 0
    #: Set when a later run steers this one (``"interrupted"``) or a client cancels it.
    outcome: str | None = None
    rollback: bool = False
    error: dict[str, str] | None = None
    #: Sends each event on to another server's clients (``cluster``), once one asks.
    forward: Callable[[ActiveRun, tuple[str, str, str]], None] | None = None
    #: When it started running (for its webhook).
    started_at: str | None = None
    #: Its place among the runs this process started (a thread's runs settle in order).
    order: int = 0
    #: The root graph's last ``values`` item, when the run streams them.
    last_values: Any = None
    #: Set when the engine's stream ended without an error or a stop.
    completed: bool = False
    #: The thread's columns the run's end wrote (``values``, ``interrupts``, ``error``,
    #: ``status``), when it settled the thread: what ``join`` / ``wait`` answer from,
    #: without reading the thread back.
    settled: dict[str, Any] | None = None

    @property
    def run_id(self) -> str:
        return str(self.record["run_id"])

    @property
    def thread_id(self) -> str:
        return str(self.record["thread_id"])

    def publish(self, event: str, data: Any) -> None:
        self.seq += 1
        keep = self.spec.resumable and len(self.kept) < MAX_KEPT_EVENTS
        if not (keep or self.listeners or self.forward is not None):
            return  # nobody reads it: not encoded (a background run's steps, mostly)
        item = (str(self.seq), event, data if isinstance(data, str) else dumps(data))
        if keep:
            self.kept.append(item)
        for q in self.listeners:
            q.put_nowait(item)
        if self.forward is not None:
            self.forward(self, item)

    def close(self) -> None:
        for q in self.listeners:
            q.put_nowait(None)
        self.began.set()
        self.done.set()

    def events(self, after: str | None = None) -> AsyncIterator[tuple[str, str, str]]:
        """This run's events from now on (with ``after``, the kept ones after that id
        first). Subscribes at once, so nothing published after this call is missed."""
        backlog = [e for e in self.kept if after is not None and int(e[0]) > int(after or 0)]
        if self.done.is_set():
            return _replay(backlog)
        q: asyncio.Queue[tuple[str, str, str] | None] = asyncio.Queue()
        self.listeners.append(q)
        return self._follow(q, backlog)

    async def _follow(
        self, q: asyncio.Queue[tuple[str, str, str] | None], backlog: list[tuple[str, str, str]]
    ) -> AsyncIterator[tuple[str, str, str]]:
        try:
            for kept in backlog:
                yield kept
            while (item := await q.get()) is not None:
                yield item
        finally:
            self.listeners.remove(q)


async def _replay(items: list[tuple[str, str, str]]) -> AsyncIterator[tuple[str, str, str]]:
    for item in items:
        yield item


def has_saved_step(graph: ServedGraph, thread_id: str, run_id: str) -> bool:
    """Whether the run saved a step of its thread before its server stopped (the
    thread's latest checkpoint is its own): it then continues from there, input
    ``None``, rather than from its input again."""
    snap = graph.default.get_state({"configurable": {"thread_id": thread_id}})
    return bool((snap.metadata or {}).get("run_id") == run_id)


class Runner:
    """Starts, tracks, cancels and reports runs of this process."""

    def __init__(self, records: Records, max_running: int) -> None:
        self.records = records
        self.active: dict[str, ActiveRun] = {}
        #: The active runs of each thread, in the order they started (``on_thread`` is
        #: asked on every run's start and end: not a scan of every active run).
        self._by_thread: dict[str, list[ActiveRun]] = {}
        self.max_running = max_running
        self._slots = asyncio.Semaphore(max_running)
        self.stopping = False
        #: Called once a run has ended or stopped (``cluster`` tells other servers).
        self.on_end: Callable[[ActiveRun], None] | None = None
        self._webhooks: set[asyncio.Task[None]] = set()
        self._started = 0
        #: Per thread with runs still active: the latest of its runs that has ended.
        self._ended: dict[str, int] = {}

    def room(self) -> int:
        """How many more runs this process can take now."""
        return max(0, self.max_running - len(self.active))

    def on_thread(self, thread_id: str) -> list[ActiveRun]:
        """The thread's active runs, oldest first."""
        return list(self._by_thread.get(thread_id, ()))

    @staticmethod
    def new_record(
        thread_id: str, spec: RunSpec, run_id: str, created_at: str | None = None
    ) -> dict[str, Any]:
        """A pending run's record (``kwargs_json``: its body, as stored)."""
        t = now()
        return {
            "run_id": run_id,
            "thread_id": thread_id,
            "assistant_id": spec.assistant_id,
            "created_at": created_at or t,
            "updated_at": t,
            "status": "pending",
            "metadata": spec.metadata,
            "kwargs": spec.raw,
            "multitask_strategy": spec.multitask_strategy,
            "kwargs_json": dumps(spec.raw),
        }

    def start(
        self, thread_id: str, spec: RunSpec, run_id: str, *, created_at: str | None = None
    ) -> ActiveRun:
        """Starts a new run (or, with ``created_at``, one recorded earlier: by an earlier
        process, or queued by any server)."""
        busy = self.on_thread(thread_id)
        record = self.new_record(thread_id, spec, run_id, created_at)
        if created_at is None:
            if len(self.active) < self.max_running and not busy:
                # A slot is free (every run waiting for one is active): it runs at once,
                # so it is recorded running now rather than by a second commit.
                record["status"] = "running"
            with self.records.transaction():
                self.records.put_run(record)
                self.mark_busy(thread_id, spec)
        else:
            self.mark_busy(thread_id, spec)
        del record["kwargs_json"]
        self._started += 1
        run = ActiveRun(record, spec, order=self._started)
        if spec.multitask_strategy in ("interrupt", "rollback"):
            for other in busy:
                self.steered(other, spec.multitask_strategy)
        self.active[run_id] = run
        self._by_thread.setdefault(thread_id, []).append(run)
        run.task = asyncio.get_running_loop().create_task(self._run(run, busy))
        return run

    @staticmethod
    def steered(run: ActiveRun, action: str) -> None:
        """A later run interrupts or rolls ``run`` back (the engine stops it; this
        names its outcome, and keeps it from starting if it has not)."""
        run.outcome = "interrupted"
        run.rollback = action == "rollback"
        run.steered.set()

    @staticmethod
    async def _after(run: ActiveRun, earlier: list[ActiveRun]) -> None:
        """Waits until the engine sees ``earlier`` runs of the thread first: the engine
        orders a thread's runs as they reach it, and this process's runs reach it
        from tasks that need not run in the order they were started. A queued run
        waits for them to end; one that steers or rolls them back, for them to hold
        the thread's turn (their first streamed item)."""
        steers = run.spec.multitask_strategy in ("interrupt", "rollback")
        for other in earlier:
            event = other.began if steers else other.done
            if event.is_set():
                continue
            waits = [asyncio.ensure_future(event.wait()), asyncio.ensure_future(run.steered.wait())]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waits:
                    w.cancel()
            if run.steered.is_set():
                return  # steered before it reached the engine: it does not run

    def mark_busy(self, thread_id: str, spec: RunSpec) -> None:
        """The thread is busy (and names its graph, if the run's request said so)."""
        if spec.thread_metadata is None:
            self.records.update_thread(thread_id, status="busy")
        else:
            self.records.update_thread(thread_id, status="busy", metadata=spec.thread_metadata)
            spec.thread_metadata = None

    def _set_status(self, run: ActiveRun, status: str) -> None:
        run.record["status"] = status
        run.record["updated_at"] = self.records.set_run_status(run.run_id, status)

    async def _run(self, run: ActiveRun, earlier: list[ActiveRun]) -> None:
        #: The run's final status, written with the thread's once it has ended (a
        #: server that stops leaves its runs as they were, pending or running from
        #: their last saved step, for the next server to resume: ``None``).
        status: str | None = None
        try:
            if earlier:
                await self._after(run, earlier)
                if run.steered.is_set():
                    raise asyncio.CancelledError  # a later run took its place: not run
            async with self._slots:
                if run.record["status"] != "running":
                    self._set_status(run, "running")
                run.started_at = run.record["updated_at"]
                run.publish("metadata", {"run_id": run.run_id, "attempt": 1})
                await self._drive(run)
            status = run.outcome or "success"
        except asyncio.CancelledError:
            if not self.stopping:
                status = "interrupted"
        except RunRolledBackError:
            run.rollback = True
        except Exception as e:  # the graph's own failure: data for the client
            log.warning("run %s failed", run.run_id, exc_info=e)
            run.error = {"error": type(e).__name__, "message": str(e)}
            run.publish("error", run.error)
            status = "error"
        finally:
            values: Any = None
            try:
                values = await self._finish(run, status)
            except Exception as e:
                log.error("run %s: recording its end failed", run.run_id, exc_info=e)
            finally:
                if run.spec.webhook is not None and not (
                    self.stopping and run.record["status"] == "running"
                ):
                    self._call_webhook(run, values)
                # Only now: a join that finds no active run finds the thread settled.
                self._forget(run)
                run.close()
                if self.on_end is not None:
                    self.on_end(run)

    def _forget(self, run: ActiveRun) -> None:
        """``run`` is no longer active here."""
        self.active.pop(run.run_id, None)
        runs = self._by_thread.get(run.thread_id, [])
        runs[:] = [r for r in runs if r is not run]  # by identity: runs compare as dataclasses
        if not runs:
            self._by_thread.pop(run.thread_id, None)

    async def _finish(self, run: ActiveRun, status: str | None) -> Any:
        """Records the run's end: its status (or, rolled back, its removal) and its
        thread's state, in one commit, made before anyone learns the run has ended
        (a crash after it loses nothing; one before it resumes the run, which then
        has no step left). Returns the thread's values."""
        if status is not None:
            run.record["status"] = status
            run.record["updated_at"] = now()
        settled: tuple[Any, dict[str, Any] | None] = (None, None)
        try:
            settled = await self._settle_thread(run)
        finally:
            with self.records.transaction():
                if run.rollback:
                    self.records.delete_run(run.run_id)
                elif status is not None:
                    self.records.set_run_status(run.run_id, status, run.record["updated_at"])
                if settled[1] is not None:
                    self.records.update_thread(run.thread_id, **settled[1])
        run.settled = settled[1]
        return settled[0]

    async def _drive(self, run: ActiveRun) -> None:
        spec = run.spec
        graph = spec.graph.default
        configurable = {
            **spec.config.get("configurable", {}),
            "thread_id": run.thread_id,
            "run_id": run.run_id,
            "graph_id": spec.graph.graph_id,
            "assistant_id": spec.assistant_id,
        }
        if spec.checkpoint_id:
            configurable["checkpoint_id"] = spec.checkpoint_id
        # The server refused "reject" already if this process runs the thread; the
        # engine's lease orders what another process (or a run just ending) holds.
        strategy = "enqueue" if spec.multitask_strategy == "reject" else spec.multitask_strategy
        config = {
            **spec.config,
            "configurable": configurable,
            "metadata": {
                **spec.config.get("metadata", {}),
                **spec.metadata,
                "run_id": run.run_id,
                "graph_id": spec.graph.graph_id,
                "assistant_id": spec.assistant_id,
            },
            "multitask_strategy": strategy,
        }
        if spec.command is not None:
            c = spec.command
            payload: Any = Command(
                update=c.get("update"), resume=c.get("resume"), goto=c.get("goto") or ()
            )
        else:
            payload = spec.input
        # "values" always: the root graph's last values settle the thread when the run
        # ends (``_ended_as_streamed``), whatever the client streams, rather than a
        # ``get_state`` read back on a worker thread and converted; published only
        # when asked for.
        engine_modes = sorted({e for m in spec.stream_modes for e in STREAM_MODES[m]} | {"values"})
        legacy_messages = "messages" in spec.stream_modes
        kwargs: dict[str, Any] = {
            "stream_mode": engine_modes,
            "subgraphs": spec.subgraphs,
            **spec.graph.breakpoints(spec.interrupt_before, spec.interrupt_after),
        }
        if spec.context is not None:
            kwargs["context"] = spec.context
        if spec.durability:
            kwargs["durability"] = spec.durability
        partial: dict[str, Any] = {}
        events = None
        if "events" in spec.stream_modes:
            events = EventsView(run.run_id, spec.graph.name, config["metadata"])
            run.publish("events", events.start(payload))
        async for item in graph.astream(payload, config, **kwargs):
            run.began.set()
            if spec.subgraphs:
                ns, mode, chunk = item
            else:
                ns, (mode, chunk) = (), item
            suffix = "|" + "|".join(ns) if ns else ""
            if mode == "values" and not ns:
                run.last_values = chunk
            if events is not None:
                for event in events.on(mode, chunk, ns):
                    run.publish("events" + suffix, event)
            if mode == "messages":
                message, meta = chunk
                if legacy_messages:
                    self._legacy_message(run, message, meta, partial, suffix)
                if "messages-tuple" in spec.stream_modes:
                    run.publish("messages" + suffix, [message, meta])
                if run.listeners:
                    # A turn of the loop for the streams to send it on before the
                    # engine's next items are taken (the rest of the step, its
                    # checkpoint, its values): a token is on the wire ~0.45 ms sooner.
                    await asyncio.sleep(0)
                continue
            if mode not in spec.stream_modes and not (mode == "values" and not spec.stream_modes):
                continue
            run.publish(mode + suffix, chunk)
        if events is not None:
            for event in events.end():
                run.publish("events", event)
        run.completed = True

    @staticmethod
    def _legacy_message(
        run: ActiveRun, message: Any, meta: Any, partial: dict[str, Any], suffix: str
    ) -> None:
        """LangGraph's older ``messages`` mode: a message's metadata once, then the
        message so far after each chunk."""
        data = to_jsonable(message)
        mid = str(data.get("id")) if isinstance(data, dict) else "None"
        if mid not in partial:
            run.publish("messages/metadata" + suffix, {mid: {"metadata": meta}})
            partial[mid] = message
        elif type(message).__name__.endswith("Chunk"):
            try:
                partial[mid] = partial[mid] + message
            except TypeError:
                partial[mid] = message
        else:
            partial[mid] = message
        kind = "partial" if type(message).__name__.endswith("Chunk") else "complete"
        run.publish(f"messages/{kind}" + suffix, [partial[mid]])

    def _call_webhook(self, run: ActiveRun, values: Any) -> None:
        """POSTs the ended run (its record, final status and the thread's values) to its
        webhook, as LangGraph does; in the background, a failure only logged."""
        if type(values) is RawJSON:
            values = values.value()
        payload = {**run.record, "run_started_at": run.started_at,
                   "run_ended_at": run.record["updated_at"], "values": values}  # fmt: skip
        if run.error is not None:
            payload["error"] = run.error["message"]
        url = str(run.spec.webhook)
        task = asyncio.get_running_loop().create_task(post_webhook(url, payload, run.run_id))
        self._webhooks.add(task)
        task.add_done_callback(self._webhooks.discard)

    async def _settle_thread(self, run: ActiveRun) -> tuple[Any, dict[str, Any] | None]:
        """The thread's values once its run ends, and the columns of its record to set
        (``None``: another run settles it).

        A run queued behind this one settles the thread when it ends, so this one
        leaves it be. One started before it does not count: a run steered by this one
        can still be winding up (its stream's last step) after this one has ended, and
        a ``join`` on this run must find the thread settled by then; that earlier run
        then leaves the thread be."""
        tid = run.thread_id
        on_thread = self.on_thread(tid)
        superseded = self._ended.get(tid, -1) > run.order or on_thread[-1] is not run
        if len(on_thread) > 1:
            self._ended[tid] = max(run.order, self._ended.get(tid, -1))
        else:
            self._ended.pop(tid, None)
        if superseded and run.spec.webhook is None:
            return None, None
        if self._ended_as_streamed(run):
            # Encoded once: the thread's row stores this text and a join answers it.
            values = RawJSON(dumps(run.last_values))
            if superseded:
                return values, None
            return values, {"status": "idle", "values": values, "interrupts": {}, "error": None}
        snap = await asyncio.to_thread(
            run.spec.graph.default.get_state, {"configurable": {"thread_id": tid}}
        )
        if superseded:
            return to_jsonable(snap.values), None
        state = snapshot_json(snap)
        if run.error is not None:
            status = "error"
        elif state["next"]:
            status = "interrupted"
        else:
            status = "idle"
        fields = {
            "status": status,
            "values": state["values"] if state["checkpoint"] else None,
            "interrupts": thread_interrupts(state),
            "error": run.error,
        }
        return state["values"], fields

    @staticmethod
    def _ended_as_streamed(run: ActiveRun) -> bool:
        """Whether the run's last streamed ``values`` (the state's channels, an output
        schema or not) are its thread's state: it ran to its end (no error, stop,
        breakpoint or ``interrupt()``: nothing left to run). The thread is then settled
        without reading its state back (a ``get_state`` and its conversion a run)."""
        spec = run.spec
        return (
            run.completed
            and run.error is None
            and run.outcome is None
            and not run.rollback
            and not spec.interrupt_before
            and not spec.interrupt_after
            and isinstance(run.last_values, dict)
            and INTERRUPT not in run.last_values
        )

    async def cancel(self, run: ActiveRun, action: str) -> None:
        run.outcome = "interrupted"
        run.rollback = action == "rollback"
        if run.task is not None:
            run.task.cancel()

    async def shutdown(self, drain_seconds: float) -> None:
        """Lets running runs finish for up to ``drain_seconds``, then cancels the rest
        (the engine keeps each one's last saved step; the next server resumes them).
        Pending runs are not started meanwhile."""
        self.stopping = True
        tasks = [r.task for r in self.active.values() if r.task is not None]
        running = [r.task for r in self.active.values()
                   if r.task is not None and r.record["status"] == "running"]  # fmt: skip
        for run in self.active.values():
            if run.task is not None and run.record["status"] != "running":
                run.task.cancel()
        if running and drain_seconds > 0:
            log.info("waiting up to %.0f s for %d running run(s)", drain_seconds, len(running))
            await asyncio.wait(running, timeout=drain_seconds)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._webhooks:  # the last runs' webhooks get a moment to be sent
            await asyncio.wait(list(self._webhooks), timeout=5)


#: A webhook is tried this many times when it cannot be reached or answers 5xx.
WEBHOOK_ATTEMPTS = 3


async def post_webhook(url: str, payload: dict[str, Any], run_id: str) -> None:
    import urllib.error
    import urllib.request
    from datetime import datetime, timezone

    payload["webhook_sent_at"] = datetime.now(timezone.utc).isoformat()
    data = dumps(payload).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )

    def send() -> None:
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    for attempt in range(1, WEBHOOK_ATTEMPTS + 1):
        try:
            await asyncio.to_thread(send)
            return
        except urllib.error.HTTPError as e:
            if e.code < 500 or attempt == WEBHOOK_ATTEMPTS:
                log.warning("run %s: webhook %s answered %s", run_id, url, e.code)
                return
        except (OSError, ValueError) as e:
            if attempt == WEBHOOK_ATTEMPTS:
                log.warning("run %s: webhook %s failed: %s", run_id, url, e)
                return
        await asyncio.sleep(0.5 * attempt)
