"""A ``create_react_agent`` model chosen per model call: LangGraph's dynamic model, a
function ``(state, runtime) -> model`` (sync or async).

The agent node calls the function with the whole state (not the prompt's input) and
the run's ``Runtime``; the model it returns is used for that one call, a LangChain chat
model getting the agent's tools with its ``bind_tools`` (unless already bound).

Example:
    >>> from ironloop.models import ScriptedChatModel
    >>> def pick(state, runtime):
    ...     return ScriptedChatModel(["short answer"])
    >>> DynamicModel(pick).fn is pick
    True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ironloop._foreign import is_langchain_runnable

__all__ = ["DynamicModel", "is_model_function"]


def is_model_function(model: Any) -> bool:
    """Whether ``model`` is a function choosing the model, not a model object."""
    return callable(model) and not (
        hasattr(model, "invoke") or hasattr(model, "ainvoke") or isinstance(model, str)
    )


class DynamicModel:
    """The agent's model when it is a function of ``(state, runtime)``. ``invoke`` /
    ``ainvoke`` exist so the agent builds both node forms; the agent node resolves the
    model with :meth:`resolve` / :meth:`aresolve` before each call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.tools: Sequence[Any] = ()
        self.builtin: Sequence[dict[str, Any]] = ()

    def with_tools(self, tools: Sequence[Any], builtin: Sequence[dict[str, Any]]) -> DynamicModel:
        """This function with the agent's tools, bound to each model it returns."""
        out = DynamicModel(self.fn)
        out.tools, out.builtin = list(tools), list(builtin)
        return out

    def resolve(self, state: Any) -> Any:
        """The model for this call (an async function is run to completion here)."""
        from ironloop.middleware.types import run_sync
        from ironloop.runtime import get_runtime

        model = self.fn(state, get_runtime())
        if inspect.isawaitable(model):
            model = run_sync(model)
        return self._ready(model)

    async def aresolve(self, state: Any) -> Any:
        from ironloop.runtime import get_runtime

        model = self.fn(state, get_runtime())
        if inspect.isawaitable(model):
            model = await model
        return self._ready(model)

    def _ready(self, model: Any) -> Any:
        if isinstance(model, str):
            from ironloop.models import init_model

            model = init_model(model)
        if is_langchain_runnable(model):
            from ironloop._langchain import agent_model

            return agent_model(model, self.tools, self.builtin)
        if not (hasattr(model, "invoke") or hasattr(model, "ainvoke")):
            raise TypeError(
                f"the agent's model function returned {type(model).__name__}: it must "
                "return a chat model (an object with invoke(messages, ...))"
            )
        return model

    def invoke(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a model function is resolved per call (DynamicModel.resolve)")

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a model function is resolved per call (DynamicModel.aresolve)")
