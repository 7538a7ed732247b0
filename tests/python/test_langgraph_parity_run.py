"""Run semantics as LangGraph 1.2 has them (issue: LangGraph parity, run semantics).

Each expectation is what the same program gives under LangGraph 1.2.
"""

from __future__ import annotations

import asyncio
import operator
import time
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import (
    END,
    START,
    Command,
    InjectedStore,
    InMemoryStore,
    MessagesState,
    Runtime,
    StateGraph,
    ToolNode,
    get_runtime,
    interrupt,
    tool,
)
from ironloop.messages import AIMessage
from ironloop.types import RetryPolicy


class S(TypedDict):
    x: Annotated[list, operator.add]


def test_a_conditional_edge_sees_only_its_own_nodes_writes() -> None:
    seen: list[list[str]] = []

    def route(s: S) -> str:
        seen.append(list(s["x"]))
        return END

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", lambda s: {"x": ["b"]})
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    g.add_conditional_edges("a", route, [END])
    assert g.compile().invoke({"x": []}) == {"x": ["a", "b"]}
    assert seen == [["a"]]


async def test_an_async_failure_cancels_its_siblings() -> None:
    cancelled = asyncio.Event()

    async def fail(s: S) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    async def long(s: S) -> dict[str, Any]:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {"x": ["long"]}

    g = StateGraph(S)
    g.add_node("fail", fail)
    g.add_node("long", long)
    g.add_edge(START, "fail")
    g.add_edge(START, "long")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="boom") as ei:
        await g.compile().ainvoke({"x": []})
    assert time.perf_counter() - t0 < 2, "the run waited for the sibling instead of cancelling it"
    assert any(n.startswith("During task with name 'fail'") for n in ei.value.__notes__)
    await asyncio.wait_for(cancelled.wait(), 2)


@dataclass
class Ctx:
    user: str


def _ctx_graph() -> Any:
    def with_param(s: S, runtime: Runtime[Ctx]) -> dict[str, Any]:
        return {"x": [f"param:{runtime.context.user}"]}

    async def with_call(s: S) -> dict[str, Any]:
        return {"x": [f"call:{get_runtime(Ctx).context.user}"]}

    g = StateGraph(S, context_schema=Ctx)
    g.add_node("p", with_param)
    g.add_node("c", with_call)
    g.add_edge(START, "p")
    g.add_edge("p", "c")
    return g


def test_context_reaches_nodes_through_runtime_and_get_runtime() -> None:
    app = _ctx_graph().compile()
    assert app.invoke({"x": []}, context=Ctx(user="ann")) == {"x": ["param:ann", "call:ann"]}
    assert asyncio.run(app.ainvoke({"x": []}, context=Ctx(user="bo"))) == {
        "x": ["param:bo", "call:bo"]
    }
    chunks = list(app.stream({"x": []}, context=Ctx(user="cy")))
    assert chunks == [{"p": {"x": ["param:cy"]}}, {"c": {"x": ["call:cy"]}}]


def test_a_dict_context_becomes_the_context_schema_as_in_langgraph() -> None:
    app = _ctx_graph().compile()
    assert app.invoke({"x": []}, context={"user": "ann"}) == {"x": ["param:ann", "call:ann"]}
    chunks = list(app.stream({"x": []}, context={"user": "bo"}))
    assert chunks == [{"p": {"x": ["param:bo"]}}, {"c": {"x": ["call:bo"]}}]
    # Without a context_schema a dict stays a dict.
    seen: list[Any] = []
    g = StateGraph(S)
    g.add_node("n", lambda s: seen.append(get_runtime().context) or {})
    g.add_edge(START, "n")
    g.compile().invoke({"x": []}, context={"user": "cy"})
    assert seen == [{"user": "cy"}]


def test_a_dict_context_becomes_a_pydantic_context_schema() -> None:
    from pydantic import BaseModel

    class PCtx(BaseModel):
        user: str
        tier: int = 1

    g = StateGraph(S, context_schema=PCtx)
    g.add_node("n", lambda s: {"x": [repr(get_runtime().context)]})
    g.add_edge(START, "n")
    assert g.compile().invoke({"x": []}, context={"user": "ann"}) == {
        "x": ["PCtx(user='ann', tier=1)"]
    }


