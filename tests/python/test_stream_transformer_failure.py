"""A ``StreamTransformer`` that raises while it processes an event (``PIIMiddleware``'s
``block``) stops a ``stream_events(version="v3")`` run there: its error reaches every
projection and the raw event log, and the graph runs no further, on both lanes."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, ClassVar, TypedDict

import pytest

from ironloop import START, StateGraph
from ironloop.stream import StreamTransformer


class S(TypedDict):
    items: Annotated[list[str], operator.add]


class Refused(Exception):
    pass


class RefuseB(StreamTransformer):
    """Refuses the first ``values`` event that shows ``"b"``."""

    required_stream_modes: ClassVar[tuple[str, ...]] = ("values",)

    def init(self) -> dict[str, Any]:
        return {}

    def process(self, event: Any) -> bool:
        if event["method"] == "values" and "b" in (event["params"]["data"] or {}).get("items", []):
            raise Refused("b is not to be shown")
        return True


def _graph(ran: list[str]) -> Any:
    def step(name: str) -> Any:
        def node(state: S) -> dict[str, Any]:
            ran.append(name)
            return {"items": [name]}

        return node

    g = StateGraph(S)
    for name in ("a", "b", "c", "d"):
        g.add_node(name, step(name))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", "d")
    return g.compile(transformers=[RefuseB])


def test_sync_run_stops_and_every_projection_fails() -> None:
    ran: list[str] = []
    run = _graph(ran).stream_events({"items": []}, version="v3")
    with pytest.raises(Refused):
        list(run.values)
    with pytest.raises(Refused):
        list(run)
    with pytest.raises(Refused):
        _ = run.output
    assert "d" not in ran  # the graph was stopped, not run to its end


def test_async_run_stops_with_the_transformers_error() -> None:
    ran: list[str] = []
    g = StateGraph(S)

    async def slow(state: S) -> dict[str, Any]:
        await asyncio.sleep(0.5)  # still running when "b" is refused: it is cancelled
        ran.append("c")
        return {"items": ["c"]}

    g.add_node("a", lambda s: {"items": ["a"]}).add_node("b", lambda s: {"items": ["b"]})
    g.add_node("c", slow).add_edge(START, "a").add_edge("a", "b").add_edge("b", "c")
    graph = g.compile(transformers=[RefuseB])

    async def main() -> None:
        run = await graph.astream_events({"items": []}, version="v3")
        with pytest.raises(Refused):
            _ = [v async for v in run.values]
        with pytest.raises(Refused):
            await run.output()
        await asyncio.sleep(0.7)  # "c" would have ended by now had it not been stopped

    asyncio.run(main())
    assert ran == []
