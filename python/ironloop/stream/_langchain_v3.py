"""The ``messages`` events of a ``stream_events(version="v3")`` run: langchain-core's
content-block protocol events (``message-start`` ... ``message-finish``) of the chat
models a node calls, which ``run.messages`` turns into ``ChatModelStream``s.

A v3 run marks its tasks' context (``_entry.v3_messages``); a task of a marked run that
streams ``messages`` gets ``EventStream`` instead of ironloop's chunk handler. Being
a ``_V2StreamingCallbackHandler``, it makes langchain-core route even a model's
``invoke`` through its event generator, and it forwards each event (not the v1
``AIMessageChunk``s) to the task's ``messages`` stream, as LangGraph's
``StreamMessagesHandlerV2`` does."""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.outputs import ChatGeneration
from langchain_core.tracers._streaming import _V2StreamingCallbackHandler

from ironloop._langchain_stream import TokenStream

__all__ = ["EventStream", "stream_events_to"]


class ProtocolEventData(dict[str, Any]):
    """One protocol event as the engine's ``messages`` stream carries it. The
    ``message-finish`` event carries the finished message's ``id``: the engine
    then knows the message was shown, and a node returning it does not stream it
    again."""

    id: str | None = None


class EventStream(TokenStream, _V2StreamingCallbackHandler):
    """``TokenStream`` for v3 runs: protocol events in, no v1 chunks."""

    def __init__(self, scratch: Any) -> None:
        super().__init__(scratch)
        #: The model runs whose events went: their final message is not sent again.
        self.streamed: set[uuid.UUID] = set()
        #: run id -> its ``message-finish`` event, sent with the message's id once
        #: the run ends (the event comes before langchain-core names the message).
        self.finishing: dict[uuid.UUID, tuple[ProtocolEventData, dict[str, Any]]] = {}

    def on_llm_new_token(self, token: Any, **kw: Any) -> None:
        return None  # the events carry the tokens

    def on_stream_event(self, event: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        meta = self.runs.get(run_id)
        if meta is None:
            return
        data = ProtocolEventData(event)
        shown = {**meta, "run_id": str(run_id)}
        kind = event.get("event")
        if kind == "message-start":
            self.streamed.add(run_id)
        elif kind == "message-finish":
            self.finishing[run_id] = (data, shown)
            return
        self.scratch.write_message(data, shown)

    def on_llm_end(self, response: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        if run_id not in self.streamed:
            super().on_llm_end(response, run_id=run_id, **kw)
            return
        self.streamed.discard(run_id)
        self.runs.pop(run_id, None)
        finish = self.finishing.pop(run_id, None)
        if finish is None:
            return
        data, shown = finish
        if response.generations and response.generations[0]:
            gen = response.generations[0][0]
            if isinstance(gen, ChatGeneration):
                if gen.message.id is None:
                    gen.message.id = str(uuid.uuid4())
                data.id = gen.message.id
                self.seen.add(gen.message.id)
        self.scratch.write_message(data, shown)

    def on_llm_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        self.streamed.discard(run_id)
        self.finishing.pop(run_id, None)
        super().on_llm_error(error, run_id=run_id, **kw)


def stream_events_to(scratch: Any) -> None:
    """In the task's context: LangChain models called there send their protocol
    events to ``scratch``'s ``messages`` stream."""
    EventStream.stream_to(scratch)
