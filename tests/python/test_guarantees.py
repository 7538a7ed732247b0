"""Every guarantee on every execution path (issue 36).

A fast path (a call or a task run on the caller's thread instead of the pool) may
exist only where it keeps what the slow path guarantees. This module runs each
guarantee on each path that runs tool calls or tasks:

============================  =====================================================
guarantee                      paths
============================  =====================================================
per-tool timeout               ``ToolNode`` invoke / ainvoke with one call and with
                               several (one of them a quick tool that blocks);
                               every agent shape x every entry point
cancellation reaches the tool  the async entry points (``task.cancel()``)
Ctrl-C within 200 ms           the sync entry points (a real SIGINT)
one result per call, in order  every path, with sync tools quick enough to run inline
                               and slow ones, async tools and failing ones; every saver
finished task durable          a child process SIGKILLed 50 ms after a task finished
within 50 ms                   beside a slow sibling: every shape x entry point x
                               SQLite (and PostgreSQL, when
                               IRONLOOP_TEST_POSTGRES_URL is set)
no abort at exit               scripts that end (normally, ``sys.exit``, Ctrl-C,
                               after a failed run) while tools still run
a cancelled run frees its      100 runs in a row, each right after the previous
thread at once                 one's task was cancelled
a cancelled run's caller goes  ``ainvoke`` / ``astream``, 20 runs each cancelled while
on at once                     a sync node (which cannot be stopped) still runs
============================  =====================================================

``ToolNode`` paths run with and without interceptors (``wrap_tool_call=`` /
``awrap_tool_call=``, whose calls go one by one through the Python runner). The agent
shapes are ``create_react_agent`` v1 (one task for all calls), v2 (one task per call)
and with a wrapped ``ToolNode``, ``create_agent`` with and without a ``wrap_tool_call``
hook; the entry
points ``invoke``, ``ainvoke``, ``stream``, ``astream`` (``guarantee_support.py``).
"""

from __future__ import annotations

import asyncio
import operator
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from guarantee_support import (
    AGENTS,
    ASYNC_MODES,
    MODES,
    SYNC_MODES,
    Effects,
    agent,
    arun,
    ask,
    call,
    durable_app,
    finished_key,
    human,
    run,
    tool_messages,
    toolnode,
)

from ironloop import END, START, MemorySaver, SqliteSaver, StateGraph, tool

HERE = Path(__file__).parent
PG = bool(os.environ.get("IRONLOOP_TEST_POSTGRES_URL"))
# (shape, mode) of every path that runs a model's tool calls.
AGENT_PATHS = [(s, m) for s in AGENTS for m in MODES]
TOOLNODE_PATHS = [(s, m) for s in ("toolnode", "toolnode_wrap") for m in ("invoke", "ainvoke")]
PATHS = TOOLNODE_PATHS + AGENT_PATHS


