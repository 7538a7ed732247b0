"""A run's options (LangGraph's run keywords) as one typed object, checked once in the
core: breakpoints given to a run, durability and stream modes refused with the names
they could have been, and nothing of ironloop's own in the config its nodes see."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from graph_support import LogS, abc_graph, thread_config

from ironloop import START, StateGraph
from ironloop._ironloop import _DEBUG_VIEWS, _DURABILITIES, _STREAM_MODES, _RunOptions

_abc = abc_graph


@pytest.mark.parametrize("how", ["invoke", "ainvoke", "stream", "astream"])
def test_a_runs_interrupt_before_pauses_it_and_the_next_run_goes_on(how: str) -> None:
    app, cfg = _abc(), thread_config()
    kw: dict[str, Any] = {"interrupt_before": ["b"]}
    if how == "invoke":
        app.invoke({"log": []}, cfg, **kw)
    elif how == "ainvoke":
        asyncio.run(app.ainvoke({"log": []}, cfg, **kw))
    elif how == "stream":
        assert list(app.stream({"log": []}, cfg, **kw))[-1] == {"__interrupt__": ()}
    else:

        async def consume() -> list[Any]:
            return [c async for c in app.astream({"log": []}, cfg, **kw)]

        assert asyncio.run(consume())[-1] == {"__interrupt__": ()}
    assert app.get_state(cfg).next == ("b",)
    # The breakpoint was the run's own: the next run does not stop there.
    assert app.invoke(None, cfg)["log"] == ["a", "b", "c"]


def test_a_runs_breakpoints_replace_the_compiled_ones_as_in_langgraph() -> None:
    app, cfg = _abc(interrupt_before=["b"]), thread_config()
    assert app.invoke({"log": []}, cfg, interrupt_after="*")["log"] == ["a"]
    assert app.get_state(cfg).next == ("b",)
    # Without breakpoints of its own, a run stops at the compiled ones (the pause
    # before `b` is already behind it: continuing runs `b`).
    assert app.invoke(None, cfg, interrupt_after=["c"])["log"] == ["a", "b", "c"]
    app2, cfg2 = _abc(interrupt_before=["b"]), thread_config("2")
    assert app2.invoke({"log": []}, cfg2, interrupt_before=[])["log"] == ["a"]
    assert app2.get_state(cfg2).next == ("b",)


def test_an_unknown_breakpoint_fails_the_call_naming_the_nodes() -> None:
    app = _abc()
    with pytest.raises(ValueError, match=r"interrupt node `bb` not found.*a, b, c"):
        app.invoke({"log": []}, thread_config(), interrupt_before=["bb"])
    with pytest.raises(ValueError, match="interrupt node `x` not found"):
        list(app.stream({"log": []}, thread_config(), interrupt_after="x"))


def test_options_are_checked_when_made_with_the_names_they_could_have_been() -> None:
    with pytest.raises(ValueError, match="durability must be 'sync', 'async' or 'exit', got"):
        _RunOptions(durability="later")
    with pytest.raises(ValueError, match=r'unknown stream_mode "value": use values, '):
        _RunOptions(stream_mode=["value"])
    with pytest.raises(TypeError, match="stream_mode must be a name or a list of names"):
        _RunOptions(stream_mode=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tasks or checkpoints"):
        list(_abc().stream({"log": []}, thread_config(), stream_mode="valuez"))


def test_the_core_names_the_durabilities_and_stream_modes() -> None:
    assert _DURABILITIES == ("sync", "async", "exit")
    assert set(_STREAM_MODES) == {"values", "updates", "custom", "messages", "debug", "tools"}
    assert _DEBUG_VIEWS == ("tasks", "checkpoints")


def test_a_nodes_config_carries_langgraphs_durability_key_only_when_given() -> None:
    seen: list[dict[str, Any]] = []

    def node(state: LogS, config: Any) -> LogS:
        seen.append(dict(config.get("configurable") or {}))
        return {"log": ["n"]}

    app = StateGraph(LogS).add_node("n", node).add_edge(START, "n").compile()
    app.invoke({"log": []})
    app.invoke({"log": []}, durability="exit")
    assert "__pregel_durability" not in seen[0]
    assert seen[1]["__pregel_durability"] == "exit"
    assert [k for k in seen[1] if k.startswith("__") and k != "__pregel_durability"] == []
