"""The workspace tool source: the file system under one root, as tools that run in
Rust (``src/sources/workspace/``). Public path: ``ironloop.tools``.

``workspace(root)`` gives an agent a directory to work in: ``read_file``,
``write_file``, ``edit_file``, ``list_files``, ``search`` and, when asked for,
``bash``. They are ``NativeTool`` objects: they go into ``ToolNode`` and
``create_react_agent`` like ``@tool`` functions, with the same guarantees (every
failure an error ``ToolMessage``, timeouts, cancellation), and their calls never
enter Python.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ironloop._ironloop import NativeTool, _workspace_tools

__all__ = ["NativeTool", "workspace"]


def workspace(
    root: str | os.PathLike[str],
    *,
    allow_bash: bool = False,
    bash_timeout: float = 30.0,
    max_bash_timeout: float = 600.0,
    max_output_bytes: int = 64 * 1024,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
) -> list[NativeTool]:
    """Tools that read, write, edit, list and search the files under ``root``.

    Every path the model gives is relative to ``root`` and confined to it: an absolute
    path, a ``..`` that climbs above the root, or a symlink that leads out of it is
    refused with an error result that names the path. ``list_files`` and ``search``
    skip what ``.gitignore`` / ``.ignore`` files under the root ignore, and ``.git``.

    * ``read_file(path, offset=1, limit=2000)`` — lines of a UTF-8 text file; a note
      says when more remains and the ``offset`` to read on from.
    * ``write_file(path, content)`` — creates (with parent directories) or replaces.
    * ``edit_file(path, old, new)`` — replaces ``old``, which must occur exactly once;
      zero or several occurrences are an error saying how many (and where).
    * ``list_files(path=".", pattern=None)`` — paths relative to the root, directories
      ending in ``/``; ``pattern`` is a glob such as ``"*.py"`` or ``"src/**/*.rs"``.
    * ``search(pattern, path=".", glob=None, ignore_case=False)`` — a regular
      expression, line by line; results are ``path:line: text``.
    * ``bash(command, timeout_seconds=bash_timeout)`` — only with ``allow_bash=True``.
      Runs ``bash -c`` in ``root`` with no stdin and returns the exit code, stdout and
      stderr. On timeout or cancellation the command and every process it started are
      killed; processes it leaves in the background are killed when it returns.
      ``bash`` is not a sandbox: the command can do whatever this process can, outside
      ``root`` too. Its environment is an allow-list, not this process's: ``PATH``,
      ``HOME``, ``USER``, ``LOGNAME``, ``SHELL``, ``LANG``, ``LANGUAGE``, ``LC_ALL``,
      ``LC_CTYPE``, ``LC_MESSAGES``, ``TERM``, ``TZ`` and ``TMPDIR`` (where set), plus
      ``env`` — so an API key the process holds is not printed to the model.

    No result carries more than ``max_output_bytes`` of text (for ``bash``, each of
    stdout and stderr): a note says what was cut (``[truncated: N bytes omitted]``).
    ``timeout`` is a time limit for every call of every one of these tools, as
    ``@tool(timeout=)`` sets one; ``bash`` has its own (``bash_timeout``, which a call
    may raise up to ``max_bash_timeout``).

    Args:
        root: An existing directory.
        allow_bash: Add the ``bash`` tool.
        bash_timeout: Seconds a command may run when the call gives no
            ``timeout_seconds``.
        max_bash_timeout: The most ``timeout_seconds`` a call may ask for.
        max_output_bytes: The most text one result carries.
        timeout: A per-call time limit in seconds for all these tools, or None.
        env: Variables ``bash`` commands get on top of the allow-list.

    Returns:
        The tools, in the order ``read_file``, ``write_file``, ``edit_file``,
        ``list_files``, ``search`` (, ``bash``).

    Raises:
        ironloop.errors.WorkspaceNotFoundError: (a ``FileNotFoundError``) ``root``
            does not exist.
        ironloop.errors.WorkspaceConfigError: (a ``ValueError``) ``root`` is not a
            directory, or an option is out of range.
        ironloop.errors.InvalidArgumentError: (a ``ValueError``) a timeout is not a
            positive number of seconds, or ``max_output_bytes`` is below 1.

    Example:
        >>> import tempfile
        >>> from ironloop import ToolNode
        >>> from ironloop.messages import AIMessage
        >>> from ironloop.tools import workspace
        >>> root = tempfile.mkdtemp()
        >>> tools = workspace(root)
        >>> [t.name for t in tools]
        ['read_file', 'write_file', 'edit_file', 'list_files', 'search']
        >>> ai = AIMessage(content="", tool_calls=[
        ...     {"name": "write_file", "args": {"path": "a.txt", "content": "hi"}, "id": "1"},
        ...     {"name": "read_file", "args": {"path": "../etc/passwd"}, "id": "2"},
        ... ])
        >>> [m.status for m in ToolNode(tools, strategy="sequential").invoke([ai])]
        ['success', 'error']
        >>> tools[0](path="a.txt")  # a tool is callable directly too
        'hi'
    """
    if not isinstance(allow_bash, bool):
        raise TypeError(f"allow_bash must be a bool, got {allow_bash!r}")
    return _workspace_tools(
        os.fspath(root),
        allow_bash=allow_bash,
        bash_timeout=bash_timeout,
        max_bash_timeout=max_bash_timeout,
        max_output_bytes=max_output_bytes,
        timeout=timeout,
        env=[(str(k), str(v)) for k, v in (env or {}).items()],
    )
