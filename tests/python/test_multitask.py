"""A second run on a thread that is running in this process follows
``config["multitask_strategy"]`` (LangGraph's): ``reject`` (the default) fails at once
with ``ThreadBusyError``; ``enqueue`` runs after the current run; ``interrupt`` stops
the current run at its next safe point (calls it did not start are answered as
skipped) and then runs; ``rollback`` stops it, discards its progress and runs.

The tools sleep on events the tests hold, so each test knows where the first run is
when the second arrives; runs come from threads and from asyncio tasks."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agent_support import call, turn

from ironloop import MemorySaver, SqliteSaver, ToolNode, create_agent, create_react_agent, tool
from ironloop.errors import CheckpointConflictError, RunRolledBackError, ThreadBusyError
from ironloop.models import ScriptedChatModel

WAIT = 10


def cfg(thread: str, strategy: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"configurable": {"thread_id": thread}}
    if strategy is not None:
        c["multitask_strategy"] = strategy
    return c


def user(text: str) -> dict[str, Any]:
    return {"messages": [("user", text)]}


class Gate:
    """A tool that records its calls and, for the first ``hold`` calls, says it has
    started and waits until the test opens the gate."""

    def __init__(self, hold: int = 1) -> None:
        self.started = threading.Event()
        self.open = threading.Event()
        self.ran: list[str] = []
        self.hold = hold

        @tool
        def slow(label: str) -> str:
            """Works slowly on a label."""
            self.ran.append(label)
            if len(self.ran) <= self.hold:
                self.started.set()
                assert self.open.wait(WAIT), "the test never opened the gate"
            return f"did {label}"

        self.tool = slow


def answer(messages: list[Any]) -> str:
    """The final answer: the last user message and how many tool results followed it."""
    last = max(i for i, m in enumerate(messages) if m.type == "human")
    n = sum(1 for m in messages[last:] if m.type == "tool")
    return f"answer to {messages[last].text} after {n} tool results"


def chat_model(calls: int = 3, tool_name: str = "slow") -> ScriptedChatModel:
    """A user message starting with "work" gets ``calls`` calls of the tool, then
    the answer; any other gets the answer at once."""

    def respond(messages: list[Any]) -> Any:
        if messages[-1].type == "human" and messages[-1].text.startswith("work"):
            return turn(*(call(tool_name, f"c{i}", label=f"job{i}") for i in range(calls)))
        return answer(messages)

    return ScriptedChatModel(respond)


def in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    """Runs ``fn`` in a thread; its result or exception lands in the list."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(fn())
        except BaseException as e:
            out.append(e)

    t = threading.Thread(target=target)
    t.start()
    return t, out


def joined(t: threading.Thread, out: list[Any]) -> Any:
    t.join(WAIT)
    assert not t.is_alive(), "the run hangs"
    assert len(out) == 1
    return out[0]


def texts(state: Any) -> list[tuple[str, str]]:
    return [(m.type, m.text) for m in state["messages"]]


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: Any, tmp_path: Path) -> Any:
    if request.param == "memory":
        yield MemorySaver()
    else:
        s = SqliteSaver.from_conn_string(str(tmp_path / "multitask.db"))
        yield s
        s.close()


# --- reject ----------------------------------------------------------------------------


def test_reject_is_the_default_and_names_the_thread(saver: Any) -> None:
    gate = Gate()
    agent = create_agent(chat_model(1), [gate.tool], checkpointer=saver)
    first = in_thread(lambda: agent.invoke(user("work first"), cfg("t")))
    assert gate.started.wait(WAIT)
    with pytest.raises(ThreadBusyError, match='thread "t" already has a run in progress') as e:
        agent.invoke(user("second"), cfg("t"))
    assert isinstance(e.value, CheckpointConflictError)
    assert e.value.thread_id == "t"
    assert "enqueue" in str(e.value) and "rollback" in str(e.value)
    # Another thread id is not affected.
    other = create_agent(chat_model(0), [gate.tool], checkpointer=saver)
    assert other.invoke(user("elsewhere"), cfg("u"))["messages"][-1].text.startswith("answer")
    gate.open.set()
    out = joined(*first)
    assert texts(out)[-1] == ("ai", "answer to work first after 1 tool results")
    # The thread is free again.
    again = agent.invoke(user("later"), cfg("t", "reject"))
    assert texts(again)[-1] == ("ai", "answer to later after 0 tool results")


def test_an_unknown_strategy_is_refused() -> None:
    agent = create_agent(chat_model(0), [Gate().tool], checkpointer=MemorySaver())
    with pytest.raises(ValueError, match="multitask_strategy must be 'reject', 'enqueue'"):
        agent.invoke(user("x"), cfg("t", "queue"))


# --- enqueue ---------------------------------------------------------------------------


