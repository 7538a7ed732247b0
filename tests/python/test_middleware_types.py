"""Middleware types as LangChain 1.5's: generic aliases, ``typing_extensions``
TypedDict states, ``ModelRequest``'s constructor and in-place edits, and
``ExtendedModelResponse`` (a state update beside the model's answer)."""

from __future__ import annotations

import operator
import typing
import warnings
from typing import Annotated, Any

import pytest
import typing_extensions
from agent_support import MODES, run

from ironloop import create_agent
from ironloop.checkpoint import BaseCheckpointSaver
from ironloop.messages import AIMessage, HumanMessage, SystemMessage
from ironloop.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    InputAgentState,
    ModelRequest,
    ModelResponse,
    OutputAgentState,
    wrap_model_call,
)
from ironloop.models import ScriptedChatModel
from ironloop.runtime import Runtime
from ironloop.types import Command


def test_generic_aliases_are_subscriptable_and_states_are_typing_extensions_typeddicts() -> None:
    class Ctx(typing_extensions.TypedDict):
        user: str

    class Mine(AgentMiddleware[AgentState[Any], Ctx, Any]):
        pass

    assert isinstance(Mine(), AgentMiddleware)
    assert ModelRequest[Ctx] is not None and ModelResponse[int] is not None
    assert BaseCheckpointSaver[str] is not None
    for state in (AgentState, InputAgentState, OutputAgentState):
        assert typing_extensions.is_typeddict(state)
        # pydantic refuses a typing.TypedDict on Python < 3.12: these are not that.
        assert type(state) is not type(typing.TypedDict("T", {"a": int}))
    assert Runtime().context is None


def test_model_request_takes_system_prompt_and_refuses_both() -> None:
    req = ModelRequest(model=None, messages=[], system_prompt="be brief")
    assert isinstance(req.system_message, SystemMessage) and req.system_prompt == "be brief"
    assert req.tools == [] and req.state == {"messages": []}
    with pytest.raises(ValueError, match="Cannot specify both system_prompt and system_message"):
        ModelRequest(model=None, messages=[], system_prompt="a", system_message=SystemMessage("b"))
    with pytest.raises(ValueError, match="Cannot specify both"):
        req.override(system_prompt="a", system_message=SystemMessage("b"))
    with pytest.raises(TypeError):
        ModelRequest(None, [])  # type: ignore[misc]  # keyword-only, as LangChain's


def test_setting_a_request_attribute_warns_and_still_works() -> None:
    req = ModelRequest(model=None, messages=[])
    with pytest.warns(DeprecationWarning, match="request.override"):
        req.system_prompt = "new"  # type: ignore[misc]
    assert req.system_message is not None and req.system_message.text == "new"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert req.override(tool_choice="auto").tool_choice == "auto"


class Counted(AgentState):
    notes: typing_extensions.NotRequired[Annotated[list[str], operator.add]]


@pytest.mark.parametrize("mode", MODES)
def test_extended_model_response_commands_apply_after_the_model_update_inner_first(
    mode: str,
) -> None:
    class Outer(AgentMiddleware):
        state_schema = Counted

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            response = handler(request)
            # The inner layer's ExtendedModelResponse reaches us as a ModelResponse.
            assert isinstance(response, ModelResponse)
            return ExtendedModelResponse(response, Command(update={"notes": ["outer"]}))

    @wrap_model_call(state_schema=Counted)
    def inner(request: Any, handler: Any) -> Any:
        response = handler(request)
        return ExtendedModelResponse(
            model_response=response,
            command=Command(update={"notes": ["inner"], "messages": [HumanMessage("aside")]}),
        )

    agent = create_agent(ScriptedChatModel(["hi"]), [], middleware=[Outer(), inner])
    out = run(agent, {"messages": [("user", "hello")]}, mode=mode)
    assert out["notes"] == ["inner", "outer"]
    # The model's answer first, the command's message after it.
    assert [m.text for m in out["messages"]] == ["hello", "hi", "aside"]
    assert isinstance(out["messages"][1], AIMessage)


def test_an_extended_response_command_may_not_goto() -> None:
    @wrap_model_call
    def jump(request: Any, handler: Any) -> Any:
        return ExtendedModelResponse(handler(request), Command(goto="model"))

    agent = create_agent(ScriptedChatModel(["hi"]), [], middleware=[jump])
    with pytest.raises(NotImplementedError, match="Command goto is not yet supported"):
        agent.invoke({"messages": [("user", "x")]})


