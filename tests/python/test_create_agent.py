"""create_agent and middleware hooks (LangChain 1.x's shape): the loop, the order of
hooks, sync and async forms under invoke / ainvoke / stream, decorators, jump_to,
request rewriting, state fields and tools added by middleware, run context."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import pytest
from agent_support import MODES, add, call, echo, run, turn

from ironloop import SqliteSaver, ToolNode, create_agent, create_react_agent, init_model, tool
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ToolCallRequest,
    after_agent,
    after_model,
    before_agent,
    before_model,
    dynamic_prompt,
    hook_config,
    wrap_model_call,
    wrap_tool_call,
)
from ironloop.models import AnthropicChat, OpenAIChat, ScriptedChatModel
from ironloop.types import Command


def two_rounds() -> ScriptedChatModel:
    return ScriptedChatModel([turn(call("add", "c1", a=2, b=3)), "five"])


# --- the loop -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_loop_with_system_prompt_and_tools(mode: str) -> None:
    model = two_rounds()
    agent = create_agent(model, [add], system_prompt="Be brief.", name="calc")
    out = run(agent, {"messages": [("user", "2+3?")]}, mode=mode)
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert out["messages"][2].content == "5"
    assert out["messages"][-1].content == "five"
    assert out["messages"][-1].name == "calc"
    sent, tools = model.calls[0]
    assert sent[0].type == "system" and sent[0].content == "Be brief."
    assert [t["function"]["name"] for t in tools] == ["add"]
    assert len(model.calls) == 2


def test_node_names_are_langchains() -> None:
    @before_model
    def bm(state: Any, runtime: Any) -> None:
        return None

    @after_agent
    def done(state: Any, runtime: Any) -> None:
        return None

    agent = create_agent(two_rounds(), [add], middleware=[bm, done])
    nodes = [next(iter(u)) for u in agent.stream({"messages": [("user", "x")]})]
    assert nodes == [
        "bm.before_model",
        "model",
        "tools",
        "bm.before_model",
        "model",
        "done.after_agent",
    ]


def test_model_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    m = init_model("openai:llama3.2@http://localhost:11434/v1")
    assert isinstance(m, OpenAIChat) and m.model == "llama3.2"
    assert isinstance(init_model("anthropic:claude-sonnet-4-5"), AnthropicChat)
    assert isinstance(init_model("openai:gpt-4o-mini"), OpenAIChat)
    with pytest.raises(ValueError, match=r"unknown model provider 'mistral'.*openai, anthropic"):
        init_model("mistral:large")
    with pytest.raises(ValueError, match="must be 'provider:model'"):
        init_model("gpt-4o")
    with pytest.raises(ValueError, match="no base URL"):
        init_model("openai:x@")
    agent = create_agent("openai:gpt-4o-mini@http://127.0.0.1:9/v1", [add])
    assert "model" in agent.get_graph().nodes


def test_duplicate_and_foreign_middleware_are_refused() -> None:
    @before_model
    def same(state: Any, runtime: Any) -> None:
        return None

    with pytest.raises(AssertionError, match=r"duplicate middleware.*same"):
        create_agent(two_rounds(), [add], middleware=[same, same])
    with pytest.raises(TypeError, match="AgentMiddleware instances"):
        create_agent(two_rounds(), [add], middleware=[lambda s: s])  # type: ignore[list-item]


def test_react_agent_and_create_agent_share_the_loop() -> None:
    """The same script gives the same conversation through either factory."""
    a = create_react_agent(two_rounds(), [add]).invoke({"messages": [("user", "x")]})
    b = create_agent(two_rounds(), [add]).invoke({"messages": [("user", "x")]})
    assert [(m.type, m.text) for m in a["messages"]] == [(m.type, m.text) for m in b["messages"]]


# --- hook order, sync and async -------------------------------------------------------


def recorder(tag: str, log: list[str], *, asynchronous: bool) -> AgentMiddleware:
    """A middleware with all six hooks, each logging ``tag.hook``."""

    if asynchronous:

        class Async(AgentMiddleware):
            @property
            def name(self) -> str:
                return tag

            async def abefore_agent(self, state: Any, runtime: Any) -> None:
                log.append(f"{tag}.before_agent")

            async def abefore_model(self, state: Any, runtime: Any) -> None:
                log.append(f"{tag}.before_model")

            async def aafter_model(self, state: Any, runtime: Any) -> None:
                log.append(f"{tag}.after_model")

            async def aafter_agent(self, state: Any, runtime: Any) -> None:
                log.append(f"{tag}.after_agent")

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                log.append(f"{tag}.wrap_model_call<")
                out = await handler(request)
                log.append(f"{tag}.wrap_model_call>")
                return out

            async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
                log.append(f"{tag}.wrap_tool_call<")
                out = await handler(request)
                log.append(f"{tag}.wrap_tool_call>")
                return out

        return Async()

    class Sync(AgentMiddleware):
        @property
        def name(self) -> str:
            return tag

        def before_agent(self, state: Any, runtime: Any) -> None:
            log.append(f"{tag}.before_agent")

        def before_model(self, state: Any, runtime: Any) -> None:
            log.append(f"{tag}.before_model")

        def after_model(self, state: Any, runtime: Any) -> None:
            log.append(f"{tag}.after_model")

        def after_agent(self, state: Any, runtime: Any) -> None:
            log.append(f"{tag}.after_agent")

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            log.append(f"{tag}.wrap_model_call<")
            out = handler(request)
            log.append(f"{tag}.wrap_model_call>")
            return out

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            log.append(f"{tag}.wrap_tool_call<")
            out = handler(request)
            log.append(f"{tag}.wrap_tool_call>")
            return out

    return Sync()


EXPECTED_ORDER = [
    "A.before_agent",
    "B.before_agent",
    "A.before_model",
    "B.before_model",
    "A.wrap_model_call<",
    "B.wrap_model_call<",
    "B.wrap_model_call>",
    "A.wrap_model_call>",
    "B.after_model",
    "A.after_model",
    "A.wrap_tool_call<",
    "B.wrap_tool_call<",
    "B.wrap_tool_call>",
    "A.wrap_tool_call>",
    "A.before_model",
    "B.before_model",
    "A.wrap_model_call<",
    "B.wrap_model_call<",
    "B.wrap_model_call>",
    "A.wrap_model_call>",
    "B.after_model",
    "A.after_model",
    "B.after_agent",
    "A.after_agent",
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kinds", [(False, False), (True, True), (False, True)])
def test_hook_order_sync_and_async(mode: str, kinds: tuple[bool, bool]) -> None:
    """Before-hooks in list order, after-hooks reversed, wraps nested with the first
    outermost — whether a hook is written sync or async, under every API."""
    log: list[str] = []
    mws = [recorder("A", log, asynchronous=kinds[0]), recorder("B", log, asynchronous=kinds[1])]
    agent = create_agent(two_rounds(), [add], middleware=mws)
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert out["messages"][-1].content == "five"
    assert out["messages"][2].content == "5"
    assert log == EXPECTED_ORDER


@pytest.mark.parametrize("mode", MODES)
def test_decorators_sync_and_async(mode: str) -> None:
    log: list[str] = []

    @before_agent
    async def start(state: Any, runtime: Any) -> None:
        log.append("start")

    @before_model
    def bm(state: Any, runtime: Any) -> None:
        log.append(f"bm{len(state['messages'])}")

    @after_model
    async def am(state: Any, runtime: Any) -> None:
        log.append("am")

    @wrap_model_call
    async def wm(request: ModelRequest, handler: Any) -> Any:
        log.append("wm")
        return await handler(request)

    @wrap_tool_call
    def wt(request: ToolCallRequest, handler: Any) -> Any:
        log.append(f"wt:{request.tool_call['name']}")
        return handler(request)

    @after_agent
    def end(state: Any, runtime: Any) -> None:
        log.append("end")

    agent = create_agent(two_rounds(), [add], middleware=[start, bm, am, wm, wt, end])
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert out["messages"][-1].content == "five"
    assert log == ["start", "bm1", "wm", "am", "wt:add", "bm3", "wm", "am", "end"]
    assert type(bm).__name__ == "bm" and bm.name == "bm"


# --- jump_to --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_before_model_jumps_to_end(mode: str) -> None:
    @before_model(can_jump_to=["end"])
    def gate(state: Any, runtime: Any) -> Any:
        if len(state["messages"]) > 1:
            return {"jump_to": "end", "messages": [AIMessage(content="stopped")]}
        return None

    @after_agent
    def fin(state: Any, runtime: Any) -> Any:
        return {"messages": [AIMessage(content="after")]}

    model = ScriptedChatModel([turn(call("add", "c1", a=1, b=1)), "never"])
    agent = create_agent(model, [add], middleware=[gate, fin])
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert [m.text for m in out["messages"][-2:]] == ["stopped", "after"]
    assert len(model.calls) == 1
    if mode != "stream":  # the values stream shows every field, as LangGraph's does
        assert "jump_to" not in out


@pytest.mark.parametrize("mode", MODES)
def test_after_model_jumps_back_to_model(mode: str) -> None:
    class Insist(AgentMiddleware):
        @hook_config(can_jump_to=["model"])
        def after_model(self, state: Any, runtime: Any) -> Any:
            if state["messages"][-1].text == "lazy":
                return {"jump_to": "model", "messages": [("user", "try again")]}
            return None

    model = ScriptedChatModel(["lazy", "done"])
    out = run(
        create_agent(model, [], middleware=[Insist()]), {"messages": [("user", "x")]}, mode=mode
    )
    assert [m.text for m in out["messages"]] == ["x", "lazy", "try again", "done"]


def test_jump_to_tools_runs_the_pending_calls() -> None:
    class Retool(AgentMiddleware):
        @hook_config(can_jump_to=["tools"])
        def before_model(self, state: Any, runtime: Any) -> Any:
            last = state["messages"][-1]
            if last.type == "ai" and last.tool_calls:  # seeded conversation: run its calls
                return {"jump_to": "tools"}
            return None

    seeded = [("user", "x"), AIMessage(content="", tool_calls=[call("add", "c9", a=4, b=5)])]
    model = ScriptedChatModel(["nine"])
    out = create_agent(model, [add], middleware=[Retool()]).invoke({"messages": seeded})
    assert [m.text for m in out["messages"][2:]] == ["9", "nine"]


def test_an_undeclared_jump_is_ignored_with_a_warning() -> None:
    """As LangChain: a jump the hook did not declare is ignored (and ironloop says so)."""

    @before_model
    def sneaky(state: Any, runtime: Any) -> Any:
        assert "jump_to" not in state
        return {"jump_to": "end"}

    agent = create_agent(two_rounds(), [add], middleware=[sneaky])
    with pytest.warns(UserWarning, match=r"sneaky.before_model returned jump_to='end'.*ignored"):
        out = agent.invoke({"messages": [("user", "x")]})
    assert "jump_to" not in out
    assert [m.text for m in out["messages"][2:]] == ["5", "five"]  # the loop went on
    with pytest.raises(ValueError, match="can_jump_to takes"):
        before_model(can_jump_to=["nowhere"])  # type: ignore[list-item]


# --- wrap_model_call ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_wrap_model_call_rewrites_the_request(mode: str) -> None:
    other = ScriptedChatModel(["from the other model"])

    @wrap_model_call
    def rewrite(request: ModelRequest, handler: Any) -> Any:
        assert request.system_prompt == "orig"
        assert [t.name for t in request.tools] == ["add", "echo"]
        assert request.state["messages"][0].text == "x"
        return handler(
            request.override(
                model=other,
                system_prompt="new",
                tools=[t for t in request.tools if t.name == "echo"],
            )
        )

    first = ScriptedChatModel(["unused"])
    agent = create_agent(first, [add, echo], system_prompt="orig", middleware=[rewrite])
    out = run(agent, {"messages": [("user", "x")]}, mode=mode)
    assert out["messages"][-1].text == "from the other model"
    assert first.calls == []
    sent, tools = other.calls[0]
    assert sent[0].content == "new"
    assert [t["function"]["name"] for t in tools] == ["echo"]


@pytest.mark.parametrize("mode", MODES)
def test_wrap_model_call_retries_and_answers_itself(mode: str) -> None:
    flaky_calls = []

    def flaky(messages: list[Any]) -> Any:
        flaky_calls.append(1)
        if len(flaky_calls) == 1:
            raise RuntimeError("overloaded")
        return "ok"

    @wrap_model_call
    def retry_once(request: ModelRequest, handler: Any) -> Any:
        try:
            return handler(request)
        except RuntimeError:
            return handler(request)

    out = run(
        create_agent(ScriptedChatModel(flaky), [], middleware=[retry_once]),
        {"messages": [("user", "x")]},
        mode=mode,
    )
    assert out["messages"][-1].text == "ok" and len(flaky_calls) == 2

    @wrap_model_call
    def canned(request: ModelRequest, handler: Any) -> Any:
        return AIMessage(content="canned")

    model = ScriptedChatModel(["unused"])
    out = run(
        create_agent(model, [], middleware=[canned]), {"messages": [("user", "x")]}, mode=mode
    )
    assert out["messages"][-1].text == "canned" and model.calls == []


def test_wrap_model_call_must_return_a_response() -> None:
    @wrap_model_call
    def bad(request: ModelRequest, handler: Any) -> Any:
        return "text"

    with pytest.raises(
        TypeError, match="must return a ModelResponse, an ExtendedModelResponse or an AIMessage"
    ):
        create_agent(two_rounds(), [], middleware=[bad]).invoke({"messages": [("user", "x")]})


def test_dynamic_prompt() -> None:
    @dynamic_prompt
    def by_length(request: ModelRequest) -> str:
        return f"{len(request.messages)} messages so far"

    model = two_rounds()
    create_agent(model, [add], middleware=[by_length]).invoke({"messages": [("user", "x")]})
    assert [c[0][0].content for c in model.calls] == ["1 messages so far", "3 messages so far"]


def test_model_response_with_structured_response() -> None:
    @wrap_model_call
    def structured(request: ModelRequest, handler: Any) -> Any:
        resp = handler(request)
        return ModelResponse(result=resp.result, structured_response={"n": 5})

    out = create_agent(ScriptedChatModel(["five"]), [], middleware=[structured]).invoke(
        {"messages": [("user", "x")]}
    )
    assert out["structured_response"] == {"n": 5}


# --- wrap_tool_call -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_wrap_tool_call_edits_answers_and_commands(mode: str) -> None:
    ran: list[str] = []

    @tool
    def note(text: str) -> str:
        """Notes the text."""
        ran.append(text)
        return f"noted {text}"

    @wrap_tool_call
    def policy(request: ToolCallRequest, handler: Any) -> Any:
        args = request.tool_call["args"]
        if args["text"] == "secret":
            return ToolMessage(content="refused", tool_call_id=request.tool_call["id"], name="note")
        if args["text"] == "cmd":
            return Command(
                update={
                    "messages": [
                        ToolMessage(content="by command", tool_call_id=request.tool_call["id"])
                    ]
                }
            )
        assert request.tool is note
        return handler(
            request.override(
                tool_call={**request.tool_call, "args": {"text": args["text"].upper()}}
            )
        )

    model = ScriptedChatModel(
        [
            turn(
                call("note", "c1", text="hi"),
                call("note", "c2", text="secret"),
                call("note", "c3", text="cmd"),
            ),
            "done",
        ]
    )
    out = run(
        create_agent(model, [note], middleware=[policy]), {"messages": [("user", "x")]}, mode=mode
    )
    by_id = {m.tool_call_id: m.text for m in out["messages"] if m.type == "tool"}
    assert by_id == {"c1": "noted HI", "c2": "refused", "c3": "by command"}
    assert ran == ["HI"]


@pytest.mark.parametrize("mode", MODES)
def test_tool_failures_reach_wrap_tool_call_as_exceptions(mode: str) -> None:
    attempts: list[int] = []

    @tool
    def flaky(x: int) -> int:
        """Fails on the first try."""
        attempts.append(x)
        if len(attempts) < 2:
            raise ConnectionError("reset")
        return x

    seen: list[str] = []

    @wrap_tool_call
    def catch(request: ToolCallRequest, handler: Any) -> Any:
        try:
            return handler(request)
        except ConnectionError as e:
            seen.append(str(e))
            return handler(request)

    model = ScriptedChatModel([turn(call("flaky", "c1", x=7), call("nope", "c2")), "done"])
    out = run(
        create_agent(model, [flaky], middleware=[catch]), {"messages": [("user", "x")]}, mode=mode
    )
    tools = {m.tool_call_id: m for m in out["messages"] if m.type == "tool"}
    assert tools["c1"].text == "7" and seen == ["reset"]
    # An unknown tool is answered by the tools node (LangGraph's text), not raised into
    # the hook.
    assert tools["c2"].status == "error"
    assert tools["c2"].text == "Error: nope is not a valid tool, try one of [flaky]."


def test_a_failure_no_hook_handles_becomes_an_error_message() -> None:
    @tool
    def broken() -> str:
        """Always fails."""
        raise ValueError("bad input")

    @wrap_tool_call
    def passthrough(request: ToolCallRequest, handler: Any) -> Any:
        return handler(request)

    model = ScriptedChatModel([turn(call("broken", "c1")), "done"])
    out = create_agent(model, [broken], middleware=[passthrough]).invoke(
        {"messages": [("user", "x")]}
    )
    msg = out["messages"][2]
    assert msg.status == "error"
    assert msg.text == "Error: ValueError('bad input')\n Please fix your mistakes."


# --- state, tools and context from middleware -----------------------------------------


class Counted(AgentState, total=False):
    model_turns: int
    secret: Annotated[int, PrivateStateAttr]


@pytest.mark.parametrize("mode", MODES)
def test_middleware_state_fields_tools_and_context(mode: str) -> None:
    @tool
    def whoami() -> str:
        """Who is asking."""
        return "a tool of the middleware"

    @dataclasses.dataclass
    class Ctx:
        user: str

    seen: list[str] = []

    class Count(AgentMiddleware):
        state_schema = Counted
        tools = (whoami,)

        def before_model(self, state: Any, runtime: Any) -> Any:
            seen.append(runtime.context.user)
            return {"model_turns": state.get("model_turns", 0) + 1, "secret": 42}

        def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
            seen.append(f"req:{request.runtime.context.user}")
            return handler(request)

    model = ScriptedChatModel([turn(call("whoami", "c1")), "done"])
    agent = create_agent(model, [add], middleware=[Count()], context_schema=Ctx)
    out = run(agent, {"messages": [("user", "x")]}, mode=mode, context=Ctx(user="ann"))
    assert out["model_turns"] == 2
    if mode != "stream":  # the values stream shows every field, as LangGraph's does
        assert "secret" not in out  # private fields stay out of the result
    assert out["messages"][2].text == "a tool of the middleware"
    assert seen == ["ann", "req:ann", "ann", "req:ann"]
    assert sorted(t["function"]["name"] for t in model.calls[0][1]) == ["add", "whoami"]


def test_state_schema_of_the_agent_and_checkpointed_private_fields(tmp_path: Any) -> None:
    class MyState(AgentState, total=False):
        topic: str

    class Secret(AgentMiddleware):
        state_schema = Counted

        def after_model(self, state: Any, runtime: Any) -> Any:
            return {"secret": state.get("secret", 0) + 1}

    saver = SqliteSaver(str(tmp_path / "a.db"))
    agent = create_agent(
        two_rounds(), [add], state_schema=MyState, middleware=[Secret()], checkpointer=saver
    )
    cfg = {"configurable": {"thread_id": "t"}}
    out = agent.invoke({"messages": [("user", "x")], "topic": "sums"}, cfg)
    assert out["topic"] == "sums" and "secret" not in out
    assert agent.get_state(cfg).values["secret"] == 2


def test_tool_node_and_middleware_tools_do_not_mix() -> None:
    class WithTools(AgentMiddleware):
        tools = (echo,)

    with pytest.raises(ValueError, match="not a ToolNode"):
        create_agent(two_rounds(), ToolNode([add]), middleware=[WithTools()])


@pytest.mark.parametrize("mode", MODES)
def test_wrapped_tool_calls_run_concurrently(mode: str) -> None:
    """With wrap_tool_call hooks the calls of one message still run together: each of
    these three waits until all three have started."""
    import asyncio
    import threading

    barrier = threading.Barrier(3, timeout=10)

    @tool
    def meet(n: int) -> int:
        """Waits for the others."""
        barrier.wait()
        return n

    @tool
    async def ameet(n: int) -> int:
        """Waits for the others, async."""
        await asyncio.to_thread(barrier.wait)
        return n

    wrapped: list[str] = []

    @wrap_tool_call
    def mark(request: ToolCallRequest, handler: Any) -> Any:
        wrapped.append(request.tool_call["id"])
        return handler(request)

    target = "ameet" if mode == "ainvoke" else "meet"
    model = ScriptedChatModel([turn(*(call(target, f"c{i}", n=i) for i in range(3))), "met"])
    out = run(
        create_agent(model, [meet, ameet], middleware=[mark]),
        {"messages": [("user", "x")]},
        mode=mode,
    )
    assert [m.text for m in out["messages"] if m.type == "tool"] == ["0", "1", "2"]
    assert sorted(wrapped) == ["c0", "c1", "c2"]


@pytest.mark.parametrize(
    "module",
    [
        "ironloop._create_agent",
        "ironloop.middleware",
        "ironloop.middleware.types",
        "ironloop.middleware.human_in_the_loop",
        "ironloop.middleware.limits",
        "ironloop.middleware.retry",
        "ironloop.middleware.fallback",
        "ironloop.middleware.summarization",
        "ironloop.middleware.permissions",
        "ironloop._structured_output",
    ],
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
    assert result.attempted > 0


@pytest.mark.parametrize("wrapped", [False, True])
def test_messages_stream_carries_the_model_tokens(wrapped: bool) -> None:
    @wrap_model_call
    def passthrough(request: ModelRequest, handler: Any) -> Any:
        return handler(request)

    model = ScriptedChatModel([turn(call("add", "c1", a=1, b=2)), "three it is"])
    agent = create_agent(model, [add], middleware=[passthrough] if wrapped else [])
    chunks = [
        (chunk.text, meta["langgraph_node"])
        for chunk, meta in agent.stream({"messages": [("user", "x")]}, stream_mode="messages")
        if chunk.type == "AIMessageChunk"  # the model's tokens, as langchain-core's
    ]
    assert (
        ("three ", "model") in chunks and ("it ", "model") in chunks and ("is", "model") in chunks
    )


def test_sync_wrap_under_astream_keeps_the_runs_context() -> None:
    """A sync-only wrap_model_call under astream runs in a worker thread; the model
    call it hands back still streams its tokens into the run's messages stream."""
    import asyncio

    seen: list[str] = []

    @wrap_model_call
    def sync_wrap(request: ModelRequest, handler: Any) -> Any:
        seen.append(request.runtime.context)
        return handler(request)

    async def main() -> list[str]:
        agent = create_agent(
            ScriptedChatModel(["tokens from the model"]), [], middleware=[sync_wrap]
        )
        return [
            chunk.text
            async for chunk, meta in agent.astream(
                {"messages": [("user", "x")]}, stream_mode="messages", context="ctx"
            )
            if chunk.type == "AIMessageChunk" and meta["langgraph_node"] == "model"
        ]

    assert asyncio.run(main()) == ["tokens ", "from ", "the ", "model"]
    assert seen == ["ctx"]


