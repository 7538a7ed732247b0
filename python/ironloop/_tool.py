"""The tool abstraction on the Python side: the ``Tool`` class and the ``@tool``
decorator that makes one from a function (public as ``ironloop.Tool`` /
``ironloop.tool``). It mirrors the crate's ``src/tool/``; places tools come from
(the workspace, MCP servers, OpenAPI specs) are in ``ironloop.sources``."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Sequence
from typing import Any, TypedDict, TypeVar, overload

from typing_extensions import Unpack

from ironloop._ironloop import _check_tool_name, _json_schema_errors, _timeout_seconds
from ironloop._schema import function_spec

__all__ = ["Tool", "compose_schema", "tool"]

F = TypeVar("F", bound=Callable[..., Any])


class Tool:
    """A tool the model can call: a name, a description, a JSON Schema for its
    arguments, and the function that runs it.

    ``Tool(name, description, parameters=..., func=...)`` makes a tool from a raw
    schema; ``func`` is called as ``func(**args)``. Use ``@tool`` to derive everything
    from a function's signature and docstring instead.

    Example:
        >>> def add(a, b):
        ...     return a + b
        >>> t = Tool("add", "Adds two integers.", func=add, parameters={
        ...     "type": "object",
        ...     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        ...     "required": ["a", "b"],
        ... })
        >>> t.to_openai()["function"]["name"]
        'add'
    """

    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., Any]
    return_direct: bool
    timeout: float | None
    label: str | None
    output_schema: dict[str, Any] | None
    #: Free-form data about the tool, as LangChain's ``BaseTool.metadata``: ironloop
    #: does not read it; code that finds tools in a graph does (langgraph-swarm reads
    #: its handoff tools' destinations from ``get_graph()``'s ``ToolNode`` so).
    metadata: dict[str, Any] | None = None

    def __init__(
        self,
        name: str,
        description: str,
        *,
        parameters: dict[str, Any] | None = None,
        func: Callable[..., Any] | None = None,
        return_direct: bool = False,
        timeout: float | None = None,
        label: str | None = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"a tool name must be a str, got {type(name).__name__} {name!r}")
        # The providers' rule (^[a-zA-Z0-9_-]{1,64}$), checked here rather than by a
        # provider's opaque HTTP 400 on the first request.
        _check_tool_name(name)
        if not isinstance(description, str):
            raise TypeError(f"tool {name!r}: description must be a str")
        # Without parameters / func, the tool is built step by step: ``.param(...)``,
        # ``.param_opt(...)``, then ``.call(fn)``.
        self._building = parameters is None or func is None
        if parameters is None:
            parameters = {"type": "object", "properties": {}, "required": []}
        if func is None:
            func = _unfinished(name)
        if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
            raise TypeError(
                f"tool {name!r}: parameters must be a JSON Schema dict for an object, "
                'e.g. {"type": "object", "properties": {...}, "required": [...]}'
            )
        if not callable(func):
            raise TypeError(f"tool {name!r}: func must be callable, got {type(func).__name__}")
        self.name = name
        self.description = description
        self.parameters = parameters
        self.func = func
        self.return_direct = bool(return_direct)
        self.timeout = _timeout_seconds(timeout, f"tool {name!r}: timeout")
        if label is not None and not isinstance(label, str):
            raise TypeError(
                f"tool {name!r}: label must be a str (a human-readable name for its calls, "
                f"e.g. 'Searching the web'), got {type(label).__name__}"
            )
        #: A human-readable label for the tool's calls (yoagent's ``label``): shown in
        #: the ``tools`` stream's start event and on ``ToolContext.label``.
        self.label = label
        #: The result's JSON Schema (the spec's ``_output``), when declared.
        self.output_schema = None
        self._injected: dict[str, tuple[str, str | None]] = {}
        #: Parameters injected from a state field that have a default: when the state
        #: lacks the field, the parameter is left to its default (LangGraph's
        #: ``_optional_state_args``) rather than the call failing.
        self._optional_state: frozenset[str] = frozenset()
        self._target: Callable[..., Any] = func
        self._is_async = _is_async_callable(func)

    def param(self, name: str, type: str, description: str = "") -> Tool:
        """Adds a required argument ``name`` of JSON Schema ``type`` (``"string"``,
        ``"integer"``, ``"number"``, ``"boolean"``, ``"array"``, ``"object"``) with
        its ``description``; returns the tool, for chaining. Arguments are checked
        against the schema before the function runs, as for every tool.

        Example:
            >>> t = (Tool("search", "Search the web.")
            ...      .param("query", "string", "The query")
            ...      .param_opt("limit", "integer", "Max results")
            ...      .call(lambda query, limit=5: f"{limit} results for {query}"))
            >>> t.parameters["required"], t.parameters["properties"]["limit"]["type"]
            (['query'], 'integer')
            >>> t.invoke({"query": "rust"})
            '5 results for rust'
        """
        return self._add_param(name, type, description, required=True)

    def param_opt(self, name: str, type: str, description: str = "") -> Tool:
        """Adds an optional argument (see ``param``); the function is called without it
        when the model leaves it out."""
        return self._add_param(name, type, description, required=False)

    def call(self, func: Callable[..., Any]) -> Tool:
        """Sets the function the tool runs, called with the arguments as keywords (sync
        or async); returns the tool."""
        if not callable(func):
            raise TypeError(
                f"tool {self.name!r}: call() takes a function, got {type(func).__name__}"
            )
        self.func = func
        self._target = func
        self._is_async = _is_async_callable(func)
        self._building = False
        return self

    def _add_param(self, name: str, type: str, description: str, *, required: bool) -> Tool:
        if not isinstance(name, str) or not name:
            raise TypeError(f"tool {self.name!r}: a parameter name must be a non-empty str")
        if type not in _JSON_TYPES:
            raise ValueError(
                f"tool {self.name!r}: parameter {name!r} has type {type!r}; use a JSON Schema "
                f"type: {', '.join(_JSON_TYPES)}"
            )
        props = self.parameters.setdefault("properties", {})
        if name in props:
            raise ValueError(f"tool {self.name!r}: parameter {name!r} is declared twice")
        props[name] = {"type": type, **({"description": description} if description else {})}
        if required:
            self.parameters.setdefault("required", []).append(name)
        return self

    @property
    def args_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema (alias of ``parameters``)."""
        return self.parameters

    def to_openai(self) -> dict[str, Any]:
        """The tool as an entry of OpenAI's Chat Completions ``tools`` list."""
        return openai_tool(self.name, self.description, self.parameters)

    def to_anthropic(self) -> dict[str, Any]:
        """The tool as an entry of Anthropic's Messages ``tools`` list."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def to_langchain(self) -> Any:
        """This tool as a LangChain ``StructuredTool`` (needs langchain-core): same name,
        description and JSON Schema, running this tool's function. A tool made from a
        LangChain tool gives that tool back.

        Example:
            >>> def add(a: int, b: int) -> int:
            ...     return a + b
            >>> t = Tool("add", "Adds.", func=add, parameters={"type": "object",
            ...     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})
            >>> t.to_langchain().invoke({"a": 1, "b": 2})
            3
        """
        from ironloop._langchain_tools import to_langchain_tool

        return to_langchain_tool(self)

    @classmethod
    def from_langchain(cls, lc_tool: Any) -> Tool:
        """An ironloop tool running a LangChain ``BaseTool`` (what ``ToolNode`` and
        ``create_react_agent`` do with one): its schema is the one LangChain shows the
        model, it runs through ``invoke`` / ``ainvoke`` with the full tool call, and
        ``InjectedState`` / ``InjectedStore`` parameters are filled by ironloop."""
        from ironloop._langchain_tools import LangChainTool

        return LangChainTool(lc_tool)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """Runs the tool outside an agent, as a LangChain tool's ``invoke`` does:
        ``input`` is the arguments (a dict), or a whole tool call (``{"type":
        "tool_call", "name", "args", "id"}``), whose result comes back as a
        ``ToolMessage`` answering it (a ``Command`` or ``ToolMessage`` the tool returns
        is passed through). Arguments are checked against the schema first: a mismatch
        raises ``ValueError`` listing the errors. ``config`` is accepted for LangChain's
        signature and unused.

        Example:
            >>> def add(a: int, b: int) -> int:
            ...     return a + b
            >>> t = Tool("add", "Adds.", func=add, parameters={"type": "object",
            ...     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})
            >>> t.invoke({"a": 1, "b": 2})
            3
            >>> t.invoke({"type": "tool_call", "name": "add", "args": {"a": 1, "b": 2},
            ...           "id": "c1"}).content
            '3'
        """
        call, args = self._arguments(input)
        result = self._target(**args)
        if inspect.isawaitable(result):
            import asyncio

            result = asyncio.run(_awaited(result))
        return _answer(call, result, self.name)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """``invoke`` for async code: an async tool is awaited, a sync one runs in a
        worker thread."""
        call, args = self._arguments(input)
        if self._is_async:
            result = await self._target(**args)
        else:
            import asyncio

            result = await asyncio.to_thread(self._target, **args)
        return _answer(call, result, self.name)

    def _arguments(self, input: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The tool call ``input`` is (or ``None``) and the keyword arguments to run the
        function with: the checked arguments, and the tool call's id where asked."""
        call = input if isinstance(input, dict) and input.get("type") == "tool_call" else None
        raw = call.get("args", {}) if call is not None else input
        if not isinstance(raw, dict):
            raise TypeError(
                f"tool {self.name!r}: invoke takes the arguments as a dict or a tool call "
                f"dict, got {type(raw).__name__}"
            )
        args = {k: v for k, v in raw.items() if k not in self._injected}
        errors = _json_schema_errors(self.parameters, args)
        if errors:
            plural = "s" if len(errors) > 1 else ""
            raise ValueError(
                f"{len(errors)} validation error{plural} for {self.name}\n"
                + "\n".join(errors)
                + "\nFix the arguments to match the tool's schema (`tool.parameters`)."
            )
        for param, (kind, _) in self._injected.items():
            if kind == "tool_call_id" and call is not None:
                args[param] = call.get("id")
            elif param in raw:
                args[param] = raw[param]
            elif _has_default(self.func, param):
                continue  # run outside an agent: the function's default stands in
            else:
                raise TypeError(
                    f"tool {self.name!r}: parameter {param!r} is injected ({kind}) by an "
                    "agent's tools node; run the tool in an agent, or give it in the input"
                )
        return call, args

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, description={self.description!r})"

    @classmethod
    def from_schema(cls, schema: dict[str, Any]) -> Tool:
        """A tool that is only a schema. By default it is *latent*: the model produces
        its result itself, in the extra argument ``_output``, and that is the result.

        ``schema`` is an OpenAI ``tools`` entry (``{"type": "function", "function":
        {...}}``), an Anthropic one (``{"name", "description", "input_schema"}``),
        ``{"name", "description", "parameters"}``, or the Agent/Tool spec's shape: an
        object schema whose ``properties`` hold ``"_tool": {"const": <name>}``.

        A property ``_output`` (in the parameters) declares the result's JSON Schema:
        a latent result is checked against it with the arguments, an explicit one
        after the function ran; a result that does not match is an error result the
        model can correct. A key ``_activity`` names a function registered with
        ``register_activity``: the tool runs it (explicit execution) instead of taking
        the model's ``_output``; it is looked up at each call, so the function can be
        swapped independently of the schema.

        Example:
            >>> t = Tool.from_schema({"name": "recall", "description": "Recalls a fact.",
            ...     "parameters": {"type": "object", "properties": {"topic": {"type": "string"}},
            ...                    "required": ["topic"]}})
            >>> t.parameters["required"]
            ['topic', '_output']
            >>> t.func(topic="sky", _output="blue")
            'blue'
        """
        if not isinstance(schema, dict):
            raise TypeError(f"Tool.from_schema expects a dict, got {type(schema).__name__}")
        spec = schema.get("function", schema) if schema.get("type") == "function" else schema
        name = spec.get("name")
        raw_props = spec.get("properties")
        spec_props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
        tool_prop = spec_props.get("_tool")
        if name is None and isinstance(tool_prop, dict) and "const" in tool_prop:
            # The spec's shape: the schema is the parameters, named by `_tool`.
            name = tool_prop["const"]
            params = {
                k: v for k, v in spec.items() if k not in ("description", "title", "_activity")
            }
            params["properties"] = {k: v for k, v in spec_props.items() if k != "_tool"}
            params["required"] = [r for r in spec.get("required", []) if r != "_tool"]
        else:
            params = spec.get("parameters", spec.get("input_schema", {"type": "object"}))
        if not isinstance(name, str) or not name:
            raise ValueError(f"Tool.from_schema: the schema has no 'name': {schema!r}")
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            raise TypeError(
                f"Tool.from_schema({name!r}): parameters must be a JSON Schema for an object"
            )
        props = dict(params.get("properties", {}))
        output_schema = props.pop("_output", None)
        if output_schema is not None and not isinstance(output_schema, dict):
            raise TypeError(
                f"Tool.from_schema({name!r}): '_output' must be the result's JSON Schema, "
                f"got {type(output_schema).__name__}"
            )
        required = [r for r in params.get("required", []) if r != "_output"]
        activity = spec.get("_activity", schema.get("_activity"))
        description = str(spec.get("description", ""))
        if activity is not None:
            from ironloop._activities import activity_runner

            parameters = {**params, "properties": props, "required": required}
            func = activity_runner(name, activity, output_schema)
        else:
            latent = {"description": "The result of this tool, which you produce yourself."}
            props["_output"] = {**latent, **(output_schema or {})}
            parameters = {**params, "properties": props, "required": [*required, "_output"]}

            def func(**kwargs: Any) -> Any:
                return kwargs["_output"]

        made = cls(name, description, parameters=parameters, func=func)
        made.output_schema = output_schema
        return made


