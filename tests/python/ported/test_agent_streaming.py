"""LangGraph docs, "Agents" -> "Streaming" -> "LLM tokens": ``create_react_agent``
streamed with ``stream_mode="messages"``, imports changed only. The docs' model string
is a LangChain fake chat model with ``bind_tools`` that streams its text word by word
and its tool calls as chunks, as providers do. Expected values: the output of the same
program under LangGraph 1.2, compared by each token's text, node and step: ironloop's
agent streams its model's chunks as ironloop ``AIMessage`` s (LangGraph: the model's
``AIMessageChunk`` s, the last one with a LangChain run id), see docs/decisions.md."""

import json

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk

from ironloop.prebuilt import create_react_agent


class FakeToolCallingModel(GenericFakeChatModel):
    """Streams its text word by word and its tool calls as chunks."""

    def bind_tools(self, tools, **kwargs):
        return self

    def _stream(self, messages, stop=None, run_manager=None, **kwargs):
        msg = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        for word in msg.content.split(" ") if msg.content else []:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word + " ", id=msg.id))
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk
        for i, call in enumerate(msg.tool_calls):
            piece = tool_call_chunk(
                name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=i
            )
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content="", id=msg.id, tool_call_chunks=[piece])
            )
            if run_manager:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


def get_weather(city: str) -> str:
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"


def test_agent_llm_tokens() -> None:
    call = {"name": "get_weather", "args": {"city": "sf"}, "id": "call_1"}
    model = FakeToolCallingModel(
        messages=iter(
            [
                AIMessage("Let me check.", id="ai-1", tool_calls=[call]),
                AIMessage("It is sunny in sf.", id="ai-2"),
            ]
        )
    )
    agent = create_react_agent(model=model, tools=[get_weather])
    shown = []
    for token, metadata in agent.stream(
        {"messages": [{"role": "user", "content": "what is the weather in sf"}]},
        stream_mode="messages",
    ):
        shown.append(
            (token.type, token.content, metadata["langgraph_node"], metadata["langgraph_step"])
        )
    ai = "ai" if shown[0][0] == "ai" else "AIMessageChunk"
    assert shown == [
        (ai, "Let ", "agent", 1),
        (ai, "me ", "agent", 1),
        (ai, "check. ", "agent", 1),
        (ai, "", "agent", 1),
        (ai, "", "agent", 1),
        ("tool", "It's always sunny in sf!", "tools", 2),
        (ai, "It ", "agent", 3),
        (ai, "is ", "agent", 3),
        (ai, "sunny ", "agent", 3),
        (ai, "in ", "agent", 3),
        (ai, "sf. ", "agent", 3),
        (ai, "", "agent", 3),
    ]
