"""The fixtures of langgraph-checkpoint-postgres's test suite, given with ironloop's parts.

Its own ``tests/conftest.py`` points at a PostgreSQL container on a fixed port
(``localhost:5441``) and empties LangGraph's tables in its default database before
each test. The suite runner (``scripts/upstream/suite.py``) puts this file in its
place: the server is the one with pgvector that ``scripts/pgvector.sh`` gives
(``IRONLOOP_TEST_PGVECTOR_URL``, as LangGraph's own CI runs them on pgvector's image; the
runner starts one when it is unset), else ``IRONLOOP_TEST_POSTGRES_URL`` (one without:
the store then searches in Rust), and the emptying is left out, since every
store fixture of the selected files creates a database of its own and drops it after.
The names the test files import from ``tests.conftest`` keep their meaning; the
LangGraph suites' fixtures and selection rules come from ``conftest_langgraph.py``.
"""

from __future__ import annotations

import os

import pytest
from conftest_langgraph import (  # noqa: F401  (pytest reads hooks and fixtures by name)
    anyio_backend,
    pytest_collection_modifyitems,
    pytest_pycollect_makeitem,
)
from tests.embed_test_utils import CharacterEmbeddings

_URL = os.environ.get("IRONLOOP_TEST_PGVECTOR_URL") or os.environ.get("IRONLOOP_TEST_POSTGRES_URL")
if not _URL:
    raise RuntimeError(
        "langgraph-checkpoint-postgres's suite needs a PostgreSQL server: run it through "
        "scripts/upstream/suite.py (which starts one), or `source scripts/pgvector.sh` first"
    )

#: The server's default database, as the suite's URI names it (the fixtures replace the
#: last path part with a database of their own).
DEFAULT_URI = _URL.split("?", 1)[0].rstrip("/")
DEFAULT_POSTGRES_URI = DEFAULT_URI.rsplit("/", 1)[0] + "/"

VECTOR_TYPES = ["vector", "halfvec"]

__all__ = ["DEFAULT_POSTGRES_URI", "DEFAULT_URI", "VECTOR_TYPES", "CharacterEmbeddings"]


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    return CharacterEmbeddings(dims=500)
