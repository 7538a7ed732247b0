"""``create_agent``'s ``response_format`` strategies, as LangChain 1.x's
``langchain.agents.structured_output`` has them (public from
``ironloop.agents.structured_output``).

- ``ToolStrategy(schema)``: the model is offered one artificial tool per schema (a
  union gives one per member) and made to call a tool; a call of an output tool is
  the structured response, answered with a ``ToolMessage`` in the model node (no tool
  runs). Arguments that do not fit are answered to the model per ``handle_errors``
  and the model is asked again.
- ``ProviderStrategy(schema)``: the provider's native JSON-schema output (OpenAI's
  ``response_format={"type": "json_schema", ...}``); the final answer's text is the
  JSON. ironloop's Anthropic client has no native one: its ``response_format`` is a
  forced tool call, which cannot go with the agent's own tools, so
  ``ProviderStrategy`` with an ``AnthropicChat`` is a ``ValueError`` (use
  ``ToolStrategy``, or a bare schema, which picks it).
- a bare schema: ``ProviderStrategy`` for a model known to have native structured
  output (LangChain's list of model names, or a LangChain model's profile), else
  ``ToolStrategy``.
"""

from __future__ import annotations

import inspect
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    TypeVar,
    Union,
    get_args,
    get_origin,
)

from typing_extensions import is_typeddict  # typing's misses typing_extensions' own

from ironloop import messages as _messages
from ironloop._ironloop import _json_schema_errors
from ironloop._schema import type_schema
from ironloop._tool import openai_tool
from ironloop.errors import ModelError

if TYPE_CHECKING:
    from ironloop.messages import AIMessage, ToolMessage

SchemaT = TypeVar("SchemaT")


