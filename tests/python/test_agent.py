"""create_react_agent with scripted and hand-written models; what the model receives;
tool errors, return_direct, structured responses, interrupts and checkpointing;
InMemoryStore on its own and injected into tools; agents as tools."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Annotated, Any, TypedDict

import pydantic
import pytest
from graph_support import run

from ironloop import (
    END,
    START,
    Command,
    InjectedStore,
    InMemoryStore,
    MemorySaver,
    SqliteSaver,
    StateGraph,
    ToolContext,
    create_agent,
    create_react_agent,
    tool,
)
from ironloop.errors import ModelError
from ironloop.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from ironloop.models import ScriptedChatModel
from ironloop.store import Item


def call(name: str, args: dict[str, Any], id: str = "call_1") -> dict[str, Any]:
    return {"name": name, "args": args, "id": id}


def turn(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def thread(t: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": t}}


@tool
def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-cases text."""
    return text.upper()


# ------------------------------------------------------------------- the basics


def test_agent_loop_with_scripted_model() -> None:
    model = ScriptedChatModel([turn(call("add", {"a": 2, "b": 3})), "The answer is 5."])
    agent = create_react_agent(model, [add])
    out = agent.invoke({"messages": [("user", "What is 2+3?")]})
    msgs = out["messages"]
    assert [m.type for m in msgs] == ["human", "ai", "tool", "ai"]
    assert msgs[2].content == "5"
    assert msgs[2].tool_call_id == "call_1"
    assert msgs[2].name == "add"
    assert msgs[-1].content == "The answer is 5."
    assert model.remaining == 0


def test_agent_graph_has_agent_and_tools_nodes_and_name() -> None:
    agent = create_react_agent(ScriptedChatModel(["hi"]), [add], name="calculator")
    assert {"agent", "tools"} <= set(agent.nodes)
    assert agent.name == "calculator"
    drawn = agent.get_graph().draw_mermaid()
    assert "agent" in drawn and "tools" in drawn


def test_model_receives_messages_and_openai_tools() -> None:
    model = ScriptedChatModel([turn(call("add", {"a": 1, "b": 1})), "2"])
    agent = create_react_agent(model, [add, shout], prompt="You are terse.")
    out = agent.invoke({"messages": [("user", "1+1?")]})
    assert len(model.calls) == 2
    messages, tools = model.calls[0]
    assert all(isinstance(m, BaseMessage) for m in messages)
    assert isinstance(messages[0], SystemMessage)
    assert messages[0].content == "You are terse."
    assert isinstance(messages[1], HumanMessage)
    assert messages[1].content == "1+1?"
    assert tools is not None
    assert [t["type"] for t in tools] == ["function", "function"]
    fns = {t["function"]["name"]: t["function"] for t in tools}
    assert set(fns) == {"add", "shout"}
    assert fns["add"]["description"].startswith("Adds two integers.")
    params = fns["add"]["parameters"]
    assert params["type"] == "object"
    assert set(params["properties"]) == {"a", "b"}
    assert params["properties"]["a"]["type"] == "integer"
    assert params["properties"]["a"].get("description") == "The first number."
    assert sorted(params["required"]) == ["a", "b"]
    second_messages, _ = model.calls[1]
    assert [type(m).__name__ for m in second_messages] == [
        "SystemMessage",
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
    ]
    # The prompt is sent to the model, not stored in the state.
    assert not any(isinstance(m, SystemMessage) for m in out["messages"])


def test_prompt_as_system_message_and_as_function() -> None:
    model = ScriptedChatModel(["ok"])
    create_react_agent(model, [], prompt=SystemMessage(content="sys")).invoke(
        {"messages": [("user", "x")]}
    )
    assert [m.content for m in model.calls[0][0]] == ["sys", "x"]

    model = ScriptedChatModel(["ok"])

    def prompt(state: Any) -> list[Any]:
        return [SystemMessage(content=f"{len(state['messages'])} messages"), *state["messages"]]

    create_react_agent(model, [add], prompt=prompt).invoke({"messages": [("user", "x")]})
    assert [m.content for m in model.calls[0][0]] == ["1 messages", "x"]


def test_agent_without_tools_answers_directly() -> None:
    model = ScriptedChatModel(["just text"])
    agent = create_react_agent(model, [])
    out = agent.invoke({"messages": [("user", "hi")]})
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    assert model.calls[0][1] is None