def test_enqueue_runs_after_the_current_run_on_its_state(saver: Any) -> None:
    gate = Gate()
    agent = create_agent(chat_model(1), [gate.tool], checkpointer=saver)
    first = in_thread(lambda: agent.invoke(user("work first"), cfg("t")))
    assert gate.started.wait(WAIT)
    second = in_thread(lambda: agent.invoke(user("second"), cfg("t", "enqueue")))
    time.sleep(0.3)
    assert second[0].is_alive(), "the follow-up must wait for the current run"
    gate.open.set()
    out1 = joined(*first)
    out2 = joined(*second)
    assert texts(out1)[-1] == ("ai", "answer to work first after 1 tool results")
    # The follow-up saw the whole first turn.
    assert texts(out2) == [
        ("human", "work first"),
        ("ai", ""),
        ("tool", "did job0"),
        ("ai", "answer to work first after 1 tool results"),
        ("human", "second"),
        ("ai", "answer to second after 0 tool results"),
    ]
    assert gate.ran == ["job0"]


def test_enqueued_runs_keep_their_order() -> None:
    gate = Gate()
    agent = create_agent(chat_model(1), [gate.tool], checkpointer=MemorySaver())
    first = in_thread(lambda: agent.invoke(user("work first"), cfg("t")))
    assert gate.started.wait(WAIT)
    followers = []
    for word in ("a", "b", "c"):
        followers.append(in_thread(lambda w=word: agent.invoke(user(w), cfg("t", "enqueue"))))
        time.sleep(0.1)  # arrival order
    gate.open.set()
    joined(*first)
    for f in followers:
        joined(*f)
    humans = [m.text for m in agent.get_state(cfg("t")).values["messages"] if m.type == "human"]
    assert humans == ["work first", "a", "b", "c"]


# --- interrupt -------------------------------------------------------------------------


def sequential_agent(gate: Gate, saver: Any) -> Any:
    """An agent whose tools node runs the calls of a message one after another."""
    return create_react_agent(
        chat_model(3),
        ToolNode([gate.tool], strategy="sequential"),
        checkpointer=saver,
        version="v1",
    )


def test_interrupt_stops_between_sequential_calls_and_answers_the_rest(saver: Any) -> None:
    gate = Gate()
    agent = sequential_agent(gate, saver)
    first = in_thread(lambda: agent.invoke(user("work first"), cfg("t")))
    assert gate.started.wait(WAIT)  # job0 is running
    second = in_thread(lambda: agent.invoke(user("second"), cfg("t", "interrupt")))
    time.sleep(0.3)
    assert second[0].is_alive(), "the new input waits for the safe point"
    gate.open.set()
    out1 = joined(*first)
    out2 = joined(*second)
    # job0 finished; job1 and job2 never started.
    assert gate.ran == ["job0"]
    tool_msgs = [m for m in out1["messages"] if m.type == "tool"]
    assert [m.tool_call_id for m in tool_msgs] == ["c0", "c1", "c2"]
    assert [m.status for m in tool_msgs] == ["success", "error", "error"]
    for m in tool_msgs[1:]:
        assert "was not run: a new user message arrived before this call started" in m.text
    # The interrupted caller gets the state where its run stopped (progress saved).
    assert out1["messages"][-1].type == "tool"
    # The new input ran on that state; the model saw every call answered.
    assert texts(out2)[-2:] == [
        ("human", "second"),
        ("ai", "answer to second after 0 tool results"),
    ]
    assert texts(agent.get_state(cfg("t")).values) == texts(out2)


def test_interrupt_while_the_model_runs_skips_every_call_it_asked_for() -> None:
    model_started = threading.Event()
    release = threading.Event()
    ran: list[str] = []

    @tool
    def work(label: str) -> str:
        """Works."""
        ran.append(label)
        return label

    def respond(messages: list[Any]) -> Any:
        humans = [m for m in messages if m.type == "human"]
        if len(humans) == 1:
            model_started.set()
            assert release.wait(WAIT)
            return turn(call("work", "w1", label="a"), call("work", "w2", label="b"))
        return f"now {humans[-1].text}"

    agent = create_agent(ScriptedChatModel(respond), [work], checkpointer=MemorySaver())
    first = in_thread(lambda: agent.invoke(user("work first"), cfg("t")))
    assert model_started.wait(WAIT)
    second = in_thread(lambda: agent.invoke(user("second"), cfg("t", "interrupt")))
    time.sleep(0.2)
    release.set()
    joined(*first)
    out2 = joined(*second)
    assert ran == []
    kinds = [(m.type, getattr(m, "status", None)) for m in out2["messages"]]
    assert kinds == [
        ("human", None),
        ("ai", None),
        ("tool", "error"),
        ("tool", "error"),
        ("human", None),
        ("ai", None),
    ]
    assert out2["messages"][-1].text == "now second"


def test_interrupt_of_a_streaming_run_ends_its_stream(saver: Any) -> None:
    gate = Gate()
    agent = sequential_agent(gate, saver)
    chunks: list[Any] = []

    def consume() -> str:
        for c in agent.stream(user("work first"), cfg("t"), stream_mode="values"):
            chunks.append(c)
        return "ended"

    first = in_thread(consume)
    assert gate.started.wait(WAIT)
    second = in_thread(lambda: agent.invoke(user("second"), cfg("t", "interrupt")))
    time.sleep(0.2)
    gate.open.set()
    assert joined(*first) == "ended"
    joined(*second)
    last = chunks[-1]["messages"]
    assert [m.status for m in last if m.type == "tool"] == ["success", "error", "error"]


