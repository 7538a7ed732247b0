"""LangChain chat models, tools and messages used with ironloop (langchain-core is an
optional dependency; the test suite installs it). Each expectation is what LangGraph
1.2 / langchain-core 1.x do with the same objects."""

from __future__ import annotations

import asyncio
import json
import operator
import subprocess
import sys
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core import messages as lc
from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import (
    InjectedToolCallId,
    StructuredTool,
    ToolException,
)
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from ironloop import (
    START,
    Command,
    InjectedState,
    StateGraph,
    Tool,
    ToolNode,
    add_messages,
    create_react_agent,
    tool,
)
from ironloop.graph import MessagesState
from ironloop.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    from_langchain,
    to_langchain,
)

# ------------------------------------------------------------------ test doubles


class FakeToolModel(GenericFakeChatModel):
    """LangChain's GenericFakeChatModel with tool binding done as ChatOpenAI does it
    (``bind(tools=[openai dicts])``), recording what each call receives, and streaming
    tool calls as argument fragments (as providers do)."""

    received: list = Field(default_factory=list)

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kw: Any) -> Any:
        if tool_choice is not None:
            kw["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kw)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        self.received.append((messages, kw))
        return super()._generate(messages, stop, run_manager, **kw)

    def _stream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        result = self._generate(messages, stop, run_manager, **kw)
        msg = result.generations[0].message
        for word in msg.content.split(" ") if msg.content else []:
            yield ChatGenerationChunk(message=lc.AIMessageChunk(content=word + " ", id=msg.id))
        for i, call in enumerate(msg.tool_calls):
            text = json.dumps(call["args"])
            half = len(text) // 2
            for j, piece in enumerate((text[:half], text[half:])):
                yield ChatGenerationChunk(
                    message=lc.AIMessageChunk(
                        content="",
                        id=msg.id,
                        tool_call_chunks=[
                            tool_call_chunk(
                                name=call["name"] if j == 0 else None,
                                args=piece,
                                id=call["id"] if j == 0 else None,
                                index=i,
                            )
                        ],
                    )
                )


def fake(*replies: Any) -> FakeToolModel:
    return FakeToolModel(messages=iter(list(replies)))


def calls(*cs: tuple[str, dict[str, Any], str], content: str = "", id: str = "ai-1") -> Any:
    return lc.AIMessage(
        content=content,
        id=id,
        tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in cs],
    )


@lc_tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


def ai_with_calls(*cs: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in cs])


# --------------------------------------------------------------------- optional


