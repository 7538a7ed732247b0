"""``HumanInTheLoopMiddleware``: a person approves, edits or rejects tool calls before
they run (LangChain 1.x's middleware of that name)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal

from typing_extensions import NotRequired, TypedDict

from ironloop.graph import interrupt
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware.types import (
    AgentMiddleware,
    AgentState,
    PrivateStateAttr,
    ResponseT,
    ToolCallRequest,
)
from ironloop.types import Command

__all__ = [
    "Action",
    "ActionRequest",
    "ApproveDecision",
    "HITLRequest",
    "HITLResponse",
    "HumanInTheLoopMiddleware",
    "InterruptOnConfig",
    "RejectDecision",
    "RespondDecision",
    "ReviewConfig",
    "ToolApprovalRequest",
]

ALL_DECISIONS: list[Literal["approve", "edit", "reject", "respond"]] = [
    "approve",
    "edit",
    "reject",
    "respond",
]


#: The state key holding, per tool call id, the reviewer's replacement of that call:
#: ``after_model`` writes it, ``wrap_tool_call`` runs the replacement.
_EDITED_TOOL_CALLS_KEY = "hitl_edited_tool_calls"

#: Prepended (with the call that ran) to the result of a call a reviewer edited, so the
#: model does not take the result for its own call's and retry it (LangChain 1.5's).
_EDIT_NOTICE = (
    "Note: a human reviewer replaced this tool call before it ran. The call recorded in "
    "your message is the one you produced, not the one that executed. This was "
    "intentional and authorized. Do not re-issue your original call."
)


class Action(TypedDict):
    """A tool call by name and arguments: what an ``edit`` decision runs instead."""

    name: str
    args: dict[str, Any]


class ApproveDecision(TypedDict):
    """Run the call as the model wrote it."""

    type: Literal["approve"]


class RejectDecision(TypedDict):
    """Do not run the call; ``message`` (optional) tells the model why."""

    type: Literal["reject"]
    message: NotRequired[str]


class RespondDecision(TypedDict):
    """Do not run the call; ``message`` is the tool's result the model gets."""

    type: Literal["respond"]
    message: str


def _edit_args(tool: Any) -> Any:
    """What an edit's ``args`` must be: a LangChain tool's pydantic call schema (what the
    model sees: the tool validates the edit itself when it runs, so the answer is
    passed on as sent), else any object, shown with the tool's JSON Schema."""
    from pydantic import BaseModel, WithJsonSchema

    schema = getattr(tool, "tool_call_schema", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    shown = getattr(tool, "parameters", None) if tool is not None else None
    return Annotated[dict[str, Any], WithJsonSchema(shown or {"type": "object"})]


def _as_sent(answer: Any, check: Callable[[Any], Any]) -> Any:
    """``answer`` checked, then passed on as it was sent (not as parsed)."""
    check(answer)
    return answer


def _decision_schema(allowed: Sequence[str], name: str, tool: Any = None) -> Any:
    """A ``per_call`` interrupt's ``response_schema``: the decisions ``allowed`` for
    calls of ``name``, told apart by ``type`` (so a bad answer gets one error, about the
    branch it names); an edit names this tool and its args follow the tool's schema.
    One allowed decision is that decision's plain object."""
    from typing import Union

    from pydantic import Discriminator, WrapValidator, create_model

    by_type: dict[str, Any] = {
        "approve": ApproveDecision,
        "reject": RejectDecision,
        "respond": RespondDecision,
    }
    if "edit" in allowed:
        # Types made at run time: ``Any`` to the type checker.
        pinned: Any = Literal[name]  # type: ignore[valid-type]
        edit_type: Any = Literal["edit"]
        action = create_model("EditedAction", name=(pinned, ...), args=(_edit_args(tool), ...))
        edit = create_model("EditDecision", type=(edit_type, ...), edited_action=(action, ...))
        by_type["edit"] = Annotated[edit, WrapValidator(_as_sent)]
    members = tuple(by_type[d] for d in dict.fromkeys(allowed))
    if len(members) == 1:
        return members[0]
    return Annotated[Union[members], Discriminator("type")]  # noqa: UP007


class _HumanInTheLoopState(AgentState[ResponseT]):
    """The agent's state with the reviewers' edits of the current turn (private)."""

    hitl_edited_tool_calls: NotRequired[Annotated[dict[str, Action], PrivateStateAttr]]


class ActionRequest(TypedDict, total=False):
    """A pending call shown to the reviewer: ``name``, ``args`` and ``description``."""

    name: str
    args: dict[str, Any]
    description: str


class ReviewConfig(TypedDict):
    """What the reviewer may decide about calls of ``action_name``."""

    action_name: str
    allowed_decisions: list[Literal["approve", "edit", "reject", "respond"]]


class HITLRequest(TypedDict):
    """The interrupt's value: every pending call that needs review, in call order."""

    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]


