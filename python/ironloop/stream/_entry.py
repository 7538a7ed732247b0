"""``stream_events(version="v3")`` / ``astream_events(version="v3")`` of a compiled
graph, an entrypoint or an agent: one implementation for both lanes, over the
graph's ``stream(..., stream_mode=[...], subgraphs=True, version="v2")``."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from ironloop.stream._mux import StreamMux, TransformerFactory
from ironloop.stream._types import StreamTransformer
from ironloop.stream.run_stream import AsyncGraphRunStream, GraphRunStream

__all__ = ["astream_v3", "check_version", "factories_of", "stream_v3"]

#: Set in the context a v3 run's tasks inherit: their LangChain models send
#: langchain-core's protocol events to ``messages`` (``_langchain_v3``).
v3_messages: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "ironloop_stream_v3_messages", default=False
)


@contextlib.contextmanager
def marked() -> Iterator[None]:
    """Runs started (sync) or stepped (async) inside are v3 runs."""
    token = v3_messages.set(True)
    try:
        yield
    finally:
        v3_messages.reset(token)


@contextlib.contextmanager
def run_scope(version: str) -> Iterator[None]:
    """Where a run is started: only a ``version="v2"`` run (what a v3 run streams
    over) keeps a v3 run's mark; any other (a node's own ``stream(stream_mode=
    "messages")``) streams v1 chunks, as LangGraph's."""
    if version == "v2" or not v3_messages.get():
        yield
        return
    token = v3_messages.set(False)
    try:
        yield
    finally:
        v3_messages.reset(token)


async def amarked(source: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``source`` (a graph's ``astream``) stepped in a v3-marked context."""
    try:
        while True:
            with marked():
                try:
                    item = await anext(source)
                except StopAsyncIteration:
                    return
            yield item
    finally:
        await source.aclose()  # type: ignore[attr-defined]


#: What a v3 run decides itself: the modes its transformers need, and subgraphs
#: always (their events reach the subgraph handles).
_OWNED = ("stream_mode", "subgraphs")


def factories_of(specs: Sequence[Any] | None) -> list[TransformerFactory]:
    """``transformers=``: classes or ``factory(scope)`` callables, so each
    subgraph's scope gets its own; an instance cannot be copied into one."""
    out: list[TransformerFactory] = []
    for spec in specs or ():
        if isinstance(spec, StreamTransformer):
            raise TypeError(
                "stream_events(version='v3') transformers must be scope-aware callables, "
                f"got pre-built instance {type(spec).__name__}. Pass the transformer class "
                "or a factory like `lambda scope: MyTransformer(scope, ...)`."
            )
        if not callable(spec):
            raise TypeError(
                "stream_events(version='v3') transformers must be scope-aware callables "
                f"(a StreamTransformer class or `lambda scope: ...`), got {type(spec).__name__}"
            )
        out.append(spec)
    return out


def check_version(version: str) -> None:
    """``stream_events`` has events for ``version="v3"`` only (LangChain has no
    synchronous v1 / v2 events either)."""
    if version != "v3":
        raise NotImplementedError(
            f"stream_events(version={version!r}) is not available synchronously (nor in "
            "langchain-core): use version='v3', or astream_events for 'v1' / 'v2'"
        )


def _scope(config: Any) -> tuple[str, ...]:
    """The namespace the caller runs under (a run started inside a node): the
    native projections follow that level's events."""
    ns = ((config or {}).get("configurable") or {}).get("checkpoint_ns")
    return tuple(ns.split("|")) if ns else ()


def _mux(graph: Any, config: Any, transformers: Any, is_async: bool) -> StreamMux:
    from ironloop.stream.transformers import (
        LifecycleTransformer,
        MessagesTransformer,
        SubgraphTransformer,
        ValuesTransformer,
    )

    builtin: list[TransformerFactory] = [
        ValuesTransformer,
        MessagesTransformer,
        LifecycleTransformer,
        SubgraphTransformer,
    ]
    own = factories_of(getattr(graph, "stream_transformers", ()))
    return StreamMux(
        factories=[*builtin, *own, *factories_of(transformers)],
        scope=_scope(config),
        is_async=is_async,
    )


def _modes(mux: StreamMux) -> list[str]:
    """The union of the transformers' ``required_stream_modes``, in a stable order."""
    modes: dict[str, None] = {}
    for transformer in mux._transformers:
        modes.update(dict.fromkeys(getattr(transformer, "required_stream_modes", ())))
    return list(modes)


def _prepared(graph: Any, config: Any, transformers: Any, kwargs: dict[str, Any], is_async: bool) -> tuple[StreamMux, dict[str, Any]]:  # fmt: skip
    if clash := [k for k in _OWNED if k in kwargs]:
        raise TypeError(
            f"stream_events(version='v3') / astream_events(version='v3') do not accept "
            f"{', '.join(clash)}; v3 owns these (stream_mode is built from the "
            "transformers' required_stream_modes, subgraphs is always True)."
        )
    mux = _mux(graph, config, transformers, is_async)
    # The run options a v3 run always names (None when the caller did not).
    named = dict.fromkeys(("interrupt_before", "interrupt_after", "control"))
    return mux, {**named, **kwargs, "stream_mode": _modes(mux), "subgraphs": True, "version": "v2"}


def stream_v3(
    stream: Callable[..., Any], graph: Any, input: Any, config: Any, transformers: Any, kwargs: dict[str, Any]
) -> GraphRunStream:  # fmt: skip
    """The sync run stream of ``stream`` (the graph's ``stream`` method)."""
    from ironloop.stream._chunk_events import chunk_events

    mux, options = _prepared(graph, config, transformers, kwargs, False)
    with marked():  # the run's tasks take their context from here
        parts = iter(stream(input, config, **options))
    return GraphRunStream(chunk_events(parts), mux)


async def astream_v3(
    astream: Callable[..., Any], graph: Any, input: Any, config: Any, transformers: Any, kwargs: dict[str, Any]
) -> AsyncGraphRunStream:  # fmt: skip
    """The async run stream of ``astream`` (the graph's ``astream`` method)."""
    from ironloop.stream._chunk_events import achunk_events

    mux, options = _prepared(graph, config, transformers, kwargs, True)
    parts = amarked(aiter(astream(input, config, **options)))
    return AsyncGraphRunStream(achunk_events(parts), mux)
