"""Chat models. ``OpenAIChat`` speaks the OpenAI Chat Completions API (OpenAI and every
OpenAI-compatible server: vLLM, Ollama, llama.cpp, LM Studio, OpenRouter…),
``AnthropicChat`` the Anthropic Messages API — both from Rust, with streaming, retries
and timeouts, the GIL released while waiting. ``ScriptedChatModel`` replays a script,
for tests and offline demos.

Any object with ``invoke(messages, tools=None, tool_choice=None)`` (and optionally
``ainvoke``, ``stream``, ``astream``) works as a model: it receives ironloop messages
and tools as OpenAI-format dicts, and returns an ``AIMessage`` or a
``{"role": "assistant", ...}`` dict. A ``stream`` yields ``AIMessageChunk`` s, as
langchain-core's: text, reasoning blocks and tool-call fragments (``tool_call_chunks``)
as they arrive, adding up (``chunk + chunk``) to the whole message. (``AIMessage``
chunks whose last one carries the whole message's tool calls and usage are taken too.)

A LangChain chat model (``ChatOpenAI``, ``ChatAnthropic``, the fakes of
``langchain_core.language_models``, a model with ``bind_tools`` applied) works too,
when langchain-core is installed: it is put behind that protocol
(``ironloop._langchain.LangChainChatModel``), receives langchain-core messages, and
has its tools bound with its own ``bind_tools``.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from typing_extensions import TypedDict, Unpack

from ironloop import _tracing
from ironloop import messages as _messages
from ironloop._foreign import is_langchain_tool
from ironloop._ironloop import (
    _ChatModelCore,
    _ChatStream,
    _coerce_message,
    _coerce_messages,
)
from ironloop._runtime import task_var
from ironloop._usage import record
from ironloop.errors import ModelError

if TYPE_CHECKING:
    from ironloop.messages import AIMessage, AIMessageChunk, BaseMessage

__all__ = ["AnthropicChat", "OpenAIChat", "ScriptedChatModel", "init_model"]

Response = Union["AIMessage", str, dict, Callable[[list["BaseMessage"]], Any]]


def _to_ai(response: Any) -> AIMessage:
    # str and dict first: with langchain-core's classes, `isinstance` against
    # MESSAGE_TYPES goes through `ABCMeta` once per class, at every model call.
    if isinstance(response, str):
        return _messages.AIMessage(content=response, id=_fresh_id())
    if isinstance(response, dict):
        d = dict(response)
        d.setdefault("role", "assistant")
        msg = _coerce_message(d)
        if not isinstance(msg, _messages.AIMessage):
            raise ModelError(f"a scripted response must be an assistant message, got {d['role']!r}")
        return msg
    if isinstance(response, _messages.MESSAGE_TYPES):
        response = _coerce_message(response)  # one of this process's classes
    if isinstance(response, _messages.AIMessage):
        # A fresh id: the same scripted message may be replayed more than once.
        copy = response.model_copy(update={"id": _fresh_id()})
        assert isinstance(copy, _messages.AIMessage)
        return copy
    raise ModelError(
        f"a scripted response must be an AIMessage, a str or a dict, got {type(response).__name__}"
    )


def _fresh_id() -> str:
    # A model's answer has an id from the start (langchain-core's models give
    # theirs a run id), so the chunks of a stream share it.
    return f"lc_run--{uuid.uuid4()}"


class ScriptedChatModel:
    """Replays ``responses`` in order, one per call; raises ``ModelError`` when the
    script runs out. A response may be an ``AIMessage``, a string (a final answer), a
    dict (``{"content": ..., "tool_calls": [...]}``), or a function of the messages
    that returns one of those. ``responses`` may also be a single such function, called
    for every turn.

    Each call is recorded in ``.calls`` as ``(messages, tools)``.

    Example:
        >>> from ironloop.models import ScriptedChatModel
        >>> m = ScriptedChatModel([
        ...     {"content": "", "tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}}]},
        ...     "The sum is 3.",
        ... ])
        >>> m.invoke([("user", "1+2?")]).tool_calls[0]["name"]
        'add'
        >>> m.invoke([]).content
        'The sum is 3.'
    """

    def __init__(self, responses: Sequence[Response] | Callable[[list[BaseMessage]], Any]):
        if callable(responses):
            self._fn: Callable[[list[BaseMessage]], Any] | None = responses
            self._script: list[Response] = []
        else:
            self._fn = None
            self._script = list(responses)
        self._next = 0
        self._lock = threading.Lock()
        self.calls: list[tuple[list[BaseMessage], list[dict[str, Any]] | None]] = []

    def invoke(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AIMessage:
        msgs: list[BaseMessage] = _coerce_messages(messages)
        with self._lock:
            self.calls.append((msgs, tools))
            if self._fn is not None:
                response: Any = self._fn
            else:
                if self._next >= len(self._script):
                    raise ModelError(
                        f"ScriptedChatModel ran out of responses after {len(self._script)} "
                        "call(s): add more responses to the script"
                    )
                response = self._script[self._next]
                self._next += 1
        if callable(response) and not isinstance(response, (*_messages.MESSAGE_TYPES, dict, str)):
            response = response(msgs)
        return _to_ai(response)

    async def ainvoke(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AIMessage:
        return self.invoke(messages, tools, tool_choice, **kwargs)

    def stream(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Iterator[AIMessageChunk]:
        """Yields the next response as ``AIMessageChunk`` s: its text word by word (all
        chunks share the response's id), then its tool calls in a last chunk; their
        sum is the response."""
        full = self.invoke(messages, tools, tool_choice, **kwargs)
        words = re.findall(r"\S+\s*", full.text) or [""]
        for i, w in enumerate(words):
            last = i == len(words) - 1
            yield _messages.AIMessageChunk(
                content=w,
                tool_calls=[dict(c) for c in full.tool_calls] if last else [],
                id=full.id,
            )

    async def astream(
        self,
        messages: Sequence[Any],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessageChunk]:
        for chunk in self.stream(messages, tools, tool_choice, **kwargs):
            yield chunk

    @property
    def remaining(self) -> int:
        """How many scripted responses are left."""
        return len(self._script) - self._next


# --------------------------------------------------------------------------- HTTP models


def _tool_dicts(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """Tools as OpenAI-format dicts: dicts pass through, ``Tool`` objects give
    ``to_openai()``, plain functions are made tools first."""
    if not tools:
        return None
    out: list[dict[str, Any]] = []
    for t in tools:
        if isinstance(t, Mapping):
            out.append(dict(t))
        elif is_langchain_tool(t):
            from ironloop._langchain_tools import LangChainTool

            out.append(LangChainTool(t).to_openai())
        elif hasattr(t, "to_openai"):
            out.append(t.to_openai())
        elif callable(t):
            from ironloop._tool import tool as make_tool

            out.append(make_tool(t).to_openai())
        else:
            raise TypeError(f"cannot use a {type(t).__name__} as a tool")
    return out


def _schema_of(response_format: Any) -> Any:
    """A JSON Schema for ``response_format`` (a dict passes as it is; a TypedDict,
    dataclass or pydantic model is converted)."""
    if response_format is None or isinstance(response_format, Mapping):
        return response_format
    from ironloop._schema import type_schema

    schema, _ = type_schema(response_format)
    name = getattr(response_format, "__name__", None)
    if not name or "title" in schema:
        return schema
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


class ChatModelOptions(TypedDict, total=False):
    """The keywords every HTTP chat model takes (:class:`OpenAIChat`,
    :class:`AnthropicChat`): ``temperature`` and ``max_tokens`` for every request,
    ``timeout`` seconds per attempt (default 60; ``None``: none), ``max_retries``
    (default 2), ``parallel_tool_calls``, ``default_headers`` sent with every request
    and ``model_kwargs``, extra top-level fields of every request body."""

    temperature: float | None
    max_tokens: int | None
    timeout: float | None
    max_retries: int
    parallel_tool_calls: bool | None
    default_headers: Mapping[str, str] | None
    model_kwargs: Mapping[str, Any] | None


class _HTTPChatModel:
    """The shared half of :class:`OpenAIChat` and :class:`AnthropicChat`."""

    #: ``invoke`` streams to ``stream_mode="messages"`` by itself and returns the
    #: provider's whole message (reasoning signatures included), so agents call it
    #: rather than joining chunks.
    _streams_in_invoke = True

    _provider = ""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        **options: Unpack[ChatModelOptions],
    ) -> None:
        if not isinstance(model, str) or not model:
            raise TypeError(f"{type(self).__name__}() needs a model name, e.g. 'gpt-4o-mini'")
        unknown = sorted(set(options) - set(ChatModelOptions.__annotations__))
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected keyword argument(s) {unknown}")
        core: dict[str, Any] = dict(options)
        headers = core.pop("default_headers", None) or {}
        self.model_kwargs: dict[str, Any] = dict(core.pop("model_kwargs", None) or {})
        self._core = _ChatModelCore(
            self._provider,
            model,
            base_url=base_url,
            api_key=api_key,
            headers=list(headers.items()),
            **core,
            **getattr(self, "_anthropic", {}),
        )

    @property
    def model(self) -> str:
        """The model name sent to the provider."""
        return self._core.model

    @property
    def model_name(self) -> str:
        return self._core.model

    @property
    def url(self) -> str:
        """The endpoint requests are sent to."""
        return self._core.url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, url={self.url!r})"

    def _args(
        self, tools: Sequence[Any] | None, tool_choice: Any, kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        """The core's arguments for one call (every call's go through here). The core
        reads the request keywords
        (``temperature``, ``stop``...) and sends any other keyword as a top-level
        field of the request body (``top_p``, ``seed``...); here only what Python
        converts: the tools, ``response_format`` and the extra body fields."""
        extra = dict(self.model_kwargs)
        extra.update(kwargs.pop("extra_body", None) or {})
        if "extra" in kwargs:  # a body field named "extra", not the core's keyword
            extra["extra"] = kwargs.pop("extra")
        if "response_format" in kwargs:
            kwargs["response_format"] = _schema_of(kwargs["response_format"])
        return {
            **kwargs,
            "tools": _tool_dicts(tools),
            "tool_choice": tool_choice,
            "extra": extra or None,
        }

    def _done(self, message: AIMessage) -> AIMessage:
        """A whole answer, its usage added to the totals in force."""
        record(self.model, message)
        return message

    def _final(self, stream: _ChatStream) -> AIMessage:
        final = stream.final_message
        if final is None:
            raise ModelError(f"{self._provider}: the stream ended without a final message")
        return final

    def invoke(
        self,
        messages: Sequence[Any] | str,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AIMessage:
        """One response. Inside a graph node run with ``stream_mode="messages"``, the
        response is streamed and its chunks go to that stream as they arrive."""
        if _tracing.ON and _tracing.tracer() is not None:
            with _tracing.model_span(self._provider, self.model) as answered:
                return answered(self._invoke(messages, self._args(tools, tool_choice, kwargs)))
        return self._invoke(messages, self._args(tools, tool_choice, kwargs))

    def _invoke(self, messages: Sequence[Any] | str, args: dict[str, Any]) -> AIMessage:
        scratch = task_var.get(None)
        if scratch is not None and scratch.streams_messages:
            stream = self._core.stream(messages, **args)
            for chunk in stream:
                scratch.write_message(chunk)
            return self._done(self._final(stream))
        return self._done(self._core.invoke(messages, **args))

    async def ainvoke(
        self,
        messages: Sequence[Any] | str,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AIMessage:
        if _tracing.ON and _tracing.tracer() is not None:
            with _tracing.model_span(self._provider, self.model) as answered:
                args = self._args(tools, tool_choice, kwargs)
                return answered(await self._ainvoke(messages, args))
        return await self._ainvoke(messages, self._args(tools, tool_choice, kwargs))

    async def _ainvoke(self, messages: Sequence[Any] | str, args: dict[str, Any]) -> AIMessage:
        scratch = task_var.get(None)
        if scratch is not None and scratch.streams_messages:
            stream = self._core.stream(messages, **args)
            while (chunk := await stream.anext()) is not None:
                scratch.write_message(chunk)
            return self._done(self._final(stream))
        return self._done(await self._core.invoke(messages, asynchronous=True, **args))

    def stream(
        self,
        messages: Sequence[Any] | str,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Iterator[AIMessageChunk]:
        """Yields ``AIMessageChunk`` s as the response arrives, all with one id: text and
        reasoning pieces, each tool-call fragment (``tool_call_chunks``: the call's
        id and name first, then pieces of its arguments, by ``index``), and a last
        chunk with the usage. Their sum (``chunk + chunk``) is the whole message, its
        ``tool_calls`` parsed."""
        for chunk in self._core.stream(messages, **self._args(tools, tool_choice, kwargs)):
            if chunk.usage_metadata:
                record(self.model, chunk)
            yield chunk

    async def astream(
        self,
        messages: Sequence[Any] | str,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessageChunk]:
        stream = self._core.stream(messages, **self._args(tools, tool_choice, kwargs))
        while (chunk := await stream.anext()) is not None:
            if chunk.usage_metadata:
                record(self.model, chunk)
            yield chunk

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: Any = None,
        parallel_tool_calls: bool | None = None,
    ) -> _BoundModel:
        """This model with ``tools`` (and ``tool_choice``) sent on every call, for
        graphs that call the model themselves."""
        kw: dict[str, Any] = {}
        if parallel_tool_calls is not None:
            kw["parallel_tool_calls"] = parallel_tool_calls
        return _BoundModel(self, _tool_dicts(tools), tool_choice, kw)


class _BoundModel:
    """A model with tools bound (see ``bind_tools``)."""

    def __init__(
        self,
        model: _HTTPChatModel,
        tools: list[dict[str, Any]] | None,
        tool_choice: Any,
        kwargs: dict[str, Any],
    ) -> None:
        self.bound = model
        self.tools = tools
        self.tool_choice = tool_choice
        self.kwargs = kwargs
        self._streams_in_invoke = model._streams_in_invoke

    def _merge(self, tools: Any, tool_choice: Any, kw: dict[str, Any]) -> tuple[Any, Any, Any]:
        return (
            tools if tools is not None else self.tools,
            tool_choice if tool_choice is not None else self.tool_choice,
            {**self.kwargs, **kw},
        )

    def invoke(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kw: Any
    ) -> AIMessage:
        t, c, k = self._merge(tools, tool_choice, kw)
        return self.bound.invoke(messages, t, c, **k)

    async def ainvoke(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kw: Any
    ) -> AIMessage:
        t, c, k = self._merge(tools, tool_choice, kw)
        return await self.bound.ainvoke(messages, t, c, **k)

    def stream(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kw: Any
    ) -> Iterator[AIMessageChunk]:
        t, c, k = self._merge(tools, tool_choice, kw)
        return self.bound.stream(messages, t, c, **k)

    def astream(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kw: Any
    ) -> AsyncIterator[AIMessageChunk]:
        t, c, k = self._merge(tools, tool_choice, kw)
        return self.bound.astream(messages, t, c, **k)


class OpenAIChat(_HTTPChatModel):
    """A model behind the OpenAI Chat Completions API — OpenAI itself, or any
    OpenAI-compatible server through ``base_url`` (vLLM, Ollama at
    ``http://localhost:11434/v1``, llama.cpp server, LM Studio, OpenRouter…).

    The key comes from ``api_key`` or ``OPENAI_API_KEY`` (and ``base_url`` may come
    from ``OPENAI_BASE_URL``); a server other than OpenAI needs no key. The HTTP runs
    in Rust: retries with exponential backoff and jitter on 408/409/429/5xx,
    connection errors and timeouts (honouring ``Retry-After``), none on other 4xx;
    ``timeout`` seconds per attempt (for a stream: until it starts, then between
    events). Failures raise ``ModelError`` with ``.status_code`` and ``.provider``;
    the key never appears in an error.

    ``invoke(messages, tools=None, tool_choice=None, **kw)`` accepts ironloop messages,
    ``(role, text)`` tuples and dicts; ``tool_choice`` is ``"auto"``, ``"required"``,
    ``"none"`` or a tool name; keywords ``parallel_tool_calls``, ``temperature``,
    ``max_tokens``, ``stop``, ``response_format`` (a JSON Schema, TypedDict, dataclass
    or pydantic model: sent as OpenAI's ``json_schema`` response format) and any other
    top-level request field (``top_p``, ``seed``...).

    Example:
        >>> from ironloop.models import OpenAIChat
        >>> local = OpenAIChat("llama3.2", base_url="http://localhost:11434/v1")
        >>> local.url
        'http://localhost:11434/v1/chat/completions'
    """

    _provider = "openai"


class AnthropicChat(_HTTPChatModel):
    """A model behind the Anthropic Messages API.

    The key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` (``base_url`` from
    ``ANTHROPIC_BASE_URL``, default ``https://api.anthropic.com``); a model made for
    Anthropic's API without one fails at its first call, not when made (as
    LangChain's ``ChatAnthropic``: a middleware's default model may never be called).
    System messages
    become the ``system`` field, tool results ``tool_result`` blocks (images in a
    tool's result go as image blocks); ``max_tokens`` defaults to 4096 (the API
    requires one) plus the thinking budget. ``response_format`` is answered through
    a forced tool call whose input is the structured answer, returned as JSON text.
    Retries, timeouts and errors as :class:`OpenAIChat`.

    ``thinking={"type": "enabled", "budget_tokens": N}`` turns on extended thinking:
    the answer's content is then a list of blocks, the ``thinking`` blocks (with
    their signatures) first, kept on the ``AIMessage`` and sent back unchanged, as
    the API requires during tool use; streamed, they arrive as chunks whose content
    is a ``{"type": "thinking", "thinking", "index"}`` block. ``prompt_caching``
    (on by default) marks the system prompt, the last tool and the latest turn with
    ``cache_control`` breakpoints; cache reads and writes show in ``usage_metadata``
    under ``input_token_details``.

    Example:
        >>> from ironloop.models import AnthropicChat
        >>> AnthropicChat("claude-sonnet-4-5", api_key="sk-ant-example").url
        'https://api.anthropic.com/v1/messages'
    """

    _provider = "anthropic"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        thinking: Mapping[str, Any] | None = None,
        prompt_caching: bool = True,
        **options: Unpack[ChatModelOptions],
    ) -> None:
        self._anthropic = {"thinking": thinking, "prompt_caching": prompt_caching}
        super().__init__(model, base_url, api_key, **options)


def init_model(model: Any, **kwargs: Any) -> Any:
    """A model object from ``model``: an object as it is, or a ``"provider:model"``
    string — ``"openai:gpt-4o-mini"``, ``"anthropic:claude-sonnet-4-5"``, and
    ``"openai:llama3.2@http://localhost:11434/v1"`` for an OpenAI-compatible server
    at that base URL. ``kwargs`` (``temperature=``, ``max_tokens=``, ...) go to the
    model class of a string, as ``init_chat_model``'s do.

    Example:
        >>> from ironloop.models import init_model
        >>> init_model("openai:llama3.2@http://localhost:11434/v1").model
        'llama3.2'
    """
    if not isinstance(model, str):
        return model
    providers = {"openai": OpenAIChat, "anthropic": AnthropicChat}
    provider, sep, rest = model.partition(":")
    if not sep or not rest:
        raise ValueError(
            f"model string {model!r} must be 'provider:model' (e.g. 'openai:gpt-4o-mini'); "
            f"providers: {', '.join(providers)}"
        )
    cls = providers.get(provider)
    if cls is None:
        raise ValueError(
            f"unknown model provider {provider!r} in {model!r}: use one of "
            f"{', '.join(providers)}, or pass a model object"
        )
    name, at, base_url = rest.partition("@")
    if at and not base_url:
        raise ValueError(f"model string {model!r} has '@' but no base URL after it")
    return cls(name, base_url=base_url or None, **kwargs)
