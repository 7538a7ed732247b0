"""How ToolNode runs Python tools: the blocking pool for sync tools, event loops for
async tools, contextvars, errors and `handle_tool_errors`, progress, timeouts and
cancellation."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import threading
import time
import traceback
from typing import Any

import pytest
from graph_support import run

from ironloop import ToolContext, ToolNode, tool
from ironloop.errors import (
    ToolError,
    ToolInvalidArgsError,
    ToolNotFoundError,
    ToolTimeoutError,
)

# ----------------------------------------------------------------- the blocking pool


@tool
def nap(i: int) -> int:
    """Sleeps 0.2 s (blocking)."""
    time.sleep(0.2)
    return i


@tool
async def anap(i: int) -> int:
    """Sleeps 0.2 s (async)."""
    await asyncio.sleep(0.2)
    return i


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
@pytest.mark.parametrize(
    ("napper", "kind"), [(nap, "sync"), (anap, "async")], ids=["sync", "async"]
)
def test_64_sleeping_tools_run_together(napper, kind, how, make_ai) -> None:
    ai = make_ai(*[(napper.name, {"i": i}) for i in range(64)])
    t0 = time.perf_counter()
    out = run(ToolNode([napper]), how, [ai])
    elapsed = time.perf_counter() - t0
    assert [m.content for m in out] == [str(i) for i in range(64)]
    assert elapsed < 1.0, f"64 x 0.2 s {kind} tools took {elapsed:.2f} s"


def test_quick_sync_tools_run_on_the_calling_thread(make_ai) -> None:
    # A tool whose last call was quick runs beside its siblings on the thread that
    # called invoke: no hand-over to the pool per call.
    threads: list[int] = []

    @tool
    def where(i: int) -> int:
        """Records the thread it runs on."""
        threads.append(threading.get_ident())
        return i

    node = ToolNode([where])
    # Alone: on this thread, and timed. A tool is quick once one call was; it is slow
    # again only after two calls in a row over the budget, so a first call that a
    # loaded machine preempts (or that pays a one-off import) does not decide it.
    for _ in range(3):
        node.invoke([make_ai(("where", {"i": 0}))])
    threads.clear()
    out = node.invoke([make_ai(*[("where", {"i": i}) for i in range(50)])])
    assert [m.content for m in out] == [str(i) for i in range(50)]
    here = threading.get_ident()
    # A call preempted past the budget alone does not send the tool to the pool.
    assert threads.count(here) >= 45, f"{threads.count(here)} of 50 calls ran inline"


def test_a_quick_tool_that_starts_blocking_moves_to_the_pool(make_ai) -> None:
    slow = {"on": False}

    @tool
    def step(i: int) -> int:
        """Returns i; sleeps 0.2 s first when slow."""
        if slow["on"]:
            time.sleep(0.2)
        return i

    node = ToolNode([step])
    node.invoke([make_ai(("step", {"i": 0}))])  # quick: its next calls may run inline
    slow["on"] = True
    ai = make_ai(*[("step", {"i": i}) for i in range(16)])
    t0 = time.perf_counter()
    out = node.invoke([ai])
    first = time.perf_counter() - t0
    assert [m.content for m in out] == [str(i) for i in range(16)]
    # One after another: 3.2 s. The first two calls ran inline (0.4 s), then the tool
    # was slow and the other 14 ran on the pool together: ~0.6 s. The bound leaves
    # room for a loaded machine and still fail a serial run by a wide margin.
    assert first < 2.0, f"16 x 0.2 s took {first:.2f} s"
    t0 = time.perf_counter()
    out = node.invoke([ai])
    second = time.perf_counter() - t0
    assert [m.content for m in out] == [str(i) for i in range(16)]
    assert second < 0.6, f"16 x 0.2 s of a slow tool took {second:.2f} s"


def test_keyboard_interrupt_in_an_inline_tool_stops_the_run(make_ai) -> None:
    # Ctrl-C while a quick tool runs on the calling thread raises KeyboardInterrupt in
    # that tool: the run stops there, it does not wait for a slow sibling on the pool.
    interrupt = {"on": False}

    @tool
    def quick(i: int) -> int:
        """Returns i, or raises KeyboardInterrupt as Ctrl-C would."""
        if interrupt["on"]:
            raise KeyboardInterrupt
        return i

    @tool
    def slow(i: int) -> int:
        """Sleeps 3 s."""
        time.sleep(3)
        return i

    node = ToolNode([quick, slow])
    node.invoke([make_ai(("quick", {"i": 0}))])
    interrupt["on"] = True
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        node.invoke([make_ai(("slow", {"i": 0}), ("quick", {"i": 1}))])
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, f"KeyboardInterrupt came after {elapsed:.2f} s"


async def test_sync_tools_never_block_the_callers_loop(make_ai) -> None:
    @tool
    def block(i: int) -> int:
        """Blocks its thread for 0.3 s."""
        time.sleep(0.3)
        return i

    ticks: list[float] = []

    async def heartbeat() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    hb = asyncio.create_task(heartbeat())
    await asyncio.sleep(0)
    start = time.perf_counter()
    out = await ToolNode([block]).ainvoke([make_ai(*[("block", {"i": i}) for i in range(8)])])
    end = time.perf_counter()
    hb.cancel()
    assert [m.content for m in out] == [str(i) for i in range(8)]
    during = [t for t in ticks if start <= t <= end]
    assert len(during) >= 8, f"the loop ticked {len(during)} times in {end - start:.2f} s"
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert max(gaps) < 0.15, f"the loop stalled for {max(gaps):.2f} s"


# ----------------------------------------------------------------------- event loops


def _loop_probe():
    seen: dict[int, tuple[asyncio.AbstractEventLoop, str]] = {}

    @tool
    async def where(i: int) -> str:
        """Reports the loop it runs on."""
        seen[i] = (asyncio.get_running_loop(), threading.current_thread().name)
        await asyncio.sleep(0.01)
        return "ok"

    return where, seen


async def test_async_tools_run_on_the_callers_loop_under_ainvoke(make_ai) -> None:
    where, seen = _loop_probe()
    out = await ToolNode([where]).ainvoke([make_ai(*[("where", {"i": i}) for i in range(4)])])
    assert [m.content for m in out] == ["ok"] * 4
    loop = asyncio.get_running_loop()
    assert all(seen[i][0] is loop for i in range(4))
    assert all(seen[i][1] == threading.current_thread().name for i in range(4))


def test_async_tools_run_on_a_runtime_loop_under_invoke(make_ai) -> None:
    where, seen = _loop_probe()
    (msg,) = ToolNode([where]).invoke([make_ai(("where", {"i": 0}))])
    assert msg.content == "ok"
    loop, thread = seen[0]
    assert loop.is_running()
    assert thread != threading.current_thread().name


async def test_invoke_from_an_executor_thread_of_a_running_loop(make_ai) -> None:
    where, seen = _loop_probe()
    caller_loop = asyncio.get_running_loop()
    node = ToolNode([where])
    out = await caller_loop.run_in_executor(None, node.invoke, [make_ai(("where", {"i": 0}))])
    assert out[0].content == "ok"
    assert seen[0][0] is not caller_loop
    assert seen[0][0].is_running()


async def test_invoke_called_on_the_loop_thread_does_not_deadlock(make_ai) -> None:
    # A blocking call inside a coroutine is bad style, but it must not hang.
    where, seen = _loop_probe()
    out = ToolNode([where]).invoke([make_ai(("where", {"i": 0}))])
    assert out[0].content == "ok"
    assert seen[0][0] is not asyncio.get_running_loop()


def test_sync_tools_have_no_running_loop(make_ai) -> None:
    @tool
    def probe() -> str:
        """Checks for a running loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return "no loop"
        return "loop"

    async def run():
        return await ToolNode([probe]).ainvoke([make_ai(("probe", {}))])

    assert ToolNode([probe]).invoke([make_ai(("probe", {}))])[0].content == "no loop"
    assert asyncio.run(run())[0].content == "no loop"


