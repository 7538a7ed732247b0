"""``MessagesTransformer``: the run's chat-model calls as langchain-core's
``ChatModelStream`` objects (``run.messages``)."""

from __future__ import annotations

from typing import Any

from ironloop.stream._types import ProtocolEvent, _PumpedTransformer

__all__ = ["MessagesTransformer"]


class MessagesTransformer(_PumpedTransformer):
    """One ``ChatModelStream`` (``AsyncChatModelStream`` on the async lane) per chat
    message of the run's own scope, with its ``.text``, ``.reasoning``,
    ``.tool_calls`` and ``.output``.

    The ``messages`` events it reads carry langchain-core's protocol events (a
    ``dict`` with ``"event"``: ``message-start`` ... ``message-finish``, sent by the
    models a node calls in a v3 run), routed to their stream by the model run's
    ``run_id``; or a whole message a node returned, replayed as one message's
    events. A model's v1 ``AIMessageChunk``s are not shown (a v3 run's models send
    events instead), nor tool messages (not chat output), as LangGraph's."""

    required_stream_modes = ("messages",)

    def __init__(self, scope: tuple[str, ...] = ()) -> None:
        super().__init__(scope)
        #: model run id -> the stream its events go to
        self._by_run: dict[str, Any] = {}
        #: model runs whose events are not shown (a tool message's)
        self._ignored_runs: set[str] = set()
        self._scope_list = list(scope)
        #: Ids of the messages shown (a ``message-finish`` event names its message
        #: as its ``id``): the same message whole is not shown again.
        self._seen: set[str] = set()

    def init(self) -> dict[str, Any]:
        return {"messages": self._log}

    def _make_stream(self, *, node: str | None, message_id: str | None) -> Any:
        """A stream whose cursors drive the run's pump (the async lane's when bound;
        an unbound transformer makes async streams, fed by hand)."""
        from langchain_core.language_models.chat_model_stream import (
            AsyncChatModelStream,
            ChatModelStream,
        )

        if self._apump_fn is None and self._pump_fn is not None:
            stream: Any = ChatModelStream(namespace=[], node=node, message_id=message_id)
            stream.set_request_more(self._pump_fn)
            return stream
        stream = AsyncChatModelStream(namespace=[], node=node, message_id=message_id)
        if self._apump_fn is not None:
            stream.set_arequest_more(self._apump_fn)
        return stream

    def process(self, event: ProtocolEvent) -> bool:
        params = event["params"]
        if event["method"] != "messages" or params["namespace"] != self._scope_list:
            return True
        from langchain_core.messages import AIMessageChunk, BaseMessage, ToolMessage

        payload, metadata = params["data"]
        metadata = metadata or {}
        node = metadata.get("langgraph_node")
        if isinstance(payload, dict) and "event" in payload:
            self._route_event(payload, str(metadata.get("run_id", "")), node)
        elif isinstance(payload, BaseMessage) and not isinstance(
            payload, (AIMessageChunk, ToolMessage)
        ):
            if payload.id is not None and payload.id in self._seen:
                return False  # shown already (the engine's piece of a streamed answer)
            if payload.id is not None:
                self._seen.add(payload.id)
            self._replay(payload, node)
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
                if (mid := getattr(event, "id", None)) is not None:
                    self._seen.add(mid)

    def _replay(self, message: Any, node: str | None) -> None:
        from langchain_core.language_models._compat_bridge import message_to_events

        stream = self._make_stream(node=node, message_id=message.id)
        for event in message_to_events(message, message_id=message.id):
            stream.dispatch(event)
        self._log.push(stream)

    def finalize(self) -> None:
        self._by_run.clear()
        self._seen.clear()
        self._ignored_runs.clear()

    def fail(self, err: BaseException) -> None:
        for stream in self._by_run.values():
            stream.fail(err)
        self._by_run.clear()
        self._ignored_runs.clear()