def test_plain_functions_are_accepted_as_tools() -> None:
    def multiply(a: int, b: int) -> int:
        """Multiplies."""
        return a * b

    model = ScriptedChatModel([turn(call("multiply", {"a": 6, "b": 7})), "42"])
    out = create_react_agent(model, [multiply]).invoke({"messages": [("user", "6*7")]})
    assert out["messages"][2].content == "42"
    assert model.calls[0][1][0]["function"]["name"] == "multiply"


# ----------------------------------------------------------------- model objects


class PlainModel:
    """Only ``invoke``: returns dicts, records what it got."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[Any], Any]] = []

    def invoke(self, messages: list[Any], tools: Any = None, tool_choice: Any = None) -> Any:
        self.seen.append((messages, tools))
        if not any(isinstance(m, ToolMessage) for m in messages):
            return {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("shout", {"text": "hey"})],
            }
        return AIMessage(content=f"tool said {messages[-1].content}")


def test_a_plain_object_with_only_invoke_is_a_model() -> None:
    model = PlainModel()
    out = create_react_agent(model, [shout]).invoke({"messages": [("user", "go")]})
    assert out["messages"][-1].content == "tool said HEY"
    assert len(model.seen) == 2
    assert all(isinstance(m, BaseMessage) for m in model.seen[1][0])
    assert model.seen[0][1][0]["function"]["name"] == "shout"
    assert (
        asyncio.run(
            create_react_agent(PlainModel(), [shout]).ainvoke({"messages": [("user", "go")]})
        )["messages"][-1].content
        == "tool said HEY"
    )


class DualModel:
    def __init__(self) -> None:
        self.used: list[str] = []

    def _answer(self, messages: list[Any]) -> AIMessage:
        if not any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage(content="", tool_calls=[call("add", {"a": 1, "b": 2})])
        return AIMessage(content="3")

    def invoke(self, messages: list[Any], tools: Any = None, tool_choice: Any = None) -> AIMessage:
        self.used.append("invoke")
        return self._answer(messages)

    async def ainvoke(
        self, messages: list[Any], tools: Any = None, tool_choice: Any = None
    ) -> AIMessage:
        self.used.append("ainvoke")
        await asyncio.sleep(0)
        return self._answer(messages)


@pytest.mark.parametrize("how", ["invoke", "ainvoke"])
def test_a_model_with_ainvoke_is_called_the_way_the_agent_is(how) -> None:
    model = DualModel()
    out = run(create_react_agent(model, [add]), how, {"messages": [("user", "1+2")]})
    assert out["messages"][-1].content == "3"
    assert model.used == [how, how]


class AsyncOnlyModel:
    async def ainvoke(self, messages: list[Any], tools: Any = None, tool_choice: Any = None) -> Any:
        return {"role": "assistant", "content": f"{len(messages)} in"}


def test_a_model_with_only_ainvoke_works_under_both() -> None:
    agent = create_react_agent(AsyncOnlyModel(), [add])
    assert agent.invoke({"messages": [("user", "x")]})["messages"][-1].content == "1 in"
    out = asyncio.run(agent.ainvoke({"messages": [("user", "x")]}))
    assert out["messages"][-1].content == "1 in"


def test_something_that_is_not_a_model_is_rejected() -> None:
    with pytest.raises(TypeError, match="invoke"):
        create_react_agent(object(), [add])


def test_a_model_returning_garbage_raises_model_error() -> None:
    class Bad:
        def invoke(self, messages: Any, tools: Any = None, tool_choice: Any = None) -> Any:
            return 42

    with pytest.raises(ModelError):
        create_react_agent(Bad(), [add]).invoke({"messages": [("user", "x")]})


# ------------------------------------------------------------- scripted model


def test_scripted_model_raises_model_error_when_the_script_runs_out() -> None:
    model = ScriptedChatModel(["only one"])
    assert model.invoke([("user", "a")]).content == "only one"
    with pytest.raises(ModelError, match="ran out"):
        model.invoke([("user", "b")])

    agent = create_react_agent(ScriptedChatModel([turn(call("add", {"a": 1, "b": 1}))]), [add])
    with pytest.raises(ModelError):
        agent.invoke({"messages": [("user", "1+1")]})


def test_scripted_model_accepts_messages_strings_dicts_and_functions() -> None:
    model = ScriptedChatModel(
        [
            AIMessage(content="a"),
            "b",
            {"content": "c"},
            lambda msgs: f"saw {len(msgs)}",
        ]
    )
    outs = [model.invoke([("user", "x")]).content for _ in range(4)]
    assert outs == ["a", "b", "c", "saw 1"]
    looping = ScriptedChatModel(lambda msgs: msgs[-1].content[::-1])
    assert looping.invoke([("user", "abc")]).content == "cba"
    assert looping.invoke([("user", "xy")]).content == "yx"


def test_scripted_ai_message_replayed_twice_gets_distinct_ids() -> None:
    msg = AIMessage(content="same")
    model = ScriptedChatModel([msg, msg])
    agent = create_react_agent(model, [], checkpointer=MemorySaver())
    agent.invoke({"messages": [("user", "1")]}, thread())
    out = agent.invoke({"messages": [("user", "2")]}, thread())
    assert [m.content for m in out["messages"]] == ["1", "same", "2", "same"]


# ---------------------------------------------------------------- tool errors


def test_tool_errors_reach_the_model_and_it_recovers() -> None:
    @tool
    def divide(a: float, b: float) -> float:
        """Divides a by b."""
        return a / b

    model = ScriptedChatModel(
        [
            turn(
                call("divide", {"a": 1, "b": 0}, "c1"),
                call("nosuchtool", {}, "c2"),
                call("divide", {"a": "x"}, "c3"),
            ),
            turn(call("divide", {"a": 1, "b": 4}, "c4")),
            "It is 0.25.",
        ]
    )
    out = create_react_agent(model, [divide]).invoke({"messages": [("user", "1/0?")]})
    msgs = out["messages"]
    errors = msgs[2:5]
    assert [m.type for m in errors] == ["tool"] * 3
    assert [m.tool_call_id for m in errors] == ["c1", "c2", "c3"]
    assert all(m.status == "error" for m in errors)
    assert "ZeroDivisionError" in errors[0].content or "division" in errors[0].content
    assert "nosuchtool" in errors[1].content
    assert msgs[6].content == "0.25"
    assert msgs[6].status == "success"
    assert msgs[-1].content == "It is 0.25."
    # The model saw the error messages in its second call.
    seen = model.calls[1][0]
    assert sum(isinstance(m, ToolMessage) and m.status == "error" for m in seen) == 3


def test_return_direct_tool_ends_the_run_with_its_result() -> None:
    @tool(return_direct=True)
    def lookup(key: str) -> str:
        """Looks a key up; the answer goes straight to the user."""
        return f"value of {key}"

    model = ScriptedChatModel([turn(call("lookup", {"key": "k"})), "should not be used"])
    out = create_react_agent(model, [lookup, add]).invoke({"messages": [("user", "k?")]})
    last = out["messages"][-1]
    assert isinstance(last, ToolMessage)
    assert last.content == "value of k"
    assert len(model.calls) == 1


def test_return_direct_tool_that_fails_ends_the_run_with_its_error() -> None:
    # LangGraph 1.2.24's create_react_agent (with errors handled) ends the run after a
    # return_direct tool answered, whatever the answer's status: checked on LangGraph.
    @tool(return_direct=True)
    def fragile(key: str) -> str:
        """Fails."""
        raise RuntimeError("broken")

    model = ScriptedChatModel([turn(call("fragile", {"key": "k"})), "should not be used"])
    out = create_react_agent(model, [fragile]).invoke({"messages": [("user", "k?")]})
    last = out["messages"][-1]
    assert isinstance(last, ToolMessage) and last.status == "error"
    assert "broken" in last.content
    assert len(model.calls) == 1


def test_create_agent_ends_after_tools_only_when_every_call_was_return_direct() -> None:
    # LangChain 1.5.2's create_agent: a return_direct call beside a plain one goes back
    # to the model (LangGraph's create_react_agent ends): checked on both.
    @tool(return_direct=True)
    def direct(x: int) -> str:
        """Direct."""
        return f"direct {x}"

    @tool
    def plain(x: int) -> str:
        """Plain."""
        return f"plain {x}"

    def types_after(make: Any) -> list[str]:
        calls = [call("direct", {"x": 1}, "call_1"), call("plain", {"x": 2}, "call_2")]
        model = ScriptedChatModel([turn(*calls), "final"])
        out = make(model, [direct, plain]).invoke({"messages": [("user", "go")]})
        return [m.type for m in out["messages"]]

    assert types_after(create_agent) == ["human", "ai", "tool", "tool", "ai"]
    assert types_after(create_react_agent) == ["human", "ai", "tool", "tool"]


def test_tool_calls_of_one_message_run_concurrently() -> None:
    @tool
    def slow(i: int) -> int:
        """Sleeps."""
        time.sleep(0.2)
        return i

    model = ScriptedChatModel([turn(*[call("slow", {"i": i}, f"c{i}") for i in range(4)]), "done"])
    t0 = time.perf_counter()
    out = create_react_agent(model, [slow]).invoke({"messages": [("user", "go")]})
    assert time.perf_counter() - t0 < 0.35
    assert [m.content for m in out["messages"][2:6]] == ["0", "1", "2", "3"]


# -------------------------------------------------------- structured responses


class Weather(pydantic.BaseModel):
    city: str
    temperature: float


class WeatherTD(TypedDict):
    city: str
    temperature: float


@pytest.mark.parametrize("fmt", [Weather, WeatherTD], ids=["pydantic", "typeddict"])
def test_response_format(fmt) -> None:
    model = ScriptedChatModel(
        [
            turn(call("shout", {"text": "paris"})),
            "It is 21 degrees in Paris.",
            '{"city": "Paris", "temperature": 21}',
        ]
    )
    out = create_react_agent(model, [shout], response_format=fmt).invoke(
        {"messages": [("user", "weather?")]}
    )
    sr = out["structured_response"]
    if fmt is Weather:
        assert isinstance(sr, Weather)
        assert (sr.city, sr.temperature) == ("Paris", 21.0)
    else:
        assert sr == {"city": "Paris", "temperature": 21}
    assert out["messages"][-1].content == "It is 21 degrees in Paris."
    assert len(model.calls) == 3
    assert model.calls[2][1] is None  # the structured call gets no tools


def test_response_format_mismatch_raises_model_error() -> None:
    model = ScriptedChatModel(["answer", '{"city": "Paris"}'])
    with pytest.raises(ModelError, match="temperature"):
        create_react_agent(model, [], response_format=Weather).invoke({"messages": [("user", "?")]})
    model = ScriptedChatModel(["answer", "not json"])
    with pytest.raises(ModelError):
        create_react_agent(model, [], response_format=Weather).invoke({"messages": [("user", "?")]})


# ------------------------------------------------- checkpointing and interrupts


def test_agent_with_checkpointer_remembers_the_conversation() -> None:
    model = ScriptedChatModel(["first", "second"])
    agent = create_react_agent(model, [add], checkpointer=MemorySaver())
    agent.invoke({"messages": [("user", "one")]}, thread("a"))
    out = agent.invoke({"messages": [("user", "two")]}, thread("a"))
    assert [m.content for m in out["messages"]] == ["one", "first", "two", "second"]
    assert [m.content for m in model.calls[1][0]] == ["one", "first", "two"]


def test_interrupt_before_tools_then_continue(tmp_path) -> None:
    ran = []

    @tool
    def deploy(env: str) -> str:
        """Deploys."""
        ran.append(env)
        return f"deployed to {env}"

    with SqliteSaver(tmp_path / "agent.db") as saver:
        model = ScriptedChatModel([turn(call("deploy", {"env": "prod"})), "Deployed."])
        agent = create_react_agent(model, [deploy], checkpointer=saver, interrupt_before=["tools"])
        out = agent.invoke({"messages": [("user", "ship")]}, thread())
        assert ran == []
        assert out["messages"][-1].tool_calls[0]["name"] == "deploy"
        snap = agent.get_state(thread())
        assert snap.next == ("tools",)
        out = agent.invoke(None, thread())
        assert ran == ["prod"]
        assert out["messages"][-1].content == "Deployed."


def test_interrupt_before_tools_and_reject_by_editing_state() -> None:
    model = ScriptedChatModel([turn(call("add", {"a": 1, "b": 1}, "c9")), "ok, cancelled"])
    agent = create_react_agent(model, [add], checkpointer=MemorySaver(), interrupt_before=["tools"])
    agent.invoke({"messages": [("user", "add")]}, thread())
    agent.update_state(
        thread(),
        {"messages": [ToolMessage(content="user rejected", tool_call_id="c9", status="error")]},
        as_node="tools",
    )
    assert agent.get_state(thread()).next == ("agent",)
    out = agent.invoke(None, thread())
    assert out["messages"][-1].content == "ok, cancelled"
    assert out["messages"][-2].content == "user rejected"


# ---------------------------------------------------------------------- store


def test_in_memory_store_put_get_search_delete() -> None:
    store = InMemoryStore()
    store.put(("users", "1"), "prefs", {"theme": "dark", "lang": "en"})
    store.put(("users", "1"), "name", {"value": "Ann"})
    store.put(("users", "2"), "prefs", {"theme": "light", "lang": "en"})
    store.put(("docs",), "readme", {"text": "hello world"})

    item = store.get(("users", "1"), "prefs")
    assert isinstance(item, Item)
    assert item.value == {"theme": "dark", "lang": "en"}
    assert item.key == "prefs"
    assert item.namespace == ("users", "1")
    assert store.get(("users", "1"), "missing") is None
    assert store.get(("nobody",), "prefs") is None

    assert {(i.namespace, i.key) for i in store.search(("users",))} == {
        (("users", "1"), "prefs"),
        (("users", "1"), "name"),
        (("users", "2"), "prefs"),
    }
    assert [i.key for i in store.search(("users", "2"))] == ["prefs"]
    dark = store.search(("users",), filter={"theme": "dark"})
    assert [(i.namespace, i.key) for i in dark] == [(("users", "1"), "prefs")]
    # Without an index a query ranks nothing and filters nothing (LangGraph's
    # InMemoryStore): semantic search is tests/python/test_store.py's.
    assert [i.key for i in store.search(("docs",), query="absent")] == ["readme"]
    assert len(store.search(("users",), limit=2)) == 2
    assert len(store.search((), limit=100)) == 4

    created = item.created_at
    time.sleep(0.01)
    store.put(("users", "1"), "prefs", {"theme": "blue"})
    again = store.get(("users", "1"), "prefs")
    assert again.value == {"theme": "blue"}
    assert again.created_at == created
    assert again.updated_at > created

    store.delete(("users", "1"), "prefs")
    assert store.get(("users", "1"), "prefs") is None
    store.put(("users", "1"), "name", None)  # put None deletes too
    assert store.get(("users", "1"), "name") is None
    store.delete(("users", "1"), "never-there")  # no error
    assert ("users", "2") in store.list_namespaces()


def test_store_value_must_be_a_dict() -> None:
    with pytest.raises(TypeError):
        InMemoryStore().put(("a",), "k", "not a dict")  # type: ignore[arg-type]


def test_store_is_injected_into_tools_and_hidden_from_the_schema() -> None:
    @tool
    def remember(fact: str, store: Annotated[Any, InjectedStore()]) -> str:
        """Stores a fact."""
        store.put(("facts",), fact, {"fact": fact})
        return "stored"

    @tool
    def recall(store: Annotated[Any, InjectedStore()], ctx: ToolContext) -> list[str]:
        """Lists facts."""
        assert ctx.store is store
        return sorted(i.value["fact"] for i in store.search(("facts",)))

    store = InMemoryStore()
    model = ScriptedChatModel(
        [
            turn(
                call("remember", {"fact": "sky is blue"}, "r1"),
                call("remember", {"fact": "grass"}, "r2"),
            ),
            turn(call("recall", {}, "r3")),
            "I know two facts.",
        ]
    )
    agent = create_react_agent(model, [remember, recall], store=store)
    out = agent.invoke({"messages": [("user", "learn")]})
    assert store.get(("facts",), "sky is blue").value == {"fact": "sky is blue"}
    recalled = next(
        m for m in out["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r3"
    )
    assert recalled.artifact == ["grass", "sky is blue"]
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in model.calls[0][1]}
    assert list(tools["remember"]["properties"]) == ["fact"]
    assert tools["recall"].get("properties", {}) == {}


def test_graph_nodes_receive_the_store() -> None:
    store = InMemoryStore()
    store.put(("cfg",), "greeting", {"text": "hello"})

    class S(TypedDict, total=False):
        out: str

    def node(state: Any, store: Any) -> dict[str, str]:
        return {"out": store.get(("cfg",), "greeting").value["text"]}

    g = StateGraph(S)
    g.add_node("n", node).add_edge(START, "n").add_edge("n", END)
    assert g.compile(store=store).invoke({"out": ""}) == {"out": "hello"}


# --------------------------------------------------------------- agents as tools


class SlowSubModel:
    """Answers after a pause; sync and async."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.inputs: list[str] = []
        self.lock = threading.Lock()

    def _answer(self, messages: list[Any]) -> AIMessage:
        with self.lock:
            self.inputs.append(messages[-1].content)
        return AIMessage(content=f"researched: {messages[-1].content}")

    def invoke(self, messages: list[Any], tools: Any = None, tool_choice: Any = None) -> AIMessage:
        time.sleep(self.delay)
        return self._answer(messages)

    async def ainvoke(
        self, messages: list[Any], tools: Any = None, tool_choice: Any = None
    ) -> AIMessage:
        await asyncio.sleep(self.delay)
        return self._answer(messages)