# ----------------------------------------------------------------------- contextvars

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


def _context_tools():
    @tool
    def sync_read(i: int) -> str:
        """Reads the var, sets it, reads it again."""
        before = request_id.get()
        request_id.set(f"sync-{i}")
        time.sleep(0.02)
        return f"{before}|{request_id.get()}"

    @tool
    async def async_read(i: int) -> str:
        """Reads the var, sets it, reads it again."""
        before = request_id.get()
        request_id.set(f"async-{i}")
        await asyncio.sleep(0.02)
        return f"{before}|{request_id.get()}"

    return [sync_read, async_read]


def _context_calls(n: int) -> list[tuple[str, dict[str, Any]]]:
    return [("sync_read", {"i": i}) for i in range(n)] + [
        ("async_read", {"i": i}) for i in range(n)
    ]


def _expected(caller: str, n: int) -> list[str]:
    return [f"{caller}|sync-{i}" for i in range(n)] + [f"{caller}|async-{i}" for i in range(n)]


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_contextvars_are_copied_per_call_under_invoke(strategy, make_ai) -> None:
    def run() -> tuple[list[str], str]:
        request_id.set("caller")
        node = ToolNode(_context_tools(), strategy=strategy)
        out = node.invoke([make_ai(*_context_calls(6))])
        return [m.content for m in out], request_id.get()

    # Run in a fresh context so that the test leaves the module's var untouched.
    contents, after = contextvars.copy_context().run(run)
    assert contents == _expected("caller", 6)  # siblings never see each other's values
    assert after == "caller"  # nothing leaks back to the caller


