"""Many callers on one compiled graph: 64 OS threads calling ``invoke`` (one
``SqliteSaver`` file, a thread id each), 1,000 concurrent ``ainvoke`` tasks, and sync
and async callers mixed. Every result is checked against its own input and its saved
checkpoint; every test has a hard time limit, so a deadlock fails instead of hanging."""

from __future__ import annotations

import asyncio
import operator
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

from ironloop import SqliteSaver, StateGraph
from ironloop.graph import END, START

LIMIT = 120.0  # seconds; the runs take a few


class S(TypedDict):
    n: int
    trail: Annotated[list, operator.add]


def build(saver: Any) -> Any:
    def double(s: S) -> dict[str, Any]:
        return {"n": s["n"] * 2, "trail": ["double"]}

    async def inc(s: S) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"n": s["n"] + 1, "trail": ["inc"]}

    g = StateGraph(S)
    g.add_node("double", double)
    g.add_node("inc", inc)
    g.add_edge(START, "double")
    g.add_edge("double", "inc")
    g.add_edge("inc", END)
    return g.compile(checkpointer=saver)


def expect(i: int) -> dict[str, Any]:
    return {"n": i * 2 + 1, "trail": ["double", "inc"]}


def cfg(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def run_threads(target: Any, count: int) -> list[Any]:
    errors: list[Any] = []

    def wrapped(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # reported below, with its index
            errors.append((i, e))

    threads = [threading.Thread(target=wrapped, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LIMIT)
        assert not t.is_alive(), "a caller hung (deadlock?)"
    return errors


def test_64_threads_invoke_one_graph_on_one_sqlite_saver(tmp_path: Path) -> None:
    saver = SqliteSaver.from_conn_string(str(tmp_path / "s.db"))
    graph = build(saver)
    results: dict[int, Any] = {}

    def one(i: int) -> None:
        for round_ in range(5):
            results[i * 10 + round_] = graph.invoke(
                {"n": i + round_, "trail": []}, cfg(f"t{i}-{round_}")
            )

    assert run_threads(one, 64) == []
    assert len(results) == 320
    for key, out in results.items():
        i, round_ = divmod(key, 10)
        assert out == expect(i + round_)
        assert graph.get_state(cfg(f"t{i}-{round_}")).values == expect(i + round_)


def test_1000_concurrent_ainvoke(tmp_path: Path) -> None:
    saver = SqliteSaver.from_conn_string(str(tmp_path / "s.db"))
    graph = build(saver)

    async def main() -> list[Any]:
        calls = [graph.ainvoke({"n": i, "trail": []}, cfg(f"a{i}")) for i in range(1000)]
        return await asyncio.wait_for(asyncio.gather(*calls), LIMIT)

    outs = asyncio.run(main())
    assert outs == [expect(i) for i in range(1000)]
    assert graph.get_state(cfg("a999")).values == expect(999)


def test_sync_and_async_callers_mixed(tmp_path: Path) -> None:
    saver = SqliteSaver.from_conn_string(str(tmp_path / "s.db"))
    graph = build(saver)
    got: dict[str, Any] = {}

    def caller(i: int) -> None:
        if i % 2:
            got[f"s{i}"] = graph.invoke({"n": i, "trail": []}, cfg(f"s{i}"))
            return

        async def many() -> list[Any]:
            return await asyncio.gather(
                *(graph.ainvoke({"n": i + k, "trail": []}, cfg(f"m{i}-{k}")) for k in range(20))
            )

        for k, out in enumerate(asyncio.run(many())):
            got[f"m{i}-{k}"] = (i + k, out)

    assert run_threads(caller, 16) == []
    for key, out in got.items():
        if key.startswith("s"):
            assert out == expect(int(key[1:]))
        else:
            n, res = out
            assert res == expect(n)
    assert len(got) == 8 + 8 * 20
