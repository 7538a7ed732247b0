"""``FilesystemFileSearchMiddleware`` (LangChain 1.5's): ``glob_search`` and
``grep_search`` tools over one directory. The walking, matching and reading are the
workspace tools' (``src/sources/workspace/find.rs``: ripgrep's walker and regex, the
confined open), so nothing outside the root is listed or read, symlinks included;
this module keeps LangChain's tool names, arguments and result text."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ironloop._ironloop import _workspace_glob, _workspace_grep
from ironloop.middleware.types import AgentMiddleware

try:  # LangChain's tool type when langchain-core is there, as LangChain's has it
    from langchain_core.tools import tool as _tool
except ImportError:  # pragma: no cover - langchain-core is optional
    from ironloop._tool import tool as _tool  # type: ignore[assignment,no-redef]

__all__ = ["FilesystemFileSearchMiddleware"]

OutputMode = Literal["files_with_matches", "content", "count"]


def _valid_include(pattern: str) -> bool:
    """An ``include`` filter LangChain accepts: non-empty, one line, braces balanced
    and not empty (``*.{py,pyi}``)."""
    if not pattern or any(c in pattern for c in ("\x00", "\n", "\r")):
        return False
    depth = 0
    for i, c in enumerate(pattern):
        if c == "{":
            if depth or pattern.find("}", i) in (-1, i + 1):
                return False
            depth = 1
        elif c == "}":
            if not depth:
                return False
            depth = 0
    return depth == 0


def _format(results: dict[str, list[tuple[int, str]]], mode: str) -> str:
    files = sorted(results)
    if mode == "content":
        return "\n".join(f"{f}:{n}:{line}" for f in files for n, line in results[f])
    if mode == "count":
        return "\n".join(f"{f}:{len(results[f])}" for f in files)
    return "\n".join(files)


class FilesystemFileSearchMiddleware(AgentMiddleware):
    """Adds ``glob_search(pattern, path="/")`` and ``grep_search(pattern, path="/",
    include=None, output_mode="files_with_matches")`` over ``root_path``.

    Paths the model sees and gives are virtual: ``/`` is ``root_path``. A path with
    ``..`` or ``~``, or a glob that is absolute or climbs with ``..``, finds nothing.
    ``glob_search`` lists files (most recently modified first); ``grep_search`` takes
    a regular expression (ripgrep's syntax), an ``include`` glob on file names
    (``*.{ts,tsx}``) and answers with paths, ``path:line:text`` lines or
    ``path:count`` lines. Files over ``max_file_size_mb`` and binary files are not
    searched; ``.gitignore``d files and ``.git`` are skipped. ``use_ripgrep`` is
    accepted for LangChain's signature: the search is always the built-in Rust one.

    Example:
        >>> import tempfile
        >>> m = FilesystemFileSearchMiddleware(root_path=tempfile.mkdtemp())
        >>> [t.name for t in m.tools]
        ['glob_search', 'grep_search']
    """

    def __init__(
        self, *, root_path: str, use_ripgrep: bool = True, max_file_size_mb: int = 10
    ) -> None:
        super().__init__()
        self.root_path = Path(root_path).resolve()
        self.use_ripgrep = use_ripgrep
        self.max_file_size_bytes = max_file_size_mb * 1024 * 1024

        @_tool
        def glob_search(pattern: str, path: str = "/") -> str:
            """Fast file pattern matching tool that works with any codebase size.

            Supports glob patterns like `**/*.js` or `src/**/*.ts`.
            Returns matching file paths sorted by modification time.
            Use this tool when you need to find files by name patterns.

            Args:
                pattern: The glob pattern to match files against.
                path: The directory to search in. If not specified, searches from root.
            """
            return self._glob(pattern, path)

        @_tool
        def grep_search(
            pattern: str,
            path: str = "/",
            include: str | None = None,
            output_mode: OutputMode = "files_with_matches",
        ) -> str:
            """Fast content search tool that works with any codebase size.

            Searches file contents using regular expressions. Supports full regex
            syntax and filters files by pattern with the include parameter.

            Args:
                pattern: The regular expression pattern to search for in file contents.
                path: The directory to search in. If not specified, searches from root.
                include: File pattern to filter (e.g., `'*.js'`, `'*.{ts,tsx}'`).
                output_mode: `files_with_matches` (paths), `content`
                    (`file:line:content`) or `count` (matches per file).
            """
            return self._grep(pattern, path, include, output_mode)

        self.glob_search = glob_search
        self.grep_search = grep_search
        self.tools = [glob_search, grep_search]

    def _start(self, path: str) -> str | None:
        """The virtual ``path`` relative to the root, or ``None`` when refused."""
        if ".." in path or "~" in path:
            return None
        return path.lstrip("/") or "."

    def _glob(self, pattern: str, path: str) -> str:
        start = self._start(path)
        if start is None or pattern.startswith("/") or ".." in pattern.split("/"):
            return "No files found"
        try:
            found = _workspace_glob(self.root_path, start, pattern)
        except (ValueError, OSError):
            return "No files found"
        if not found:
            return "No files found"
        found.sort(key=lambda f: f[1], reverse=True)
        return "\n".join(f"/{p}" for p, _ in found)

    def _grep(self, pattern: str, path: str, include: str | None, mode: str) -> str:
        if include and not _valid_include(include):
            return "Invalid include pattern"
        start = self._start(path)
        if start is None:
            return "No matches found"
        try:
            lines = _workspace_grep(
                self.root_path, start, pattern, include or None, self.max_file_size_bytes
            )
        except ValueError as e:
            if "regular expression" in str(e):
                return f"Invalid regex pattern: {e}"
            if "glob" in str(e):
                return "Invalid include pattern"
            return "No matches found"
        except OSError:
            return "No matches found"
        results: dict[str, list[tuple[int, str]]] = {}
        for file, number, text in lines:
            results.setdefault(f"/{file}", []).append((number, text))
        return _format(results, mode) if results else "No matches found"
