#!/usr/bin/env python3
"""Keeps the Rust core readable whole: no file in src/ over MAX_FILE_LINES lines and no
function over MAX_FN_LINES lines (docs/architecture.md, "Reading the tree").

A function is counted from its `fn` line to its closing brace, blank lines and comments
included (what a reader scrolls through). Comments, strings (raw strings too) and char
literals are blanked before the braces are counted, so a `{` in a SQL text or a format
string does not count. A function waiting to be split is listed, with the reason, in
scripts/rust-sizes-allowlist.txt as `path name`; an entry that no longer exceeds the
limit fails too, so that the list only shrinks.

Usage: python scripts/rust_sizes.py [--list N]   (--list: every function over N lines)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MAX_FILE_LINES = 1200
MAX_FN_LINES = 120
ROOT = Path(__file__).resolve().parent.parent
ALLOWLIST = ROOT / "scripts" / "rust-sizes-allowlist.txt"

_RAW_STRING = re.compile(r'b?r(#*)"')
_CHAR = re.compile(r"b?'(\\.[^']*|[^\\'\n])'")
_FN = re.compile(r"\bfn\s+(\w+)")


def _blank(text: str) -> str:
    """`text` with every character but newlines made a space (lines keep their numbers)."""
    return re.sub(r"[^\n]", " ", text)


def strip_rust(src: str) -> str:
    """The source with comments, strings and char literals blanked out."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j, depth = i + 2, 1
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif (m := _RAW_STRING.match(src, i)) and not (
            i and (src[i - 1].isalnum() or src[i - 1] == "_")
        ):
            end = '"' + m.group(1)
            j = src.find(end, m.end())
            j = n if j < 0 else j + len(end)
        elif src[i] == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
        elif src[i] == "'" and (m := _CHAR.match(src, i)):
            j = m.end()
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(_blank(src[i:j]))
        i = j
    return "".join(out)


def functions(path: Path) -> list[tuple[str, int, int]]:
    """`(name, first line, line count)` of every function with a body in `path`."""
    code = strip_rust(path.read_text(encoding="utf-8"))
    found = []
    for m in _FN.finditer(code):
        brace, semi = code.find("{", m.end()), code.find(";", m.end())
        if brace < 0 or 0 <= semi < brace:
            continue  # a declaration without a body (a trait's, an extern's)
        depth, k = 0, brace
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        first = code.count("\n", 0, m.start()) + 1
        found.append((m.group(1), first, code.count("\n", 0, k) + 2 - first))
    return found


def allowed() -> set[tuple[str, str]]:
    entries = set()
    for line in ALLOWLIST.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            path, name = line.split()
            entries.add((path, name))
    return entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", type=int, metavar="N", help="list every function over N lines")
    args = parser.parse_args()
    files = sorted((ROOT / "src").rglob("*.rs"))
    if args.list is not None:
        rows = [
            (count, f"{p.relative_to(ROOT)}:{line}", name)
            for p in files
            for name, line, count in functions(p)
            if count > args.list
        ]
        for row in sorted(rows, reverse=True):
            print(*row)
        return 0
    problems, exempt, seen = [], allowed(), set()
    for p in files:
        rel = str(p.relative_to(ROOT))
        lines = p.read_text(encoding="utf-8").count("\n")
        if lines > MAX_FILE_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES}): split it by concept")
        for name, line, count in functions(p):
            if count <= MAX_FN_LINES:
                continue
            if (rel, name) in exempt:
                seen.add((rel, name))
                continue
            problems.append(
                f"{rel}:{line}: fn {name} is {count} lines (at most {MAX_FN_LINES}): split it "
                "into functions named for what each part does"
            )
    for rel, name in sorted(exempt - seen):
        problems.append(
            f"{ALLOWLIST.relative_to(ROOT)}: {rel} {name} is within the limits now (or gone): "
            "remove its entry"
        )
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
