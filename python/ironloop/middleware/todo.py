"""``TodoListMiddleware`` (LangChain 1.5's): a ``write_todos`` tool that keeps the
agent's plan in the state (``todos``), a system prompt telling the model when to use
it, and a check that refuses several ``write_todos`` calls in one turn (each call
replaces the whole list, so parallel ones have no order)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from typing_extensions import NotRequired, TypedDict

from ironloop._injection import InjectedToolCallId
from ironloop._tool import tool
from ironloop.messages import AIMessage, SystemMessage, ToolMessage
from ironloop.middleware._hook_bases import RequestRewriter
from ironloop.middleware.types import (
    AgentState,
    ModelRequest,
    OmitFromInput,
    ResponseT,
)
from ironloop.types import Command

__all__ = [
    "WRITE_TODOS_SYSTEM_PROMPT",
    "WRITE_TODOS_TOOL_DESCRIPTION",
    "PlanningState",
    "Todo",
    "TodoListMiddleware",
    "write_todos",
]


class Todo(TypedDict):
    """One item of the plan."""

    content: str
    status: Literal["pending", "in_progress", "completed"]


class PlanningState(AgentState[ResponseT]):
    """The agent's state with its plan (not taken from the input)."""

    todos: Annotated[NotRequired[list[Todo]], OmitFromInput]


WRITE_TODOS_TOOL_DESCRIPTION = """\
Write the plan for the current task as a list of todos, each with its `content` and a \
`status` (`pending`, `in_progress` or `completed`). Every call replaces the whole list.

Use it for work of three or more distinct steps, when the user gives several tasks, or \
asks for a plan; skip it for a single, simple or purely conversational request.

Mark a todo `in_progress` before you start it and `completed` as soon as it is done \
(not in batches); keep one `in_progress` at a time unless steps truly run together. A \
todo is completed only when it is fully done: if it failed, is partial or blocked, keep \
it `in_progress` and add a todo for what stands in the way. Add newly found steps and \
drop ones no longer needed; do not rewrite completed ones.

The list tracks the work; it is not the answer. Whatever the user asked for must be \
written in a message after your last `write_todos` call."""

WRITE_TODOS_SYSTEM_PROMPT = """\
## `write_todos`

You can plan with the `write_todos` tool: use it for objectives of many steps, to keep \
track of each one, and update it as each step is done. For an objective of a few simple \
steps, do the work directly instead: planning costs time and tokens.

Call `write_todos` at most once per turn (each call replaces the list), and revise the \
plan as you learn more.

When all the work is done, give the final answer in the message after your last \
`write_todos` call, starting with what the user asked for rather than a note that the \
work is finished."""

#: What a turn with several ``write_todos`` calls gets for each of them.
PARALLEL_CALLS_ERROR = (
    "Error: The `write_todos` tool should never be called multiple times in parallel. "
    "Please call it only once per model invocation to update the todo list."
)


def _write_todos(todos: list[Todo], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    return Command(
        update={
            "todos": todos,
            "messages": [
                ToolMessage(content=f"Updated todo list to {todos}", tool_call_id=tool_call_id)
            ],
        }
    )


def _make_tool(description: str) -> Any:
    return tool("write_todos", description=description)(_write_todos)


#: The tool with the default description (LangChain's module-level ``write_todos``).
write_todos = _make_tool(WRITE_TODOS_TOOL_DESCRIPTION)


def with_system_text(system: SystemMessage | None, text: str) -> SystemMessage:
    """``system`` with ``text`` appended after a blank line (a text block when its
    content is a list of blocks), or a system message of ``text`` alone."""
    if system is None:
        return SystemMessage(content=text)
    content = system.content
    if isinstance(content, str):
        return SystemMessage(content=f"{content}\n\n{text}")
    return SystemMessage(content=[*content, {"type": "text", "text": f"\n\n{text}"}])


class TodoListMiddleware(RequestRewriter):
    """Gives the agent a ``write_todos`` tool and a ``todos`` state field, and adds
    ``system_prompt`` to every model call's system message; ``tool_description``
    describes the tool to the model. A turn calling ``write_todos`` more than once gets
    an error ``ToolMessage`` for each of those calls, and none of them runs.

    Example:
        >>> m = TodoListMiddleware()
        >>> [t.name for t in m.tools], m.state_schema is PlanningState
        (['write_todos'], True)
    """

    state_schema: Any = PlanningState

    def __init__(
        self,
        *,
        system_prompt: str = WRITE_TODOS_SYSTEM_PROMPT,
        tool_description: str = WRITE_TODOS_TOOL_DESCRIPTION,
    ) -> None:
        super().__init__()
        self.system_prompt = system_prompt
        self.tool_description = tool_description
        self.tools = [
            write_todos
            if tool_description == WRITE_TODOS_TOOL_DESCRIPTION
            else _make_tool(tool_description)
        ]

    def _rewrite(self, request: ModelRequest) -> ModelRequest:
        return request.override(
            system_message=with_system_text(request.system_message, self.system_prompt)
        )

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        calls = [
            c for c in (last.tool_calls if last is not None else []) if c["name"] == "write_todos"
        ]
        if len(calls) < 2:
            return None
        return {
            "messages": [
                ToolMessage(content=PARALLEL_CALLS_ERROR, tool_call_id=c["id"], status="error")
                for c in calls
            ]
        }

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_model(state, runtime)