def test_quick_tools_run_inline_each_in_its_own_context_copy(make_ai) -> None:
    @tool
    def quick_set(i: int) -> str:
        """Reads the var, then sets it (no wait: a quick tool runs on the caller's thread)."""
        before = request_id.get()
        request_id.set(f"quick-{i}")
        return f"{before}|{threading.get_ident()}"

    def run() -> tuple[list[str], str]:
        request_id.set("caller")
        node = ToolNode([quick_set])
        calls = [("quick_set", {"i": i}) for i in range(50)]
        node.invoke([make_ai(*calls)])  # the first step times the tool (on the pool)
        out = node.invoke([make_ai(*calls)])
        return [m.content for m in out], request_id.get()

    contents, after = contextvars.copy_context().run(run)
    assert [c.split("|")[0] for c in contents] == ["caller"] * 50
    # The second step ran (some of) its calls inline, on this thread.
    assert str(threading.get_ident()) in {c.split("|")[1] for c in contents}
    assert after == "caller"


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
async def test_contextvars_are_copied_per_call_under_ainvoke(strategy, make_ai) -> None:
    request_id.set("acaller")
    node = ToolNode(_context_tools(), strategy=strategy)
    out = await node.ainvoke([make_ai(*_context_calls(6))])
    assert [m.content for m in out] == _expected("acaller", 6)
    assert request_id.get() == "acaller"


async def test_contextvars_of_the_calling_task_are_used(make_ai) -> None:
    node = ToolNode(_context_tools())

    async def one(value: str) -> list[str]:
        request_id.set(value)
        await asyncio.sleep(0.01)
        out = await node.ainvoke([make_ai(("sync_read", {"i": 0}), ("async_read", {"i": 0}))])
        return [m.content.split("|")[0] for m in out]

    a, b = await asyncio.gather(one("task-a"), one("task-b"))
    assert a == ["task-a", "task-a"]
    assert b == ["task-b", "task-b"]


def test_many_concurrent_sync_tools_share_no_context(make_ai) -> None:
    # Entering one Context object from two threads raises "cannot enter context";
    # every call must get its own copy.
    @tool
    def touch(i: int) -> str:
        """Sets and reads the var."""
        request_id.set(str(i))
        time.sleep(0.01)
        return request_id.get()

    def run() -> list[Any]:
        request_id.set("caller")
        return ToolNode([touch]).invoke([make_ai(*[("touch", {"i": i}) for i in range(48)])])

    out = contextvars.copy_context().run(run)
    assert [m.status for m in out] == ["success"] * 48, [
        m.content for m in out if m.status != "success"
    ]
    assert [m.content for m in out] == [str(i) for i in range(48)]


