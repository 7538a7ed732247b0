"""State schemas as LangGraph 1.2 accepts them. Every expected value here is what the
same program printed under LangGraph 1.2 (with its imports): a bare root state, input
and output schemas, nodes' own input schemas and private channels, reducer fields
that start empty, pydantic and dataclass states."""

from __future__ import annotations

import dataclasses
import operator
from typing import Annotated, Any, Optional, TypedDict

import pydantic
import pytest
from graph_support import thread_config

from ironloop import END, START, MemorySaver, MessagesState, StateGraph, add_messages
from ironloop.errors import InvalidUpdateError
from ironloop.graph import interrupt
from ironloop.messages import AIMessage, AnyMessage, HumanMessage
from ironloop.types import Command, Send

Root = Annotated[list, operator.add]


def seen_by(log: list[Any], name: str, out: Any) -> Any:
    """A node that records what it receives and returns ``out``."""

    def node(state: Any) -> Any:
        log.append((name, state))
        return out

    return node


# ------------------------------------------------------------------- root schemas


def test_a_root_schema_state_is_the_bare_value() -> None:
    log: list[Any] = []
    g = StateGraph(Root)
    g.add_node("a", seen_by(log, "a", [2]))
    g.add_node("b", seen_by(log, "b", [3]))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config()
    assert app.invoke([1], cfg) == [1, 2, 3]
    assert log == [("a", [1]), ("b", [1, 2])]
    assert app.get_state(cfg).values == [1, 2, 3]
    app.update_state(cfg, [99])
    assert app.get_state(cfg).values == [1, 2, 3, 99]
    chunks = list(app.stream([10], thread_config("v"), stream_mode="values"))
    assert chunks == [[10], [10, 2], [10, 2, 3]]
    updates = list(app.stream([10], thread_config("u"), stream_mode="updates"))
    assert updates == [{"a": [2]}, {"b": [3]}]


@pytest.mark.parametrize(
    ("schema", "node", "given", "expected"),
    [
        (int, lambda s: s + 1, 1, 2),
        (Annotated[int, operator.add], lambda s: s + 1, 1, 3),
        (list, lambda s: [*s, 5], [1], [1, 5]),
        (str, lambda s: s + "!", "hi", "hi!"),
        (dict, lambda s: {"z": 1}, {"q": 1}, {"z": 1}),  # a dict root is replaced whole
    ],
    ids=["int", "int-add", "list", "str", "dict"],
)
def test_other_root_schemas(schema: Any, node: Any, given: Any, expected: Any) -> None:
    g = StateGraph(schema)
    g.add_node("a", node).add_edge(START, "a")
    assert g.compile().invoke(given) == expected


def test_a_root_node_returning_none_writes_nothing() -> None:
    g = StateGraph(Root)
    g.add_node("a", lambda s: None).add_edge(START, "a")
    assert g.compile().invoke([1]) == [1]


def test_root_states_route_send_and_command() -> None:
    g = StateGraph(Root)
    g.add_node("a", lambda s: [len(s)]).add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: END if len(s) > 3 else "a")
    assert g.compile().invoke([0]) == [0, 1, 2, 3]

    g = StateGraph(Root)
    g.add_node("a", lambda s: [1]).add_node("w", lambda s: [s * 10])
    g.add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: [Send("w", x) for x in s])
    assert g.compile().invoke([2, 3]) == [2, 3, 1, 20, 30, 10]

    g = StateGraph(Root)
    g.add_node("a", lambda s: Command(update=[7], goto="b"))
    g.add_node("b", lambda s: [8])
    g.add_edge(START, "a")
    assert g.compile().invoke([1]) == [1, 7, 8]


def test_root_parallel_writes_need_a_reducer() -> None:
    g = StateGraph(Root)
    g.add_node("a", lambda s: ["a"]).add_node("b", lambda s: ["b"])
    g.add_edge(START, "a").add_edge(START, "b")
    assert g.compile().invoke([]) == ["a", "b"]

    g = StateGraph(list)
    g.add_node("a", lambda s: ["a"]).add_node("b", lambda s: ["b"])
    g.add_edge(START, "a").add_edge(START, "b")
    with pytest.raises(InvalidUpdateError, match="__root__"):
        g.compile().invoke([])


