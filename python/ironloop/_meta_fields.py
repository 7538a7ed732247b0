"""Call meta-fields (the Agent/Tool spec's "Enhancing Tools with Meta-Properties"):
extra properties offered to the model with a tool's arguments that tell the runtime
*how* to run the call. Each is opt-in, per agent (``create_react_agent(...,
call_fields=[...])``) or per tool (``with_call_fields``); each is validated with the
arguments and taken out of them before the tool runs.

- ``_reasoningForCall``: why the model chose the call; it stays in the call's
  arguments on the ``AIMessage`` (so in the state, checkpoints and tool events), is
  copied to the call's ``ToolMessage`` as ``response_metadata["_reasoningForCall"]``
  (by the executor, for every call that carries it) and never reaches the tool.
- ``_outputPath``: ``"notes/summary"`` also writes the result to
  ``state["notes"]["summary"]`` (through the ``notes`` channel's reducer).
- ``_instance``: one schema served by several instances; the call picks one by id.
- ``_delegate``: a named delegate (a function or a sub-agent) runs the call instead
  of the tool; its result must match the tool's ``_output``.
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from ironloop._activities import check_output
from ironloop._tool import Tool, _is_async_callable

__all__ = ["CALL_FIELDS", "register_delegate", "unregister_delegate", "with_call_fields"]

#: The call meta-fields ironloop knows (``_activity`` belongs to a schema, not a call).
CALL_FIELDS = ("_reasoningForCall", "_outputPath", "_instance", "_delegate")
_STATE = "__ironloop_meta_state"
_CALL_ID = "__ironloop_meta_call_id"

_lock = threading.Lock()
_delegates: dict[str, Any] = {}


def register_delegate(name: str, delegate: Any) -> None:
    """Registers a delegate for ``_delegate`` calls: a function ``(schema, args) ->
    result`` or a sub-agent (a compiled graph with ``messages``), which is given the
    tool's schema and arguments as a user message and answers with its
    ``structured_response`` or its last message. Tools wrapped afterwards offer it."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a delegate name must be a non-empty string, got {name!r}")
    if not (callable(delegate) or hasattr(delegate, "invoke")):
        raise TypeError(
            f"delegate {name!r} must be a function (schema, args) -> result or a "
            f"compiled agent, got {type(delegate).__name__}"
        )
    with _lock:
        _delegates[name] = delegate


def unregister_delegate(name: str) -> bool:
    """Removes the delegate ``name``; whether it was registered."""
    with _lock:
        return _delegates.pop(name, None) is not None


def _field_schema(
    field: str, instances: Mapping[str, Any], delegates: Mapping[str, Any]
) -> dict[str, Any]:
    if field == "_reasoningForCall":
        return {"type": "string", "description": "Why you chose this call."}
    if field == "_outputPath":
        return {
            "type": "string",
            "description": "Optional: a state path ('notes/summary') to also store the result at.",
        }
    if field == "_instance":
        return {"enum": sorted(instances), "description": "The instance that runs this call."}
    return {
        "enum": sorted(delegates),
        "description": "Optional: the delegate that runs this call instead of the tool.",
    }


def with_call_fields(
    tool: Tool,
    fields: Iterable[str],
    *,
    instances: Mapping[str, Any] | None = None,
    delegates: Mapping[str, Any] | None = None,
    state_keys: Iterable[str] | None = None,
) -> Tool:
    """``tool`` offering the call meta-fields ``fields`` to the model.

    ``instances`` (``{id: Tool or function}``, needed for ``_instance``) serve the
    calls; ``delegates`` (``{name: delegate}``) are offered for ``_delegate`` with the
    ones registered by ``register_delegate``; ``state_keys`` (the agent's state keys)
    bound what ``_outputPath`` may name.

    Example:
        >>> from ironloop import tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     "Adds."
        ...     return a + b
        >>> t = with_call_fields(add, ["_reasoningForCall"])
        >>> sorted(t.parameters["properties"]), t.func(a=1, b=2, _reasoningForCall="sum")
        (['_reasoningForCall', 'a', 'b'], 3)
    """
    fields = list(dict.fromkeys(fields))
    unknown = [f for f in fields if f not in CALL_FIELDS]
    if unknown:
        raise ValueError(
            f"tool {tool.name!r}: unknown call field(s) {unknown}; known: {list(CALL_FIELDS)}"
        )
    if not fields:
        return tool
    if isinstance(tool, _MetaTool):
        raise TypeError(f"tool {tool.name!r} already has call fields {tool.call_fields}")
    return _MetaTool(tool, fields, dict(instances or {}), dict(delegates or {}), state_keys)


