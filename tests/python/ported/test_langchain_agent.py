"""A LangChain 1.x agent with middleware (``create_agent``, ``@before_model``,
``@dynamic_prompt``, ``@wrap_tool_call``, ``HumanInTheLoopMiddleware``,
``ModelCallLimitMiddleware``), a LangChain chat model and LangChain tools, imports
changed only. Expected values: the same program's output under LangChain 1.4.7 with
langgraph 1.2.22 (the interrupt, the conversation, the hooks' log and what the model
was given at each call)."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from ironloop import MemorySaver as InMemorySaver
from ironloop import create_agent
from ironloop.middleware import (
    HumanInTheLoopMiddleware,
    ModelCallLimitMiddleware,
    before_model,
    dynamic_prompt,
    wrap_tool_call,
)
from ironloop.types import Command


class Scripted(BaseChatModel):
    seen: list = []  # noqa: RUF012 (a pydantic field, as the program has it)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kw)

    def _generate(self, messages, stop=None, run_manager=None, **kw):
        self.seen.append(
            [m.type for m in messages] + [t["function"]["name"] for t in kw.get("tools", [])]
        )
        if messages[-1].type == "human":
            msg = AIMessage(
                content="",
                tool_calls=[
                    {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "w1"},
                    {
                        "name": "send_email",
                        "args": {"to": "ann@example.com", "body": "sunny"},
                        "id": "e1",
                    },
                    {
                        "name": "send_email",
                        "args": {"to": "bob@example.com", "body": "sunny"},
                        "id": "e2",
                    },
                ],
            )
        else:
            msg = AIMessage(
                content="; ".join(
                    f"{m.tool_call_id}:{m.content}" for m in messages if m.type == "tool"
                )
            )
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def get_weather(city: str) -> str:
    """Weather in a city."""
    return f"sunny in {city}"


@tool
def send_email(to: str, body: str) -> str:
    """Sends an email."""
    return f"sent to {to}"


log = []


@before_model
def count(state, runtime):
    log.append(("before_model", len(state["messages"])))


@dynamic_prompt
def prompt(request):
    return f"You have {len(request.messages)} messages."


@wrap_tool_call
def trace(request, handler):
    log.append(("tool", request.tool_call["name"], request.tool_call["id"]))
    return handler(request)


def run_program() -> dict[str, Any]:
    log.clear()
    model = Scripted(seen=[])
    agent = create_agent(
        model,
        [get_weather, send_email],
        middleware=[
            count,
            prompt,
            trace,
            HumanInTheLoopMiddleware(
                interrupt_on={"send_email": {"allowed_decisions": ["approve", "reject"]}}
            ),
            ModelCallLimitMiddleware(run_limit=5),
        ],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "1"}}
    out = agent.invoke(
        {"messages": [{"role": "user", "content": "weather, and tell ann and bob"}]}, config
    )
    intr = out["__interrupt__"][0].value
    decisions = [{"type": "approve"}, {"type": "reject", "message": "not bob"}]
    out = agent.invoke(Command(resume={"decisions": decisions}), config)
    return {
        "interrupt": intr,
        "messages": [
            [m.type, m.content, getattr(m, "status", None), getattr(m, "tool_call_id", None)]
            for m in out["messages"]
        ],
        "log": [list(entry) for entry in log],
        "seen": model.seen,
        "keys": sorted(out),
    }


EXPECTED = {
    "interrupt": {
        "action_requests": [
            {
                "args": {"body": "sunny", "to": "ann@example.com"},
                "description": "Tool execution requires approval\n\nTool: send_email\nArgs: {'to': 'ann@example.com', 'body': 'sunny'}",
                "name": "send_email",
            },
            {
                "args": {"body": "sunny", "to": "bob@example.com"},
                "description": "Tool execution requires approval\n\nTool: send_email\nArgs: {'to': 'bob@example.com', 'body': 'sunny'}",
                "name": "send_email",
            },
        ],
        "review_configs": [
            {"action_name": "send_email", "allowed_decisions": ["approve", "reject"]},
            {"action_name": "send_email", "allowed_decisions": ["approve", "reject"]},
        ],
    },
    "keys": ["messages"],
    "log": [
        ["before_model", 1],
        ["tool", "get_weather", "w1"],
        ["tool", "send_email", "e1"],
        ["before_model", 5],
    ],
    "messages": [
        ["human", "weather, and tell ann and bob", None, None],
        ["ai", "", None, None],
        [
            "tool",
            "User rejected the tool call for `send_email` with reason: not bob",
            "error",
            "e2",
        ],
        ["tool", "sunny in Lisbon", "success", "w1"],
        ["tool", "sent to ann@example.com", "success", "e1"],
        [
            "ai",
            "e2:User rejected the tool call for `send_email` with reason: not bob; w1:sunny in Lisbon; e1:sent to ann@example.com",
            None,
            None,
        ],
    ],
    "seen": [
        ["system", "human", "get_weather", "send_email"],
        ["system", "human", "ai", "tool", "tool", "tool", "get_weather", "send_email"],
    ],
}


def _steps(log: list[list[Any]]) -> list[Any]:
    """The log with each run of tool calls as one sorted group: with ``wrap_tool_call``
    both LangChain and ironloop run a message's calls as parallel tasks, so the order
    in which the hook sees them is not defined (the messages' order is)."""
    out: list[Any] = []
    for entry in log:
        if entry[0] != "tool":
            out.append(entry)
        elif out and out[-1][0] == "tools":
            out[-1] = ("tools", sorted([*out[-1][1], entry]))
        else:
            out.append(("tools", [entry]))
    return out


def test_same_result_as_langchain() -> None:
    got = run_program()
    for key, value in EXPECTED.items():
        if key == "log":
            assert _steps(got[key]) == _steps(value), key
        else:
            assert got[key] == value, key
