"""``astream_events`` (``version="v2"``) of an entrypoint, as LangGraph makes them:
from the LangChain callback runs of the run, which langchain-core's event handler
turns into events (it is put on the run's callbacks, and the run streams its updates
through it). An entrypoint's run opens LangGraph's runs (``_callbacks``): the root
``LangGraph``, the entrypoint's (``graph:step:N``) and each ``@task`` call's
(``seq:step:1``), each streaming what it returned; so the events, their order, tags,
metadata and ``parent_ids`` are LangGraph's. A graph's events are made from the
engine's streams instead (``_events.EventsView``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any


def callback_events(
    graph: Any, input: Any, config: Any, kwargs: dict[str, Any]
) -> AsyncIterator[Any] | None:
    """The events of a run of ``graph`` (an entrypoint: its ``astream`` takes
    ``kwargs``, less the events' filters ``include_names`` ...), or ``None`` without
    langchain-core (the engine's streams then make them)."""
    try:
        from langchain_core.tracers.event_stream import _astream_events_implementation_v2
    except ImportError:
        return None
    return _astream_events_implementation_v2(graph, input, config, **kwargs)
