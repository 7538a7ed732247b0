"""Chunks as protocol events: the ``AIMessageChunk``s ironloop's engine streams for
its own models (and a LangChain model called by ironloop's agent), made into
langchain-core's content-block events for ``run.messages`` as they come.

LangChain's models in a v3 run send those events themselves
(``_langchain_v3.EventStream``); the engine's chunks are converted here, in the
run stream's source, so ``MessagesTransformer`` sees one protocol. A message ends
with its chunk marked ``chunk_position="last"``, with its task's result, or with
the run. The content blocks are langchain-core's own (its ``_compat_bridge``
conversion helpers, which its ``chunks_to_events`` uses), fed one chunk at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

__all__ = ["ChunkEvents", "achunk_events", "chunk_events"]


class _Message:
    """One message under way: its blocks by their source key (wire index, block so
    far), usage and metadata."""

    def __init__(self, ns: Any, meta: dict[str, Any]) -> None:
        self.ns, self.meta = ns, meta
        self.blocks: dict[Any, tuple[int, Any]] = {}
        self.usage: Any = None
        self.response_metadata: dict[str, Any] = {}

    def feed(self, chunk: Any, first: bool) -> list[dict[str, Any]]:
        from langchain_core.language_models import _compat_bridge as bridge

        events: list[dict[str, Any]] = []
        if chunk.response_metadata:
            self.response_metadata.update(chunk.response_metadata)
        if first:
            events.append(dict(bridge._build_message_start(chunk, chunk.id)))
        for key, block in bridge._iter_protocol_blocks(chunk):
            if key in self.blocks:
                index, so_far = self.blocks[key]
                self.blocks[key] = (index, bridge._accumulate(so_far, block))
            else:
                index = len(self.blocks)
                self.blocks[key] = (index, dict(block))
                start = bridge._start_skeleton(block)
                events.append({"event": "content-block-start", "index": index, "content": start})
            if (delta := bridge._to_content_delta(block)) is not None:
                events.append({"event": "content-block-delta", "index": index, "delta": delta})
        if chunk.usage_metadata:
            self.usage = bridge._accumulate_usage(self.usage, chunk.usage_metadata)
        return events

    def finish(self) -> list[dict[str, Any]]:
        from langchain_core.language_models import _compat_bridge as bridge

        events = [dict(bridge._finalize_and_build_finish(i, b)) for i, b in self.blocks.values()]
        finish = bridge._build_message_finish(
            usage=self.usage, response_metadata=self.response_metadata
        )
        return [*events, dict(finish)]


class ChunkEvents:
    """Rewrites a v2 part stream: ``messages`` parts carrying an ``AIMessageChunk``
    become parts carrying its protocol events (``run_id`` in their metadata: the
    message's id), other parts pass."""

    def __init__(self) -> None:
        self.open: dict[str, _Message] = {}

    def _part(self, msg: _Message, key: str, event: dict[str, Any]) -> dict[str, Any]:
        return {"type": "messages", "ns": msg.ns, "data": (event, {**msg.meta, "run_id": key})}

    def _close(self, key: str) -> list[dict[str, Any]]:
        msg = self.open.pop(key)
        return [self._part(msg, key, e) for e in msg.finish()]

    def feed(self, part: dict[str, Any]) -> list[dict[str, Any]]:
        kind, data = part["type"], part["data"]
        if kind == "tasks" and isinstance(data, dict) and "result" in data:
            # the task's messages end with it
            ended = [
                k
                for k, m in self.open.items()
                if m.ns == part["ns"] and m.meta.get("langgraph_node") == data.get("name")
            ]
            return [*(p for k in ended for p in self._close(k)), part]
        if kind != "messages" or type(data[0]).__name__ != "AIMessageChunk":
            return [part]
        chunk, meta = data
        key = str(chunk.id or "")
        first = key not in self.open
        if first:
            self.open[key] = _Message(part["ns"], dict(meta or {}))
        msg = self.open[key]
        out = [self._part(msg, key, e) for e in msg.feed(chunk, first)]
        if getattr(chunk, "chunk_position", None) == "last":
            out += self._close(key)
        return out

    def end(self) -> list[dict[str, Any]]:
        return [p for k in list(self.open) for p in self._close(k)]


def chunk_events(source: Iterator[Any]) -> Iterator[Any]:
    """``source``'s parts, its chunks as protocol events."""
    conv = ChunkEvents()
    for part in source:
        yield from conv.feed(part)
    yield from conv.end()


async def achunk_events(source: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``chunk_events`` for an async source (closed with it)."""
    conv = ChunkEvents()
    try:
        async for part in source:
            for out in conv.feed(part):
                yield out
        for out in conv.end():
            yield out
    finally:
        await source.aclose()  # type: ignore[attr-defined]
