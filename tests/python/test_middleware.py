"""The built-in middleware: human in the loop (with a resume in another process), call
limits, retries, fallback, summarization, tool permissions — under invoke, ainvoke and
stream, checkpointed in SQLite."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_support import (
    DECISIONS,
    MODES,
    NOTES,
    add,
    call,
    echo,
    review_agent,
    run,
    turn,
    write_note,
)

from ironloop import Command, SqliteSaver, ToolNode, create_agent, tool
from ironloop.errors import ModelError
from ironloop.messages import AIMessage, HumanMessage
from ironloop.middleware import (
    HumanInTheLoopMiddleware,
    ModelCallLimitExceededError,
    ModelCallLimitMiddleware,
    ModelFallbackMiddleware,
    ModelRetryMiddleware,
    SummarizationMiddleware,
    ToolCallLimitExceededError,
    ToolCallLimitMiddleware,
    ToolPermissions,
    ToolRetryMiddleware,
)
from ironloop.models import ScriptedChatModel

HERE = Path(__file__).parent


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.fixture()
def db(tmp_path: Path) -> str:
    return str(tmp_path / "agent.db")


# --- human in the loop ----------------------------------------------------------------


#: An edited call's result as LangChain 1.5 gives it: the model is told which call ran.
EDITED_RESULT = (
    "Note: a human reviewer replaced this tool call before it ran. The call recorded in "
    "your message is the one you produced, not the one that executed. This was "
    "intentional and authorized. Do not re-issue your original call. Executed instead: "
    'write_note with arguments {"text": "final"}.\n\nTool response:\nwrote final'
)
EXPECTED_AFTER_REVIEW = [
    ["human", "go", None],
    ["ai", "", None],
    ["tool", "User rejected the tool call for `write_note` with reason: not this one", "error"],
    ["tool", "3", "success"],
    ["tool", EDITED_RESULT, "success"],
    [
        "ai",
        "done: c3=User rejected the tool call for `write_note` with reason: not this one; "
        f"c1=3; c2={EDITED_RESULT}",
        None,
    ],
]


def shown(out: Any) -> list[list[Any]]:
    return [[m.type, m.text, getattr(m, "status", None)] for m in out["messages"]]


@pytest.mark.parametrize("mode", MODES)
def test_hitl_one_interrupt_lists_every_pending_call(mode: str, db: str) -> None:
    NOTES.clear()
    agent = review_agent(SqliteSaver(db))
    out = run(agent, {"messages": [("user", "go")]}, cfg(), mode=mode)
    (intr,) = out["__interrupt__"]
    assert intr.value["action_requests"] == [
        {"name": "add", "args": {"a": 1, "b": 2}, "description": "adds numbers"},
        {
            "name": "write_note",
            "args": {"text": "draft"},
            "description": "Tool execution requires approval\n\nTool: write_note\nArgs: {'text': 'draft'}",
        },
        {
            "name": "write_note",
            "args": {"text": "junk"},
            "description": "Tool execution requires approval\n\nTool: write_note\nArgs: {'text': 'junk'}",
        },
    ]
    assert intr.value["review_configs"] == [
        {"action_name": "add", "allowed_decisions": ["approve"]},
        {
            "action_name": "write_note",
            "allowed_decisions": ["approve", "edit", "reject", "respond"],
        },
        {
            "action_name": "write_note",
            "allowed_decisions": ["approve", "edit", "reject", "respond"],
        },
    ]
    assert NOTES == []  # nothing ran before the review
    out = run(agent, Command(resume={"decisions": DECISIONS}), cfg(), mode=mode)
    assert NOTES == ["final"]
    assert shown(out) == EXPECTED_AFTER_REVIEW
    # The checkpointed AI message keeps the model's own call (LangChain 1.5): the
    # edit ran in its place and its result says so.
    ai = out["messages"][1]
    assert [c["args"] for c in ai.tool_calls] == [
        {"a": 1, "b": 2},
        {"text": "draft"},
        {"text": "junk"},
    ]


@pytest.mark.parametrize("mode", MODES)
def test_hitl_per_call_asks_about_one_call_at_a_time(mode: str, db: str) -> None:
    """``interrupt_mode="per_call"``: each gated call is its own interrupt (a
    ``tool_approval`` value answered with one decision, plainly or by interrupt id);
    nothing runs until every call is answered, then the run is the batched one's."""
    NOTES.clear()
    agent = review_agent(SqliteSaver(db), interrupt_mode="per_call")
    out = run(agent, {"messages": [("user", "go")]}, cfg(), mode=mode)
    seen = []
    for i, decision in enumerate(DECISIONS):
        (intr,) = out["__interrupt__"]
        seen.append(intr.value)
        assert NOTES == []
        answer = {intr.id: decision} if i == 1 else decision
        out = run(agent, Command(resume=answer), cfg(), mode=mode)
    assert [(v["type"], v["tool_call_id"], v["name"], v["args"]) for v in seen] == [
        ("tool_approval", "c1", "add", {"a": 1, "b": 2}),
        ("tool_approval", "c2", "write_note", {"text": "draft"}),
        ("tool_approval", "c3", "write_note", {"text": "junk"}),
    ]
    assert seen[0]["description"] == "adds numbers"
    assert "__interrupt__" not in out
    assert NOTES == ["final"]
    assert shown(out) == EXPECTED_AFTER_REVIEW


