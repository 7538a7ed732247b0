"""``debug=True`` and ``print_mode=`` as LangGraph 1.2's: the run prints its chunks of
the printed modes (``debug``: ``updates`` and ``values``) as ``[mode] repr(chunk)``
and returns what it returns without them."""

from __future__ import annotations

import asyncio
import re
from typing import TypedDict

import pytest

from ironloop.graph import END, START, StateGraph
from ironloop.types import interrupt

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class S(TypedDict):
    n: int


def _graph(debug: bool = False, pause: bool = False):  # type: ignore[no-untyped-def]
    def add(state: S) -> S:
        if pause:
            interrupt("ok?")
        return {"n": state["n"] + 1}

    g = StateGraph(S)
    g.add_node("add", add)
    g.add_edge(START, "add")
    g.add_edge("add", END)
    if pause:
        from ironloop.checkpoint import InMemorySaver

        return g.compile(checkpointer=InMemorySaver(), debug=debug)
    return g.compile(debug=debug)


def _printed(out: str) -> list[str]:
    return _ANSI.sub("", out).splitlines()


def test_invoke_debug_prints_updates_and_values(capsys: pytest.CaptureFixture[str]) -> None:
    assert _graph().invoke({"n": 1}, debug=True) == {"n": 2}
    assert _printed(capsys.readouterr().out) == [
        "[values] {'n': 1}",
        "[updates] {'add': {'n': 2}}",
        "[values] {'n': 2}",
    ]
    assert _graph().invoke({"n": 1}) == {"n": 2}
    assert capsys.readouterr().out == ""


def test_compiled_debug_prints_and_a_runs_debug_false_wins(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = _graph(debug=True)
    assert app.debug is True
    assert list(app.stream({"n": 1})) == [{"add": {"n": 2}}]
    assert "[values] {'n': 2}" in _printed(capsys.readouterr().out)
    assert app.invoke({"n": 1}, debug=False) == {"n": 2}
    assert capsys.readouterr().out == ""


def test_print_mode_prints_without_streaming_it(capsys: pytest.CaptureFixture[str]) -> None:
    chunks = list(_graph().stream({"n": 1}, stream_mode="values", print_mode="updates"))
    assert chunks == [{"n": 1}, {"n": 2}]
    assert _printed(capsys.readouterr().out) == ["[updates] {'add': {'n': 2}}"]


def test_debug_invoke_keeps_the_pause_and_v2(capsys: pytest.CaptureFixture[str]) -> None:
    app = _graph(pause=True)
    config = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"n": 1}, config, debug=True)
    assert out["n"] == 1 and out["__interrupt__"][0].value == "ok?"
    printed = _printed(capsys.readouterr().out)
    assert printed[0] == "[values] {'n': 1}"
    assert printed[1].startswith("[updates] {'__interrupt__': (Interrupt(value='ok?'")
    v2 = _graph().invoke({"n": 1}, debug=True, version="v2")
    assert (v2.value, v2.interrupts) == ({"n": 2}, ())


def test_ainvoke_debug_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert asyncio.run(_graph().ainvoke({"n": 1}, debug=True)) == {"n": 2}
    assert _printed(capsys.readouterr().out)[-1] == "[values] {'n': 2}"
