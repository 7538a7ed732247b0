"""``HumanInTheLoopMiddleware``: a person approves, edits or rejects tool calls before
they run (LangChain 1.x's middleware of that name)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypedDict

from ironloop.graph import interrupt
from ironloop.messages import AIMessage, ToolMessage
from ironloop.middleware.types import AgentMiddleware, ToolCallRequest

__all__ = [
    "ActionRequest",
    "HITLRequest",
    "HITLResponse",
    "HumanInTheLoopMiddleware",
    "InterruptOnConfig",
    "ReviewConfig",
    "ToolApprovalRequest",
]

ALL_DECISIONS: list[Literal["approve", "edit", "reject", "respond"]] = [
    "approve",
    "edit",
    "reject",
    "respond",
]


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
    order). An approved call runs as the model wrote it, an edited one runs with the
    reviewer's name and arguments, a rejected one does not run: the model gets an error
    ``ToolMessage`` carrying the reviewer's message; a ``respond`` decision answers in
    the tool's place (a successful ``ToolMessage`` with the reviewer's message, the
    tool not run). Calls of tools not in ``interrupt_on`` (or mapped to ``False``, or
    whose ``when`` predicate says no) run without review.

    Needs a checkpointer (the run is resumed from its checkpoint, in any process).

    Args:
        interrupt_on: tool name -> ``True`` (any decision), ``False`` (no review), or an
            :class:`InterruptOnConfig`.
        description_prefix: starts the default description of a call.
        interrupt_mode: ``"batched"`` (the default): one interrupt per model turn, as
            above. ``"per_call"`` (LangChain 1.4): one interrupt per gated call, whose
            value is a :class:`ToolApprovalRequest`, answered with a single decision
            (``Command(resume={"type": "approve"})``, or keyed by the interrupt's id).
            ironloop asks about the calls one at a time, in call order, before any of
            them runs: the next call's interrupt appears once the previous one is
            answered (LangChain raises them all at once, as each call starts).

    Example:
        >>> hitl = HumanInTheLoopMiddleware(
        ...     interrupt_on={"write_file": {"allowed_decisions": ["approve", "reject"]}}
        ... )
        >>> hitl.interrupt_on["write_file"]["allowed_decisions"]
        ['approve', 'reject']
    """

    def __init__(
        self,
        interrupt_on: dict[str, bool | InterruptOnConfig],
        *,
        description_prefix: str = "Tool execution requires approval",
        interrupt_mode: Literal["batched", "per_call"] = "batched",
    ) -> None:
        if interrupt_mode not in ("batched", "per_call"):
            raise ValueError(
                f"`interrupt_mode` must be 'batched' or 'per_call', got {interrupt_mode!r}."
            )
        self.interrupt_mode = interrupt_mode
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
        return bool(when(ToolCallRequest(tool_call=call, tool=None, state=state, runtime=runtime)))

    def _ask_one(self, call: dict[str, Any], state: Any, runtime: Any) -> dict[str, Any]:
        """``per_call``: the reviewer's decision about one call (its own interrupt)."""
        cfg = self.interrupt_on[call["name"]]
        value: ToolApprovalRequest = {
            "type": "tool_approval",
            "tool_call_id": call["id"],
            "name": call["name"],
            "args": call["args"],
            "description": self._describe(call, cfg, state, runtime),
        }
        decision = interrupt(value)
        if not isinstance(decision, dict) or "type" not in decision:
            raise ValueError(
                "resume a per_call HumanInTheLoopMiddleware interrupt with one decision, "
                "e.g. Command(resume={'type': 'approve'}) (or keyed by the interrupt's "
                f"id); got {decision!r}"
            )
        if decision["type"] == "edit":
            edited = decision.get("edited_action")
            if isinstance(edited, dict) and edited.get("name", call["name"]) != call["name"]:
                raise ValueError(
                    f"a per_call edit cannot switch tools: the call is {call['name']!r}, "
                    f"the edit names {edited.get('name')!r}"
                )
        return decision

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
            return None
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
                calls[i] = {
                    **call,
                    "name": edited.get("name", call["name"]),
                    "args": edited["args"],
                }
            elif kind == "respond":
                message = decision.get("message")
                if not isinstance(message, str):
                    raise ValueError(
                        "a 'respond' decision needs message='...' (what the model gets "
                        f"as the tool's result); got {decision!r}"
                    )
                answers.append(
                    ToolMessage(
                        content=message,
                        name=call["name"],
                        tool_call_id=call["id"],
                        status="success",
                    )
                )
            elif kind == "reject":
                reason = decision.get("message")
                content = (
                    f"User rejected the tool call for `{call['name']}` with reason: {reason}"
                    if reason
                    else f"User rejected the tool call for `{call['name']}` with id "
                    f"{call['id']}. The tool was not executed. Do not retry this tool call "
                    "unless the user explicitly requests it."
                )
                answers.append(
                    ToolMessage(
                        content=content,
                        name=call["name"],
                        tool_call_id=call["id"],
                        status="error",
                    )
                )
        revised = AIMessage(
            content=last_ai.content,
            tool_calls=calls,
            id=last_ai.id,
            name=last_ai.name,
            invalid_tool_calls=[dict(c) for c in last_ai.invalid_tool_calls],
            usage_metadata=last_ai.usage_metadata,
        )
        return {"messages": [revised, *answers]}
