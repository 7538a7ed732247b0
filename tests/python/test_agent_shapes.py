"""Agents made per request share one compiled graph per shape (ironloop._shapes), and
each keeps its own model, prompt and name: back to back, in threads, under asyncio,
streamed, resumed from a checkpoint, and as a sub-agent."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest

from ironloop import MemorySaver, SqliteSaver, StateGraph, create_agent, create_react_agent
from ironloop._shapes import TEMPLATES_MAX, templates
from ironloop.graph import START, MessagesState
from ironloop.messages import BaseMessage
from ironloop.models import ScriptedChatModel


def add(a: int, b: int) -> int:
    """Adds a and b."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiplies a and b."""
    return a * b


def shout(text: str) -> str:
    """Upper-cases the text."""
    return text.upper()


def model_of(tag: str, tool: str = "add") -> ScriptedChatModel:
    """A model that calls ``tool`` on 6 and 7 once, then answers with its ``tag``, the
    system prompt it was given and the tool's result: what it saw, read back."""

    def respond(messages: list[BaseMessage]) -> Any:
        last = messages[-1]
        if last.type != "tool":
            return {
                "content": "",
                "tool_calls": [{"name": tool, "args": {"a": 6, "b": 7}, "id": uuid.uuid4().hex}],
            }
        system = messages[0].text if messages[0].type == "system" else "-"
        return f"{tag}|{system}|{last.text}"

    return ScriptedChatModel(respond)


def ask(agent: Any, config: Any = None) -> str:
    return str(agent.invoke({"messages": [("user", "go")]}, config)["messages"][-1].text)


def core_of(agent: Any) -> Any:
    """The Rust graph under an agent's view (shared by agents of one shape)."""
    return agent._core._core


# --- create_react_agent ----------------------------------------------------------------


def test_back_to_back_agents_share_the_graph_but_not_model_prompt_or_name() -> None:
    tools = [add, mul, shout]
    a = create_react_agent(model_of("A"), tools, prompt="You are A.", name="alpha")
    b = create_react_agent(model_of("B"), tools, prompt="You are B.", name="beta")
    assert core_of(a) is core_of(b)
    out_a = a.invoke({"messages": [("user", "go")]})["messages"]
    out_b = b.invoke({"messages": [("user", "go")]})["messages"]
    assert out_a[-1].text == "A|You are A.|13"
    assert out_b[-1].text == "B|You are B.|13"
    assert {m.name for m in out_a if m.type == "ai"} == {"alpha"}
    assert {m.name for m in out_b if m.type == "ai"} == {"beta"}
    assert (a.name, b.name) == ("alpha", "beta")


def test_agents_with_other_tools_get_other_graphs_and_run_their_own_tools() -> None:
    a = create_react_agent(model_of("A", "add"), [add], prompt="p")
    m = create_react_agent(model_of("M", "mul"), [mul], prompt="p")
    assert core_of(a) is not core_of(m)
    assert ask(a) == "A|p|13"
    assert ask(m) == "M|p|42"
    # A model of agent m calling add, which m does not have: the tool is not found.
    wrong = create_react_agent(model_of("W", "add"), [mul], prompt="p")
    assert core_of(wrong) is core_of(m)
    assert "add" in ask(wrong) and "13" not in ask(wrong)


def test_a_function_prompt_and_no_prompt_are_per_agent_too() -> None:
    def prompt(state: Any) -> list[Any]:
        return [("system", "from a function"), *state["messages"]]

    f = create_react_agent(model_of("F"), [add, mul], prompt=prompt)
    n = create_react_agent(model_of("N"), [add, mul])
    assert core_of(f) is core_of(n)
    assert ask(f) == "F|from a function|13"
    assert ask(n) == "N|-|13"


