"""LangChain 1.x's ``langchain.agents`` import paths: ``create_agent``, ``AgentState``
and ``structured_output`` (the ``response_format`` strategies), so that an agent
ports by changing ``langchain`` to ``ironloop`` in its imports."""

from ironloop._create_agent import create_agent
from ironloop.middleware.types import AgentState

__all__ = ["AgentState", "create_agent"]
