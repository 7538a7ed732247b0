"""A small MCP server built with the official MCP Python SDK (``mcp`` on PyPI), for the
tests and the example: ironloop's client did not write it and talks to it as to any
third-party server.

    python mcp_server.py                 # stdio
    python mcp_server.py --http          # streamable HTTP on 127.0.0.1, a free port;
                                         # prints "READY http://127.0.0.1:<port>/mcp"

Every start appends this process's pid to the file named by ``MCP_TEST_STARTS`` (when
set), so a test can count how many server processes a client started; a cancelled
``slow`` call appends a line to the file named by ``MCP_TEST_EVENTS``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from typing import Any

try:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as _Server
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore
    from mcp.server.fastmcp import FastMCP as _Server  # type: ignore
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore
    from mcp.shared.exceptions import McpError as _McpError  # type: ignore[attr-defined]
    from mcp.types import ErrorData

    def MCPError(code: int, message: str) -> Exception:  # type: ignore[no-redef]
        return _McpError(ErrorData(code=code, message=message))


server: Any = _Server("ironloop-test", log_level="CRITICAL")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then says how long."""
    try:
        await asyncio.sleep(seconds)
    except BaseException:  # cancelled (notifications/cancelled): note it for the tests
        _note(f"cancelled slow({seconds:g})")
        raise
    return f"slept {seconds}"


@server.tool()
def fail(reason: str = "boom") -> str:
    """Always fails: the result has isError set and carries the reason."""
    raise ToolError(f"fail: {reason}")


@server.tool()
def crash() -> str:
    """Raises an unexpected exception (the SDK hides its text from the client)."""
    raise RuntimeError("secret details")


@server.tool()
def protocol_error() -> str:
    """Answers with a JSON-RPC error instead of a result."""
    raise MCPError(-32000, "the backend is down")


@server.tool()
def echo_env(name: str = "MCP_TEST_VAR") -> str:
    """The value of an environment variable, and the working directory."""
    return f"{os.environ.get(name, '<unset>')} in {os.getcwd()}"


@server.tool()
def whoami() -> int:
    """The server's process id."""
    return os.getpid()


@server.resource("config://app", mime_type="text/plain")
def app_config() -> str:
    """The app's settings."""
    return "debug=false"


@server.resource("greeting://{name}")
def greeting(name: str) -> str:
    """A greeting for someone."""
    return f"Hello, {name}!"


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Asks for a code review."""
    return f"Review this {language} code:\n{code}"


@server.tool()
async def count(n: int, ctx: Context) -> str:
    """Counts to n, reporting progress at every step."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted to {n}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds a `triple` tool and tells the client its tools changed."""

    def triple(x: int) -> int:
        """Triples x."""
        return 3 * x

    server.add_tool(triple)
    # The notification as every protocol version knows it (unsolicited); the
    # 2026-07-28 `subscriptions/listen` form is not what this test covers.
    await ctx.request_context.session.send_tool_list_changed()
    return "added triple"


@server.tool()
def big(size: int) -> str:
    """A text of `size` bytes (for the client's message size limit)."""
    return "x" * size


@server.tool()
async def shout(size: int, ctx: Context) -> str:
    """Sends a progress notification whose message is `size` bytes, then answers."""
    await ctx.report_progress(1, 1, "y" * size)
    return "shouted"


@server.tool()
def die() -> str:
    """Exits the server process at once (a crash)."""
    os._exit(3)


def _note(line: str, var: str = "MCP_TEST_EVENTS") -> None:
    path = os.environ.get(var)
    if path:
        with open(path, "a") as f:
            f.write(f"{line}\n")


def _record_start() -> None:
    _note(str(os.getpid()), "MCP_TEST_STARTS")


def _serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # `--port N` serves on a given port (a test restarts the server there).
    argv = sys.argv[1:]
    fixed = int(argv[argv.index("--port") + 1]) if "--port" in argv else 0
    sock.bind(("127.0.0.1", fixed))
    port = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)

    async def main() -> None:
        task = asyncio.ensure_future(uv.serve(sockets=[sock]))
        while not uv.started:
            if task.done():
                task.result()
                return
            await asyncio.sleep(0.02)
        print(f"READY http://127.0.0.1:{port}/mcp", flush=True)
        await task

    asyncio.run(main())


if __name__ == "__main__":
    _record_start()
    if "--http" in sys.argv[1:]:
        _serve_http()
    else:
        server.run()