class HITLResponse(TypedDict):
    """The resume value: one decision per action request, in the same order —
    ``{"type": "approve"}``, ``{"type": "edit", "edited_action": {"name": ...,
    "args": {...}}}``, ``{"type": "reject", "message": "..."}`` or ``{"type":
    "respond", "message": "..."}`` (the reviewer answers in the tool's place: the tool
    does not run and the model gets ``message`` as a successful result)."""

    decisions: list[dict[str, Any]]


class ToolApprovalRequest(TypedDict):
    """The value of a ``per_call`` interrupt: one gated call (``tool_call_id``,
    ``name``, ``args``, ``description``), answered with a single decision."""

    type: Literal["tool_approval"]
    tool_call_id: str
    name: str
    args: dict[str, Any]
    description: str


class InterruptOnConfig(TypedDict, total=False):
    """Per-tool review settings: ``allowed_decisions``, a ``description`` (a str, or
    ``fn(tool_call, state, runtime) -> str``) and ``when``, a predicate on the call's
    :class:`ToolCallRequest` (``tool=None``): ``False`` lets the call run without
    review. It runs again when the run resumes, so it must give the same answer for
    the same call (as in LangChain)."""

    allowed_decisions: list[Literal["approve", "edit", "reject", "respond"]]
    description: str | Callable[[dict[str, Any], Any, Any], str]
    when: Callable[[ToolCallRequest], bool]


#: The keys an ``interrupt_on`` config may hold.
_CONFIG_KEYS = {"allowed_decisions", "description", "args_schema", "when"}


