"""``stream_events(version="v3")`` of agents: ``run.tool_calls``, the messages of
ironloop's own models token by token, middleware transformers and internal calls."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from ironloop import create_agent, tool
from ironloop.middleware import AgentMiddleware
from ironloop.middleware.internal_call_transformer import (
    InternalCallTransformer,
    internal_call_metadata,
)
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import ToolCallStream, ToolCallTransformer
from ironloop.stream import StreamChannel, StreamTransformer


@tool
def add(a: int, b: int) -> int:
    "Adds."
    return a + b


def _agent(**kw: Any) -> Any:
    model = ScriptedChatModel(
        [{"content": "", "tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]}, "it is 5"]
    )
    return create_agent(model, [add], **kw)


def test_tool_calls_and_streamed_answer_in_order() -> None:
    run = _agent().stream_events({"messages": [("user", "2+3?")]}, version="v3")
    seen = []
    for name, item in run.interleave("messages", "tool_calls"):
        if name == "tool_calls":
            assert isinstance(item, ToolCallStream)
            seen.append(("tool", item.tool_name, item.input, list(item)))
            assert item.completed and item.output == "5" and item.error is None  # the content
        else:
            seen.append(("message", list(item.text), [c["name"] for c in item.output.tool_calls]))
    assert seen == [
        ("message", [], ["add"]),
        ("tool", "add", {"a": 2, "b": 3}, []),
        ("message", ["it ", "is ", "5"], []),
    ]
    assert run.output["messages"][-1].content == "it is 5"


def test_async_agent_messages() -> None:
    async def main() -> list[str]:
        run = await _agent().astream_events({"messages": [("user", "2+3?")]}, version="v3")
        return ["".join([d async for d in m.text]) async for m in run.messages]

    assert asyncio.run(main()) == ["", "it is 5"]


class Marker(StreamTransformer):
    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self.log: StreamChannel[int] = StreamChannel()

    def init(self) -> dict[str, Any]:
        return {"marker": self.log}

    def process(self, event: Any) -> bool:
        return True


class WithMarker(AgentMiddleware):
    transformers = (Marker, ToolCallTransformer)  # ToolCallTransformer: registered once


def test_agent_transformers_from_middleware_and_caller() -> None:
    class Other(Marker):
        def init(self) -> dict[str, Any]:
            return {"other": self.log}

    agent = _agent(middleware=[WithMarker()], transformers=[Other])
    run = agent.stream_events({"messages": [("user", "2+3?")]}, version="v3")
    assert {"tool_calls", "marker", "other", "messages"} <= set(run.extensions)
    assert run.output is not None


class SideCall(AgentMiddleware):
    """Calls a side model marked internal before each model call."""

    transformers = (InternalCallTransformer,)

    def __init__(self, side: Any) -> None:
        super().__init__()
        self.side = side

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self.side.invoke([HumanMessage("check")], config={"metadata": internal_call_metadata()})
        return handler(request)


def test_internal_calls_stay_out_of_messages_and_the_log() -> None:
    main = GenericFakeChatModel(messages=iter([AIMessage("final answer")]))
    side = GenericFakeChatModel(messages=iter([AIMessage("internal")]))
    agent = create_agent(main, [], middleware=[SideCall(side)])
    run = agent.stream_events({"messages": [HumanMessage("hi")]}, version="v3")
    events = list(run)
    texts = [
        e["params"]["data"][0].get("delta", {}).get("text")
        for e in events
        if e["method"] == "messages" and isinstance(e["params"]["data"][0], dict)
    ]
    assert "".join(t for t in texts if t) == "final answer"
