"""LangChain interop: langchain-core chat models, tools and messages used with ironloop.

langchain-core is an optional dependency. This module imports it, and ironloop imports
this module only after ``ironloop._foreign`` has recognised a LangChain object (which
cannot exist unless langchain-core is installed and imported).

- **Messages**: with langchain-core installed its classes are ironloop's message
  classes (``ironloop.messages``), so its messages pass through as they are;
  :func:`to_langchain` converts objects of ironloop's own classes
  (``ironloop._ironloop``) that code may still make by name, cached per value.
- **Models**: :class:`LangChainChatModel` puts any LangChain chat model (or a
  ``Runnable`` over messages: a bound model, ``prompt | model``) behind ironloop's
  model protocol (``invoke(messages, tools=None, tool_choice=None)``, ``ainvoke``,
  ``stream``, ``astream``). ``create_react_agent`` binds the agent's tools with the
  model's own ``bind_tools`` once, as LangGraph does; streamed chunks feed
  ``stream_mode="messages"``; structured output goes through the model's
  ``with_structured_output``.
- **Tools**: :class:`LangChainTool` (a LangChain ``BaseTool`` as an ironloop ``Tool``)
  and :func:`to_langchain_tool` live in ``ironloop._langchain_tools`` and are
  re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core import messages as lc
from langchain_core.language_models import BaseChatModel
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.runnables import RunnableBinding, RunnableSequence

from ironloop import _tracing
from ironloop._foreign import is_langchain_message, is_langchain_runnable, is_langchain_tool
from ironloop._ironloop import AIMessageChunk as _OwnChunk
from ironloop._ironloop import BaseMessage as _OwnMessage
from ironloop._ironloop import _coerce_message
from ironloop._langchain_stream import OWN_CALL_TAG
from ironloop._langchain_tools import LangChainTool, to_langchain_tool
from ironloop._usage import model_name_of, record
from ironloop.messages import AIMessage

__all__ = [
    "LangChainChatModel",
    "LangChainTool",
    "agent_model",
    "from_langchain",
    "to_langchain",
    "to_langchain_tool",
]


# ------------------------------------------------------------------------ messages

_CACHE_MAX = 20_000
#: message ``_key`` (its value's identity, new after any change) -> (an object holding
#: that value, its langchain-core twin); holding the value keeps the key its own.
_to_lc_cache: dict[int, tuple[Any, Any]] = {}


def _lc_message(m: _OwnMessage) -> Any:
    common: dict[str, Any] = {
        "content": m.content,
        "id": m.id,
        "additional_kwargs": m.additional_kwargs,
        "response_metadata": m.response_metadata,
    }
    if m.name is not None:
        common["name"] = m.name
    t = m.type
    if isinstance(m, _OwnChunk):
        usage: Any = m.usage_metadata
        return lc.AIMessageChunk(
            **common,
            tool_call_chunks=[
                tool_call_chunk(name=c["name"], args=c["args"], id=c["id"], index=c["index"])
                for c in m.tool_call_chunks
            ],
            usage_metadata=usage,
        )
    if t == "human":
        return lc.HumanMessage(**common)
    if t == "system":
        return lc.SystemMessage(**common)
    if t == "ai":
        ai: Any = m
        return lc.AIMessage(
            **common,
            tool_calls=[
                {"name": c["name"], "args": c["args"], "id": c["id"], "type": "tool_call"}
                for c in ai.tool_calls
            ],
            invalid_tool_calls=list(ai.invalid_tool_calls),
            usage_metadata=ai.usage_metadata,
        )
    if t == "tool":
        tm: Any = m
        return lc.ToolMessage(
            **common, tool_call_id=tm.tool_call_id, status=tm.status, artifact=tm.artifact
        )
    if t == "remove":
        return lc.RemoveMessage(id=m.id)
    raise TypeError(f"cannot convert a {t!r} message to langchain-core")


def to_langchain(message: Any) -> Any:
    """A message as a langchain-core message, or a list of them as a list.

    Takes ironloop messages, langchain-core ones (returned as they are), and what
    ironloop accepts as a message (``("user", "hi")``, ``{"role": ..., ...}``).

    Example:
        >>> from ironloop.messages import HumanMessage
        >>> to_langchain(HumanMessage("hi", id="1"))
        HumanMessage(content='hi', additional_kwargs={}, response_metadata={}, id='1')
    """
    if isinstance(message, (list, tuple)) and not _is_role_pair(message):
        return [to_langchain(m) for m in message]
    if is_langchain_message(message):
        return message
    if not isinstance(message, _OwnMessage):
        # What ironloop takes as a message, made one of this process's messages:
        # langchain-core's, as langchain-core is installed.
        return _coerce_message(message)
    if isinstance(message, _OwnChunk):  # streamed pieces: not worth a cache entry
        return _lc_message(message)
    key = message._key
    hit = _to_lc_cache.get(key)
    if hit is not None:
        return hit[1]
    out = _lc_message(message)
    if len(_to_lc_cache) >= _CACHE_MAX:
        for k in list(_to_lc_cache)[: _CACHE_MAX // 2]:
            _to_lc_cache.pop(k, None)
    _to_lc_cache[key] = (message._shared(), out)
    return out


def _is_role_pair(v: Any) -> bool:
    return isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str)


def from_langchain(message: Any) -> Any:
    """A langchain-core message (or a list of them) as ironloop message(s).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> from_langchain(AIMessage("hello", id="a1")).type
        'ai'
    """
    if isinstance(message, (list, tuple)) and not _is_role_pair(message):
        return [from_langchain(m) for m in message]
    if is_langchain_message(message):
        # langchain-core's classes are ironloop's messages while it is installed.
        return message
    return _coerce_message(message)


def _lc_value(v: Any) -> Any:
    """A state value for LangChain code: lists holding messages become lists of
    langchain-core messages, dicts are converted field by field."""
    if isinstance(v, list) and any(isinstance(x, _OwnMessage) for x in v):
        return [to_langchain(x) if isinstance(x, _OwnMessage) else x for x in v]
    if isinstance(v, dict):
        return {k: _lc_value(x) for k, x in v.items()}
    return v


# -------------------------------------------------------------------------- models


#: The agent's model calls: the engine streams their chunks itself, so the
#: ``messages`` handler of LangChain models called by nodes leaves them alone.
_OWN_CALL: Any = {"tags": [OWN_CALL_TAG]}


def _in_v3_run() -> bool:
    """In a ``stream_events(version="v3")`` run the agent's model is invoked as a node's
    model is, untagged: langchain-core streams its protocol events to ``run.messages``
    (``ironloop.stream._langchain_v3``), and the engine's piece is the whole answer."""
    from ironloop.stream._entry import v3_messages

    return v3_messages.get()


