"""A run's options as LangGraph takes them (``durability``, ``version``, top-level
config keys, stream modes and their ``tasks`` / ``checkpoints`` views, batch configs),
checked and shaped for the engine."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ironloop import _ironloop
from ironloop.warnings import LangGraphDeprecatedSinceV10


def _check_run_options(durability: str | None, version: str, kwargs: dict[str, Any]) -> str | None:
    """``version`` as LangGraph takes it, or a clear refusal; returns the run's
    durability, from LangGraph's deprecated ``checkpoint_during`` (``True``:
    ``"async"``, ``False``: ``"exit"``) when that is given instead. The durability's
    value is checked by ``_RunOptions``, in the core."""
    if "checkpoint_during" in kwargs:
        warnings.warn(
            "`checkpoint_during` is deprecated and will be removed. "
            "Please use `durability` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=4,
        )
        during = kwargs.pop("checkpoint_during")
        if durability is None and during is not None:
            durability = "async" if during else "exit"
    if version not in ("v1", "v2"):
        raise ValueError(f"version must be 'v1' or 'v2', got {version!r}")
    return durability


#: The keys a run's config keeps at its top level: langchain-core's ``CONFIG_KEYS``, and
#: ``multitask_strategy`` (a run option ironloop reads there, see ``Multitask``).
_CONFIG_KEYS = frozenset(
    {
        "tags",
        "metadata",
        "callbacks",
        "run_name",
        "max_concurrency",
        "recursion_limit",
        "configurable",
        "run_id",
        "multitask_strategy",
    }
)


def _as_run_config(config: Any) -> Any:
    """``config`` as a run reads it: any other top-level key (``{"thread_id": "1"}``)
    moved into ``configurable``, as langchain-core's ``ensure_config`` does."""
    if config and any(k not in _CONFIG_KEYS and v is not None for k, v in config.items()):
        moved = {k: v for k, v in config.items() if k not in _CONFIG_KEYS and v is not None}
        config = {k: v for k, v in config.items() if k in _CONFIG_KEYS}
        config["configurable"] = {**(config.get("configurable") or {}), **moved}
    return config


def _v2_modes(stream_mode: Any) -> list[str]:
    """v2 parts name their mode: the run streams as if modes were a list."""
    return [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)


def _modes(stream_mode: Any) -> Any:
    if isinstance(stream_mode, str):
        return stream_mode
    return list(stream_mode)


#: The payloads of the ``debug`` events LangGraph's ``tasks`` and ``checkpoints``
#: stream modes show, by mode (the core names those modes: ``_ironloop._DEBUG_VIEWS``).
_DEBUG_VIEWS = dict(
    zip(_ironloop._DEBUG_VIEWS, (("task", "task_result"), ("checkpoint",)), strict=True)
)


def _debug_views(stream_mode: Any) -> tuple[Any, list[str] | None]:
    """The modes to ask the engine for, and the modes the caller asked for when
    ``tasks`` / ``checkpoints`` are among them (``None`` when they are not)."""
    wanted = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    if not any(m in _DEBUG_VIEWS for m in wanted):
        return _modes(stream_mode), None
    engine = list(dict.fromkeys("debug" if m in _DEBUG_VIEWS else m for m in wanted))
    return engine, wanted


def _reshape(item: Any, wanted: list[str], single: bool, subgraphs: bool) -> list[Any]:
    """One engine item (``(mode, chunk)`` or ``(ns, mode, chunk)``) as the items the
    caller's modes give: a ``debug`` event also feeds ``tasks`` / ``checkpoints``."""
    ns, mode, chunk = item if subgraphs else ((), *item)
    shown: list[tuple[str, Any]] = []
    if mode != "debug":
        shown.append((mode, chunk))
    else:
        if "debug" in wanted:
            shown.append(("debug", chunk))
        for view, kinds in _DEBUG_VIEWS.items():
            if view in wanted and chunk["type"] in kinds:
                shown.append((view, chunk["payload"]))
    out: list[Any] = []
    for m, c in shown:
        if single:
            out.append((ns, c) if subgraphs else c)
        else:
            out.append((ns, m, c) if subgraphs else (m, c))
    return out


def _viewed(it: Iterator[Any], wanted: list[str], single: bool, subgraphs: bool) -> Iterator[Any]:
    for item in it:
        yield from _reshape(item, wanted, single, subgraphs)


def _batch_configs(inputs: Sequence[Any], config: Any) -> list[Any]:
    """One config per input for ``batch``: ``config`` repeated, or a list of them (as
    many as the inputs, as LangChain's ``Runnable.batch`` requires)."""
    if not isinstance(config, list):
        return [config] * len(inputs)
    if len(config) != len(inputs):
        raise ValueError(
            f"batch got {len(config)} configs for {len(inputs)} inputs: pass one config "
            "for all of them, or a list with one per input"
        )
    return config
