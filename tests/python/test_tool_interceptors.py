"""``ToolNode(wrap_tool_call=, awrap_tool_call=)``, ``ToolCallRequest``, ``ToolRuntime``,
``create_react_agent`` with a model function, and ``interrupt(response_schema=)``:
LangGraph 1.2's behaviour, standalone and in graphs, under invoke and ainvoke."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated, Any

import pytest

from ironloop import (
    END,
    START,
    Command,
    MemorySaver,
    StateGraph,
    ToolNode,
    create_react_agent,
    interrupt,
    tool,
    tools_condition,
)
from ironloop.errors import is_invalid_resume
from ironloop.graph import MessagesState
from ironloop.messages import AIMessage, HumanMessage, ToolMessage
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import InjectedState, ToolRuntime
from ironloop.prebuilt.tool_node import ToolCallRequest
from ironloop.runtime import ExecutionInfo, Runtime
from ironloop.store import InMemoryStore

CALLS: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    CALLS.append(f"add {a} {b}")
    return a + b


@tool
def boom(a: int) -> int:
    """Fails."""
    raise ValueError(f"boom {a}")


def ask(*calls: dict[str, Any], **state: Any) -> dict[str, Any]:
    return {"messages": [AIMessage(content="", tool_calls=list(calls))], **state}


def call(name: str, id_: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id_}


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def both(node: ToolNode, inp: Any, config: Any = None) -> tuple[Any, Any]:
    """The node's output under invoke and under ainvoke."""
    return node.invoke(inp, config), asyncio.run(node.ainvoke(inp, config))


# --- the interceptor may change, repeat, answer or refuse a call -------------------


def test_an_interceptor_changes_the_call_without_touching_the_request() -> None:
    seen: list[ToolCallRequest] = []

    def double(request: ToolCallRequest, execute: Any) -> Any:
        seen.append(request)
        args = {k: v * 2 for k, v in request.tool_call["args"].items()}
        return execute(request.override(tool_call={**request.tool_call, "args": args}))

    sync, aout = both(ToolNode([add], wrap_tool_call=double), ask(call("add", "c1", a=1, b=2)))
    assert [m.content for m in sync["messages"]] == [m.content for m in aout["messages"]] == ["6"]
    assert seen[0].tool_call["args"] == {"a": 1, "b": 2}  # the original is unchanged
    assert seen[0].tool is not None and seen[0].tool.name == "add"


def test_execute_runs_the_tool_each_time_it_is_called() -> None:
    def thrice(request: ToolCallRequest, execute: Any) -> Any:
        results = [execute(request) for _ in range(3)]
        return results[-1]

    out = ToolNode([add], wrap_tool_call=thrice).invoke(ask(call("add", "c1", a=2, b=2)))
    assert out["messages"][0].content == "4"
    assert CALLS == ["add 2 2"] * 3


def test_an_interceptor_may_answer_without_running_the_tool() -> None:
    def cached(request: ToolCallRequest, execute: Any) -> Any:
        return ToolMessage(content="cached", tool_call_id=request.tool_call["id"], name="add")

    sync, aout = both(ToolNode([add], wrap_tool_call=cached), ask(call("add", "c1", a=1, b=1)))
    assert sync["messages"][0].content == aout["messages"][0].content == "cached"
    assert CALLS == []


def test_a_command_from_an_interceptor_is_the_nodes_output() -> None:
    def route(request: ToolCallRequest, execute: Any) -> Any:
        return Command(goto="elsewhere")

    out = ToolNode([add], wrap_tool_call=route).invoke(ask(call("add", "c1", a=1, b=1)))
    assert isinstance(out, list) and len(out) == 1 and out[0].goto == "elsewhere"


def test_a_tool_failure_reaches_the_interceptor_as_an_error_message() -> None:
    statuses: list[str] = []

    def look(request: ToolCallRequest, execute: Any) -> Any:
        result = execute(request)
        statuses.append(result.status)
        return result

    out = ToolNode([boom], wrap_tool_call=look).invoke(ask(call("boom", "c1", a=7)))
    assert statuses == ["error"]
    assert "boom 7" in out["messages"][0].content