def test_a_subgraph_sees_its_parents_context() -> None:
    inner = _ctx_graph().compile()
    outer = StateGraph(S, context_schema=Ctx)
    outer.add_node("inner", inner)
    outer.add_edge(START, "inner")
    out = outer.compile().invoke({"x": []}, context=Ctx(user="dee"))
    assert out == {"x": ["param:dee", "call:dee"]}


def test_runtime_carries_the_store_and_get_runtime_outside_a_run_raises() -> None:
    from ironloop import InMemoryStore

    store = InMemoryStore()

    def node(s: S, runtime: Runtime[None]) -> dict[str, Any]:
        return {"x": [runtime.store is store, runtime.context]}

    g = StateGraph(S)
    g.add_node("n", node)
    g.add_edge(START, "n")
    assert g.compile(store=store).invoke({"x": []}) == {"x": [True, None]}
    with pytest.raises(RuntimeError, match="outside of a graph run"):
        get_runtime()


async def test_sqlite_saver_as_an_async_context_manager(tmp_path: Any) -> None:
    from ironloop import SqliteSaver

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_edge(START, "a")
    path = str(tmp_path / "async.db")
    async with SqliteSaver(path) as saver:
        app = g.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "t"}}
        assert await app.ainvoke({"x": []}, cfg) == {"x": ["a"]}
    with pytest.raises(Exception, match="closed"):
        app.invoke({"x": []}, cfg)
    with SqliteSaver(path) as again:
        assert g.compile(checkpointer=again).get_state(cfg).values == {"x": ["a"]}


def test_durability_and_version_are_taken_or_refused_clearly() -> None:
    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_edge(START, "a")
    app = g.compile()
    for d in ("sync", "async", "exit"):
        assert app.invoke({"x": []}, durability=d) == {"x": ["a"]}
    assert list(app.stream({"x": []}, version="v1")) == [{"a": {"x": ["a"]}}]
    with pytest.raises(ValueError, match="durability must be"):
        app.invoke({"x": []}, durability="later")
    with pytest.raises(ValueError, match="version must be 'v1' or 'v2', got 'v3'"):
        list(app.stream({"x": []}, version="v3"))


def _store_tool_graph(**compile_kw: Any) -> Any:
    @tool
    def recall(key: str, store: Annotated[Any, InjectedStore()]) -> str:
        """Recall a fact."""
        item = store.get(("facts",), key)
        return item.value["text"] if item else "nothing"

    g = StateGraph(MessagesState)
    g.add_node("tools", ToolNode([recall]))
    g.add_edge(START, "tools")
    ai = AIMessage("", tool_calls=[{"name": "recall", "args": {"key": "k"}, "id": "c1"}])
    return g.compile(**compile_kw), {"messages": [ai]}


NO_STORE = (
    "Cannot inject store into tools with InjectedStore annotations - please compile your "
    "graph with a store."
)


def test_a_tool_that_injects_the_store_needs_one() -> None:
    app, inp = _store_tool_graph()
    # LangGraph raises ValueError (not a ToolMessage for the model, not None injected).
    with pytest.raises(ValueError) as e:
        app.invoke(inp)
    assert str(e.value) == NO_STORE
    with pytest.raises(ValueError, match="compile your graph with a store"):
        asyncio.run(app.ainvoke(inp))

    store = InMemoryStore()
    store.put(("facts",), "k", {"text": "remembered"})
    app, inp = _store_tool_graph(store=store)
    assert app.invoke(inp)["messages"][-1].content == "remembered"


# ------------------------------------------------------------------ retry policies

_FAST = RetryPolicy(initial_interval=0.001, jitter=False)


def _flaky(failures: list[Exception], out: str = "ok") -> Any:
    """A node that raises the given exceptions in turn, then writes ``out``."""
    attempts: list[int] = []

    def node(s: S) -> dict[str, Any]:
        attempts.append(1)
        if failures:
            raise failures.pop(0)
        return {"x": [f"{out}@{len(attempts)}"]}

    return node


def _one(node: Any, **kw: Any) -> Any:
    return StateGraph(S).add_node("n", node, **kw).add_edge(START, "n").compile()


class Flaky(Exception):
    """Not a programming error: the default policy retries it."""


def test_a_retry_policy_runs_a_failing_node_again() -> None:
    node = _flaky([ConnectionError("reset"), Flaky("again")])
    assert _one(node, retry_policy=_FAST).invoke({"x": []}) == {"x": ["ok@3"]}