def test_a_root_interrupt_returns_only_the_interrupts() -> None:
    g = StateGraph(Root)
    g.add_node("a", lambda s: [interrupt("q")]).add_edge(START, "a")
    app = g.compile(checkpointer=MemorySaver())
    out = app.invoke([1], thread_config())
    assert list(out) == ["__interrupt__"]
    assert out["__interrupt__"][0].value == "q"
    assert app.invoke(Command(resume=5), thread_config()) == [1, 5]


# ------------------------------------------------------- input and output schemas


class QIn(TypedDict):
    question: str


class QOut(TypedDict):
    answer: str


class QState(TypedDict):
    question: str
    answer: str
    notes: str


def _answer(log: list[Any]) -> Any:
    def a(s: Any) -> dict[str, str]:
        log.append(s)
        return {"answer": "A:" + s["question"], "notes": "n"}

    return a


def test_input_and_output_schemas_filter_what_goes_in_and_what_comes_out() -> None:
    log: list[Any] = []
    g = StateGraph(QState, input_schema=QIn, output_schema=QOut)
    g.add_node("a", _answer(log)).add_edge(START, "a").add_edge("a", END)
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config()
    # Extra keys (and state keys outside the input schema) are dropped, not refused.
    assert app.invoke({"question": "q", "extra": 1, "notes": "in"}, cfg) == {"answer": "A:q"}
    assert log == [{"question": "q"}]
    # The state and the values stream still hold every key.
    assert app.get_state(cfg).values == {"question": "q", "answer": "A:q", "notes": "n"}
    chunks = list(app.stream({"question": "q"}, thread_config("s"), stream_mode="values"))
    assert chunks[-1] == {"question": "q", "answer": "A:q", "notes": "n"}


def test_an_input_schema_alone_still_returns_the_state() -> None:
    log: list[Any] = []
    g = StateGraph(QState, input_schema=QIn)
    g.add_node("a", _answer(log)).add_edge(START, "a")
    out = g.compile().invoke({"question": "q", "notes": "x"})
    assert out == {"question": "q", "answer": "A:q", "notes": "n"}
    assert log == [{"question": "q"}]


def test_an_output_schema_alone_takes_every_state_key_as_input() -> None:
    log: list[Any] = []
    g = StateGraph(QState, output_schema=QOut)
    g.add_node("a", _answer(log)).add_edge(START, "a")
    assert g.compile().invoke({"question": "q", "notes": "x"}) == {"answer": "A:q"}
    assert log == [{"question": "q", "notes": "x"}]


class QInSecret(TypedDict):
    question: str
    secret: str


class QOutOther(TypedDict):
    answer: str
    other: str


def test_schema_keys_outside_the_state_are_channels_of_their_own() -> None:
    log: list[Any] = []
    # `secret` is an input key only: it is stored, but a node reading the state
    # schema does not see it.
    g = StateGraph(QState, input_schema=QInSecret)
    g.add_node("b", seen_by(log, "b", {"answer": "x"})).add_edge(START, "b")
    assert g.compile().invoke({"question": "q", "secret": "s"}) == {
        "question": "q",
        "answer": "x",
    }
    assert log == [("b", {"question": "q"})]
    # `other` is an output key nobody writes: absent.
    g = StateGraph(QState, output_schema=QOutOther)
    g.add_node("b", lambda s: {"answer": "x"}).add_edge(START, "b")
    assert g.compile().invoke({"question": "q"}) == {"answer": "x"}


def test_a_run_that_writes_no_output_key_returns_none() -> None:
    g = StateGraph(QState, output_schema=QOut)
    g.add_node("c", lambda s: {"notes": "z"}).add_edge(START, "c")
    assert g.compile().invoke({"question": "q"}) is None

    g = StateGraph(QState)
    g.add_node("f", lambda s: {}).add_edge(START, "f")
    assert g.compile().invoke({}) is None


