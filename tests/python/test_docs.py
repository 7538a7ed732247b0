"""The documents' code runs, and their links lead somewhere.

Every ```python block of README.md and of each docs/*.md guide is run: a file's blocks
in order, in one namespace, in a fresh process whose working directory is a temporary
directory (with `tests` and `examples` linked into it, so the paths the documents use
resolve). A block that needs what a test machine lacks (an API key, a network, a
database server) is preceded by a visible marker in the markdown,

    <!-- not run: needs OPENAI_API_KEY -->

and is skipped; how many there are is pinned below, so one added or dropped is a
decision made here, not by accident. Every relative link (`](path)`, `](path#anchor)`,
`](#anchor)`) must name an existing file and, with an anchor, a heading of it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Blocks marked `<!-- not run: ... -->`, per file. Keep these few.
NOT_RUN = {
    "README.md": 1,
    "docs/agents.md": 0,
    "docs/architecture.md": 0,
    "docs/compatibility.md": 0,
    "docs/decisions.md": 0,
    "docs/graphs.md": 0,
    "docs/models.md": 1,
    "docs/persistence.md": 1,
    "docs/serving.md": 0,
    "docs/tools.md": 1,
}

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.M | re.S
)
NOT_RUN_MARK = re.compile(r"<!--\s*not run:\s*(?P<why>[^>]*?)\s*-->\s*$")


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def python_blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, reason it is not run or None) for each ```python block."""
    text = path.read_text()
    blocks = []
    for m in FENCE.finditer(text):
        if m.group("lang") != "python":
            continue
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip().splitlines()
        mark = NOT_RUN_MARK.search(before[-1]) if before else None
        code = textwrap.dedent(m.group("body"))
        blocks.append((line, code, mark.group("why") if mark else None))
    return blocks


def test_every_document_is_listed_with_its_blocks_not_run() -> None:
    names = {_name(p) for p in DOCS}
    assert names == set(NOT_RUN), "add the new document to NOT_RUN (0 if every block runs)"
    got = {_name(p): sum(why is not None for _, _, why in python_blocks(p)) for p in DOCS}
    assert got == NOT_RUN
    assert sum(NOT_RUN.values()) <= 6, "blocks that cannot run offline stay few"


RUNNER = """
import sys
blocks = {blocks!r}
ns = {{"__name__": "__main__"}}
for line, code in blocks:
    exec(compile(code, "{name}, block at line %d" % line, "exec"), ns)
"""


@pytest.mark.parametrize("path", DOCS, ids=_name)
def test_the_code_blocks_run(path: Path, tmp_path: Path) -> None:
    blocks = [(line, code) for line, code, why in python_blocks(path) if why is None]
    if not blocks:
        return
    for shared in ("tests", "examples", "benches"):
        (tmp_path / shared).symlink_to(REPO / shared)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER.format(blocks=blocks, name=_name(path))],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]


LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's ids for the headings of a markdown file."""
    ids: set[str] = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        base, n = slug, 1
        while slug in ids:
            slug, n = f"{base}-{n}", n + 1
        ids.add(slug)
    return ids


@pytest.mark.parametrize("path", DOCS, ids=_name)
def test_relative_links_lead_to_files_and_headings(path: Path) -> None:
    text = re.sub(r"^[ \t]*```.*?^[ \t]*```", "", path.read_text(), flags=re.M | re.S)
    broken = []
    for m in LINK.finditer(text):
        target = m.group("target")
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {_name(dest)}")
    assert not broken, broken
