"""LangChain tools used with ironloop, and ironloop tools handed to LangChain.

:class:`LangChainTool` is an ironloop ``Tool`` over a LangChain ``BaseTool``: its
schema is the one the model is shown (``tool_call_schema``), it runs through
``invoke`` / ``ainvoke`` with a full ``ToolCall`` (so ``InjectedToolCallId`` works),
parameters marked ``InjectedState`` / ``InjectedStore`` (ironloop's or LangGraph's) are
filled by ironloop, and what it raises becomes an error ``ToolMessage``.
:func:`to_langchain_tool` goes the other way (``Tool.to_langchain()``).

Like ``ironloop._langchain`` (which re-exports both names), this module imports
langchain-core and is imported only once a LangChain object has been recognised. Its
message conversions come from ``ironloop._langchain``, imported where they are used
so that the two modules do not import each other at load time.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
from typing import Any, get_args, get_origin

from langchain_core import messages as lc
from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools.base import TOOL_MESSAGE_BLOCK_TYPES
from langchain_core.utils.function_calling import convert_to_openai_tool

from ironloop._callbacks import current_config
from ironloop._foreign import is_langchain_message, is_langchain_tool
from ironloop._ironloop import BaseMessage as _OwnMessage
from ironloop._ironloop import _coerce_message
from ironloop._langchain_tool_stream import engine_call
from ironloop._tool import Tool, _has_default
from ironloop._tool_call import from_context
from ironloop.runtime import _run_config
from ironloop.types import Command

__all__ = ["LangChainTool", "to_langchain_tool"]


#: The keyword under which ironloop hands a LangChain tool the id of its call.
_CALL_ID = "__ironloop_tool_call_id__"


def _marker(tp: Any) -> tuple[str, str | None] | None:
    """The injection an annotation asks for: ironloop's markers, or LangGraph's
    ``InjectedState`` / ``InjectedStore`` (recognised by name, langgraph need not be
    installed)."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        for meta in get_args(tp)[1:]:
            found = _marker_of(meta)
            if found is not None:
                return found
        return _marker(get_args(tp)[0])
    if isinstance(origin, type):  # ``ToolRuntime[Ctx, State]``
        found = _marker_of(origin)
        if found is not None and found[0] == "runtime":
            return found
    if origin is not None:
        for a in get_args(tp):
            found = _marker(a)
            if found is not None:
                return found
        return None
    if isinstance(tp, type):  # ``runtime: ToolRuntime``
        found = _marker_of(tp)
        return found if found is not None and found[0] == "runtime" else None
    return None


def _marker_of(meta: Any) -> tuple[str, str | None] | None:
    cls = meta if isinstance(meta, type) else type(meta)
    field = None if isinstance(meta, type) else getattr(meta, "field", None)
    kind = getattr(cls, "__ironloop_inject__", None)
    if isinstance(kind, str) and kind:
        return kind, field
    for c in cls.__mro__:
        if c.__module__.startswith("langgraph"):
            if c.__name__ == "InjectedState":
                return "state", field
            if c.__name__ == "InjectedStore":
                return "store", None
            if c.__name__ == "ToolRuntime":
                return "runtime", None
    return None


def _injected_args(t: BaseTool) -> dict[str, tuple[str, str | None]]:
    from langchain_core.tools.base import _is_injected_arg_type, get_all_basemodel_annotations

    annotations: dict[str, Any] = {}
    func = getattr(t, "func", None) or getattr(t, "coroutine", None)
    if func is not None:
        try:
            annotations.update(typing.get_type_hints(func, include_extras=True))
        except Exception:  # unresolvable hints: the schema's annotations still count
            pass
    try:
        annotations.update(get_all_basemodel_annotations(t.get_input_schema()))
    except Exception:  # a tool without a pydantic input schema injects nothing
        pass
    out = {}
    for name, tp in annotations.items():
        found = _marker(tp)
        if found is not None and name != "return":
            out[name] = found
        elif name != "return" and _is_injected_arg_type(tp):
            out[name] = ("caller", None)  # the caller's to give: never the model's
    # A parameter named ``runtime`` is the ToolRuntime whatever its annotation, as
    # LangGraph's ToolNode injects it by name.
    if "runtime" in annotations and "runtime" not in out:
        out["runtime"] = ("runtime", None)
    return out


