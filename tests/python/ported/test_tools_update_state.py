"""LangGraph docs, "Tools" -> "Update state from tools" (a LangChain tool returning
``Command(update=...)`` with ``InjectedToolCallId`` and the run's ``RunnableConfig``;
a tool reading the agent's state through ``InjectedState``; ``create_react_agent``
with a custom ``state_schema``), imports changed only. The docs' model string is
LangChain's fake chat model with ``bind_tools``. Expected values: the output of the
same program under LangGraph 1.2."""

from typing import Annotated

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool

from ironloop.prebuilt import InjectedState, create_react_agent
from ironloop.prebuilt.chat_agent_executor import AgentState
from ironloop.types import Command


class FakeToolCallingModel(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


class CustomState(AgentState):
    user_name: str


@tool
def update_user_info(
    tool_call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig
) -> Command:
    """Look up and update user info."""
    user_id = config["configurable"].get("user_id")
    name = "John Smith" if user_id == "user_123" else "Unknown user"
    return Command(
        update={
            "user_name": name,
            # update the message history
            "messages": [
                ToolMessage("Successfully looked up user information", tool_call_id=tool_call_id)
            ],
        }
    )


def greet(state: Annotated[CustomState, InjectedState]) -> str:
    """Use this to greet the user once you found their info."""
    user_name = state["user_name"]
    return f"Hello {user_name}!"


def test_tools_that_update_and_read_the_state() -> None:
    model = FakeToolCallingModel(
        messages=iter(
            [
                AIMessage("", tool_calls=[{"name": "update_user_info", "args": {}, "id": "c1"}]),
                AIMessage("", tool_calls=[{"name": "greet", "args": {}, "id": "c2"}]),
                AIMessage("I greeted John Smith."),
            ]
        )
    )
    agent = create_react_agent(
        model=model,
        tools=[update_user_info, greet],
        state_schema=CustomState,
    )
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "greet the user"}]},
        config={"configurable": {"user_id": "user_123"}},
    )
    assert result["user_name"] == "John Smith"
    assert [(m.type, m.content) for m in result["messages"]] == [
        ("human", "greet the user"),
        ("ai", ""),
        ("tool", "Successfully looked up user information"),
        ("ai", ""),
        ("tool", "Hello John Smith!"),
        ("ai", "I greeted John Smith."),
    ]
    assert [m.tool_call_id for m in result["messages"] if m.type == "tool"] == ["c1", "c2"]