def test_what_the_interceptor_raises_follows_handle_tool_errors() -> None:
    def refuse(request: ToolCallRequest, execute: Any) -> Any:
        raise PermissionError("not today")

    handled = ToolNode([add], wrap_tool_call=refuse).invoke(ask(call("add", "c1", a=1, b=1)))
    (msg,) = handled["messages"]
    assert msg.status == "error" and "not today" in msg.content and msg.tool_call_id == "c1"
    with pytest.raises(PermissionError, match="not today"):
        ToolNode([add], wrap_tool_call=refuse, handle_tool_errors=False).invoke(
            ask(call("add", "c1", a=1, b=1))
        )


def test_an_interceptor_returning_something_else_is_told_what_to_return() -> None:
    def wrong(request: ToolCallRequest, execute: Any) -> Any:
        return "3"

    node = ToolNode([add], wrap_tool_call=wrong, handle_tool_errors=False)
    # Standalone, what it returned comes back as it came (LangGraph's); in a graph,
    # where the state would take it, it is refused.
    assert node.invoke(ask(call("add", "c1", a=1, b=2))) == {"messages": ["3"]}
    graph = StateGraph(MessagesState).add_node("tools", node).add_edge(START, "tools").compile()
    with pytest.raises(TypeError, match="must return a ToolMessage or a Command"):
        graph.invoke(ask(call("add", "c1", a=1, b=2)))
    with pytest.raises(TypeError, match="takes a function"):
        ToolNode([add], wrap_tool_call="nope")  # type: ignore[arg-type]


def test_an_unknown_tool_is_the_interceptors_to_answer_or_to_supply() -> None:
    @tool
    def secret() -> str:
        """Not registered."""
        return "from the interceptor's tool"

    tools_seen: list[Any] = []

    def supply(request: ToolCallRequest, execute: Any) -> Any:
        tools_seen.append(request.tool)
        if request.tool_call["name"] == "secret":
            return execute(request.override(tool=secret))
        return execute(request)

    node = ToolNode([add], wrap_tool_call=supply, handle_tool_errors=False)
    out = node.invoke(ask(call("secret", "c1"), call("nothing", "c2")))
    first, second = out["messages"]
    assert tools_seen == [None, None]
    assert first.content == "from the interceptor's tool"
    # Even with handle_tool_errors=False, an unknown name is an answer, not an error.
    assert second.status == "error"
    assert second.content == "Error: nothing is not a valid tool, try one of [add]."


def test_async_interceptors_and_one_form_serving_both_entry_points() -> None:
    async def awrap(request: ToolCallRequest, execute: Any) -> Any:
        result = await execute(request)
        return ToolMessage(content=f"async {result.content}", tool_call_id=result.tool_call_id)

    def wrap(request: ToolCallRequest, execute: Any) -> Any:
        result = execute(request)
        return ToolMessage(content=f"sync {result.content}", tool_call_id=result.tool_call_id)

    inp = ask(call("add", "c1", a=1, b=2))
    node = ToolNode([add], wrap_tool_call=wrap, awrap_tool_call=awrap)
    sync, aout = both(node, inp)
    assert (sync["messages"][0].content, aout["messages"][0].content) == ("sync 3", "async 3")
    only_async, _ = both(ToolNode([add], awrap_tool_call=awrap), inp)
    assert only_async["messages"][0].content == "async 3"
    _, only_sync = both(ToolNode([add], wrap_tool_call=wrap), inp)
    assert only_sync["messages"][0].content == "sync 3"