def test_a_retried_inner_call_keeps_only_its_last_commands() -> None:
    tries = []

    class Retry(AgentMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            handler(request)
            return handler(request)

    @wrap_model_call(state_schema=Counted)
    def tag(request: Any, handler: Any) -> Any:
        tries.append(1)
        return ExtendedModelResponse(
            handler(request), Command(update={"notes": [f"try{len(tries)}"]})
        )

    agent = create_agent(ScriptedChatModel(["a", "b"]), [], middleware=[Retry(), tag])
    out = agent.invoke({"messages": [("user", "x")]})
    assert out["notes"] == ["try2"]
    assert out["messages"][-1].text == "b"


def test_request_tools_are_the_users_objects_and_a_hook_may_add_a_tool() -> None:
    """``request.tools`` holds the tools as given (a LangChain tool itself); a tool a
    ``wrap_model_call`` hook offers and its ``wrap_tool_call`` puts in the request runs
    (LangChain's dynamic tools)."""
    lc_tools = pytest.importorskip("langchain_core.tools")

    @lc_tools.tool
    def static(value: str) -> str:
        """Static."""
        return f"static {value}"

    @lc_tools.tool
    def dynamic(value: str) -> str:
        """Dynamic."""
        return f"dynamic {value}"

    seen: list[list[Any]] = []

    class Dynamic(AgentMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            seen.append(list(request.tools))
            return handler(request.override(tools=[*request.tools, dynamic]))

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            if request.tool_call["name"] == "dynamic":
                assert request.tool is None
                return handler(request.override(tool=dynamic))
            assert request.tool is static
            return handler(request)

    calls = [
        {"name": "dynamic", "args": {"value": "a"}, "id": "d1"},
        {"name": "static", "args": {"value": "b"}, "id": "s1"},
    ]
    model = ScriptedChatModel([{"content": "", "tool_calls": calls}, "done"])
    out = create_agent(model, [static], middleware=[Dynamic()]).invoke(
        {"messages": [("user", "x")]}
    )
    assert seen[0] == [static]
    assert [m.content for m in out["messages"][2:4]] == ["dynamic a", "static b"]


def test_limit_errors_and_states_have_langchains_shapes() -> None:
    from ironloop.middleware import (
        ModelCallLimitState,
        ToolCallLimitExceededError,
        ToolCallLimitState,
    )

    e = ToolCallLimitExceededError(
        thread_count=4, run_count=2, thread_limit=3, run_limit=5, tool_name="search"
    )
    assert (e.thread_count, e.run_count, e.thread_limit, e.run_limit, e.tool_name) == (
        4,
        2,
        3,
        5,
        "search",
    )
    assert str(e) == "'search' tool call limit reached: thread limit exceeded (4/3 calls)."
    assert {"thread_tool_call_count", "run_tool_call_count"} <= set(
        ToolCallLimitState.__annotations__
    )
    assert "thread_model_call_count" in ModelCallLimitState.__annotations__


def test_messages_a_hook_appends_to_the_request_reach_the_state() -> None:
    @wrap_model_call
    def remind(request: Any, handler: Any) -> Any:
        request.messages.append(HumanMessage("be nice"))
        return handler(request)

    out = create_agent(ScriptedChatModel(["hi"]), [], middleware=[remind]).invoke(
        {"messages": [("user", "hello")]}
    )
    assert [m.text for m in out["messages"]] == ["hello", "be nice", "hi"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # typing's __orig_class__ is not a user's edit
        ModelRequest[dict](model=None, messages=[])


def test_a_typing_extensions_typeddict_is_a_response_format() -> None:
    class Weather(typing_extensions.TypedDict):
        city: str

    answer = {
        "content": "",
        "tool_calls": [{"name": "Weather", "args": {"city": "Oslo"}, "id": "w1"}],
    }
    out = create_agent(ScriptedChatModel([answer]), [], response_format=Weather).invoke(
        {"messages": [("user", "weather?")]}
    )
    assert out["structured_response"] == {"city": "Oslo"}


def test_retry_middleware_expose_their_settings_and_let_a_bare_interrupt_through() -> None:
    from ironloop.errors import GraphInterrupt
    from ironloop.middleware import ModelRetryMiddleware

    retry = ModelRetryMiddleware(max_retries=3, initial_delay=0, jitter=False)
    assert (retry.tools, retry.backoff_factor, retry.initial_delay, retry.jitter) == (
        [],
        2.0,
        0,
        False,
    )
    calls = []

    def handler(request: Any) -> Any:
        calls.append(1)
        raise GraphInterrupt  # LangGraph's may be raised without a value

    with pytest.raises(GraphInterrupt):
        retry.wrap_model_call(ModelRequest(model=None, messages=[]), handler)
    assert calls == [1]


def test_hook_decorators_keep_their_keywords_and_the_base_hooks_change_nothing() -> None:
    import asyncio

    from ironloop.middleware import AgentMiddleware, after_model, wrap_tool_call
    from ironloop.middleware.types import defined_hooks, jumps_of

    @after_model(can_jump_to=["end"])
    async def check(state: Any, runtime: Any) -> dict[str, Any] | None:
        return {"jump_to": "end"}

    assert defined_hooks(check) == {"after_model"}
    assert jumps_of(check, "after_model") == ["end"]
    assert asyncio.run(check.aafter_model({}, None)) == {"jump_to": "end"}
    # A wrap hook says no jumps: the keyword is refused, as before.
    with pytest.raises(TypeError, match="can_jump_to"):
        wrap_tool_call(can_jump_to=["end"])
    base = AgentMiddleware()
    assert base.before_agent({}, None) is None and base.after_agent({}, None) is None
    assert asyncio.run(base.abefore_model({}, None)) is None
    assert defined_hooks(base) == set()