def _model_input(messages: Any) -> Any:
    if isinstance(messages, str):
        return messages
    return to_langchain(list(messages))


def _as_ai(out: Any) -> AIMessage:
    """A LangChain model's answer as an ``AIMessage`` (a chunk made whole)."""
    if isinstance(out, str):
        return AIMessage(content=out)
    if isinstance(out, lc.BaseMessageChunk):
        out = lc.message_chunk_to_message(out)
    msg = _coerce_message(out)
    if not isinstance(msg, AIMessage):
        raise TypeError(f"the LangChain model answered with a {msg.type!r} message, not 'ai'")
    return msg


def _chunk(c: Any, id_: Any) -> Any:
    """A streamed LangChain chunk as an ``AIMessageChunk`` (text streams may yield str)."""
    if isinstance(c, str):
        return lc.AIMessageChunk(content=c, id=id_)
    if isinstance(c, lc.BaseMessageChunk):
        return c
    if isinstance(c, lc.AIMessage):  # a whole message streamed as one piece
        return lc.AIMessageChunk(
            content=c.content,
            id=c.id or id_,
            usage_metadata=c.usage_metadata,
            tool_call_chunks=[
                tool_call_chunk(name=t["name"], args=json.dumps(t["args"]), id=t["id"], index=i)
                for i, t in enumerate(c.tool_calls)
            ],
        )
    raise TypeError(f"the LangChain model streamed a {type(c).__name__}, not a message chunk")