def test_as_tool_schema_and_result() -> None:
    sub = create_react_agent(ScriptedChatModel(["Paris is the capital."]), [add], name="geo")
    t = sub.as_tool("ask_geo", "Asks the geography expert.")
    assert t.name == "ask_geo"
    assert t.description == "Asks the geography expert."
    assert list(t.parameters["properties"]) == ["input"]
    assert t.parameters["properties"]["input"]["type"] == "string"
    assert t.parameters["required"] == ["input"]

    boss = ScriptedChatModel([turn(call("ask_geo", {"input": "capital of France?"})), "Paris."])
    out = create_react_agent(boss, [t]).invoke({"messages": [("user", "France?")]})
    result = out["messages"][2]
    assert isinstance(result, ToolMessage)
    assert result.content == "Paris is the capital."
    assert result.status == "success"
    assert out["messages"][-1].content == "Paris."


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_two_sub_agent_calls_in_one_message_run_concurrently(mode) -> None:
    sub_model = SlowSubModel(0.25)
    sub = create_react_agent(sub_model, [])
    researcher = sub.as_tool("research", "Researches a topic.")
    boss = ScriptedChatModel(
        [
            turn(
                call("research", {"input": "cats"}, "a"), call("research", {"input": "dogs"}, "b")
            ),
            "Both researched.",
        ]
    )
    agent = create_react_agent(boss, [researcher])
    t0 = time.perf_counter()
    if mode == "invoke":
        out = agent.invoke({"messages": [("user", "pets")]})
    else:
        out = asyncio.run(agent.ainvoke({"messages": [("user", "pets")]}))
    elapsed = time.perf_counter() - t0
    assert sorted(sub_model.inputs) == ["cats", "dogs"]
    assert [m.content for m in out["messages"][2:4]] == ["researched: cats", "researched: dogs"]
    assert elapsed < 0.45, elapsed  # two 0.25 s sub-agents overlapped


