"""LangGraph docs, "Use the graph API" -> "Add retry policies": a database node
retried on ``sqlite3.OperationalError`` and a model node with ``max_attempts=5``,
imports changed only. The docs' ``SQLDatabase`` and chat model are stand-ins that fail
at first (a missing table; a dropped connection); ``time.sleep`` is recorded instead of
slept. Expected values: the output of the same program under LangGraph 1.2 (whose
jitter is random: the waits are compared by their base, ``0.5 * 2 ** (n - 1)``)."""

import contextlib
import sqlite3
import time

from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda

from ironloop.graph import END, START, MessagesState, StateGraph
from ironloop.types import RetryPolicy


class SQLDatabase:
    """Stands in for ``langchain_community.utilities.SQLDatabase``: the first query
    finds no table, as a database still being set up."""

    def __init__(self) -> None:
        self.queries = 0

    def run(self, query: str) -> str:
        self.queries += 1
        if self.queries == 1:
            raise sqlite3.OperationalError("no such table: Artist")
        return "[(1, 'AC/DC'), (2, 'Accept')]"


db = SQLDatabase()
calls = []


def _answer(messages):
    calls.append(len(messages))
    if len(calls) < 3:
        raise ConnectionError("connection reset by peer")
    return AIMessage("Let me look that up.")


model = RunnableLambda(_answer)


def query_database(state: MessagesState):
    query_result = db.run("SELECT * FROM Artist LIMIT 10;")
    return {"messages": [AIMessage(content=query_result)]}


def call_model(state: MessagesState):
    response = model.invoke(state["messages"])
    return {"messages": [response]}


# Define a new graph
builder = StateGraph(MessagesState)
builder.add_node(
    "query_database",
    query_database,
    retry_policy=RetryPolicy(retry_on=sqlite3.OperationalError),
)
builder.add_node("model", call_model, retry_policy=RetryPolicy(max_attempts=5))
builder.add_edge(START, "model")
builder.add_edge("model", "query_database")
builder.add_edge("query_database", END)
graph = builder.compile()


@contextlib.contextmanager
def recorded_sleeps():
    real, waits = time.sleep, []
    time.sleep = waits.append
    try:
        yield waits
    finally:
        time.sleep = real


def test_failing_nodes_are_retried() -> None:
    with recorded_sleeps() as waits:
        result = graph.invoke({"messages": [{"role": "user", "content": "List artists"}]})
    assert [(m.type, m.content) for m in result["messages"]] == [
        ("human", "List artists"),
        ("ai", "Let me look that up."),
        ("ai", "[(1, 'AC/DC'), (2, 'Accept')]"),
    ]
    assert calls == [1, 1, 1] and db.queries == 2
    # model: two failures (0.5 s, 1 s); database: one (0.5 s); each plus jitter < 1 s.
    assert len(waits) == 3
    assert 0.5 <= waits[0] < 1.5 and 1 <= waits[1] < 2 and 0.5 <= waits[2] < 1.5


def test_an_error_no_policy_retries_is_raised_at_once() -> None:
    def broken(state: MessagesState):
        raise KeyError("missing")

    graph = (
        StateGraph(MessagesState)
        .add_node("broken", broken, retry_policy=RetryPolicy())
        .add_edge(START, "broken")
        .compile()
    )
    with recorded_sleeps() as waits:
        try:
            graph.invoke({"messages": []})
        except KeyError as e:
            assert e.args == ("missing",)
        else:
            raise AssertionError("KeyError not raised")
    assert waits == []
