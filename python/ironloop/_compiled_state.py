"""The state side of a compiled graph: ``get_state`` / ``get_state_history`` /
``update_state`` / ``bulk_update_state`` and their ``a…`` forms, over the engine's
checkpoints (a subgraph's found in its task's namespace), as LangGraph's."""

from __future__ import annotations

import inspect
import typing
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from ironloop._ironloop import _child_ns
from ironloop._params import params_of
from ironloop.errors import InvalidUpdateError
from ironloop.types import StateSnapshot, StateUpdate

if typing.TYPE_CHECKING:
    from ironloop._compiled import CompiledStateGraph


class StateAccess:
    """What ``CompiledStateGraph`` reads and writes of a thread's checkpoints."""

    _core: Any
    builder: Any
    checkpointer: Any

    def get_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's state at its latest (or the config's) checkpoint.

        A task that runs a subgraph (a compiled graph added as a node) shows where the
        subgraph keeps its checkpoints: ``task.state`` is the config naming its
        ``checkpoint_ns``, or, with ``subgraphs=True``, the subgraph's own
        ``StateSnapshot`` (e.g. where it paused on an ``interrupt()``).

        Example:
            >>> snap = app.get_state({"configurable": {"thread_id": "1"}}, subgraphs=True)
            >>> snap.tasks[0].state.next  # the paused subgraph's next nodes
            ('review',)
        """
        return self._state(config, subgraphs, None)

    async def aget_state(self, config: dict[str, Any], *, subgraphs: bool = False) -> StateSnapshot:
        return self.get_state(config, subgraphs=subgraphs)

    def _state(self, config: dict[str, Any], subgraphs: bool, saver: Any) -> StateSnapshot:
        """``get_state`` of this graph, whose checkpoints are in ``saver`` when it runs
        as a subgraph (``None``: its own checkpointer)."""
        snap: StateSnapshot = self._core.get_state(config, saver)
        if not snap.tasks:
            return snap
        at = snap.config["configurable"]
        tasks = []
        for t in snap.tasks:
            sub = _subgraph_of(self.builder.actions.get(t.name))
            if sub is not None:
                parent_ns = at.get("checkpoint_ns", "")
                if sub.checkpointer is True:  # one history per node (the engine's rule)
                    ns = f"{parent_ns}|{t.name}" if parent_ns else t.name
                else:
                    ns = _child_ns(parent_ns, t.name, t.id)
                cfg = {"configurable": {"thread_id": at["thread_id"], "checkpoint_ns": ns}}
                state = sub._state(cfg, True, saver or self.checkpointer) if subgraphs else cfg
                t = t._replace(state=state)
            tasks.append(t)
        return snap._replace(tasks=tuple(tasks))

    def get_state_history(
        self,
        config: dict[str, Any],
        *,
        filter: Any = None,
        before: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """Every checkpoint of the thread, newest first; with ``filter``, those whose
        metadata holds each of its items (LangGraph's rule), ``limit`` counting what is
        yielded."""
        if not filter:
            yield from self._core.get_state_history(config, limit, before)
            return
        kept = 0
        for snap in self._core.get_state_history(config, None, before):
            metadata = snap.metadata or {}
            if all(metadata.get(k) == v for k, v in filter.items()):
                yield snap
                kept += 1
                if limit is not None and kept >= limit:
                    return

    @params_of(get_state_history)
    async def aget_state_history(self, *args: Any, **kwargs: Any) -> AsyncIterator[StateSnapshot]:
        """``get_state_history`` for ``async for``."""
        for snap in self.get_state_history(*args, **kwargs):
            yield snap

    def update_state(
        self,
        config: dict[str, Any],
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> dict[str, Any]:
        """Writes ``values`` as if ``as_node`` had returned them (a ``Command``'s
        ``goto`` included); returns the new checkpoint's config. ``as_node="__input__"``
        saves ``values`` as new input; ``"__copy__"`` saves a copy of the checkpoint
        beside it (``source="fork"``), then applies ``values`` if it is a list of
        ``(values, as_node)`` updates, as LangGraph does."""
        if as_node == "__copy__" and isinstance(values, list) and values:
            return self.bulk_update_state(
                config, [[StateUpdate(None, "__copy__", task_id)], values]
            )
        return self.bulk_update_state(config, [[StateUpdate(values, as_node, task_id)]])

    @params_of(update_state)
    async def aupdate_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """``update_state`` for ``await``, on a worker thread (the loop goes on
        meanwhile); an ``async def`` routing function it reaches is awaited, as
        LangGraph's."""
        import asyncio

        from ironloop._runtime import awaiting_routes

        def update() -> dict[str, Any]:
            awaiting_routes.set(True)  # in this call's own copy of the context
            return self.update_state(*args, **kwargs)

        return await asyncio.to_thread(update)

    def bulk_update_state(
        self, config: dict[str, Any], supersteps: Sequence[Sequence[Any]]
    ) -> dict[str, Any]:
        """Applies ``supersteps`` in order, each a list of ``StateUpdate``s (or
        ``(values, as_node)`` pairs) saved as one checkpoint, as if their nodes had run
        in one step; returns the last checkpoint's config (LangGraph's
        ``bulk_update_state``)."""
        steps = [[_update_pair(u) for u in step] for step in supersteps]
        ns = ((config or {}).get("configurable") or {}).get("checkpoint_ns") or ""
        if ns:
            return self._update_subgraph(config, ns, steps)
        return self._core.bulk_update_state(config, steps)  # type: ignore[no-any-return]

    def _update_subgraph(
        self, config: dict[str, Any], ns: str, steps: list[list[Any]]
    ) -> dict[str, Any]:
        """Updates the subgraph checkpoint ``config`` names (its ``checkpoint_ns``, as
        ``get_state(config, subgraphs=True)`` gives it): the subgraph applies the update
        to its own state, kept in this graph's checkpointer. As LangGraph's, the
        returned config's ``checkpoint_map`` runs this graph back to the new
        checkpoint: ``invoke(None, returned)`` continues the subgraph from it."""
        graph: Any = self
        for part in ns.split("|"):
            name = part.split(":", 1)[0]
            sub = _subgraph_of(graph.builder.actions.get(name))
            if sub is None:
                raise ValueError(
                    f"update_state: checkpoint_ns {ns!r} names no subgraph of this graph "
                    f"(node {name!r} runs none that keeps checkpoints); pass a config "
                    "from this graph's get_state(config, subgraphs=True) or history"
                )
            graph = sub
        out: dict[str, Any] = graph._core.bulk_update_state(config, steps, self.checkpointer)
        conf = out["configurable"]
        old = config["configurable"].get("checkpoint_map") or {}
        conf["checkpoint_map"] = {**old, ns: conf["checkpoint_id"]}
        return out

    async def abulk_update_state(
        self, config: dict[str, Any], supersteps: Sequence[Sequence[Any]]
    ) -> dict[str, Any]:
        """``bulk_update_state`` for ``await``."""
        return self.bulk_update_state(config, supersteps)


def _update_pair(update: Any) -> tuple[Any, str | None]:
    """A ``StateUpdate`` (or a ``(values, as_node[, task_id])`` sequence) as the
    ``(values, as_node)`` pair the engine takes."""
    if not isinstance(update, (tuple, list)) or not 1 <= len(update) <= 3:
        raise InvalidUpdateError(
            f"bulk_update_state takes StateUpdate(values, as_node) items, got {update!r}"
        )
    values, as_node, task_id = (*update, None, None)[:3]
    if task_id is not None:
        raise InvalidUpdateError(
            f"StateUpdate(task_id={task_id!r}): ironloop applies an update to its node, "
            "not to one task of it; leave task_id out"
        )
    return values, as_node


def _subgraph_of(node: Any) -> CompiledStateGraph[Any, Any, Any, Any] | None:
    """The graph whose checkpoints a node keeps in its task's namespace: the node itself
    (a subgraph), else one its function calls, found among the names the function
    refers to (its closure's and its module's), as LangGraph finds it for
    ``get_state(subgraphs=True)``. ``None`` for a node without one, or whose graph keeps
    none (``checkpointer=False``)."""
    from ironloop._compiled import CompiledStateGraph
    from ironloop._toolnode import ToolNode

    if node is not None and not isinstance(node, (CompiledStateGraph, ToolNode)):
        try:
            refs = inspect.getclosurevars(inspect.unwrap(node))
        except TypeError:  # not a Python function: a callable object, a builtin
            return None
        found = [
            v
            for v in (*refs.nonlocals.values(), *refs.globals.values())
            if isinstance(v, CompiledStateGraph) and v.checkpointer is not False
        ]
        node = found[0] if found else None  # the first, as LangGraph's
    if isinstance(node, CompiledStateGraph) and node.checkpointer is not False:
        return node  # its own saver too: inside the parent's run, the parent's wins
    return None