class _Merger:
    """Turns LangChain chunks into ironloop ones, one chunk behind: each is passed on
    when the next arrives, and the last one carries the whole message's tool calls
    and usage (the convention of ironloop's own models), so merging the chunks gives
    the message LangChain's ``+`` gives."""

    def __init__(self) -> None:
        self.acc: Any = None
        self.pending: Any = None

    def push(self, c: Any) -> AIMessage | None:
        c = _chunk(c, self.acc.id if self.acc is not None else None)
        self.acc = c if self.acc is None else self.acc + c
        out, self.pending = self.pending, c
        return None if out is None else AIMessage(content=out.content, id=self.acc.id)

    def last(self) -> AIMessage | None:
        if self.pending is None:
            return None
        full = _as_ai(self.acc)
        return AIMessage(
            content=self.pending.content,
            tool_calls=[dict(c) for c in full.tool_calls],
            invalid_tool_calls=[dict(c) for c in full.invalid_tool_calls],
            usage_metadata=full.usage_metadata,
            id=full.id,
            # The whole message's provider fields (an OpenAI ``refusal``, the stop
            # reason) ride on the last piece too, as its tool calls do.
            additional_kwargs=dict(full.additional_kwargs),
            response_metadata=dict(full.response_metadata),
        )


def _underlying_model(model: Any) -> Any:
    """The chat model inside a ``RunnableSequence`` / ``RunnableBinding`` (LangGraph's
    ``_get_model``)."""
    if isinstance(model, RunnableSequence):
        model = next(
            (s for s in model.steps if isinstance(s, (RunnableBinding, BaseChatModel))), model
        )
    if isinstance(model, RunnableBinding):
        model = model.bound
    if not isinstance(model, BaseChatModel):
        raise TypeError(
            "Expected `model` to be a ChatModel or RunnableBinding (e.g. model.bind_tools(...)), "
            f"got {type(model)}"
        )
    return model