def cfg(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def results(shape: str, mode: str, tools: list[Any], calls: list[dict[str, Any]]) -> list[Any]:
    """The tool messages of running ``calls`` on path ``(shape, mode)``."""
    if shape.startswith("toolnode"):
        return tool_messages(run(toolnode(tools, shape == "toolnode_wrap"), mode, ask(calls)))
    app = agent(shape, tools, calls, MemorySaver())
    return tool_messages(run(app, mode, human(), cfg()))


# --- per-tool timeout ---------------------------------------------------------------

# `nap` sleeps past its 0.1 s limit; `flaky` is quick until told to block.
FLAKY = {"block": 0.0}


@tool(timeout=0.1)
def nap(n: int) -> str:
    """Sleeps 0.3 s, past its limit."""
    time.sleep(0.3)
    return f"woke {n}"


@tool
def flaky(n: int) -> str:
    """Quick, until FLAKY says to block."""
    if FLAKY["block"]:
        time.sleep(FLAKY["block"])
    return f"flaky {n}"


@pytest.mark.parametrize(("shape", "mode"), PATHS)
def test_a_lone_call_times_out(shape: str, mode: str) -> None:
    t0 = time.monotonic()
    (msg,) = results(shape, mode, [nap], [call("nap", "c1", n=1)])
    elapsed = time.monotonic() - t0
    assert msg.status == "error" and "timed out after 0.100s" in msg.text, msg
    # The tool sleeps 0.3 s: the result came at its limit, not when it woke.
    assert elapsed < 0.28, f"{shape}/{mode}: {elapsed:.3f}s"


@pytest.mark.parametrize(("shape", "mode"), PATHS)
def test_a_call_times_out_beside_a_quick_tool_that_blocks(shape: str, mode: str) -> None:
    # `flaky` is quick (its calls may run on the caller's thread), then blocks 0.5 s
    # beside `nap`, which wakes at 0.3 s, after its 0.1 s limit: `nap`'s result is
    # still the timeout, though it answered before anyone looked again.
    tools = [nap, flaky]
    calls = [call("nap", "c1", n=1), call("flaky", "c2", n=2)]
    if shape.startswith("toolnode"):
        node = toolnode(tools, shape == "toolnode_wrap")
        for _ in range(3):  # `flaky` is known quick from here on
            run(node, mode, ask([call("flaky", "w", n=0)]))
        FLAKY["block"] = 0.5
        try:
            msgs = tool_messages(run(node, mode, ask(calls)))
        finally:
            FLAKY["block"] = 0.0
    else:
        app = agent(shape, tools, calls, MemorySaver())
        run(app, mode, human(), cfg("warm"))
        FLAKY["block"] = 0.5
        try:
            msgs = tool_messages(run(app, mode, human(), cfg()))
        finally:
            FLAKY["block"] = 0.0
    assert [m.tool_call_id for m in msgs] == ["c1", "c2"]
    assert msgs[0].status == "error" and "timed out" in msgs[0].text, msgs[0]
    assert msgs[1].text == "flaky 2"


# --- one result per call, in call order ---------------------------------------------


@tool
def quick(n: int) -> str:
    """Answers at once (run inline once it is known quick)."""
    return f"quick {n}"


@tool
def slowish(n: int) -> str:
    """Answers after 30 ms (runs on the pool)."""
    time.sleep(0.03)
    return f"slowish {n}"


@tool
async def later(n: int) -> str:
    """Answers after 10 ms, asynchronously."""
    await asyncio.sleep(0.01)
    return f"later {n}"


@tool
def broken(n: int) -> str:
    """Fails."""
    raise ValueError(f"broken {n}")


ORDER_CALLS = [
    call("slowish", "c0", n=0),
    call("quick", "c1", n=1),
    call("later", "c2", n=2),
    call("broken", "c3", n=3),
    call("quick", "c4", n=4),
    call("slowish", "c5", n=5),
]
ORDER_TEXTS = ["slowish 0", "quick 1", "later 2", None, "quick 4", "slowish 5"]


SAVERS = ["memory", "sqlite", *(["postgres"] if PG else [])]


@pytest.fixture(scope="module")
def pg_schema() -> Any:
    """One schema for the module's PostgreSQL rows (each on threads of its own)."""
    if not PG:
        yield None
        return
    from pg_support import temp_schema

    with temp_schema() as name:
        yield name


def _saver(kind: str, tmp_path: Path, pg_schema: str | None) -> Any:
    if kind == "memory":
        return MemorySaver()
    if kind == "sqlite":
        return SqliteSaver(str(tmp_path / "order.sqlite"))
    from pg_support import new_saver

    assert pg_schema is not None
    return new_saver(pg_schema)


@pytest.mark.parametrize(
    ("shape", "mode", "saver"),
    # A ToolNode alone keeps no checkpoints.
    [(s, m, "none") for s, m in TOOLNODE_PATHS]
    + [(s, m, v) for s, m in AGENT_PATHS for v in SAVERS],
)
def test_one_result_per_call_in_call_order(
    shape: str, mode: str, saver: str, tmp_path: Path, pg_schema: Any
) -> None:
    tools = [quick, slowish, later, broken]
    if shape.startswith("toolnode"):
        node = toolnode(tools, shape == "toolnode_wrap")
        msgs = [tool_messages(run(node, mode, ask(ORDER_CALLS))) for _ in range(2)]
    else:
        app = agent(shape, tools, ORDER_CALLS, _saver(saver, tmp_path, pg_schema))
        # The second run finds `quick` known quick: its calls may run inline.
        msgs = [
            tool_messages(run(app, mode, human(), cfg(f"{shape}-{mode}-{i}"))) for i in range(2)
        ]
    for got in msgs:
        assert [m.tool_call_id for m in got] == [c["id"] for c in ORDER_CALLS]
        for m, text in zip(got, ORDER_TEXTS, strict=True):
            if text is None:
                assert m.status == "error" and "broken 3" in m.text, m
            else:
                assert (m.status, m.text) == ("success", text), m


# --- cancellation reaches the running tool (async entry points) ---------------------


@pytest.mark.parametrize("calls", [1, 2], ids=["one_call", "two_calls"])
@pytest.mark.parametrize(
    ("shape", "mode"),
    [
        ("toolnode", "ainvoke"),
        ("toolnode_wrap", "ainvoke"),
        *[(s, m) for s in AGENTS for m in ASYNC_MODES],
    ],
)
def test_cancelling_the_task_cancels_the_running_tool(shape: str, mode: str, calls: int) -> None:
    started: list[float] = []
    cancelled: list[float] = []

    @tool
    async def waits(n: int) -> str:
        """Waits 2 s."""
        started.append(time.monotonic())
        try:
            await asyncio.sleep(2)
        except asyncio.CancelledError:
            cancelled.append(time.monotonic())
            raise
        return "woke"

    todo = [call("waits", f"c{i}", n=i) for i in range(calls)]

    async def main() -> float:
        if shape.startswith("toolnode"):
            node = toolnode([waits], shape == "toolnode_wrap")
            job = asyncio.ensure_future(node.ainvoke(ask(todo)))
        else:
            app = agent(shape, [waits], todo, MemorySaver())
            job = asyncio.ensure_future(arun(app, mode, human(), cfg()))
        while len(started) < calls:
            await asyncio.sleep(0.005)
        job.cancel()
        sent = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await job
        while len(cancelled) < calls and time.monotonic() - sent < 1:
            await asyncio.sleep(0.005)
        return sent

    sent = asyncio.run(main())
    assert len(cancelled) == calls, f"{shape}/{mode}: {len(cancelled)} of {calls} tools cancelled"
    assert max(cancelled) - sent < 0.2


# --- Ctrl-C within 200 ms (sync entry points) ---------------------------------------


@pytest.fixture
def sigint_raises() -> Any:
    """Python's own SIGINT handler for the test (a runner started with SIGINT ignored
    passes that on), put back after."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("calls", [1, 2], ids=["one_call", "two_calls"])
@pytest.mark.parametrize(
    ("shape", "mode"),
    [
        ("toolnode", "invoke"),
        ("toolnode_wrap", "invoke"),
        *[(s, m) for s in AGENTS for m in SYNC_MODES],
    ],
)
def test_ctrl_c_stops_the_run_within_200_ms(
    shape: str, mode: str, calls: int, kind: str, sigint_raises: Any
) -> None:
    started = threading.Event()

    @tool
    def sleeps(n: int) -> str:
        """Sleeps 1 s."""
        started.set()
        time.sleep(1)
        return "woke"

    @tool
    async def asleeps(n: int) -> str:
        """Sleeps 1 s, asynchronously."""
        started.set()
        await asyncio.sleep(1)
        return "woke"

    t = sleeps if kind == "sync" else asleeps
    todo = [call(t.name, f"c{i}", n=i) for i in range(calls)]
    sent: list[float] = []

    def interrupt() -> None:
        started.wait(5)
        time.sleep(0.05)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        if shape.startswith("toolnode"):
            run(toolnode([t], shape == "toolnode_wrap"), mode, ask(todo))
        else:
            run(agent(shape, [t], todo, MemorySaver()), mode, human(), cfg())
    took = time.monotonic() - sent[0]
    assert took < 0.2, f"{shape}/{mode}/{kind}: KeyboardInterrupt after {took:.3f}s"


# --- a finished task's writes are durable within 50 ms (SIGKILL) --------------------

DURABLE_SHAPES = ["graph", *AGENTS]
DURABLE_SAVERS = ["sqlite", *(["postgres"] if PG else [])]
# How long after a task finished its writes must be in the store, on every saver
# (PostgreSQL's server shares the test machine's cores: 144 of 144 kills held at
# 50 ms with the machine's load at 8-10).
DURABLE_BOUND = {"sqlite": 0.05, "postgres": 0.05}


def _kill_after_finished(
    shape: str, mode: str, saver: str, where: str, log: Path
) -> subprocess.CompletedProcess[str]:
    """Starts the child, SIGKILLs it DURABLE_BOUND[saver] after the task finished."""
    effects = Effects(str(log))
    key = finished_key(shape)
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "guarantee_child.py"), shape, mode, saver, where, str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )
    try:
        deadline = time.monotonic() + 60
        while effects.count(key) == 0:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the task never finished"
            time.sleep(0.002)
        time.sleep(DURABLE_BOUND[saver])
        proc.kill()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "FINISHED" not in out, "the run ended before the kill: nothing was tested"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("saver", DURABLE_SAVERS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", DURABLE_SHAPES)
def test_a_finished_task_is_durable_whatever_its_siblings_do(
    shape: str, mode: str, saver: str, tmp_path: Path
) -> None:
    log = tmp_path / "effects.log"
    resumed: Any
    if saver == "sqlite":
        where = str(tmp_path / "db.sqlite")
        done = _kill_after_finished(shape, mode, saver, where, log)
        resumed = SqliteSaver(where)
    else:
        from pg_support import new_saver, temp_schema, url_named, wait_sessions_gone

        schema_cm = temp_schema()
        where = schema_cm.__enter__()
        try:
            done = _kill_after_finished(shape, mode, saver, where, log)
            # What the dead process sent is known once its connections are gone.
            wait_sessions_gone(where)
            resumed = new_saver(where, url=url_named(where + "_resume"))
        except BaseException:
            schema_cm.__exit__(*sys.exc_info())
            raise
    assert done.returncode == -signal.SIGKILL, done
    try:
        effects = Effects(str(log))
        app = durable_app(shape, effects, 0.0, resumed)
        out = app.invoke(None, cfg())
    finally:
        resumed.close()
        if saver == "postgres":
            schema_cm.__exit__(None, None, None)
    key = finished_key(shape)
    assert effects.count(key) == 1, (
        f"{shape}/{mode}/{saver}: the task that finished {DURABLE_BOUND[saver] * 1000:.0f} ms "
        f"before the kill ran again ({effects.count(key)} runs)"
    )
    assert effects.count("slow") == 1  # the unfinished sibling ran once, on resume
    if shape == "graph":
        assert sorted(out["ran"]) == ["fast", "slow"]
    else:
        assert out["messages"][-1].text == "done"
        assert [m.text for m in tool_messages(out)] == ["quick 1", "lengthy 2"]


# --- no abort at exit ---------------------------------------------------------------

SHUTDOWN_RUNS = int(os.environ.get("IRONLOOP_SHUTDOWN_RUNS", "10"))
SHUTDOWN = {
    "timed_out_async": 0,
    "timed_out_sync": 0,
    "sys_exit": 3,
    "many_args": 0,
    "ctrl_c": -signal.SIGINT,
    "astream_failed": 0,
}


def shutdown_runs(
    scenario: str, runs: int, parallel: int = 4, env: dict[str, str] | None = None
) -> list[tuple[int, str]]:
    """Runs ``shutdown_child.py scenario`` ``runs`` times, ``parallel`` at once (with
    ``env`` added to the environment); returns each run's exit status and stderr."""
    argv = [sys.executable, str(HERE / "shutdown_child.py"), scenario]
    child_env = {**os.environ, **(env or {})}
    done: list[tuple[int, str]] = []
    while len(done) < runs:
        batch = [
            subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env
            )
            for _ in range(min(parallel, runs - len(done)))
        ]
        for p in batch:
            _, err = p.communicate(timeout=60)
            done.append((p.returncode, err))
    return done


