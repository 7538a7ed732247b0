"""The MCP tool source: tools from MCP servers (the Model Context Protocol), called
from Rust (``src/sources/mcp.rs`` and ``src/sources/mcp/``). Public path: ``ironloop.mcp``.

``McpToolset.stdio(command, args)`` starts a server as a child process and
``McpToolset.http(url)`` connects to a streamable-HTTP server. Either opens **one**
long-lived session (the ``initialize`` handshake happens once) and lists the server's
tools as ironloop tools (``NativeTool``), which go into ``ToolNode`` and
``create_react_agent`` like ``@tool`` functions. Every call is a ``tools/call`` on
that one session, made from Rust (the official Rust SDK, ``rmcp``): calls of one AI
message run concurrently over it, a tool's time limit applies, cancellation reaches
the server (``notifications/cancelled``), and every failure — a result with
``isError``, a protocol error, a dead server — becomes an error ``ToolMessage`` that
names the server and the tool.

Close the toolset when done (``close()``, ``with`` / ``async with``): a stdio server
gets its stdin closed, then ``SIGTERM``, then ``SIGKILL``, together with anything it
started (it runs in a process group of its own). A toolset still open when the
interpreter exits is closed then.
"""

from __future__ import annotations

import atexit
import os
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from typing_extensions import TypedDict, Unpack

from ironloop._closing import ClosingContext
from ironloop._ironloop import _MCP_MAX_MESSAGE_BYTES, NativeTool, _McpToolset
from ironloop._params import params_of
from ironloop.messages import AIMessage, BaseMessage, HumanMessage
from ironloop.sources import _str_pairs

__all__ = ["MAX_MESSAGE_BYTES", "McpOptions", "McpToolset", "NativeTool", "prompt_messages"]

_open: weakref.WeakSet[McpToolset] = weakref.WeakSet()

MAX_MESSAGE_BYTES: int = _MCP_MAX_MESSAGE_BYTES
"""The default ``max_message_bytes``: the largest message read from a server (16 MiB,
the official Rust SDK's own limit; the core's, defined there)."""


@atexit.register
def _close_all() -> None:
    for ts in list(_open):
        try:
            ts.close()
        except Exception:
            pass


def _prefix(value: str | None) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"prefix must be a str or None, got {value!r}")
    return value or None


def _stdio_args(
    command: str | os.PathLike[str],
    args: Sequence[str] | None,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
) -> tuple[str, list[str], list[tuple[str, str]], str | None]:
    if isinstance(args, str):
        raise TypeError("args must be a list of strings, not one string")
    argv = [os.fspath(a) for a in (args or [])]
    return (
        os.fspath(command),
        argv,
        _str_pairs("env", env),
        None if cwd is None else os.fspath(cwd),
    )


class McpOptions(TypedDict, total=False):
    """The session options every ``McpToolset`` constructor takes (keywords); see
    ``McpToolset.stdio`` for each one's meaning and default."""

    prefix: str | None
    timeout: float | None
    max_message_bytes: int
    connect_timeout: float | None


def _session(
    options: McpOptions,
) -> tuple[str | None, float | None, int, float | None]:
    """The options checked, in the native constructors' order."""
    unknown = sorted(set(options) - set(McpOptions.__annotations__))
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {unknown}; "
            f"the options are {sorted(McpOptions.__annotations__)}"
        )
    return (
        _prefix(options.get("prefix")),
        options.get("timeout"),
        options.get("max_message_bytes", MAX_MESSAGE_BYTES),  # checked by the core's glue
        options.get("connect_timeout"),
    )


def _http_args(url: object, headers: Mapping[str, str] | None) -> tuple[str, list[tuple[str, str]]]:
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {url!r}")
    return url, _str_pairs("headers", headers)


def _str_map(arguments: Mapping[str, str] | None) -> dict[str, str] | None:
    if arguments is None:
        return None
    return dict(_str_pairs("arguments", arguments))


def prompt_messages(prompt: Mapping[str, Any]) -> list[BaseMessage]:
    """The messages of a ``get_prompt`` result as ironloop messages: ``user`` turns
    become ``HumanMessage`` s, ``assistant`` turns ``AIMessage`` s; text content stays
    text, an embedded text resource becomes its text, and an image becomes an
    ``image_url`` part with a ``data:`` URL.

    Example:
        >>> prompt_messages({"messages": [{"role": "user",
        ...     "content": {"type": "text", "text": "Review this."}}]})[0].content
        'Review this.'
    """
    out: list[BaseMessage] = []
    for m in prompt.get("messages", []):
        content = m.get("content") or {}
        kind = content.get("type")
        if kind == "text":
            body: Any = content.get("text", "")
        elif kind == "resource" and "text" in (content.get("resource") or {}):
            body = content["resource"]["text"]
        elif kind == "image":
            url = f"data:{content.get('mimeType', 'image/png')};base64,{content.get('data', '')}"
            body = [{"type": "image_url", "image_url": {"url": url}}]
        else:
            raise ValueError(
                f"prompt message content of type {kind!r} has no ironloop form; "
                "read the get_prompt() result directly"
            )
        role = m.get("role")
        if role == "user":
            out.append(HumanMessage(content=body))
        elif role == "assistant":
            out.append(AIMessage(content=body))
        else:
            raise ValueError(f"prompt message role {role!r} is neither 'user' nor 'assistant'")
    return out