class LangChainChatModel:
    """A LangChain chat model (or a ``Runnable`` over messages) behind ironloop's model
    protocol. Messages go in and come back as langchain-core messages (a streamed answer
    made whole); ``tools`` passed to a call are bound with the model's ``bind_tools`` unless
    the model came with its tools bound (``tools_bound=True``).

    Example:
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langchain_core.messages import AIMessage
        >>> m = LangChainChatModel(GenericFakeChatModel(messages=iter([AIMessage("hi")])))
        >>> m.invoke([("user", "hello")]).content
        'hi'
    """

    def __init__(self, model: Any, *, tools_bound: bool = False) -> None:
        if not is_langchain_runnable(model):
            raise TypeError(f"expected a LangChain chat model, got {type(model).__name__}")
        self.model = model
        self.tools_bound = tools_bound

    def __repr__(self) -> str:
        return f"LangChainChatModel({self.model!r})"

    def _runnable(self, tools: Any, tool_choice: Any, kwargs: dict[str, Any]) -> Any:
        r = self.model
        if tools and not self.tools_bound:
            kw = {} if tool_choice is None else {"tool_choice": tool_choice}
            r = r.bind_tools(list(tools), **kw)
        rf = kwargs.pop("response_format", None)
        if isinstance(rf, dict) and rf.get("type") == "json_schema":
            # create_agent's ProviderStrategy: OpenAI's native format, bound as LangChain's
            # create_agent binds it (a bare schema is create_react_agent's, asked for
            # through with_structured_output instead).
            kwargs["response_format"] = rf
        return r.bind(**kwargs) if kwargs else r

    def invoke(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kwargs: Any
    ) -> AIMessage:
        r = self._runnable(tools, tool_choice, kwargs)
        if _tracing.ON and _tracing.tracer() is not None:
            with _tracing.model_span(*self._span_names()) as answered:
                return self._done(_as_ai(answered(r.invoke(_model_input(messages), _OWN_CALL))))
        return self._done(_as_ai(r.invoke(_model_input(messages), _OWN_CALL)))

    async def ainvoke(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kwargs: Any
    ) -> AIMessage:
        r = self._runnable(tools, tool_choice, kwargs)
        if _tracing.ON and _tracing.tracer() is not None:
            with _tracing.model_span(*self._span_names()) as answered:
                out = answered(await r.ainvoke(_model_input(messages), _OWN_CALL))
                return self._done(_as_ai(out))
        return self._done(_as_ai(await r.ainvoke(_model_input(messages), _OWN_CALL)))

    def _span_names(self) -> tuple[str, str]:
        """A traced call's ``gen_ai.provider.name`` and ``gen_ai.request.model``: the
        chat model's own LangSmith parameters (``ls_provider``, ``ls_model_name``), as
        LangChain's tracers name them; the class for a ``Runnable`` that is none."""
        try:
            chat = _underlying_model(self.model)
        except TypeError:
            return "langchain", type(self.model).__name__
        try:
            params: Any = chat._get_ls_params()
        except Exception:  # a model's own override failing must not fail its call
            params = {}
        provider = params.get("ls_provider") or type(chat).__name__.lower()
        return str(provider), str(params.get("ls_model_name") or model_name_of(chat))

    def _stream_span(self) -> Any:
        """A streamed call's span when traced, else ``None``."""
        if _tracing.ON and _tracing.tracer() is not None:
            return _tracing.start_model_stream(*self._span_names())
        return None

    def _done(self, message: AIMessage) -> AIMessage:
        """A whole answer, its usage added to ironloop's totals in force."""
        record(model_name_of(_underlying_model(self.model), message), message)
        return message

    def stream(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kwargs: Any
    ) -> Iterator[AIMessage]:
        """Yields ``AIMessage`` pieces, one per LangChain chunk; the last one
        carries the tool calls and the usage of the whole message."""
        r = self._runnable(tools, tool_choice, kwargs)
        if _in_v3_run():
            yield self._done(_as_ai(r.invoke(_model_input(messages))))
            return
        run = _StreamRun(self)
        with run:
            for c in r.stream(_model_input(messages), _OWN_CALL):
                yield from run.push(c)
        yield from run.ended()

    async def astream(
        self, messages: Any, tools: Any = None, tool_choice: Any = None, **kwargs: Any
    ) -> AsyncIterator[AIMessage]:
        r = self._runnable(tools, tool_choice, kwargs)
        if _in_v3_run():
            yield self._done(_as_ai(await r.ainvoke(_model_input(messages))))
            return
        run = _StreamRun(self)
        with run:
            async for c in r.astream(_model_input(messages), _OWN_CALL):
                for out in run.push(c):
                    yield out
        for whole in run.ended():
            yield whole

    def structured(self, messages: Any, schema: Any) -> Any:
        """The model's ``with_structured_output(schema)`` answer (LangGraph's
        ``generate_structured_response``)."""
        m = _underlying_model(self.model).with_structured_output(schema)
        return m.invoke(_model_input(messages))

    async def astructured(self, messages: Any, schema: Any) -> Any:
        m = _underlying_model(self.model).with_structured_output(schema)
        return await m.ainvoke(_model_input(messages))


