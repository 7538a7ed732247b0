"""How ``StateGraph.add_node`` / ``add_conditional_edges`` take a node or a router:
which parameters it asks for, its retry policies, LangGraph's deprecated keywords."""

from __future__ import annotations

import dataclasses
import inspect
import typing
import warnings
from collections.abc import Callable, Hashable
from typing import (
    Any,
    get_args,
    get_origin,
    get_type_hints,
)

from ironloop._retry import with_retry
from ironloop.types import RetryPolicy


def _wants(fn: Any) -> dict[str, bool]:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    return {p: p in params for p in ("config", "store", "writer", "runtime")}


#: How LangGraph lets a node's ``config`` parameter be annotated (written as text under
#: ``from __future__ import annotations``).
_CONFIG_ANNOTATIONS = ("RunnableConfig", "Optional[RunnableConfig]", "RunnableConfig | None")


def _check_config_annotation(fn: Any) -> None:
    """Warns, as LangGraph does, when a node's ``config`` parameter is annotated with
    something other than ``RunnableConfig`` (or it or ``None``)."""
    try:
        param = inspect.signature(fn).parameters.get("config")
    except (TypeError, ValueError):
        return
    if param is None or param.annotation is inspect.Parameter.empty:
        return
    ann = param.annotation
    names = {getattr(a, "__name__", None) for a in (ann, *get_args(ann)) if a is not type(None)}
    if ann in _CONFIG_ANNOTATIONS or names == {"RunnableConfig"}:
        return
    warnings.warn(
        "The 'config' parameter should be typed as 'RunnableConfig' or "
        f"'RunnableConfig | None', not '{ann}'. ",
        UserWarning,
        stacklevel=4,
    )


def _deprecated_kwargs(
    where: str, kwargs: dict[str, Any], renames: dict[str, tuple[str, type[Warning]]]
) -> dict[str, Any]:
    """Takes LangGraph's deprecated keywords (``renames``: old name -> new name and
    warning class) out of ``kwargs``, warning as LangGraph does; returns their values
    under the new names. Any other keyword left is refused."""
    taken = {}
    for old, (new, category) in renames.items():
        if old in kwargs:
            warnings.warn(
                f"`{old}` is deprecated and will be removed. Please use `{new}` instead.",
                category,
                stacklevel=3,
            )
            taken[new] = kwargs.pop(old)
    if kwargs:
        raise TypeError(f"{where} got unexpected keyword argument(s): {sorted(kwargs)}")
    return taken


def _retried(name: str, action: Any, retry_policy: Any) -> Any:
    """A node's callable run again as ``retry_policy`` (one policy or several) says:
    a function node's, and the callables a subgraph or a ``ToolNode`` runs as in a
    graph (see ``StateGraph.compile``), so every kind of node retries by one loop. An
    async form the engine calls on an event loop (``__ironloop_async__``) is retried
    too."""
    policies = _retry_policies(f"node {name!r}", retry_policy)
    retried = with_retry(action, policies, name)
    afunc = getattr(action, "__ironloop_async__", None)
    if afunc is not None:
        retried.__ironloop_async__ = with_retry(afunc, policies, name)  # type: ignore[attr-defined]
    return retried


def _retry_policies(where: str, retry_policy: Any) -> list[RetryPolicy]:
    """``retry_policy`` (one ``RetryPolicy`` or a sequence of them) as a list, or a
    ``TypeError`` naming ``where`` it was given."""
    if isinstance(retry_policy, RetryPolicy):
        return [retry_policy]
    policies = list(retry_policy) if isinstance(retry_policy, (list, tuple)) else [retry_policy]
    for p in policies:
        if not isinstance(p, RetryPolicy):
            raise TypeError(f"{where}: retry_policy takes RetryPolicy objects, got {p!r}")
    return policies


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _literal_ends(path: Any) -> list[str] | None:
    try:
        ret = get_type_hints(path).get("return")
    except Exception:  # any failure means "unknown"
        return None
    if get_origin(ret) is typing.Literal:
        return [str(a) for a in get_args(ret)]
    return None


@dataclasses.dataclass
class _Branch:
    source: str
    #: The branch's name in messages: its function's, or "condition" (as LangGraph).
    name: str
    path: Callable[..., Any]
    path_map: dict[Hashable, str] | None
    ends: list[str] | None
    #: The input schema the routing function declares, if any.
    schema: Any = None


def _node_ends(destinations: Any, action: Any) -> dict[str, str | None]:
    """Where a node may go by ``Command(goto=)``, by target (to its label, or
    ``None``): ``add_node(destinations=)`` (names, or names to labels), else the node's
    ``Command[Literal[...]]`` return annotation, as LangGraph reads them for drawing."""
    if isinstance(destinations, dict):
        return {str(t): None if label is None else str(label) for t, label in destinations.items()}
    if destinations is not None:
        return dict.fromkeys(map(str, destinations))
    from ironloop.types import Command

    try:
        ret = get_type_hints(action).get("return")
    except Exception:  # not annotated, or annotations that do not resolve: no ends
        return {}
    if get_origin(ret) is Command and get_args(ret):
        goto = get_args(ret)[0]
        if get_origin(goto) is typing.Literal:
            return dict.fromkeys(str(a) for a in get_args(goto))
    return {}