def test_interrupt_with_no_run_in_progress_just_runs() -> None:
    agent = create_agent(chat_model(0), [Gate().tool], checkpointer=MemorySaver())
    out = agent.invoke(user("hi"), cfg("t", "interrupt"))
    assert texts(out)[-1] == ("ai", "answer to hi after 0 tool results")


# --- rollback --------------------------------------------------------------------------


def test_rollback_discards_the_current_run(saver: Any) -> None:
    gate = Gate()
    agent = create_agent(chat_model(1), [gate.tool], checkpointer=saver)
    # A finished turn first: the rolled-back run starts from it.
    gate.hold = 0
    agent.invoke(user("work earlier"), cfg("t"))
    before = agent.get_state(cfg("t")).values["messages"]
    gate.hold = 1
    gate.ran.clear()
    first = in_thread(lambda: agent.invoke(user("work first"), cfg("t")))
    assert gate.started.wait(WAIT)
    out2 = agent.invoke(user("second"), cfg("t", "rollback"))
    err = joined(*first)
    gate.open.set()
    assert isinstance(err, RunRolledBackError), err
    assert err.thread_id == "t"
    assert "rolled back" in str(err)
    # The thread goes on from before the rolled-back run: "first" left no trace.
    assert texts(out2) == [(m.type, m.text) for m in before] + [
        ("human", "second"),
        ("ai", "answer to second after 0 tool results"),
    ]
    assert texts(agent.get_state(cfg("t")).values) == texts(out2)
    # The rolled-back run left the history too (as LangGraph's server deletes it):
    # one linear chain, none of whose states knows "work first".
    history = list(agent.get_state_history(cfg("t")))
    ids = [h.config["configurable"]["checkpoint_id"] for h in history]
    parents = [h.parent_config["configurable"]["checkpoint_id"] for h in history[:-1]]
    assert parents == ids[1:]
    for h in history:
        assert ("human", "work first") not in texts(h.values)


def test_rollback_of_a_thread_the_run_started_leaves_only_the_new_run() -> None:
    gate = Gate()
    agent = create_agent(chat_model(1), [gate.tool], checkpointer=MemorySaver())
    first = in_thread(lambda: agent.invoke(user("work first"), cfg("t")))
    assert gate.started.wait(WAIT)
    out2 = agent.invoke(user("second"), cfg("t", "rollback"))
    gate.open.set()
    assert isinstance(joined(*first), RunRolledBackError)
    assert texts(out2) == [("human", "second"), ("ai", "answer to second after 0 tool results")]


# --- asyncio tasks ---------------------------------------------------------------------


def async_agent(saver: Any, strategy_tools: str = "parallel") -> tuple[Any, dict[str, Any]]:
    box: dict[str, Any] = {"ran": []}

    @tool
    async def aslow(label: str) -> str:
        """Works slowly, async."""
        box["ran"].append(label)
        if len(box["ran"]) == 1:
            box["started"].set()
            await box["open"].wait()
        return f"did {label}"

    agent = create_react_agent(
        chat_model(3, "aslow"),
        ToolNode([aslow], strategy=strategy_tools),
        checkpointer=saver,
        version="v1",
    )
    return agent, box


@pytest.mark.parametrize("strategy", ["enqueue", "interrupt", "rollback", "reject"])
def test_strategies_between_asyncio_tasks(strategy: str) -> None:
    agent, box = async_agent(MemorySaver(), "sequential")

    async def main() -> tuple[Any, Any]:
        box["started"], box["open"] = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(agent.ainvoke(user("work first"), cfg("t")))
        await asyncio.wait_for(box["started"].wait(), WAIT)
        second = asyncio.create_task(agent.ainvoke(user("second"), cfg("t", strategy)))
        await asyncio.sleep(0.2)
        box["open"].set()
        r1, r2 = await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), WAIT)
        return r1, r2

    r1, r2 = asyncio.run(main())
    if strategy == "reject":
        assert isinstance(r2, ThreadBusyError)
        assert texts(r1)[-1] == ("ai", "answer to work first after 3 tool results")
        return
    if strategy == "rollback":
        assert isinstance(r1, RunRolledBackError)
        assert texts(r2) == [("human", "second"), ("ai", "answer to second after 0 tool results")]
        return
    assert not isinstance(r1, BaseException) and not isinstance(r2, BaseException), (r1, r2)
    if strategy == "enqueue":
        assert box["ran"] == ["job0", "job1", "job2"]
        assert texts(r2)[-1] == ("ai", "answer to second after 0 tool results")
    else:
        assert box["ran"] == ["job0"]
        statuses = [m.status for m in r1["messages"] if m.type == "tool"]
        assert statuses == ["success", "error", "error"]
        assert texts(r2)[-1] == ("ai", "answer to second after 0 tool results")
