"""``MessagesTransformer``: the run's chat-model calls as langchain-core's
``ChatModelStream`` objects (``run.messages``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.language_models._compat_bridge import message_to_events
from langchain_core.language_models.chat_model_stream import (
    AsyncChatModelStream,
    ChatModelStream,
)
from langchain_core.messages import AIMessageChunk, BaseMessage, ToolMessage

from ironloop.stream._types import ProtocolEvent, StreamTransformer
from ironloop.stream.stream_channel import StreamChannel

__all__ = ["MessagesTransformer"]


class MessagesTransformer(StreamTransformer):
    """One ``ChatModelStream`` (``AsyncChatModelStream`` on the async lane) per chat
    message of the run's own scope, with its ``.text``, ``.reasoning``,
    ``.tool_calls`` and ``.output``.

    The ``messages`` events it reads are of three kinds: langchain-core's protocol
    events (a ``dict`` with ``"event"``: ``message-start`` ... ``message-finish``),
    routed by the model run's ``run_id``; a model's ``AIMessageChunk``s (what
    ironloop's engine streams for a model a node calls), gathered by message id and
    replayed as one message's events when its last chunk comes (or the run ends);
    and a whole message a node returned, replayed at once. Tool messages are not
    chat output and are left out, as LangGraph leaves them out."""

    _native = True
    required_stream_modes = ("messages",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        self._log: StreamChannel[Any] = StreamChannel()
        self._by_run: dict[str, Any] = {}
        self._ignored_runs: set[str] = set()
        #: message id -> (its stream, the chunks so far)
        self._chunked: dict[str, tuple[Any, AIMessageChunk]] = {}
        self._pump_fn: Callable[[], bool] | None = None
        self._apump_fn: Callable[[], Awaitable[bool]] | None = None
        self._scope_list = list(scope)
        #: Ids of the messages streamed already: a node returning the message its
        #: model streamed does not stream it twice.
        self._seen: set[str] = set()

    def init(self) -> dict[str, Any]:
        return {"messages": self._log}

    def _bind_pump(self, fn: Callable[[], bool]) -> None:
        self._pump_fn = fn

    def _bind_apump(self, fn: Callable[[], Awaitable[bool]]) -> None:
        self._apump_fn = fn

    def _make_stream(self, *, node: str | None, message_id: str | None) -> Any:
        """A stream whose cursors drive the run's pump (async lane's when bound)."""
        if self._apump_fn is not None or self._pump_fn is None:
            stream: Any = AsyncChatModelStream(namespace=[], node=node, message_id=message_id)
            if self._apump_fn is not None:
                stream.set_arequest_more(self._apump_fn)
            return stream
        stream = ChatModelStream(namespace=[], node=node, message_id=message_id)
        stream.set_request_more(self._pump_fn)
        return stream

    def process(self, event: ProtocolEvent) -> bool:
        params = event["params"]
        if event["method"] != "messages" or params["namespace"] != self._scope_list:
            return True
        payload, metadata = params["data"]
        metadata = metadata or {}
        node = metadata.get("langgraph_node")
        if isinstance(payload, dict) and "event" in payload:
            self._route_event(payload, str(metadata.get("run_id", "")), node)
        elif isinstance(payload, AIMessageChunk):
            self._route_chunk(payload, node)
        elif isinstance(payload, BaseMessage) and not isinstance(payload, ToolMessage):
            if payload.id is not None and payload.id in self._seen:
                return True
            if payload.id is not None:
                self._seen.add(payload.id)
            self._replay(self._make_stream(node=node, message_id=payload.id), payload)
        return True

    def _route_event(self, event: dict[str, Any], run_id: str, node: str | None) -> None:
        kind = event.get("event")
        if kind == "message-start":
            if event.get("role") == "tool":
                self._ignored_runs.add(run_id)
                return
            mid = event.get("message_id")
            stream = self._make_stream(node=node, message_id=None if mid is None else str(mid))
            self._by_run[run_id] = stream
            self._log.push(stream)
            stream.dispatch(event)
        elif run_id in self._ignored_runs:
            if kind == "message-finish":
                self._ignored_runs.discard(run_id)
        elif (stream := self._by_run.get(run_id)) is not None:
            stream.dispatch(event)
            if kind == "message-finish":
                del self._by_run[run_id]

    def _route_chunk(self, chunk: AIMessageChunk, node: str | None) -> None:
        key = chunk.id or ""
        if chunk.id is not None:
            self._seen.add(chunk.id)
        if key in self._chunked:
            stream, so_far = self._chunked[key]
            self._chunked[key] = (stream, so_far + chunk)  # type: ignore[assignment]
        else:
            stream = self._make_stream(node=node, message_id=chunk.id)
            self._chunked[key] = (stream, chunk)
            self._log.push(stream)
        if chunk.chunk_position == "last":
            self._finish_chunks(key)

    def _finish_chunks(self, key: str) -> None:
        stream, message = self._chunked.pop(key)
        for event in message_to_events(message, message_id=message.id):
            stream.dispatch(event)

    def _replay(self, stream: Any, message: BaseMessage) -> None:
        for event in message_to_events(message, message_id=message.id):
            stream.dispatch(event)
        self._log.push(stream)

    def finalize(self) -> None:
        for key in list(self._chunked):
            self._finish_chunks(key)
        self._by_run.clear()
        self._ignored_runs.clear()

    def fail(self, err: BaseException) -> None:
        for stream in [*self._by_run.values(), *(s for s, _ in self._chunked.values())]:
            stream.fail(err)
        self._by_run.clear()
        self._chunked.clear()
        self._ignored_runs.clear()