# ---------------------------------------------------------------------------- errors


class QuotaError(Exception):
    """Registers every instance in ``raised`` (by the kind given), so that a test can
    check that the very object raised by a tool is the one it gets back."""

    def __init__(self, code: int, detail: str, raised: dict[str, BaseException]) -> None:
        super().__init__(code, detail)
        self.code = code
        raised[detail.split()[0]] = self

    def __str__(self) -> str:
        return f"quota {self.code}: {self.args[1]}"


def _failing_helper(kind: str, raised: dict[str, BaseException]) -> None:
    raise QuotaError(429, f"{kind} over quota", raised)


def _failing_tools(raised: dict[str, BaseException]):
    # The exceptions propagate out of the tools uncaught, as in real code.
    @tool
    def sync_fail() -> str:
        """Fails."""
        _failing_helper("sync", raised)
        return "unreachable"

    @tool
    async def async_fail() -> str:
        """Fails."""
        await asyncio.sleep(0)
        _failing_helper("async", raised)
        return "unreachable"

    @tool
    def ok() -> str:
        """Works."""
        return "fine"

    return [sync_fail, async_fail, ok]


@pytest.mark.parametrize("name", ["sync_fail", "async_fail"])
@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_exception_becomes_an_error_tool_message(name, mode, make_ai) -> None:
    node = ToolNode(_failing_tools({}))
    ai = make_ai((name, {}), ("ok", {}))
    out = node.invoke([ai]) if mode == "invoke" else asyncio.run(node.ainvoke([ai]))
    err, ok = out
    assert (ok.status, ok.content) == ("success", "fine")
    assert err.status == "error"
    assert err.name == name
    assert err.tool_call_id == "c0"
    kind = name.split("_")[0]
    # LangGraph's text: the exception's repr.
    assert err.content == f"Error: QuotaError(429, '{kind} over quota')\n Please fix your mistakes."
    assert "Traceback" not in err.content
    assert "_failing_helper" not in err.content
    assert __file__ not in err.content


@pytest.mark.parametrize("name", ["sync_fail", "async_fail"])
def test_exception_traceback_goes_to_the_ironloop_logger(name, make_ai, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="ironloop")
    ToolNode(_failing_tools({})).invoke([make_ai((name, {}))])
    records = [r for r in caplog.records if r.name.startswith("ironloop") and r.exc_info]
    assert records, "no ironloop log record with exc_info"
    (record,) = records
    assert record.levelno >= logging.WARNING
    assert name in record.getMessage()
    exc_type, exc, tb = record.exc_info
    assert isinstance(exc, QuotaError)
    assert exc_type is QuotaError
    text = logging.Formatter().format(record)
    assert "Traceback (most recent call last)" in text, text
    assert "_failing_helper" in text, text  # the frame where it was raised
    assert tb is not None


@pytest.mark.parametrize("name", ["sync_fail", "async_fail"])
@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_handle_tool_errors_false_reraises_the_original_exception(name, mode, make_ai) -> None:
    raised: dict[str, BaseException] = {}
    node = ToolNode(_failing_tools(raised), handle_tool_errors=False)
    ai = make_ai((name, {}))
    with pytest.raises(QuotaError) as ei:
        node.invoke([ai]) if mode == "invoke" else asyncio.run(node.ainvoke([ai]))
    assert ei.value is raised[name.split("_")[0]]
    assert ei.value.args == (429, f"{name.split('_')[0]} over quota")
    assert ei.value.code == 429
    # The traceback still reaches into the tool, for whoever debugs it.
    tb_text = "".join(traceback.format_exception(type(ei.value), ei.value, ei.value.__traceback__))
    assert "_failing_helper" in tb_text


@pytest.mark.parametrize(
    ("call", "exc_type"),
    [
        (("missing", {}), ToolNotFoundError),
        (("ok", [1]), ToolInvalidArgsError),
        (("ok", "{not json"), ToolInvalidArgsError),
    ],
    ids=["unknown-tool", "args-not-object", "args-not-json"],
)
def test_handle_tool_errors_false_raises_typed_errors_for_bad_calls(call, exc_type, make_ai):
    node = ToolNode(_failing_tools({}), handle_tool_errors=False)
    with pytest.raises(exc_type) as ei:
        node.invoke([make_ai(call)])
    assert isinstance(ei.value, ToolError)
    assert call[0] in str(ei.value)