@pytest.mark.parametrize("scenario", list(SHUTDOWN))
def test_a_process_exits_cleanly_while_tools_still_run(scenario: str) -> None:
    outcomes = shutdown_runs(scenario, SHUTDOWN_RUNS)
    bad = [(rc, err) for rc, err in outcomes if rc != SHUTDOWN[scenario] or "Fatal" in err]
    assert not bad, f"{len(bad)} of {len(outcomes)} runs: {bad[0][0]}\n{bad[0][1][-2000:]}"


# --- a cancelled run releases its thread at once ------------------------------------


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_a_new_run_right_after_cancel_finds_the_thread_free(
    saver: str, mode: str, tmp_path: Path
) -> None:
    # Each run is cancelled while its tool waits, and the next run of the same thread
    # starts at once: it must start (reach its tool), never find the thread busy.
    started = asyncio.Event()

    @tool
    async def waits(n: int) -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.sleep(30)
        return "woke"

    cp = MemorySaver() if saver == "memory" else SqliteSaver(str(tmp_path / "busy.sqlite"))
    app = agent("react_v2", [waits], [call("waits", "c1", n=1)], cp)

    async def main() -> list[BaseException]:
        busy: list[BaseException] = []
        for _ in range(100):
            started.clear()
            job = asyncio.ensure_future(arun(app, mode, human(), cfg()))
            seen = asyncio.ensure_future(started.wait())
            await asyncio.wait({job, seen}, return_when=asyncio.FIRST_COMPLETED)
            seen.cancel()
            if job.done():
                busy.append(job.exception() or RuntimeError(f"ended: {job.result()}"))
                continue
            job.cancel()
            with pytest.raises(asyncio.CancelledError):
                await job
        return busy

    busy = asyncio.run(main())
    assert not busy, f"{len(busy)} of 100 runs did not start: {busy[0]!r}"


