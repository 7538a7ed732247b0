"""LangChain 1.x's ToolCallLimitMiddleware in its three exit behaviours, with a model
that makes two parallel calls a turn, imports changed only. Expected values: the same
program's output under LangChain 1.4.7 (the conversation's last messages, the error)."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from ironloop import create_agent
from ironloop.middleware import ToolCallLimitMiddleware


class M(BaseChatModel):
    @property
    def _llm_type(self):
        return "m"

    def bind_tools(self, tools, **kw):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kw)

    def _generate(self, messages, stop=None, run_manager=None, **kw):
        n = len(messages)
        return ChatResult(
            generations=[
                ChatGeneration(
                    message=AIMessage(
                        content="",
                        tool_calls=[
                            {"name": "add", "args": {"a": n, "b": 1}, "id": f"a{n}"},
                            {"name": "echo", "args": {"text": "x"}, "id": f"e{n}"},
                        ],
                    )
                )
            ]
        )


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def echo(text: str) -> str:
    """Echoes."""
    return text


def run_program() -> dict:
    out = {}
    for beh, kw in [
        ("end", dict(thread_limit=1)),
        ("end-tool", dict(tool_name="add", run_limit=1)),
        ("continue", dict(tool_name="add", run_limit=1)),
    ]:
        b = beh.split("-")[0]
        if b == "continue":
            mws = [
                ToolCallLimitMiddleware(exit_behavior="continue", **kw),
                ToolCallLimitMiddleware(run_limit=3, exit_behavior="end"),
            ]
        else:
            mws = [ToolCallLimitMiddleware(exit_behavior=b, **kw)]
        r = create_agent(M(), [add, echo], middleware=mws).invoke(
            {"messages": [{"role": "user", "content": "go"}]}, {"recursion_limit": 50}
        )
        out[beh] = [[m.type, m.content, getattr(m, "tool_call_id", None)] for m in r["messages"]]
    for beh, kw in [("error", dict(run_limit=1))]:
        try:
            create_agent(
                M(), [add, echo], middleware=[ToolCallLimitMiddleware(exit_behavior="error", **kw)]
            ).invoke({"messages": [{"role": "user", "content": "go"}]})
        except Exception as e:
            out[beh] = [type(e).__name__, str(e)]
    return out


EXPECTED = {
    "end": [
        ["human", "go", None],
        ["ai", "", None],
        ["tool", "Tool call limit exceeded. Do not make additional tool calls.", "e1"],
        [
            "tool",
            "Execution stopped before this tool call could run because another tool call in the same batch exceeded the limit.",
            "a1",
        ],
        ["ai", "Tool call limit reached: thread limit exceeded (2/1 calls).", None],
    ],
    "end-tool": [
        ["human", "go", None],
        ["ai", "", None],
        ["tool", "2", "a1"],
        ["tool", "x", "e1"],
        ["ai", "", None],
        ["tool", "Tool call limit exceeded. Do not call 'add' again.", "a4"],
        [
            "tool",
            "Execution stopped before this tool call could run because another tool call in the same batch exceeded the limit.",
            "e4",
        ],
        ["ai", "'add' tool call limit reached: run limit exceeded (2/1 calls).", None],
    ],
    "continue": [
        ["human", "go", None],
        ["ai", "", None],
        ["tool", "2", "a1"],
        ["tool", "x", "e1"],
        ["ai", "", None],
        ["tool", "Tool call limit exceeded. Do not make additional tool calls.", "e4"],
        [
            "tool",
            "Execution stopped before this tool call could run because another tool call in the same batch exceeded the limit.",
            "a4",
        ],
        ["ai", "Tool call limit reached: run limit exceeded (4/3 calls).", None],
    ],
    "error": [
        "ToolCallLimitExceededError",
        "Tool call limit reached: run limit exceeded (2/1 calls).",
    ],
}


def test_same_result_as_langchain() -> None:
    got = run_program()
    for key, value in EXPECTED.items():
        assert got[key] == value, key