def test_hitl_per_call_refuses_a_batch_answer_and_a_tool_switch(db: str) -> None:
    """A ``per_call`` answer is checked against the interrupt's ``response_schema``
    (one decision the tool allows; an edit names the same tool): a bad one raises
    pydantic's ``ValidationError`` and is not saved, so the call can be answered again."""
    from pydantic import ValidationError

    agent = review_agent(SqliteSaver(db), interrupt_mode="per_call")
    (intr,) = agent.invoke({"messages": [("user", "go")]}, cfg())["__interrupt__"]
    # `add` allows approve only: its schema is that one decision.
    assert intr.response_schema["properties"]["type"]["const"] == "approve"
    with pytest.raises(ValidationError, match=r"type\n  Field required"):
        agent.invoke(Command(resume={"decisions": DECISIONS}), cfg())
    agent.invoke({"messages": [("user", "go")]}, cfg("b"))
    (intr,) = agent.invoke(Command(resume={"type": "approve"}), cfg("b"))["__interrupt__"]
    # `write_note` allows every decision; an edit's args are shown with its schema.
    schema = intr.response_schema
    assert len(schema["oneOf"]) == 4
    args = schema["$defs"]["EditedAction"]["properties"]["args"]
    assert (args["properties"], args["required"]) == (
        write_note.parameters["properties"],
        ["text"],
    )
    switch = {"type": "edit", "edited_action": {"name": "add", "args": {"a": 1, "b": 1}}}
    with pytest.raises(ValidationError, match=r"edit\.edited_action\.name"):
        agent.invoke(Command(resume=switch), cfg("b"))
    # Nothing was saved: the same interrupt takes a good answer.
    out = agent.invoke(Command(resume={"type": "approve"}), cfg("b"))
    assert out["__interrupt__"][0].value["tool_call_id"] == "c3"
    assert intr.value["tool_call_id"] == "c2"


def test_hitl_resume_in_a_new_process(db: str) -> None:
    NOTES.clear()
    agent = review_agent(SqliteSaver(db))
    out = agent.invoke({"messages": [("user", "go")]}, cfg("child"))
    assert "__interrupt__" in out
    code = f"from agent_support import resume_in_child; resume_in_child({db!r}, 'child')"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["notes"] == ["final"]
    assert result["messages"] == EXPECTED_AFTER_REVIEW
    assert NOTES == []  # the parent never ran the tool
    # The parent sees the child's finished run in the shared checkpoint.
    assert shown(agent.get_state(cfg("child")).values) == EXPECTED_AFTER_REVIEW