def test_handle_tool_errors_string(make_ai) -> None:
    node = ToolNode(_failing_tools({}), handle_tool_errors="Something broke, try again.")
    out = node.invoke([make_ai(("sync_fail", {}), ("async_fail", {}), ("missing", {}), ("ok", {}))])
    assert [(m.status, m.content) for m in out] == [
        ("error", "Something broke, try again."),
        ("error", "Something broke, try again."),
        ("error", "Something broke, try again."),
        ("success", "fine"),
    ]


def test_handle_tool_errors_callable(make_ai) -> None:
    raised: dict[str, BaseException] = {}
    got: list[BaseException] = []

    def handler(e: BaseException) -> str:
        got.append(e)
        return f"handled {type(e).__name__}"

    node = ToolNode(_failing_tools(raised), handle_tool_errors=handler)
    out = node.invoke([make_ai(("sync_fail", {}), ("async_fail", {}), ("ok", [1]), ("ok", {}))])
    assert [(m.status, m.content) for m in out] == [
        ("error", "handled QuotaError"),
        ("error", "handled QuotaError"),
        ("error", "handled ToolInvalidArgsError"),
        ("success", "fine"),
    ]
    assert len(got) == 3
    assert any(e is raised["sync"] for e in got)
    assert any(e is raised["async"] for e in got)


def test_handle_tool_errors_exception_type_handles_only_those(make_ai) -> None:
    raised: dict[str, BaseException] = {}
    handled = ToolNode(_failing_tools(raised), handle_tool_errors=QuotaError)
    (msg,) = handled.invoke([make_ai(("sync_fail", {}))])
    assert msg.status == "error"
    assert "QuotaError" in msg.content

    # An unknown tool is not a QuotaError: it is raised.
    with pytest.raises(ToolNotFoundError):
        handled.invoke([make_ai(("missing", {}))])

    other = ToolNode(_failing_tools(raised), handle_tool_errors=KeyError)
    with pytest.raises(QuotaError) as ei:
        other.invoke([make_ai(("async_fail", {}))])
    assert ei.value is raised["async"]


def test_handle_tool_errors_tuple_of_types(make_ai) -> None:
    node = ToolNode(_failing_tools({}), handle_tool_errors=(KeyError, QuotaError))
    out = node.invoke([make_ai(("sync_fail", {}), ("ok", {}))])
    assert [m.status for m in out] == ["error", "success"]
    with pytest.raises(QuotaError):
        ToolNode(_failing_tools({}), handle_tool_errors=(KeyError, TypeError)).invoke(
            [make_ai(("sync_fail", {}))]
        )


# -------------------------------------------------------------------------- progress


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_progress_reaches_the_callback_while_the_tool_runs(mode, make_ai) -> None:
    received = threading.Event()
    payloads: list[Any] = []

    def on_progress(p: Any) -> None:
        payloads.append(p)
        if len(payloads) == 2:
            received.set()

    @tool
    def long_job(ctx: ToolContext) -> str:
        """Reports progress, then waits until it was received."""
        ctx.progress({"step": 1})
        ctx.progress("halfway")
        # Only returns "seen" if the callback already ran: the tool has not returned.
        return "seen" if received.wait(5.0) else "not seen"

    @tool
    async def along_job(ctx: ToolContext) -> str:
        """Async variant."""
        ctx.progress({"step": 1})
        await asyncio.sleep(0)
        ctx.progress("halfway")
        return "seen" if received.is_set() else "not seen"

    for name in ("long_job", "along_job"):
        received.clear()
        payloads.clear()
        node = ToolNode([long_job, along_job])
        ai = make_ai((name, {}))
        if mode == "invoke":
            out = node.invoke([ai], on_progress=on_progress)
        else:
            out = asyncio.run(node.ainvoke([ai], on_progress=on_progress))
        assert out[0].content == "seen", name
        assert payloads == [{"step": 1}, "halfway"], name