def test_an_interrupt_with_no_output_yet_returns_only_the_interrupts() -> None:
    g = StateGraph(QState, input_schema=QIn, output_schema=QOut)
    g.add_node("h", lambda s: {"answer": interrupt("ask")}).add_edge(START, "h")
    app = g.compile(checkpointer=MemorySaver())
    out = app.invoke({"question": "q"}, thread_config())
    assert list(out) == ["__interrupt__"]
    assert app.invoke(Command(resume="yes"), thread_config()) == {"answer": "yes"}


# ------------------------------------------------ node input schemas, private keys


class Private(TypedDict):
    scratch: str


def ask(s: QIn) -> Private:
    return {"scratch": "s:" + s["question"]}


def reply(s: Private) -> QState:
    return {"answer": s["scratch"] + "!"}


def test_a_node_sees_its_own_schema_and_private_keys_pass_between_nodes() -> None:
    log: list[Any] = []

    def a(s: QIn) -> Private:
        log.append(("a", s))
        return ask(s)

    def b(s: Private) -> QState:
        log.append(("b", s))
        return reply(s)

    g = StateGraph(QState)
    g.add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config()
    # The private key is not in the result (the state schema's keys) ...
    assert app.invoke({"question": "q"}, cfg) == {"question": "q", "answer": "s:q!"}
    assert log == [("a", {"question": "q"}), ("b", {"scratch": "s:q"})]
    # ... but it is in the state and the values stream.
    assert app.get_state(cfg).values == {"question": "q", "answer": "s:q!", "scratch": "s:q"}
    chunks = list(app.stream({"question": "q"}, thread_config("v"), stream_mode="values"))
    assert chunks == [
        {"question": "q"},
        {"question": "q", "scratch": "s:q"},
        {"question": "q", "answer": "s:q!", "scratch": "s:q"},
    ]
    updates = list(app.stream({"question": "q"}, thread_config("u"), stream_mode="updates"))
    assert updates == [{"a": {"scratch": "s:q"}}, {"b": {"answer": "s:q!"}}]


def test_add_node_input_schema_picks_the_keys_a_node_sees() -> None:
    log: list[Any] = []
    g = StateGraph(QState)
    g.add_node("c", seen_by(log, "c", {"answer": "c"}), input_schema=QIn)
    g.add_edge(START, "c")
    assert g.compile().invoke({"question": "q", "answer": "old"}) == {
        "question": "q",
        "answer": "c",
    }
    assert log == [("c", {"question": "q"})]


def test_a_private_key_given_as_input_is_dropped() -> None:
    log: list[Any] = []

    def b(s: Private) -> QState:
        log.append(s)
        return {}

    g = StateGraph(QState)
    g.add_node("a", ask).add_node("b", b).add_edge(START, "b")
    g.compile().invoke({"question": "q", "scratch": "given"})
    assert log == [{}]


def test_a_node_without_a_schema_does_not_see_private_keys() -> None:
    log: list[Any] = []
    g = StateGraph(QState)
    g.add_node("a", ask).add_node("r", reply).add_node("f", seen_by(log, "f", {}))
    g.add_edge(START, "a").add_edge("a", "f")
    assert g.compile().invoke({"question": "q"}) == {"question": "q"}
    assert log == [("f", {"question": "q"})]


def test_a_routing_function_sees_its_own_schema_else_its_nodes() -> None:
    log: list[Any] = []

    def plain(s: Any) -> str:
        log.append(("plain", s))
        return END

    def annotated(s: QState) -> str:
        log.append(("annotated", s))
        return END

    for route in (plain, annotated):
        g = StateGraph(QState)
        g.add_node("a", lambda s: {"answer": "x"}, input_schema=QIn)
        g.add_edge(START, "a").add_conditional_edges("a", route)
        g.compile().invoke({"question": "q"})
    assert log[1] == ("annotated", {"question": "q", "answer": "x"})
    assert log[0][1]["question"] == "q"  # and no key outside the node's schema but its own
    assert set(log[0][1]) <= {"question", "answer"}


class PQ(pydantic.BaseModel):
    question: str
    extra: int = 7


def test_a_node_annotated_with_a_pydantic_model_receives_one() -> None:
    log: list[Any] = []

    def pn(s: PQ) -> dict[str, str]:
        log.append(s)
        return {"answer": s.question}

    g = StateGraph(QState)
    g.add_node("pn", pn).add_edge(START, "pn")
    assert g.compile().invoke({"question": "q"}) == {"question": "q", "answer": "q"}
    assert log == [PQ(question="q", extra=7)]


