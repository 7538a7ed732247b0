"""``AgentStatePydantic``: the ReAct agent's state as a pydantic model. Imported on first
use of the name (``ironloop.prebuilt`` stays importable without pydantic)."""

from __future__ import annotations

from typing import Annotated, Any

import pydantic

from ironloop._ironloop import add_messages
from ironloop.messages import AnyMessage

__all__ = ["AgentStatePydantic", "AgentStateWithStructuredResponsePydantic"]


class AgentStatePydantic(pydantic.BaseModel):
    """The state of a ReAct agent as a pydantic model (LangGraph's
    ``AgentStatePydantic``): its conversation, and ``remaining_steps`` for schemas
    ported from LangGraph (ironloop does not fill it).

    Example:
        >>> class State(AgentStatePydantic):
        ...     topic: str = ""
        >>> sorted(State.model_fields)
        ['messages', 'remaining_steps', 'topic']
    """

    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)

    messages: Annotated[list[AnyMessage], add_messages]
    remaining_steps: int = 25


class AgentStateWithStructuredResponsePydantic(AgentStatePydantic):
    """``AgentStatePydantic`` with the agent's ``structured_response``."""

    structured_response: Any = None
