"""Shared helpers for the Python test suite.

* ``async def`` tests run under ``asyncio.run`` with a time limit (no pytest-asyncio
  needed); a hung test fails instead of hanging the suite.
* ``make_ai`` builds an ``AIMessage`` with tool calls ``c0, c1, ...``.
* ``gauge`` measures peak concurrency of tool calls (sync or async).
* ``saver`` runs a test once per checkpointer: MemorySaver, SqliteSaver (a fresh file)
  and PostgresSaver (a fresh schema on the tests' server, see ``pg_support``).
* A watchdog dumps every thread's stack and exits if one test runs far too long
  (a deadlock in the engine should not hang CI).
"""

from __future__ import annotations

import asyncio
import faulthandler
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pg_support import new_saver, temp_schema

from ironloop import MemorySaver, SqliteSaver
from ironloop.messages import AIMessage

ASYNC_TEST_TIMEOUT = 20.0
WATCHDOG_SECONDS = 60.0


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Runs ``async def`` tests on a fresh event loop."""
    func = pyfuncitem.obj
    if not inspect.iscoroutinefunction(func) or pyfuncitem.get_closest_marker("asyncio"):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}

    async def run() -> None:
        await asyncio.wait_for(func(**kwargs), ASYNC_TEST_TIMEOUT)

    asyncio.run(run())
    return True


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "watchdog(seconds): this test's own watchdog limit (default 60 s), for the few "
        "that drive many processes and run close to the default on a loaded machine",
    )


@pytest.fixture(autouse=True)
def _watchdog(request: pytest.FixtureRequest) -> Any:
    marker = request.node.get_closest_marker("watchdog")
    seconds = float(marker.args[0]) if marker else WATCHDOG_SECONDS
    faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        yield MemorySaver()
    elif request.param == "sqlite":
        s = SqliteSaver(str(tmp_path / "checkpoints.db"))
        yield s
        s.close()
    else:
        with temp_schema() as schema, new_saver(schema) as s:
            yield s


def _build_ai(*calls: tuple[str, Any], content: str = "", id: str | None = None) -> AIMessage:
    """``make_ai(("add", {"a": 1}), ("mul", {...}))``: one AIMessage whose tool calls
    have the ids ``c0, c1, ...`` in order."""
    tool_calls = [
        {"name": name, "args": args, "id": f"c{i}"} for i, (name, args) in enumerate(calls)
    ]
    if any(not isinstance(args, dict) for _, args in calls):
        # Arguments that are no object (what a provider may send): langchain-core's
        # AIMessage refuses them, so the answer is given as the dict a model returns.
        d: Any = {"role": "assistant", "content": content, "tool_calls": tool_calls}
        return d if id is None else {**d, "id": id}
    if id is None:
        return AIMessage(content=content, tool_calls=tool_calls)
    return AIMessage(content=content, tool_calls=tool_calls, id=id)


@pytest.fixture
def make_ai() -> Callable[..., AIMessage]:
    return _build_ai


class Gauge:
    """Counts calls in flight; ``with gauge:`` around the body of a tool."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current = 0
        self.peak = 0
        self.total = 0

    def __enter__(self) -> Gauge:
        with self._lock:
            self.current += 1
            self.total += 1
            self.peak = max(self.peak, self.current)
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.current -= 1

    def reset(self) -> None:
        with self._lock:
            self.current = self.peak = self.total = 0


@pytest.fixture
def gauge() -> Gauge:
    return Gauge()
