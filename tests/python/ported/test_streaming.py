"""LangGraph docs, "Stream outputs": the ``updates``, ``values``, ``custom``,
``debug``, ``tasks`` and ``checkpoints`` modes, several modes at once, and subgraph
outputs (``subgraphs=True``), imports changed only. Expected values: the output of the
same programs under LangGraph 1.2 (timestamps and task ids are not compared; a
namespace is compared by its node name, the part before ``:``)."""

from typing import TypedDict

from ironloop import MemorySaver as InMemorySaver
from ironloop.graph import END, START, StateGraph, get_stream_writer


class State(TypedDict):
    topic: str
    joke: str


def refine_topic(state: State):
    return {"topic": state["topic"] + " and cats"}


def generate_joke(state: State):
    return {"joke": f"This is a joke about {state['topic']}"}


graph = (
    StateGraph(State)
    .add_node(refine_topic)
    .add_node(generate_joke)
    .add_edge(START, "refine_topic")
    .add_edge("refine_topic", "generate_joke")
    .add_edge("generate_joke", END)
    .compile()
)

UPDATES = [
    {"refine_topic": {"topic": "ice cream and cats"}},
    {"generate_joke": {"joke": "This is a joke about ice cream and cats"}},
]
VALUES = [
    {"topic": "ice cream"},
    {"topic": "ice cream and cats"},
    {"topic": "ice cream and cats", "joke": "This is a joke about ice cream and cats"},
]


def test_updates_values_and_the_default_mode() -> None:
    assert list(graph.stream({"topic": "ice cream"}, stream_mode="updates")) == UPDATES
    assert list(graph.stream({"topic": "ice cream"}, stream_mode="values")) == VALUES
    assert list(graph.stream({"topic": "ice cream"})) == UPDATES


def test_several_modes_at_once() -> None:
    chunks = list(graph.stream({"topic": "ice cream"}, stream_mode=["updates", "values"]))
    assert chunks == [
        ("values", VALUES[0]),
        ("updates", UPDATES[0]),
        ("values", VALUES[1]),
        ("updates", UPDATES[1]),
        ("values", VALUES[2]),
    ]


class QueryState(TypedDict):
    query: str
    answer: str


def node(state: QueryState):
    writer = get_stream_writer()
    writer({"custom_key": "Generating custom data inside node"})
    return {"answer": "some data"}


custom = StateGraph(QueryState).add_node(node).add_edge(START, "node").compile()
inputs = {"query": "example"}


def test_custom_data() -> None:
    assert list(custom.stream(inputs, stream_mode="custom")) == [
        {"custom_key": "Generating custom data inside node"}
    ]
    assert list(custom.stream(inputs, stream_mode=["updates", "custom"])) == [
        ("custom", {"custom_key": "Generating custom data inside node"}),
        ("updates", {"node": {"answer": "some data"}}),
    ]


TASK = {"id", "input", "name", "triggers"}
TASK_RESULT = {"error", "id", "interrupts", "name", "result"}
CHECKPOINT = {"config", "metadata", "next", "parent_config", "tasks", "values"}


def test_debug_tasks_and_checkpoints_without_a_checkpointer() -> None:
    debug = list(custom.stream(inputs, stream_mode="debug"))
    assert [(e["type"], e["step"], set(e["payload"])) for e in debug] == [
        ("task", 1, TASK),
        ("task_result", 1, TASK_RESULT),
    ]
    tasks = list(custom.stream(inputs, stream_mode="tasks"))
    assert [set(t) for t in tasks] == [TASK, TASK_RESULT]
    assert tasks[0]["name"] == "node" and tasks[0]["input"] == {"query": "example"}
    assert tasks[1]["result"] == {"answer": "some data"} and tasks[1]["error"] is None
    assert list(custom.stream(inputs, stream_mode="checkpoints")) == []


