"""LangGraph's checkpointer conformance suite (``langgraph-checkpoint-conformance``,
pinned in requirements-dev.txt) against ironloop's three savers: every capability it
knows (put, put_writes, get_tuple, list, delete_thread, copy_thread, delete_for_runs,
prune) must be detected and pass all of its tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from pg_support import new_saver, temp_schema

from ironloop import MemorySaver, SqliteSaver


def _factories(tmp_path: Path) -> dict[str, Callable[[], AsyncIterator[Any]]]:
    async def memory() -> AsyncIterator[Any]:
        yield MemorySaver()

    async def sqlite() -> AsyncIterator[Any]:
        # A fresh file per capability suite, as the suite asks of a factory.
        n = len(list(tmp_path.glob("*.db")))
        with SqliteSaver(str(tmp_path / f"c{n}.db")) as saver:
            yield saver

    async def postgres() -> AsyncIterator[Any]:
        with temp_schema() as schema, new_saver(schema) as saver:
            yield saver

    return {"memory": memory, "sqlite": sqlite, "postgres": postgres}


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_conformance_suite_passes_in_full(kind: str, tmp_path: Path) -> None:
    registered = checkpointer_test(name=f"ironloop-{kind}")(_factories(tmp_path)[kind])
    report = asyncio.run(validate(registered))
    report.print_report()
    results = report.results
    assert {c.value for c in ALL_CAPABILITIES} == {
        name for name, r in results.items() if r.detected
    }, "every capability is detected"
    failures = {name: r.failures for name, r in results.items() if r.failures}
    assert failures == {}
    passed = sum(r.tests_passed for r in results.values())
    print(f"{kind}: {passed} conformance tests passed")
    assert passed == 81  # the suite's tests in version 0.0.2
