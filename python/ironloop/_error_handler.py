"""Node error handlers, as LangGraph 1.2's ``add_node(..., error_handler=fn)`` and
``set_node_defaults(error_handler=fn)``.

The handler is a node of the graph (``__error_handler__<node>``, or
``__default_error_handler__`` for the default), reached by no edge: when its node's
task fails (after its retries), the engine runs the handler's task in its place in the
same step, on the same input. What the handler returns is the step's update for that
task, and its ``Command(goto=...)`` routes on; the failed node's own edges do not
fire. A parameter annotated with ``NodeError`` receives the failure.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from ironloop._runtime import task_var
from ironloop.errors import NodeError

#: The name of a node's own handler, and of the default one.
HANDLER_PREFIX = "__error_handler__"
DEFAULT_HANDLER = "__default_error_handler__"


def _is_node_error(annotation: Any) -> bool:
    # A string under `from __future__ import annotations`.
    return annotation is NodeError or annotation == "NodeError"


def _failure() -> NodeError:
    """The failure the running handler task handles."""
    scratch = task_var.get(None)
    failed = None if scratch is None else scratch.node_error
    if failed is None:
        raise RuntimeError(
            "a NodeError parameter is filled only when the function runs as a node's "
            "error handler (add_node(..., error_handler=fn)); this task handles no failure"
        )
    node, error = failed
    return NodeError(node=node, error=error)


def handler_node(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a node function: its ``NodeError`` parameter (if it has one) filled
    with the failure; the engine sees its other parameters as they are."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn
    name = next((p.name for p in sig.parameters.values() if _is_node_error(p.annotation)), None)
    if name is None:
        return fn
    shown = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != name])
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def ahandler(*args: Any, **kwargs: Any) -> Any:
            return await fn(*args, **kwargs, **{name: _failure()})

        ahandler.__signature__ = shown  # type: ignore[attr-defined]
        return ahandler

    @functools.wraps(fn)
    def handler(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs, **{name: _failure()})

    handler.__signature__ = shown  # type: ignore[attr-defined]
    return handler


def node_guards(
    nodes: dict[str, Any],
    handlers: dict[str, str],
    timeouts: dict[str, Any],
    defaults: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """At ``compile``: the nodes to run (the graph's, and the default error handler's
    when ``set_node_defaults(error_handler=)`` gave one) and, by node, what the engine
    guards it with (``error_handler``: the handler node's name; ``timeout``: the
    policy's seconds). Per-node values win over the defaults; the default handler
    handles regular nodes only, the default timeout bounds handlers too.

    Raises ``ValueError`` for a node named as the default handler, and for a timeout
    on a sync function node (only async nodes can be stopped, as in LangGraph)."""
    all_nodes = dict(nodes)
    own_handlers = set(handlers.values())
    default = defaults.get("error_handler")
    if default is not None:
        if DEFAULT_HANDLER in nodes:
            raise ValueError(
                f"Auto-generated default error handler node `{DEFAULT_HANDLER}` already "
                "exists: rename your node, or give it an error_handler with add_node"
            )
        all_nodes[DEFAULT_HANDLER] = handler_node(default)
    guards: dict[str, dict[str, Any]] = {}
    for name, fn in all_nodes.items():
        is_handler = name in own_handlers or name == DEFAULT_HANDLER
        handler = handlers.get(name) or (None if is_handler or default is None else DEFAULT_HANDLER)
        timeout = timeouts.get(name) or defaults.get("timeout")
        if timeout is not None and not _stoppable(fn):
            raise ValueError(
                f"node {name!r}: a timeout is only supported for async nodes; make the "
                "node's function `async def`, or drop its timeout"
            )
        guards[name] = {
            "error_handler": handler,
            "timeout": None if timeout is None else timeout._engine(),
        }
    return all_nodes, guards


def _stoppable(fn: Any) -> bool:
    """Whether the engine can stop the node at a timeout: an async function, or a node
    the engine runs itself (a subgraph, a ``ToolNode``)."""
    from ironloop._compiled import CompiledStateGraph
    from ironloop._node_prep import _is_async
    from ironloop._toolnode import ToolNode

    return _is_async(fn) or isinstance(fn, (CompiledStateGraph, ToolNode))
