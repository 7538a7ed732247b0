"""``ValidationNode``: LangGraph's node that checks the last AI message's tool calls
against schemas instead of running tools (deprecated there in favour of
``create_agent``'s error handling, kept for ported graphs).

Each call becomes a ``ToolMessage``: the validated arguments as JSON, or the error
text for the model with ``additional_kwargs={"is_error": True}`` (a router can send
the conversation back to the model). Schemas are pydantic models (v2 or v1), LangChain
tools (their ``args_schema``), ironloop tools or plain functions (their JSON Schema,
checked by the Rust validator).

Example:
    >>> from ironloop.messages import AIMessage
    >>> def pick(n: int) -> None: ...
    >>> call = {"name": "pick", "args": {"n": "x"}, "id": "c1"}
    >>> out = ValidationNode([pick]).invoke([AIMessage(content="", tool_calls=[call])])
    >>> out[0].additional_kwargs["is_error"]
    True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ironloop._foreign import is_langchain_tool
from ironloop._ironloop import _json_schema_errors
from ironloop.errors import ToolInvalidArgsError
from ironloop.messages import AIMessage, ToolMessage

__all__ = ["ValidationNode"]


def _default_format_error(error: BaseException, call: Any, schema: Any) -> str:
    return f"{error!r}\n\nRespond after fixing all validation errors."


class ValidationNode:
    """Validates the tool calls of the last AI message (a list of messages, or a state
    with ``messages``) and answers each with a ``ToolMessage``; no tool runs.

    Args:
        schemas: pydantic models (named by their class), LangChain tools, ironloop
            tools or functions (named by their name).
        format_error: ``(error, call, schema) -> str``, the text the model reads for a
            call that does not validate.
        name: the node's name.
        tags: tags of the node (kept for LangGraph's signature).
    """

    def __init__(
        self,
        schemas: Sequence[Any],
        *,
        format_error: Callable[[BaseException, Any, Any], str] | None = None,
        name: str = "validation",
        tags: list[str] | None = None,
    ) -> None:
        self.name = name
        self.tags = list(tags) if tags else None
        self._format_error = format_error or _default_format_error
        self.schemas_by_name: dict[str, Any] = {}
        for schema in schemas:
            self.schemas_by_name[_name_of(schema)] = _checker(schema)
        self.__ironloop_async__ = self._anode

    def _message(self, input: Any) -> tuple[bool, AIMessage]:
        if isinstance(input, list):
            messages, as_list = input, True
        elif isinstance(input, dict) and input.get("messages"):
            messages, as_list = input["messages"], False
        else:
            raise ValueError(
                "ValidationNode input must be a list of messages or a state with 'messages'"
            )
        last = messages[-1]
        if not isinstance(last, AIMessage):
            raise ValueError(
                "ValidationNode validates the tool calls of the last message, which must be "
                f"an AIMessage; got {type(last).__name__}"
            )
        return as_list, last

    def _one(self, call: Any) -> ToolMessage:
        name = call["name"]
        if name not in self.schemas_by_name:
            raise ValueError(
                f"ValidationNode has no schema named {name!r} (it has "
                f"{', '.join(self.schemas_by_name) or 'none'})"
            )
        schema, validate = self.schemas_by_name[name]
        try:
            content = validate(call["args"])
        except Exception as e:
            if not _is_validation_error(e):
                raise
            return ToolMessage(
                content=self._format_error(e, call, schema),
                name=name,
                tool_call_id=call["id"],
                additional_kwargs={"is_error": True},
            )
        return ToolMessage(content=content, name=name, tool_call_id=call["id"])

    def invoke(self, input: Any, config: dict[str, Any] | None = None) -> Any:
        """``[ToolMessage, ...]`` for a list input, else ``{"messages": [...]}``."""
        as_list, message = self._message(input)
        outputs = [self._one(c) for c in message.tool_calls]
        return outputs if as_list else {"messages": outputs}

    async def ainvoke(self, input: Any, config: dict[str, Any] | None = None) -> Any:
        """Same as :meth:`invoke` (validation does not wait on anything)."""
        return self.invoke(input, config)

    def __call__(self, state: Any) -> Any:
        return self.invoke(state)

    async def _anode(self, state: Any) -> Any:
        return self.invoke(state)


def _name_of(schema: Any) -> str:
    name = getattr(schema, "name", None) if not isinstance(schema, type) else None
    return str(name or getattr(schema, "__name__", ""))


def _checker(schema: Any) -> tuple[Any, Callable[[dict[str, Any]], str]]:
    """``schema`` and the function that validates a call's arguments into its content."""
    if is_langchain_tool(schema):
        args_schema = getattr(schema, "args_schema", None)
        if not isinstance(args_schema, type):
            raise ValueError(
                f"Tool {schema.name} has no pydantic args_schema for ValidationNode to check"
            )
        return _checker(args_schema)
    if isinstance(schema, type) and hasattr(schema, "model_validate"):
        return schema, lambda args: schema.model_validate(args).model_dump_json()
    if isinstance(schema, type) and hasattr(schema, "parse_obj"):  # pydantic v1
        v1: Any = schema
        return schema, lambda args: v1.validate(args).json()
    if callable(schema) or hasattr(schema, "parameters"):
        from ironloop._toolnode import _as_tool

        parameters = _as_tool(schema).parameters

        def check(args: dict[str, Any]) -> str:
            errors = _json_schema_errors(parameters, args)
            if errors:
                raise ToolInvalidArgsError("; ".join(errors))
            return json.dumps(args, ensure_ascii=False)

        return schema, check
    raise ValueError(
        f"ValidationNode takes pydantic models, tools or functions; got {type(schema).__name__}"
    )


def _is_validation_error(e: BaseException) -> bool:
    if isinstance(e, ToolInvalidArgsError):
        return True
    return any(c.__name__ == "ValidationError" for c in type(e).__mro__)