def _accepts(fn: Any, name: str) -> bool:
    """Whether ``fn`` takes a keyword argument ``name`` (or ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def model_structured(model: Any, fmt: Any, messages: list[Any]) -> Any:
    """``create_react_agent``'s structured response from a plain model object: asked
    with ``response_format=`` when it takes one (else plainly), its JSON validated."""
    schema, convert = type_schema(fmt)
    if _accepts(model.invoke, "response_format"):
        resp = model.invoke(messages, tools=None, response_format=schema)
    else:
        # A model object without structured output: ask plainly, validate the JSON.
        resp = model.invoke(messages)
    return _structured_value(resp, schema, convert)


async def model_structured_async(model: Any, fmt: Any, messages: list[Any]) -> Any:
    """The async form of :func:`model_structured`."""
    if not hasattr(model, "ainvoke"):
        return model_structured(model, fmt, messages)
    schema, convert = type_schema(fmt)
    if _accepts(model.ainvoke, "response_format"):
        resp = await model.ainvoke(messages, tools=None, response_format=schema)
    else:
        resp = await model.ainvoke(messages)
    return _structured_value(resp, schema, convert)


def _structured_value(resp: Any, schema: Any, convert: Any) -> Any:
    from ironloop._agent import _as_ai

    text = _as_ai(resp).text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ModelError(f"the structured response is not JSON ({e}): {text[:200]!r}") from e
    errors = _json_schema_errors(schema, value)
    if errors:
        raise ModelError("the structured response does not match the schema: " + "; ".join(errors))
    return convert(value) if convert else value


#: The reply to a structured output the model got wrong (LangChain's template).
STRUCTURED_OUTPUT_ERROR_TEMPLATE = "Error: {error}\n Please fix your mistakes."

#: Model names taken to have provider-native structured output when the model says
#: nothing itself (LangChain 1.x's ``FALLBACK_MODELS_WITH_STRUCTURED_OUTPUT``, its
#: OpenAI-family entries: ironloop's Anthropic client has no native JSON output).
_NATIVE_MODELS = [
    r"(^|[/:.])gpt-4\.1($|[-/:])",
    r"(^|[/:.])gpt-4o($|[-/:])",
    r"(^|[/:.])gpt-5($|[-/:])",
    r"(^|[/:.])gpt-5\.\d(-\d{4}-\d{2}-\d{2})?($|[-/:])",
    r"(^|[/:.])grok-4($|[-.:/])",
]


class StructuredOutputError(Exception):
    """A structured output the model got wrong, with the ``AIMessage`` it came in."""

    ai_message: AIMessage


class MultipleStructuredOutputsError(StructuredOutputError):
    """The model called several output tools where one answer was expected."""

    def __init__(self, tool_names: list[str], ai_message: AIMessage) -> None:
        self.tool_names = tool_names
        self.ai_message = ai_message
        super().__init__(
            "Model incorrectly returned multiple structured responses "
            f"({', '.join(tool_names)}) when only one is expected."
        )


class StructuredOutputValidationError(StructuredOutputError):
    """The structured output does not fit its schema (``source`` says how)."""

    def __init__(self, tool_name: str, source: Exception, ai_message: AIMessage) -> None:
        self.tool_name = tool_name
        self.source = source
        self.ai_message = ai_message
        super().__init__(f"Failed to parse structured output for tool '{tool_name}': {source}.")


def _kind(schema: Any) -> str:
    if isinstance(schema, dict):
        return "json_schema"
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return "pydantic"
    if is_dataclass(schema):
        return "dataclass"
    if is_typeddict(schema):
        return "typeddict"
    raise ValueError(
        f"Unsupported schema type: {type(schema)}. Supported types: Pydantic models, "
        "dataclasses, TypedDicts, and JSON schema dicts."
    )


@dataclass(init=False)
class _SchemaSpec(Generic[SchemaT]):
    """One schema of a response format: its name (the output tool's), description,
    JSON Schema, and how a value is checked and made into it."""

    schema: Any
    name: str
    description: str
    schema_kind: str  # "pydantic", "dataclass", "typeddict" or "json_schema"
    json_schema: dict[str, Any]
    strict: bool | None = None

    def __init__(
        self,
        schema: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
    ) -> None:
        self.schema = schema
        self.schema_kind = _kind(schema)
        fallback = f"response_format_{str(uuid.uuid4())[:4]}"
        if name:
            self.name = name
        elif isinstance(schema, dict):
            self.name = str(schema.get("title", fallback))
        else:
            self.name = str(getattr(schema, "__name__", fallback))
        self.description = description or (
            schema.get("description", "")
            if isinstance(schema, dict)
            else inspect.cleandoc(getattr(schema, "__doc__", None) or "")
        )
        self.strict = strict
        self.json_schema, self._convert = type_schema(schema)

    def parse(self, data: Any) -> Any:
        """``data`` checked against the schema and made into its type; a
        ``ValueError`` saying what does not fit otherwise."""
        errors = _json_schema_errors(self.json_schema, data)
        if errors:
            raise ValueError(f"Failed to parse data to {self.name}: " + "; ".join(errors))
        if self._convert is None:
            return data
        try:
            return self._convert(data)
        except Exception as e:
            raise ValueError(f"Failed to parse data to {self.name}: {e}") from e

    def lc_tool(self) -> Any:
        """The output tool as a LangChain ``StructuredTool``: what a LangChain model is
        bound with (as LangChain's ``ToolStrategy`` binds it, so a model's own
        ``bind_tools`` sees tool objects). Made once."""
        made = self.__dict__.get("_lc_tool")
        if made is None:
            from langchain_core.tools import StructuredTool

            made = StructuredTool(
                args_schema=self.json_schema, name=self.name, description=self.description
            )
            self.__dict__["_lc_tool"] = made
        return made

    def tool(self) -> dict[str, Any]:
        """The output tool offered to the model, in OpenAI's function form."""
        return openai_tool(self.name, self.description, self.json_schema)


HandleErrors = (
    bool | str | type[Exception] | tuple[type[Exception], ...] | Callable[[Exception], str]
)


def _variants(schema: Any) -> list[Any]:
    """The members of a union (``A | B``, ``Union[A, B]``, a JSON Schema ``oneOf``)."""
    if get_origin(schema) in {UnionType, Union}:
        return [v for arg in get_args(schema) for v in _variants(arg)]
    if isinstance(schema, dict) and "oneOf" in schema:
        return [v for sub in schema["oneOf"] for v in _variants(sub)]
    return [schema]


@dataclass(init=False)
class ToolStrategy(Generic[SchemaT]):
    """Structured output through an artificial tool call (one tool per schema of a
    union); the model is made to call a tool while it has one to call.

    ``handle_errors`` says which failures (arguments that do not fit, several output
    calls) are answered to the model so that it tries again: ``True`` all (with
    ``"Error: <what> Please fix your mistakes."``), a string all (with that text), an
    exception type or tuple those, a function of the exception the text it returns;
    ``False`` none (the run fails with ``StructuredOutputValidationError`` /
    ``MultipleStructuredOutputsError``). ``tool_message_content`` is the text of the
    ``ToolMessage`` answering a good call (default ``"Returning structured response:
    <value>"``).

    Example:
        >>> from typing import TypedDict
        >>> class Weather(TypedDict):
        ...     city: str
        ...     celsius: int
        >>> ToolStrategy(Weather).schema_specs[0].name
        'Weather'
    """

    schema: Any
    schema_specs: list[_SchemaSpec[Any]]
    tool_message_content: str | None
    handle_errors: HandleErrors

    def __init__(
        self,
        schema: Any,
        *,
        tool_message_content: str | None = None,
        handle_errors: HandleErrors = True,
    ) -> None:
        self.schema = schema
        self.tool_message_content = tool_message_content
        self.handle_errors = handle_errors
        self.schema_specs = [_SchemaSpec(s) for s in _variants(schema)]


@dataclass(init=False)
class ProviderStrategy(Generic[SchemaT]):
    """Structured output through the provider's native JSON-schema mode (OpenAI's
    ``response_format``); the final answer's text is parsed and checked.

    Example:
        >>> ProviderStrategy({"title": "Out", "type": "object"}, strict=True).to_model_kwargs()
        {'response_format': {'type': 'json_schema', 'json_schema': {'name': 'Out', \
'schema': {'title': 'Out', 'type': 'object'}, 'strict': True}}}
    """

    schema: Any
    schema_spec: _SchemaSpec[SchemaT]

    def __init__(self, schema: Any, *, strict: bool | None = None) -> None:
        self.schema = schema
        self.schema_spec = _SchemaSpec(schema, strict=strict)

    def to_model_kwargs(self) -> dict[str, Any]:
        """The model call's keywords: OpenAI's ``response_format``."""
        spec = self.schema_spec
        json_schema: dict[str, Any] = {"name": spec.name, "schema": spec.json_schema}
        if spec.strict:
            json_schema["strict"] = True
        return {"response_format": {"type": "json_schema", "json_schema": json_schema}}


class AutoStrategy(Generic[SchemaT]):
    """A bare schema: ``ProviderStrategy`` where the model has native structured
    output, else ``ToolStrategy`` (chosen at each model call, for the model called)."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema


ResponseFormat = ToolStrategy[Any] | ProviderStrategy[Any] | AutoStrategy[Any]


def _error_reply(exc: Exception, fmt: Any) -> str | None:
    """The text answering ``exc`` to the model under ``fmt.handle_errors``, or
    ``None`` when the failure is not handled (it is raised)."""
    if not isinstance(fmt, ToolStrategy):
        return None
    handle = fmt.handle_errors
    default = STRUCTURED_OUTPUT_ERROR_TEMPLATE.format(error=str(exc))
    if handle is False:
        return None
    if handle is True:
        return default
    if isinstance(handle, str):
        return handle
    if isinstance(handle, type):
        return default if isinstance(exc, handle) else None
    if isinstance(handle, tuple):
        return default if isinstance(exc, handle) else None
    return str(handle(exc))


def _model_name(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        v = getattr(model, attr, None)
        if isinstance(v, str) and v:
            return v
    return ""


def _provider(model: Any) -> str:
    return str(getattr(type(model), "_provider", "") or "")


def supports_provider_strategy(model: Any) -> bool:
    """Whether a bare schema uses the provider's native output with ``model``: a
    LangChain model whose profile says ``structured_output``, or a model (not
    ironloop's ``AnthropicChat``) named like one LangChain knows to have it."""
    if _provider(model) == "anthropic":
        return False
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict) and profile.get("structured_output"):
        return True
    name = _model_name(model).lower()
    return bool(name) and any(re.search(p, name) for p in _NATIVE_MODELS)


class Plan:
    """What ``create_agent`` does with its ``response_format``: the output tools
    declared up front, the strategy of each model call, and what the call's answer
    makes of the state."""

    def __init__(self, response_format: Any) -> None:
        if response_format is None or isinstance(
            response_format, (ToolStrategy, ProviderStrategy, AutoStrategy)
        ):
            self.initial = response_format
        else:
            self.initial = AutoStrategy(response_format)
        setup: ToolStrategy[Any] | None = None
        if isinstance(self.initial, AutoStrategy):
            setup = ToolStrategy(self.initial.schema)
        elif isinstance(self.initial, ToolStrategy):
            setup = self.initial
        self.setup = setup
        self.tools = {s.name: s for s in (setup.schema_specs if setup else [])}

    def effective(self, fmt: Any, model: Any) -> ToolStrategy[Any] | ProviderStrategy[Any] | None:
        """The strategy of one model call (``fmt`` is the request's, which a
        middleware may have changed)."""
        if fmt is not None and not isinstance(fmt, (ToolStrategy, ProviderStrategy, AutoStrategy)):
            fmt = AutoStrategy(fmt)
        if isinstance(fmt, AutoStrategy):
            if supports_provider_strategy(model):
                return ProviderStrategy(fmt.schema)
            if fmt is self.initial and self.setup is not None:
                return self.setup
            fmt = ToolStrategy(fmt.schema)
        if isinstance(fmt, ToolStrategy):
            for spec in fmt.schema_specs:
                if spec.name not in self.tools:
                    raise ValueError(
                        f"ToolStrategy specifies tool '{spec.name}' which wasn't declared in "
                        "the original response format when creating the agent."
                    )
        if isinstance(fmt, ProviderStrategy) and _provider(model) == "anthropic":
            raise ValueError(
                "ProviderStrategy needs the provider's native JSON-schema output, which "
                "ironloop's Anthropic client does not have (its response_format is a forced "
                "tool call, which cannot go with the agent's tools): use "
                "ToolStrategy(schema), or pass the bare schema (it picks ToolStrategy here)"
            )
        return fmt

    def call_kwargs(
        self, strategy: Any, model: Any, kwargs: dict[str, Any], *, langchain: bool = False
    ) -> list[Any]:
        """The output tools to offer with one call (``[]`` for none; LangChain tools for
        a LangChain model) and, in ``kwargs``, the call's ``tool_choice`` /
        ``response_format``."""
        if isinstance(strategy, ToolStrategy):
            if self.tools:
                kwargs["tool_choice"] = "required"
            wanted = {s.name for s in strategy.schema_specs}
            specs = [s for s in self.tools.values() if s.name in wanted]
            return [s.lc_tool() if langchain else s.tool() for s in specs]
        if isinstance(strategy, ProviderStrategy):
            method = getattr(model, "invoke", None) or getattr(model, "ainvoke", None)
            if method is not None and not _accepts(method, "response_format"):
                raise TypeError(
                    f"ProviderStrategy passes response_format= to the model's invoke(), which "
                    f"{type(model).__name__}.invoke does not take: use ToolStrategy(schema)"
                )
            kwargs.update(strategy.to_model_kwargs())
        return []

    def answer(self, msg: AIMessage, strategy: Any) -> tuple[list[Any], Any]:
        """The model node's messages and structured response (``None``: none yet)
        for the model's answer ``msg``."""
        if isinstance(strategy, ProviderStrategy):
            if msg.tool_calls:
                return [msg], None
            spec = strategy.schema_spec
            try:
                value = spec.parse(json.loads(msg.text))
            except Exception as e:
                raise StructuredOutputValidationError(spec.name, e, msg) from e
            return [msg], value
        if not isinstance(strategy, ToolStrategy) or not msg.tool_calls:
            return [msg], None
        calls = [c for c in msg.tool_calls if c["name"] in self.tools]
        if not calls:
            return [msg], None
        if len(calls) > 1:
            many = MultipleStructuredOutputsError([c["name"] for c in calls], msg)
            text = _error_reply(many, strategy)
            if text is None:
                raise many
            return [msg, *(_reply(c, text) for c in calls)], None
        call = calls[0]
        try:
            value = self.tools[call["name"]].parse(call["args"])
        except Exception as e:
            bad = StructuredOutputValidationError(call["name"], e, msg)
            text = _error_reply(bad, strategy)
            if text is None:
                raise bad from e
            return [msg, _reply(call, text)], None
        text = strategy.tool_message_content or f"Returning structured response: {value}"
        return [msg, _reply(call, text)], value


def _reply(call: dict[str, Any], text: str) -> ToolMessage:
    """The model node's answer to an output tool call (status ``success`` also for
    an error reply, as LangChain writes it: the text says what is wrong)."""
    return _messages.ToolMessage(content=text, tool_call_id=call["id"], name=call["name"])
