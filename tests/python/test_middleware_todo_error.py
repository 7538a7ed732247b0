"""``TodoListMiddleware`` and ``ToolErrorMiddleware`` (LangChain 1.5's)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_support import MODES, call, run, turn

from ironloop import create_agent, tool
from ironloop.messages import SystemMessage, ToolMessage
from ironloop.middleware import TodoListMiddleware, ToolErrorMiddleware, wrap_model_call
from ironloop.middleware.todo import PARALLEL_CALLS_ERROR, WRITE_TODOS_SYSTEM_PROMPT
from ironloop.models import ScriptedChatModel


def todos(*items: tuple[str, str]) -> dict[str, Any]:
    return {"todos": [{"content": c, "status": s} for c, s in items]}


@pytest.mark.parametrize("mode", MODES)
def test_write_todos_keeps_the_plan_in_the_state(mode: str) -> None:
    model = ScriptedChatModel(
        [
            turn(call("write_todos", "t1", **todos(("a", "pending")))),
            turn(call("write_todos", "t2", **todos(("a", "completed")))),
            "done",
        ]
    )
    agent = create_agent(model, [], middleware=[TodoListMiddleware()])
    out = run(agent, {"messages": [("user", "plan it")]}, mode=mode)
    assert out["todos"] == [{"content": "a", "status": "completed"}]
    assert (
        out["messages"][2].content == "Updated todo list to [{'content': 'a', 'status': 'pending'}]"
    )
    assert len(out["messages"]) == 6


def test_the_todo_prompt_is_appended_to_the_system_message() -> None:
    seen: list[Any] = []

    @wrap_model_call
    def spy(request: Any, handler: Any) -> Any:
        seen.append(request.system_message)
        return handler(request)

    agent = create_agent(
        ScriptedChatModel(["ok"]),
        [],
        system_prompt="Be kind.",
        middleware=[TodoListMiddleware(system_prompt="PLAN"), spy],
    )
    agent.invoke({"messages": [("user", "x")]})
    assert isinstance(seen[0], SystemMessage) and seen[0].text == "Be kind.\n\nPLAN"
    assert "write_todos" in WRITE_TODOS_SYSTEM_PROMPT


def test_parallel_write_todos_calls_are_refused_and_none_runs() -> None:
    model = ScriptedChatModel(
        [
            turn(
                call("write_todos", "t1", **todos(("a", "pending"))),
                call("write_todos", "t2", **todos(("b", "pending"))),
            ),
            "sorry",
        ]
    )
    out = create_agent(model, [], middleware=[TodoListMiddleware()]).invoke(
        {"messages": [("user", "x")]}
    )
    errors = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status, m.content) for m in errors] == [
        ("t1", "error", PARALLEL_CALLS_ERROR),
        ("t2", "error", PARALLEL_CALLS_ERROR),
    ]
    assert "todos" not in out


@tool
def flaky(x: int) -> int:
    """Fails on odd numbers."""
    if x % 2:
        raise ValueError(f"odd {x}")
    return x


@pytest.mark.parametrize("mode", MODES)
def test_tool_error_middleware_answers_the_errors_it_chooses(mode: str) -> None:
    def on_error(exc: Exception, request: Any) -> str | None:
        assert request.tool_call["name"] == "flaky"
        return f"{type(exc).__name__}: use an even number" if isinstance(exc, ValueError) else None

    model = ScriptedChatModel([turn(call("flaky", "c1", x=1), call("flaky", "c2", x=2)), "ok"])
    agent = create_agent(model, [flaky], middleware=[ToolErrorMiddleware(on_error)])
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    results = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert results["c1"].status == "error"
    assert results["c1"].content == "ValueError: use an even number"
    assert results["c2"].content == "2"


def test_tool_error_middleware_needs_a_handler_and_async_only_refuses_sync_runs() -> None:
    with pytest.raises(ValueError, match="requires `on_error` and/or `aon_error`"):
        ToolErrorMiddleware()

    async def aon_error(exc: Exception, request: Any) -> str:
        return "handled"

    model = ScriptedChatModel([turn(call("flaky", "c1", x=1)), "ok"] * 2)
    agent = create_agent(model, [flaky], middleware=[ToolErrorMiddleware(aon_error=aon_error)])
    out = run(agent, {"messages": [("user", "x")]}, mode="ainvoke")
    assert out["messages"][2].content == "handled"
    # On the sync path the async handler cannot be awaited: the failure is reported
    # (ironloop's tools node turns it into an error ToolMessage naming it).
    out = agent.invoke({"messages": [("user", "x")]})
    assert "no sync `on_error`" in out["messages"][2].content
