"""An agent's prompt, as LangGraph's ``create_react_agent`` takes it: a str or a
``SystemMessage`` put before the messages, a function (sync or async, given the run's
``config`` / ``store`` when it asks for them) or a LangChain ``Runnable`` making the
model's whole input."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ironloop import messages as _messages
from ironloop._foreign import is_langchain_message, is_langchain_runnable


def _get(state: Any, key: str, default: Any = None) -> Any:
    """A state's ``key``, the state a dict or an object (pydantic, dataclass)."""
    return state.get(key, default) if isinstance(state, dict) else getattr(state, key, default)


def _is_system_message(p: Any) -> bool:
    return isinstance(p, _messages.SystemMessage) or (
        is_langchain_message(p) and getattr(p, "type", None) == "system"
    )


#: The run's config as a node's ``config`` parameter is typed (the name the graph
#: checks it by, as LangGraph's).
RunnableConfig = dict[str, Any]

#: What a prompt function may take besides the state, by name, as LangGraph's
#: ``RunnableCallable`` gives them: the run's config and the graph's store.
_PROMPT_KWARGS = ("config", "store")


def _prompt_kwargs(prompt: Any) -> tuple[str, ...]:
    """The names of ``_PROMPT_KWARGS`` a prompt function takes (none for a str, a
    message or a ``Runnable``)."""
    if not callable(prompt) or isinstance(prompt, str) or is_langchain_runnable(prompt):
        return ()
    try:
        params = inspect.signature(prompt).parameters
    except (TypeError, ValueError):  # no signature to read: the state only
        return ()
    return tuple(k for k in _PROMPT_KWARGS if k in params)


def _prompt_output(out: Any, state: Any) -> list[Any]:
    """A prompt function's messages; one that returns a LangChain ``Runnable`` (a
    ``SystemMessage(...) + messages`` is a ``ChatPromptTemplate``) has it run on the
    state, as LangGraph's ``RunnableCallable`` does."""
    if is_langchain_runnable(out):
        from ironloop import _langchain

        return _langchain.prompt_messages(out, state)
    return list(out)


def _prompt_functions(prompt: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The sync and async forms of ``prompt``: state -> the model's input messages.
    As LangGraph: a str or a SystemMessage goes before the messages, a function (sync or
    async) or a LangChain ``Runnable`` makes the whole input. A function is given, as
    keywords, the ``_prompt_kwargs`` it takes. (Made for every agent: the common
    cases, none and a str, are tested first.)"""
    if prompt is None:

        def fn(state: Any, **_: Any) -> Any:
            return list(_get(state, "messages"))

    elif isinstance(prompt, str):
        # The SystemMessage is made at the first call, once: an agent whose model step
        # the engine runs (``_agent._agent_model``) never calls this, and making a
        # langchain-core message was most of an agent's creation (W11).
        made: list[Any] = []

        def fn(state: Any, **_: Any) -> Any:
            if not made:
                made.append(_messages.SystemMessage(content=prompt))
            return [made[0], *_get(state, "messages")]

    elif _is_system_message(prompt):

        def fn(state: Any, **_: Any) -> Any:
            return [prompt, *_get(state, "messages")]

    elif is_langchain_runnable(prompt):
        from ironloop import _langchain

        def runnable(state: Any, **_: Any) -> Any:
            return _langchain.prompt_messages(prompt, state)

        async def arunnable(state: Any, **_: Any) -> Any:
            return await _langchain.aprompt_messages(prompt, state)

        return runnable, arunnable
    elif inspect.iscoroutinefunction(prompt):

        def refuse(state: Any, **_: Any) -> Any:
            raise TypeError(
                'No synchronous function provided to "Prompt".\nEither initialize with a '
                "synchronous function or invoke via the async API (ainvoke, astream, etc.)"
            )

        async def coroutine(state: Any, **kw: Any) -> Any:
            return _prompt_output(await prompt(state, **kw), state)

        return refuse, coroutine
    elif callable(prompt):

        def fn(state: Any, **kw: Any) -> Any:
            return _prompt_output(prompt(state, **kw), state)

    else:
        raise ValueError(f"Got unexpected type for `prompt`: {type(prompt)}")

    async def afn(state: Any, **kw: Any) -> Any:
        return fn(state, **kw)

    return fn, afn


def _giving_prompt_kwargs(
    agent: Callable[..., Any], aagent: Callable[..., Any], wanted: tuple[str, ...]
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The agent node's forms taking the run's ``config`` and ``store`` (only a graph
    whose prompt wants them pays for them) and passing the ``wanted`` ones on."""

    def picked(config: Any, store: Any) -> dict[str, Any]:
        given = {"config": config, "store": store}
        return {k: given[k] for k in wanted}

    def node(state: Any, config: RunnableConfig | None = None, store: Any = None) -> Any:
        return agent(state, **picked(config, store))

    async def anode(state: Any, config: RunnableConfig | None = None, store: Any = None) -> Any:
        return await aagent(state, **picked(config, store))

    return node, anode