def test_hitl_refuses_wrong_decisions(db: str) -> None:
    # (A failed resume keeps its value, as in LangGraph: each case on its own thread.)
    agent = review_agent(SqliteSaver(db))
    cases = [
        ([{"type": "approve"}], r"Number of human decisions \(1\) does not match .* \(3\)"),
        (
            [{"type": "reject"}, {"type": "approve"}, {"type": "approve"}],
            "Decision type 'reject' is not allowed for tool 'add'",
        ),
        ([{"type": "approve"}, {"type": "edit"}, {"type": "approve"}], "edited_action="),
        ("yes", r"Command\(resume=\{'decisions'"),
    ]
    for i, (decisions, error) in enumerate(cases):
        agent.invoke({"messages": [("user", "go")]}, cfg(f"bad{i}"))
        resume = {"decisions": decisions} if isinstance(decisions, list) else decisions
        with pytest.raises(ValueError, match=error):
            agent.invoke(Command(resume=resume), cfg(f"bad{i}"))


def test_hitl_calls_not_listed_run_without_review(db: str) -> None:
    model = ScriptedChatModel([turn(call("add", "c1", a=1, b=1)), "two"])
    agent = create_agent(
        model,
        [add, echo],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"echo": True, "add": False})],
        checkpointer=SqliteSaver(db),
    )
    out = agent.invoke({"messages": [("user", "x")]}, cfg())
    assert "__interrupt__" not in out and out["messages"][-1].text == "two"


@pytest.mark.parametrize("mode", MODES)
def test_hitl_respond_answers_in_the_tools_place(mode: str, db: str) -> None:
    """LangChain 1.4's ``respond``: the tool does not run, the model gets the
    reviewer's message as a successful result."""
    asked: list[str] = []

    @tool
    def ask_user(question: str) -> str:
        """Asks the user."""
        asked.append(question)
        return "never"

    model = ScriptedChatModel(
        lambda ms: (
            turn(call("ask_user", "q1", question="colour?"))
            if ms[-1].type == "human"
            else f"got {ms[-1].text}"
        )
    )
    agent = create_agent(
        model,
        [ask_user],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"ask_user": True})],
        checkpointer=SqliteSaver(db),
    )
    out = run(agent, {"messages": [("user", "go")]}, cfg(), mode=mode)
    assert out["__interrupt__"][0].value["review_configs"][0]["allowed_decisions"] == [
        "approve",
        "edit",
        "reject",
        "respond",
    ]
    resume = Command(resume={"decisions": [{"type": "respond", "message": "blue"}]})
    out = run(agent, resume, cfg(), mode=mode)
    assert asked == []
    assert shown(out)[-2:] == [["tool", "blue", "success"], ["ai", "got blue", None]]


def test_hitl_respond_needs_a_message_and_may_be_disallowed(db: str) -> None:
    agent = review_agent(SqliteSaver(db))
    agent.invoke({"messages": [("user", "go")]}, cfg("a"))
    with pytest.raises(ValueError, match="'respond' decision needs message="):
        agent.invoke(
            Command(
                resume={
                    "decisions": [{"type": "approve"}, {"type": "respond"}, {"type": "approve"}]
                }
            ),
            cfg("a"),
        )
    agent.invoke({"messages": [("user", "go")]}, cfg("b"))
    with pytest.raises(ValueError, match="Decision type 'respond' is not allowed for tool 'add'"):
        agent.invoke(
            Command(resume={"decisions": [{"type": "respond", "message": "x"}] * 3}), cfg("b")
        )


