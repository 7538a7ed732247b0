"""A run's options as LangGraph takes them (``durability``, ``version``, top-level
config keys, stream modes and their ``tasks`` / ``checkpoints`` views, batch configs),
checked and shaped for the engine."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ironloop import _ironloop
from ironloop._constants import INTERRUPT
from ironloop._stream_v2 import as_output
from ironloop.runtime import _scope
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
    if not config or _CONFIG_KEYS.issuperset(config):
        return config
    if any(k not in _CONFIG_KEYS and v is not None for k, v in config.items()):
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


class _Wanted(list[str]):
    """The modes the caller asked for, and ``printed``: the modes whose items are
    printed as they come (LangGraph's ``print_mode``, and ``debug=True``'s
    ``["updates", "values"]``), streamed by the engine whether asked for or not."""

    printed: tuple[str, ...] = ()


def _print_modes(kwargs: dict[str, Any], compiled_debug: bool) -> tuple[str, ...]:
    """The modes a run prints, taken out of its keywords as LangGraph reads them:
    ``debug=True`` (or ``compile(debug=True)``) prints ``updates`` and ``values``, in
    place of any ``print_mode``."""
    debug = kwargs.pop("debug", None)
    print_mode = kwargs.pop("print_mode", ())
    if debug or (debug is None and compiled_debug):
        return ("updates", "values")
    if isinstance(print_mode, str):
        return (print_mode,)
    return tuple(print_mode or ())


def _debug_views(stream_mode: Any, printed: Sequence[str] = ()) -> tuple[Any, list[str] | None]:
    """The modes to ask the engine for, and the modes the caller asked for when
    ``tasks`` / ``checkpoints`` are among them or some modes are ``printed``
    (``None`` when neither)."""
    wanted = _Wanted([stream_mode] if isinstance(stream_mode, str) else list(stream_mode))
    wanted.printed = tuple(printed)
    if not printed and not any(m in _DEBUG_VIEWS for m in wanted):
        return _modes(stream_mode), None
    asked = [*wanted, *printed]
    engine = list(dict.fromkeys("debug" if m in _DEBUG_VIEWS else m for m in asked))
    return engine, wanted


def _print_item(mode: str, ns: tuple[str, ...], chunk: Any, subgraphs: bool) -> None:
    """One item as LangGraph's ``print_mode`` prints it: ``[mode]`` in bold, then
    ``[graph=ns]`` in yellow for a subgraph's item, then the chunk's repr."""
    where = f" \033[1;33m[graph={ns}]\033[0m" if subgraphs and ns else ""
    print(f"\033[1m[{mode}]\033[0m{where} {chunk!r}")


def _reshape(item: Any, wanted: list[str], single: bool, subgraphs: bool) -> list[Any]:
    """One engine item (``(mode, chunk)`` or ``(ns, mode, chunk)``) as the items the
    caller's modes give: a ``debug`` event also feeds ``tasks`` / ``checkpoints``;
    an item of a printed mode is printed (and given only when asked for)."""
    ns, mode, chunk = item if subgraphs else ((), *item)
    printed = getattr(wanted, "printed", ())
    views = [*wanted, *printed]
    shown: list[tuple[str, Any]] = []
    if mode != "debug":
        shown.append((mode, chunk))
    else:
        if "debug" in views:
            shown.append(("debug", chunk))
        for view, kinds in _DEBUG_VIEWS.items():
            if view in views and chunk["type"] in kinds:
                shown.append((view, chunk["payload"]))
    out: list[Any] = []
    for m, c in shown:
        if m in printed:
            _print_item(m, ns, c, subgraphs)
        if m not in wanted:
            continue
        if single:
            out.append((ns, c) if subgraphs else c)
        else:
            out.append((ns, m, c) if subgraphs else (m, c))
    return out


class _OverStream:
    """``invoke`` run as ``stream``: for another ``stream_mode``, the list of its
    chunks; to print (``debug`` / ``print_mode``), as LangGraph's ``invoke`` over its
    ``stream``: the ``["updates", "values"]`` stream's last ``values`` chunk, with the
    pause's interrupts (from the ``updates`` chunks) under ``__interrupt__``, and for
    ``version="v2"`` as ``GraphOutput``."""

    def __init__(
        self, stream_mode: Any, version: str, printed: tuple[str, ...], output: Any = None
    ) -> None:
        self.values = stream_mode == "values"
        #: The graph's output ``schema_mapper`` (a v2 value as the output schema).
        self.output = output
        #: The run's own token usage is reported only for a v2 ``values`` result.
        self.usage_version = version if self.values else "v1"
        self.options: dict[str, Any] = {
            "stream_mode": ["updates", "values"] if self.values else stream_mode,
            "version": "v1" if self.values else version,
            "print_mode": printed,
            "debug": False,  # `printed` already says what `debug` asks for
        }

    def result(self, items: list[Any], usage: Any) -> Any:
        if not self.values:
            return items
        latest: Any = None
        interrupts: list[Any] = []
        for mode, payload in items:
            if mode == "updates" and isinstance(payload, dict) and INTERRUPT in payload:
                interrupts.extend(payload[INTERRUPT])
            elif mode == "values":
                latest = payload
        out = latest
        if interrupts:
            out = (
                {**latest, INTERRUPT: interrupts}
                if isinstance(latest, dict)
                else {INTERRUPT: interrupts}
            )
        return _output(out, usage, self.output)


def _output(out: Any, usage: Any, output: Any = None) -> Any:
    """A run's result: with ``usage`` (``version="v2"``), LangGraph's ``GraphOutput``
    with the run's token usage (``output``: the output schema's mapper)."""
    return as_output(out, usage.usage_metadata, output) if usage is not None else out


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


def _in_agent(config: Any) -> Any:
    """``config`` of a run started inside a named agent's run (a graph or unnamed agent
    a tool invokes): it takes the agent's ``lc_agent_name`` unless it names itself, as
    under LangChain, where a nested run inherits its caller's metadata; the
    ``tasks`` stream then shows whose run it is (``run.subagents``)."""
    outer = _scope.get()  # the running graph's (context, store, config), if any
    if outer is None:
        return config
    name = ((outer[2] or {}).get("metadata") or {}).get("lc_agent_name")
    if name is None:
        return config
    given = config or {}
    metadata = given.get("metadata") or {}
    if "lc_agent_name" in metadata:
        return config
    return {**given, "metadata": {"lc_agent_name": name, **metadata}}
