"""``run.subagents`` of an agent's ``stream_events(version="v3")`` run (LangChain 1.5's
``SubagentTransformer``): a handle per agent run inside one of the agent's tasks — a
``create_agent`` a tool invokes — so a UI can show a sub-agent's stream under the tool
call that started it.

A sub-agent is told from a plain subgraph by the ``lc_agent_name`` its tasks carry in
their metadata (a named agent's runs set it; an unnamed agent inside a named one
inherits its parent's, and is surfaced under that name, as LangChain's); a nested run
without one is not a sub-agent. The handle's ``cause`` is the tool call whose task
started it."""

from __future__ import annotations

from typing import Any

from ironloop.stream._lifecycle import SubgraphTransformer
from ironloop.stream._mux import StreamMux
from ironloop.stream.run_stream import AsyncSubgraphRunStream, SubgraphRunStream

__all__ = ["AsyncSubagentRunStream", "SubagentRunStream", "SubagentTransformer"]


class _Subagent:
    """What a sub-agent's handle adds to a subgraph's: its ``name`` and ``cause``."""

    graph_name: str | None
    _cause: dict[str, Any] | None

    @property
    def name(self) -> str | None:
        """The sub-agent's name (its runs' ``lc_agent_name``)."""
        return self.graph_name

    @property
    def cause(self) -> dict[str, Any] | None:
        """``{"type": "toolCall", "tool_call_id": ...}``: the tool call that started
        the sub-agent, when its task ran one."""
        return self._cause


class SubagentRunStream(_Subagent, SubgraphRunStream):
    """A sub-agent of a ``stream_events`` run, found on ``run.subagents``."""

    def __init__(self, mux: StreamMux, *, path: tuple[str, ...], graph_name: str | None = None, trigger_call_id: str | None = None, cause: dict[str, Any] | None = None) -> None:  # fmt: skip
        super().__init__(mux, path=path, graph_name=graph_name, trigger_call_id=trigger_call_id)
        self._cause = cause


class AsyncSubagentRunStream(_Subagent, AsyncSubgraphRunStream):
    """A sub-agent of an ``astream_events`` run, found on ``run.subagents``."""

    def __init__(self, mux: StreamMux, *, path: tuple[str, ...], graph_name: str | None = None, trigger_call_id: str | None = None, cause: dict[str, Any] | None = None) -> None:  # fmt: skip
        super().__init__(mux, path=path, graph_name=graph_name, trigger_call_id=trigger_call_id)
        self._cause = cause


class SubagentTransformer(SubgraphTransformer):
    """``run.subagents``: ``run.subgraphs`` narrowed to the direct child runs whose
    tasks carry an ``lc_agent_name``, with their name and cause; ``create_agent``
    registers it on every agent."""

    def init(self) -> dict[str, Any]:
        return {"subagents": self._log}

    def _on_started(self, ns: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None) -> None:  # fmt: skip
        if self._lc_by_ns.get(ns) is None or ns in self._handles:
            return  # not an agent's run
        if self._mux is None or self._mux._factories is None:
            return
        child = self._mux._make_child(ns)
        cls = AsyncSubagentRunStream if child.is_async else SubagentRunStream
        handle = cls(
            child,
            path=ns,
            graph_name=graph_name,
            trigger_call_id=trigger_call_id,
            cause=self._pending_cause,
        )
        self._handles[ns] = handle
        self._log.push(handle)
