"""LangGraph's ``events`` stream mode (``astream_events`` v2's shape): the view lives
in ``ironloop._events``, shared with ``CompiledStateGraph.astream_events``."""

from __future__ import annotations

from ironloop._events import EventsView

__all__ = ["SOURCES", "EventsView"]

#: The engine's stream modes the server's view is made from (its ``updates`` chunks
#: are published as they are, not as events).
SOURCES = ("tasks", "messages", "values")