def test_a_node_cache_is_refused() -> None:
    with pytest.raises(TypeError, match=r"cache=\.\.\.\) is not supported"):
        create_agent(two_rounds(), [add], cache=object())


def test_a_named_agent_says_its_name_in_the_messages_stream_metadata() -> None:
    """LangChain's ``create_agent(name=)`` puts ``lc_agent_name`` in every run's
    metadata, so a UI streaming several agents can tell their chunks apart."""
    from ironloop.models import ScriptedChatModel

    named = create_agent(ScriptedChatModel(["hi", "hi"]), [], name="support")
    metas = [md for _c, md in named.stream({"messages": [("user", "x")]}, stream_mode="messages")]
    assert metas and all(md["lc_agent_name"] == "support" for md in metas)
    mine = {"metadata": {"lc_agent_name": "override", "team": "a"}}
    metas = [
        md for _c, md in named.stream({"messages": [("user", "x")]}, mine, stream_mode="messages")
    ]
    assert metas[0]["lc_agent_name"] == "override" and metas[0]["team"] == "a"
    anon = create_agent(ScriptedChatModel(["hi"]), [])
    metas = [md for _c, md in anon.stream({"messages": [("user", "x")]}, stream_mode="messages")]
    assert metas and all("lc_agent_name" not in md for md in metas)


