"""The functional API (``ironloop.func``): entrypoints and tasks, as LangGraph's.

What matters: tasks run concurrently and return futures; a task that finished is not
run again when its step runs again (resumed after an interrupt, or continued after
the process was killed); ``previous`` and ``entrypoint.final``; streaming; state.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ironloop import MemorySaver
from ironloop.func import entrypoint, task
from ironloop.graph import get_stream_writer
from ironloop.types import Command, RetryPolicy, interrupt

HERE = Path(__file__).parent


def cfg(thread: str = "1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def test_tasks_run_concurrently_and_return_futures() -> None:
    @task
    def slow(x: int) -> int:
        time.sleep(0.3)
        return x * 2

    @entrypoint()
    def flow(xs: list[int]) -> list[int]:
        futures = [slow(x) for x in xs]
        return [f.result() for f in futures]

    start = time.perf_counter()
    assert flow.invoke([1, 2, 3, 4]) == [2, 4, 6, 8]
    assert time.perf_counter() - start < 0.9  # four 0.3 s tasks, not 1.2 s


def test_a_finished_task_is_not_run_again_when_the_entrypoint_resumes() -> None:
    calls: list[str] = []

    @task
    def draft(topic: str) -> str:
        calls.append(topic)
        return f"essay on {topic}"

    @entrypoint(checkpointer=MemorySaver())
    def review(topic: str) -> dict[str, Any]:
        essay = draft(topic).result()
        verdict = interrupt({"essay": essay})
        return {"essay": essay, "verdict": verdict}

    out = review.invoke("cats", cfg())
    assert out["__interrupt__"][0].value == {"essay": "essay on cats"}
    state = review.get_state(cfg())
    assert state.next == ("review",)
    assert review.invoke(Command(resume="ok"), cfg()) == {
        "essay": "essay on cats",
        "verdict": "ok",
    }
    assert calls == ["cats"]
    assert review.get_state(cfg()).values == {"essay": "essay on cats", "verdict": "ok"}


def test_an_interrupt_inside_a_task_resumes_that_task() -> None:
    ran: list[str] = []

    @task
    def first() -> str:
        ran.append("first")
        return "one"

    @task
    def ask(q: str) -> str:
        ran.append("ask")
        return f"{q}={interrupt(q)}"

    @entrypoint(checkpointer=MemorySaver())
    def flow(_: Any) -> list[str]:
        return [first().result(), ask("name").result()]

    assert flow.invoke(1, cfg())["__interrupt__"][0].value == "name"
    assert flow.invoke(Command(resume="ann"), cfg()) == ["one", "name=ann"]
    assert ran == ["first", "ask", "ask"]


def test_previous_and_final() -> None:
    @entrypoint(checkpointer=MemorySaver())
    def counter(n: int, *, previous: Any = None) -> Any:
        total = (previous or 0) + n
        return entrypoint.final(value=f"total {total}", save=total)

    assert counter.invoke(2, cfg()) == "total 2"
    assert counter.invoke(3, cfg()) == "total 5"
    assert counter.get_state(cfg()).values == "total 5"
    assert counter.invoke(1, cfg("other")) == "total 1"


def test_stream_updates_values_and_custom() -> None:
    @task
    def double(x: int) -> int:
        get_stream_writer()(f"doubling {x}")
        return 2 * x

    @entrypoint(checkpointer=MemorySaver())
    def flow(x: int) -> int:
        return double(x).result() + 1

    chunks = list(flow.stream(5, cfg(), stream_mode=["updates", "values", "custom"]))
    assert ("custom", "doubling 5") in chunks
    updates = [c for m, c in chunks if m == "updates"]
    assert updates == [{"double": 10}, {"flow": 11}]
    assert [c for m, c in chunks if m == "values"][-1] == 11


def test_async_entrypoint_with_async_and_sync_tasks() -> None:
    @task
    async def fetch(x: int) -> int:
        await asyncio.sleep(0.2)
        return x + 100

    @task
    def square(x: int) -> int:
        return x * x

    @entrypoint(checkpointer=MemorySaver())
    async def flow(xs: list[int]) -> list[int]:
        fetched = await asyncio.gather(*(fetch(x) for x in xs))
        return [await square(x) for x in fetched]

    async def main() -> list[int]:
        start = time.perf_counter()
        out = await flow.ainvoke([1, 2, 3], cfg())
        assert time.perf_counter() - start < 0.5
        return out

    assert asyncio.run(main()) == [101**2, 102**2, 103**2]


def test_tasks_call_tasks_and_errors_propagate() -> None:
    @task
    def inner(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x + 1

    @task
    def outer(x: int) -> int:
        return inner(x).result() * 2

    @entrypoint()
    def flow(x: int) -> int:
        return outer(x).result()

    assert flow.invoke(1) == 4
    with pytest.raises(ValueError, match="negative"):
        flow.invoke(-1)


def test_retry_policy_on_a_task() -> None:
    attempts: list[int] = []

    @task(retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False))
    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return "done"

    @entrypoint()
    def flow(_: int) -> str:
        return flaky().result()

    assert flow.invoke(0) == "done"
    assert len(attempts) == 3


def test_a_task_called_outside_a_run_says_where_to_call_it() -> None:
    @task
    def alone() -> int:
        return 1

    with pytest.raises(RuntimeError, match="outside of a running graph"):
        alone()


def test_history_of_an_entrypoint_thread() -> None:
    @entrypoint(checkpointer=MemorySaver())
    def echo(x: str) -> str:
        return x.upper()

    echo.invoke("a", cfg())
    echo.invoke("b", cfg())
    history = list(echo.get_state_history(cfg()))
    assert history[0].values == "B"
    assert "A" in [h.values for h in history]
    assert history[-1].values is None


def test_sigkill_after_a_task_finished_does_not_run_it_again(tmp_path: Path) -> None:
    db, log = tmp_path / "flow.db", tmp_path / "effects.log"
    child = [sys.executable, str(HERE / "func_crash_child.py"), str(db), str(log)]
    killed = subprocess.run(child, capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    assert log.read_text().splitlines()[0].startswith("a pid=")
    resumed = subprocess.run(child, capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout.split("RESULT ", 1)[1])
    assert result == {"a": 2, "b": 20}
    effects = [line.split()[0] for line in log.read_text().splitlines()]
    assert effects == ["a", "b"]  # a ran once, in the killed process


def test_a_sync_task_runs_on_another_thread() -> None:
    seen: list[str] = []

    @task
    def where() -> None:
        seen.append(threading.current_thread().name)

    @entrypoint()
    def flow(_: int) -> None:
        where().result()

    flow.invoke(0)
    assert seen and seen[0] != threading.current_thread().name


def test_an_async_task_called_from_a_sync_entrypoint() -> None:
    @task
    async def fetch(x: int) -> int:
        await asyncio.sleep(0.01)
        return x + 1

    @entrypoint()
    def flow(x: int) -> int:
        return fetch(x).result() * 2

    assert flow.invoke(1) == 4


def test_many_parallel_tasks_saving_while_the_entrypoint_pauses() -> None:
    # Tasks save their results on their threads while the entrypoint looks up the next
    # call's saved result and pauses: the run's scratchpad is shared by all of them.
    @task
    def item(i: int) -> int:
        time.sleep(0.001 * (i % 3))
        return i

    @entrypoint(checkpointer=MemorySaver())
    def flow(n: int) -> int:
        futures = [item(i) for i in range(n)]
        answer = interrupt("go?")
        return sum(f.result() for f in futures) + len(answer)

    for round_ in range(15):
        config = cfg(f"round-{round_}")
        assert flow.invoke(20, config)["__interrupt__"][0].value == "go?"
        assert flow.invoke(Command(resume="yes"), config) == sum(range(20)) + 3


def test_a_task_under_way_at_an_interrupt_finishes_and_is_not_run_again() -> None:
    # The entrypoint pauses while its task is still running: the task finishes and its
    # result is saved before the pause, as LangGraph's step waits for its tasks.
    calls: list[str] = []

    @task
    def slow(text: str) -> str:
        time.sleep(0.3)
        calls.append(text)
        return text + "!"

    @entrypoint(checkpointer=MemorySaver())
    def flow(text: str) -> dict[str, str]:
        pending = slow(text)
        answer = interrupt("ok?")
        return {"slow": pending.result(), "answer": answer}

    config = {"configurable": {"thread_id": "1"}}
    flow.invoke("hi", config)
    assert calls == ["hi"]  # finished before the pause was saved
    assert flow.invoke(Command(resume="yes"), config) == {"slow": "hi!", "answer": "yes"}
    assert calls == ["hi"]  # found again, not run again


async def test_an_async_task_under_way_at_an_interrupt_finishes_and_is_not_run_again() -> None:
    calls: list[str] = []

    @task
    async def slow(text: str) -> str:
        await asyncio.sleep(0.3)
        calls.append(text)
        return text + "!"

    @entrypoint(checkpointer=MemorySaver())
    async def flow(text: str) -> dict[str, str]:
        pending = slow(text)
        answer = interrupt("ok?")
        return {"slow": await pending, "answer": answer}

    config = {"configurable": {"thread_id": "1"}}
    await flow.ainvoke("hi", config)
    assert calls == ["hi"]
    assert await flow.ainvoke(Command(resume="yes"), config) == {"slow": "hi!", "answer": "yes"}
    assert calls == ["hi"]