def test_hitl_when_predicate_decides_which_calls_are_reviewed(db: str) -> None:
    seen: list[Any] = []

    def only_etc(request: Any) -> bool:
        # As LangChain's: the request carries the call's ToolRuntime.
        assert type(request.runtime).__name__ == "ToolRuntime"
        seen.append((request.tool_call["id"], request.tool, request.runtime.tool_call_id))
        return str(request.tool_call["args"]["text"]).startswith("/etc")

    model = ScriptedChatModel(
        lambda ms: (
            turn(call("echo", "e1", text="/tmp/a"), call("echo", "e2", text="/etc/b"))
            if ms[-1].type == "human"
            else "done"
        )
    )
    agent = create_agent(
        model,
        [echo],
        middleware=[
            HumanInTheLoopMiddleware(
                interrupt_on={
                    "echo": {"allowed_decisions": ["approve", "reject"], "when": only_etc}
                }
            )
        ],
        checkpointer=SqliteSaver(db),
    )
    out = agent.invoke({"messages": [("user", "go")]}, cfg())
    requests = out["__interrupt__"][0].value["action_requests"]
    assert [r["args"] for r in requests] == [{"text": "/etc/b"}]
    assert seen[:2] == [("e1", None, "e1"), ("e2", None, "e2")]
    out = agent.invoke(Command(resume={"decisions": [{"type": "reject"}]}), cfg())
    assert shown(out)[2:4] == [
        [
            "tool",
            "User rejected the tool call for `echo` with id e2. The tool was not executed. "
            "Do not retry this tool call unless the user explicitly requests it.",
            "error",
        ],
        ["tool", "/tmp/a", "success"],
    ]
    with pytest.raises(TypeError, match=r"'when'\] must be a function"):
        HumanInTheLoopMiddleware(interrupt_on={"echo": {"when": True}})  # type: ignore[typeddict-item]
    # A config that would gate nothing is refused, naming the tool (LangChain 1.5).
    with pytest.raises(
        ValueError, match=r"config for tool 'echo'.*unknown: \['alowed_decisions'\]"
    ):
        HumanInTheLoopMiddleware(interrupt_on={"echo": {"alowed_decisions": ["approve"]}})  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="config for tool 'echo'"):
        HumanInTheLoopMiddleware(interrupt_on={"echo": {"when": only_etc}})  # type: ignore[typeddict-item]


# --- limits ---------------------------------------------------------------------------


def always_add(messages: list[Any]) -> dict[str, Any]:
    n = len(messages)
    return turn(call("add", f"c{n}", a=n, b=1))


@pytest.mark.parametrize("mode", MODES)
def test_model_call_limits_per_run_and_per_thread(mode: str, db: str) -> None:
    model = ScriptedChatModel(always_add)
    agent = create_agent(
        model,
        [add],
        checkpointer=SqliteSaver(db),
        middleware=[ModelCallLimitMiddleware(thread_limit=5, run_limit=3)],
    )
    out = run(agent, {"messages": [("user", "x")]}, cfg(), mode=mode)
    assert len(model.calls) == 3
    assert out["messages"][-1].text == "Model call limits exceeded: run limit (3/3)"
    # The thread count survives the run (checkpointed); the run count starts over.
    out = run(agent, {"messages": [("user", "again")]}, cfg(), mode=mode)
    assert len(model.calls) == 5
    assert out["messages"][-1].text == "Model call limits exceeded: thread limit (5/5)"
    assert agent.get_state(cfg()).values["thread_model_call_count"] == 5


