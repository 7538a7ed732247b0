"""``GraphRunStream.interleave``: several projections read as one, in push order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ironloop.stream.stream_channel import StreamChannel


def _subscribed(run: Any, names: Sequence[str]) -> dict[str, StreamChannel[Any]]:
    channels: dict[str, StreamChannel[Any]] = {}
    for name in names:
        ch = run.extensions[name]
        if not isinstance(ch, StreamChannel):
            raise TypeError(
                f"interleave() requires StreamChannel projections, got "
                f"{type(ch).__name__} for {name!r}"
            )
        if ch._is_async is None:
            raise TypeError(f"StreamChannel {name!r} has not been bound to a run yet")
        if ch._is_async:
            raise TypeError(
                f"StreamChannel {name!r} is bound to async mode: sync interleave() "
                "cannot consume async channels."
            )
        if ch._subscribed:
            raise RuntimeError(
                f"StreamChannel {name!r} already has a subscriber; use .tee(n) for fan-out."
            )
        channels[name] = ch
    return channels


def interleave(run: Any, names: Sequence[str]) -> Iterator[tuple[str, Any]]:
    """Yields the oldest queued item of the named channels (by push stamp), pulling
    from the run when all are empty; ends when every channel has ended. The channels
    are released when this ends."""
    channels = _subscribed(run, names)
    for ch in channels.values():
        ch._subscribed = True
    try:
        live = dict(channels)
        while live:
            queued = [(ch._items[0][0], name) for name, ch in live.items() if ch._items]
            if queued:
                name = min(queued)[1]
                yield name, live[name]._items.popleft()[1]
                continue
            for name, ch in list(live.items()):
                if ch._closed:
                    if ch._error is not None:
                        raise ch._error
                    del live[name]
            pump = run._mux._pump_fn
            if live and (pump is None or not pump()):
                if not any(ch._items or ch._closed for ch in live.values()):
                    return
    finally:
        for ch in channels.values():
            ch._subscribed = False