def _optional_fields(t: BaseTool, injected: dict[str, tuple[str, str | None]]) -> frozenset[str]:
    """The parameters injected from a state field that the tool's input schema does
    not require (they have a default): left to it when the state lacks the field, as
    LangGraph's ToolNode does (its ``_optional_state_args``)."""
    wanted = [k for k, (kind, field) in injected.items() if kind == "state" and field]
    if not wanted:
        return frozenset()
    try:
        fields = getattr(t.get_input_schema(), "model_fields", {})
    except Exception:  # no pydantic input schema: every injected field is required
        return frozenset()
    return frozenset(k for k in wanted if k in fields and not fields[k].is_required())


def _model_facing(t: BaseTool, injected: dict[str, tuple[str, str | None]]) -> Any:
    """What of ``t`` the model is shown: the tool itself, or, when ironloop's markers
    (which langchain-core does not know) inject some of its arguments, the tool's input
    schema without them, so an injected ``BaseStore`` or state never reaches the JSON
    Schema (pydantic cannot describe a store)."""
    schema = t.args_schema
    if not injected or isinstance(schema, dict) or schema is None:
        return t
    from langchain_core.utils.pydantic import _create_subset_model

    full: Any = t.get_input_schema()
    names = list(getattr(full, "model_fields", None) or full.__fields__)  # pydantic 2 / 1
    fields = [n for n in names if n not in injected]
    if len(fields) == len(names):
        return t
    return _create_subset_model(t.name, full, fields, fn_description=t.description)


