"""The run streams ``stream_events(version="v3")`` returns: a run the caller drives
by iterating any of its projections, its raw events, or by asking its ``output``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

from ironloop.stream._convert import convert_to_protocol_event
from ironloop.stream._mux import StreamMux
from ironloop.stream._types import ProtocolEvent
from ironloop.stream.stream_channel import StreamChannel

if TYPE_CHECKING:
    import asyncio

__all__ = ["AsyncGraphRunStream", "AsyncSubgraphRunStream", "GraphRunStream", "SubgraphRunStream"]


class _RunBase:
    """What both lanes share: the projections as attributes, and the run's latest
    state and interrupts, seen on its own scope's ``values`` events."""

    values: StreamChannel[dict[str, Any]]
    messages: StreamChannel[Any]
    lifecycle: StreamChannel[Any]
    subgraphs: StreamChannel[Any]
    updates: StreamChannel[dict[str, Any]]
    custom: StreamChannel[Any]
    checkpoints: StreamChannel[dict[str, Any]]
    debug: StreamChannel[dict[str, Any]]
    tasks: StreamChannel[dict[str, Any]]

    def _setup(self, mux: StreamMux) -> None:
        self._mux = mux
        self.extensions: Mapping[str, Any] = MappingProxyType(mux.extensions)
        self._exhausted = False
        self._latest: Any = None
        self._interrupted = False
        self._interrupts: list[Any] = []
        self._scope_list = list(mux.scope)
        for key in mux.native_keys:
            setattr(self, key, mux.extensions[key])

    def __getattr__(self, name: str) -> NoReturn:
        # Only reached for names that are not set: a projection not registered.
        mux = self.__dict__.get("_mux")
        known = ", ".join(sorted(mux.native_keys)) if mux is not None else ""
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r} "
            f"(registered projections: {known or 'none'})"
        )

    def _observe_event(self, event: ProtocolEvent) -> None:
        if event["method"] != "values" or event["params"]["namespace"] != self._scope_list:
            return
        self._latest = event["params"]["data"]
        if interrupts := event["params"].get("interrupts", ()):
            self._interrupted = True
            self._interrupts.extend(interrupts)

    def _raise_failure(self) -> None:
        if (err := self._mux._events._error) is not None:
            raise err


class GraphRunStream(_RunBase):
    """A run driven by the caller's iteration (no thread): ``run.values``,
    ``run.messages``, ``run.lifecycle``, ``run.subgraphs`` and the other
    registered projections (each for one consumer: ``tee(n)`` for more),
    ``iter(run)`` for the raw protocol events, ``run.output`` /
    ``run.interrupted`` / ``run.interrupts`` to run it to its end. As a context
    manager, leaving it stops the run."""

    def __init__(self, graph_iter: Iterator[Any] | None, mux: StreamMux, *, wire_pump: bool = True) -> None:  # fmt: skip
        self._graph_iter = graph_iter
        self._setup(mux)
        if wire_pump:
            mux.bind_pump(self._pump_next)

    def _pump_next(self) -> bool:
        """Pulls one part from the graph through the mux; ``False`` once the run
        ended (its end or failure reaches every projection)."""
        if self._exhausted or self._graph_iter is None:
            return False
        try:
            event = convert_to_protocol_event(next(self._graph_iter))
        except StopIteration:
            self._exhausted = True
            self._mux.close()
            return False
        except Exception as e:
            self._exhausted = True
            self._mux.fail(e)
            return False
        self._observe_event(event)
        try:
            self._mux.push(event)
        except Exception as e:
            # A transformer refused the event (PIIMiddleware's "block"): the run stops
            # there, its error reaching every projection, as LangGraph's mux fails.
            self._exhausted = True
            graph_iter, self._graph_iter = self._graph_iter, None
            if (close := getattr(graph_iter, "close", None)) is not None:
                close()
            self._mux.fail(e)
            return False
        return True

    def _drive(self) -> None:
        while self._pump_next():
            pass
        self._raise_failure()

    @property
    def output(self) -> Any:
        """The run's final state (runs it to its end; raises its error)."""
        self._drive()
        return self._latest

    @property
    def interrupted(self) -> bool:
        """Whether the run paused on an interrupt (runs it to its end)."""
        self._drive()
        return self._interrupted

    @property
    def interrupts(self) -> list[Any]:
        """The run's interrupts (runs it to its end)."""
        self._drive()
        return self._interrupts

    def abort(self) -> None:
        """Stops the run now (its running nodes are cancelled); idempotent."""
        if self._exhausted:
            return
        self._exhausted = True
        graph_iter, self._graph_iter = self._graph_iter, None
        close = getattr(graph_iter, "close", None)
        for step in (close, self._mux.close):
            try:
                if step is not None:
                    step()
            except Exception:  # stopping: nothing is waiting for errors
                pass

    def __enter__(self) -> GraphRunStream:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:  # fmt: skip
        self.abort()

    def __iter__(self) -> Iterator[ProtocolEvent]:
        return iter(self._mux._events)

    def interleave(self, *names: str) -> Iterator[tuple[str, Any]]:
        """``(name, item)`` of the named projections, in the order they were pushed."""
        from ironloop.stream._interleave import interleave

        return interleave(self, names)


