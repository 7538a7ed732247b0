"""MCP stdio "servers" that misbehave, for test_mcp.py: started as
``mcp_bad_server.py MODE``, each writes its pid to ``$MCP_BAD_PID`` (when set) and then

- ``silent``: reads its stdin and never writes anything;
- ``garbage``: prints lines that are not JSON-RPC, forever;
- ``bigline``: prints one 200 MB line, then stays silent;
- ``mute``: answers ``initialize`` (and nothing else), so the handshake completes and
  every request after it goes unanswered.

Plain standard library, so the tests do not depend on an SDK's behaviour."""

from __future__ import annotations

import json
import os
import sys
import time


def _silent() -> None:
    for _ in sys.stdin:
        pass
    time.sleep(3600)


def _garbage() -> None:
    while True:
        sys.stdout.write("Starting the server... (this is a log line, not JSON-RPC)\n")
        sys.stdout.flush()
        time.sleep(0.05)


def _bigline() -> None:
    chunk = "x" * (1 << 20)
    for _ in range(200):
        sys.stdout.write(chunk)
    sys.stdout.write("\n")
    sys.stdout.flush()
    time.sleep(3600)


def _mute() -> None:
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("method") == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mute", "version": "1"},
            }
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
            sys.stdout.write("\n")
            sys.stdout.flush()


MODES = {"silent": _silent, "garbage": _garbage, "bigline": _bigline, "mute": _mute}

if __name__ == "__main__":
    pid_file = os.environ.get("MCP_BAD_PID")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    MODES[sys.argv[1]]()