class _Carried(ToolOutputMixin):
    """An ironloop ``Command`` (or a list holding some, LangGraph's list return) returned
    by a LangChain tool's function, carried through langchain-core (which passes
    ``ToolOutputMixin`` objects through as they are and would turn anything else into
    text)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _carried(r: Any) -> Any:
    """``r`` as ``_Carried`` when langchain-core would otherwise make it text: a
    ``Command``, or a list with one among ``ToolMessage``s (a list return)."""
    if isinstance(r, Command) or (isinstance(r, list) and any(isinstance(x, Command) for x in r)):
        return _Carried(r)
    return r


def _carrying(f: Any, is_async: bool) -> Any:
    """``f`` returning a ``Command`` as a ``_Carried`` (same signature: langchain-core
    reads it at each call)."""
    if is_async:

        @functools.wraps(f)
        async def acarry(*args: Any, **kwargs: Any) -> Any:
            return _carried(await f(*args, **kwargs))

        return acarry

    @functools.wraps(f)
    def carry(*args: Any, **kwargs: Any) -> Any:
        return _carried(f(*args, **kwargs))

    return carry


def _with_commands(t: BaseTool) -> BaseTool:
    """``t``, or a copy that lets an ironloop ``Command`` through: for tools made from
    functions (``@tool``, ``StructuredTool``, ``Tool``) their function wrapped, for a
    ``BaseTool`` subclass its own ``_run`` / ``_arun`` (shadowed on the copy only)."""
    update = {}
    for attr, is_async in (("func", False), ("coroutine", True)):
        f = getattr(t, attr, None)
        if callable(f):
            update[attr] = _carrying(f, is_async)
    if update:
        return t.model_copy(update=update)
    copy = t.model_copy()
    for attr, is_async in (("_run", False), ("_arun", True)):
        # An instance attribute shadows the method; langchain-core reads the wrapped
        # method's signature (``run_manager``) through ``functools.wraps``.
        object.__setattr__(copy, attr, _carrying(getattr(copy, attr), is_async))
    return copy


class LangChainTool(Tool):
    """An ironloop ``Tool`` running a LangChain ``BaseTool`` (made by ``ToolNode``,
    ``create_react_agent`` and ``Tool.from_langchain`` when handed one).

    Example:
        >>> from langchain_core.tools import tool as lc_tool
        >>> @lc_tool
        ... def add(a: int, b: int) -> int:
        ...     "Adds."
        ...     return a + b
        >>> t = LangChainTool(add)
        >>> t.name, t.parameters["required"]
        ('add', ['a', 'b'])
    """

    def __init__(self, lc_tool: BaseTool) -> None:
        if not is_langchain_tool(lc_tool):
            raise TypeError(f"expected a LangChain BaseTool, got {type(lc_tool).__name__}")
        injected = _injected_args(lc_tool)
        fn = convert_to_openai_tool(_model_facing(lc_tool, injected))["function"]
        params = dict(fn.get("parameters") or {"type": "object", "properties": {}})
        if injected:
            props = {k: v for k, v in params.get("properties", {}).items() if k not in injected}
            params["properties"] = props
            params["required"] = [r for r in params.get("required", []) if r not in injected]
        params.setdefault("type", "object")
        super().__init__(
            lc_tool.name,
            fn.get("description", lc_tool.description or ""),
            parameters=params,
            func=lc_tool.invoke,
            return_direct=lc_tool.return_direct,
        )
        self.lc_tool = lc_tool
        self._runner = _with_commands(lc_tool)
        # A ToolRuntime parameter is handed a ToolContext, made a ToolRuntime in `_call`.
        self._runtime_params = [k for k, (kind, _) in injected.items() if kind == "runtime"]
        # langchain-core's other injected arguments (``InjectedToolArg``): a value the
        # model gives for one is dropped, as LangGraph's ToolNode does.
        self._stripped = [k for k, (kind, _) in injected.items() if kind == "caller"]
        injected = {k: v for k, v in injected.items() if k not in self._stripped}
        injected = {
            k: ("context", None) if k in self._runtime_params else v for k, v in injected.items()
        }
        self._injected = {**injected, _CALL_ID: ("tool_call_id", None)}
        self._optional_state = _optional_fields(lc_tool, injected)
        self._is_async = (
            getattr(lc_tool, "func", 0) is None and getattr(lc_tool, "coroutine", None) is not None
        )
        self._target = self._arun if self._is_async else self._run

    def __repr__(self) -> str:
        return f"LangChainTool({self.lc_tool!r})"

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """The LangChain tool's own ``invoke`` (its validation and results)."""
        return self.lc_tool.invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """The LangChain tool's own ``ainvoke``."""
        return await self.lc_tool.ainvoke(input, config, **kwargs)

    def _call(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        call_id = kwargs.pop(_CALL_ID)
        for k, (kind, _) in self._injected.items():
            if kind == "state" and k in kwargs:
                from ironloop._langchain import _lc_value

                kwargs[k] = _lc_value(kwargs[k])
        for k in self._runtime_params:
            kwargs[k] = from_context(kwargs[k])
        for k in self._stripped:
            kwargs.pop(k, None)
        return {"name": self.name, "args": kwargs, "id": call_id, "type": "tool_call"}

    # The run's config goes along, so a tool's `config: RunnableConfig` parameter
    # reads what was given to `invoke` (`configurable`, tags, ...), as in LangGraph;
    # its LangChain run reports under the tool node's (`current_config`).
    # The engine reports the call on the `tools` stream: LangChain's callbacks leave it.
    def _run(self, **kwargs: Any) -> Any:
        config: Any = current_config(_run_config())
        call = self._call(kwargs)
        token = engine_call.set(call["id"])
        try:
            out = self._runner.invoke(call, config)
        finally:
            engine_call.reset(token)
        return _named(_tool_result(out), self.name, call["id"])

    async def _arun(self, **kwargs: Any) -> Any:
        config: Any = current_config(_run_config())
        call = self._call(kwargs)
        token = engine_call.set(call["id"])
        try:
            out = await self._runner.ainvoke(call, config)
        finally:
            engine_call.reset(token)
        return _named(_tool_result(out), self.name, call["id"])


def _named(out: Any, name: str, call_id: str) -> Any:
    """``out``, a ``Command`` whose update answers call ``call_id`` with a
    ``ToolMessage`` without a name, given the tool's name there (as LangGraph's ToolNode
    names it); anything else as it is."""
    update = getattr(out, "update", None) if isinstance(out, Command) else None
    if not isinstance(update, dict):
        return out
    key = next((k for k, v in update.items() if isinstance(v, list)), None)
    if key is None:
        return out
    fixed = [
        m.model_copy(update={"name": name})
        if isinstance(m, lc.ToolMessage) and m.tool_call_id == call_id and not m.name
        else m
        for m in update[key]
    ]
    if all(a is b for a, b in zip(fixed, update[key], strict=True)):
        return out
    return dataclasses.replace(out, update={**update, key: fixed})


def _tool_result(out: Any) -> Any:
    """A LangChain tool's answer for ironloop's tool node: its ``ToolMessage`` as an
    ironloop one (content lists stay lists), anything else (a ``Command``) as it is."""
    if isinstance(out, _Carried):
        return out.value
    if isinstance(out, list) and out and all(isinstance(x, _Carried) for x in out):
        return [x.value for x in out]
    if is_langchain_message(out):
        if isinstance(out.content, list) and not all(
            isinstance(b, dict) and b.get("type") in TOOL_MESSAGE_BLOCK_TYPES for b in out.content
        ):
            # Not content blocks (a list of strings, say): the list's JSON, as LangGraph's
            # ToolNode makes it (non-ASCII kept).
            out = out.model_copy(update={"content": json.dumps(out.content, ensure_ascii=False)})
        return _coerce_message(out)
    return out


def to_langchain_tool(t: Any) -> BaseTool:
    """An ironloop tool as a LangChain ``StructuredTool`` with the same name,
    description and JSON Schema; it calls the ironloop tool's function. Tools whose
    parameters ironloop injects (state, store, call id, context) are refused: a
    LangChain runner would not fill them. One the function gives a default to (as
    ``as_tool``'s ``ctx``) is no obstacle: it is left to its default, as under
    ``Tool.invoke``."""
    if isinstance(t, LangChainTool):
        return t.lc_tool
    func = getattr(t, "func", None)
    injected = [
        k for k in getattr(t, "_injected", {}) if not (callable(func) and _has_default(func, k))
    ]
    if injected:
        raise TypeError(
            f"tool {t.name!r} has parameters ironloop injects ({', '.join(injected)}); "
            "to_langchain() converts tools whose arguments all come from the model, or "
            "whose injected parameters have a default (used when LangChain runs it)"
        )
    target = getattr(t, "_target", None)
    if target is None:  # a Rust tool: run it through its own invoke
        native = t

        def target(**kw: Any) -> Any:
            return native.invoke(kw)

    is_async = bool(getattr(t, "_is_async", False))

    def run(**kw: Any) -> Any:
        return _lc_tool_output(target(**kw))

    async def arun(**kw: Any) -> Any:
        return _lc_tool_output(await target(**kw))

    return StructuredTool(
        name=t.name,
        description=t.description,
        args_schema=dict(t.parameters),
        func=None if is_async else run,
        coroutine=arun if is_async else None,
        return_direct=bool(getattr(t, "return_direct", False)),
    )


def _lc_tool_output(v: Any) -> Any:
    if isinstance(v, _OwnMessage):
        from ironloop._langchain import to_langchain

        return to_langchain(v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type) and not isinstance(v, Command):
        return dataclasses.asdict(v)
    return v
