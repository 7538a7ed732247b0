"""create_react_agent's prompt function given the run's ``config`` and the graph's
``store`` when it names them (as LangGraph's ``RunnableCallable`` does), and a prompt
returning a LangChain ``Runnable`` run on the state."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import SystemMessage as LcSystemMessage

from ironloop import InMemoryStore, create_react_agent
from ironloop.messages import SystemMessage
from ironloop.models import ScriptedChatModel


def _store() -> InMemoryStore:
    store = InMemoryStore()
    store.put(("memories", "1"), "user_name", {"data": "User is Alice"})
    store.put(("memories", "2"), "user_name", {"data": "User is Bob"})
    return store


def test_prompt_taking_config_and_store_gets_them() -> None:
    def prompt(state: Any, config: Any, *, store: Any) -> list[Any]:
        user = config["configurable"]["user_id"]
        text = store.get(("memories", user), "user_name").value["data"]
        return [SystemMessage(content=text), *state["messages"]]

    model = ScriptedChatModel(["ok", "ok"])
    agent = create_react_agent(model, [], prompt=prompt, store=_store())
    for user, seen in (("1", "User is Alice"), ("2", "User is Bob")):
        agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"user_id": user}})
        assert [m.content for m in model.calls[-1][0]] == [seen, "hi"]


def test_async_prompt_taking_config_gets_it() -> None:
    async def prompt(state: Any, config: Any) -> list[Any]:
        return [SystemMessage(content=config["configurable"]["who"]), *state["messages"]]

    model = ScriptedChatModel(["ok"])
    agent = create_react_agent(model, [], prompt=prompt)
    asyncio.run(agent.ainvoke({"messages": [("user", "hi")]}, {"configurable": {"who": "me"}}))
    assert [m.content for m in model.calls[0][0]] == ["me", "hi"]


def test_prompt_returning_a_prompt_template_has_it_run_on_the_state() -> None:
    def prompt(state: Any) -> Any:
        return LcSystemMessage("foo") + state["messages"]

    model = ScriptedChatModel(["ok"])
    create_react_agent(model, [], prompt=prompt).invoke({"messages": [("user", "hi")]})
    assert [m.content for m in model.calls[0][0]] == ["foo", "hi"]