class AsyncGraphRunStream(_RunBase):
    """``GraphRunStream`` for ``async for``: concurrent consumers share one pump
    (one pulls from the graph, the others wait for its step). ``output()``,
    ``interrupted()`` and ``interrupts()`` are coroutines; ``async with`` stops the
    run on exit."""

    def __init__(self, graph_aiter: AsyncIterator[Any] | None, mux: StreamMux, *, wire_pump: bool = True) -> None:  # fmt: skip
        import asyncio

        self._graph_aiter = graph_aiter
        self._setup(mux)
        self._cond = asyncio.Condition()
        self._pumping = False
        self._pull: asyncio.Future[Any] | None = None
        self._aborting = False
        if wire_pump:
            mux.bind_apump(self._apump_next)

    async def _apump_next(self) -> bool:
        """One step of the run, by this caller or (when one is under way) by the
        caller already pulling: an async iterator cannot be advanced twice at once."""
        async with self._cond:
            if self._exhausted or self._graph_aiter is None:
                return False
            if self._pumping:
                await self._cond.wait()
                return not self._exhausted
            self._pumping = True
        try:
            return await self._step(self._graph_aiter)
        finally:
            async with self._cond:
                self._pumping = False
                self._cond.notify_all()

    async def _step(self, source: AsyncIterator[Any]) -> bool:
        import asyncio

        try:
            self._pull = asyncio.ensure_future(source.__anext__())
            try:
                part = await self._pull
            except asyncio.CancelledError:
                if self._aborting:
                    self._exhausted = True
                    return False
                self._pull.cancel()
                raise
            finally:
                self._pull = None
        except StopAsyncIteration:
            self._exhausted = True
            await self._mux.aclose()
            return False
        except Exception as e:
            self._exhausted = True
            await self._mux.afail(e)
            return False
        event = convert_to_protocol_event(part)
        self._observe_event(event)
        try:
            await self._mux.apush(event)
        except Exception as e:  # a transformer refused the event: see the sync lane
            self._exhausted = True
            self._graph_aiter = None
            if (aclose := getattr(source, "aclose", None)) is not None:
                await aclose()
            await self._mux.afail(e)
            return False
        return True

    async def _drive(self) -> None:
        while await self._apump_next():
            pass
        self._raise_failure()

    async def output(self) -> Any:
        """The run's final state (runs it to its end; raises its error)."""
        await self._drive()
        return self._latest

    async def interrupted(self) -> bool:
        """Whether the run paused on an interrupt (runs it to its end)."""
        await self._drive()
        return self._interrupted

    async def interrupts(self) -> list[Any]:
        """The run's interrupts (runs it to its end)."""
        await self._drive()
        return self._interrupts

    async def abort(self) -> None:
        """Stops the run now: a pull under way is cancelled, the graph's iterator
        closed (its running nodes cancelled); idempotent."""
        import asyncio

        async with self._cond:
            if self._exhausted:
                return
            self._exhausted = self._aborting = True
            source, self._graph_aiter = self._graph_aiter, None
            pull = self._pull
            self._cond.notify_all()
        if pull is not None and not pull.done():
            pull.cancel()
            try:
                await pull
            except (asyncio.CancelledError, Exception):
                pass
        for step in (getattr(source, "aclose", None), self._mux.aclose):
            try:
                if step is not None:
                    await step()
            except Exception:  # stopping: nothing is waiting for errors
                pass

    async def __aenter__(self) -> AsyncGraphRunStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:  # fmt: skip
        await self.abort()

    def __aiter__(self) -> AsyncIterator[ProtocolEvent]:
        return aiter(self._mux._events)


class _SubgraphHandle:
    """A subgraph's handle: where it runs (``path``, ``graph_name``, the task that
    started it as ``trigger_call_id``) and how it ended (``status``: started,
    completed, failed, interrupted or drained; ``error``). Its projections are
    filled by the parent run, which its cursors drive."""

    path: tuple[str, ...]
    graph_name: str | None
    trigger_call_id: str | None
    status: str
    error: str | None
    _seen_terminal: bool

    def _init_handle(self, path: tuple[str, ...], graph_name: str | None, trigger_call_id: str | None) -> None:  # fmt: skip
        self.path, self.graph_name, self.trigger_call_id = path, graph_name, trigger_call_id
        self.status, self.error, self._seen_terminal = "started", None, False

    def _ended(self) -> bool:
        mux: StreamMux = self._mux  # type: ignore[attr-defined]
        return bool(self._exhausted or self._seen_terminal or mux._events._closed)  # type: ignore[attr-defined]


class SubgraphRunStream(GraphRunStream, _SubgraphHandle):
    """A subgraph of a ``stream_events`` run, found on ``run.subgraphs``."""

    def __init__(self, mux: StreamMux, *, path: tuple[str, ...], graph_name: str | None = None, trigger_call_id: str | None = None) -> None:  # fmt: skip
        self._parent_pump_fn: Callable[[], bool] | None = mux._pump_fn
        super().__init__(None, mux, wire_pump=False)
        self._init_handle(path, graph_name, trigger_call_id)

    def _pump_next(self) -> bool:
        if self._ended() or self._parent_pump_fn is None:
            return False
        return self._parent_pump_fn()


class AsyncSubgraphRunStream(AsyncGraphRunStream, _SubgraphHandle):
    """A subgraph of an ``astream_events`` run, found on ``run.subgraphs``."""

    def __init__(self, mux: StreamMux, *, path: tuple[str, ...], graph_name: str | None = None, trigger_call_id: str | None = None) -> None:  # fmt: skip
        self._parent_apump_fn: Callable[[], Awaitable[bool]] | None = mux._apump_fn
        super().__init__(None, mux, wire_pump=False)
        self._init_handle(path, graph_name, trigger_call_id)

    async def _apump_next(self) -> bool:
        if self._ended() or self._parent_apump_fn is None:
            return False
        return await self._parent_apump_fn()
