"""Hands the Rust glue the Python objects it calls back into, once, at import.

Imported by ``ironloop/__init__.py``; it imports every module it names itself, and
a renamed helper fails here rather than in the middle of a run. Not public API.
"""

from __future__ import annotations

from ironloop import _callbacks, _logs, _runtime  # noqa: F401  (_logs: level changes reach Rust)
from ironloop._interrupt import make_interrupt
from ironloop._ironloop import _install_helpers
from ironloop._node_calls import _task_writer
from ironloop._state import as_update
from ironloop.errors import CheckpointTypeWarning, GraphDrained, GraphInterrupt, ParentCommand
from ironloop.messages import ToolCall
from ironloop.types import Command, PregelTask, Send, StateSnapshot, _overwritten

_install_helpers(
    {
        "as_update": as_update,
        "task_writer": _task_writer,
        "type_warning": CheckpointTypeWarning,
        "task_var": _runtime.task_var,
        "background_loop": _runtime.background_loop,
        "escaped": _runtime.Escaped,
        "logger": _runtime.logger,
        "stream_langchain_runs": _runtime.stream_langchain_runs,
        "node_call": _callbacks.node_call,
        "node_run": _callbacks.node_run,
        "router_call": _callbacks.router_call,
        "overwritten": _overwritten,
        "graph_interrupt": GraphInterrupt,
        "graph_drained": GraphDrained,
        "parent_command": ParentCommand,
        "send": Send,
        "command": Command,
        "interrupt": make_interrupt,
        "pregel_task": PregelTask,
        "state_snapshot": StateSnapshot,
        "tool_call": ToolCall,
    }
)