def test_importing_ironloop_imports_langchains_messages_only() -> None:
    """With langchain-core installed its message classes are ironloop's, so they are
    imported; LangChain's models, tools and runnables (and ironloop's adapters for
    them) are not, until a LangChain object is handed to ironloop."""
    code = (
        "import sys, ironloop, ironloop.prebuilt, ironloop.models, ironloop.graph\n"
        "from ironloop import ToolNode, create_react_agent, tool\n"
        "from ironloop.models import ScriptedChatModel\n"
        "@tool\n"
        "def f(x: int) -> int:\n"
        "    'F.'\n"
        "    return x\n"
        "a = create_react_agent(ScriptedChatModel(['hi']), [f], prompt='p')\n"
        "a.invoke({'messages': [('user', 'x')]})\n"
        "heavy = ('langchain_core.runnables', 'langchain_core.tools', 'ironloop._langchain',\n"
        "         'langchain_core.language_models.chat_models')\n"
        "print('langchain_core.messages' in sys.modules, [m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True []"


# ------------------------------------------------------------------------ models


def test_agent_with_a_langchain_model_gets_langchain_messages() -> None:
    model = fake(lc.AIMessage("Hello there", id="r1"))
    agent = create_react_agent(model, [], prompt="Be brief.")
    out = agent.invoke({"messages": [("user", "hi")]})
    (sent, _), *_ = model.received
    assert [type(m) for m in sent] == [lc.SystemMessage, lc.HumanMessage]
    assert [m.content for m in sent] == ["Be brief.", "hi"]
    last = out["messages"][-1]
    assert isinstance(last, AIMessage)
    assert (last.content, last.id) == ("Hello there", "r1")


def test_agent_binds_langchain_and_ironloop_tools_and_runs_them() -> None:
    model = fake(
        calls(("add", {"a": 2, "b": 3}, "c1"), ("shout", {"text": "ok"}, "c2")),
        lc.AIMessage("5 and OK", id="r2"),
    )
    agent = create_react_agent(model, [add, shout], version="v1")
    out = agent.invoke({"messages": [("user", "2+3?")]})
    (_, kw), (second, _) = model.received
    assert [t["function"]["name"] for t in kw["tools"]] == ["add", "shout"]
    assert kw["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    tool_msgs = [m for m in out["messages"] if m.type == "tool"]
    assert [(m.content, m.tool_call_id, m.name) for m in tool_msgs] == [
        ("5", "c1", "add"),
        ("OK", "c2", "shout"),
    ]
    # The model's second call sees the tool results as langchain-core ToolMessages.
    assert [type(m).__name__ for m in second] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
    ]
    assert second[1].tool_calls[0]["id"] == "c1"
    assert out["messages"][-1].content == "5 and OK"


def test_a_model_without_bind_tools_is_refused_with_tools_as_in_langgraph() -> None:
    model = GenericFakeChatModel(messages=iter([lc.AIMessage("x")]))
    with pytest.raises(NotImplementedError):
        create_react_agent(model, [add])


def test_a_model_with_its_tools_bound_already_is_used_as_it_is() -> None:
    model = fake(lc.AIMessage("done", id="r"))
    bound = model.bind_tools([add])
    agent = create_react_agent(bound, [add])
    agent.invoke({"messages": [("user", "x")]})
    (_, kw), *_ = model.received
    assert [t["function"]["name"] for t in kw["tools"]] == ["add"]
    with pytest.raises(ValueError, match=r"Number of tools in the model\.bind_tools"):
        create_react_agent(bound, [add, shout])
    with pytest.raises(ValueError, match="Missing tools"):
        create_react_agent(bound, [shout])


def test_streamed_chunks_feed_messages_mode_and_merge_into_one_message() -> None:
    model = fake(
        calls(("add", {"a": 20, "b": 22}, "c1"), content="let me add", id="ai-9"),
        lc.AIMessage("it is 42", id="ai-10"),
    )
    agent = create_react_agent(model, [add])
    chunks = []
    final = None
    for mode, item in agent.stream(
        {"messages": [("user", "20+22?")]}, stream_mode=["messages", "values"]
    ):
        if mode == "messages":
            chunks.append(item)
        else:
            final = item
    texts = [c.content for c, meta in chunks if meta["langgraph_node"] == "agent"]
    assert texts[:2] == ["let ", "me "]
    agent_chunks = [c for c, meta in chunks if meta["langgraph_node"] == "agent"]
    assert all(isinstance(c, AIMessage) for c in agent_chunks)
    assert {c.id for c in agent_chunks} == {"ai-9", "ai-10"}
    # The tools node's result is shown too, once, as LangGraph shows it.
    tool_results = [(c.type, c.content) for c, meta in chunks if meta["langgraph_node"] == "tools"]
    assert tool_results == [("tool", "42")]
    ai = final["messages"][1]
    assert ai.content.strip() == "let me add"
    # The tool call streamed in two argument fragments, merged as LangChain merges.
    assert [(c["name"], c["args"], c["id"]) for c in ai.tool_calls] == [
        ("add", {"a": 20, "b": 22}, "c1")
    ]
    assert final["messages"][2].content == "42"
    assert final["messages"][-1].content.strip() == "it is 42"


def test_ainvoke_and_astream_with_a_langchain_model() -> None:
    async def main() -> tuple[Any, list[Any]]:
        out = await create_react_agent(
            fake(calls(("add", {"a": 1, "b": 1}, "c1")), lc.AIMessage("2", id="z")), [add]
        ).ainvoke({"messages": [("user", "1+1")]})
        agent = create_react_agent(fake(lc.AIMessage("a b c", id="s")), [])
        got = [
            c.content
            async for c, _ in agent.astream({"messages": [("user", "x")]}, stream_mode="messages")
        ]
        return out, got

    out, got = asyncio.run(main())
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert "".join(got) == "a b c "


class Weather(BaseModel):
    temperature: float
    city: str


def test_structured_response_goes_through_with_structured_output() -> None:
    model = fake(
        lc.AIMessage("It is sunny", id="r"),
        calls(("Weather", {"temperature": 21.5, "city": "Paris"}, "s1")),
    )
    agent = create_react_agent(model, [], response_format=("Answer as JSON.", Weather))
    out = agent.invoke({"messages": [("user", "weather?")]})
    assert out["structured_response"] == Weather(temperature=21.5, city="Paris")
    sent, kw = model.received[1]
    assert (type(sent[0]), sent[0].content) == (lc.SystemMessage, "Answer as JSON.")
    assert [t["function"]["name"] for t in kw["tools"]] == ["Weather"]


def test_a_langchain_model_as_an_ironloop_model_object() -> None:
    from ironloop._langchain import LangChainChatModel

    m = LangChainChatModel(fake(lc.AIMessage("hi", id="x")))
    out = m.invoke([HumanMessage("hello"), ("user", "again")])
    assert isinstance(out, AIMessage) and out.content == "hi"
    assert [type(x) for x in m.model.received[0][0]] == [lc.HumanMessage, lc.HumanMessage]


def test_a_langchain_runnable_prompt_for_an_ironloop_model() -> None:
    from langchain_core.prompts import ChatPromptTemplate

    from ironloop.models import ScriptedChatModel
    from ironloop.prebuilt import AgentState

    template = ChatPromptTemplate.from_messages(
        [("system", "You help {name}."), ("placeholder", "{messages}")]
    )

    class State(AgentState):
        name: str

    model = ScriptedChatModel(["ok"])
    agent = create_react_agent(model, [], prompt=template, state_schema=State)
    agent.invoke({"messages": [("user", "hi")], "name": "Bo"})
    assert [(m.type, m.content) for m in model.calls[0][0]] == [
        ("system", "You help Bo."),
        ("human", "hi"),
    ]


# ------------------------------------------------------------------------- tools


def test_toolnode_runs_a_langchain_tool() -> None:
    node = ToolNode([add])
    out = node.invoke({"messages": [ai_with_calls(("add", {"a": 1, "b": 2}, "c1"))]})
    (msg,) = out["messages"]
    assert isinstance(msg, ToolMessage)
    assert (msg.content, msg.tool_call_id, msg.name, msg.status) == ("3", "c1", "add", "success")


def test_langchain_tool_schema_is_its_tool_call_schema() -> None:
    class Args(BaseModel):
        """Search the web."""

        query: str = Field(description="what to look for")
        limit: int = 5

    def search(query: str, limit: int = 5) -> str:
        return f"{query}:{limit}"

    t = StructuredTool.from_function(search, args_schema=Args, description="Search the web.")
    node = ToolNode([t])
    assert node.tools_by_name["search"] is t  # as given, as LangGraph's
    ours = Tool.from_langchain(t)
    assert ours.parameters == convert_to_openai_tool(t)["function"]["parameters"]
    assert ours.description == "Search the web."
    assert ours.to_openai()["function"]["parameters"]["properties"]["query"] == {
        "description": "what to look for",
        "type": "string",
    }
    out = node.invoke({"messages": [ai_with_calls(("search", {"query": "q"}, "c"))]})
    assert out["messages"][0].content == "q:5"


def test_injected_tool_call_id_and_command_from_a_langchain_tool() -> None:
    @lc_tool
    def remember(fact: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Remember a fact."""
        return Command(
            update={
                "facts": [fact],
                "messages": [ToolMessage(f"noted {fact}", tool_call_id=tool_call_id)],
            }
        )

    assert list(Tool.from_langchain(remember).parameters["properties"]) == ["fact"]

    class State(TypedDict):
        messages: Annotated[list, add_messages]
        facts: Annotated[list, operator.add]

    graph = (
        StateGraph(State).add_node("tools", ToolNode([remember])).add_edge(START, "tools").compile()
    )
    out = graph.invoke(
        {"messages": [ai_with_calls(("remember", {"fact": "sky"}, "c7"))], "facts": []}
    )
    assert out["facts"] == ["sky"]
    assert out["messages"][-1].content == "noted sky"
    assert out["messages"][-1].tool_call_id == "c7"


def test_injected_state_in_a_langchain_tool_is_hidden_and_filled() -> None:
    seen: list[Any] = []

    @lc_tool
    def count(word: str, messages: Annotated[list, InjectedState("messages")]) -> str:
        """Counts messages."""
        seen.append(messages)
        return f"{word}:{len(messages)}"

    node = ToolNode([count])
    assert Tool.from_langchain(count).parameters["required"] == ["word"]
    graph = StateGraph(MessagesState).add_node("t", node).add_edge(START, "t").compile()
    out = graph.invoke({"messages": [("user", "hi"), ai_with_calls(("count", {"word": "n"}, "c"))]})
    assert out["messages"][-1].content == "n:2"
    # The LangChain tool sees langchain-core messages, as under LangGraph.
    assert [type(m) for m in seen[0]] == [lc.HumanMessage, lc.AIMessage]


def test_a_failing_langchain_tool_is_an_error_tool_message() -> None:
    @lc_tool
    def boom(x: int) -> str:
        """Fails."""
        raise ValueError(f"bad {x}")

    out = ToolNode([boom]).invoke({"messages": [ai_with_calls(("boom", {"x": 1}, "c"))]})
    (msg,) = out["messages"]
    assert msg.status == "error"
    assert msg.content == "Error: ValueError('bad 1')\n Please fix your mistakes."


def test_a_tool_exception_handled_by_the_langchain_tool_keeps_its_text() -> None:
    def picky(x: int) -> str:
        """Refuses."""
        raise ToolException("x must be even")

    picky = StructuredTool.from_function(picky, handle_tool_error=True)

    out = ToolNode([picky]).invoke({"messages": [ai_with_calls(("picky", {"x": 1}, "c"))]})  # type: ignore[list-item]
    (msg,) = out["messages"]
    assert (msg.content, msg.status) == ("x must be even", "error")


def test_bad_arguments_to_a_langchain_tool_are_an_error_for_the_model() -> None:
    out = ToolNode([add]).invoke({"messages": [ai_with_calls(("add", {"a": "x"}, "c"))]})
    assert out["messages"][0].status == "error"


def test_an_async_langchain_tool_runs_under_invoke_and_ainvoke() -> None:
    async def slow_double(x: int) -> int:
        await asyncio.sleep(0.01)
        return 2 * x

    t = StructuredTool.from_function(coroutine=slow_double, name="double", description="Doubles.")
    node = ToolNode([t])
    msgs = {"messages": [ai_with_calls(("double", {"x": 4}, "c"))]}
    assert node.invoke(msgs)["messages"][0].content == "8"
    assert asyncio.run(node.ainvoke(msgs))["messages"][0].content == "8"


def test_content_block_results_stay_lists() -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]

    @lc_tool
    def lc_blocks() -> list:
        """Blocks."""
        return blocks

    @tool
    def our_blocks() -> list:
        """Blocks."""
        return blocks

    @tool
    def numbers() -> list:
        """Not blocks."""
        return [1, 2]

    ai = ai_with_calls(("lc_blocks", {}, "1"), ("our_blocks", {}, "2"), ("numbers", {}, "3"))
    out = ToolNode([lc_blocks, our_blocks, numbers]).invoke({"messages": [ai]})
    assert [m.content for m in out["messages"]] == [blocks, blocks, "[1, 2]"]


def test_tool_to_langchain_and_back() -> None:
    lct = shout.to_langchain()
    assert lct.name == "shout"
    assert convert_to_openai_tool(lct)["function"]["parameters"] == shout.parameters
    assert lct.invoke({"text": "hey"}) == "HEY"
    msg = lct.invoke({"name": "shout", "args": {"text": "a"}, "id": "c1", "type": "tool_call"})
    assert isinstance(msg, lc.ToolMessage)
    assert (msg.content, msg.tool_call_id) == ("A", "c1")
    back = Tool.from_langchain(lct)
    out = ToolNode([back]).invoke({"messages": [ai_with_calls(("shout", {"text": "b"}, "c"))]})
    assert out["messages"][0].content == "B"


def test_async_tool_to_langchain() -> None:
    @tool
    async def later(x: int) -> int:
        """Later."""
        return x + 1

    assert asyncio.run(later.to_langchain().ainvoke({"x": 1})) == 2


def test_injected_tools_are_refused_by_to_langchain() -> None:
    @tool
    def needs_state(state: Annotated[dict, InjectedState]) -> str:
        """S."""
        return ""

    with pytest.raises(TypeError, match="injects"):
        needs_state.to_langchain()


# ---------------------------------------------------------------------- messages


def test_messages_convert_both_ways() -> None:
    ours = [
        SystemMessage("sys", id="s"),
        HumanMessage("hi", id="h", name="ann"),
        AIMessage(
            "",
            id="a",
            tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}],
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        ),
        ToolMessage("1", tool_call_id="c1", name="add", status="error", artifact={"x": 1}, id="t"),
        RemoveMessage(id="h"),
    ]
    theirs = to_langchain(ours)
    assert [type(m) for m in theirs] == [
        lc.SystemMessage,
        lc.HumanMessage,
        lc.AIMessage,
        lc.ToolMessage,
        lc.RemoveMessage,
    ]
    assert theirs[1].name == "ann"
    assert theirs[2].tool_calls == [
        {"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}
    ]
    assert theirs[2].usage_metadata["total_tokens"] == 7
    assert (theirs[3].status, theirs[3].artifact) == ("error", {"x": 1})
    back = from_langchain(theirs)
    assert back == ours
    assert all(type(a) is type(b) for a, b in zip(back, ours, strict=True))


def test_messages_compare_equal_to_their_langchain_counterparts() -> None:
    assert HumanMessage("hi", id="1") == lc.HumanMessage("hi", id="1")
    assert lc.HumanMessage("hi", id="1") == HumanMessage("hi", id="1")
    assert AIMessage("x", id="2") == lc.AIMessage("x", id="2")
    assert ToolMessage("r", tool_call_id="c", id="3") == lc.ToolMessage(
        "r", tool_call_id="c", id="3"
    )
    assert HumanMessage("hi", id="1") != lc.HumanMessage("bye", id="1")
    assert HumanMessage("hi", id="1") != lc.AIMessage("hi", id="1")
    assert HumanMessage("hi", id="1") != lc.HumanMessage("hi", id="other")
    assert HumanMessage("hi", id="1") != lc.HumanMessage("hi")  # no id


def test_graph_output_compares_to_langchain_messages_with_any_id() -> None:
    # LangGraph's own tests compare results with messages whose id matches any str.
    class AnyStr(str):
        def __eq__(self, other: object) -> bool:
            return isinstance(other, str)

        __hash__ = str.__hash__

    def expected(cls: Any, **kw: Any) -> Any:
        m = cls(**kw)
        m.id = AnyStr()
        return m

    g = (
        StateGraph(MessagesState)
        .add_node("n", lambda s: {"messages": [lc.AIMessage("hello")]})
        .add_edge(START, "n")
        .compile()
    )
    out = g.invoke({"messages": [lc.HumanMessage("hi")]})
    assert out == {
        "messages": [
            expected(lc.HumanMessage, content="hi"),
            expected(lc.AIMessage, content="hello"),
        ]
    }


def test_langchain_chunks_and_remove_messages_enter_the_messages_channel() -> None:
    g = (
        StateGraph(MessagesState)
        .add_node(
            "n",
            lambda s: {
                "messages": [
                    lc.RemoveMessage(id=s["messages"][0].id),
                    lc.AIMessageChunk(content="part", id="k"),
                ]
            },
        )
        .add_edge(START, "n")
        .compile()
    )
    out = g.invoke({"messages": [("user", "a")]})
    assert [(m.type, m.content, m.id) for m in out["messages"]] == [("ai", "part", "k")]


# ------------------------------------------------- ChatOpenAI over OpenAI's wire format


def test_chat_openai_in_an_agent_against_a_loopback_server() -> None:
    lco = pytest.importorskip("langchain_openai")
    from test_models_http import Loopback, oa_completion

    server = Loopback()
    try:
        server.json(oa_completion(tool_calls=[("call_1", "add", '{"a": 2, "b": 3}')]))
        server.json(oa_completion("It is 5."))
        model = lco.ChatOpenAI(
            model="gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-test", max_retries=0
        )
        agent = create_react_agent(model, [add, shout], prompt="Be exact.")
        out = agent.invoke({"messages": [("user", "2+3?")]})
    finally:
        server.close()
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert out["messages"][1].tool_calls[0]["args"] == {"a": 2, "b": 3}
    assert out["messages"][-1].content == "It is 5."
    assert out["messages"][-1].usage_metadata["total_tokens"] == 1163
    first, second = (r["body"] for r in server.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "shout"]
    assert first["messages"] == [
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "2+3?"},
    ]
    assert second["messages"][2]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}


def test_chat_openai_streams_tokens_to_messages_mode() -> None:
    lco = pytest.importorskip("langchain_openai")
    from test_models_http import Loopback, oa_text_stream, oa_tool_stream

    server = Loopback()
    try:
        server.sse(oa_tool_stream("call_9", "add", '{"a": 4', ', "b": 5}'))
        server.sse(oa_text_stream("Nine", " it", " is."))
        model = lco.ChatOpenAI(
            model="gpt-4o-mini", base_url=server.url + "/v1", api_key="sk-test", max_retries=0
        )
        agent = create_react_agent(model, [add])
        tokens, final = [], None
        for mode, item in agent.stream(
            {"messages": [("user", "4+5?")]}, stream_mode=["messages", "values"]
        ):
            if mode == "messages" and item[1]["langgraph_node"] == "agent":
                tokens.append(item[0].content)
            elif mode == "values":
                final = item
    finally:
        server.close()
    assert server.requests[0]["body"]["stream"] is True
    assert "".join(tokens) == "Nine it is."
    ai = final["messages"][1]
    assert [(c["name"], c["args"], c["id"]) for c in ai.tool_calls] == [
        ("add", {"a": 4, "b": 5}, "call_9")
    ]
    assert final["messages"][2].content == "9"
    assert final["messages"][-1].content == "Nine it is."


def test_a_rust_tool_to_langchain(tmp_path: Any) -> None:
    from ironloop.tools import workspace

    (tmp_path / "notes.txt").write_text("hello")
    read = next(t for t in workspace(tmp_path) if t.name == "read_file")
    lct = read.to_langchain()
    assert lct.name == "read_file"
    assert convert_to_openai_tool(lct)["function"]["parameters"] == read.parameters
    assert "hello" in str(lct.invoke({"path": "notes.txt"}))


def test_a_changed_message_converts_anew() -> None:
    m = HumanMessage("one", id="h")
    first = to_langchain(m)
    assert to_langchain(m) is first  # converted once
    m.content = "two"
    assert to_langchain(m).content == "two"
    m.name = "ann"
    assert to_langchain(m).name == "ann"


# ------------------------------------- LangChain models and messages inside user nodes


def test_a_pydantic_state_typed_with_langchain_messages_is_built_from_the_state() -> None:
    # LangGraph docs' pydantic chat state: `messages: Annotated[list[AnyMessage], ...]`
    # with LangChain's AnyMessage. The state holds ironloop messages; the node's model
    # gets LangChain ones (pydantic refuses anything else).
    class ChatState(BaseModel):
        messages: Annotated[list[lc.AnyMessage], add_messages]
        context: str

    seen: list[Any] = []

    def node(state: ChatState) -> dict[str, Any]:
        seen.extend(type(m).__module__.split(".")[0] for m in state.messages)
        return {"messages": [lc.AIMessage(content="Hello there!")]}

    g = StateGraph(ChatState).add_node("n", node).add_edge(START, "n").compile()
    out = g.invoke({"messages": [{"role": "user", "content": "Hi"}], "context": "support"})
    assert seen == ["langchain_core"]
    assert [(m.type, m.content) for m in out["messages"]] == [
        ("human", "Hi"),
        ("ai", "Hello there!"),
    ]
    assert out["context"] == "support"


class _JokeState(TypedDict):
    topic: str
    joke: str


def _joke_graph(llm: Any, *, use_async: bool = False) -> Any:
    def call_model(state: _JokeState) -> dict[str, Any]:
        return {"joke": llm.invoke([("user", state["topic"])]).content}

    async def acall_model(state: _JokeState) -> dict[str, Any]:
        return {"joke": (await llm.ainvoke([("user", state["topic"])])).content}

    g = StateGraph(_JokeState).add_node("call_model", acall_model if use_async else call_model)
    return g.add_edge(START, "call_model").compile()


def test_a_langchain_model_a_node_calls_streams_its_tokens_in_messages_mode() -> None:
    llm = GenericFakeChatModel(messages=iter([lc.AIMessage("a rocky road", id="m1")]))
    items = list(_joke_graph(llm).stream({"topic": "ice cream"}, stream_mode="messages"))
    assert [(type(c).__name__, c.content) for c, _ in items] == [
        ("AIMessageChunk", "a"),
        ("AIMessageChunk", " "),
        ("AIMessageChunk", "rocky"),
        ("AIMessageChunk", " "),
        ("AIMessageChunk", "road"),
    ]
    assert {meta["langgraph_node"] for _, meta in items} == {"call_model"}


async def test_an_async_node_streams_the_tokens_of_ainvoke() -> None:
    llm = GenericFakeChatModel(messages=iter([lc.AIMessage("purr fect", id="m2")]))
    app = _joke_graph(llm, use_async=True)
    items = [i async for i in app.astream({"topic": "cats"}, stream_mode=["messages", "updates"])]
    assert [c.content for m, (c, _) in (i for i in items if i[0] == "messages")] == [
        "purr",
        " ",
        "fect",
    ]
    assert items[-1] == ("updates", {"call_model": {"joke": "purr fect"}})


def test_a_model_that_does_not_stream_sends_its_message_once() -> None:
    llm = FakeMessagesListChatModel(responses=[lc.AIMessage("whole", id="w1")])
    items = list(_joke_graph(llm).stream({"topic": "x"}, stream_mode="messages"))
    assert [(c.content, c.id) for c, _ in items] == [("whole", "w1")]


def test_tokens_are_not_streamed_without_messages_mode_or_with_nostream() -> None:
    llm = GenericFakeChatModel(messages=iter([lc.AIMessage("one two"), lc.AIMessage("x y")]))
    assert list(_joke_graph(llm).stream({"topic": "t"}, stream_mode="custom")) == []
    quiet = llm.with_config(tags=["nostream"])
    items = list(_joke_graph(quiet).stream({"topic": "t"}, stream_mode="messages"))
    assert items == []


def test_token_metadata_holds_the_model_runs_metadata_tags_and_step() -> None:
    tagged = GenericFakeChatModel(messages=iter([lc.AIMessage("a")]), tags=["joke"])
    plain = GenericFakeChatModel(messages=iter([lc.AIMessage("b")]))

    def both(state: _JokeState) -> dict[str, Any]:
        return {"joke": tagged.invoke("x").content + plain.invoke("y").content}

    g = StateGraph(_JokeState).add_node("n", both).add_edge(START, "n").compile()
    metas = [meta for _, meta in g.stream({"topic": "t"}, stream_mode="messages")]
    assert [m.get("tags") for m in metas] == [["joke"], None]
    for m in metas:
        assert m["langgraph_node"] == "n" and m["langgraph_step"] == 1
        assert m["ls_provider"] == "genericfakechatmodel" and m["ls_model_type"] == "chat"


def test_the_agents_token_metadata_has_its_step() -> None:
    model = FakeToolModel(messages=iter([lc.AIMessage("hello there")]))
    agent = create_react_agent(model, [add])
    metas = [
        meta for _, meta in agent.stream({"messages": [("user", "hi")]}, stream_mode="messages")
    ]
    assert metas and all(m["langgraph_node"] == "agent" and m["langgraph_step"] == 1 for m in metas)


def test_a_langchain_tools_runnable_config_is_the_runs_config() -> None:
    @lc_tool
    def whoami(config: RunnableConfig) -> str:
        """Says who the run is for."""
        return f"user={config['configurable'].get('user_id')}"

    @lc_tool
    async def awhoami(config: RunnableConfig) -> str:
        """Says who the run is for, async."""
        return f"async user={config['configurable'].get('user_id')}"

    calls = [{"name": n, "args": {}, "id": f"c{i}"} for i, n in enumerate(["whoami", "awhoami"])]
    g = StateGraph(MessagesState).add_node("tools", ToolNode([whoami, awhoami]))
    app = g.add_edge(START, "tools").compile()
    config = {"configurable": {"user_id": "u1"}}
    out = app.invoke({"messages": [AIMessage("", tool_calls=calls)]}, config)
    assert [m.content for m in out["messages"][1:]] == ["user=u1", "async user=u1"]
    # Outside a run there is no run config: LangChain's default (empty configurable).
    assert whoami.invoke({}) == "user=None"


def _nested_token_graph() -> Any:
    llm = GenericFakeChatModel(messages=iter([lc.AIMessage("a b"), lc.AIMessage("c d")]))

    def call(state: _JokeState) -> dict[str, Any]:
        return {"joke": llm.invoke(state["topic"]).content}

    sub = StateGraph(_JokeState).add_node("sub_node", call).add_edge(START, "sub_node").compile()
    g = StateGraph(_JokeState).add_node("parent_node", call).add_node("sub", sub)
    return g.add_edge(START, "parent_node").add_edge("parent_node", "sub").compile()


def test_tokens_of_a_subgraphs_model_come_with_its_namespace_or_not_at_all() -> None:
    # As LangGraph: with subgraphs=True under the subgraph's namespace and node; without,
    # not streamed (they are not the parent's node's tokens).
    items = list(
        _nested_token_graph().stream({"topic": "t"}, stream_mode="messages", subgraphs=True)
    )
    assert [
        (tuple(n.split(":")[0] for n in ns), c.content, m["langgraph_node"]) for ns, (c, m) in items
    ] == [
        ((), "a", "parent_node"),
        ((), " ", "parent_node"),
        ((), "b", "parent_node"),
        (("sub",), "c", "sub_node"),
        (("sub",), " ", "sub_node"),
        (("sub",), "d", "sub_node"),
    ]
    flat = list(_nested_token_graph().stream({"topic": "t"}, stream_mode="messages"))
    assert [(c.content, m["langgraph_node"]) for c, m in flat] == [
        ("a", "parent_node"),
        (" ", "parent_node"),
        ("b", "parent_node"),
    ]


def test_tokens_of_a_model_a_tool_calls_stream_under_the_tool_node() -> None:
    llm = GenericFakeChatModel(messages=iter([lc.AIMessage("x y")]))

    @lc_tool
    def summarize(text: str) -> str:
        """Summarize."""
        return llm.invoke(text).content

    g = StateGraph(MessagesState).add_node("tools", ToolNode([summarize]))
    app = g.add_edge(START, "tools").compile()
    call = {"name": "summarize", "args": {"text": "t"}, "id": "1"}
    items = list(
        app.stream({"messages": [AIMessage("", tool_calls=[call])]}, stream_mode="messages")
    )
    assert [(c.content, m["langgraph_node"]) for c, m in items][:3] == [
        ("x", "tools"),
        (" ", "tools"),
        ("y", "tools"),
    ]


def test_a_streamed_langchain_answer_keeps_its_provider_fields() -> None:
    """Joined from its chunks under stream_mode="messages", a LangChain model's answer
    keeps ``additional_kwargs`` and ``response_metadata`` (an OpenAI refusal, the stop
    reason), as the same answer from ``invoke`` does."""
    from ironloop import create_agent

    class Provider(GenericFakeChatModel):
        def _stream(self, *args: Any, **kwargs: Any) -> Any:
            chunks = list(super()._stream(*args, **kwargs))
            chunks[-1].message.response_metadata["finish_reason"] = "stop"  # as providers do
            yield from chunks

    answer = lc.AIMessage("no", additional_kwargs={"refusal": "no"})
    agent = create_agent(Provider(messages=iter([answer])), [])
    out = list(agent.stream({"messages": [("user", "x")]}, stream_mode=["messages", "values"]))
    assert any(mode == "messages" for mode, _ in out)  # it was streamed in chunks
    last = [data for mode, data in out if mode == "values"][-1]["messages"][-1]
    assert last.additional_kwargs == {"refusal": "no"}
    assert last.response_metadata.get("finish_reason") == "stop"
