"""``stream_mode="tools"`` for LangChain tools a node calls itself.

LangGraph reports every LangChain tool run inside a node (``my_tool.invoke(...)``, a
``ToolNode``'s calls) on the ``tools`` stream through a callback handler: the call's
``tool-started``, its ``tool-output-delta`` s (``ToolRuntime.emit_output_delta``) and
its ``tool-finished`` or ``tool-error``. ironloop's engine reports the calls its own
tool nodes run; this handler, reaching LangChain as the ``messages`` one does (both
are ``_langchain_stream.TaskHandler`` s, set for the task), adds the tool runs a node
starts itself. A call the engine runs (``LangChainTool``) is
marked in :data:`engine_call` and left to the engine, so no call is reported twice.

Imported only once langchain-core is (``ironloop._runtime.stream_langchain_runs``).
"""

from __future__ import annotations

import contextvars
import uuid
from typing import Any

from ironloop._constants import TAG_NOSTREAM
from ironloop._langchain_stream import TaskHandler
from ironloop._tool_call import tool_call_writer

_SILENT_TAGS = frozenset({TAG_NOSTREAM})

#: The id of the call an engine's tool node is running through its LangChain tool:
#: the engine reports that call's events itself.
engine_call: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ironloop_engine_tool_call", default=None
)


class ToolStream(TaskHandler, hook_name="ironloop_langchain_tools"):
    """Sends the lifecycle of the LangChain tool runs of one task to its ``tools``
    stream, as LangGraph's ``StreamToolCallHandler`` does."""

    silent = _SILENT_TAGS
    on_tool_start = TaskHandler.run_started

    def __init__(self, scratch: Any) -> None:
        super().__init__(scratch)
        #: run id -> (tool call id, tool name, the token of the writer set for it).
        self.runs: dict[uuid.UUID, tuple[str, str, contextvars.Token[Any]]] = {}

    def started(
        self, run_id: uuid.UUID, serialized: Any, tags: Any, metadata: Any, kw: dict[str, Any]
    ) -> None:
        call_id = kw.get("tool_call_id") or str(run_id)
        if call_id == engine_call.get():
            return
        name = (serialized or {}).get("name") or kw.get("name") or ""
        scratch = self.scratch

        def writer(delta: Any) -> None:
            scratch.write_tool("delta", call_id, name, delta)

        self.runs[run_id] = (call_id, name, tool_call_writer.set(writer))
        self.scratch.write_tool("started", call_id, name, kw.get("inputs"))

    def _ended(self, run_id: uuid.UUID) -> tuple[str, str] | None:
        run = self.runs.pop(run_id, None)
        if run is None:
            return None
        call_id, name, token = run
        try:
            tool_call_writer.reset(token)
        except ValueError:  # ended in another context than it started (a thread)
            pass
        return call_id, name

    def on_tool_end(self, output: Any, *, run_id: uuid.UUID, **kw: Any) -> None:
        ended = self._ended(run_id)
        if ended is not None:
            self.scratch.write_tool("finished", *ended, output)

    def on_tool_error(self, error: BaseException, *, run_id: uuid.UUID, **kw: Any) -> None:
        from ironloop.errors import GraphDrained, GraphInterrupt

        ended = self._ended(run_id)
        # A paused tool has not failed: it runs again, from its start, on resume.
        if ended is not None and not isinstance(error, (GraphInterrupt, GraphDrained)):
            self.scratch.write_tool("error", *ended, str(error))


#: In the task's context: LangChain tools called there report to ``scratch``.
stream_tools_to = ToolStream.stream_to
