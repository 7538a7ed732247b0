"""The subgraph transformers: ``LifecycleTransformer`` (``run.lifecycle``: when
each subgraph started and how it ended) and ``SubgraphTransformer``
(``run.subgraphs``: a run-stream handle per direct child subgraph). Both read the
graph's ``tasks`` events: a subgraph's namespace (``node:task_id``) is seen on its
first task, and it ends with the parent task's result."""

from __future__ import annotations

import logging
from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict

from ironloop.errors import GraphDrained, GraphInterrupt
from ironloop.stream._types import ProtocolEvent, StreamTransformer
from ironloop.stream.run_stream import AsyncSubgraphRunStream, SubgraphRunStream
from ironloop.stream.stream_channel import StreamChannel

__all__ = ["LifecyclePayload", "LifecycleTransformer", "SubgraphStatus", "SubgraphTransformer"]

_log = logging.getLogger(__name__)

SubgraphStatus = Literal["started", "completed", "failed", "interrupted", "drained"]


class LifecyclePayload(TypedDict, total=False):
    """One ``lifecycle`` item: a subgraph's ``event`` (its status) and
    ``namespace``, with its ``graph_name``, the task that started it
    (``trigger_call_id``), the tool call behind a sub-agent (``cause``) and a
    failure's ``error``."""

    event: SubgraphStatus
    namespace: list[str]
    graph_name: NotRequired[str]
    trigger_call_id: NotRequired[str]
    cause: NotRequired[dict[str, Any]]
    error: NotRequired[str]


def _status_of_error(err: BaseException) -> tuple[SubgraphStatus, str | None]:
    if isinstance(err, GraphDrained):
        return "drained", None
    if isinstance(err, GraphInterrupt):
        return "interrupted", None
    return "failed", str(err)


def _status_of_result(data: dict[str, Any]) -> tuple[SubgraphStatus, str | None]:
    """A task result's outcome: an interrupt wins over an error (a paused task's
    result carries both)."""
    if data.get("interrupts"):
        return "interrupted", None
    if error := data.get("error"):
        return "failed", str(error)
    return "completed", None


def _tool_call_id(task_input: Any) -> str | None:
    """The tool call a task runs (a tool-call task's input: a call with its context,
    a call, or a list of calls), if any."""
    if isinstance(task_input, dict) and isinstance(task_input.get("tool_call"), dict):
        found = task_input["tool_call"].get("id")
        return found if isinstance(found, str) else None
    if isinstance(task_input, dict) and task_input.get("type") == "tool_call":
        found = task_input.get("id")
        return found if isinstance(found, str) else None
    if isinstance(task_input, list):
        for call in task_input:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                return str(call["id"])
    return None