class _MetaTool(Tool):
    """A tool with call meta-fields: checks and strips them, then runs the call."""

    def __init__(
        self,
        inner: Tool,
        fields: list[str],
        instances: dict[str, Any],
        delegates: dict[str, Any],
        state_keys: Iterable[str] | None,
    ) -> None:
        name = inner.name
        if "_instance" in fields and not instances:
            raise ValueError(
                f"tool {name!r}: '_instance' needs instances={{id: tool, ...}} to choose from"
            )
        if "_instance" not in fields and instances:
            raise ValueError(f"tool {name!r}: instances= given without the '_instance' field")
        if "_delegate" in fields:
            with _lock:
                delegates = {**_delegates, **delegates}
            if not delegates:
                raise ValueError(
                    f"tool {name!r}: '_delegate' needs delegates={{name: ...}} or "
                    "ironloop.register_delegate(name, delegate) first"
                )
        props = dict(inner.parameters.get("properties", {}))
        taken = [f for f in fields if f in props]
        if taken:
            raise ValueError(f"tool {name!r}: its parameters already define {taken}")
        for f in fields:
            props[f] = _field_schema(f, instances, delegates)
        required = list(inner.parameters.get("required", []))
        if "_instance" in fields:
            required.append("_instance")
        if "_delegate" in fields and "_output" in required:
            # A delegated latent call gets its result from the delegate.
            required.remove("_output")
        parameters = {**inner.parameters, "properties": props, "required": required}
        self.inner = inner
        self.call_fields = fields
        self._instances = instances
        self._delegates = delegates
        self._state_keys = None if state_keys is None else set(state_keys)
        asynchronous = inner._is_async or any(
            _is_async(t) for t in [*instances.values(), *delegates.values()]
        )
        super().__init__(
            name,
            inner.description,
            parameters=parameters,
            func=self._arun if asynchronous else self._run,
            return_direct=inner.return_direct,
            timeout=inner.timeout,
        )
        self.output_schema = inner.output_schema
        self._injected = dict(inner._injected)
        self._optional_state = inner._optional_state
        if "_outputPath" in fields:
            self._injected[_STATE] = ("state", None)
            self._injected[_CALL_ID] = ("tool_call_id", None)

    # --- the call ---

    def _prepare(self, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any], Any, Any]:
        """(target, args, path, state): the meta-fields taken out and checked."""
        state = kwargs.pop(_STATE, None)
        kwargs.pop(_CALL_ID, None)
        kwargs.pop("_reasoningForCall", None)
        path = kwargs.pop("_outputPath", None)
        if path is not None:
            self._check_path(path, state)
        target: Any = self.inner
        instance = kwargs.pop("_instance", None)
        if "_instance" in self.call_fields:
            if instance not in self._instances:
                raise LookupError(
                    f"tool {self.name!r}: unknown _instance {instance!r}; "
                    f"choose one of {sorted(self._instances)}"
                )
            target = self._instances[instance]
        delegate = kwargs.pop("_delegate", None)
        if delegate is not None:
            if delegate not in self._delegates:
                raise LookupError(
                    f"tool {self.name!r}: unknown _delegate {delegate!r}; "
                    f"choose one of {sorted(self._delegates)}"
                )
            target = _Delegated(self, delegate, self._delegates[delegate])
        return target, kwargs, path, state

    def _check_path(self, path: Any, state: Any) -> None:
        parts = path.split("/") if isinstance(path, str) else []
        keys = self._state_keys if self._state_keys is not None else set(state or {})
        why = None
        if not parts or any(not p for p in parts):
            why = "it must be 'key' or 'key/sub/...' with no empty part"
        elif parts[0] == "messages":
            why = "the messages are the agent's own; name another state key"
        elif parts[0] not in keys:
            why = f"the state has no key {parts[0]!r} (keys: {sorted(keys - {'messages'})})"
        else:
            node = (state or {}).get(parts[0])
            for p in parts[1:-1]:
                if node is None:
                    break
                if not isinstance(node, dict):
                    why = f"{p!r} is under a value that is not an object"
                    break
                node = node.get(p)
            if why is None and len(parts) > 1 and node is not None and not isinstance(node, dict):
                why = f"{'/'.join(parts[:-1])!r} is not an object"
        if why:
            raise ValueError(f"tool {self.name!r}: invalid _outputPath {path!r}: {why}")

    def _finish(self, result: Any, path: Any, state: Any, call_id: Any, reasoning: Any) -> Any:
        if path is None:
            return result
        from ironloop.messages import ToolMessage
        from ironloop.types import Command

        parts = path.split("/")
        value = result
        if len(parts) > 1:
            root = copy.deepcopy((state or {}).get(parts[0]) or {})
            node = root
            for p in parts[1:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = result
            value = root
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        # The executor keeps a call's reasoning on the message it makes; this one is
        # the tool's own (inside a Command), so it is kept here.
        meta = {"_reasoningForCall": reasoning} if isinstance(reasoning, str) else {}
        msg = ToolMessage(content, tool_call_id=call_id, name=self.name, response_metadata=meta)
        return Command(update={parts[0]: value, "messages": [msg]})

    def _run(self, **kwargs: Any) -> Any:
        call_id, reasoning = kwargs.get(_CALL_ID), kwargs.get("_reasoningForCall")
        target, args, path, state = self._prepare(kwargs)
        result = _call(target, args)
        if inspect.isawaitable(result):
            raise TypeError(f"tool {self.name!r}: an async instance or delegate under a sync tool")
        return self._finish(result, path, state, call_id, reasoning)

    async def _arun(self, **kwargs: Any) -> Any:
        call_id, reasoning = kwargs.get(_CALL_ID), kwargs.get("_reasoningForCall")
        target, args, path, state = self._prepare(kwargs)
        result = _call(target, args)
        if inspect.isawaitable(result):
            result = await result
        return self._finish(result, path, state, call_id, reasoning)


class _Delegated:
    """A ``_delegate`` call: the delegate gets the tool's schema and arguments."""

    def __init__(self, tool: _MetaTool, name: str, delegate: Any) -> None:
        self.tool, self.name, self.delegate = tool, name, delegate

    def schema(self) -> dict[str, Any]:
        t = self.tool.inner
        return {"name": t.name, "description": t.description, "parameters": t.parameters}

    def __call__(self, **args: Any) -> Any:
        args.pop("_output", None)
        if hasattr(self.delegate, "get_graph") or hasattr(self.delegate, "ainvoke"):
            return self._agent(args)
        result = self.delegate(self.schema(), args)
        if inspect.isawaitable(result):
            return self._checked_later(result)
        return check_output(self.tool.name, self.tool.output_schema, result)

    async def _checked_later(self, result: Any) -> Any:
        return check_output(self.tool.name, self.tool.output_schema, await result)

    def _agent(self, args: dict[str, Any]) -> Any:
        ask = (
            f"Carry out this call of the tool {self.tool.name!r} and answer with its "
            f"result only.\nTool: {json.dumps(self.schema(), ensure_ascii=False)}\n"
            f"Arguments: {json.dumps(args, ensure_ascii=False)}"
        )
        if self.tool.output_schema is not None:
            ask += f"\nThe result must match: {json.dumps(self.tool.output_schema)}"
        out = self.delegate.invoke({"messages": [("user", ask)]})
        if "structured_response" in out and out["structured_response"] is not None:
            result = out["structured_response"]
        else:
            text = out["messages"][-1].text
            try:
                result = json.loads(text) if self.tool.output_schema is not None else text
            except json.JSONDecodeError:
                result = text
        return check_output(self.tool.name, self.tool.output_schema, result)


def _is_async(target: Any) -> bool:
    if isinstance(target, Tool):
        return target._is_async
    return _is_async_callable(target)


def _call(target: Any, args: dict[str, Any]) -> Any:
    if isinstance(target, Tool):
        return target._target(**args)
    return target(**args)


def agent_tools(
    tools: list[Any], call_fields: Iterable[str] | None, state_keys: Iterable[str] | None
) -> list[Any]:
    """An agent's tools with its ``call_fields``: every ironloop ``Tool`` not already
    given call fields is wrapped; others (functions, LangChain tools, provider dicts)
    are refused, as they cannot be wrapped here."""
    fields = list(call_fields or [])
    if not fields:
        return tools
    if "_instance" in fields:
        raise ValueError(
            "call_fields=['_instance'] needs each tool's instances: use "
            "ironloop.with_call_fields(tool, ['_instance'], instances={...}) per tool"
        )
    keys = list(state_keys) if state_keys is not None else None
    out: list[Any] = []
    for t in tools:
        if isinstance(t, _MetaTool) or isinstance(t, dict):
            out.append(t)
            continue
        if callable(t) and not isinstance(t, Tool) and not hasattr(t, "args_schema"):
            from ironloop._tool import tool as make_tool

            t = make_tool(t)
        if not isinstance(t, Tool):
            raise TypeError(
                f"call_fields applies to ironloop tools; got {type(t).__name__}: "
                "make it one first (Tool.from_langchain, @tool)"
            )
        out.append(with_call_fields(t, fields, state_keys=keys))
    return out
