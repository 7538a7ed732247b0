"""``ModelRouterMiddleware`` (LangChain 1.5's, beta): before a run, a decision model
(langchain-core's ``BaseDecisionModel``) picks one of the named models for the latest
user message; the run's model calls all go to that model, and the full answer
(choice, probabilities, confidence) is kept in the state as ``model_route``. Needs
langchain-core (its decision models)."""

# No ``from __future__ import annotations``: ``ModelChoice``'s fields are read by
# pydantic, which needs them as types even where the module is not in ``sys.modules``
# (``runpy.run_path`` of it, as LangChain's tests do).
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import NotRequired

from ironloop.messages import HumanMessage
from ironloop.middleware._hook_bases import RequestRewriter
from ironloop.middleware.types import AgentState, ModelRequest
from ironloop.models import init_model
from ironloop.types import TracePolicy, omit_payload

__all__ = ["ModelChoice", "ModelRouterMiddleware"]

_QUESTION_ID = "model_route"


@dataclass(frozen=True)
class ModelChoice:
    """A model the router may pick (a model, or a ``"provider:model"`` string) and
    what it is for (``criteria``, shown to the classifier)."""

    model: Any
    criteria: Any


class _ModelRouterState(AgentState):
    """The agent's state with the routing answer."""

    model_route: NotRequired[Any]


@functools.cache
def _config_model() -> Any:
    """The configuration's validator (pydantic, as LangChain's: at least one choice),
    built on first use (pydantic and langchain-core load only then)."""
    from langchain_core.decisions import Content
    from pydantic import ConfigDict, Field, create_model

    # Built from the types themselves (not annotations read back as strings), so it is
    # complete wherever this module was loaded from.
    return create_model(  # type: ignore[call-overload]
        "_ModelRouterConfig",
        __config__=ConfigDict(arbitrary_types_allowed=True),
        choices=(dict[str, ModelChoice], Field(min_length=1)),
        instructions=(Content, ...),
    )


def _routing_questions(config: Any) -> dict[str, Any]:
    """The one question the classifier answers: which route, by each one's criteria."""
    from langchain_core.decisions import Choice

    return {
        _QUESTION_ID: Choice(
            instructions=config.instructions,
            criteria={route: choice.criteria for route, choice in config.choices.items()},
        )
    }


#: Whether this module's class has said it is in beta (once, as LangChain's ``@beta``).
_BETA_WARNED = False


def _warn_beta_once() -> None:
    """LangChain's beta notice (a ``LangChainBetaWarning``), on the first instance only:
    the class is in beta in LangChain 1.5, and a program may filter on the warning."""
    global _BETA_WARNED
    if _BETA_WARNED:
        return
    _BETA_WARNED = True
    from langchain_core._api.beta_decorator import warn_beta

    warn_beta(
        message="The middleware `ModelRouterMiddleware` is in beta. It is actively being "
        "worked on, so the API may change."
    )


class ModelRouterMiddleware(RequestRewriter):
    """Routes a run's model calls to the model a classifier picks.

    ``choices`` names the models (``ModelChoice``), ``instructions`` tells the
    ``classifier`` (a langchain-core ``BaseDecisionModel``) how to choose. The latest
    human message is classified once, before the run (a run without one is a
    ``ValueError``); a classifier failure ends the run. An empty ``choices`` is a
    pydantic ``ValidationError``.

    Example:
        >>> ModelChoice(model="openai:gpt-4o-mini", criteria="Simple tasks.").criteria
        'Simple tasks.'
    """

    state_schema: Any = _ModelRouterState
    #: Its hook's trace omits its input (the conversation the classifier reads).
    trace_policy = TracePolicy(process_inputs=omit_payload)

    def __init__(
        self, *, choices: Mapping[str, ModelChoice], instructions: Any, classifier: Any
    ) -> None:
        _warn_beta_once()
        self.config = _config_model().model_validate(
            {"choices": dict(choices), "instructions": instructions}
        )
        self.models = {
            route: init_model(c.model) if isinstance(c.model, str) else c.model
            for route, c in self.config.choices.items()
        }
        self.classifier = classifier

    @staticmethod
    def _latest_human_message(state: Any) -> Any:
        for message in reversed(state["messages"]):
            if isinstance(message, HumanMessage):
                return message
        raise ValueError(
            "ModelRouterMiddleware requires a HumanMessage in the agent state to route on."
        )

    def _question(self, state: Any) -> dict[str, Any]:
        return {
            "state": self._latest_human_message(state),
            "questions": _routing_questions(self.config),
        }

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        response = self.classifier.invoke(self._question(state))
        return {"model_route": response.choices[_QUESTION_ID]}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        response = await self.classifier.ainvoke(self._question(state))
        return {"model_route": response.choices[_QUESTION_ID]}

    def _rewrite(self, request: ModelRequest) -> ModelRequest:
        return request.override(model=self.models[request.state["model_route"].choice])