class _FunctionTool(Tool):
    """A tool made by ``@tool``: it stays callable like the function it wraps."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None,
        description: str | None,
        return_direct: bool,
        timeout: float | None,
        parse_docstring: bool,
        label: str | None = None,
    ) -> None:
        spec = function_spec(
            func, name=name, description=description, parse_docstring=parse_docstring
        )
        super().__init__(
            spec.name,
            spec.description,
            parameters=spec.parameters,
            func=func,
            return_direct=return_direct,
            timeout=timeout,
            label=label,
        )
        self._injected = dict(spec.injected)
        self._optional_state = frozenset(
            k
            for k, (kind, field) in self._injected.items()
            if kind == "state" and field and _has_default(func, k)
        )
        self._is_async = spec.is_async
        self._target = _converting(func, spec.converters, spec.is_async)
        functools.update_wrapper(self, func)  # type: ignore[arg-type]


def openai_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """An entry of OpenAI's Chat Completions ``tools`` list: the function ``name``,
    described, taking arguments of the JSON Schema ``parameters``."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


def _has_default(func: Callable[..., Any], param: str) -> bool:
    """Whether ``func``'s parameter ``param`` has a default, so that an injected one
    may be left out when the tool runs with no agent to inject it."""
    try:
        p = inspect.signature(func).parameters.get(param)
    except (TypeError, ValueError):  # no signature to read (a builtin, say)
        return False
    return p is not None and p.default is not inspect.Parameter.empty


