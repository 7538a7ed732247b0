"""The fixtures of LangGraph's test suite, given with ironloop's parts.

LangGraph's own ``tests/conftest.py`` builds its fixtures from LangGraph's internals
(a ``MemorySaver`` subclass that asserts immutability, ``SqliteSaver.from_conn_string``,
Redis and PostgreSQL containers); the suite runner (``scripts/upstream/suite.py``) puts
this file in its place. Each fixture keeps its name, parameters and meaning, built the
way an ironloop user builds the same thing; LangGraph names ironloop lacks are imported
through the shim and fail where a test uses them.

The selection rules (which tests are LangGraph's public API) are applied here too, at
collection: see :func:`pytest_collection_modifyitems`.
"""

from __future__ import annotations

import ast
import inspect
import os
import tempfile
import textwrap
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import selection  # scripts/upstream/selection.py, on sys.path by the runner

# Through the shim: a missing counterpart fails where it is used.
from langgraph.cache.memory import InMemoryCache
from langgraph.cache.sqlite import SqliteCache


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture()
def deterministic_uuids(mocker: Any) -> Any:
    ids = (uuid.UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    return mocker.patch("uuid.uuid4", side_effect=ids)


@pytest.fixture(params=["sync", "async", "exit"])
def durability(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="function", params=["sqlite", "memory"])
def cache(request: pytest.FixtureRequest) -> Any:
    if request.param == "sqlite":
        return SqliteCache(path=":memory:")
    return InMemoryCache()


def _sqlite_path() -> str:
    fd, path = tempfile.mkstemp(suffix=".db", prefix="lg-suite-")
    os.close(fd)
    os.unlink(path)
    return path


@contextmanager
def _saver(kind: str) -> Iterator[Any]:
    """An ironloop saver of `kind` (``memory``, or SQLite in a scratch file removed
    afterwards): what both checkpointer fixtures yield, sync or async."""
    from ironloop import MemorySaver, SqliteSaver

    if kind == "memory":
        yield MemorySaver()
        return
    path = _sqlite_path()
    try:
        with SqliteSaver(path) as saver:
            yield saver
    finally:
        for suffix in ("", "-wal", "-shm", "-runs"):
            if os.path.exists(path + suffix):
                os.unlink(path + suffix)


@pytest.fixture(scope="function", params=["memory", "sqlite"])
def sync_checkpointer(request: pytest.FixtureRequest) -> Iterator[Any]:
    with _saver(request.param) as saver:
        yield saver


@pytest.fixture(scope="function", params=["memory", "sqlite_aio"])
async def async_checkpointer(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    with _saver(request.param) as saver:
        yield saver


@pytest.fixture(scope="function", params=["in_memory"])
def sync_store(request: pytest.FixtureRequest) -> Iterator[Any]:
    from ironloop.store import InMemoryStore

    yield InMemoryStore()


@pytest.fixture(scope="function", params=["in_memory"])
async def async_store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    from ironloop.store import InMemoryStore

    yield InMemoryStore()


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: Any) -> None:
    """The savers' suites run every ``async def`` test (their pytest setting
    ``asyncio_mode = "auto"``): such a test without a marker gets anyio's, before
    anyio's own hook looks for it."""
    if inspect.iscoroutinefunction(obj) and collector.istestfunction(obj, name):
        marks = [m.name for m in getattr(obj, "pytestmark", [])]
        if "anyio" not in marks and collector.get_closest_marker("anyio") is None:
            pytest.mark.anyio(obj)


def _names_used(fn: Any) -> tuple[set[str], set[str]]:
    """The names and the attribute names a test function's body uses."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return set(), set()
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | attributes, attributes


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keeps the tests of LangGraph's public API (``selection.excluded``)."""
    keep, drop = [], []
    internal_cache: dict[str, set[str]] = {}
    for item in items:
        module = getattr(item, "module", None)
        path = getattr(module, "__file__", "") or ""
        if path not in internal_cache:
            internal_cache[path] = selection.internal_names(path)
        fn = getattr(item, "function", None)
        used, attributes = _names_used(fn) if fn is not None else (set(), set())
        reason = selection.excluded(
            item.nodeid, used, internal_cache[path], item.fixturenames, attributes
        )
        (drop if reason else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
