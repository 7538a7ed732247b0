"""Event-loop plumbing used by the Rust engine. Not public API."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections.abc import Coroutine
from typing import Any, Callable

logger = logging.getLogger("ironloop")

_bg_loop: asyncio.AbstractEventLoop | None = None
_bg_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The loop that runs async tools for sync callers (``invoke``), on its own thread."""
    global _bg_loop
    with _bg_lock:
        if _bg_loop is None or _bg_loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="ironloop-async-tools", daemon=True
            )
            thread.start()
            _bg_loop = loop
        return _bg_loop


class _TaskHandle:
    """An asyncio task started from another thread, cancellable from any thread."""

    __slots__ = ("_cancelled", "_loop", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._task: asyncio.Future[Any] | None = None
        self._cancelled = False

    def _start(self, coro: Coroutine[Any, Any, Any], done: Callable[[Any], None]) -> None:
        if self._cancelled:
            coro.close()
            return
        self._task = self._loop.create_task(coro)
        self._task.add_done_callback(done)

    def cancel(self) -> None:
        self._cancelled = True
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()


def start_task(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any],
    done: Callable[[Any], None],
    context: contextvars.Context,
) -> _TaskHandle:
    """Schedules ``coro`` as a task on ``loop`` in a copy of ``context``; ``done`` gets
    the task when it finishes."""
    handle = _TaskHandle(loop)
    loop.call_soon_threadsafe(handle._start, coro, done, context=context.copy())
    return handle
