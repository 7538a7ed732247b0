"""``stream_mode="messages"`` for LangChain chat models a node calls itself.

LangGraph streams the tokens of any LangChain model a node calls (``llm.invoke(...)``
inside a node) through a callback handler it puts in the node's config. ironloop's
nodes get no config, so the handler reaches LangChain another way: a context variable
registered with langchain-core's ``register_configure_hook``, set for the task (only
in runs that stream messages). Every chat-model run started inside the task then
reports its chunks, and with the handler present LangChain streams even an
``invoke`` (the handler is a ``_StreamingCallbackHandler``), as under LangGraph.

Imported only once langchain-core is (``ironloop._runtime.stream_langchain_runs``).
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar, TypeVar

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk
from langchain_core.tracers._streaming import _StreamingCallbackHandler
from langchain_core.tracers.context import register_configure_hook

from ironloop._constants import TAG_NOSTREAM
from ironloop._runtime import task_var

T = TypeVar("T")

#: Tags of model runs that are not streamed: LangGraph's ``nostream`` markers, and
#: the calls of ironloop's own agent, whose chunks the engine streams itself.
OWN_CALL_TAG = "ironloop:streamed-by-engine"
_SILENT_TAGS = frozenset({TAG_NOSTREAM, "langsmith:nostream", OWN_CALL_TAG})


class TaskHandler(BaseCallbackHandler, _StreamingCallbackHandler):  # type: ignore[misc]
    """A LangChain callback handler for the runs one task starts, sending what it
    sees to the task's ``scratch``. Each kind has its own context variable, made
    and registered with langchain-core's ``register_configure_hook`` here, so every
    LangChain run started in the task's context gets its handler (a streaming
    handler: LangChain then streams even an ``invoke``); ``stream_to`` sets it."""

    run_inline = True
    #: This kind's context variable (see ``__init_subclass__``).
    hook: ClassVar[contextvars.ContextVar[Any]]
    #: Tags of the runs this kind does not report.
    silent: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, *, hook_name: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not hook_name and hasattr(cls, "hook"):
            return  # a variant of a kind (v3's events for tokens): the kind's variable
        cls.hook = contextvars.ContextVar(hook_name or f"ironloop_{cls.__name__}", default=None)
        register_configure_hook(cls.hook, inheritable=True)

    def __init__(self, scratch: Any) -> None:
        self.scratch = scratch

    @classmethod
    def stream_to(cls, scratch: Any) -> None:
        """In the task's context: the LangChain runs started there report to
        ``scratch``."""
        cls.hook.set(cls(scratch))

    def run_started(
        self,
        serialized: Any,
        *_input: Any,  # the messages, the tool's input string: unread
        run_id: uuid.UUID,
        tags: Any = None,
        metadata: Any = None,
        **kw: Any,
    ) -> None:
        """The start callback of every kind, bound by each to its own name
        (``on_chat_model_start``, ``on_tool_start``: only the kind that defines one
        is sent those runs): a run this task is to report goes to ``started``.
        That is one with none of the ``silent`` tags, started by this task (a
        subgraph's task inherits the context: its runs are its own task's, with its
        namespace)."""
        if not self.silent.intersection(tags or ()) and task_var.get(None) is self.scratch:
            self.started(run_id, serialized, tags, metadata, kw)

    def started(
        self, run_id: uuid.UUID, serialized: Any, tags: Any, metadata: Any, kw: dict[str, Any]
    ) -> None:
        """A run of this task started (``kw``: LangChain's other keywords)."""
        raise NotImplementedError

    def tap_output_aiter(self, run_id: uuid.UUID, output: AsyncIterator[T]) -> AsyncIterator[T]:
        return output

    def tap_output_iter(self, run_id: uuid.UUID, output: Iterator[T]) -> Iterator[T]:
        return output


class TokenStream(TaskHandler, hook_name="ironloop_langchain_tokens"):
    """Sends the chunks of the chat-model runs of one task to its ``messages``
    stream; a model's final message goes too unless its chunks already went (the
    non-streaming models), as LangGraph's ``StreamMessagesHandler`` does."""

    silent = _SILENT_TAGS
    on_chat_model_start = TaskHandler.run_started

    def __init__(self, scratch: Any) -> None:
        super().__init__(scratch)
        #: run id -> the metadata its chunks show: the run's own (the model's `ls_*`
        #: keys) and its tags, as LangGraph shows them.
        self.runs: dict[uuid.UUID, dict[str, Any]] = {}
        self.seen: set[str] = set()

    def _emit(self, run_id: uuid.UUID, message: Any, *, dedupe: bool = False) -> None:
        if dedupe and message.id in self.seen:
            return
        if message.id is None:
            message.id = str(uuid.uuid4())
        self.seen.add(message.id)
        self.scratch.write_message(message, self.runs[run_id])

    def started(
        self, run_id: uuid.UUID, serialized: Any, tags: Any, metadata: Any, kw: dict[str, Any]
    ) -> None:
        shown = dict(metadata or {})
        user_tags = [t for t in tags or () if not t.startswith("seq:step")]
        if user_tags:
            shown["tags"] = user_tags
        self.runs[run_id] = shown

    def on_llm_new_token(
        self, token: Any, *, chunk: Any = None, run_id: uuid.UUID, **kw: Any
    ) -> None:
        if isinstance(chunk, ChatGenerationChunk) and run_id in self.runs:
            self._emit(run_id, chunk.message)

    def on_llm_end(self, response: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        if run_id in self.runs and response.generations and response.generations[0]:
            gen = response.generations[0][0]
            if isinstance(gen, ChatGeneration):
                self._emit(run_id, gen.message, dedupe=True)
        self.runs.pop(run_id, None)

    def on_llm_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        self.runs.pop(run_id, None)


#: In the task's context: LangChain models called there stream to ``scratch``.
stream_tokens_to = TokenStream.stream_to