def test_agents_run_concurrently_in_threads_each_with_its_own_settings() -> None:
    tools = [add, mul]
    agents = [
        create_react_agent(model_of(f"T{i}"), tools, prompt=f"prompt {i}", name=f"n{i}")
        for i in range(8)
    ]
    assert len({id(core_of(a)) for a in agents}) == 1
    wrong: list[str] = []
    barrier = threading.Barrier(len(agents))

    def run(i: int) -> None:
        barrier.wait()
        for _ in range(20):
            msgs = agents[i].invoke({"messages": [("user", "go")]})["messages"]
            if msgs[-1].text != f"T{i}|prompt {i}|13" or msgs[-1].name != f"n{i}":
                wrong.append(f"{i}: {msgs[-1].text} ({msgs[-1].name})")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(agents))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_agents_run_concurrently_under_asyncio_and_stream_their_own() -> None:
    tools = [add, mul]
    agents = [create_react_agent(model_of(f"S{i}"), tools, prompt=f"p{i}") for i in range(6)]

    async def one(i: int) -> tuple[str, str]:
        out = await agents[i].ainvoke({"messages": [("user", "go")]})
        last = ""
        async for chunk in agents[i].astream({"messages": [("user", "go")]}, stream_mode="values"):
            last = chunk["messages"][-1].text
        return out["messages"][-1].text, last

    async def main() -> list[tuple[str, str]]:
        return list(await asyncio.gather(*(one(i) for i in range(len(agents)))))

    results = asyncio.run(main())
    assert results == [(f"S{i}|p{i}|13", f"S{i}|p{i}|13") for i in range(len(agents))]
    # The sync stream too, two agents interleaved.
    s0 = agents[0].stream({"messages": [("user", "go")]}, stream_mode="values")
    s1 = agents[1].stream({"messages": [("user", "go")]}, stream_mode="values")
    last = {0: "", 1: ""}
    for c0, c1 in zip(s0, s1, strict=True):
        last[0], last[1] = c0["messages"][-1].text, c1["messages"][-1].text
    assert last == {0: "S0|p0|13", 1: "S1|p1|13"}


def test_each_checkpointer_keeps_its_own_threads(tmp_path) -> None:
    one, two = MemorySaver(), MemorySaver()
    a = create_react_agent(model_of("A"), [add], prompt="p", checkpointer=one)
    b = create_react_agent(model_of("B"), [add], prompt="p", checkpointer=two)
    assert core_of(a) is not core_of(b)
    cfg = {"configurable": {"thread_id": "t"}}
    ask(a, cfg)
    assert len(a.get_state(cfg).values["messages"]) == 4
    assert b.get_state(cfg).values == {}
    with SqliteSaver.from_conn_string(str(tmp_path / "c.db")) as saver:
        c = create_react_agent(model_of("C"), [add], prompt="p", checkpointer=saver)
        ask(c, cfg)
        assert [m.type for m in c.get_state(cfg).values["messages"]] == [
            "human",
            "ai",
            "tool",
            "ai",
        ]


def test_a_paused_run_resumes_with_the_agent_that_resumes_it() -> None:
    saver = MemorySaver()
    cfg = {"configurable": {"thread_id": "pause"}}
    first = create_react_agent(
        model_of("first"), [add], prompt="p1", checkpointer=saver, interrupt_before=["tools"]
    )
    out = first.invoke({"messages": [("user", "go")]}, cfg)
    assert out["messages"][-1].tool_calls
    # A new request makes the agent again (same shape, another model and prompt).
    again = create_react_agent(
        model_of("again"), [add], prompt="p2", checkpointer=saver, interrupt_before=["tools"]
    )
    assert core_of(again) is core_of(first)
    out = again.invoke(None, cfg)
    assert out["messages"][-1].text == "again|p2|13"


def test_an_agent_as_a_subgraph_node_runs_with_its_own_settings() -> None:
    inner_a = create_react_agent(model_of("IA"), [add], prompt="inner a")
    inner_b = create_react_agent(model_of("IB"), [add], prompt="inner b")
    g = StateGraph(MessagesState)
    g.add_node("a", inner_a)
    g.add_node("b", inner_b)
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    out = g.compile().invoke({"messages": [("user", "go")]})
    texts = [m.text for m in out["messages"] if m.type == "ai" and m.text]
    assert texts == ["IA|inner a|13", "IB|inner b|13"]


def test_the_builder_compiled_by_hand_runs_as_the_first_agent() -> None:
    templates.clear()
    a = create_react_agent(model_of("first"), [shout, add], prompt="p")
    create_react_agent(model_of("second"), [shout, add], prompt="q")
    assert ask(a.builder.compile()) == "first|p|13"


def test_the_cache_holds_a_bounded_number_of_shapes() -> None:
    templates.clear()
    for _ in range(TEMPLATES_MAX + 5):
        create_react_agent(model_of("x"), [add], checkpointer=MemorySaver())
    assert len(templates) == TEMPLATES_MAX