# ------------------------------------------------------- reducer starting values


class Fields(TypedDict):
    x: int
    items: Annotated[list, operator.add]
    total: Annotated[int, operator.add]
    tags: Annotated[set, operator.or_]
    name: str
    s: Annotated[str, operator.add]
    d: Annotated[dict, lambda a, b: {**a, **b}]
    f: Annotated[float, operator.add]
    l2: Annotated[list[int], operator.add]


EMPTY = {"items": [], "total": 0, "tags": set(), "s": "", "d": {}, "f": 0.0, "l2": []}


def test_reducer_fields_start_empty_and_plain_fields_are_absent() -> None:
    log: list[Any] = []
    g = StateGraph(Fields)
    g.add_node("n", seen_by(log, "n", {"x": 1})).add_edge(START, "n")
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config()
    assert app.invoke({"x": 0}, cfg) == {"x": 1, **EMPTY}
    assert log == [("n", {"x": 0, **EMPTY})]
    assert app.get_state(cfg).values == {"x": 1, **EMPTY}
    assert [s.values for s in app.get_state_history(cfg)][:2] == [
        {"x": 1, **EMPTY},
        {"x": 0, **EMPTY},
    ]
    # `name` was never written: absent, even from an empty input.
    assert g.compile().invoke({}) == {"x": 1, **EMPTY}


def _append(a: list[int], b: list[int]) -> list[int]:
    a.extend(b)  # mutates its first argument
    return a


class InPlace(TypedDict):
    xs: Annotated[list[int], _append]


def test_each_run_starts_from_a_fresh_value() -> None:
    g = StateGraph(InPlace)
    g.add_node("n", lambda s: {"xs": [1]}).add_edge(START, "n")
    app = g.compile()
    assert app.invoke({}) == {"xs": [1]}
    assert app.invoke({}) == {"xs": [1]}


class ChatState(MessagesState):
    x: int


def test_a_messages_field_nobody_wrote_is_an_empty_list() -> None:
    g = StateGraph(ChatState)
    g.add_node("n", lambda s: {"x": s["x"] + 1}).add_edge(START, "n")
    assert g.compile().invoke({"x": 1}) == {"messages": [], "x": 2}


class OptionalReducer(TypedDict):
    x: int
    o: Annotated[Optional[list], operator.add]  # noqa: UP045 (what users write)


def test_a_reducer_field_whose_type_cannot_be_made_starts_absent() -> None:
    g = StateGraph(OptionalReducer)
    g.add_node("n", lambda s: {"x": 1}).add_edge(START, "n")
    assert g.compile().invoke({"x": 0}) == {"x": 1}
    g = StateGraph(OptionalReducer)
    g.add_node("n", lambda s: {"o": [1]}).add_edge(START, "n")
    assert g.compile().invoke({"x": 0, "o": [0]}) == {"x": 0, "o": [0, 1]}


class BadReducer(TypedDict):
    x: Annotated[list, lambda a: a]


class TrailingMeta(TypedDict):
    x: Annotated[list, operator.add, "doc"]


def test_the_reducer_is_the_last_metadata_and_takes_two_values() -> None:
    with pytest.raises(ValueError, match=r"Invalid reducer signature\. Expected \(a, b\) -> c"):
        StateGraph(BadReducer)
    # The last item is not callable: the field keeps the last value.
    g = StateGraph(TrailingMeta)
    g.add_node("n", lambda s: {"x": [1]}).add_edge(START, "n")
    assert g.compile().invoke({"x": [0]}) == {"x": [1]}


class AddX(TypedDict):
    x: Annotated[list, operator.add]


class OrX(TypedDict):
    x: Annotated[list, operator.or_]


class PlainX(TypedDict):
    x: list


