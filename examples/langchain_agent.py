"""A LangChain 1.x agent, offline, ported to ironloop by changing its imports only.

The program is what a LangChain 1.5 user writes: LangChain tools (``@tool``), a
LangChain fake chat model that plays the agent's turns, ``create_agent`` with
``TodoListMiddleware`` (the model writes a plan), ``HumanInTheLoopMiddleware`` (every
``send_email`` call waits for a reviewer, who edits the recipient) and
``SummarizationMiddleware`` (old turns are folded into a summary once the
conversation grows). Its LangChain original differs only in the four import lines
marked below; ``tests/python/test_langchain_agent_example.py`` runs both and checks
they print the same.

    pip install . && python examples/langchain_agent.py
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool

# The port: these four lines are LangChain's
#   from langchain.agents import create_agent
#   from langchain.agents.middleware import (HumanInTheLoopMiddleware, ...)
#   from langgraph.checkpoint.memory import InMemorySaver
#   from langgraph.types import Command
from ironloop.agents import create_agent
from ironloop.checkpoint import InMemorySaver
from ironloop.middleware import (
    HumanInTheLoopMiddleware,
    SummarizationMiddleware,
    TodoListMiddleware,
)
from ironloop.types import Command


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, which answers from a list; tools are accepted
    (and ignored: the answers are scripted)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return f"Order {order_id}: shipped on Monday, arriving Thursday."


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"Email sent to {to}."


def call(name: str, call_id: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


TURNS = [
    call(
        "write_todos",
        "t1",
        todos=[
            {"content": "Look up order 42", "status": "in_progress"},
            {"content": "Email the customer", "status": "pending"},
        ],
    ),
    call("lookup_order", "t2", order_id="42"),
    call("send_email", "t3", to="customer@example.com", body="Your order arrives Thursday."),
    AIMessage(content="Done: the customer knows their order arrives Thursday."),
    AIMessage(content="You asked about order 42; it arrives Thursday."),
]


def describe(message: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"type": message.type, "content": message.content}
    for tc in getattr(message, "tool_calls", None) or []:
        out.setdefault("calls", []).append([tc["name"], tc["args"]])
    return out


def main() -> list[Any]:
    agent = create_agent(
        ScriptedModel(messages=iter(TURNS)),
        [lookup_order, send_email],
        system_prompt="You are a support agent.",
        middleware=[
            TodoListMiddleware(),
            HumanInTheLoopMiddleware(interrupt_on={"send_email": True, "lookup_order": False}),
            SummarizationMiddleware(
                model=ScriptedModel(messages=iter([AIMessage(content="Order 42 was handled.")])),
                trigger=("messages", 8),
                keep=("messages", 2),
            ),
        ],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "support-1"}}
    log: list[Any] = []
    result = agent.invoke({"messages": [("user", "Where is order 42? Tell the customer.")]}, config)
    pending = result["__interrupt__"][0].value
    log.append(["review", [(a["name"], a["args"]) for a in pending["action_requests"]]])
    # The reviewer edits the recipient.
    edited = {"name": "send_email", "args": {"to": "vip@example.com", "body": "Thursday!"}}
    decision = {"decisions": [{"type": "edit", "edited_action": edited}]}
    result = agent.invoke(Command(resume=decision), config)
    log.append(["todos", result["todos"]])
    log.append(["after review", [describe(m) for m in result["messages"]]])
    result = agent.invoke({"messages": [("user", "Remind me what happened?")]}, config)
    log.append(["after summary", [describe(m) for m in result["messages"]]])
    return log


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
