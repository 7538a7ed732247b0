"""The prebuilt agent's surface as LangGraph 1.2 has it: create_react_agent's keywords
(pre/post model hooks, state_schema, the forms of prompt and response_format,
version), AgentState / AgentStatePydantic, ToolNode(messages_key=), push_message, and
tool results that are content-block lists. Each expectation is what LangGraph 1.2
does with the same snippet."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import START, StateGraph, ToolNode, add_messages, create_react_agent, tool
from ironloop.graph import MessagesState, push_message
from ironloop.messages import AIMessage, HumanMessage, SystemMessage
from ironloop.models import ScriptedChatModel
from ironloop.prebuilt import AgentState
from ironloop.runtime import get_runtime


@tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def calls(*ab: tuple[int, int]) -> dict[str, Any]:
    return {
        "content": "",
        "tool_calls": [
            {"name": "add", "args": {"a": a, "b": b}, "id": f"c{i}"} for i, (a, b) in enumerate(ab)
        ],
    }


def updates(agent: Any, text: str = "hi") -> list[list[str]]:
    return [list(c) for c in agent.stream({"messages": [("user", text)]}, stream_mode="updates")]


def seen(model: ScriptedChatModel, i: int = 0) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in model.calls[i][0]]


# -------------------------------------------------------------------- keywords


def test_an_unknown_keyword_raises_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword arguments: \{'pre_model_hooks': 1\}"):
        create_react_agent(ScriptedChatModel(["x"]), [], pre_model_hooks=1)


def test_context_schema_makes_a_dict_context_its_type() -> None:
    @dataclasses.dataclass
    class Ctx:
        user: str

    @tool
    def whoami() -> str:
        """Says who asks."""
        return get_runtime().context.user

    model = ScriptedChatModel(
        [{"content": "", "tool_calls": [{"name": "whoami", "args": {}}]}, "x"]
    )
    agent = create_react_agent(model, [whoami], context_schema=Ctx)
    out = agent.invoke({"messages": [("user", "hi")]}, context={"user": "ann"})
    assert [m.content for m in out["messages"] if m.type == "tool"] == ["ann"]


def test_version_must_be_v1_or_v2() -> None:
    with pytest.raises(
        ValueError, match=r"^Invalid version v3\. Supported versions are 'v1' and 'v2'\.$"
    ):
        create_react_agent(ScriptedChatModel(["x"]), [], version="v3")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("v1", [["agent"], ["tools"], ["agent"]]),
        ("v2", [["agent"], ["tools"], ["tools"], ["agent"]]),
    ],
)
def test_v1_runs_a_message_s_calls_in_one_task_v2_one_task_per_call(
    version: str, expected: list[list[str]]
) -> None:
    model = ScriptedChatModel([calls((1, 2), (3, 4)), "done"])
    agent = create_react_agent(model, [add], version=version)  # type: ignore[arg-type]
    assert updates(agent) == expected
    model = ScriptedChatModel([calls((1, 2), (3, 4)), "done"])
    out = create_react_agent(model, [add], version=version).invoke(  # type: ignore[arg-type]
        {"messages": [("user", "x")]}
    )
    assert [(m.type, m.content) for m in out["messages"][2:4]] == [("tool", "3"), ("tool", "7")]


def test_the_agent_names_its_messages() -> None:
    model = ScriptedChatModel([calls((1, 1)), "ok"])
    out = create_react_agent(model, [add], name="bob").invoke({"messages": [("user", "x")]})
    assert [(m.type, m.name) for m in out["messages"]] == [
        ("human", None),
        ("ai", "bob"),
        ("tool", "add"),
        ("ai", "bob"),
    ]


def test_provider_tool_dicts_go_to_the_model_only() -> None:
    web = {"type": "web_search_preview"}
    model = ScriptedChatModel(["ok"])
    agent = create_react_agent(model, [add, web])
    agent.invoke({"messages": [("user", "x")]})
    assert model.calls[0][1][-1] == web
    assert list(agent.nodes["tools"].bound.tools_by_name) == ["add"]


# ----------------------------------------------------------------- state_schema


def test_state_schema_must_have_messages_and_structured_response() -> None:
    class NoMessages(TypedDict):
        topic: str

    with pytest.raises(ValueError, match=re.escape("Missing required key(s) {'messages'}")):
        create_react_agent(ScriptedChatModel(["x"]), [], state_schema=NoMessages)
    with pytest.raises(ValueError, match="structured_response"):
        create_react_agent(
            ScriptedChatModel(["x"]), [], state_schema=MessagesState, response_format=dict
        )


def test_a_custom_state_schema_is_the_agent_s_state() -> None:
    class State(AgentState):
        user_name: str

    def prompt(state: State) -> list[Any]:
        return [SystemMessage(f"The user is {state['user_name']}."), *state["messages"]]

    model = ScriptedChatModel(["hello Ann"])
    agent = create_react_agent(model, [], state_schema=State, prompt=prompt)
    out = agent.invoke({"messages": [("user", "hi")], "user_name": "Ann"})
    assert out["user_name"] == "Ann"
    assert seen(model)[0] == ("system", "The user is Ann.")


def test_agent_state_pydantic_as_the_state_schema() -> None:
    from ironloop.prebuilt import AgentStatePydantic
    from ironloop.prebuilt.chat_agent_executor import AgentStatePydantic as same

    assert AgentStatePydantic is same
    assert {"messages", "remaining_steps"} <= set(AgentStatePydantic.model_fields)
    model = ScriptedChatModel([calls((2, 2)), "4"])
    agent = create_react_agent(model, [add], state_schema=AgentStatePydantic)
    out = agent.invoke({"messages": [("user", "2+2")]})
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]


def test_agent_state_lives_where_langgraph_keeps_it() -> None:
    from ironloop.prebuilt.chat_agent_executor import AgentState as there
    from ironloop.prebuilt.tool_node import ToolNode as tn

    assert there is AgentState
    assert tn is ToolNode
    assert set(AgentState.__annotations__) >= {"messages", "remaining_steps"}


# ------------------------------------------------------------------------ prompt


def test_prompt_forms() -> None:
    forms: list[Any] = [
        "be brief",
        SystemMessage("be brief"),
        lambda s: [SystemMessage("be brief"), *s["messages"]],
    ]
    for p in forms:
        model = ScriptedChatModel(["ok"])
        create_react_agent(model, [], prompt=p).invoke({"messages": [("user", "hi")]})
        assert seen(model) == [("system", "be brief"), ("human", "hi")], p


def test_an_async_prompt_runs_under_ainvoke_and_is_refused_under_invoke() -> None:
    async def prompt(state: Any) -> list[Any]:
        await asyncio.sleep(0)
        return [SystemMessage("async"), *state["messages"]]

    model = ScriptedChatModel(["ok"])
    agent = create_react_agent(model, [], prompt=prompt)
    asyncio.run(agent.ainvoke({"messages": [("user", "hi")]}))
    assert seen(model) == [("system", "async"), ("human", "hi")]
    with pytest.raises(TypeError, match='No synchronous function provided to "Prompt"'):
        agent.invoke({"messages": [("user", "hi")]})


def test_a_prompt_of_another_type_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^Got unexpected type for `prompt`: <class 'int'>$"):
        create_react_agent(ScriptedChatModel(["x"]), [], prompt=42)


# --------------------------------------------------------------- response_format


class Answer(TypedDict):
    value: int


def test_response_format_with_its_own_prompt() -> None:
    model = ScriptedChatModel(["it is 4", '{"value": 4}'])
    agent = create_react_agent(model, [], response_format=("Reply in JSON.", Answer))
    out = agent.invoke({"messages": [("user", "2+2")]})
    assert out["structured_response"] == {"value": 4}
    assert seen(model, 1)[0] == ("system", "Reply in JSON.")
    assert [m.type for m in out["messages"]] == ["human", "ai"]


# ---------------------------------------------------------------- model hooks


def test_pre_model_hook_llm_input_messages_are_what_the_model_sees() -> None:
    def trim(state: Any) -> dict[str, Any]:
        return {"llm_input_messages": state["messages"][-1:]}

    model = ScriptedChatModel([calls((1, 2)), "3"])
    agent = create_react_agent(model, [add], pre_model_hook=trim)
    assert updates(agent, "1+2") == [
        ["pre_model_hook"],
        ["agent"],
        ["tools"],
        ["pre_model_hook"],
        ["agent"],
    ]
    assert seen(model, 0) == [("human", "1+2")]
    assert seen(model, 1) == [("tool", "3")]


def test_pre_model_hook_messages_update_is_stored_and_seen() -> None:
    model = ScriptedChatModel(["ok"])
    agent = create_react_agent(
        model, [], pre_model_hook=lambda s: {"messages": [HumanMessage("added")]}
    )
    out = agent.invoke({"messages": [("user", "hi")]})
    assert seen(model) == [("human", "hi"), ("human", "added")]
    assert [m.content for m in out["messages"]] == ["hi", "added", "ok"]


def test_post_model_hook_runs_after_every_model_call_then_pending_calls_run() -> None:
    model = ScriptedChatModel([calls((1, 1)), "2"])
    agent = create_react_agent(model, [add], post_model_hook=lambda s: {})
    assert updates(agent) == [
        ["agent"],
        ["post_model_hook"],
        ["tools"],
        ["agent"],
        ["post_model_hook"],
    ]


def test_post_model_hook_without_tools_and_its_update() -> None:
    model = ScriptedChatModel(["ok"])
    agent = create_react_agent(
        model, [], post_model_hook=lambda s: {"messages": [AIMessage("checked", id="p")]}
    )
    assert updates(agent) == [["agent"], ["post_model_hook"]]
    model = ScriptedChatModel(["ok"])
    agent = create_react_agent(
        model, [], post_model_hook=lambda s: {"messages": [AIMessage("checked", id="p")]}
    )
    out = agent.invoke({"messages": [("user", "x")]})
    assert [m.content for m in out["messages"]] == ["x", "ok", "checked"]


# -------------------------------------------------------------- ToolNode and tools


def test_toolnode_messages_key() -> None:
    class S(TypedDict):
        chat: Annotated[list, add_messages]

    ai = AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "c"}])
    node = ToolNode([add], messages_key="chat")
    out = node.invoke({"chat": [ai]})
    assert list(out) == ["chat"] and out["chat"][0].content == "3"
    with pytest.raises(ValueError, match="chat"):
        node.invoke({"messages": [ai]})
    g = StateGraph(S).add_node("tools", node).add_edge(START, "tools").compile()
    assert [m.type for m in g.invoke({"chat": [ai]})["chat"]] == ["ai", "tool"]


def test_content_block_results_stay_lists() -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}]

    @tool
    def pictures() -> list:
        """Content blocks."""
        return blocks

    @tool
    def words() -> list:
        """Strings are blocks too."""
        return ["x", "y"]

    @tool
    def rows() -> list:
        """Not blocks."""
        return [{"id": 1}]

    ai = AIMessage(
        "",
        tool_calls=[{"name": n, "args": {}, "id": n} for n in ("pictures", "words", "rows")],
    )
    out = ToolNode([pictures, words, rows]).invoke({"messages": [ai]})
    assert [m.content for m in out["messages"]] == [blocks, ["x", "y"], '[{"id": 1}]']


# ------------------------------------------------------------------ push_message


def test_push_message_streams_now_and_writes_to_the_state() -> None:
    def node(state: Any) -> dict[str, Any]:
        pushed = push_message(AIMessage("working", id="p1"))
        assert pushed.id == "p1"
        return {"messages": [AIMessage("done", id="d1")]}

    g = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile()
    streamed = [
        (c.content, meta["langgraph_node"])
        for c, meta in g.stream({"messages": [("user", "hi")]}, stream_mode="messages")
    ]
    assert streamed[0] == ("working", "n")
    out = g.invoke({"messages": [("user", "hi")]})
    assert [m.content for m in out["messages"]] == ["hi", "working", "done"]


def test_push_message_without_a_state_key_only_streams() -> None:
    def node(state: Any) -> dict[str, Any]:
        push_message(AIMessage("x", id="z"), state_key=None)
        return {}

    g = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile()
    assert g.invoke({"messages": []}) == {"messages": []}


def test_push_message_needs_an_id_and_a_running_graph() -> None:
    with pytest.raises(RuntimeError, match="outside of a runnable context"):
        push_message(AIMessage("x", id="1"))

    def node(state: Any) -> dict[str, Any]:
        push_message(("ai", "no id"))
        return {}

    g = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile()
    with pytest.raises(ValueError, match=r"^Message ID is required"):
        g.invoke({"messages": []})


def test_push_message_under_ainvoke() -> None:
    async def node(state: Any) -> dict[str, Any]:
        push_message({"role": "assistant", "content": "async", "id": "a1"})
        return {}

    g = StateGraph(MessagesState).add_node("n", node).add_edge(START, "n").compile()
    out = asyncio.run(g.ainvoke({"messages": [("user", "hi")]}))
    assert [(m.type, m.content, m.id) for m in out["messages"]][1:] == [("ai", "async", "a1")]