def test_a_key_declared_twice_must_agree_on_its_reducer() -> None:
    with pytest.raises(ValueError, match="Channel 'x' already exists with a different type"):
        StateGraph(AddX, output_schema=OrX)
    with pytest.raises(ValueError, match="Channel 'x' already exists with a different type"):
        StateGraph(PlainX, output_schema=AddX)
    # A last-value declaration defers to the reducer already there.
    g = StateGraph(AddX, output_schema=PlainX)
    g.add_node("n", lambda s: {"x": [1]}).add_edge(START, "n")
    assert g.compile().invoke({"x": [0]}) == {"x": [0, 1]}


# ------------------------------------------------------------------ pydantic states


class PState(pydantic.BaseModel):
    messages: Annotated[list[AnyMessage], add_messages]
    count: int = 0
    label: str = "none"
    opt: Optional[str] = None  # noqa: UP045
    items: Annotated[list[int], operator.add] = pydantic.Field(default_factory=list)


def _texts(messages: list[Any]) -> list[str]:
    return [m.content for m in messages]


def test_a_pydantic_state_holds_messages_and_partial_updates_keep_other_fields() -> None:
    log: list[Any] = []

    def a(s: PState) -> dict[str, Any]:
        log.append(s)
        return {"messages": [AIMessage("hi", id="m2")], "count": s.count + 1}

    def b(s: PState) -> dict[str, Any]:
        log.append(s)
        return {"label": "b"}

    g = StateGraph(PState)
    g.add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config()
    out = app.invoke({"messages": [HumanMessage("yo", id="m1")], "label": "x"}, cfg)
    # `opt` was never written (no reducer): absent; `items` starts at [].
    assert list(out) == ["messages", "count", "label", "items"]
    assert _texts(out["messages"]) == ["yo", "hi"]
    assert (out["count"], out["label"], out["items"]) == (1, "b", [])
    # Nodes see the model, defaults filled in; b's update did not reset `count`.
    assert isinstance(log[0], PState)
    assert (log[0].count, log[0].label, log[0].opt, log[0].items) == (0, "x", None, [])
    assert (log[1].count, log[1].label) == (1, "x")
    assert _texts(log[1].messages) == ["yo", "hi"]
    values = app.get_state(cfg).values
    assert _texts(values["messages"]) == ["yo", "hi"] and values["count"] == 1
    given = {"messages": [HumanMessage("yo", id="m1")]}
    updates = list(app.stream(given, thread_config("u"), stream_mode="updates"))
    assert updates[1] == {"b": {"label": "b"}}
    assert list(updates[0]["a"]) == ["messages", "count"]


def test_a_node_returning_a_pydantic_model_writes_its_set_and_non_none_fields() -> None:
    log: list[Any] = []

    def c(s: PState) -> PState:
        return PState(messages=[AIMessage("c", id="m3")], count=5)

    g = StateGraph(PState)
    g.add_node("c", c).add_node("d", seen_by(log, "d", {}))
    g.add_edge(START, "c").add_edge("c", "d")
    given = {"messages": [HumanMessage("yo", id="m1")], "label": "keep", "opt": "o", "items": [1]}
    out = g.compile().invoke(given)
    # As LangGraph: `label` goes back to its default, `opt` (None, unset) is kept,
    # `items` gets `[]` added.
    assert {k: v for k, v in out.items() if k != "messages"} == {
        "count": 5,
        "label": "none",
        "opt": "o",
        "items": [1],
    }
    assert _texts(out["messages"]) == ["yo", "c"]
    updates = list(g.compile().stream(given, stream_mode="updates"))
    assert {k: v for k, v in updates[0]["c"].items() if k != "messages"} == {
        "count": 5,
        "label": "none",
        "items": [],
    }


def test_a_pydantic_model_as_input_writes_its_fields() -> None:
    g = StateGraph(PState)
    g.add_node("d", lambda s: {}).add_edge(START, "d")
    out = g.compile().invoke(PState(messages=[HumanMessage("yo", id="m1")], count=3))
    assert {k: v for k, v in out.items() if k != "messages"} == {
        "count": 3,
        "label": "none",
        "items": [],
    }


def test_a_pydantic_state_validates_when_a_node_receives_it() -> None:
    g = StateGraph(PState)
    g.add_node("d", lambda s: {}).add_edge(START, "d")
    with pytest.raises(pydantic.ValidationError, match="count"):
        g.compile().invoke({"messages": [], "count": "notint"})
    # A missing `messages` is the empty list the reducer starts from.
    assert g.compile().invoke({"count": 1}) == {"messages": [], "count": 1, "items": []}