def test_calls_of_one_message_run_concurrently_in_call_order() -> None:
    @tool
    async def slow(n: int) -> int:
        """Waits."""
        await asyncio.sleep(0.2 if n == 0 else 0.05)
        return n

    def hand_on(request: ToolCallRequest, execute: Any) -> Any:
        return execute(request)

    node = ToolNode([slow], wrap_tool_call=hand_on)
    out = node.invoke(ask(*[call("slow", f"c{i}", n=i) for i in range(4)]))
    assert [m.content for m in out["messages"]] == ["0", "1", "2", "3"]


def test_a_tool_call_list_is_taken_as_input() -> None:
    calls = [{**call("add", "c1", a=2, b=3), "type": "tool_call"}]
    sync, aout = both(ToolNode([add]), calls)
    assert sync["messages"][0].content == aout["messages"][0].content == "5"


# --- ToolCallRequest and ToolRuntime ------------------------------------------------


def test_a_request_warns_when_assigned_and_override_keeps_the_runtime_state() -> None:
    runtime = ToolRuntime(
        state={"n": 1},
        context=None,
        config={},
        stream_writer=lambda _: None,
        tool_call_id="c1",
        store=None,
    )
    req = ToolCallRequest(tool_call=call("add", "c1"), tool=None, state={"n": 1}, runtime=runtime)
    with pytest.warns(DeprecationWarning, match="Use the override"):
        req.tool = add
    new = req.override(state={"n": 2})
    assert new.runtime.state == {"n": 2} and req.runtime.state == {"n": 1}
    with pytest.raises(TypeError, match="unknown fields"):
        req.override(nope=1)
    assert runtime.tools == [] and runtime.execution_info is None


@dataclasses.dataclass
class Ctx:
    user: str


def test_a_tool_runtime_parameter_is_filled_and_hidden_from_the_model() -> None:
    seen: dict[str, Any] = {}

    @tool
    def whoami(prefix: str, runtime: ToolRuntime[Ctx]) -> str:
        """Says who asks."""
        seen.update(
            state=runtime.state,
            call=runtime.tool_call_id,
            store=runtime.store,
            thread=runtime.config["configurable"]["thread_id"],
        )
        return f"{prefix} {runtime.context.user}"

    assert list(whoami.parameters["properties"]) == ["prefix"]

    def model_node(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].type == "tool":
            return {}
        return {"messages": [AIMessage(content="", tool_calls=[call("whoami", "c9", prefix="hi")])]}

    store = InMemoryStore()
    g = StateGraph(MessagesState, context_schema=Ctx)
    g.add_node("model", model_node)
    g.add_node("tools", ToolNode([whoami]))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
    g.add_edge("tools", "model")
    app = g.compile(checkpointer=MemorySaver(), store=store)
    config = {"configurable": {"thread_id": "t1"}}
    out = app.invoke({"messages": [HumanMessage(content="go")]}, config, context=Ctx(user="ann"))
    assert out["messages"][-1].content == "hi ann"
    assert seen["call"] == "c9" and seen["store"] is store and seen["thread"] == "t1"
    assert [m.type for m in seen["state"]["messages"]] == ["human", "ai"]


def test_an_overridden_state_reaches_injected_state_and_the_runtime() -> None:
    @tool
    def read(note: Annotated[str, InjectedState("note")], runtime: ToolRuntime) -> str:
        """Reads the note twice."""
        return f"{note}/{runtime.state['note']}"

    def renote(request: ToolCallRequest, execute: Any) -> Any:
        return execute(request.override(state={**request.state, "note": "new"}))

    async def arenote(request: ToolCallRequest, execute: Any) -> Any:
        return await execute(request.override(state={**request.state, "note": "new"}))

    inp = ask(call("read", "c1"), note="old")
    node = ToolNode([read], wrap_tool_call=renote, awrap_tool_call=arenote)
    sync, aout = both(node, inp)
    assert sync["messages"][0].content == aout["messages"][0].content == "new/new"


