"""``ToolCallTransformer``: a run's tool calls as ``ToolCallStream`` handles
(``run.tool_calls``), from the graph's ``tools`` stream mode. LangChain's
``create_agent`` registers it on every agent; a graph opts in with
``compile(transformers=[ToolCallTransformer])``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from ironloop.stream._types import ProtocolEvent, _PumpedTransformer
from ironloop.stream.stream_channel import StreamChannel

__all__ = ["ToolCallStream", "ToolCallTransformer", "agent_transformers"]


class ToolCallStream:
    """One tool call: ``tool_call_id``, ``tool_name`` and ``input`` from its start;
    its streamed output pieces (iterate it, or ``output_deltas``); once
    ``completed``, its ``output`` (a tool message's content) or its ``error``."""

    def __init__(self, tool_call_id: str, tool_name: str, input: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.input = input
        self._output_deltas: StreamChannel[Any] = StreamChannel()
        self.output: Any = None
        self.error: str | None = None
        self.completed = False

    @property
    def output_deltas(self) -> StreamChannel[Any]:
        """The ``tool-output-delta`` payloads, closed when the call ends."""
        return self._output_deltas

    def _bind(self, *, is_async: bool) -> None:
        self._output_deltas._bind(is_async=is_async)

    def _push_delta(self, delta: Any) -> None:
        self._output_deltas.push(delta)

    def _finish(self, output: Any) -> None:
        self.output, self.completed = output, True
        self._output_deltas.close()

    def _fail(self, message: str) -> None:
        self.error, self.completed = message, True
        self._output_deltas.close()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._output_deltas)

    def __aiter__(self) -> AsyncIterator[Any]:
        return aiter(self._output_deltas)

    def __repr__(self) -> str:
        status = "running" if not self.completed else "failed" if self.error is not None else "completed"  # fmt: skip
        return (
            f"ToolCallStream(tool_call_id={self.tool_call_id!r}, "
            f"tool_name={self.tool_name!r}, status={status})"
        )


def _content(output: Any) -> Any:
    """A finished call's output as the model sees it: a tool message's content
    (a message object, or its serialized ``{"lc": 1, "type": "constructor"...}``)."""
    if hasattr(output, "tool_call_id") and hasattr(output, "content"):
        return output.content
    if (
        isinstance(output, dict)
        and output.get("type") == "constructor"
        and isinstance(output.get("id"), list)
        and output["id"][-1] == "ToolMessage"
        and isinstance(output.get("kwargs"), dict)
    ):
        return output["kwargs"].get("content")
    return output


class ToolCallTransformer(_PumpedTransformer):
    """``run.tool_calls``: a ``ToolCallStream`` per ``tool-started`` event at the
    transformer's scope, fed by its ``tool-output-delta`` events and ended by
    ``tool-finished`` / ``tool-error``. The ``tools`` events stay in the main log
    (the handles are not serializable; a wire consumer reads those)."""

    required_stream_modes = ("tools",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._active: dict[str, ToolCallStream] = {}

    def init(self) -> dict[str, Any]:
        return {"tool_calls": self._log}

    def _start(self, data: dict[str, Any]) -> None:
        call_id = data["tool_call_id"]
        stream = ToolCallStream(call_id, data.get("tool_name", ""), data.get("input"))
        stream._bind(is_async=self._is_async)
        stream._output_deltas._request_more = self._pump_fn
        stream._output_deltas._arequest_more = self._apump_fn
        self._active[call_id] = stream
        self._log.push(stream)

    def process(self, event: ProtocolEvent) -> bool:
        if event["method"] != "tools" or tuple(event["params"]["namespace"]) != self.scope:
            return True
        data = event["params"]["data"]
        call_id = data.get("tool_call_id")
        kind = data.get("event")
        if call_id is None:
            return True
        if kind == "tool-started":
            self._start(data)
        elif kind == "tool-output-delta" and call_id in self._active:
            self._active[call_id]._push_delta(data.get("delta"))
        elif kind == "tool-finished" and (stream := self._active.pop(call_id, None)):
            stream._finish(_content(data.get("output")))
        elif kind == "tool-error" and (stream := self._active.pop(call_id, None)):
            stream._fail(data.get("message", ""))
        return True

    def finalize(self) -> None:
        for stream in self._active.values():
            stream._finish(None)
        self._active.clear()

    def fail(self, err: BaseException) -> None:
        for stream in self._active.values():
            stream._fail(str(err))
        self._active.clear()


def agent_transformers(middleware: Sequence[Any], given: Sequence[Any] | None) -> tuple[Any, ...]:
    """The ``stream_events(version="v3")`` transformers of an agent, as LangChain's
    ``create_agent`` registers them: ``ToolCallTransformer`` (``run.tool_calls``),
    ``SubagentTransformer`` (``run.subagents``), the middleware's ``transformers``,
    then ``create_agent(transformers=)``; each once (by identity: a factory need not
    be hashable)."""
    extra = [t for m in middleware for t in getattr(m, "transformers", ())]
    extra.extend(given or ())
    out = _builtin_transformers()
    if not extra:  # most agents: one tuple for all (an agent per request, W11)
        return out
    kept = list(out)
    for factory in extra:
        if not any(factory is seen for seen in kept):
            kept.append(factory)
    return tuple(kept)


_BUILTIN: tuple[Any, ...] = ()


def _builtin_transformers() -> tuple[Any, ...]:
    """Every agent's first two transformers (``_subagents`` imports this module, so it
    is read at the first agent's making)."""
    global _BUILTIN
    if not _BUILTIN:
        from ironloop.stream._subagents import SubagentTransformer

        _BUILTIN = (ToolCallTransformer, SubagentTransformer)
    return _BUILTIN