class _TasksLifecycle(StreamTransformer):
    """What both transformers share: which namespaces are open, started by which
    task. Subclasses say which namespaces they follow (``_should_track``) and what
    starting (``_on_started``; the cause is ``self._pending_cause``) and ending
    (``_on_terminal``) do. The ``tasks`` events are kept out of the main log: these
    projections show them."""

    required_stream_modes = ("tasks",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._seen: set[tuple[str, ...]] = set()
        #: open namespace -> the id of the parent task whose result ends it
        self._open: dict[tuple[str, ...], str] = {}
        #: namespace -> the agent name (``lc_agent_name``) its first task showed
        self._lc_by_ns: dict[tuple[str, ...], str | None] = {}
        #: task id -> the tool call it runs: a sub-agent's cause
        self._pending_tool_calls: dict[str, str] = {}
        self._pending_cause: dict[str, Any] | None = None

    def _should_track(self, ns: tuple[str, ...]) -> bool:
        raise NotImplementedError

    def _on_started(self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None) -> None:  # fmt: skip
        raise NotImplementedError

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:  # fmt: skip
        raise NotImplementedError

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "tasks":
            return True
        ns, data = tuple(event["params"]["namespace"]), event["params"]["data"]
        if "result" in data:
            for child, status, error in self._ended_by(ns, data):
                self._on_terminal(child, status, error)
        else:
            self._task_started(ns, data)
        return False

    def _task_started(self, ns: tuple[str, ...], data: dict[str, Any]) -> None:
        metadata = data.get("metadata") or {}
        self._lc_by_ns.setdefault(ns, metadata.get("lc_agent_name"))
        task_id = data.get("id")
        if isinstance(task_id, str) and (call := _tool_call_id(data.get("input"))):
            self._pending_tool_calls[task_id] = call
        if not self._should_track(ns) or ns in self._seen:
            return
        self._seen.add(ns)
        name, sep, trigger = ns[-1].partition(":")
        trigger_id = trigger if sep else None
        agent = metadata.get("lc_agent_name")
        self._pending_cause = None
        if agent is not None and trigger_id is not None:
            if call := self._pending_tool_calls.get(trigger_id):
                self._pending_cause = {"type": "toolCall", "tool_call_id": str(call)}
        self._on_started(ns, agent if agent is not None else (name or None), trigger_id)
        if trigger_id is not None:
            self._open[ns] = trigger_id

    def _ended_by(self, ns: tuple[str, ...], data: dict[str, Any]) -> list[tuple[tuple[str, ...], SubgraphStatus, str | None]]:  # fmt: skip
        """The open children of ``ns`` the task result ``data`` ends (removed)."""
        task_id = data.get("id")
        ended = []
        for child, parent_task in list(self._open.items()):
            if task_id and child[:-1] == ns and parent_task == task_id:
                ended.append((child, *_status_of_result(data)))
                del self._open[child]
        return ended

    def finalize(self) -> None:
        for ns in list(self._open):
            self._on_terminal(ns, "completed", None)
        self._open.clear()

    def fail(self, err: BaseException) -> None:
        status, error = _status_of_error(err)
        for ns in list(self._open):
            self._on_terminal(ns, status, error)
        self._open.clear()


class LifecycleTransformer(_TasksLifecycle):
    """``run.lifecycle``: a ``LifecyclePayload`` per subgraph start and end, at any
    depth below the run's scope; the channel is named ``lifecycle``, so the items
    are also ``lifecycle`` events of the main log."""

    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._channel: StreamChannel[LifecyclePayload] = StreamChannel("lifecycle")

    def init(self) -> dict[str, Any]:
        return {"lifecycle": self._channel}

    def _should_track(self, ns: tuple[str, ...]) -> bool:
        depth = len(self.scope)
        return len(ns) > depth and ns[:depth] == self.scope

    def _on_started(self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None) -> None:  # fmt: skip
        if trigger_call_id is None:
            return  # no task to end it: finalize / fail close it
        payload: LifecyclePayload = {"event": "started", "namespace": list(ns)}
        if graph_name:
            payload["graph_name"] = graph_name
        payload["trigger_call_id"] = trigger_call_id
        if self._pending_cause is not None:
            payload["cause"] = self._pending_cause
        self._channel.push(payload)

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:  # fmt: skip
        payload: LifecyclePayload = {"event": status, "namespace": list(ns)}
        if error is not None:
            payload["error"] = error
        self._channel.push(payload)


class SubgraphTransformer(_TasksLifecycle):
    """``run.subgraphs``: a ``SubgraphRunStream`` per direct child subgraph, whose
    own mini-mux (the same transformers, scoped to the child) gets every event at
    or below the child's namespace; grandchildren are on the child's
    ``subgraphs``."""

    _native = True
    supports_sync = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Any] = StreamChannel()
        self._handles: dict[tuple[str, ...], Any] = {}
        self._mux: Any = None

    def init(self) -> dict[str, Any]:
        return {"subgraphs": self._log}

    def _on_register(self, mux: Any) -> None:
        self._mux = mux

    def _should_track(self, ns: tuple[str, ...]) -> bool:
        depth = len(self.scope)
        return len(ns) == depth + 1 and ns[:depth] == self.scope

    def _on_started(self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None) -> None:  # fmt: skip
        if self._mux is None or self._mux._factories is None:
            return
        child = self._mux._make_child(ns)
        cls = AsyncSubgraphRunStream if child.is_async else SubgraphRunStream
        handle = cls(child, path=ns, graph_name=graph_name, trigger_call_id=trigger_call_id)
        self._handles[ns] = handle
        self._log.push(handle)

    def _mark(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> Any:
        """The handle at ``ns`` marked ended (first time only), or ``None``."""
        handle = self._handles.get(ns)
        if handle is None or handle._seen_terminal:
            return None
        handle.status, handle._seen_terminal = status, True
        if error is not None and handle.error is None:
            handle.error = error
        return None if handle._mux._events._closed else handle

    def _on_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:  # fmt: skip
        if (handle := self._mark(ns, status, error)) is not None:
            if status == "failed":
                handle._mux.fail(RuntimeError(error or "Subgraph failed"))
            else:
                handle._mux.close()

    async def _aon_terminal(self, ns: tuple[str, ...], status: SubgraphStatus, error: str | None) -> None:  # fmt: skip
        if (handle := self._mark(ns, status, error)) is not None:
            if status == "failed":
                await handle._mux.afail(RuntimeError(error or "Subgraph failed"))
            else:
                await handle._mux.aclose()

    def _handle_for(self, event: ProtocolEvent) -> Any:
        ns = tuple(event["params"]["namespace"])
        depth = len(self.scope)
        handle = self._handles.get(ns[: depth + 1]) if len(ns) > depth else None
        if handle is None or handle._mux._events._closed:
            return None
        return handle

    def process(self, event: ProtocolEvent) -> bool:
        keep = super().process(event)
        if (handle := self._handle_for(event)) is not None:
            handle._observe_event(event)
            handle._mux.push(event)
        return keep

    async def aprocess(self, event: ProtocolEvent) -> bool:
        keep = True
        if event["method"] == "tasks":
            keep = False
            ns, data = tuple(event["params"]["namespace"]), event["params"]["data"]
            if "result" in data:
                for child, status, error in self._ended_by(ns, data):
                    await self._aon_terminal(child, status, error)
            else:
                self._task_started(ns, data)
        if (handle := self._handle_for(event)) is not None:
            handle._observe_event(event)
            await handle._mux.apush(event)
        return keep

    def _open_handles(self) -> list[tuple[str, ...]]:
        self._open.clear()
        return [ns for ns, h in self._handles.items() if not h._seen_terminal]

    def finalize(self) -> None:
        first: BaseException | None = None
        for ns in self._open_handles():
            try:
                self._on_terminal(ns, "completed", None)
            except BaseException as e:
                first = first or e
        if first is not None:
            raise first

    async def afinalize(self) -> None:
        first: BaseException | None = None
        for ns in self._open_handles():
            try:
                await self._aon_terminal(ns, "completed", None)
            except BaseException as e:
                first = first or e
        if first is not None:
            raise first

    def fail(self, err: BaseException) -> None:
        status, error = _status_of_error(err)
        for ns in self._open_handles():
            if (handle := self._mark(ns, status, error)) is not None:
                try:
                    handle._mux.fail(err)
                except Exception:
                    _log.warning("failing the subgraph stream at %s failed", ns, exc_info=True)

    async def afail(self, err: BaseException) -> None:
        status, error = _status_of_error(err)
        for ns in self._open_handles():
            if (handle := self._mark(ns, status, error)) is not None:
                try:
                    await handle._mux.afail(err)
                except Exception:
                    _log.warning("failing the subgraph stream at %s failed", ns, exc_info=True)