def test_provider_tool_dicts_make_a_graph_of_their_own() -> None:
    search = {"type": "web_search"}
    a = create_react_agent(model_of("A"), [add, search])
    b = create_react_agent(model_of("B"), [add, search])
    assert core_of(a) is not core_of(b)


def test_shape_errors_are_raised_on_every_call() -> None:
    with pytest.raises(ValueError, match="Missing required key"):
        create_react_agent(model_of("A"), [add], state_schema=dict)
    with pytest.raises(ValueError, match="unexpected type for `prompt`"):
        create_react_agent(model_of("A"), [add], prompt=3)
    with pytest.raises(TypeError, match="model must have invoke"):
        create_react_agent(object(), [add])


# --- create_agent ----------------------------------------------------------------------


def test_create_agent_views_keep_their_own_model_system_prompt_and_name() -> None:
    tools = [add, mul]
    a = create_agent(model_of("A"), tools, system_prompt="sys A", name="a")
    b = create_agent(model_of("B"), tools, system_prompt="sys B", name="b")
    n = create_agent(model_of("N"), tools)
    assert core_of(a) is core_of(b) is core_of(n)

    async def main() -> list[Any]:
        return list(
            await asyncio.gather(*(x.ainvoke({"messages": [("user", "go")]}) for x in (a, b, n)))
        )

    outs = asyncio.run(main())
    assert [o["messages"][-1].text for o in outs] == ["A|sys A|13", "B|sys B|13", "N|-|13"]
    assert [o["messages"][-1].name for o in outs] == ["a", "b", None]


def test_create_agent_with_other_middleware_gets_another_graph() -> None:
    from ironloop.middleware import before_model

    seen: list[str] = []

    @before_model
    def note(state: Any, runtime: Any) -> None:
        seen.append("note")

    plain = create_agent(model_of("P"), [add], system_prompt="s")
    hooked = create_agent(model_of("H"), [add], system_prompt="s", middleware=[note])
    assert core_of(plain) is not core_of(hooked)
    assert ask(plain) == "P|s|13" and seen == []
    assert ask(hooked) == "H|s|13" and seen == ["note", "note"]
    again = create_agent(model_of("H2"), [add], system_prompt="t", middleware=[note])
    assert core_of(again) is core_of(hooked)
    assert ask(again) == "H2|t|13"


def test_create_agent_resume_from_a_human_review_uses_the_resuming_agent() -> None:
    saver = MemorySaver()
    cfg = {"configurable": {"thread_id": "review"}}
    first = create_agent(
        model_of("one"), [add], system_prompt="s1", checkpointer=saver, interrupt_before=["tools"]
    )
    first.invoke({"messages": [("user", "go")]}, cfg)
    second = create_agent(
        model_of("two"), [add], system_prompt="s2", checkpointer=saver, interrupt_before=["tools"]
    )
    assert core_of(second) is core_of(first)
    assert second.invoke(None, cfg)["messages"][-1].text == "two|s2|13"


def test_a_str_prompt_is_one_system_message_per_agent_made_at_its_first_call() -> None:
    """An agent per request pays for no message object before it runs (W11); once it
    runs, its str prompt is one ``SystemMessage`` (langchain-core's when installed),
    the same object at every model call and in every run, as LangChain makes it once."""
    from ironloop.messages import SystemMessage
    from ironloop.middleware import wrap_model_call

    seen: list[Any] = []

    def respond(messages: list[BaseMessage]) -> Any:
        seen.append(messages[0])
        return (
            "ok"
            if len(seen) % 2 == 0
            else {
                "content": "",
                "tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}, "id": uuid.uuid4().hex}],
            }
        )

    agent = create_react_agent(ScriptedChatModel(respond), [add], prompt="Be brief.")
    ask(agent)
    ask(agent)
    assert len(seen) == 4 and all(m is seen[0] for m in seen)
    assert isinstance(seen[0], SystemMessage) and seen[0] == SystemMessage(content="Be brief.")

    requests: list[Any] = []

    @wrap_model_call
    def keep(request: Any, handler: Any) -> Any:
        requests.append(request.system_message)
        return handler(request)

    made = create_agent(model_of("A"), [add], system_prompt="sys A", middleware=[keep])
    assert ask(made) == "A|sys A|13"
    ask(made)
    assert len(requests) == 4 and all(r is requests[0] for r in requests)
    assert isinstance(requests[0], SystemMessage)
    assert requests[0] == SystemMessage(content="sys A")
