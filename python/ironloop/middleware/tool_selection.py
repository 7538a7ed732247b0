"""``LLMToolSelectorMiddleware`` (LangChain 1.5's): before each model call, a model
(a smaller one, or the agent's own) picks the tools relevant to the last user
message, and the call is made with only those — fewer tokens, fewer wrong tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from ironloop.messages import HumanMessage
from ironloop.middleware.internal_call_transformer import internal_call_config
from ironloop.middleware.types import AgentMiddleware, ModelRequest, ModelResponse

__all__ = ["DEFAULT_SYSTEM_PROMPT", "LLMToolSelectorMiddleware", "OnParsingFailure"]

DEFAULT_SYSTEM_PROMPT = (
    "Your goal is to select the most relevant tools for answering the user's query."
)

#: What to do when the selection model's answer is still malformed after the retries:
#: raise (``"error"``), no tools, all tools, these names, or what a function of the
#: answer returns.
OnParsingFailure = Literal["error", "none", "all"] | list[str] | Callable[[Any], list[str]]


@dataclass
class _Selection:
    tools: list[Any]
    names: list[str]
    structured: Any
    messages: list[Any]


def _response_schema(tools: list[Any]) -> dict[str, Any]:
    """A JSON schema whose ``tools`` items are the tool names, each described."""
    from pydantic import Field, create_model  # optional for ironloop: used here only

    literals = [Annotated[Literal[t.name], Field(description=t.description)] for t in tools]
    choice = Union[tuple(literals)]  # type: ignore[valid-type]  # noqa: UP007

    description = "Tools to use. Place the most relevant tools first."
    response = create_model(  # type: ignore[call-overload]
        "ToolSelectionResponse",
        tools=(list[choice], Field(description=description)),  # type: ignore[valid-type]
    )
    schema: dict[str, Any] = response.model_json_schema()
    return schema


def _valid(response: Any) -> bool:
    return isinstance(response, dict) and isinstance(response.get("tools"), list)


class LLMToolSelectorMiddleware(AgentMiddleware):
    """Narrows the tools of each model call to the ones a selection model picks.

    ``model`` (a model or ``"provider:model"``; default: the agent's) is asked, with
    ``system_prompt`` and the last user message, for a list of tool names (structured
    output). ``max_tools`` keeps the first N it lists; ``always_include`` names tools
    kept regardless (not counted); provider tool dicts are always kept. A malformed
    answer is asked again up to ``max_retries`` times, then ``on_parsing_failure``
    decides. Naming a tool that does not exist is a ``ValueError``.

    Example:
        >>> LLMToolSelectorMiddleware(max_tools=3).max_tools
        3
    """

    def __init__(
        self,
        *,
        model: Any = None,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        max_tools: int | None = None,
        always_include: list[str] | None = None,
        max_retries: int = 1,
        on_parsing_failure: OnParsingFailure = "error",
    ) -> None:
        super().__init__()
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.system_prompt = system_prompt
        self.max_tools = max_tools
        self.always_include = always_include or []
        self.max_retries = max_retries
        self.on_parsing_failure = on_parsing_failure
        if isinstance(model, str):
            from ironloop.models import init_model

            model = init_model(model)
        self.model = model

    def _prepare(self, request: ModelRequest) -> _Selection | None:
        base = [t for t in request.tools or () if not isinstance(t, dict)]
        if not base:
            return None
        names = {t.name for t in base}
        missing = [n for n in self.always_include if n not in names]
        if missing:
            raise ValueError(
                f"Tools in always_include not found in request: {missing}. "
                f"Available tools: {sorted(names)}"
            )
        tools = [t for t in base if t.name not in self.always_include]
        if not tools:
            return None
        prompt = self.system_prompt
        if self.max_tools is not None:
            prompt += (
                "\nIMPORTANT: List the tool names in order of relevance, with the most "
                "relevant first. If you exceed the maximum number of tools, only the "
                f"first {self.max_tools} will be used."
            )
        user = next((m for m in reversed(request.messages) if isinstance(m, HumanMessage)), None)
        if user is None:
            raise AssertionError("No user message found in request messages")
        model = self.model or request.model
        return _Selection(
            tools=tools,
            names=[t.name for t in tools],
            structured=model.with_structured_output(_response_schema(tools)),
            messages=[{"role": "system", "content": prompt}, user],
        )

    def _fallback(self, response: Any) -> list[str]:
        policy = self.on_parsing_failure
        if policy == "error":
            raise ValueError(
                "LLMToolSelectorMiddleware: selection model returned a malformed response "
                f"after {self.max_retries} retries (expected a dict with a 'tools' list): "
                f"{response!r}"
            )
        if policy == "none":
            return []
        if policy == "all":
            return list(self._names)
        if callable(policy):
            return list(policy(response))
        return list(policy)

    def _narrow(self, sel: _Selection, response: Any, request: ModelRequest) -> ModelRequest:
        cap = self.max_tools
        if not _valid(response):
            self._names = sel.names
            response, cap = {"tools": self._fallback(response)}, None
        chosen: list[str] = []
        invalid = []
        for name in response.get("tools", []):
            if name not in sel.names:
                invalid.append(name)
            elif name not in chosen and (cap is None or len(chosen) < cap):
                chosen.append(name)
        if invalid:
            raise ValueError(f"Model selected invalid tools: {invalid}")
        kept = [t for t in sel.tools if t.name in chosen]
        kept += [
            t for t in request.tools if not isinstance(t, dict) and t.name in self.always_include
        ]
        kept += [t for t in request.tools if isinstance(t, dict)]
        return request.override(tools=kept)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> Any:
        sel = self._prepare(request)
        if sel is None:
            return handler(request)
        config = internal_call_config("tool_selection")
        response = sel.structured.invoke(sel.messages, config=config)
        for _ in range(self.max_retries):
            if _valid(response):
                break
            response = sel.structured.invoke(sel.messages, config=config)
        return handler(self._narrow(sel, response, request))

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> Any:
        sel = self._prepare(request)
        if sel is None:
            return await handler(request)
        config = internal_call_config("tool_selection")
        response = await sel.structured.ainvoke(sel.messages, config=config)
        for _ in range(self.max_retries):
            if _valid(response):
                break
            response = await sel.structured.ainvoke(sel.messages, config=config)
        return await handler(self._narrow(sel, response, request))