def test_invalid_tool_calls_are_answered_before_the_next_model_call() -> None:
    """LangChain 1.5: a tool call whose arguments did not parse gets an error result
    (after its AI message) before the model is called again, so providers accept the
    history and the model learns the call did not run; answered ones are left alone."""
    from ironloop.messages import HumanMessage
    from ironloop.models import ScriptedChatModel

    seen: list[Any] = []

    def model(messages: list[Any]) -> Any:
        seen.append([(m.type, getattr(m, "tool_call_id", None)) for m in messages])
        return "ok"

    broken = AIMessage(
        content="",
        invalid_tool_calls=[
            {"name": "add", "args": '{"a":', "id": "bad", "error": "Invalid JSON"},
            {"name": "add", "args": "{", "id": "done", "error": "Invalid JSON"},
        ],
    )
    answered = ToolMessage(content="already", tool_call_id="done", status="error")
    agent = create_agent(ScriptedChatModel(model), [add])
    out = agent.invoke({"messages": [HumanMessage("hi"), broken, answered]})
    assert seen == [[("human", None), ("ai", None), ("tool", "bad"), ("tool", "done")]]
    patch = out["messages"][2]
    assert patch.status == "error" and patch.name == "add"
    assert patch.content == (
        "Tool call add with id bad could not be executed - arguments were malformed or truncated."
    )
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "tool", "ai"]


def test_a_tool_added_at_run_time_runs_in_an_agent_given_no_tools() -> None:
    """As LangChain: with wrap_tool_call middleware there is a tools node even when the
    agent was given no tools, so a tool a wrap_model_call hook offers can run."""
    from ironloop.middleware import AgentMiddleware
    from ironloop.models import ScriptedChatModel

    @tool
    def late(x: int) -> str:
        """Added at run time."""
        return f"late {x}"

    class AddsLate(AgentMiddleware):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request.override(tools=[*request.tools, late]))

        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            if request.tool_call["name"] == "late":
                return handler(request.override(tool=late))
            return handler(request)

    calls = [{"name": "late", "args": {"x": 2}, "id": "c1"}]
    model = ScriptedChatModel([{"content": "", "tool_calls": calls}, "done"])
    out = create_agent(model, [], middleware=[AddsLate()]).invoke({"messages": [("user", "go")]})
    assert [m.content for m in out["messages"] if m.type == "tool"] == ["late 2"]
    assert out["messages"][-1].content == "done"