class HumanInTheLoopMiddleware(AgentMiddleware):
    """Pauses the agent after a model answer whose tool calls need review: one
    ``interrupt`` whose value is a :class:`HITLRequest` listing every such call, resumed
    with ``Command(resume={"decisions": [...]})`` (one decision per listed call, in
    order). An approved call runs as the model wrote it. An edited one runs with the
    reviewer's name and arguments while the AI message keeps the model's own call (as
    LangChain 1.5): its result starts with ``edit_notice`` and the call that ran, so
    the model neither mistakes it for its own call's result nor re-issues that call
    (``edit_notice=None``: the result as the tool gave it). A rejected one does not run: the model gets an error
    ``ToolMessage`` carrying the reviewer's message; a ``respond`` decision answers in
    the tool's place (a successful ``ToolMessage`` with the reviewer's message, the
    tool not run). Calls of tools not in ``interrupt_on`` (or mapped to ``False``, or
    whose ``when`` predicate says no) run without review.

    Needs a checkpointer (the run is resumed from its checkpoint, in any process).

    Args:
        interrupt_on: tool name -> ``True`` (any decision), ``False`` (no review), or an
            :class:`InterruptOnConfig`.
        description_prefix: starts the default description of a call.
        edit_notice: put before the result of an edited call, or ``None``.
        interrupt_mode: ``"batched"`` (the default): one interrupt per model turn, as
            above. ``"per_call"`` (LangChain 1.4): one interrupt per gated call, whose
            value is a :class:`ToolApprovalRequest`, answered with a single decision
            (``Command(resume={"type": "approve"})``, or keyed by the interrupt's id).
            Its ``response_schema`` lists the decisions allowed for that tool (an
            edit's args follow the tool's own schema): an answer that does not fit
            raises pydantic's ``ValidationError`` and is not saved. ironloop asks
            about the calls one at a time, in call order, before any of them runs:
            the next call's interrupt appears once the previous one is answered
            (LangChain raises them all at once, as each call starts).

    Example:
        >>> hitl = HumanInTheLoopMiddleware(
        ...     interrupt_on={"write_file": {"allowed_decisions": ["approve", "reject"]}}
        ... )
        >>> hitl.interrupt_on["write_file"]["allowed_decisions"]
        ['approve', 'reject']
    """

    state_schema: Any = _HumanInTheLoopState
    _reads_hook_tools = True  # a reviewer is shown a tool's schema

    def __init__(
        self,
        interrupt_on: dict[str, bool | InterruptOnConfig],
        *,
        description_prefix: str = "Tool execution requires approval",
        edit_notice: str | None = _EDIT_NOTICE,
        interrupt_mode: Literal["batched", "per_call"] = "batched",
    ) -> None:
        if interrupt_mode not in ("batched", "per_call"):
            raise ValueError(
                f"`interrupt_mode` must be 'batched' or 'per_call', got {interrupt_mode!r}."
            )
        self.interrupt_mode = interrupt_mode
        self.edit_notice = edit_notice
        self.interrupt_on: dict[str, InterruptOnConfig] = {}
        for tool_name, cfg in interrupt_on.items():
            if cfg is False:
                continue
            if cfg is True:
                self.interrupt_on[tool_name] = {"allowed_decisions": list(ALL_DECISIONS)}
                continue
            if "when" in cfg and not callable(cfg["when"]):
                raise TypeError(
                    f"interrupt_on[{tool_name!r}]['when'] must be a function of the call's "
                    f"ToolCallRequest returning a bool; got {cfg['when']!r}"
                )
            if not isinstance(cfg, dict):
                raise TypeError(
                    f"interrupt_on[{tool_name!r}] must be True, False or a dict with "
                    f"'allowed_decisions'; got {cfg!r}"
                )
            # As LangChain 1.5: a config without allowed_decisions (a misspelt key, a
            # `when` alone) would silently gate nothing: refused, naming the tool.
            unknown = sorted(set(cfg) - _CONFIG_KEYS)
            if unknown or not cfg.get("allowed_decisions"):
                raise ValueError(
                    f"Invalid `interrupt_on` config for tool '{tool_name}': "
                    "`allowed_decisions` must be a non-empty list of decision types "
                    f"(e.g. ['approve', 'reject']). Got config with keys {sorted(cfg)}"
                    + (f" (unknown: {unknown})" if unknown else "")
                    + f" and allowed_decisions={cfg.get('allowed_decisions')!r}."
                )
            allowed = list(cfg["allowed_decisions"])
            bad = [d for d in allowed if d not in ALL_DECISIONS]
            if bad or not allowed:
                raise ValueError(
                    f"interrupt_on[{tool_name!r}]['allowed_decisions'] takes a non-empty "
                    f"list of {ALL_DECISIONS}; got {allowed}"
                )
            self.interrupt_on[tool_name] = {**cfg, "allowed_decisions": allowed}  # type: ignore[typeddict-item]
        self.description_prefix = description_prefix

    def _describe(
        self, call: dict[str, Any], cfg: InterruptOnConfig, state: Any, runtime: Any
    ) -> str:
        d = cfg.get("description")
        if callable(d):
            return str(d(call, state, runtime))
        if d is not None:
            return d
        return f"{self.description_prefix}\n\nTool: {call['name']}\nArgs: {call['args']}"

    def _wanted(self, call: dict[str, Any], state: Any, runtime: Any) -> bool:
        """Whether ``call`` needs review: its tool's ``when`` predicate, if any."""
        when = self.interrupt_on[call["name"]].get("when")
        if when is None:
            return True
        # As LangChain's: the request carries a ToolRuntime for the call (the graph
        # runtime's context, store and stream writer, the run's config).
        from ironloop._tool_call import runtime_class
        from ironloop.runtime import _run_config

        tool_runtime = runtime_class()(
            state=state,
            context=getattr(runtime, "context", None),
            config=_run_config() or {},
            stream_writer=getattr(runtime, "stream_writer", None) or (lambda _chunk: None),
            tool_call_id=call["id"],
            store=getattr(runtime, "store", None),
            execution_info=getattr(runtime, "execution_info", None),
            server_info=getattr(runtime, "server_info", None),
        )
        request = ToolCallRequest(tool_call=call, tool=None, state=state, runtime=tool_runtime)
        return bool(when(request))

    def _ask_one(self, call: dict[str, Any], state: Any, runtime: Any) -> dict[str, Any]:
        """``per_call``: the reviewer's decision about one call (its own interrupt, whose
        ``response_schema`` is the decisions allowed for it: an answer that does not fit
        raises pydantic's ``ValidationError`` and is not saved, so it can be answered
        again)."""
        if call.get("id") is None:
            raise ValueError(
                f"Tool call `{call['name']}` has no ID, so its result can't be matched to it. "
                "Make sure the chat model returns tool call IDs."
            )
        from ironloop._create_agent import hook_tools

        cfg = self.interrupt_on[call["name"]]
        value: ToolApprovalRequest = {
            "type": "tool_approval",
            "tool_call_id": call["id"],
            "name": call["name"],
            "args": call["args"],
            "description": self._describe(call, cfg, state, runtime),
        }
        schema = _decision_schema(
            cfg["allowed_decisions"], call["name"], hook_tools().get(call["name"])
        )
        return interrupt(value, response_schema=schema)  # type: ignore[no-any-return]

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        last_ai = next((m for m in reversed(messages) if m.type == "ai"), None)
        if last_ai is None or not last_ai.tool_calls:
            return None
        answered = {m.tool_call_id for m in messages if m.type == "tool"}
        calls = [dict(c) for c in last_ai.tool_calls]
        review = [
            i
            for i, c in enumerate(calls)
            if c["name"] in self.interrupt_on
            and c["id"] not in answered
            and self._wanted(c, state, runtime)
        ]
        if not review:
            # An earlier turn's edits must not apply to this turn's calls.
            return {_EDITED_TOOL_CALLS_KEY: {}} if state.get(_EDITED_TOOL_CALLS_KEY) else None
        request: HITLRequest = {
            "action_requests": [
                {
                    "name": calls[i]["name"],
                    "args": calls[i]["args"],
                    "description": self._describe(
                        calls[i], self.interrupt_on[calls[i]["name"]], state, runtime
                    ),
                }
                for i in review
            ],
            "review_configs": [
                {
                    "action_name": calls[i]["name"],
                    "allowed_decisions": self.interrupt_on[calls[i]["name"]]["allowed_decisions"],
                }
                for i in review
            ],
        }
        decisions: Any
        response: Any = None
        if self.interrupt_mode == "per_call":
            decisions = [self._ask_one(calls[i], state, runtime) for i in review]
        else:
            response = interrupt(request)
            decisions = response.get("decisions") if isinstance(response, dict) else None
        if not isinstance(decisions, list):
            raise ValueError(
                "resume a HumanInTheLoopMiddleware interrupt with "
                "Command(resume={'decisions': [...]}), one decision per action request; "
                f"got {response!r}"
            )
        if len(decisions) != len(review):
            raise ValueError(
                f"Number of human decisions ({len(decisions)}) does not match number of "
                f"hanging tool calls ({len(review)})."
            )
        answers: list[ToolMessage] = []
        edits: dict[str, Action] = {}
        for i, decision in zip(review, decisions, strict=True):
            call = calls[i]
            kind = decision.get("type") if isinstance(decision, dict) else None
            allowed = self.interrupt_on[call["name"]]["allowed_decisions"]
            if kind not in allowed:
                raise ValueError(
                    f"Unexpected human decision: {decision}. Decision type {kind!r} is not "
                    f"allowed for tool {call['name']!r}. Expected one of {allowed} based "
                    "on the tool's configuration."
                )
            if kind == "edit":
                edited = decision.get("edited_action")
                if not isinstance(edited, dict) or not isinstance(edited.get("args"), dict):
                    raise ValueError(
                        "an 'edit' decision needs edited_action={'name': ..., 'args': {...}}; "
                        f"got {decision!r}"
                    )
                edits[call["id"]] = {
                    "name": str(edited.get("name", call["name"])),
                    "args": edited["args"],
                }
            elif kind == "respond":
                message = decision.get("message")
                if not isinstance(message, str):
                    raise ValueError(
                        "a 'respond' decision needs message='...' (what the model gets "
                        f"as the tool's result); got {decision!r}"
                    )
                answers.append(_answer(call, message, "respond"))
            elif kind == "reject":
                answers.append(_answer(call, _rejection(call, decision.get("message")), "reject"))
        revised = AIMessage(
            content=last_ai.content,
            tool_calls=calls,
            id=last_ai.id,
            name=last_ai.name,
            invalid_tool_calls=[dict(c) for c in last_ai.invalid_tool_calls],
            usage_metadata=last_ai.usage_metadata,
        )
        return {"messages": [revised, *answers], _EDITED_TOOL_CALLS_KEY: edits}

    def _edited(self, request: ToolCallRequest) -> tuple[ToolCallRequest, Action | None]:
        """The request to run: the reviewer's replacement of this call, if any."""
        call_id = request.tool_call.get("id")
        state = request.state if isinstance(request.state, dict) else {}
        executed = (state.get(_EDITED_TOOL_CALLS_KEY) or {}).get(call_id) if call_id else None
        if executed is None:
            return request, None
        call = {**request.tool_call, "name": executed["name"], "args": executed["args"]}
        if executed["name"] == request.tool_call["name"]:
            return request.override(tool_call=call), executed
        tools = list(getattr(request.runtime, "tools", None) or ())
        tool = next((t for t in tools if getattr(t, "name", None) == executed["name"]), None)
        if tool is None and tools:
            names = ", ".join(sorted(t.name for t in tools))
            raise ValueError(
                f"Reviewer edited tool call {call_id!r} to {executed['name']!r}, which is "
                f"not an available tool. Available tools: {names}."
            )
        return request.override(tool_call=call, tool=tool), executed

    def _annotate(self, result: Any, request: ToolCallRequest, executed: Action | None) -> Any:
        """The result of an edited call with ``edit_notice`` (and the call that ran)
        before its content; a ``Command``'s ``ToolMessage`` for this call likewise."""
        if not self.edit_notice or executed is None:
            return result
        if isinstance(result, ToolMessage):
            return self._prepend(result, executed)
        if not isinstance(result, Command) or not isinstance(result.update, dict):
            return result
        messages = result.update.get("messages")
        if not isinstance(messages, list):
            return result
        call_id = request.tool_call.get("id")
        update = {
            **result.update,
            "messages": [
                self._prepend(m, executed)
                if isinstance(m, ToolMessage) and m.tool_call_id == call_id
                else m
                for m in messages
            ],
        }
        return dataclasses.replace(result, update=update)

    def _prepend(self, message: ToolMessage, executed: Action) -> ToolMessage:
        notice = (
            f"{self.edit_notice} Executed instead: {executed['name']} with arguments "
            f"{json.dumps(executed['args'], default=str)}."
        )
        if message.content:
            notice += "\n\nTool response:"
        content: Any
        if isinstance(message.content, str):
            if notice in message.content:
                return message
            content = f"{notice}\n{message.content}" if message.content else notice
        else:
            if any(notice in str(b) for b in message.content):
                return message
            plain = message.content and all(isinstance(b, str) for b in message.content)
            content = [notice if plain else {"type": "text", "text": notice}, *message.content]
        return message.model_copy(update={"content": content})  # type: ignore[return-value]

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[Any], Any]) -> Any:
        """Runs the reviewer's replacement of an edited call and annotates its result."""
        to_run, executed = self._edited(request)
        return self._annotate(handler(to_run), to_run, executed)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        to_run, executed = self._edited(request)
        return self._annotate(await handler(to_run), to_run, executed)


def _rejection(call: dict[str, Any], reason: Any) -> str:
    if reason:
        return f"User rejected the tool call for `{call['name']}` with reason: {reason}"
    return (
        f"User rejected the tool call for `{call['name']}` with id {call['id']}. The tool "
        "was not executed. Do not retry this tool call unless the user explicitly requests it."
    )


def _answer(call: dict[str, Any], content: str, decision: str) -> ToolMessage:
    """The reviewer's answer in the tool's place, marked (``lc_source``) as the agent
    harness's, as LangChain's ``add_notification_metadata`` marks it."""
    return ToolMessage(
        content=content,
        name=call["name"],
        tool_call_id=call["id"],
        status="success" if decision == "respond" else "error",
        additional_kwargs={
            "lc_source": "hitl_interrupt_decision",
            "lc_data": {"decision": decision},
        },
    )