def test_debug_tasks_and_checkpoints_with_a_checkpointer() -> None:
    saved = StateGraph(QueryState).add_node(node).add_edge(START, "node")
    app = saved.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "1"}}
    debug = list(app.stream(inputs, config, stream_mode="debug"))
    assert [(e["type"], e["step"]) for e in debug] == [
        ("checkpoint", -1),
        ("checkpoint", 0),
        ("task", 1),
        ("task_result", 1),
        ("checkpoint", 1),
    ]
    checkpoints = [e["payload"] for e in debug if e["type"] == "checkpoint"]
    assert [c["metadata"]["source"] for c in checkpoints] == ["input", "loop", "loop"]
    assert [c["values"] for c in checkpoints] == [
        {},
        {"query": "example"},
        {"query": "example", "answer": "some data"},
    ]
    config = {"configurable": {"thread_id": "2"}}
    pairs = list(app.stream(inputs, config, stream_mode=["tasks", "checkpoints"]))
    assert [(mode, set(chunk)) for mode, chunk in pairs] == [
        ("checkpoints", CHECKPOINT),
        ("checkpoints", CHECKPOINT),
        ("tasks", TASK),
        ("tasks", TASK_RESULT),
        ("checkpoints", CHECKPOINT),
    ]
    assert [tuple(c["next"]) for m, c in pairs if m == "checkpoints"] == [
        ("__start__",),
        ("node",),
        (),
    ]


# Stream subgraph outputs
class SubgraphState(TypedDict):
    foo: str  # note that this key is shared with the parent graph state
    bar: str


def subgraph_node_1(state: SubgraphState):
    return {"bar": "bar"}


def subgraph_node_2(state: SubgraphState):
    return {"foo": state["foo"] + state["bar"]}


subgraph_builder = StateGraph(SubgraphState)
subgraph_builder.add_node(subgraph_node_1)
subgraph_builder.add_node(subgraph_node_2)
subgraph_builder.add_edge(START, "subgraph_node_1")
subgraph_builder.add_edge("subgraph_node_1", "subgraph_node_2")
subgraph = subgraph_builder.compile()


class ParentState(TypedDict):
    foo: str


def node_1(state: ParentState):
    return {"foo": "hi! " + state["foo"]}


builder = StateGraph(ParentState)
builder.add_node("node_1", node_1)
builder.add_node("node_2", subgraph)
builder.add_edge(START, "node_1")
builder.add_edge("node_1", "node_2")
parent = builder.compile()


def _names(ns: tuple) -> tuple:
    return tuple(n.split(":")[0] for n in ns)


def test_subgraph_outputs() -> None:
    chunks = list(parent.stream({"foo": "foo"}, subgraphs=True, stream_mode="updates"))
    assert [(_names(ns), data) for ns, data in chunks] == [
        ((), {"node_1": {"foo": "hi! foo"}}),
        (("node_2",), {"subgraph_node_1": {"bar": "bar"}}),
        (("node_2",), {"subgraph_node_2": {"foo": "hi! foobar"}}),
        ((), {"node_2": {"foo": "hi! foobar"}}),
    ]
    chunks = list(parent.stream({"foo": "foo"}, subgraphs=True, stream_mode=["values", "updates"]))
    assert [(_names(ns), mode, data) for ns, mode, data in chunks] == [
        ((), "values", {"foo": "foo"}),
        ((), "updates", {"node_1": {"foo": "hi! foo"}}),
        ((), "values", {"foo": "hi! foo"}),
        (("node_2",), "values", {"foo": "hi! foo"}),
        (("node_2",), "updates", {"subgraph_node_1": {"bar": "bar"}}),
        (("node_2",), "values", {"foo": "hi! foo", "bar": "bar"}),
        (("node_2",), "updates", {"subgraph_node_2": {"foo": "hi! foobar"}}),
        (("node_2",), "values", {"foo": "hi! foobar", "bar": "bar"}),
        ((), "updates", {"node_2": {"foo": "hi! foobar"}}),
        ((), "values", {"foo": "hi! foobar"}),
    ]