class _StreamRun:
    """What ``stream`` and ``astream`` of a :class:`LangChainChatModel` keep around one
    streamed call: the chunks' merger and the call's span (when traced), ended with
    the whole message or the error; the message's usage is recorded once it ended.
    The chunks are read inside ``with run:`` (an error there, the merger's last one
    included, ends the span with it); then ``ended()``."""

    def __init__(self, model: LangChainChatModel) -> None:
        self.model = model
        self.merger = _Merger()
        self.span = model._stream_span()
        self.last: AIMessage | None = None

    def push(self, chunk: Any) -> tuple[AIMessage, ...]:
        """The piece ``chunk`` makes, if any."""
        out = self.merger.push(chunk)
        return () if out is None else (out,)

    def __enter__(self) -> _StreamRun:
        return self

    def __exit__(self, kind: Any, e: BaseException | None, tb: Any) -> None:
        try:
            if e is None:
                self.last = self.merger.last()
                return
        except BaseException as failure:
            self.failed(failure)
            raise
        self.failed(e)

    def failed(self, e: BaseException) -> None:
        if self.span is not None:
            _tracing.end_model_stream(self.span, exc=e)

    def ended(self) -> tuple[AIMessage, ...]:
        """The whole message (when the stream had one), after the span ended with it."""
        last = self.last
        if self.span is not None:
            _tracing.end_model_stream(self.span, last)
        if last is None:
            return ()
        record(model_name_of(_underlying_model(self.model.model), last), last)
        return (last,)


def _bound_tool_names(bound: list[Any]) -> set[str]:
    names = set()
    for t in bound:
        if isinstance(t, dict):
            if t.get("type") == "function":
                names.add(t["function"]["name"])
            elif t.get("name"):
                names.add(t["name"])
    return names


def should_bind_tools(model: Any, tools: Sequence[Any], num_builtin: int = 0) -> bool:
    """Whether ``tools`` still have to be bound to a LangChain ``model``: ``False`` when
    it (or the chat model step of a ``RunnableSequence``) has tools bound already —
    then they must be the same tools, as LangGraph checks (``num_builtin`` provider
    tools bound beside them)."""
    inner = model
    if isinstance(inner, RunnableSequence):
        inner = next(
            (s for s in inner.steps if isinstance(s, (RunnableBinding, BaseChatModel))), inner
        )
    if not (isinstance(inner, RunnableBinding) and "tools" in inner.kwargs):
        return True
    bound = inner.kwargs["tools"]
    if len(tools) != len(bound) - num_builtin:
        raise ValueError(
            "Number of tools in the model.bind_tools() and tools passed to "
            f"create_react_agent must match Got {len(tools)} tools, expected "
            f"{len(bound) - num_builtin}"
        )
    missing = {t.name for t in tools} - _bound_tool_names(bound)
    if missing:
        raise ValueError(f"Missing tools '{missing}' in the model.bind_tools()")
    return False


def agent_model(model: Any, tools: Sequence[Any], builtin: Sequence[dict[str, Any]] = ()) -> Any:
    """``create_react_agent``'s model from a LangChain one: the tools bound with its
    ``bind_tools`` unless they are bound already (then they must match, as LangGraph
    checks)."""
    if not should_bind_tools(model, tools, len(builtin)):
        return LangChainChatModel(model, tools_bound=True)
    if not tools and not builtin:
        return LangChainChatModel(model, tools_bound=True)
    lc_tools = [
        t.lc_tool if isinstance(t, LangChainTool) else t if is_langchain_tool(t) else t.to_openai()
        for t in tools
    ]
    return LangChainChatModel(model.bind_tools([*lc_tools, *builtin]), tools_bound=True)


def prompt_messages(prompt: Any, state: Any) -> list[Any]:
    """What a LangChain ``Runnable`` prompt (a ``ChatPromptTemplate``...) makes of the
    state (its message fields handed over as langchain-core messages)."""
    view = _lc_value(dict(state)) if isinstance(state, dict) else state
    out = prompt.invoke(view)
    return list(out.to_messages()) if hasattr(out, "to_messages") else list(out)


async def aprompt_messages(prompt: Any, state: Any) -> list[Any]:
    view = _lc_value(dict(state)) if isinstance(state, dict) else state
    out = await prompt.ainvoke(view)
    return list(out.to_messages()) if hasattr(out, "to_messages") else list(out)


def runnable_node(r: Any) -> Any:
    """A LangChain ``Runnable`` as a graph node (sync, with its async form)."""

    def node(state: Any) -> Any:
        return r.invoke(state)

    async def anode(state: Any) -> Any:
        return await r.ainvoke(state)

    node.__ironloop_async__ = anode  # type: ignore[attr-defined]
    return node