def test_progress_without_a_callback_is_a_no_op(make_ai) -> None:
    @tool
    def job(ctx: ToolContext) -> str:
        """Reports progress."""
        ctx.progress("x")
        return "done"

    assert ToolNode([job]).invoke([make_ai(("job", {}))])[0].content == "done"


# -------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_timeouts_for_sync_and_async_tools(mode, make_ai) -> None:
    sync_saw_cancel = threading.Event()
    async_cancelled = threading.Event()
    async_finally = threading.Event()

    @tool(timeout=0.1)
    def slow_sync(ctx: ToolContext) -> str:
        """Runs for up to 3 s, stopping early when told to."""
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            if ctx.cancelled:
                sync_saw_cancel.set()
                return "stopped"
            time.sleep(0.01)
        return "finished"

    @tool(timeout=0.1)
    async def slow_async() -> str:
        """Runs for 3 s."""
        try:
            await asyncio.sleep(3.0)
        except asyncio.CancelledError:
            async_cancelled.set()
            raise
        finally:
            async_finally.set()
        return "finished"

    @tool
    def quick() -> str:
        """Quick."""
        return "quick"

    node = ToolNode([slow_sync, slow_async, quick])
    ai = make_ai(("slow_sync", {}), ("slow_async", {}), ("quick", {}))
    t0 = time.perf_counter()
    out = node.invoke([ai]) if mode == "invoke" else asyncio.run(node.ainvoke([ai]))
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.5, f"timed-out calls held the run for {elapsed:.2f} s"
    s, a, q = out
    for m, name in ((s, "slow_sync"), (a, "slow_async")):
        assert m.status == "error"
        assert m.name == name
        assert "timed out" in m.content
        assert "0.1" in m.content
    assert (q.status, q.content) == ("success", "quick")
    assert async_cancelled.wait(2.0), "the timed-out async tool was not cancelled"
    assert async_finally.wait(2.0)
    assert sync_saw_cancel.wait(2.0), "ctx.cancelled never became true for the sync tool"


def test_timeout_with_handle_tool_errors_false_raises_tool_timeout_error(make_ai) -> None:
    @tool(timeout=0.05)
    async def hang() -> str:
        """Hangs."""
        await asyncio.sleep(3.0)
        return "x"

    with pytest.raises(ToolTimeoutError, match="hang") as ei:
        ToolNode([hang], handle_tool_errors=False).invoke([make_ai(("hang", {}))])
    assert isinstance(ei.value, TimeoutError)


# ---------------------------------------------------------------------- cancellation


async def test_cancelling_ainvoke_cancels_tools(make_ai) -> None:
    async_started = threading.Event()
    async_cancelled = threading.Event()
    async_finally = threading.Event()
    sync_started = threading.Event()
    sync_saw_cancel = threading.Event()

    @tool
    async def long_async() -> str:
        """Waits a long time."""
        async_started.set()
        try:
            await asyncio.sleep(10.0)
        except asyncio.CancelledError:
            async_cancelled.set()
            raise
        finally:
            async_finally.set()
        return "finished"

    @tool
    def long_sync(ctx: ToolContext) -> str:
        """Works a long time, checking ctx.cancelled."""
        sync_started.set()
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if ctx.cancelled:
                sync_saw_cancel.set()
                return "stopped"
            time.sleep(0.01)
        return "finished"

    node = ToolNode([long_async, long_sync])
    task = asyncio.create_task(node.ainvoke([make_ai(("long_async", {}), ("long_sync", {}))]))
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, sync_started.wait, 5.0)
    for _ in range(200):
        if async_started.is_set():
            break
        await asyncio.sleep(0.01)
    assert async_started.is_set()

    t0 = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - t0 < 2.0

    for _ in range(200):
        if async_finally.is_set():
            break
        await asyncio.sleep(0.01)
    assert async_cancelled.is_set(), "the async tool's CancelledError path did not run"
    assert async_finally.is_set()
    assert await loop.run_in_executor(None, sync_saw_cancel.wait, 2.0), (
        "ctx.cancelled never became true for the sync tool"
    )
