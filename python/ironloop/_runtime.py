"""Event-loop plumbing used by the Rust engine. Not public API."""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

logger = logging.getLogger("ironloop")

#: The running graph task's scratchpad (``interrupt()``, the stream writer).
task_var: contextvars.ContextVar[Any] = contextvars.ContextVar("ironloop_task")


def noop_writer(_payload: Any) -> None:
    """The stream writer of a task whose run does not stream ``custom`` (LangGraph's:
    a no-op)."""
    return None


def writer_of(scratch: Any) -> Any:
    """The ``custom`` stream writer of the task whose scratchpad is ``scratch`` (``None``:
    outside a task): as LangGraph's, a no-op unless the run streams ``custom`` (so a run
    that does not can share one runtime between its tasks)."""
    return scratch.write if scratch is not None and scratch.streams_custom else noop_writer


#: Inside an attempt of a node run under a ``retry_policy``: ``(attempt number from 1,
#: time.time() of the first attempt)``, for ``Runtime.execution_info``.
attempt_var: contextvars.ContextVar[tuple[int, float] | None] = contextvars.ContextVar(
    "ironloop_attempt", default=None
)

#: Inside an ``@task`` call under an idle timeout: its progress, which
#: ``runtime.heartbeat()`` touches (``ironloop._timeout.timed_task``).
call_progress: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "ironloop_call_progress", default=None
)

#: Held around the scratchpad calls that may run on several threads at once when a
#: task runs ``@task`` calls (``interrupt()``, a call's saved result, saving one): the
#: scratchpad is one Rust object, which refuses a change while another thread uses it.
scratch_lock = threading.RLock()

#: Inside ``@task`` calls: one counter per call being made here (the innermost last),
#: of the resume values its ``interrupt()`` s took (``ironloop.func``).
answers_var: contextvars.ContextVar[tuple[list[int], ...]] = contextvars.ContextVar(
    "ironloop_answers", default=()
)


#: Set by ``aupdate_state`` (on the worker thread it saves from): an ``async def``
#: routing function the update reaches is awaited there (``route_awaited``).
awaiting_routes: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "ironloop_awaiting_routes", default=False
)


def route_awaited(path: Any, name: str, input: Any) -> Any:
    """An ``async def`` routing function's answer where no event loop runs the graph:
    under ``aupdate_state`` it is awaited on a loop of its own (LangGraph awaits it
    there); anywhere else (``invoke``, ``update_state``) it is LangGraph 1.2's error,
    word for word."""
    if not awaiting_routes.get():
        raise TypeError(
            f'No synchronous function provided to "{name}".\nEither initialize with a '
            "synchronous function or invoke via the async API (ainvoke, astream, etc.)"
        )
    import asyncio

    return asyncio.run(path(input))


def stream_langchain_runs(scratch: Any) -> None:
    """Run in a task's context when its run streams ``messages`` or ``tools``: the
    LangChain chat models the node calls stream their chunks there, and the LangChain
    tools it calls their lifecycles (nothing without langchain-core, which cannot
    have made a model or tool unless imported)."""
    if "langchain_core" not in sys.modules:
        return
    if scratch.streams_messages:
        from ironloop.stream._entry import v3_messages

        if v3_messages.get():  # a task of a stream_events(version="v3") run
            from ironloop.stream._langchain_v3 import stream_events_to

            stream_events_to(scratch)
        else:
            from ironloop._langchain_stream import stream_tokens_to

            stream_tokens_to(scratch)
    if scratch.streams_tools:
        from ironloop._langchain_tool_stream import stream_tools_to

        stream_tools_to(scratch)


_loops: list[tuple[asyncio.AbstractEventLoop, threading.Thread]] = []
_loops_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The loop that runs async tools for a sync caller (``invoke``), on its own thread.

    A sync call made from one of these loops' threads (an async tool calling
    ``invoke``) gets the next loop: the caller's loop is blocked until it returns.
    """
    current = threading.current_thread()
    with _loops_lock:
        depth = next((i + 1 for i, (_, t) in enumerate(_loops) if t is current), 0)
        while len(_loops) <= depth:
            import asyncio  # only when an async call first needs a loop

            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name=f"ironloop-async-{len(_loops)}", daemon=True
            )
            thread.start()
            _loops.append((loop, thread))
        return _loops[depth][0]


class Escaped(Exception):
    """A ``KeyboardInterrupt`` or ``SystemExit`` raised by a coroutine ironloop runs,
    carried out of its asyncio task as an ordinary exception. Left as it is, asyncio
    lets it out of the event loop: the background loop's thread would die and every
    later async call of the process hang. The glue unwraps it and raises the original
    to the caller of ``invoke`` / ``ainvoke``."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(exc)
        self.exc = exc
