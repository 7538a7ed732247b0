"""``StreamChannel``: one projection of a run stream, a queue its single consumer
drains while its own iteration drives the run (no thread, no background task)."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from ironloop.stream._mux import StreamMux

__all__ = ["StreamChannel"]

T = TypeVar("T")

#: What ``StreamChannel._take`` returns when the channel ended / must pull more.
_END, _MORE = object(), object()


class StreamChannel(Generic[T]):
    """A queue of a projection's items for one consumer (``tee(n)`` for more).

    A ``name`` makes every ``push`` also an event of the run's main log (method
    ``name`` for a native transformer's channel, ``custom:<name>`` otherwise).
    Items are kept only once a consumer subscribed (iterated), so a projection
    nobody reads costs nothing. The mux binds the channel to the sync or the async
    lane and wires the pump: when the queue is empty, the consumer's next step
    pulls one more event from the graph."""

    def __init__(self, name: str | None = None, *, maxlen: int | None = None) -> None:
        if maxlen is not None and maxlen <= 0:
            raise ValueError(f"StreamChannel maxlen must be a positive int or None, got {maxlen}")
        self.name = name
        #: (push stamp, item): the stamps order items across channels (``interleave``).
        self._items: deque[tuple[int, T]] = deque()
        self._maxlen = maxlen
        self._closed = False
        self._error: BaseException | None = None
        self._is_async: bool | None = None
        self._subscribed = False
        self._request_more: Callable[[], bool] | None = None
        self._arequest_more: Callable[[], Awaitable[bool]] | None = None
        self._wire_fn: Callable[[T], None] | None = None
        self._mux: StreamMux | None = None

    def _bind_mux(self, mux: StreamMux) -> None:
        self._mux = mux

    def _bind(self, *, is_async: bool) -> None:
        """Fixes the lane (once): only the matching iteration works afterwards."""
        if self._is_async is not None:
            raise RuntimeError("StreamChannel is already bound to a run stream")
        self._is_async = is_async

    def _wire(self, fn: Callable[[T], None]) -> None:
        self._wire_fn = fn

    def push(self, item: T) -> None:
        """Adds an item (kept once subscribed), and logs it as an event when wired."""
        if self._subscribed:
            if self._closed:
                raise RuntimeError("Cannot push to a closed StreamChannel: its run ended")
            stamp = self._mux._next_push_seq() if self._mux is not None else 0
            self._items.append((stamp, item))
        if self._wire_fn is not None:
            self._wire_fn(item)

    def close(self) -> None:
        """No more items: the consumer's iteration ends once the queue is empty."""
        self._closed = True

    def fail(self, err: BaseException) -> None:
        """No more items: the consumer's iteration raises ``err`` once drained."""
        self._error = err
        self._closed = True

    def _subscribe(self, is_async: bool) -> None:
        if self._is_async is None:
            raise TypeError(
                "StreamChannel has not been bound yet: register its transformer with a "
                "run stream (stream_events(version='v3')) before iterating it"
            )
        if self._is_async != is_async:
            raise TypeError(
                "This StreamChannel is bound to async mode: use 'async for' instead."
                if self._is_async
                else "This StreamChannel is bound to sync mode: use 'for' instead."
            )
        if self._subscribed:
            how = ".atee(n)" if is_async else ".tee(n)"
            raise RuntimeError(f"StreamChannel already has a subscriber; use {how} for fan-out.")
        self._subscribed = True

    def _take(self) -> Any:
        """The next queued item; ``_END`` when the channel ended (raising its
        error); ``_MORE`` when the run must be pulled first."""
        if self._items:
            return self._items.popleft()[1]
        if self._closed:
            if self._error is not None:
                raise self._error
            return _END
        return _MORE

    def __iter__(self) -> Iterator[T]:
        self._subscribe(False)
        return self._cursor()

    def _went_on(self, pulled: bool) -> bool:
        """Whether a cursor whose queue was empty goes on after pulling the run once
        (``pulled``: what the pull returned): the run went on, or left items or the
        channel's end."""
        return pulled or bool(self._items) or self._closed

    def _cursor(self) -> Iterator[T]:
        while (item := self._take()) is not _END:
            if item is not _MORE:
                yield item
            elif (more := self._request_more) is None or not self._went_on(more()):
                return

    def __aiter__(self) -> AsyncIterator[T]:
        self._subscribe(True)
        return self._acursor()

    async def _acursor(self) -> AsyncIterator[T]:
        while (item := self._take()) is not _END:
            if item is not _MORE:
                yield item
            elif (amore := self._arequest_more) is None or not self._went_on(await amore()):
                return

    def tee(self, n: int = 2) -> tuple[Iterator[T], ...]:
        """``n`` independent iterators over this channel (subscribes it)."""
        if n < 1:
            raise ValueError(f"tee() requires n >= 1, got {n}")
        source = iter(self)
        buffers: list[deque[T]] = [deque() for _ in range(n)]
        done = [False]

        def branch(buf: deque[T]) -> Iterator[T]:
            while True:
                if buf:
                    yield buf.popleft()
                    continue
                if done[0]:
                    return
                try:
                    item = next(source)
                except StopIteration:
                    done[0] = True
                    return
                for b in buffers:
                    b.append(item)

        return tuple(branch(b) for b in buffers)

    def atee(self, n: int = 2) -> tuple[AsyncIterator[T], ...]:
        """``n`` independent async iterators over this channel (subscribes it); one
        pulls from the channel at a time."""
        import asyncio

        if n < 1:
            raise ValueError(f"atee() requires n >= 1, got {n}")
        source = aiter(self)
        buffers: list[deque[T]] = [deque() for _ in range(n)]
        state: dict[str, Any] = {"done": False, "error": None}
        lock = asyncio.Lock()

        async def branch(buf: deque[T]) -> AsyncIterator[T]:
            while True:
                if buf:
                    yield buf.popleft()
                    continue
                if state["done"]:
                    if state["error"] is not None:
                        raise state["error"]
                    return
                async with lock:
                    if buf or state["done"]:
                        continue
                    try:
                        item = await anext(source)
                    except StopAsyncIteration:
                        state["done"] = True
                        continue
                    except Exception as e:
                        state["done"], state["error"] = True, e
                        continue
                    for b in buffers:
                        b.append(item)

        return tuple(branch(b) for b in buffers)