# --- a cancelled run's caller goes on at once, a sync node still running ------------


class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


@pytest.mark.parametrize("mode", ASYNC_MODES)
def test_cancelling_a_run_does_not_wait_for_a_sync_node(mode: str) -> None:
    # A sync node cannot be stopped: it runs on in the pool, and the cancelled caller
    # goes on without it. The caller's stream must still see the run's end when the
    # item it was waiting for when cancelled took that end (the race that made a
    # cancelled run wait for its sync node's last call about one time in four).
    entered = threading.Event()
    release = threading.Event()

    def blocks(state: State) -> State:
        entered.set()
        release.wait(10)
        return {"items": ["blocked"]}

    b = StateGraph(State)
    b.add_node("first", lambda s: {"items": ["first"]})
    b.add_node("blocks", blocks)
    b.add_edge(START, "first")
    b.add_edge("first", "blocks")
    b.add_edge("blocks", END)
    app = b.compile()

    async def main() -> list[float]:
        waited = []
        for _ in range(20):
            entered.clear()
            release.clear()
            job = asyncio.ensure_future(arun(app, mode, {"items": []}))
            while not entered.is_set():
                await asyncio.sleep(0.005)
            started = time.monotonic()
            job.cancel()
            with pytest.raises(asyncio.CancelledError):
                await job
            waited.append(time.monotonic() - started)
            release.set()  # the node ends; the next run does not queue behind it
        return waited

    waited = asyncio.run(main())
    assert max(waited) < 0.5, f"{mode}: a cancel waited {max(waited):.2f} s for the sync node"
