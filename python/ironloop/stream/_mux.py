"""``StreamMux``: routes a run's protocol events through its transformers into the
main event log, and owns the projections they build."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ironloop.stream._types import ProtocolEvent, StreamTransformer, transformer_requires_async
from ironloop.stream.stream_channel import StreamChannel

if TYPE_CHECKING:
    import asyncio

__all__ = ["StreamMux", "TransformerFactory"]

#: Builds a transformer for a mux's scope (a transformer class is one).
TransformerFactory = Callable[[tuple[str, ...]], StreamTransformer]


class StreamMux:
    """The transformers of one scope (``()``: the run itself; a subgraph's
    namespace for a subgraph handle's mini-mux), their merged projections
    (``extensions``; ``native_keys`` are set on the run stream as attributes) and
    the main event log. ``factories`` are called with the scope, and again for each
    child scope; ``transformers`` are instances for this mux only. Within each, the
    ``before_builtins`` ones are registered first."""

    def __init__(
        self,
        transformers: list[StreamTransformer] | None = None,
        *,
        is_async: bool = False,
        factories: list[TransformerFactory] | None = None,
        scope: tuple[str, ...] = (),
        _assign_seq: bool = True,
    ) -> None:
        self.is_async = is_async
        self.scope = scope
        #: Only the root numbers events: a child shares the root's event objects.
        self._assign_seq = _assign_seq
        self._events: StreamChannel[ProtocolEvent] = StreamChannel()
        self._events._bind(is_async=is_async)
        self._events._bind_mux(self)
        self._transformers: list[StreamTransformer] = []
        self._channels: list[StreamChannel[Any]] = []
        self._seq = 0
        self._push_seq = 0
        self.extensions: dict[str, Any] = {}
        self.native_keys: set[str] = set()
        self._owners: dict[str, StreamTransformer] = {}
        self._factories = list(factories) if factories is not None else None
        self._pump_fn: Callable[[], bool] | None = None
        self._apump_fn: Callable[[], Awaitable[bool]] | None = None
        built = [factory(scope) for factory in factories or ()]
        for group in (built, list(transformers or ())):
            group.sort(key=lambda t: not getattr(t, "before_builtins", False))  # stable
            for transformer in group:
                self._register(transformer)

    def transformer_by_key(self, key: str) -> StreamTransformer | None:
        """The transformer whose projection has ``key``."""
        return self._owners.get(key)

    def _next_push_seq(self) -> int:
        self._push_seq += 1
        return self._push_seq

    def bind_pump(self, fn: Callable[[], bool]) -> None:
        """Makes ``fn`` (pull one event from the graph) what every projection's
        cursor calls when its queue is empty; child muxes inherit it."""
        self._pump_fn = fn
        self._bind_lane(fn, "_request_more", "_bind_pump")

    def bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        """``bind_pump`` for the async lane."""
        self._apump_fn = fn
        self._bind_lane(fn, "_arequest_more", "_bind_apump")

    def _bind_lane(self, fn: Callable[[], Any], channel_attr: str, binder: str) -> None:
        """``fn`` set as ``channel_attr`` of every channel, and handed to each
        transformer that has a ``binder`` method (see ``_PumpedTransformer``)."""
        for ch in (self._events, *self._channels):
            setattr(ch, channel_attr, fn)
        for transformer in self._transformers:
            if (bind := getattr(transformer, binder, None)) is not None:
                bind(fn)

    def _make_child(self, scope: tuple[str, ...]) -> StreamMux:
        """A mini-mux for a subgraph at ``scope``: fresh transformers from the same
        factories, driven by this run's pump."""
        if self._factories is None:
            raise RuntimeError(
                "StreamMux._make_child needs a mux built with factories=: transformer "
                "instances cannot be copied into a subgraph's scope"
            )
        child = StreamMux(
            factories=self._factories, is_async=self.is_async, scope=scope, _assign_seq=False
        )
        if self._pump_fn is not None:
            child.bind_pump(self._pump_fn)
        if self._apump_fn is not None:
            child.bind_apump(self._apump_fn)
        return child

    def _register(self, transformer: StreamTransformer) -> None:
        name = type(transformer).__name__
        if transformer_requires_async(transformer) and not self.is_async:
            raise RuntimeError(
                f"{name} requires an async run (it overrides aprocess/afinalize/afail "
                "or sets requires_async=True): use astream_events(version='v3'), not "
                "stream_events."
            )
        projection = transformer.init()
        if not isinstance(projection, dict):
            raise TypeError(
                f"StreamTransformer.init() must return a dict, got "
                f"{type(projection).__name__} from {name}"
            )
        if clash := sorted(set(projection) & set(self.extensions)):
            owned = ", ".join(f"{k!r} (owned by {type(self._owners[k]).__name__})" for k in clash)
            raise ValueError(
                f"Transformer {name} returned projection keys that conflict with "
                f"already-registered keys: {owned}"
            )
        native = bool(getattr(transformer, "_native", False))
        self._transformers.append(transformer)
        for value in projection.values():
            if isinstance(value, StreamChannel):
                self._adopt(value, native)
        self.extensions.update(projection)
        self._owners.update(dict.fromkeys(projection, transformer))
        if native:
            self.native_keys.update(projection)
        transformer._on_register(self)

    def _adopt(self, channel: StreamChannel[Any], native: bool) -> None:
        """Binds a projection's channel to this mux's lane; a named one's pushes
        also become events of the main log."""
        channel._bind(is_async=self.is_async)
        channel._bind_mux(self)
        self._channels.append(channel)
        if channel.name is not None:
            method = channel.name if native else f"custom:{channel.name}"
            channel._wire(lambda item: self._forward(method, item))

    def _log(self, event: ProtocolEvent) -> None:
        if self._assign_seq:
            self._seq += 1
            event["seq"] = self._seq
        self._events.push(event)

    def push(self, event: ProtocolEvent) -> None:
        """Passes ``event`` through every transformer, then logs it unless one of
        them returned ``False``. Its ``seq`` is given after the transformers ran, so
        the events their channels forwarded come first."""
        keep = True
        for transformer in self._transformers:
            keep = transformer.process(event) and keep
        if keep:
            self._log(event)

    async def apush(self, event: ProtocolEvent) -> None:
        """``push`` on the async lane (each ``aprocess`` awaited in turn)."""
        keep = True
        for transformer in self._transformers:
            keep = await transformer.aprocess(event) and keep
        if keep:
            self._log(event)

    def _end_channels(self, err: BaseException | None) -> None:
        for ch in (*self._channels, self._events):
            if not ch._closed:
                ch.fail(err) if err is not None else ch.close()

    def close(self) -> None:
        """The run ended: every transformer's ``finalize``, then every channel
        closed; the first ``finalize`` error is raised after."""
        first: BaseException | None = None
        for transformer in self._transformers:
            try:
                transformer.finalize()
            except BaseException as e:
                first = first or e
        self._end_channels(None)
        if first is not None:
            raise first

    def fail(self, err: BaseException) -> None:
        """The run failed: every transformer's ``fail``, every channel failed."""
        for transformer in self._transformers:
            try:
                transformer.fail(err)
            except BaseException:  # the run's error is the one to show
                pass
        self._end_channels(err)

    async def aclose(self) -> None:
        """``close`` on the async lane, once the scheduled tasks ended (the first
        one's error raised)."""
        import asyncio

        if pending := self._scheduled():
            results = await asyncio.gather(*pending, return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                    raise r
        first: BaseException | None = None
        for transformer in self._transformers:
            try:
                await transformer.afinalize()
            except BaseException as e:
                first = first or e
        self._end_channels(None)
        if first is not None:
            raise first

    async def afail(self, err: BaseException) -> None:
        """``fail`` on the async lane, once the scheduled tasks were cancelled."""
        import asyncio

        pending = self._scheduled()
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for transformer in self._transformers:
            try:
                await transformer.afail(err)
            except BaseException:  # the run's error is the one to show
                pass
        self._end_channels(err)

    def _scheduled(self) -> list[asyncio.Task[Any]]:
        return [
            task
            for transformer in self._transformers
            for task in getattr(transformer, "_stream_scheduled_tasks", ())
            if not task.done()
        ]

    def _forward(self, method: str, item: Any) -> None:
        """A named channel's push as an event of the log (not shown to the
        transformers: one pushing while it processes would see itself)."""
        self._log(
            {
                "type": "event",
                "method": method,
                "params": {"namespace": [], "timestamp": int(time.time() * 1000), "data": item},
            }
        )
