"""Caching node and task results (``CachePolicy``), as LangGraph does: a node's result
is cached under its name and a key made of its input by the policy's ``key_func``; a
task's under its name and its arguments. A hit returns the cached result without
running the function. Not public API."""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import Any

from ironloop._runtime import task_var

#: The namespaces' first part, as LangGraph's (``CACHE_NS_WRITES``).
NS_WRITES = "__pregel_ns_writes"


def namespace(name: str) -> tuple[str, ...]:
    """Where the results of the node or task ``name`` are cached."""
    return (NS_WRITES, name)


def cache_key(policy: Any, *args: Any, **kwargs: Any) -> str:
    """The key of a call's result: ``policy.key_func`` of its arguments, hashed."""
    raw = policy.key_func(*args, **kwargs)
    data = raw if isinstance(raw, bytes) else str(raw).encode()
    return hashlib.sha256(data).hexdigest()


def _mark_cached() -> None:
    """Tells the engine the running node's output came from the cache (streamed as
    LangGraph does: ``"__metadata__": {"cached": True}``)."""
    scratch = task_var.get(None)
    if scratch is not None:
        scratch.mark_cached()


def cached_node(name: str, fn: Callable[..., Any], policy: Any, cache: Any) -> Callable[..., Any]:
    """Node ``fn`` answered from ``cache`` when its input was seen before (its
    signature kept: the engine reads which arguments it takes from it)."""
    ns = namespace(name)

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def arun(state: Any, *args: Any, **kw: Any) -> Any:
            key = (ns, cache_key(policy, state))
            hit = await cache.aget([key])
            if key in hit:
                _mark_cached()
                return hit[key]
            out = await fn(state, *args, **kw)
            await cache.aset({key: (out, policy.ttl)})
            return out

        return arun

    @functools.wraps(fn)
    def run(state: Any, *args: Any, **kw: Any) -> Any:
        key = (ns, cache_key(policy, state))
        hit = cache.get([key])
        if key in hit:
            _mark_cached()
            return hit[key]
        out = fn(state, *args, **kw)
        cache.set({key: (out, policy.ttl)})
        return out

    return run
