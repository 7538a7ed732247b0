"""The fixtures of LangChain's agent tests, given with ironloop's parts.

LangChain 1.5.2's ``tests/unit_tests/agents/conftest.py`` builds its savers from
LangGraph internals (an ``InMemorySaver`` subclass that asserts immutability; its
SQLite and PostgreSQL fixtures fall back to it); the suite runner
(``scripts/upstream/suite.py``) puts this file in its place. Each fixture keeps its
name and meaning, with the parameters LangChain's default (``LANGGRAPH_TEST_FAST``)
run uses: the in-memory saver and store, built the way an ironloop user builds them.

The selection rules (which tests are LangChain's public API) are applied at
collection, by the hook shared with LangGraph's suites; LangChain's ``requires``
marker (skip when a named package is not installed) is kept from its unit-test
conftest, which the runner drops.
"""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import conftest_langgraph  # the selection hook and the saver of LangGraph's suites
import pytest
from conftest_langgraph import _saver


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keeps LangChain's public-API tests; skips a ``requires("pkg")`` test when the
    package is not installed, as LangChain's own conftest does."""
    conftest_langgraph.pytest_collection_modifyitems(config, items)
    for item in items:
        marker = item.get_closest_marker("requires")
        missing = [p for p in marker.args if importlib.util.find_spec(p) is None] if marker else []
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"Requires pkg: `{missing[0]}`"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def deterministic_uuids(mocker: Any) -> Any:
    ids = (uuid.UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    return mocker.patch("uuid.uuid4", side_effect=ids)


@pytest.fixture(params=["in_memory"])
def sync_store(request: pytest.FixtureRequest) -> Iterator[Any]:
    from ironloop.store import InMemoryStore

    yield InMemoryStore()


@pytest.fixture(params=["in_memory"])
async def async_store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    from ironloop.store import InMemoryStore

    yield InMemoryStore()


@pytest.fixture(params=["memory"])
def sync_checkpointer(request: pytest.FixtureRequest) -> Iterator[Any]:
    with _saver(request.param) as saver:
        yield saver


@pytest.fixture(params=["memory"])
async def async_checkpointer(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    with _saver(request.param) as saver:
        yield saver
