"""One retry schedule (the core's ``_ironloop._Backoff``) behind node ``RetryPolicy``s
and ``ToolRetryMiddleware`` / ``ModelRetryMiddleware``: each keeps the waits its
upstream API promises (LangGraph's ``+ uniform(0, 1)``, LangChain's ±25%), and the
numbers are checked once, in the core."""

from __future__ import annotations

import random
from typing import Any, TypedDict
from unittest.mock import patch

import pytest

from ironloop._ironloop import _Backoff
from ironloop.errors import InvalidArgumentError
from ironloop.graph import END, START, StateGraph
from ironloop.middleware import ModelRetryMiddleware, ToolRetryMiddleware
from ironloop.types import RetryPolicy


def test_schedule_grows_caps_and_stops() -> None:
    b = _Backoff(0.5, 2.0, 3.0, 4, "none")
    assert [b.wait(n, 0.9) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, None]
    assert _Backoff(0.5, 0.0, 3.0, 2, "none").wait(1, 0.0) == 0.5  # factor 0: constant
    assert _Backoff(0.5, 2.0, 3.0, 2, "up_to_one_second").wait(0, 0.25) == 0.75
    assert _Backoff(1.0, 2.0, 60.0, 2, "quarter").wait(0, 0.0) == 0.75
    assert _Backoff(1.0, 2.0, 60.0, 2, "quarter").wait(0, 1.0) == 1.25
    assert _Backoff(1.0, 2.0, 60.0, 2, "equal").wait(1, 0.0) == 1.0
    assert _Backoff(1.0, 2.0, 60.0, 0, "none").wait(0, 0.0) is None


def test_numbers_are_checked_once_in_the_core_by_the_callers_names() -> None:
    with pytest.raises(InvalidArgumentError, match=r"initial_delay must be >= 0 \(got -1\)"):
        ModelRetryMiddleware(initial_delay=-1)
    with pytest.raises(ValueError, match="max_retries must be >= 0"):
        ToolRetryMiddleware(max_retries=-1)
    with pytest.raises(TypeError, match="max_retries must be an int >= 0, got True"):
        ToolRetryMiddleware(max_retries=True)
    with pytest.raises(InvalidArgumentError, match="max_interval must be >= 0"):
        StateGraph(dict).add_node("n", lambda s: s, retry_policy=RetryPolicy(max_interval=-1))
    with pytest.raises(TypeError, match="jitter must be"):
        _Backoff(1.0, 2.0, 3.0, 1, "wild")


class S(TypedDict):
    n: int


def _flaky(failures: int) -> Any:
    calls = {"n": 0}

    def node(state: S) -> S:
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ConnectionError(f"down {calls['n']}")
        return {"n": state["n"] + 1}

    return node, calls


def test_node_retry_waits_langgraphs_schedule_with_its_jitter_draw() -> None:
    node, calls = _flaky(3)
    policy = RetryPolicy(initial_interval=0.01, backoff_factor=3.0, max_attempts=4)
    g = StateGraph(S)
    g.add_node("n", node, retry_policy=policy)
    g.add_edge(START, "n")
    g.add_edge("n", END)
    with (
        patch("random.uniform", return_value=0.5) as draw,
        patch("time.sleep") as sleep,
    ):
        assert g.compile().invoke({"n": 1}) == {"n": 2}
    draw.assert_called_with(0, 1)
    assert [c.args[0] for c in sleep.call_args_list] == pytest.approx([0.51, 0.53, 0.59])
    assert calls["n"] == 4


def test_node_retry_gives_up_after_max_attempts() -> None:
    node, calls = _flaky(5)
    g = StateGraph(S)
    g.add_node("n", node, retry_policy=RetryPolicy(initial_interval=0, max_attempts=2))
    g.add_edge(START, "n")
    g.add_edge("n", END)
    with patch("time.sleep"), pytest.raises(ConnectionError, match="down 2"):
        g.compile().invoke({"n": 1})
    assert calls["n"] == 2


def test_middleware_waits_langchains_schedule() -> None:
    mw = ToolRetryMiddleware(max_retries=3, initial_delay=1.0, backoff_factor=2.0, max_delay=3.0)
    attempts = {"n": 0}

    def handler(_: Any) -> str:
        attempts["n"] += 1
        if attempts["n"] < 4:
            raise RuntimeError("flaky")
        return "ok"

    with patch("time.sleep") as sleep, patch.object(random, "random", return_value=0.5):
        assert mw._policy.run(lambda: handler(None)) == "ok"
    # ±25% around 1, 2, 3 (capped); a draw of 0.5 is the middle.
    assert [c.args[0] for c in sleep.call_args_list] == [1.0, 2.0, 3.0]
    jittered = [mw._policy.schedule.wait(0, random.random()) for _ in range(50)]
    assert all(0.75 <= w <= 1.25 for w in jittered if w is not None)