async def test_an_async_node_is_retried() -> None:
    failures = [ConnectionError("reset")]

    async def node(s: S) -> dict[str, Any]:
        if failures:
            raise failures.pop()
        return {"x": ["async ok"]}

    assert await _one(node, retry_policy=_FAST).ainvoke({"x": []}) == {"x": ["async ok"]}


def test_retries_stop_at_max_attempts_and_raise_the_last_error() -> None:
    policy = _FAST._replace(max_attempts=2)
    node = _flaky([ConnectionError("one"), ConnectionError("two"), ConnectionError("three")])
    with pytest.raises(ConnectionError, match="two"):
        _one(node, retry_policy=policy).invoke({"x": []})


def test_retry_on_takes_classes_a_sequence_or_a_predicate_and_the_first_match_wins() -> None:
    only_lookup = _FAST._replace(retry_on=LookupError)
    assert _one(_flaky([KeyError("k")]), retry_policy=only_lookup).invoke({"x": []}) == {
        "x": ["ok@2"]
    }
    with pytest.raises(ConnectionError):
        _one(_flaky([ConnectionError("c")]), retry_policy=only_lookup).invoke({"x": []})
    several = [
        _FAST._replace(retry_on=(KeyError,)),
        _FAST._replace(retry_on=lambda e: "x" in str(e)),
    ]
    node = _flaky([KeyError("k"), ValueError("x marks it")])
    assert _one(node, retry_policy=several).invoke({"x": []}) == {"x": ["ok@3"]}


def test_the_default_policy_leaves_programming_errors_alone() -> None:
    # As LangGraph's default_retry_on: ValueError, KeyError, OSError (TimeoutError)...
    for error in (ValueError("bad"), KeyError("bad"), TimeoutError("bad")):
        with pytest.raises(type(error), match="bad"):
            _one(_flaky([error]), retry_policy=_FAST).invoke({"x": []})


def test_an_interrupt_in_a_retried_node_pauses_the_run_once() -> None:
    from ironloop import Command, MemorySaver, interrupt

    asked: list[str] = []

    def ask(s: S) -> dict[str, Any]:
        asked.append("q")
        return {"x": [interrupt("q?")]}

    g = StateGraph(S).add_node("n", ask, retry_policy=_FAST._replace(retry_on=Exception))
    app = g.add_edge(START, "n").compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "retry"}}
    assert [i.value for i in app.invoke({"x": []}, config)["__interrupt__"]] == ["q?"]
    assert asked == ["q"]
    assert app.invoke(Command(resume="a"), config) == {"x": ["a"]}


def test_add_node_refuses_what_it_does_not_do() -> None:
    from ironloop import ToolNode

    g = StateGraph(S)
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\): \['retries'\]"):
        g.add_node("a", lambda s: {}, retries=_FAST)
    with pytest.raises(TypeError, match="cache_policy takes a CachePolicy"):
        g.add_node("a", lambda s: {}, cache_policy=object())
    with pytest.raises(TypeError, match="RetryPolicy objects"):
        g.add_node("tools", ToolNode([]), retry_policy=[{"max_attempts": 2}])
    with pytest.raises(TypeError, match="RetryPolicy objects"):
        g.add_node("a", lambda s: {}, retry_policy=[{"max_attempts": 2}])
    # Taken and unused, as they only feed LangGraph's tracing and drawing.
    g.add_node("a", lambda s: {"x": ["a"]}, metadata={"team": "x"}, destinations=("b",))
    assert g.add_edge(START, "a").compile().invoke({"x": []}) == {"x": ["a"]}


def test_a_retried_node_reads_its_resume_values_from_the_first_again() -> None:
    from ironloop import Command, MemorySaver, interrupt

    failures = [Flaky("after the answer")]
    answers: list[str] = []

    def ask(s: S) -> dict[str, Any]:
        answer = interrupt("q?")
        answers.append(answer)
        if failures:
            raise failures.pop()
        return {"x": [answer]}

    g = StateGraph(S).add_node("n", ask, retry_policy=_FAST)
    app = g.add_edge(START, "n").compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "retry-resume"}}
    app.invoke({"x": []}, config)
    assert app.invoke(Command(resume="a"), config) == {"x": ["a"]}
    assert answers == ["a", "a"]


# ------------------------------------------------------------------ durability


