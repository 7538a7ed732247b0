"""The v3 stream-events protocol's event envelope and its extension point.

A run's v2 stream parts become ``ProtocolEvent``s (``_convert``); a ``StreamMux``
passes each through its ``StreamTransformer``s, which build the run stream's
projections (``run.values``, ``run.lifecycle`` ...) as ``StreamChannel``s."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from typing_extensions import NotRequired, TypedDict

from ironloop.stream.stream_channel import StreamChannel

if TYPE_CHECKING:
    import asyncio

__all__ = ["ProtocolEvent", "StreamTransformer", "transformer_requires_async"]

_log = logging.getLogger(__name__)


class _ProtocolEventParams(TypedDict):
    """Where the event happened (``namespace``), when (wall-clock milliseconds: use
    the event's ``seq`` to order), and its payload; ``values`` events carry the
    run's ``interrupts``."""

    namespace: list[str]
    timestamp: int
    data: Any
    interrupts: NotRequired[tuple[Any, ...]]


class ProtocolEvent(TypedDict):
    """One event of a run: ``method`` is the stream mode it came from (``values``,
    ``messages``, ``custom``...) or a projection's channel name (``lifecycle``,
    ``custom:<name>``). The root mux numbers the events it logs in ``seq``."""

    type: Literal["event"]
    event_id: NotRequired[str]
    seq: NotRequired[int]
    method: str
    params: _ProtocolEventParams


class StreamTransformer(ABC):
    """A projection of a run's events: ``init`` returns the projection (a dict whose
    ``StreamChannel`` values the mux binds, and forwards to the event log when the
    channel has a name), ``process`` sees every event (returning ``False`` keeps the
    event out of the main log), ``finalize`` / ``fail`` end it.

    Class attributes: ``required_stream_modes`` (the graph's stream modes the
    transformer reads: the run asks the graph for their union), ``before_builtins``
    (run ahead of the built-in transformers, e.g. to redact text before the
    messages projection copies it), ``requires_async`` / ``supports_sync`` (which
    lane it may run on: overriding ``aprocess`` / ``afinalize`` / ``afail`` makes a
    transformer async-only unless ``supports_sync``). A transformer whose class sets
    ``_native = True`` has its projection keys set as attributes of the run stream.
    """

    requires_async: ClassVar[bool] = False
    supports_sync: ClassVar[bool] = False
    required_stream_modes: ClassVar[tuple[str, ...]] = ()
    before_builtins: ClassVar[bool] = False

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        #: The namespace of the mux this transformer belongs to (``()``: the root).
        self.scope: tuple[str, ...] = scope

    @abstractmethod
    def init(self) -> dict[str, Any]:
        """The projection: its keys are the run stream's ``extensions``."""

    def _on_register(self, mux: Any) -> None:
        """Called once the mux has registered this transformer (no-op by default)."""
        return None

    def process(self, event: ProtocolEvent) -> bool:
        """Sees one event on the sync lane; ``False`` keeps it out of the main log."""
        raise NotImplementedError(
            f"{type(self).__name__} must override process() or aprocess() to see events"
        )

    async def aprocess(self, event: ProtocolEvent) -> bool:
        """Sees one event on the async lane (``process`` unless overridden); the
        next transformer waits for it."""
        return self.process(event)

    def finalize(self) -> None:
        """The run ended normally. The mux closes the projection's channels itself."""
        return None

    async def afinalize(self) -> None:
        """``finalize`` on the async lane, after every ``schedule``d task ended."""
        self.finalize()

    def fail(self, err: BaseException) -> None:
        """The run failed with ``err``. The mux fails the projection's channels."""
        return None

    async def afail(self, err: BaseException) -> None:
        """``fail`` on the async lane, after ``schedule``d tasks were cancelled."""
        self.fail(err)

    def schedule(
        self, coro: Coroutine[Any, Any, Any], *, on_error: Literal["log", "raise"] = "log"
    ) -> asyncio.Task[Any]:
        """Runs ``coro`` as a task the mux waits for before ``afinalize`` (and
        cancels on failure). ``on_error="log"`` logs its exception; ``"raise"`` fails
        the run with it. Only under ``astream_events``: there is no loop otherwise."""
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                f"{type(self).__name__}.schedule() needs a running event loop: run it "
                "under astream_events(version='v3'), not stream_events, and set "
                "requires_async = True on the class so a sync run refuses it at once"
            ) from None
        task = asyncio.create_task(_logged(coro) if on_error == "log" else coro)
        tasks = self._scheduled()
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return task

    def _scheduled(self) -> set[asyncio.Task[Any]]:
        """The tasks ``schedule`` started and not ended (made on first use, so a
        subclass need not call ``super().__init__``)."""
        tasks: set[asyncio.Task[Any]] | None = self.__dict__.get("_stream_scheduled_tasks")
        if tasks is None:
            tasks = self.__dict__["_stream_scheduled_tasks"] = set()
        return tasks


class _PumpedTransformer(StreamTransformer):
    """A native transformer whose projection is one log of streams (a message's, a
    tool call's) that pull the run when their queue is empty: the mux hands it the
    pull functions of both lanes (``StreamMux.bind_pump`` / ``bind_apump``);
    ``_is_async`` says which lane was bound last."""

    _native = True

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Any] = StreamChannel()

    _pump_fn: Callable[[], bool] | None = None
    _apump_fn: Callable[[], Awaitable[bool]] | None = None
    _is_async = False

    def _bind_pump(self, fn: Callable[[], bool]) -> None:
        self._pump_fn, self._is_async = fn, False

    def _bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        self._apump_fn, self._is_async = fn, True


async def _logged(coro: Coroutine[Any, Any, Any]) -> Any:
    import asyncio

    try:
        return await coro
    except asyncio.CancelledError:
        raise
    except BaseException:
        _log.exception("a task scheduled by a StreamTransformer failed")
        return None


def transformer_requires_async(transformer: StreamTransformer) -> bool:
    """Whether ``transformer`` can only run under ``astream_events``."""
    if transformer.requires_async:
        return True
    if transformer.supports_sync:
        return False
    cls = type(transformer)
    return any(
        getattr(cls, name) is not getattr(StreamTransformer, name)
        for name in ("aprocess", "afinalize", "afail")
    )
