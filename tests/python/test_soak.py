"""The soak's short version (``tests/python/soak.py`` at 5 % of its counts): 5,000
agent rounds with each saver, 50,000 tool calls, 500 MCP calls and 500 raising runs,
each ending with resident memory within 5 % of its warmed-up figure (or 4 MiB, the
allocator's granularity at these sizes), threads and file descriptors back at
their warmed-up count, and the SQLite file and its WAL within 8 MiB of their
warmed-up size. The full counts run with ``python tests/python/soak.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
import soak

pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs Linux's /proc")


def test_short_soak_keeps_memory_threads_and_fds_flat() -> None:
    lines: list[str] = []
    phases = soak.main(0.05, lines.append)
    assert [p.name for p in phases] == [
        "MemorySaver",
        "SqliteSaver",
        "ToolNode",
        "MCP over stdio",
        "raising tools",
    ]
    for p in phases:
        assert p.threads[1] <= p.threads[0], p.line()
        assert p.fds[1] <= p.fds[0], p.line()
        assert p.rss_end - p.rss_warm <= max(soak.RSS_GROWTH * p.rss_warm, 4 * 2**20), p.line()
        if p.disk is not None:
            assert p.disk[1] <= p.disk[0] + soak.DISK_SLACK, p.line()
    assert phases[1].disk is not None, "the SqliteSaver phase measures its files"