#: The JSON Schema type names ``Tool.param`` takes.
_JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object")


def _unfinished(name: str) -> Callable[..., Any]:
    """The function of a tool still being built: running it says what is missing."""

    def missing(**_kwargs: Any) -> Any:
        raise TypeError(f"tool {name!r} has no function yet: finish it with .call(fn)")

    return missing


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _answer(call: dict[str, Any] | None, result: Any, name: str) -> Any:
    """What ``Tool.invoke`` returns: ``result``, or for a tool call the ``ToolMessage``
    answering it (text as is, content blocks as they are, anything else as JSON)."""
    from ironloop.messages import ToolMessage
    from ironloop.types import Command

    if call is None or isinstance(result, (ToolMessage, Command)):
        return result
    if isinstance(result, str) or (
        isinstance(result, list) and all(isinstance(b, (str, dict)) for b in result)
    ):
        content: Any = result
    else:
        try:
            content = json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError):
            content = str(result)
    return ToolMessage(content=content, tool_call_id=call.get("id") or "", name=name)


def _is_async_callable(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    if inspect.iscoroutinefunction(func):
        return True
    call = getattr(func, "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


def _converting(
    func: Callable[..., Any], converters: dict[str, Callable[[Any], Any]], is_async: bool
) -> Callable[..., Any]:
    """``func``, or a wrapper that first turns JSON arguments into the annotated types
    (dataclasses, pydantic models, enums). Plain JSON tools skip the wrapper."""
    if not converters:
        return func

    def convert(kwargs: dict[str, Any]) -> dict[str, Any]:
        for k, conv in converters.items():
            if k in kwargs:
                kwargs[k] = conv(kwargs[k])
        return kwargs

    if is_async:

        async def run_async(**kwargs: Any) -> Any:
            return await func(**convert(kwargs))

        return run_async

    def run(**kwargs: Any) -> Any:
        return func(**convert(kwargs))

    return run


class _ToolOptions(TypedDict, total=False):
    """``@tool``'s keywords but ``name`` (its overloads' one list; defaults on ``tool``)."""

    description: str | None
    return_direct: bool
    timeout: float | None
    parse_docstring: bool
    label: str | None


@overload
def tool(name_or_func: F, /) -> Tool: ...
@overload
def tool(name_or_func: str, /, **options: Unpack[_ToolOptions]) -> Callable[[F], Tool]: ...
@overload
def tool(
    name_or_func: None = None, /, *, name: str | None = None, **options: Unpack[_ToolOptions]
) -> Callable[[F], Tool]: ...


def tool(
    name_or_func: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    timeout: float | None = None,
    parse_docstring: bool = True,
    label: str | None = None,
) -> Any:
    """Makes a tool from a sync or async function.

    The JSON Schema of the arguments comes from the type hints, the description and
    the per-argument descriptions from the docstring (Google, NumPy or reST style).
    Parameters annotated ``InjectedState``, ``InjectedStore``, ``InjectedToolCallId``
    or typed ``ToolContext`` are filled by the runtime and hidden from the model. The
    decorated function stays callable as before.

    Forms: ``@tool``, ``@tool("name")``, ``@tool(return_direct=True, timeout=5.0)``.
    ``label=`` gives the tool's calls a human-readable label (``ToolContext.label``,
    and the ``tools`` stream's start event).

    Example:
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Adds two integers.
        ...
        ...     Args:
        ...         a: The first.
        ...         b: The second.
        ...     '''
        ...     return a + b
        >>> add(1, 2), add.name, add.parameters["required"]
        (3, 'add', ['a', 'b'])
    """

    def make(func: Any, tool_name: str | None) -> Tool:
        if isinstance(func, Tool):
            raise TypeError(f"@tool applied twice to {func.name!r}")
        if not callable(func):
            raise TypeError(
                f"@tool expects a function (def or async def) or another callable, "
                f"got {type(func).__name__} {func!r}"
            )
        return _FunctionTool(
            func,
            name=tool_name,
            description=description,
            return_direct=return_direct,
            timeout=timeout,
            parse_docstring=parse_docstring,
            label=label,
        )

    if name_or_func is None:
        return lambda f: make(f, name)
    if isinstance(name_or_func, str):
        if name is not None:
            raise TypeError("@tool: give the name once, positionally or as name=")
        return lambda f: make(f, name_or_func)
    return make(name_or_func, name)


def compose_schema(
    tools: Sequence[Any], output_schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One JSON Schema, ``{"calls": [...], "output": ...}``, with which a model that has
    no native tool calling can drive an agent through structured output: ``calls``
    lists tool calls, each the tool's arguments plus the spec's discriminator
    ``"_tool": <its name>``; ``output`` is the final answer (``null`` while calling
    tools). An answer may carry both: its calls run, then ``output`` ends the run.

    The tools' ``$defs`` are gathered at the top, where their ``$ref`` s point.

    Example:
        >>> s = compose_schema([Tool("add", "Adds.", func=lambda a, b: a + b, parameters={
        ...     "type": "object", "properties": {"a": {"type": "integer"},
        ...     "b": {"type": "integer"}}, "required": ["a", "b"]})])
        >>> v = s["properties"]["calls"]["items"]["anyOf"][0]
        >>> v["properties"]["_tool"], v["required"]
        ({'const': 'add'}, ['_tool', 'a', 'b'])
    """
    variants = []
    defs: dict[str, Any] = {}
    for t in tools:
        params = dict(t.parameters)
        props = params.pop("properties", {}) or {}
        if "_tool" in props:
            raise ValueError(
                f"tool {t.name!r}: '_tool' is reserved for the tool's name in a composed "
                "schema; rename that parameter"
            )
        for k, v in (params.pop("$defs", None) or {}).items():
            if k in defs and defs[k] != v:
                raise ValueError(
                    f"compose_schema: two tools define a different $defs entry {k!r}; "
                    "rename one of the types"
                )
            defs[k] = v
        required = [r for r in params.pop("required", []) if r != "_tool"]
        variants.append(
            {
                **params,
                "type": "object",
                "description": t.description,
                "properties": {"_tool": {"const": t.name}, **props},
                "required": ["_tool", *required],
            }
        )
    output = output_schema if output_schema is not None else {"type": "string"}
    composed: dict[str, Any] = {
        "type": "object",
        "properties": {
            "calls": {"type": "array", "items": {"anyOf": variants} if variants else {}},
            "output": {"anyOf": [output, {"type": "null"}]},
        },
        "required": ["calls", "output"],
    }
    if defs:
        composed["$defs"] = defs
    return composed