def test_sub_agent_failure_is_an_error_tool_message() -> None:
    sub = create_react_agent(ScriptedChatModel([]), [])  # runs out at once
    boss = ScriptedChatModel([turn(call("helper", {"input": "x"})), "helper failed"])
    out = create_react_agent(boss, [sub.as_tool("helper", "Helps.")]).invoke(
        {"messages": [("user", "?")]}
    )
    assert out["messages"][2].status == "error"
    assert out["messages"][-1].content == "helper failed"


def test_agent_streams_updates_per_node() -> None:
    model = ScriptedChatModel([turn(call("add", {"a": 1, "b": 2})), "3"])
    chunks = list(
        create_react_agent(model, [add]).stream(
            {"messages": [("user", "1+2")]}, stream_mode="updates"
        )
    )
    assert [next(iter(c)) for c in chunks] == ["agent", "tools", "agent"]
    assert chunks[1]["tools"]["messages"][0].content == "3"


def test_agent_resume_after_a_tool_interrupt() -> None:
    from ironloop import interrupt

    @tool
    def confirm(action: str) -> str:
        """Asks a human."""
        return f"{action}: {interrupt({'confirm': action})}"

    model = ScriptedChatModel([turn(call("confirm", {"action": "delete"})), "Done."])
    agent = create_react_agent(model, [confirm], checkpointer=MemorySaver())
    out = agent.invoke({"messages": [("user", "delete it")]}, thread())
    assert out["__interrupt__"][0].value == {"confirm": "delete"}
    out = agent.invoke(Command(resume="approved"), thread())
    assert out["messages"][-2].content == "delete: approved"
    assert out["messages"][-1].content == "Done."
