"""An agent using the tools of an MCP server, offline.

``McpToolset.stdio(command, args)`` starts an MCP server as a child process, opens one
session with it and hands its tools to the agent like any other tools. The server
here is ``tests/python/mcp_server.py``, a small server written with the official MCP
Python SDK (``pip install mcp``); any MCP server works the same way, e.g.
``McpToolset.stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])`` or
``McpToolset.http("http://127.0.0.1:8000/mcp")``. A scripted "model" (no network, no
API key) plays the agent's turns: two calls at once, then one that fails.

    pip install . mcp && python examples/mcp_agent.py

To let a real model drive, pass ``OpenAIChat(...)`` or ``AnthropicChat(...)`` from
``ironloop.models`` to ``create_react_agent`` instead of the scripted model.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ironloop import create_react_agent
from ironloop.mcp import McpToolset
from ironloop.messages import AIMessage, ToolMessage
from ironloop.models import ScriptedChatModel

SERVER = Path(__file__).resolve().parents[1] / "tests" / "python" / "mcp_server.py"


def main() -> None:
    model = ScriptedChatModel(
        [
            # Two tool calls in one turn: they run at the same time, over one session.
            {
                "content": "",
                "tool_calls": [
                    {"name": "demo__add", "args": {"a": 2, "b": 3}},
                    {"name": "demo__slow", "args": {"seconds": 0.5}},
                ],
            },
            # A tool that fails: the agent gets an error ToolMessage, not an exception.
            {"content": "", "tool_calls": [{"name": "demo__fail", "args": {"reason": "demo"}}]},
            "2 + 3 = 5, and the slow tool finished; `fail` failed as it should.",
        ]
    )
    # One process, one MCP session for the whole run; tools named demo__<tool>.
    with McpToolset.stdio(sys.executable, [str(SERVER)], prefix="demo", timeout=10) as server:
        print(f"server: {server.server} (pid {server.pid})")
        print("tools:", ", ".join(t.name for t in server.tools))
        agent = create_react_agent(model, server.tools, prompt="Use the tools.")
        out = agent.invoke({"messages": [("user", "Add 2 and 3, and take a short nap.")]})
        for m in out["messages"]:
            if isinstance(m, ToolMessage):
                print(f"[{m.status}] {m.name}: {m.text}")
            elif isinstance(m, AIMessage) and not m.tool_calls:
                print(f"agent: {m.text}")
        pid = server.pid
    # Leaving the `with` closed the session and ended the server's process.
    assert pid is not None  # a stdio server has one
    try:
        os.kill(pid, 0)
        gone = False
    except ProcessLookupError:
        gone = True
    print(f"server process exited: {gone}")


if __name__ == "__main__":
    main()
