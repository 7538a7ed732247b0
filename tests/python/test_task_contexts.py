"""Each task runs in its own copy of the caller's ``contextvars`` context, as under
LangGraph, whichever path runs it: a Python node (an agent's hook), the engine's tools
node, ``create_agent``'s ``wrap_tool_call`` chain run from the engine's tool node. The
caller's variables are seen in every task; what a task sets is seen by no other task,
nor by the caller after the run."""

from __future__ import annotations

import contextvars
from typing import Any

import pytest
from agent_support import MODES, call, run, turn

from ironloop import create_agent, get_runtime, tool
from ironloop._tool_call import node_scope
from ironloop.middleware import after_model, before_model, wrap_tool_call
from ironloop.models import ScriptedChatModel

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("test_task_contexts", default="unset")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wrapped", [False, True])
def test_each_task_sees_the_callers_context_and_keeps_its_changes_to_itself(
    mode: str, wrapped: bool
) -> None:
    seen: list[tuple[str, str]] = []

    @tool
    def probe(a: int) -> int:
        """Probes the context."""
        seen.append(("tool", VAR.get()))
        VAR.set(f"tool{a}")
        return a

    @before_model
    def before(state: Any, runtime: Any) -> None:
        seen.append(("before", VAR.get()))
        # The tools node's scope is its task's alone (the wrapped chain sets it and
        # leaves it to the task's context, which ends with the task).
        assert node_scope.get() is None
        VAR.set("before")

    @after_model
    def after(state: Any, runtime: Any) -> None:
        seen.append(("after", VAR.get()))
        VAR.set("after")

    hooks: list[Any] = [before, after]
    if wrapped:

        @wrap_tool_call
        def wrap(request: Any, handler: Any) -> Any:
            seen.append(("wrap", VAR.get()))
            VAR.set("wrap")
            return handler(request)

        hooks.append(wrap)
    model = ScriptedChatModel(
        [turn(call("probe", "1", a=1)), turn(call("probe", "2", a=2)), "done"]
    )
    token = VAR.set("caller")
    try:
        out = run(
            create_agent(model, [probe], middleware=hooks), {"messages": [("user", "x")]}, mode=mode
        )
        assert VAR.get() == "caller" and node_scope.get() is None
    finally:
        VAR.reset(token)
    assert out["messages"][-1].content == "done"
    kinds = [k for k, _ in seen]
    per_round = ["before", "after", *(["wrap"] if wrapped else []), "tool"]
    assert kinds == per_round * 2 + ["before", "after"]
    for kind, value in seen:
        # A tool run by the chain runs inside the hook's call, as under LangChain: it may
        # see what the hook set; nothing else sees another task's value.
        allowed = {"caller", "wrap"} if kind == "tool" else {"caller"}
        assert value in allowed, (kind, value, seen)


@pytest.mark.parametrize("mode", MODES)
def test_a_hooks_runtime_is_its_own_tasks(mode: str) -> None:
    """Each hook step is a task of its own: its runtime's writer and execution info are
    its task's, not the last task's (a runtime is made per task, whatever the engine
    reuses between steps)."""
    ids: list[tuple[str, str]] = []

    @before_model
    def before(state: Any, runtime: Any) -> None:
        assert get_runtime() is runtime
        ids.append(("before", runtime.execution_info.task_id))

    @after_model
    def after(state: Any, runtime: Any) -> None:
        ids.append(("after", runtime.execution_info.task_id))

    model = ScriptedChatModel([turn(call("add", "1", a=1, b=2)), "done"])
    from agent_support import add

    run(
        create_agent(model, [add], middleware=[before, after]),
        {"messages": [("user", "x")]},
        mode=mode,
    )
    assert [k for k, _ in ids] == ["before", "after", "before", "after"]
    task_ids = [t for _, t in ids]
    assert len(set(task_ids)) == 4
    assert [t.rsplit(":", 1)[1] for t in task_ids] == [
        "before.before_model",
        "after.after_model",
        "before.before_model",
        "after.after_model",
    ]
