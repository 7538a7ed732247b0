"""ToolNode: output order, strategies and concurrency bounds, input and output shapes,
what tool return values become, bad calls, argument checking, tools_condition, and
standalone use outside a graph."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import (
    END,
    START,
    InjectedState,
    InjectedToolCallId,
    StateGraph,
    ToolContext,
    ToolNode,
    add_messages,
    tool,
    tools_condition,
)
from ironloop.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@tool
def echo(text: str) -> str:
    """Echoes."""
    return text


# ------------------------------------------------------------------------- order


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_results_are_in_call_order_whatever_the_completion_order(is_async, make_ai) -> None:
    finished: list[int] = []

    if is_async:

        @tool
        async def wait(i: int, delay: float) -> int:
            """Waits."""
            await asyncio.sleep(delay)
            finished.append(i)
            return i

    else:

        @tool
        def wait(i: int, delay: float) -> int:
            """Waits."""
            time.sleep(delay)
            finished.append(i)
            return i

    n = 6
    ai = make_ai(*[("wait", {"i": i, "delay": 0.03 * (n - i)}) for i in range(n)])
    out = ToolNode([wait]).invoke([ai])
    assert finished[0] == n - 1  # the last call finished first: order is not by accident
    assert [m.content for m in out] == [str(i) for i in range(n)]
    assert [m.tool_call_id for m in out] == [f"c{i}" for i in range(n)]
    assert all(m.name == "wait" for m in out)


async def test_results_in_call_order_under_ainvoke(make_ai) -> None:
    @tool
    async def wait(i: int, delay: float) -> int:
        """Waits."""
        await asyncio.sleep(delay)
        return i

    ai = make_ai(*[("wait", {"i": i, "delay": 0.02 * (5 - i)}) for i in range(5)])
    out = await ToolNode([wait]).ainvoke([ai])
    assert [m.tool_call_id for m in out] == [f"c{i}" for i in range(5)]
    assert [m.content for m in out] == [str(i) for i in range(5)]


# -------------------------------------------------------------------- strategies


def _gauged_tools(gauge):
    @tool
    def work(i: int) -> int:
        """Works."""
        with gauge:
            time.sleep(0.06)
        return i

    @tool
    async def awork(i: int) -> int:
        """Works asynchronously."""
        with gauge:
            await asyncio.sleep(0.06)
        return i

    return [work, awork]


STRATEGY_CASES = [
    ({"strategy": "sequential"}, 1),
    ({"strategy": ("batched", 2)}, 2),
    ({"max_concurrency": 3}, 3),
    ({"strategy": "parallel", "max_concurrency": 3}, 3),
    ({"strategy": "parallel"}, 8),
    ({}, 8),
]


@pytest.mark.parametrize(("kwargs", "peak"), STRATEGY_CASES, ids=repr)
@pytest.mark.parametrize("name", ["work", "awork"], ids=["sync", "async"])
def test_strategy_bounds_peak_concurrency(kwargs, peak, name, gauge, make_ai) -> None:
    node = ToolNode(_gauged_tools(gauge), **kwargs)
    out = node.invoke([make_ai(*[(name, {"i": i}) for i in range(8)])])
    assert [m.content for m in out] == [str(i) for i in range(8)]
    assert gauge.total == 8
    assert gauge.peak == peak


@pytest.mark.parametrize(("kwargs", "peak"), STRATEGY_CASES, ids=repr)
async def test_strategy_bounds_peak_concurrency_under_ainvoke(kwargs, peak, gauge, make_ai):
    node = ToolNode(_gauged_tools(gauge), **kwargs)
    calls = [("work" if i % 2 else "awork", {"i": i}) for i in range(8)]
    out = await node.ainvoke([make_ai(*calls)])
    assert [m.content for m in out] == [str(i) for i in range(8)]
    assert gauge.peak == peak


def test_sequential_runs_in_call_order(make_ai) -> None:
    started: list[int] = []

    @tool
    def step(i: int) -> int:
        """Steps."""
        started.append(i)
        time.sleep(0.01 * (4 - i))
        return i

    ToolNode([step], strategy="sequential").invoke(
        [make_ai(*[("step", {"i": i}) for i in range(4)])]
    )
    assert started == [0, 1, 2, 3]


def test_batched_starts_a_group_after_the_previous_one(make_ai) -> None:
    events: list[tuple[str, int]] = []

    @tool
    def job(i: int) -> int:
        """Jobs."""
        events.append(("start", i))
        time.sleep(0.03)
        events.append(("end", i))
        return i

    ToolNode([job], strategy=("batched", 2)).invoke(
        [make_ai(*[("job", {"i": i}) for i in range(6)])]
    )
    for group in range(1, 3):
        first_start = min(k for k, e in enumerate(events) if e[0] == "start" and e[1] // 2 == group)
        prev_ends = [k for k, e in enumerate(events) if e[0] == "end" and e[1] // 2 == group - 1]
        assert max(prev_ends) < first_start, events


@pytest.mark.parametrize(
    "strategy",
    [
        "fast",
        "Parallel",
        ("batched", 0),
        ("batched", -2),
        ("batched",),
        ("batched", "2"),
        ("chunked", 2),
        3,
        None,
    ],
    ids=repr,
)
def test_invalid_strategy_raises(strategy) -> None:
    with pytest.raises(ValueError, match="strategy") as ei:
        ToolNode([add], strategy=strategy)
    assert "parallel" in str(ei.value)


@pytest.mark.parametrize("value", [0, -1, -100])
def test_max_concurrency_below_one_raises_value_error(value) -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        ToolNode([add], max_concurrency=value)


@pytest.mark.parametrize("value", ["3", 1.5, True])
def test_max_concurrency_of_the_wrong_type_raises_type_error(value) -> None:
    with pytest.raises(TypeError, match="max_concurrency"):
        ToolNode([add], max_concurrency=value)


def test_duplicate_tool_names_raise() -> None:
    @tool("add")
    def other(a: int) -> int:
        """Other."""
        return a

    with pytest.raises(ValueError, match="add"):
        ToolNode([add, other])


# ---------------------------------------------------------------- input / output


def test_dict_in_dict_out(make_ai) -> None:
    out = ToolNode([add]).invoke({"messages": [make_ai(("add", {"a": 1, "b": 2}))]})
    assert isinstance(out, dict)
    assert list(out) == ["messages"]
    (msg,) = out["messages"]
    assert isinstance(msg, ToolMessage)
    assert (msg.content, msg.tool_call_id, msg.name, msg.status) == ("3", "c0", "add", "success")


def test_list_in_list_out(make_ai) -> None:
    out = ToolNode([add]).invoke([make_ai(("add", {"a": 1, "b": 2}))])
    assert isinstance(out, list)
    assert [type(m) for m in out] == [ToolMessage]
    assert out[0].content == "3"


def test_mixed_message_forms_as_input() -> None:
    messages = [
        ("system", "You add."),
        ("user", "what is 2+3?"),
        {"role": "user", "content": "and be quick"},
        HumanMessage(content="please"),
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"name": "add", "args": {"a": 2, "b": 3}, "id": "call_a"},
                {"name": "echo", "args": {"text": "done"}, "id": "call_b"},
            ],
        },
    ]
    out = ToolNode([add, echo]).invoke({"messages": messages})
    assert [(m.tool_call_id, m.content) for m in out["messages"]] == [
        ("call_a", "5"),
        ("call_b", "done"),
    ]


def test_ai_tuple_input_without_tool_calls_gives_no_messages() -> None:
    assert ToolNode([add]).invoke([("user", "hi"), ("assistant", "hello")]) == []


def test_the_last_ai_message_is_the_one_run(make_ai) -> None:
    old = make_ai(("echo", {"text": "old"}))
    new = AIMessage(content="", tool_calls=[{"name": "echo", "args": {"text": "new"}, "id": "n1"}])
    out = ToolNode([echo]).invoke([old, ToolMessage(content="old", tool_call_id="c0"), new])
    assert [(m.tool_call_id, m.content) for m in out] == [("n1", "new")]


def test_input_without_an_ai_message_raises_value_error() -> None:
    with pytest.raises(ValueError, match="AIMessage"):
        ToolNode([add]).invoke(
            {"messages": [HumanMessage(content="hi"), SystemMessage(content="s")]}
        )


def test_input_without_messages_key_raises_value_error() -> None:
    with pytest.raises(ValueError, match="messages"):
        ToolNode([add]).invoke({"foo": []})


def test_tool_message_ids_are_left_to_the_graph(make_ai) -> None:
    # As LangGraph's: a standalone node's langchain-core messages have no id; a
    # graph's add_messages gives each its own (test_toolnode_inputs.py).
    out = ToolNode([add]).invoke([make_ai(*[("add", {"a": i, "b": 0}) for i in range(5)])])
    assert [m.id for m in out] == [None] * 5


def test_plain_functions_are_accepted_as_tools(make_ai) -> None:
    def mul(a: int, b: int) -> int:
        """Multiplies."""
        return a * b

    node = ToolNode([mul])
    assert list(node.tools_by_name) == ["mul"]
    (msg,) = node.invoke([make_ai(("mul", {"a": 3, "b": 4}))])
    assert msg.content == "12"


# --------------------------------------------------------------- return values


def test_dict_result_is_json_text_with_the_dict_as_artifact(make_ai) -> None:
    value = {"city": "Zürich", "temps": [1, 2.5], "ok": True, "none": None}

    @tool
    def weather(city: str) -> dict:
        """Weather."""
        return value

    (msg,) = ToolNode([weather]).invoke([make_ai(("weather", {"city": "x"}))])
    assert msg.status == "success"
    assert isinstance(msg.content, str)
    assert json.loads(msg.content) == value
    assert msg.artifact == value


def test_list_result_is_json_text_with_the_list_as_artifact(make_ai) -> None:
    @tool
    def items() -> list:
        """Items."""
        return [1, "two", {"three": 3}]

    (msg,) = ToolNode([items]).invoke([make_ai(("items", {}))])
    assert json.loads(msg.content) == [1, "two", {"three": 3}]
    assert msg.artifact == [1, "two", {"three": 3}]


@pytest.mark.parametrize(
    ("value", "content"),
    [(42, "42"), (2.5, "2.5"), (True, "true"), (None, "null")],
    ids=["int", "float", "bool", "none"],
)
def test_scalar_results_are_json_text(value, content, make_ai) -> None:
    @tool
    def scalar() -> object:
        """Scalar."""
        return value

    (msg,) = ToolNode([scalar]).invoke([make_ai(("scalar", {}))])
    assert msg.content == content
    assert msg.status == "success"


def test_str_result_is_used_as_is(make_ai) -> None:
    @tool
    def raw() -> str:
        """Raw."""
        return '{"looks": "like json"}'

    (msg,) = ToolNode([raw]).invoke([make_ai(("raw", {}))])
    assert msg.content == '{"looks": "like json"}'
    assert msg.artifact is None


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_tool_message_result_is_used(is_async, make_ai) -> None:
    def build(call_id: str) -> ToolMessage:
        return ToolMessage(
            content="custom", tool_call_id=call_id, artifact={"rows": [1, 2]}, status="error"
        )

    if is_async:

        @tool
        async def report(call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
            """Reports."""
            return build(call_id)

    else:

        @tool
        def report(call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
            """Reports."""
            return build(call_id)

    (msg,) = ToolNode([report]).invoke([make_ai(("report", {}))])
    assert isinstance(msg, ToolMessage)
    assert msg.content == "custom"
    assert msg.tool_call_id == "c0"
    assert msg.artifact == {"rows": [1, 2]}
    assert msg.status == "error"
    assert msg.name == "report"  # filled in from the tool


# ------------------------------------------------------------------- bad calls

BAD_CALLS = [
    ("add", "{not json", ["JSON"]),
    ("add", [1, 2], ["object"]),
    ("add", {"a": 1}, ["b", "required"]),
    ("add", {"a": "one", "b": 2}, ["a", "integer"]),
    ("subtract", {"a": 1, "b": 2}, ["subtract", "not a valid tool"]),
]


@pytest.mark.parametrize(
    ("name", "args", "words"),
    BAD_CALLS,
    ids=["not-json", "not-an-object", "missing-field", "wrong-type", "unknown-tool"],
)
def test_bad_call_gives_an_error_message_and_siblings_are_unaffected(
    name, args, words, make_ai
) -> None:
    ran: list[int] = []

    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        ran.append(a)
        return a + b

    ai = make_ai(("echo", {"text": "before"}), (name, args), ("add", {"a": 10, "b": 1}))
    out = ToolNode([add, echo]).invoke({"messages": [ai]})["messages"]
    assert [m.tool_call_id for m in out] == ["c0", "c1", "c2"]
    good_before, bad, good_after = out
    assert (good_before.status, good_before.content) == ("success", "before")
    assert (good_after.status, good_after.content) == ("success", "11")
    assert bad.status == "error"
    assert bad.name == name
    assert name in bad.content
    for word in words:
        assert word.lower() in bad.content.lower(), bad.content
    assert ran == [10]  # the bad call never reached the function


def test_unknown_tool_lists_the_available_tools(make_ai) -> None:
    (msg,) = ToolNode([add, echo]).invoke([make_ai(("nope", {}))])
    assert msg.status == "error"
    assert "add" in msg.content
    assert "echo" in msg.content


# -------------------------------------------------------------- tools_condition


def test_tools_condition_routes_to_tools(make_ai) -> None:
    assert (
        tools_condition({"messages": [HumanMessage(content="q"), make_ai(("add", {}))]}) == "tools"
    )
    assert tools_condition([make_ai(("add", {}))]) == "tools"


def test_tools_condition_routes_to_end() -> None:
    assert END == "__end__"
    assert tools_condition({"messages": [AIMessage(content="done")]}) == "__end__"
    assert tools_condition([HumanMessage(content="q"), AIMessage(content="done")]) == END


def test_tools_condition_with_dict_messages() -> None:
    calls = [{"name": "add", "args": {}, "id": "1"}]
    assert tools_condition({"messages": [{"role": "assistant", "tool_calls": calls}]}) == "tools"
    assert tools_condition({"messages": [{"role": "assistant", "content": "x"}]}) == "__end__"


def test_tools_condition_without_messages_raises() -> None:
    with pytest.raises(ValueError, match="messages"):
        tools_condition({"messages": []})


# ------------------------------------------------------------------- standalone


def test_standalone_invoke_and_ainvoke(make_ai) -> None:
    node = ToolNode([add, echo])
    ai = make_ai(("add", {"a": 2, "b": 2}), ("echo", {"text": "hi"}))
    sync_out = node.invoke({"messages": [HumanMessage(content="q"), ai]})
    async_out = asyncio.run(node.ainvoke({"messages": [HumanMessage(content="q"), ai]}))
    for out in (sync_out, async_out):
        assert list(out) == ["messages"]
        assert [(m.content, m.tool_call_id) for m in out["messages"]] == [("4", "c0"), ("hi", "c1")]
    # The node can run again (no state is kept between runs).
    assert node.invoke([ai])[0].content == "4"


def test_invoke_accepts_a_config_argument(make_ai) -> None:
    out = ToolNode([add]).invoke(
        {"messages": [make_ai(("add", {"a": 1, "b": 1}))]}, {"configurable": {"thread_id": "t"}}
    )
    assert out["messages"][0].content == "2"


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_injected_parameter_replaces_an_argument_of_the_same_name(is_async, make_ai) -> None:
    if is_async:

        @tool
        async def echo(n: int, call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Echoes."""
            return f"{n} {call_id}"

    else:

        @tool
        def echo(n: int, call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Echoes."""
            return f"{n} {call_id}"

    node = ToolNode([echo])
    (msg,) = node.invoke([make_ai(("echo", {"n": 3}))])
    assert msg.content == "3 c0"
    (msg,) = node.invoke([make_ai(("echo", {"n": 3, "call_id": "spoof"}))])
    assert msg.content == "3 c0"


# ------------------------------------------------------------------ in a graph


@pytest.mark.parametrize("mode", ["invoke", "updates", "messages"])
def test_in_a_graph_tools_that_ask_for_the_state_see_it(mode, make_ai) -> None:
    """The state is given to a tool that injects it (whole, a field, or through its
    ToolContext), in every run mode; the node's messages are its update."""

    class State(TypedDict):
        messages: Annotated[list, add_messages]
        user: str

    seen: dict[str, Any] = {}

    @tool
    def whole(state: Annotated[dict, InjectedState]) -> str:
        """Reads the whole state."""
        seen["whole"] = (state["user"], len(state["messages"]))
        return "whole"

    @tool
    def field(user: Annotated[str, InjectedState("user")]) -> str:
        """Reads one field."""
        seen["field"] = user
        return "field"

    @tool
    def by_context(ctx: ToolContext) -> str:
        """Reads the state through its context."""
        seen["by_context"] = ctx.state["user"]
        return "by_context"

    calls = [("whole", {}), ("field", {}), ("by_context", {}), ("echo", {"text": "hi"})]
    g = StateGraph(State)
    g.add_node("tools", ToolNode([whole, field, by_context, echo]))
    g.add_edge(START, "tools")
    graph = g.compile()
    inp = {"messages": [make_ai(*calls)], "user": "ann"}
    if mode == "invoke":
        out = graph.invoke(inp)
        contents = [m.content for m in out["messages"][1:]]
    else:
        chunks = list(graph.stream(inp, stream_mode=mode))
        if mode == "updates":
            (chunk,) = chunks
            contents = [m.content for m in chunk["tools"]["messages"]]
        else:
            contents = [m.content for m, _meta in chunks]
    assert contents == ["whole", "field", "by_context", "hi"]
    assert seen == {"whole": ("ann", 1), "field": "ann", "by_context": "ann"}

    # A node whose tools ask for nothing runs the same way.
    plain = StateGraph(State)
    plain.add_node("tools", ToolNode([echo]))
    plain.add_edge(START, "tools")
    out = plain.compile().invoke({"messages": [make_ai(("echo", {"text": "yo"}))], "user": "b"})
    assert [m.content for m in out["messages"][1:]] == ["yo"]