class PChat(pydantic.BaseModel):
    messages: Annotated[list[AnyMessage], add_messages]
    count: int = 0


def test_pydantic_message_fields_take_message_likes_and_survive_checkpoints() -> None:
    def n(s: PChat) -> dict[str, Any]:
        return {"messages": [AIMessage(f"n{s.count}", id=f"a{s.count}")], "count": s.count + 1}

    g = StateGraph(PChat)
    g.add_node("n", n).add_edge(START, "n")
    app = g.compile(checkpointer=MemorySaver())
    cfg = thread_config()
    app.invoke({"messages": [HumanMessage("hi", id="h1")]}, cfg)
    out = app.invoke({"messages": [HumanMessage("again", id="h2")]}, cfg)
    assert (_texts(out["messages"]), out["count"]) == (["hi", "n0", "again", "n1"], 2)
    assert _texts(g.compile().invoke({"messages": [("user", "yo")]})["messages"]) == ["yo", "n0"]


# ------------------------------------------------------------------ dataclass states


@dataclasses.dataclass
class DState:
    messages: Annotated[list[AnyMessage], add_messages]
    count: int = 0
    label: str = "none"
    opt: Optional[str] = None  # noqa: UP045
    items: Annotated[list[int], operator.add] = dataclasses.field(default_factory=list)


def test_a_dataclass_state_with_partial_updates() -> None:
    log: list[Any] = []

    def a(s: DState) -> dict[str, Any]:
        log.append(s)
        return {"messages": [AIMessage("hi", id="m2")], "count": s.count + 1}

    def b(s: DState) -> dict[str, Any]:
        log.append(s)
        return {"label": "b"}

    g = StateGraph(DState)
    g.add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = g.compile().invoke({"messages": [HumanMessage("yo", id="m1")], "label": "x"})
    assert list(out) == ["messages", "count", "label", "items"]
    assert (out["count"], out["label"], out["items"]) == (1, "b", [])
    assert isinstance(log[1], DState) and (log[1].count, log[1].label) == (1, "x")


def test_a_node_returning_a_dataclass_writes_every_field() -> None:
    def c(s: DState) -> DState:
        return DState(messages=[AIMessage("c", id="m3")], count=5)

    g = StateGraph(DState)
    g.add_node("c", c).add_node("d", lambda s: None)
    g.add_edge(START, "c").add_edge("c", "d")
    given = {"messages": [HumanMessage("yo", id="m1")], "label": "keep", "opt": "o", "items": [1]}
    out = g.compile().invoke(given)
    # Unlike a pydantic model, a dataclass writes its None fields too.
    assert {k: v for k, v in out.items() if k != "messages"} == {
        "count": 5,
        "label": "none",
        "opt": None,
        "items": [1],
    }
    updates = list(g.compile().stream(given, stream_mode="updates"))
    assert {k: v for k, v in updates[0]["c"].items() if k != "messages"} == {
        "count": 5,
        "label": "none",
        "opt": None,
        "items": [],
    }
    # A dataclass as input writes its fields likewise.
    g = StateGraph(DState)
    g.add_node("d", lambda s: None).add_edge(START, "d")
    out = g.compile().invoke(DState(messages=[HumanMessage("yo", id="m1")], count=3))
    assert {k: v for k, v in out.items() if k != "messages"} == {
        "count": 3,
        "label": "none",
        "opt": None,
        "items": [],
    }


@dataclasses.dataclass
class Needs:
    need: str
    other: int = 1


def test_a_node_annotated_with_another_schema_reads_that_schema() -> None:
    log: list[Any] = []

    def d(s: DState) -> None:
        log.append(s)

    # `d` reads DState's keys (channels of their own), not Needs' `need`, so the
    # missing `need` does not matter.
    g = StateGraph(Needs)
    g.add_node("d", d).add_edge(START, "d")
    assert g.compile().invoke({"other": 2}) == {"other": 2}
    assert log == [DState(messages=[], count=0, label="none", opt=None, items=[])]