class McpToolset(ClosingContext):
    """An open session with one MCP server, and its tools.

    Make one with ``McpToolset.stdio(...)`` / ``McpToolset.http(...)`` (or
    ``await McpToolset.astdio(...)`` / ``ahttp(...)`` from async code, which do not
    block the event loop while the server starts).

    Attributes:
        tools: The server's tools, as ``NativeTool`` objects named ``prefix__name``
            when a prefix was given. Iterating the toolset gives them too.
        server: The server's announced name and its command or URL.
        pid: The process id of a stdio server (None over HTTP).
        closed: Whether the session has ended.

    Example:
        >>> import sys
        >>> from ironloop import ToolNode
        >>> from ironloop.messages import AIMessage
        >>> with McpToolset.stdio(sys.executable, ["tests/python/mcp_server.py"],
        ...                       prefix="demo") as server:  # doctest: +SKIP
        ...     node = ToolNode(server.tools)
        ...     ai = AIMessage(content="", tool_calls=[
        ...         {"name": "demo__add", "args": {"a": 2, "b": 3}, "id": "1"}])
        ...     node.invoke([ai])[0].content
        '5'
    """

    __slots__ = ("__weakref__", "_core")

    def __init__(self, core: _McpToolset) -> None:
        if not isinstance(core, _McpToolset):
            raise TypeError(
                "use McpToolset.stdio(...) or McpToolset.http(...) to open an MCP toolset"
            )
        self._core = core
        _open.add(self)

    @classmethod
    def _stdio_call(
        cls,
        command: str | os.PathLike[str],
        args: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        **options: Unpack[McpOptions],
    ) -> tuple[Any, ...]:
        """``stdio``'s and ``astdio``'s parameters (shown on both), checked: the native
        ``stdio``'s arguments."""
        return (*_stdio_args(command, args, env, cwd), *_session(options))

    @classmethod
    @params_of(_stdio_call)
    def stdio(cls, *args: Any, **kwargs: Any) -> McpToolset:
        """Starts ``command args...`` and opens a session over its stdin / stdout.

        Args:
            command: The program (looked up on ``PATH``), e.g. ``"npx"``, ``"uvx"``,
                ``sys.executable``.
            args: Its arguments.
            env: Variables set for the server on top of this process's environment.
            prefix: Name the tools ``prefix__tool`` (to keep several servers' tools
                apart); the server still sees its own names.
            cwd: The server's working directory (default: this process's). Its
                stderr is this process's stderr, so its logs show there.
            timeout: The time limit in seconds of every request after the
                handshake (default 60): each tool call, as ``@tool(timeout=)`` sets
                one (a call that runs over it is cancelled on the server and becomes
                an error ``ToolMessage``), and each listing or read of tools,
                resources and prompts (which raises ``McpSessionError``).
            max_message_bytes: The largest message read from the server (default
                16 MiB). A result over it is never held whole: its call fails at once
                with an error ``ToolMessage`` naming the limit (a resource or prompt
                read raises ``McpSessionError``), and the session goes on; a
                notification over it is dropped with a WARNING log record.
            connect_timeout: The time limit in seconds of starting the server and
                its ``initialize`` handshake, together (default 30). A server that
                stays silent, prints something other than JSON-RPC on its stdout or
                prints a line over ``max_message_bytes`` fails within it, and the
                error says what it printed.

        The server is killed with this process, even by ``kill -9`` (on Linux,
        ``PR_SET_PDEATHSIG``); what it started itself goes on ``close()``.

        Raises:
            ironloop.errors.McpConnectionError: (a ``ConnectionError``) The command
                cannot be started, or it does not complete the MCP handshake within
                ``connect_timeout`` (the message says which, what the server printed,
                and names the command).
            ironloop.errors.InvalidArgumentError: (a ``ValueError``) ``timeout`` is not
                a positive number of seconds, or ``max_message_bytes`` not an int >= 1.
        """
        return cls(_McpToolset.stdio(*cls._stdio_call(*args, **kwargs)))

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        **options: Unpack[McpOptions],
    ) -> McpToolset:
        """Opens a session with a streamable-HTTP MCP endpoint (e.g.
        ``"http://127.0.0.1:8000/mcp"``).

        Args:
            url: The endpoint's URL (``http://`` or ``https://``).
            headers: Sent with every request, e.g. ``{"Authorization": "Bearer ..."}``.
            prefix: As for ``stdio``.
            timeout: As for ``stdio``.
            max_message_bytes: As for ``stdio``; it bounds each SSE event. A JSON
                (non-SSE) response body has the Rust SDK's fixed 16 MiB limit.
            connect_timeout: The time limit in seconds of reaching the server and
                the handshake (default 30).

        A server that goes down and comes back (its sessions lost) is rejoined with
        a new session on the next request; requests made while it is down fail.

        Raises:
            ironloop.errors.McpConnectionError: (a ``ConnectionError``) The server
                cannot be reached or the handshake fails.
        """
        where, pairs = _http_args(url, headers)
        return cls(_McpToolset.http(where, pairs, *_session(options)))

    @classmethod
    @params_of(_stdio_call)
    async def astdio(cls, *args: Any, **kwargs: Any) -> McpToolset:
        """``stdio`` for async code: the event loop runs on while the server starts."""
        call = cls._stdio_call(*args, **kwargs)
        return cls(await _McpToolset.stdio(*call, asynchronous=True))

    @classmethod
    async def ahttp(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        **options: Unpack[McpOptions],
    ) -> McpToolset:
        """``http`` for async code."""
        where, pairs = _http_args(url, headers)
        return cls(await _McpToolset.http(where, pairs, *_session(options), asynchronous=True))

    @property
    def tools(self) -> list[NativeTool]:
        return self._core.tools

    @property
    def server(self) -> str:
        return self._core.server

    @property
    def pid(self) -> int | None:
        return self._core.pid

    @property
    def closed(self) -> bool:
        return self._core.closed

    # ------------------------------------------------------------ resources, prompts

    def list_resources(self) -> list[dict[str, Any]]:
        """The server's resources (``resources/list``, every page), as the protocol
        writes them: ``{"uri", "name", "mimeType", ...}``.

        Raises:
            ironloop.errors.McpError: the server does not offer resources, or failed.
        """
        return cast("list[dict[str, Any]]", self._core.list_resources())

    async def alist_resources(self) -> list[dict[str, Any]]:
        """``list_resources`` for async code."""
        return cast("list[dict[str, Any]]", await self._core.list_resources(asynchronous=True))

    def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The contents of the resource ``uri`` (``resources/read``): a list of
        ``{"uri", "mimeType", "text"}`` or ``{"uri", "mimeType", "blob"}`` (base64).

        Example:
            >>> server.read_resource("config://app")[0]["text"]  # doctest: +SKIP
            'debug=false'
        """
        return cast("list[dict[str, Any]]", self._core.read_resource(uri))

    async def aread_resource(self, uri: str) -> list[dict[str, Any]]:
        """``read_resource`` for async code."""
        return cast("list[dict[str, Any]]", await self._core.read_resource(uri, asynchronous=True))

    def list_prompts(self) -> list[dict[str, Any]]:
        """The server's prompts (``prompts/list``): ``{"name", "description",
        "arguments": [{"name", "required"}, ...]}``."""
        return cast("list[dict[str, Any]]", self._core.list_prompts())

    async def alist_prompts(self) -> list[dict[str, Any]]:
        """``list_prompts`` for async code."""
        return cast("list[dict[str, Any]]", await self._core.list_prompts(asynchronous=True))

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The prompt ``name`` filled with ``arguments`` (``prompts/get``):
        ``{"description", "messages": [{"role", "content"}, ...]}``. Pass the result to
        :func:`prompt_messages` for ironloop messages."""
        return cast("dict[str, Any]", self._core.get_prompt(name, _str_map(arguments)))

    async def aget_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """``get_prompt`` for async code."""
        got = await self._core.get_prompt(name, _str_map(arguments), asynchronous=True)
        return cast("dict[str, Any]", got)

    def __iter__(self) -> Iterator[NativeTool]:
        return iter(self._core.tools)

    def __len__(self) -> int:
        return len(self._core.tools)

    def close(self) -> None:
        """Ends the session; a stdio server's process (and its children) exit. Calls
        of the tools afterwards give error results. Safe to call more than once."""
        self._core.close()
        _open.discard(self)

    async def aclose(self) -> None:
        """``close`` for async code."""
        await self._core.aclose()
        _open.discard(self)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self)} tools"
        return f"McpToolset({self.server}, {state})"
