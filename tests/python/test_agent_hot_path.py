"""What the agent hot path's shortcuts must keep (issue 41 item 5): a hook's runtime made
without helper calls still writes to the custom stream and tells its task; the requests
the tools node makes for ``wrap_tool_call`` are ordinary ``ToolCallRequest`` s; the
invalid-tool-call check that reads the history in Rust finds what the Python rule found."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from ironloop import create_agent, tool
from ironloop._invalid_calls import _patch_invalid
from ironloop._ironloop import _has_invalid_calls
from ironloop._tool_call import ToolCallRequest
from ironloop.messages import AIMessage, HumanMessage, ToolMessage
from ironloop.middleware import before_model, wrap_tool_call
from ironloop.models import ScriptedChatModel
from ironloop.runtime import get_runtime
from ironloop.store import InMemoryStore


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def one_call_script() -> list[Any]:
    call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}
    return [{"content": "", "tool_calls": [call]}, "done"]


def test_a_hook_runtime_writes_to_the_custom_stream_and_knows_its_task() -> None:
    seen: list[Any] = []

    @before_model
    def hook(state: Any, runtime: Any) -> None:
        runtime.stream_writer({"hook": len(state["messages"])})
        # A second runtime of the same task (the one-slot cache evicted by another
        # task's) gives the same first-attempt time as the first.
        again = get_runtime()
        seen.append((runtime.execution_info, again.execution_info))

    agent = create_agent(ScriptedChatModel(one_call_script()), [add], middleware=[hook])
    chunks = list(agent.stream({"messages": [HumanMessage(content="go")]}, stream_mode="custom"))
    assert chunks == [{"hook": 1}, {"hook": 3}]
    assert len(seen) == 2
    for info, again in seen:
        assert info.task_id.endswith(":hook.before_model")
        assert info.node_attempt == 1
        assert again.node_first_attempt_time == info.node_first_attempt_time
    assert seen[0][0].task_id != seen[1][0].task_id
    assert seen[0][0].node_first_attempt_time <= seen[1][0].node_first_attempt_time


def test_a_hook_runtime_without_custom_streaming_has_a_no_op_writer() -> None:
    writes: list[Any] = []

    @before_model
    def hook(state: Any, runtime: Any) -> None:
        writes.append(runtime.stream_writer({"ignored": True}))

    agent = create_agent(ScriptedChatModel(["done"]), [add], middleware=[hook])
    out = agent.invoke({"messages": [HumanMessage(content="go")]})
    assert out["messages"][-1].content == "done" and writes == [None]


@dataclass
class Ctx:
    user: str


def _hook_runtimes(seen: list[Any]) -> Any:
    @before_model
    def keep(state: Any, runtime: Any) -> None:
        seen.append(runtime)  # read only after the run: its fields are made then

    return keep


def _task_ids(runtimes: list[Any]) -> list[str]:
    return [r.execution_info.task_id for r in runtimes]


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream"])
def test_a_hook_runtime_read_after_its_task_is_still_that_tasks(how: str) -> None:
    """A hook's runtime makes its fields when first read: read long after its task
    (here after the run), it still gives the run's context and store, its own task and
    a writer to the stream it ran in; sync, async and streaming alike."""
    seen: list[Any] = []
    store = InMemoryStore()
    agent = create_agent(
        ScriptedChatModel(one_call_script()),
        [add],
        middleware=[_hook_runtimes(seen)],
        context_schema=Ctx,
        store=store,
    )
    given = {"messages": [HumanMessage(content="go")]}
    if how == "invoke":
        agent.invoke(given, context=Ctx(user="ann"))
    elif how == "ainvoke":
        asyncio.run(agent.ainvoke(given, context=Ctx(user="ann")))
    else:
        list(agent.stream(given, context=Ctx(user="ann"), stream_mode="custom"))
    first, second = seen
    assert first is not second
    for runtime in seen:
        assert runtime.context == Ctx(user="ann") and runtime.store is store
        assert runtime.previous is None and runtime.server_info is None
        assert runtime.execution_info.node_attempt == 1
        runtime.heartbeat()  # no idle timeout: a no-op, as LangGraph's
    ids = _task_ids(seen)
    assert len(set(ids)) == 2 and all(i.endswith(":keep.before_model") for i in ids)
    if how == "stream":
        assert first.stream_writer is not second.stream_writer  # each task's own
    else:
        assert first.stream_writer({"x": 1}) is None


def test_a_hook_runtime_replaced_keeps_its_fields_and_takes_the_new_ones() -> None:
    """``override`` / ``dataclasses.replace`` of a task's runtime (its fields made
    lazily) copy every field, the replaced ones new; the copy stays frozen."""
    seen: list[Any] = []

    @before_model
    def hook(state: Any, runtime: Any) -> None:
        seen.append((runtime, runtime.override(context=Ctx(user="bob"))))

    agent = create_agent(ScriptedChatModel(["done"]), [add], middleware=[hook], context_schema=Ctx)
    chunks = list(
        agent.stream(
            {"messages": [HumanMessage(content="go")]},
            context=Ctx(user="ann"),
            stream_mode="custom",
        )
    )
    assert chunks == []
    ((runtime, other),) = seen
    assert other.context == Ctx(user="bob") and runtime.context == Ctx(user="ann")
    assert other.execution_info == runtime.execution_info
    assert other.stream_writer == runtime.stream_writer
    assert other.heartbeat == runtime.heartbeat
    again = dataclasses.replace(runtime)
    assert again == runtime and again is not runtime
    assert again.context == Ctx(user="ann")
    with pytest.raises(dataclasses.FrozenInstanceError):
        runtime.context = None


def test_the_tools_node_requests_are_ordinary_requests() -> None:
    requests: list[ToolCallRequest] = []

    @wrap_tool_call
    def keep(request: ToolCallRequest, handler: Any) -> Any:
        requests.append(request)
        return handler(request)

    agent = create_agent(ScriptedChatModel(one_call_script()), [add], middleware=[keep])
    out = agent.invoke({"messages": [HumanMessage(content="go")]})
    assert [m.content for m in out["messages"][2:]] == ["3", "done"]
    (req,) = requests
    assert req.tool_call == {
        "name": "add",
        "args": {"a": 1, "b": 2},
        "id": "c1",
        "type": "tool_call",
    }
    assert req.runtime.tool_call_id == "c1"
    same = ToolCallRequest(
        tool_call=req.tool_call, tool=req.tool, state=req.state, runtime=req.runtime
    )
    assert same == req
    with pytest.warns(DeprecationWarning, match="Use the override"):
        req.tool = None
    assert req.tool is None


class NamedAI(AIMessage):
    """A subclass: not one of the classes the Rust check knows by pointer."""


def invalid_ai(cls: type = AIMessage, call_id: str = "bad") -> Any:
    return cls(
        content="",
        invalid_tool_calls=[{"name": "add", "args": "{oops", "id": call_id, "error": "json"}],
    )


@pytest.mark.parametrize("cls", [AIMessage, NamedAI])
def test_invalid_calls_are_found_anywhere_in_the_history(cls: type) -> None:
    history = [HumanMessage(content="go"), invalid_ai(cls), HumanMessage(content="again")]
    history += [AIMessage(content="fine")] * 50
    assert _has_invalid_calls(history)
    patched = _patch_invalid(history)
    assert patched is not None and len(patched) == len(history) + 1
    answer = patched[2]
    assert isinstance(answer, ToolMessage)
    assert (answer.tool_call_id, answer.status) == ("bad", "error")


def test_answered_or_absent_invalid_calls_need_no_patch() -> None:
    plain = [HumanMessage(content="go"), AIMessage(content="hi")] * 20
    assert not _has_invalid_calls(plain) and _patch_invalid(plain) is None
    answered = [
        invalid_ai(),
        ToolMessage(content="error", tool_call_id="bad", status="error"),
    ]
    assert _has_invalid_calls(answered)  # found, then seen to be answered
    assert _patch_invalid(answered) is None
    with pytest.raises(AttributeError):
        _has_invalid_calls([{"role": "user", "content": "a dict is not a message"}])
