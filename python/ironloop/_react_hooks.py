"""The parts of ``create_react_agent`` its model hooks add: the ``llm_input_messages``
key a ``pre_model_hook`` writes, and the router after a ``post_model_hook``
(LangGraph's rules for both)."""

from __future__ import annotations

import typing
from typing import Any, TypedDict


def with_llm_input_messages(schema: Any) -> Any:
    """``schema`` with a ``llm_input_messages`` key, where a ``pre_model_hook`` puts
    what the model is given (LangGraph keeps it in the agent node's input schema)."""
    if hasattr(schema, "model_fields"):
        import pydantic

        return pydantic.create_model(
            "CallModelInputSchema",
            llm_input_messages=(Any, None),
            __base__=schema,
        )

    fields = {**typing.get_type_hints(schema, include_extras=True), "llm_input_messages": Any}
    return TypedDict("CallModelInputSchema", fields, total=False)  # type: ignore[operator]


def post_model_hook_router(back: str, done: str) -> Any:
    """The router after a ``post_model_hook``, by LangGraph's rule for it: a call of the
    last AI message is pending unless a tool message anywhere in the conversation
    answers its id (a model that repeats an answered call's id is not sent to the tools
    again: LangGraph's test model does, and would loop). Python, not the Rust rule,
    which reads only the messages after the last AI message: the hook is a Python call
    per step already."""

    def post_model_hook_router(state: Any) -> Any:
        from ironloop._agent import _get, _sends  # (they import this module)

        messages = _get(state, "messages") or []
        answered = {getattr(m, "tool_call_id", None) for m in messages if m.type == "tool"}
        last_ai = next((m for m in reversed(messages) if m.type == "ai"), None)
        calls = list(getattr(last_ai, "tool_calls", None) or [])
        pending = [c for c in calls if c["id"] not in answered]
        if pending:
            return _sends(pending)
        return back if messages and messages[-1].type == "tool" else done

    return post_model_hook_router
