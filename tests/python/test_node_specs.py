"""``builder.nodes`` and ``compiled.nodes`` in LangGraph's shapes (``StateNodeSpec``,
``PregelNode``), ``CompiledStateGraph.copy``, and the deprecated
``langgraph.pregel.types`` path: code that reads a graph's nodes back ports unchanged."""

from __future__ import annotations

import importlib
import operator
import sys
import warnings
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, MemorySaver, StateGraph, ToolNode, tool
from ironloop.graph import add_messages
from ironloop.types import CachePolicy, RetryPolicy, TimeoutPolicy
from ironloop.warnings import LangGraphDeprecatedSinceV10


class State(TypedDict):
    log: Annotated[list[str], operator.add]


class ToolState(State):
    messages: Annotated[list[Any], add_messages]


class Counting:
    """A callable object node that counts its calls (as LangGraph's tests read them
    back through ``builder.nodes[name].runnable.func``)."""

    def __init__(self, name: str) -> None:
        self.__name__ = name
        self.ticks = 0

    def __call__(self, state: State) -> dict[str, Any]:
        self.ticks += 1
        return {"log": [self.__name__]}


def test_builder_nodes_are_specs_whose_runnable_holds_the_given_object() -> None:
    one = Counting("one")
    retry = RetryPolicy(max_attempts=2)
    cache = CachePolicy()
    builder = StateGraph(State)
    builder.add_node(one, metadata={"k": "v"}, retry_policy=retry, cache_policy=cache)
    builder.add_node("two", Counting("two"), defer=True, destinations=("one",))
    builder.add_edge(START, "one").add_edge("one", "two").add_edge("two", END)
    graph = builder.compile(checkpointer=MemorySaver())

    graph.invoke({"log": []}, {"configurable": {"thread_id": "t"}})
    graph.invoke({"log": []}, {"configurable": {"thread_id": "u"}})

    spec = builder.nodes["one"]
    assert spec.runnable.func is one and spec.runnable.func.ticks == 2
    assert spec.metadata == {"k": "v"}
    assert spec.input_schema is State
    assert spec.retry_policy is retry and spec.cache_policy is cache
    assert (spec.defer, spec.ends, spec.is_error_handler) == (False, (), False)
    two = builder.nodes["two"]
    assert (two.defer, two.ends, two.runnable.func.ticks) == (True, ("one",), 2)


def test_async_node_runnable_has_afunc_and_invoke_calls_it() -> None:
    async def anode(state: State) -> dict[str, Any]:
        return {"log": ["a"]}

    builder = StateGraph(State).add_node(anode).add_edge(START, "anode")
    runnable = builder.nodes["anode"].runnable
    assert (runnable.func, runnable.afunc, runnable.name) == (None, anode, "anode")
    assert runnable.invoke({"log": []}) == {"log": ["a"]}


def test_error_handler_and_timeout_are_on_the_spec() -> None:
    async def slow(state: State) -> dict[str, Any]:
        return {}

    def handle(state: State) -> dict[str, Any]:
        return {}

    builder = StateGraph(State).add_node("slow", slow, error_handler=handle, timeout=2.0)
    spec = builder.nodes["slow"]
    assert spec.timeout == TimeoutPolicy(run_timeout=2.0)
    assert spec.error_handler_node == "__error_handler__slow"
    handler = builder.nodes["__error_handler__slow"]
    assert handler.is_error_handler and handler.runnable.func is handle


def test_compiled_nodes_are_pregel_nodes_bound_to_the_runnable() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    def agent(state: State) -> dict[str, Any]:
        return {"log": ["agent"]}

    sub = StateGraph(State).add_node("inner", agent).add_edge(START, "inner").compile()
    builder = StateGraph(ToolState)
    builder.add_node("agent", agent, metadata={"m": 1}, retry_policy=RetryPolicy())
    builder.add_node("tools", ToolNode([add]))
    builder.add_node("sub", sub)
    builder.add_edge(START, "agent")
    graph = builder.compile()

    node = graph.nodes["agent"]
    assert node.bound is builder.nodes["agent"].runnable and node.bound.func is agent
    assert node.metadata == {"m": 1} and node.retry_policy == (RetryPolicy(),)
    assert node.invoke({"log": []}) == {"log": ["agent"]}
    assert node.subgraphs == [] and graph.nodes["sub"].subgraphs == [sub]
    assert list(graph.nodes["tools"].bound.tools_by_name) == ["add"]
    copied = node.copy({"metadata": {"m": 2}})
    assert (copied.metadata, node.metadata, copied.bound) == ({"m": 2}, {"m": 1}, node.bound)


def test_compiled_graph_copy_replaces_attributes_and_runs() -> None:
    builder = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    graph = builder.compile(name="first")
    other = graph.copy({"name": "second"})
    assert (graph.name, other.name) == ("first", "second")
    assert other.invoke({"log": []}) == {"log": ["a"]}
    assert graph.copy().name == "first"
    with pytest.raises(ValueError, match=r"cannot replace \['checkpointer'\].*compile"):
        graph.copy({"checkpointer": MemorySaver()})


def test_pregel_types_path_warns_as_langgraph() -> None:
    sys.modules.pop("ironloop._pregel_types", None)
    with pytest.warns(LangGraphDeprecatedSinceV10, match="langgraph.pregel.types is deprecated"):
        module = importlib.import_module("ironloop._pregel_types")
    from ironloop.types import StateSnapshot

    assert module.StateSnapshot is StateSnapshot


def test_config_schema_keyword_and_methods_warn() -> None:
    with pytest.warns(LangGraphDeprecatedSinceV10, match="`config_schema` is deprecated"):
        builder = StateGraph(State, config_schema=State)
    assert builder.context_schema is State
    graph = builder.add_node("a", lambda s: {}).add_edge(START, "a").compile()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert graph.config_schema() is State
        graph.get_config_jsonschema()
    assert [type(w.message) for w in caught] == [LangGraphDeprecatedSinceV10] * 2


def test_get_graph_json_shows_function_nodes_as_langgraph_runnables() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    async def agent(state: State) -> dict[str, Any]:
        return {}

    builder = StateGraph(ToolState).add_node("agent", agent).add_node("tools", ToolNode([add]))
    builder.add_conditional_edges("agent", lambda s: END, path_map=["tools", END])
    builder.add_edge(START, "agent").add_edge("tools", "agent")
    drawn = builder.compile().get_graph()
    assert drawn.nodes["agent"].data.afunc is agent
    runnable_id = ["langgraph", "_internal", "_runnable", "RunnableCallable"]
    nodes = {n["id"]: n for n in drawn.to_json()["nodes"]}
    for name in ("__start__", "agent"):
        assert nodes[name] == {
            "id": name,
            "type": "runnable",
            "data": {"id": runnable_id, "name": name},
        }
    assert nodes["tools"]["type"] == "unknown"
    assert nodes["__end__"] == {"id": "__end__"}


def test_create_react_agent_config_schema_warns_and_becomes_the_context_schema() -> None:
    from ironloop import create_react_agent
    from ironloop.models import ScriptedChatModel

    class Config(TypedDict):
        model: str

    with pytest.warns(LangGraphDeprecatedSinceV10, match="Please use `context_schema` instead"):
        agent = create_react_agent(ScriptedChatModel(["hi"]), [], config_schema=Config)
    assert agent.context_schema is Config
    with pytest.raises(TypeError, match=r"unexpected keyword arguments: \{'extra': 1\}"):
        create_react_agent(ScriptedChatModel(["hi"]), [], extra=1)