def test_a_wrapped_tool_node_in_a_graph_updates_its_state() -> None:
    def tag(request: ToolCallRequest, execute: Any) -> Any:
        result = execute(request)
        return Command(update={"messages": [result], "tagged": request.tool_call["id"]})

    class State(MessagesState):
        tagged: str

    g = StateGraph(State)
    g.add_node("tools", ToolNode([add], wrap_tool_call=tag))
    g.add_edge(START, "tools")
    app = g.compile()
    out = app.invoke(ask(call("add", "c1", a=4, b=5)))
    assert out["tagged"] == "c1" and out["messages"][-1].content == "9"
    aout = asyncio.run(app.ainvoke(ask(call("add", "c2", a=1, b=1))))
    assert aout["tagged"] == "c2" and aout["messages"][-1].content == "2"


# --- create_react_agent with a model function ---------------------------------------


def test_a_model_function_picks_the_model_per_call() -> None:
    picked: list[str] = []

    def pick(state: Any, runtime: Runtime[Ctx]) -> Any:
        user = runtime.context.user
        picked.append(user)
        if state["messages"][-1].type == "human":
            return ScriptedChatModel([{"content": "", "tool_calls": [call("add", "c1", a=1, b=1)]}])
        return ScriptedChatModel([f"done for {user}"])

    agent = create_react_agent(pick, [add], context_schema=Ctx)
    out = agent.invoke({"messages": [("user", "go")]}, context=Ctx(user="bo"))
    assert out["messages"][-1].content == "done for bo" and picked == ["bo", "bo"]

    async def apick(state: Any, runtime: Runtime[Ctx]) -> Any:
        return pick(state, runtime)

    agent = create_react_agent(apick, [add], context_schema=Ctx)
    out = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}, context=Ctx(user="cy")))
    assert out["messages"][-1].content == "done for cy"


def test_a_model_function_returning_no_model_says_what_it_must_return() -> None:
    agent = create_react_agent(lambda state, runtime: 42, [add])
    with pytest.raises(TypeError, match="must return a chat model"):
        agent.invoke({"messages": [("user", "go")]})


# --- ExecutionInfo and interrupt(response_schema=) ----------------------------------


def test_execution_info_is_frozen_and_patched_into_a_copy() -> None:
    info = ExecutionInfo(checkpoint_id="c", checkpoint_ns="", task_id="t")
    assert (info.thread_id, info.run_id, info.node_attempt) == (None, None, 1)
    assert info.patch(node_attempt=3).node_attempt == 3 and info.node_attempt == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.task_id = "x"  # type: ignore[misc]
    assert Runtime(context=None).execution_info is None


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_refused_resume_fails_the_run_and_can_be_answered_again(wrapped: bool) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Approval(pydantic.BaseModel):
        approved: bool

    @tool
    def ask_human() -> str:
        """Asks for approval."""
        answer = interrupt("Approve?", response_schema=Approval)
        return f"approved={answer.approved}"

    def hand_on(request: ToolCallRequest, execute: Any) -> Any:
        return execute(request)

    node = ToolNode([ask_human], wrap_tool_call=hand_on if wrapped else None)
    g = StateGraph(MessagesState)
    g.add_node("tools", node)
    g.add_edge(START, "tools")
    app = g.compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "r"}}
    (pending,) = app.invoke(ask(call("ask_human", "c1")), config)["__interrupt__"]
    with pytest.raises(pydantic.ValidationError, match="approved") as err:
        app.invoke(Command(resume={pending.id: {"approved": "maybe"}}), config)
    assert is_invalid_resume(err.value)
    assert [i.id for i in app.get_state(config).interrupts] == [pending.id]
    out = app.invoke(Command(resume={pending.id: {"approved": True}}), config)
    assert out["messages"][-1].content == "approved=True"


# --- ValidationNode -----------------------------------------------------------------