def _durable_graph(saver: Any, seen: list[Any], fail: list[bool]) -> Any:
    """a -> b -> ask (interrupt) -> c; b records what the saver holds while it runs;
    c fails while ``fail`` holds True."""

    def b(s: S) -> dict[str, Any]:
        seen.append(app.get_state({"configurable": {"thread_id": "d"}}).metadata)
        return {"x": ["b"]}

    def ask(s: S) -> dict[str, Any]:
        return {"x": [interrupt("ok?")]}

    def c(s: S) -> dict[str, Any]:
        if fail and fail[0]:
            raise RuntimeError("c failed")
        return {"x": ["c"]}

    g = StateGraph(S)
    g.add_node("a", lambda s: {"x": ["a"]})
    g.add_node("b", b)
    g.add_node("ask", ask)
    g.add_node("c", c)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "ask")
    g.add_edge("ask", "c")
    app = g.compile(checkpointer=saver)
    return app


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_every_durability_keeps_the_same_history(saver: Any, durability: str) -> None:
    seen: list[Any] = []
    fail = [True]
    app = _durable_graph(saver, seen, fail)
    cfg = {"configurable": {"thread_id": "d"}}
    out = app.invoke({"x": []}, cfg, durability=durability)
    assert out["x"] == ["a", "b"] and [i.value for i in out["__interrupt__"]] == ["ok?"]
    if durability == "exit":
        assert seen == [None]  # nothing saved while the run ran (LangGraph: the same)
    elif durability == "sync":
        assert seen[0]["step"] == 1  # a's step was saved before b ran
    else:
        # The steps' saves are queued, not waited for: any of them may still be on
        # its way (a step's save may share a transaction with the next ones').
        assert seen[0] is None or seen[0]["step"] in (-1, 0, 1)
    with pytest.raises(RuntimeError, match="c failed"):
        app.invoke(Command(resume="yes"), cfg, durability=durability)
    # The steps before the failure were saved, also with "exit" (saved as it ended).
    assert app.get_state(cfg).next == ("c",)
    fail[0] = False
    assert app.invoke(None, cfg, durability=durability) == {"x": ["a", "b", "yes", "c"]}
    steps = [h.metadata["step"] for h in app.get_state_history(cfg)]
    # As LangGraph: "exit" saves one checkpoint per run, where the run ended.
    assert steps == ([4, 3, 2] if durability == "exit" else [4, 3, 2, 1, 0, -1])


def test_checkpoint_during_is_langgraphs_deprecated_durability() -> None:
    from ironloop.warnings import LangGraphDeprecatedSinceV10

    class S(TypedDict, total=False):
        durability: str

    def node(state: S, config: Any) -> S:
        return {"durability": config["configurable"]["__pregel_durability"]}

    graph = StateGraph(S).add_node("node", node).add_edge(START, "node").compile()
    for during, durability in [(True, "async"), (False, "exit")]:
        with pytest.warns(LangGraphDeprecatedSinceV10, match="Please use `durability`"):
            assert graph.invoke({}, checkpoint_during=during) == {"durability": durability}
    with pytest.warns(LangGraphDeprecatedSinceV10):
        chunks = list(graph.stream({}, checkpoint_during=True))
    assert chunks == [{"node": {"durability": "async"}}]


def test_message_graph_and_node_interrupt_are_langgraphs_deprecated_forms() -> None:
    from ironloop import MemorySaver
    from ironloop.errors import NodeInterrupt
    from ironloop.graph import MessageGraph
    from ironloop.messages import HumanMessage
    from ironloop.warnings import LangGraphDeprecatedSinceV10

    def ask(messages: list[Any]) -> list[Any]:
        if len(messages) < 3:
            raise NodeInterrupt("need more")
        return [AIMessage("done", id="ai")]

    with pytest.warns(LangGraphDeprecatedSinceV10, match="MessageGraph is deprecated"):
        graph = MessageGraph()
    app = graph.add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=MemorySaver())
    cfg = {"configurable": {"thread_id": "1"}}
    with pytest.warns(LangGraphDeprecatedSinceV10, match="NodeInterrupt is deprecated"):
        app.invoke([HumanMessage("a", id="1")], cfg)
    snap = app.get_state(cfg)
    assert snap.next == ("ask",)
    assert [i.value for i in snap.interrupts] == ["need more"]
    # As LangGraph's: the whole state is the message list; resuming runs the node again.
    app.update_state(cfg, [HumanMessage("b", id="2"), HumanMessage("c", id="3")])
    assert [m.content for m in app.invoke(None, cfg)] == ["a", "b", "c", "done"]
