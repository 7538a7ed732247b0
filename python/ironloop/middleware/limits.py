"""Call limits: ``ModelCallLimitMiddleware`` and ``ToolCallLimitMiddleware`` (LangChain
1.x's). Counts are private state fields, so thread limits hold across runs of a thread
(they are checkpointed) and run limits restart with every run."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware.types import AgentMiddleware, AgentState, PrivateStateAttr, hook_config

__all__ = [
    "ExitBehavior",
    "ModelCallLimitExceededError",
    "ModelCallLimitMiddleware",
    "ModelCallLimitState",
    "ToolCallLimitExceededError",
    "ToolCallLimitMiddleware",
    "ToolCallLimitState",
]

#: What ``ToolCallLimitMiddleware`` does at its limit: block the calls over it and go
#: on, raise, or end the run.
ExitBehavior: TypeAlias = Literal["continue", "error", "end"]


class ModelCallLimitExceededError(Exception):
    """A model call limit was reached with ``exit_behavior="error"``."""

    def __init__(self, thread_count: int, run_count: int, thread_limit: Any, run_limit: Any):
        self.thread_count, self.run_count = thread_count, run_count
        self.thread_limit, self.run_limit = thread_limit, run_limit
        super().__init__(_model_limit_text(thread_count, run_count, thread_limit, run_limit))


def _model_limit_text(thread_count: int, run_count: int, thread_limit: Any, run_limit: Any) -> str:
    parts = []
    if thread_limit is not None and thread_count >= thread_limit:
        parts.append(f"thread limit ({thread_count}/{thread_limit})")
    if run_limit is not None and run_count >= run_limit:
        parts.append(f"run limit ({run_count}/{run_limit})")
    return "Model call limits exceeded: " + ", ".join(parts)


class ModelCallLimitState(AgentState, total=False):
    """The state fields ``ModelCallLimitMiddleware`` counts in (private)."""

    thread_model_call_count: Annotated[int, PrivateStateAttr]
    run_model_call_count: Annotated[int, PrivateStateAttr]


def _check_exit(exit_behavior: str, allowed: tuple[str, ...]) -> None:
    if exit_behavior not in allowed:
        raise ValueError(f"Invalid exit_behavior: {exit_behavior!r}. Must be one of {allowed}")


class ModelCallLimitMiddleware(AgentMiddleware):
    """Stops the agent once it made ``thread_limit`` model calls on its thread (needs a
    checkpointer to count across runs) or ``run_limit`` in one run. ``exit_behavior``:
    ``"end"`` (default) ends the run with an AI message saying which limit was hit;
    ``"error"`` raises :class:`ModelCallLimitExceededError`.

    Example:
        >>> ModelCallLimitMiddleware(run_limit=5).run_limit
        5
    """

    state_schema: Any = ModelCallLimitState

    def __init__(
        self,
        *,
        thread_limit: int | None = None,
        run_limit: int | None = None,
        exit_behavior: Literal["end", "error"] = "end",
    ) -> None:
        if thread_limit is None and run_limit is None:
            raise ValueError("At least one limit must be specified (thread_limit or run_limit)")
        _check_exit(exit_behavior, ("end", "error"))
        self.thread_limit, self.run_limit = thread_limit, run_limit
        self.exit_behavior = exit_behavior

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return {"run_model_call_count": 0}

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        thread = state.get("thread_model_call_count", 0)
        run = state.get("run_model_call_count", 0)
        over = (self.thread_limit is not None and thread >= self.thread_limit) or (
            self.run_limit is not None and run >= self.run_limit
        )
        if not over:
            return None
        if self.exit_behavior == "error":
            raise ModelCallLimitExceededError(thread, run, self.thread_limit, self.run_limit)
        text = _model_limit_text(thread, run, self.thread_limit, self.run_limit)
        return {"jump_to": "end", "messages": [AIMessage(content=text)]}

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return {
            "thread_model_call_count": state.get("thread_model_call_count", 0) + 1,
            "run_model_call_count": state.get("run_model_call_count", 0) + 1,
        }


class ToolCallLimitExceededError(Exception):
    """A tool call limit was reached with ``exit_behavior="error"``: the counts and
    limits (``tool_name``: the limited tool, ``None`` for all) and what was exceeded."""

    def __init__(
        self,
        thread_count: int,
        run_count: int,
        thread_limit: int | None,
        run_limit: int | None,
        tool_name: str | None = None,
    ) -> None:
        self.thread_count, self.run_count = thread_count, run_count
        self.thread_limit, self.run_limit = thread_limit, run_limit
        self.tool_name = tool_name
        super().__init__(
            _tool_limit_text(thread_count, run_count, thread_limit, run_limit, tool_name)
        )


def _tool_limit_text(
    thread: int, run: int, thread_limit: int | None, run_limit: int | None, tool: str | None
) -> str:
    """What the person sees (the final message, the error): which limit, how far."""
    what = f"'{tool}' tool" if tool else "Tool"
    over = []
    if thread_limit is not None and thread > thread_limit:
        over.append(f"thread limit exceeded ({thread}/{thread_limit} calls)")
    if run_limit is not None and run > run_limit:
        over.append(f"run limit exceeded ({run}/{run_limit} calls)")
    return f"{what} call limit reached: {' and '.join(over)}."


class ToolCallLimitState(AgentState, total=False):
    """The state fields ``ToolCallLimitMiddleware`` counts in (private: neither input
    nor output), per tool name (``"__all__"`` for every tool)."""

    thread_tool_call_count: Annotated[dict[str, int], PrivateStateAttr]
    run_tool_call_count: Annotated[dict[str, int], PrivateStateAttr]


class ToolCallLimitMiddleware(AgentMiddleware):
    """Limits tool calls — of ``tool_name``, or of all tools when it is ``None`` — to
    ``thread_limit`` per thread and ``run_limit`` per run. A call past a limit does not
    run. ``exit_behavior``: ``"continue"`` (default) answers it with an error
    ``ToolMessage`` (the other calls run); ``"end"`` ends the run with an AI message;
    ``"error"`` raises :class:`ToolCallLimitExceededError`.

    Example:
        >>> ToolCallLimitMiddleware(tool_name="search", run_limit=2).name
        'ToolCallLimitMiddleware[search]'
    """

    state_schema: Any = ToolCallLimitState

    def __init__(
        self,
        *,
        tool_name: str | None = None,
        thread_limit: int | None = None,
        run_limit: int | None = None,
        exit_behavior: Literal["continue", "end", "error"] = "continue",
    ) -> None:
        if thread_limit is None and run_limit is None:
            raise ValueError("At least one limit must be specified (thread_limit or run_limit)")
        if thread_limit is not None and run_limit is not None and run_limit > thread_limit:
            raise ValueError(
                f"run_limit ({run_limit}) cannot exceed thread_limit ({thread_limit}): the "
                "run limit should be at most the thread limit"
            )
        _check_exit(exit_behavior, ("continue", "end", "error"))
        self.tool_name = tool_name
        self.thread_limit, self.run_limit = thread_limit, run_limit
        self.exit_behavior = exit_behavior

    @property
    def name(self) -> str:
        return (
            f"ToolCallLimitMiddleware[{self.tool_name}]"
            if self.tool_name
            else ("ToolCallLimitMiddleware")
        )

    @property
    def _key(self) -> str:
        return self.tool_name or "__all__"

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        counts = dict(state.get("run_tool_call_count") or {})
        counts[self._key] = 0
        return {"run_tool_call_count": counts}

    def _exceeded(self, thread: int, run: int) -> bool:
        return (self.thread_limit is not None and thread >= self.thread_limit) or (
            self.run_limit is not None and run >= self.run_limit
        )

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        last = messages[-1] if messages else None
        if last is None or last.type != "ai" or not last.tool_calls:
            return None
        thread_counts = dict(state.get("thread_tool_call_count") or {})
        run_counts = dict(state.get("run_tool_call_count") or {})
        thread = thread_counts.get(self._key, 0)
        run = run_counts.get(self._key, 0)
        start_thread = thread
        blocked_calls: list[dict[str, Any]] = []
        for call in last.tool_calls:
            if self.tool_name is not None and call["name"] != self.tool_name:
                continue
            if self._exceeded(thread, run):
                blocked_calls.append(dict(call))
                continue
            thread += 1
            run += 1
        if not blocked_calls:
            if thread == start_thread:
                return None  # no call this middleware counts (LangChain's: no update)
            thread_counts[self._key], run_counts[self._key] = thread, run
            return {"thread_tool_call_count": thread_counts, "run_tool_call_count": run_counts}
        run += len(blocked_calls)  # the run count counts attempts
        text = self._limit_text(thread + len(blocked_calls), run)
        if self.exit_behavior == "error":
            raise ToolCallLimitExceededError(
                thread + len(blocked_calls), run, self.thread_limit, self.run_limit, self.tool_name
            )
        note = (
            f"Tool call limit exceeded. Do not call '{self.tool_name}' again."
            if self.tool_name
            else "Tool call limit exceeded. Do not make additional tool calls."
        )
        answers: list[Any] = [_refusal(c, note) for c in blocked_calls]
        if self.exit_behavior == "end":
            # No call of this message runs after the jump: each gets its answer, so the
            # conversation stays valid; none counts for the thread.
            blocked_ids = {c["id"] for c in blocked_calls}
            answers += [
                _refusal(
                    c,
                    "Execution stopped before this tool call could run because another "
                    "tool call in the same batch exceeded the limit.",
                )
                for c in last.tool_calls
                if c["id"] not in blocked_ids
            ]
            thread_counts[self._key], run_counts[self._key] = start_thread, run
            return {
                "thread_tool_call_count": thread_counts,
                "run_tool_call_count": run_counts,
                "jump_to": "end",
                "messages": [*answers, AIMessage(content=text)],
            }
        thread_counts[self._key], run_counts[self._key] = thread, run
        return {
            "thread_tool_call_count": thread_counts,
            "run_tool_call_count": run_counts,
            "messages": answers,
        }

    def _limit_text(self, thread: int, run: int) -> str:
        return _tool_limit_text(thread, run, self.thread_limit, self.run_limit, self.tool_name)


def _refusal(call: Any, text: str) -> ToolMessage:
    return ToolMessage(content=text, name=call["name"], tool_call_id=call["id"], status="error")