def test_validation_node_answers_each_call_without_running_a_tool() -> None:
    from ironloop.prebuilt import ValidationNode

    calls = [call("add", "c1", a=1, b=2), call("add", "c2", a="x", b=2)]
    node = ValidationNode([add])
    as_list = node.invoke([AIMessage(content="", tool_calls=calls)])
    as_state = asyncio.run(node.ainvoke(ask(*calls)))["messages"]
    for good, bad in (as_list, as_state):
        assert good.content == '{"a": 1, "b": 2}' and not good.additional_kwargs.get("is_error")
        assert bad.additional_kwargs["is_error"] is True and "Respond after fixing" in bad.content
    assert CALLS == []
    with pytest.raises(ValueError, match="no schema named 'other'"):
        node.invoke([AIMessage(content="", tool_calls=[call("other", "c3")])])


def test_a_langchain_tool_parameter_named_runtime_is_injected_whatever_its_type() -> None:
    """LangGraph's ToolNode injects a ``runtime`` parameter by name: the model is not
    asked for it, and the tool gets the call's ToolRuntime."""
    from langchain_core.tools import tool as lc_tool

    from ironloop import create_agent

    got: list[Any] = []

    @lc_tool
    def by_name(x: int, runtime: Any) -> str:
        """Reads the runtime."""
        got.append((isinstance(runtime, ToolRuntime), runtime.tool_call_id))
        return f"ok {x}"

    calls = [{"name": "by_name", "args": {"x": 1}, "id": "c1"}]
    model = ScriptedChatModel([{"content": "", "tool_calls": calls}, "done"])
    out = create_agent(model, [by_name]).invoke({"messages": [("user", "go")]})
    assert out["messages"][2].content == "ok 1" and got == [(True, "c1")]


def test_an_agent_request_runtime_made_when_read_is_the_tools_own() -> None:
    """A wrapped call's ``request.runtime`` is made when first read (most interceptors
    never read it): read before the handler, after it, or not at all, it is the one the
    tool is given, with the call's id, state, store and context, under invoke and
    ainvoke; assigning it still warns."""
    from ironloop import create_agent
    from ironloop.middleware import wrap_tool_call

    given: list[Any] = []
    read: list[tuple[str, Any]] = []

    @tool
    def who(when: str, runtime: ToolRuntime[Ctx]) -> str:
        """Says who asks."""
        given.append(runtime)
        return f"{runtime.tool_call_id} {runtime.context.user} {len(runtime.state['messages'])}"

    @wrap_tool_call
    def peek(request: ToolCallRequest, handler: Any) -> Any:
        when = request.tool_call["args"]["when"]
        if when == "before":
            read.append((when, request.runtime))
        out = handler(request)
        if when == "after":
            read.append((when, request.runtime))
        if when == "assign":
            with pytest.warns(DeprecationWarning, match="Use the override"):
                request.runtime = None
        return out

    who_calls = [call("who", f"c_{w}", when=w) for w in ("before", "after", "never", "assign")]
    store = InMemoryStore()
    for run in ("invoke", "ainvoke"):
        given.clear()
        read.clear()
        model = ScriptedChatModel(
            [{"content": "", "tool_calls": [c]} for c in who_calls] + ["done"]
        )
        agent = create_agent(model, [who], middleware=[peek], context_schema=Ctx, store=store)
        inp = {"messages": [HumanMessage(content="go")]}
        config = {"configurable": {"run": run}}
        if run == "invoke":
            out = agent.invoke(inp, config, context=Ctx(user="ann"))
        else:
            out = asyncio.run(agent.ainvoke(inp, config, context=Ctx(user="ann")))
        texts = [m.content for m in out["messages"] if m.type == "tool"]
        assert texts == ["c_before ann 2", "c_after ann 4", "c_never ann 6", "c_assign ann 8"]
        assert [r.store for r in given] == [store] * 4
        # Each run's own config and the node's tools (the scope is made once per run).
        assert [r.config["configurable"]["run"] for r in given] == [run] * 4
        assert [[t.name for t in r.tools] for r in given] == [["who"]] * 4
        assert [w for w, _ in read] == ["before", "after"]
        assert read[0][1] is given[0] and read[1][1] is given[1], run
