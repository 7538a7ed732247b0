"""A small LangChain 1.x program with a typed middleware, ported to ironloop by its
imports: ``AgentMiddleware[State, Context]`` with its own state field and a typed
runtime context, LangChain's ``@tool`` and fake chat model. ``scripts/test.sh``
checks it with mypy (``tests/typing/``), and ``tests/python/test_typing_programs.py``
runs it.

    python tests/typing/langchain_middleware.py
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from typing_extensions import NotRequired

# LangChain's: from langchain.agents import AgentState, create_agent
#              from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
#              from langgraph.runtime import Runtime
from ironloop.agents import AgentState, create_agent
from ironloop.middleware import AgentMiddleware, ModelRequest, ModelResponse
from ironloop.runtime import Runtime


@dataclass
class Context:
    """What the caller passes with each run."""

    user_name: str


class CountingState(AgentState):
    """The agent's state plus the middleware's counter."""

    model_calls: NotRequired[int]


#: The system prompts the model was called with, for the test that runs this program.
seen_prompts: list[str | None] = []


class Greeter(AgentMiddleware[CountingState, Context]):
    """Counts the model calls and greets the user by name in the system prompt."""

    state_schema = CountingState

    def before_model(self, state: CountingState, runtime: Runtime[Context]) -> dict[str, Any]:
        return {"model_calls": state.get("model_calls", 0) + 1}

    def wrap_model_call(
        self,
        request: ModelRequest[Context],
        handler: Callable[[ModelRequest[Context]], ModelResponse],
    ) -> ModelResponse:
        name = request.runtime.context.user_name
        request = request.override(system_prompt=f"You are talking to {name}.")
        seen_prompts.append(request.system_prompt)
        return handler(request)


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model; tools are accepted (the answers are scripted)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


@tool
def shout(text: str) -> str:
    """Shouts the text."""
    return text.upper()


def main() -> CountingState:
    model = ScriptedModel(
        messages=iter(
            [
                AIMessage(
                    content="", tool_calls=[{"name": "shout", "args": {"text": "hi"}, "id": "1"}]
                ),
                AIMessage(content="Shouted."),
            ]
        )
    )
    agent = create_agent(model, [shout], middleware=[Greeter()], context_schema=Context)
    out: CountingState = agent.invoke(
        {"messages": [("user", "shout hi")]}, context=Context(user_name="Ada")
    )
    return out


if __name__ == "__main__":
    result = main()
    print(result["messages"][-1].text, result.get("model_calls"))