def test_model_call_limit_error(db: str) -> None:
    agent = create_agent(
        ScriptedChatModel(always_add),
        [add],
        middleware=[ModelCallLimitMiddleware(run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(ModelCallLimitExceededError, match=r"run limit \(1/1\)"):
        agent.invoke({"messages": [("user", "x")]})
    with pytest.raises(ValueError, match="At least one limit"):
        ModelCallLimitMiddleware()


@pytest.mark.parametrize("mode", MODES)
def test_tool_call_limit_blocks_the_calls_past_it(mode: str, db: str) -> None:
    ran: list[int] = []

    @tool
    def count(n: int) -> int:
        """Counts."""
        ran.append(n)
        return n

    model = ScriptedChatModel(
        [
            turn(call("count", "a", n=1), call("count", "b", n=2), call("echo", "e", text="hi")),
            turn(call("count", "c", n=3)),
            "done",
        ]
    )
    agent = create_agent(
        model,
        [count, echo],
        checkpointer=SqliteSaver(db),
        middleware=[ToolCallLimitMiddleware(tool_name="count", run_limit=2)],
    )
    out = run(agent, {"messages": [("user", "x")]}, cfg(), mode=mode)
    assert sorted(ran) == [1, 2]  # the two calls of one message run concurrently
    tools = {m.tool_call_id: (m.text, m.status) for m in out["messages"] if m.type == "tool"}
    assert tools == {
        "a": ("1", "success"),
        "b": ("2", "success"),
        "e": ("hi", "success"),
        "c": ("Tool call limit exceeded. Do not call 'count' again.", "error"),
    }
    assert out["messages"][-1].text == "done"


def test_tool_call_limit_end_and_error() -> None:
    model = ScriptedChatModel(always_add)
    agent = create_agent(
        model, [add], middleware=[ToolCallLimitMiddleware(thread_limit=1, exit_behavior="end")]
    )
    out = agent.invoke({"messages": [("user", "x")]})
    assert out["messages"][-1].text == "Tool call limit reached: thread limit exceeded (2/1 calls)."
    assert len(model.calls) == 2
    agent = create_agent(
        ScriptedChatModel(always_add),
        [add],
        middleware=[ToolCallLimitMiddleware(run_limit=1, exit_behavior="error")],
    )
    with pytest.raises(ToolCallLimitExceededError, match=r"run limit exceeded \(2/1 calls\)"):
        agent.invoke({"messages": [("user", "x")]})


# --- retries and fallback -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tool_retry(mode: str) -> None:
    attempts: list[str] = []

    @tool
    def flaky(key: str) -> str:
        """Fails twice for 'x', always for 'never'."""
        attempts.append(key)
        if key == "never" or attempts.count(key) < 3:
            raise TimeoutError(f"slow {key}")
        return f"got {key}"

    model = ScriptedChatModel(
        [turn(call("flaky", "c1", key="x"), call("flaky", "c2", key="never")), "done"]
    )
    agent = create_agent(
        model, [flaky], middleware=[ToolRetryMiddleware(max_retries=2, initial_delay=0.0)]
    )
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    tools = {m.tool_call_id: (m.text, m.status) for m in out["messages"] if m.type == "tool"}
    assert tools["c1"] == ("got x", "success")
    assert tools["c2"] == (
        "Tool 'flaky' failed after 3 attempts with TimeoutError: slow never. Please try again.",
        "error",
    )
    assert attempts.count("x") == 3 and attempts.count("never") == 3


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_tool_retry_reraises_what_retry_on_excludes_and_on_failure_error(mode: str) -> None:
    """As LangChain 1.5: an exception ``retry_on`` excludes is re-raised at once, and
    ``on_failure="error"`` re-raises the last one; either ends the run (not an error
    ToolMessage, which ironloop makes of other tool failures)."""
    attempts: list[int] = []

    @tool
    def strict(n: int) -> int:
        """Fails with a ValueError."""
        attempts.append(n)
        raise ValueError("no")

    model = ScriptedChatModel([turn(call("strict", "c1", n=1)), "done"])
    agent = create_agent(
        model,
        [strict],
        middleware=[
            ToolRetryMiddleware(max_retries=3, retry_on=(TimeoutError,), initial_delay=0.0)
        ],
    )
    with pytest.raises(ValueError, match="no"):
        run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert attempts == [1]
    agent = create_agent(
        ScriptedChatModel([turn(call("strict", "c1", n=1)), "done"]),
        [strict],
        middleware=[ToolRetryMiddleware(max_retries=1, initial_delay=0.0, on_failure="error")],
    )
    with pytest.raises(ValueError, match="no"):
        run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert attempts == [1, 1, 1]
    with pytest.warns(DeprecationWarning, match="on_failure='raise' is deprecated"):
        ToolRetryMiddleware(on_failure="raise")
    with pytest.raises(ValueError, match="initial_delay must be >= 0"):
        ToolRetryMiddleware(initial_delay=-1)


@pytest.mark.parametrize("mode", MODES)
def test_model_retry_and_fallback(mode: str) -> None:
    failures: list[int] = []

    def flaky(messages: list[Any]) -> str:
        failures.append(1)
        if len(failures) < 3:
            raise ConnectionError("try later")
        return "third time"

    agent = create_agent(
        ScriptedChatModel(flaky),
        [],
        middleware=[ModelRetryMiddleware(max_retries=2, initial_delay=0.0)],
    )
    assert run(agent, {"messages": [("user", "x")]}, mode=mode)["messages"][-1].text == "third time"

    def down(messages: list[Any]) -> str:
        raise ConnectionError("down")

    agent = create_agent(
        ScriptedChatModel(down),
        [],
        middleware=[ModelRetryMiddleware(max_retries=1, initial_delay=0.0)],
    )
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert (
        out["messages"][-1].text == "Model call failed after 2 attempts with ConnectionError: down"
    )

    backup = ScriptedChatModel(["from backup"])
    agent = create_agent(
        ScriptedChatModel(down),
        [],
        middleware=[ModelFallbackMiddleware(ScriptedChatModel(down), backup)],
    )
    assert (
        run(agent, {"messages": [("user", "x")]}, mode=mode)["messages"][-1].text == "from backup"
    )
    agent = create_agent(
        ScriptedChatModel(down), [], middleware=[ModelFallbackMiddleware(ScriptedChatModel([]))]
    )
    with pytest.raises(ModelError, match="ran out of responses"):
        run(agent, {"messages": [("user", "x")]}, mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_fallback_raises_the_last_failure_with_the_earlier_ones_chained(mode: str) -> None:
    def failing(kind: type[Exception]) -> ScriptedChatModel:
        def answer(messages: list[Any]) -> str:
            raise kind(kind.__name__)

        return ScriptedChatModel(answer)

    fallbacks = ModelFallbackMiddleware(failing(TimeoutError), failing(LookupError))
    agent = create_agent(failing(ConnectionError), [], middleware=[fallbacks])
    with pytest.raises(LookupError) as raised:
        run(agent, {"messages": [("user", "x")]}, mode=mode)
    second = raised.value.__context__
    assert isinstance(second, TimeoutError)
    assert isinstance(second.__context__, ConnectionError)


# --- summarization --------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_summarization_keeps_the_thread_bounded(mode: str, db: str) -> None:
    def model_fn(messages: list[Any]) -> Any:
        if messages[-1].type == "human":
            return turn(call("echo", f"c{len(messages)}", text=messages[-1].text))
        return f"answered {messages[-1].text}"

    summaries: list[str] = []

    def summarizer(messages: list[Any]) -> str:
        summaries.append(messages[0].text)
        return f"summary #{len(summaries)}"

    summarize = SummarizationMiddleware(
        ScriptedChatModel(summarizer), trigger=("messages", 8), keep=("messages", 3)
    )
    model = ScriptedChatModel(model_fn)
    agent = create_agent(model, [echo], middleware=[summarize], checkpointer=SqliteSaver(db))
    for i in range(6):
        run(agent, {"messages": [HumanMessage(content=f"q{i}")]}, cfg(), mode=mode)
        state = agent.get_state(cfg()).values["messages"]
        assert len(state) <= 8 + 3
        # An AI message's tool calls are never cut from their ToolMessages.
        for j, m in enumerate(state):
            if m.type == "tool":
                assert state[j - 1].type in ("ai", "tool"), [x.type for x in state]
        assert state[0].type == "human"
    assert summaries, "the thread never got long enough to summarize"
    assert state[0].text.startswith("Here is a summary of the conversation to date:\n\nsummary #")
    assert "human: q0" in summaries[0]
    # The model was given the summary in place of the old messages.
    assert any("summary #" in c[0][0].text for c in model.calls)


def test_summarization_cut_moves_before_tool_messages() -> None:
    s = SummarizationMiddleware(
        ScriptedChatModel(["s"]), trigger=("messages", 1), keep=("messages", 2)
    )
    msgs = [
        HumanMessage(content="a"),
        AIMessage(
            content="", tool_calls=[call("echo", "1", text="x"), call("echo", "2", text="y")]
        ),
        *[
            __import__("ironloop").messages.ToolMessage(content=t, tool_call_id=i)
            for i, t in (("1", "x"), ("2", "y"))
        ],
    ]
    assert s._cutoff(msgs) == 1  # keeps the AI message with both of its results
    # No trigger: never summarizes (LangChain 1.5's default).
    assert not SummarizationMiddleware(ScriptedChatModel([]))._triggered(msgs * 100)


def test_summarization_dict_triggers_need_every_threshold_and_lists_any() -> None:
    s = SummarizationMiddleware(ScriptedChatModel([]), trigger={"messages": 3, "tokens": 30})
    short = [HumanMessage(content="x") for _ in range(5)]
    long = [HumanMessage(content="x" * 400) for _ in range(2)]
    assert not s._triggered(short) and not s._triggered(long)
    assert s._triggered([*long, *short])
    either = SummarizationMiddleware(
        ScriptedChatModel([]), trigger=[{"messages": 50}, ("tokens", 30)]
    )
    assert either._triggered(long) and not either._triggered(short)
    with pytest.raises(ValueError, match="Unsupported trigger metric: 'turns'"):
        SummarizationMiddleware(ScriptedChatModel([]), trigger={"turns": 3})
    with pytest.raises(ValueError, match="messages trigger values must be integers"):
        SummarizationMiddleware(ScriptedChatModel([]), trigger={"messages": 2.5})
    with pytest.warns(DeprecationWarning, match="max_tokens_before_summary is deprecated"):
        old = SummarizationMiddleware(ScriptedChatModel([]), max_tokens_before_summary=30)
    assert old._triggered(long)


@pytest.mark.parametrize("mode", MODES)
def test_a_summarizer_function_writes_the_summary_instead_of_the_model(mode: str) -> None:
    given: list[int] = []

    async def summarize(messages: list[Any]) -> str:
        given.append(len(messages))
        return "  short story  "

    s = SummarizationMiddleware(
        ScriptedChatModel([]), trigger=("messages", 4), keep=("messages", 1), summarizer=summarize
    )
    agent = create_agent(ScriptedChatModel(["ok"]), [], middleware=[s])
    history = [("user", f"m{i}") for i in range(4)]
    out = run(agent, {"messages": history}, mode=mode)
    assert given == [3]
    assert out["messages"][0].text.endswith("short story")
    assert out["messages"][0].additional_kwargs == {"lc_source": "summarization"}


def test_summarization_fractions_read_the_models_input_window() -> None:
    """LangChain's ("fraction", f): a share of profile["max_input_tokens"]."""
    model = ScriptedChatModel(["s"])
    model.profile = {"max_input_tokens": 400}  # type: ignore[attr-defined]
    s = SummarizationMiddleware(model, trigger=("fraction", 0.5), keep=("fraction", 0.1))
    words = [HumanMessage(content="x" * 36) for _ in range(30)]  # 12 tokens each
    assert not s._triggered(words[:16])  # 192 tokens < 200
    assert s._triggered(words[:17])  # 204 tokens
    assert s._cutoff(words) == 27  # the last 3 (36 tokens) fit in 40
    with pytest.raises(ValueError, match="Model profile information is required"):
        SummarizationMiddleware(ScriptedChatModel([]), trigger=("fraction", 0.5))
    with pytest.raises(ValueError, match="Fractional trigger values must be between 0 and 1"):
        SummarizationMiddleware(model, trigger=("fraction", 1.5))


# --- tool permissions -----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_tool_permissions(mode: str) -> None:
    ran: list[str] = []

    @tool
    def bash(cmd: str) -> str:
        """Runs a command."""
        ran.append(cmd)
        return "ran"

    model = ScriptedChatModel(
        [turn(call("bash", "c1", cmd="rm -rf /"), call("echo", "c2", text="hi")), "ok"]
    )
    agent = create_agent(
        model,
        [bash, echo, add],
        middleware=[ToolPermissions(deny=["bash"]), ToolPermissions(allow_only=["bash", "echo"])],
    )
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert [t["function"]["name"] for t in model.calls[0][1]] == ["echo"]
    assert ran == []
    tools = {m.tool_call_id: m for m in out["messages"] if m.type == "tool"}
    assert tools["c1"].status == "error"
    assert "not allowed" in tools["c1"].text and "deny list" in tools["c1"].text
    assert tools["c2"].text == "hi"
    with pytest.raises(ValueError, match=r"tools the agent does not have: \['sh'\]"):
        create_agent(model, [bash], middleware=[ToolPermissions(deny=["sh"])])


def test_tool_node_permissions_change_at_the_next_step() -> None:
    ran: list[str] = []

    @tool
    def bash(cmd: str) -> str:
        """Runs a command."""
        ran.append(cmd)
        return f"ran {cmd}"

    node = ToolNode([bash, echo], allow_only=["echo"])
    assert node.allow_only == ["echo"] and node.deny == []

    def script(messages: list[Any]) -> Any:
        n = len(messages)
        if n == 1:
            return turn(call("bash", "c1", cmd="ls"))
        if n == 3:
            node.allow_only = None  # a person widens the permissions mid-run
            node.deny = ["echo"]
            return turn(call("bash", "c2", cmd="pwd"), call("echo", "c3", text="x"))
        return "done"

    model = ScriptedChatModel(script)
    out = create_agent(model, node).invoke({"messages": [("user", "x")]})
    assert ran == ["pwd"]
    assert [t["function"]["name"] for t in model.calls[0][1]] == ["echo"]
    assert [t["function"]["name"] for t in model.calls[2][1]] == ["bash"]
    tools = {m.tool_call_id: m for m in out["messages"] if m.type == "tool"}
    assert tools["c1"].status == "error" and "allow list" in tools["c1"].text
    assert tools["c2"].text == "ran pwd"
    assert tools["c3"].status == "error" and "deny list" in tools["c3"].text
    # The same lists hold for the node on its own (Rust checks each call).
    node.deny = ["bash"]
    res = node.invoke(
        {"messages": [AIMessage(content="", tool_calls=[call("bash", "z", cmd="rm")])]}
    )
    assert res["messages"][0].status == "error" and ran == ["pwd"]
    with pytest.raises(TypeError, match="list of tool names"):
        ToolNode([bash], deny="bash")  # type: ignore[arg-type]


def test_async_tools_node_with_permissions() -> None:
    @tool
    async def slow(n: int) -> int:
        """Sleeps a little."""
        await asyncio.sleep(0.01)
        return n

    node = ToolNode([slow, echo], deny=["echo"])
    msg = AIMessage(content="", tool_calls=[call("slow", "a", n=1), call("echo", "b", text="t")])
    out = asyncio.run(node.ainvoke({"messages": [msg]}))
    assert (out["messages"][0].text, out["messages"][0].status) == ("1", "success")
    assert out["messages"][1].status == "error"


def test_approval_example_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(HERE.parent.parent / "examples" / "approval_agent.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "paused for review of 3 call(s):" in out
    assert "decisions: approve, edit, reject" in out
    assert (
        "[error] write_file: User rejected the tool call for `write_file` with reason: never write"
        in out
    )
    assert "LICENSE: 'MIT License'" in out  # the reviewer's edit is what was written
    assert "CHANGELOG.md: '# Changelog" in out
    assert "secrets.env" not in out.split("files:")[1]  # the rejected write never ran
    assert "Wrote 2 of 3 files" in out
    offered = out.split("tools offered to the model: ")[1].splitlines()[0].split(", ")
    assert "bash" not in offered and "write_file" in offered
