"""ironloop.mcp: the tools of MCP servers as ironloop tools, against a real server the
project did not write — the official MCP Python SDK (``mcp`` on PyPI) running
``mcp_server.py`` — over stdio and streamable HTTP: one session (one process) per
server, parallel calls, timeouts and cancellation that reach the server, isError and
protocol errors as error ToolMessages, create_react_agent, and no process left after
close."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ironloop import ToolNode, create_react_agent
from ironloop.errors import McpError, ToolExecutionError
from ironloop.mcp import McpToolset, NativeTool, prompt_messages
from ironloop.messages import AIMessage, ToolMessage
from ironloop.models import ScriptedChatModel

REPO = Path(__file__).resolve().parents[2]
SERVER = str(Path(__file__).with_name("mcp_server.py"))
TOOLS = {
    "add",
    "slow",
    "fail",
    "crash",
    "protocol_error",
    "echo_env",
    "whoami",
    "count",
    "grow",
    "die",
    "big",
    "shout",
}

try:
    import mcp  # noqa: F401  (the server's SDK: CI installs it from requirements-dev.txt)
except ImportError as e:  # fail loudly rather than skip
    raise ImportError(
        "tests/python/test_mcp.py needs the MCP Python SDK: pip install -r requirements-dev.txt"
    ) from e


def ai(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)],
    )


def run(node: ToolNode, *calls: tuple[str, dict[str, Any]]) -> list[ToolMessage]:
    out: list[ToolMessage] = node.invoke({"messages": [ai(*calls)]})["messages"]
    assert [m.tool_call_id for m in out] == [f"c{i}" for i in range(len(calls))]
    return out


def alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie (dead, not yet reaped by a parent that is no longer
    ours) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: the signal test is all there is
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        time.sleep(0.05)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {"starts": tmp_path / "starts.txt", "events": tmp_path / "events.txt"}


@pytest.fixture
def server_env(files: dict[str, Path]) -> dict[str, str]:
    return {
        "MCP_TEST_STARTS": str(files["starts"]),
        "MCP_TEST_EVENTS": str(files["events"]),
        "MCP_TEST_VAR": "hello",
    }


@pytest.fixture
def stdio(server_env: dict[str, str]) -> Iterator[McpToolset]:
    with McpToolset.stdio(sys.executable, [SERVER], env=server_env, timeout=2.0) as ts:
        yield ts


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (a free port it picks)."""
    proc = subprocess.Popen([sys.executable, SERVER, "--http"], stdout=subprocess.PIPE, text=True)
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(30)
        assert line and line[0].startswith("READY "), f"the HTTP server did not start: {line}"
        yield line[0].split()[1]
    finally:
        proc.kill()
        proc.wait()


def lines(p: Path) -> list[str]:
    return p.read_text().splitlines() if p.exists() else []


def test_lists_the_servers_tools(stdio: McpToolset) -> None:
    assert {t.name for t in stdio.tools} == TOOLS
    assert all(isinstance(t, NativeTool) for t in stdio)
    assert len(stdio) == len(TOOLS)
    add = next(t for t in stdio if t.name == "add")
    assert add.description == "Adds two integers."
    params = add.parameters
    assert params["type"] == "object"
    assert params["required"] == ["a", "b"]
    assert params["properties"]["a"]["type"] == "integer"
    assert add.timeout == 2.0
    assert add.to_openai()["function"]["name"] == "add"
    assert "ironloop-test" in stdio.server
    assert repr(stdio).startswith("McpToolset(`ironloop-test`")
    assert isinstance(stdio.pid, int) and alive(stdio.pid)
    assert not stdio.closed


def test_prefix_names_the_tools(server_env: dict[str, str]) -> None:
    with McpToolset.stdio(sys.executable, [SERVER], env=server_env, prefix="calc") as ts:
        assert {t.name for t in ts} == {f"calc__{n}" for n in TOOLS}
        # The model calls the prefixed name; the server sees its own.
        [m] = run(ToolNode(ts.tools), ("calc__add", {"a": 2, "b": 40}))
        assert (m.status, m.content, m.name) == ("success", "42", "calc__add")


def test_one_process_serves_every_call(stdio: McpToolset, files: dict[str, Path]) -> None:
    node = ToolNode(stdio.tools)
    seq = ToolNode(stdio.tools, strategy="sequential")
    for i in range(5):
        out = run(node, *[("add", {"a": i, "b": j}) for j in range(4)], ("whoami", {}))
        assert [m.content for m in out[:4]] == [str(i + j) for j in range(4)]
        assert out[4].content == str(stdio.pid)
        assert run(seq, ("add", {"a": i, "b": 1}))[0].content == str(i + 1)
    assert lines(files["starts"]) == [str(stdio.pid)]


def test_calls_of_one_message_run_in_parallel(stdio: McpToolset) -> None:
    node = ToolNode(stdio.tools)
    run(node, ("slow", {"seconds": 0.01}))  # warm up
    t0 = time.perf_counter()
    out = run(node, *[("slow", {"seconds": 0.3}) for _ in range(5)])
    took = time.perf_counter() - t0
    assert [m.status for m in out] == ["success"] * 5
    assert all(m.content == "slept 0.3" for m in out)
    assert took < 0.9, f"5 x 0.3 s took {took:.2f} s: the calls did not overlap"


def test_timeout_is_an_error_result_and_the_session_survives(
    server_env: dict[str, str], files: dict[str, Path]
) -> None:
    with McpToolset.stdio(sys.executable, [SERVER], env=server_env, timeout=0.3) as ts:
        node = ToolNode(ts.tools)
        t0 = time.perf_counter()
        slow, add = run(node, ("slow", {"seconds": 5}), ("add", {"a": 1, "b": 2}))
        assert time.perf_counter() - t0 < 2.0
        assert slow.status == "error" and "timed out" in slow.content, slow.content
        assert (add.status, add.content) == ("success", "3")
        # The server was told (notifications/cancelled) and stopped the call.
        deadline = time.monotonic() + 5
        while "cancelled slow(5)" not in lines(files["events"]):
            assert time.monotonic() < deadline, lines(files["events"])
            time.sleep(0.05)
        # Same session, same process afterwards.
        assert run(node, ("whoami", {}))[0].content == str(ts.pid)
        assert len(lines(files["starts"])) == 1


def test_errors_are_error_tool_messages(stdio: McpToolset) -> None:
    node = ToolNode(stdio.tools)
    fail, crash, proto, bad, ok = run(
        node,
        ("fail", {"reason": "nope"}),
        ("crash", {}),
        ("protocol_error", {}),
        ("add", {"a": "x", "b": 1}),
        ("add", {"a": 1, "b": 1}),
    )
    # isError: true -> the result's text.
    assert fail.status == "error" and "fail: nope" in fail.content, fail.content
    assert crash.status == "error" and "Error executing tool crash" in crash.content
    assert "secret details" not in crash.content  # the SDK hides it; so do we
    # A JSON-RPC error names the server and the tool.
    assert proto.status == "error"
    for part in ("ironloop-test", "protocol_error", "the backend is down"):
        assert part in proto.content, proto.content
    # Arguments are checked against the inputSchema before anything is sent.
    assert bad.status == "error" and "Error invoking tool 'add'" in bad.content
    assert (ok.status, ok.content) == ("success", "2")
    with pytest.raises(ToolExecutionError, match="fail: direct"):
        next(t for t in stdio if t.name == "fail")(reason="direct")
    # A direct call returns the structured result.
    assert next(t for t in stdio if t.name == "add")(a=2, b=3) == {"result": 5}


def test_env_and_cwd(server_env: dict[str, str], tmp_path: Path) -> None:
    with McpToolset.stdio(sys.executable, [SERVER], env=server_env, cwd=tmp_path) as ts:
        [m] = run(ToolNode(ts.tools), ("echo_env", {}))
        assert m.content == f"hello in {os.path.realpath(tmp_path)}"
        [m] = run(ToolNode(ts.tools), ("echo_env", {"name": "PATH"}))
        assert m.text.split(" in ")[0] == os.environ["PATH"]  # inherited


def test_inside_create_react_agent(stdio: McpToolset) -> None:
    model = ScriptedChatModel(
        [
            {
                "content": "",
                "tool_calls": [
                    {"name": "add", "args": {"a": 2, "b": 3}},
                    {"name": "slow", "args": {"seconds": 0.2}},
                    {"name": "fail", "args": {}},
                ],
            },
            {"content": "", "tool_calls": [{"name": "slow", "args": {"seconds": 30}}]},
            "2 + 3 = 5",
        ]
    )
    agent = create_react_agent(model, stdio.tools)
    t0 = time.perf_counter()
    out = agent.invoke({"messages": [("user", "2+3?")]})
    assert time.perf_counter() - t0 < 5.0  # the 30 s call hit the toolset's 2 s timeout
    tool_msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [(m.name, m.status) for m in tool_msgs] == [
        ("add", "success"),
        ("slow", "success"),
        ("fail", "error"),
        ("slow", "error"),
    ]
    assert tool_msgs[0].content == "5"
    assert "timed out" in tool_msgs[3].content
    assert out["messages"][-1].text == "2 + 3 = 5"


async def test_async_toolset_node_and_cancellation(
    server_env: dict[str, str], files: dict[str, Path]
) -> None:
    async with await McpToolset.astdio(sys.executable, [SERVER], env=server_env) as ts:
        node = ToolNode(ts.tools)
        out = await node.ainvoke([ai(("add", {"a": 1, "b": 2}), ("slow", {"seconds": 0.1}))])
        assert [m.content for m in out] == ["3", "slept 0.1"]
        # Cancelling the caller cancels the call on the server.
        task = asyncio.ensure_future(node.ainvoke([ai(("slow", {"seconds": 7}))]))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 5
        while "cancelled slow(7)" not in lines(files["events"]):
            assert time.monotonic() < deadline, lines(files["events"])
            await asyncio.sleep(0.05)
        out = await node.ainvoke([ai(("add", {"a": 2, "b": 2}))])
        assert out[0].content == "4"
        pid = ts.pid
        assert pid is not None
    assert ts.closed
    wait_gone(pid, within=1.0)


def test_close_leaves_no_process(server_env: dict[str, str]) -> None:
    ts = McpToolset.stdio(sys.executable, [SERVER], env=server_env)
    pid = ts.pid
    assert pid is not None and alive(pid)
    node = ToolNode(ts.tools)
    ts.close()
    assert ts.closed
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    [m] = run(node, ("add", {"a": 1, "b": 1}))
    assert m.status == "error" and "ironloop-test" in m.content and "not connected" in m.content
    ts.close()  # idempotent


def test_close_ends_what_a_launcher_started(server_env: dict[str, str]) -> None:
    # `sh -c "...; true"` forks the server: the server is a grandchild of ours.
    cmd = f"{sys.executable} {SERVER}; true"
    with McpToolset.stdio("sh", ["-c", cmd], env=server_env) as ts:
        server_pid = int(run(ToolNode(ts.tools), ("whoami", {}))[0].text)
        assert server_pid != ts.pid
        launcher = ts.pid
    assert launcher is not None
    wait_gone(server_pid, within=1.0)
    wait_gone(launcher, within=1.0)


def test_dropping_the_toolset_ends_the_server(server_env: dict[str, str]) -> None:
    ts = McpToolset.stdio(sys.executable, [SERVER], env=server_env)
    pid = ts.pid
    assert pid is not None
    del ts
    import gc

    gc.collect()
    wait_gone(pid)


def test_connect_errors() -> None:
    with pytest.raises(ConnectionError, match="not found"):
        McpToolset.stdio("/nonexistent/mcp-server")
    with pytest.raises(ConnectionError, match="handshake"):
        McpToolset.stdio(sys.executable, ["-c", "pass"])
    with pytest.raises(ConnectionError, match="cannot connect"):
        McpToolset.http("http://127.0.0.1:9/mcp")
    with pytest.raises(ConnectionError, match="http://"):
        McpToolset.http("ftp://example.com/mcp")
    with pytest.raises(TypeError):
        McpToolset.stdio(sys.executable, SERVER)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        McpToolset.stdio(sys.executable, [SERVER], timeout=0)
    with pytest.raises(TypeError):
        McpToolset(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_result_over_max_message_bytes_fails_its_call_naming_the_limit(
    transport: str, server_env: dict[str, str], http_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A result over the limit is an error ToolMessage at once (the 60 s time limit is
    not waited for), naming the limit and how to raise it; the calls beside it and
    the session go on. Over stdio a notification over it is dropped with a WARNING
    record."""
    limit = 100_000
    if transport == "stdio":
        ts = McpToolset.stdio(
            sys.executable, [SERVER], env=server_env, timeout=60, max_message_bytes=limit
        )
    else:
        ts = McpToolset.http(http_url, timeout=60, max_message_bytes=limit)
    with ts, caplog.at_level("WARNING", logger="ironloop"):
        node = ToolNode(ts.tools)
        t0 = time.perf_counter()
        out = run(
            node,
            ("big", {"size": 300_000}),
            ("big", {"size": 1_000}),
            ("shout", {"size": 300_000}),
        )
        print(f"{transport}: {time.perf_counter() - t0:.3f} s")
        assert out[0].status == "error", out[0].content
        assert "over the limit of 100000 bytes" in out[0].content, out[0].content
        assert "max_message_bytes" in out[0].content
        assert out[1].content == "x" * 1_000
        if transport == "stdio":
            assert out[2].content == "shouted"
        else:
            # Over HTTP the notification comes on the call's own response stream, and
            # an event over the limit ends that stream: the call fails the same way.
            assert "over the limit of 100000 bytes" in out[2].content, out[2].content
        assert run(node, ("add", {"a": 1, "b": 2}))[0].content == "3"
    if transport == "stdio":
        assert any("without an id" in r.getMessage() for r in caplog.records), caplog.text
    with pytest.raises(ValueError, match="max_message_bytes"):
        McpToolset.http(http_url, max_message_bytes=0)


def test_the_default_message_limit_is_the_cores() -> None:
    from ironloop import _ironloop, mcp
    from ironloop.sources import mcp as sources_mcp

    # One number, defined in the core (`sources::mcp::DEFAULT_MAX_MESSAGE_BYTES`).
    assert mcp.MAX_MESSAGE_BYTES == sources_mcp.MAX_MESSAGE_BYTES == 16 * 1024 * 1024
    assert sources_mcp.MAX_MESSAGE_BYTES == _ironloop._MCP_MAX_MESSAGE_BYTES


def test_http_transport(http_url: str) -> None:
    # The timeout leaves the 0.3 s calls room on a loaded machine (at 0.5 s they were
    # cut at load 10); the 5 s call must still be cut at it.
    with McpToolset.http(http_url, headers={"X-Test": "1"}, prefix="web", timeout=2.0) as ts:
        assert ts.pid is None
        assert {t.name for t in ts} == {f"web__{n}" for n in TOOLS}
        node = ToolNode(ts.tools)
        t0 = time.perf_counter()
        out = run(
            node,
            *[("web__slow", {"seconds": 0.3}) for _ in range(4)],
            ("web__add", {"a": 20, "b": 22}),
            ("web__fail", {}),
            ("web__slow", {"seconds": 5}),
        )
        assert time.perf_counter() - t0 < 4.0
        assert [m.content for m in out[:5]] == ["slept 0.3"] * 4 + ["42"]
        assert out[5].status == "error" and "fail: boom" in out[5].content
        assert out[6].status == "error" and "timed out" in out[6].content
        assert run(node, ("web__add", {"a": 1, "b": 2}))[0].content == "3"
    assert ts.closed
    [m] = run(node, ("web__add", {"a": 1, "b": 2}))
    assert m.status == "error"


async def test_http_async(http_url: str) -> None:
    ts = await McpToolset.ahttp(http_url)
    try:
        out = await ToolNode(ts.tools).ainvoke([ai(("add", {"a": 5, "b": 5}))])
        assert out[0].content == "10"
    finally:
        await ts.aclose()
    assert ts.closed


def test_example_runs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRONLOOP_MODEL")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "mcp_agent.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "tools: demo__add, demo__slow, demo__fail" in out, out
    assert "[success] demo__add: 5" in out, out
    assert "[error] demo__fail:" in out, out
    assert "server process exited: True" in out, out


# ------------------------------------------------------------ resources, prompts, notices


def test_resources_and_prompts(stdio: McpToolset) -> None:
    listed = stdio.list_resources()
    assert [(r["uri"], r["name"]) for r in listed] == [("config://app", "app_config")]
    assert listed[0]["mimeType"] == "text/plain"
    (content,) = stdio.read_resource("config://app")
    assert content == {"uri": "config://app", "mimeType": "text/plain", "text": "debug=false"}
    # A templated resource is read by its concrete URI.
    assert stdio.read_resource("greeting://Ada")[0]["text"] == "Hello, Ada!"
    with pytest.raises(McpError, match="ironloop-test"):
        stdio.read_resource("nothing://here")

    (prompt,) = stdio.list_prompts()
    assert prompt["name"] == "review"
    assert {a["name"]: a.get("required", False) for a in prompt["arguments"]} == {
        "code": True,
        "language": False,
    }
    got = stdio.get_prompt("review", {"code": "x = 1"})
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Review this python code:\nx = 1"}}
    ]
    (msg,) = prompt_messages(got)
    assert msg.type == "human" and msg.content == "Review this python code:\nx = 1"
    with pytest.raises(McpError):
        stdio.get_prompt("review")  # `code` is required


async def test_resources_and_prompts_async(server_env: dict[str, str]) -> None:
    server = await McpToolset.astdio(sys.executable, [SERVER], env=server_env)
    try:
        assert (await server.alist_resources())[0]["uri"] == "config://app"
        assert (await server.aread_resource("config://app"))[0]["text"] == "debug=false"
        assert (await server.alist_prompts())[0]["name"] == "review"
        got = await server.aget_prompt("review", {"code": "y", "language": "rust"})
        assert got["messages"][0]["content"]["text"] == "Review this rust code:\ny"
    finally:
        await server.aclose()


def test_server_progress_reaches_the_tool_context(stdio: McpToolset) -> None:
    seen: list[Any] = []
    node = ToolNode(stdio.tools)
    out = node.invoke({"messages": [ai(("count", {"n": 3}))]}, on_progress=seen.append)
    assert out["messages"][0].content == "counted to 3"
    # The SDK delivers each notification on a task of its own: the last may trail the
    # result by a moment, and two may swap places.
    deadline = time.monotonic() + 5
    while len(seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(seen, key=lambda p: p["progress"]) == [
        {"progress": 1.0, "total": 3.0, "message": "step 1"},
        {"progress": 2.0, "total": 3.0, "message": "step 2"},
        {"progress": 3.0, "total": 3.0, "message": "step 3"},
    ]


def test_a_tools_list_change_lists_the_tools_again(stdio: McpToolset) -> None:
    before = stdio.tools
    assert stdio.tools == before  # the same objects while nothing changed
    (msg,) = run(ToolNode(stdio.tools), ("grow", {}))
    assert msg.content == "added triple"
    deadline = time.monotonic() + 10
    while "triple" not in {t.name for t in stdio.tools}:
        assert time.monotonic() < deadline, "the tools/list_changed notification never arrived"
        time.sleep(0.05)
    (tripled,) = run(ToolNode(stdio.tools), ("triple", {"x": 4}))
    assert tripled.content == "12"


def test_a_stdio_server_that_dies_is_started_again_on_the_next_call(
    server_env: dict[str, str], files: dict[str, Path]
) -> None:
    # The restart happens inside the next call, so it counts against that call's time
    # limit: a generous one, as a loaded machine starts Python slowly.
    stdio = McpToolset.stdio(sys.executable, [SERVER], env=server_env, timeout=60.0)
    node = ToolNode(stdio.tools, handle_tool_errors=True)
    first = stdio.pid
    assert first is not None
    (died,) = run(node, ("die", {}))
    assert died.status == "error" and "ironloop-test" in died.content
    wait_gone(first)
    # The next call starts the server again and runs on the new process.
    (msg,) = run(node, ("add", {"a": 2, "b": 3}))
    assert msg.content == "5"
    assert stdio.pid not in (None, first)
    assert len(lines(files["starts"])) == 2
    assert not stdio.closed

    # A server that keeps dying is given up on: three restarts a minute at most.
    for _ in range(3):
        run(node, ("die", {}))
        run(node, ("whoami", {}))
    (gone,) = run(node, ("add", {"a": 1, "b": 1}))
    assert gone.status == "error" and "not connected" in gone.content
    assert stdio.closed
    assert len(lines(files["starts"])) <= 4  # the first start and at most 3 restarts
    stdio.close()


# ------------------------------------------------------------ misbehaving servers, limits

BAD_SERVER = str(Path(__file__).with_name("mcp_bad_server.py"))


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("silent", "it printed nothing on its stdout"),
        ("garbage", 'not JSON-RPC (the first: "Starting the server...'),
        ("bigline", "over the message size limit"),
    ],
)
def test_a_server_that_never_completes_the_handshake_fails_within_connect_timeout(
    mode: str, says: str, tmp_path: Path
) -> None:
    """A silent server, one printing logs on stdout, one printing a 200 MB line: each
    fails `stdio(...)` within `connect_timeout` (not when the server exits), says what
    the server printed, and leaves no process."""
    pid_file = tmp_path / "pid"
    env = {"MCP_BAD_PID": str(pid_file)}
    # The 200 MB line must be read whole before the limit to be reported: room for a
    # loaded machine.
    limit = 20.0 if mode == "bigline" else 2.0
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError) as raised:
        McpToolset.stdio(sys.executable, [BAD_SERVER, mode], env=env, connect_timeout=limit)
    took = time.perf_counter() - t0
    assert took < limit + 5, f"{mode}: failed after {took:.1f} s"
    text = str(raised.value)
    assert f"handshake within {limit:.0f} s" in text, text
    assert says in text, text
    assert "connect_timeout" in text and "mcp_bad_server.py" in text, text
    wait_gone(int(pid_file.read_text()), within=5.0)


def test_a_big_line_fails_fast_when_the_server_waits(tmp_path: Path) -> None:
    """The 200 MB line is not held in memory and does not stall the reader: with the
    default 16 MiB limit the handshake fails at its time limit, not later."""
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match="handshake within 3 s"):
        McpToolset.stdio(sys.executable, [BAD_SERVER, "bigline"], connect_timeout=3)
    assert time.perf_counter() - t0 < 8


async def test_astdio_obeys_connect_timeout(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match="nothing on its stdout"):
        await McpToolset.astdio(sys.executable, [BAD_SERVER, "silent"], connect_timeout=1.5)
    assert time.perf_counter() - t0 < 6


def test_every_request_after_the_handshake_obeys_timeout() -> None:
    """A server that completes the handshake and then answers nothing: listing its
    tools fails within the toolset's `timeout`, naming the request."""
    t0 = time.perf_counter()
    with pytest.raises(McpError, match=r"did not answer tools/list within 1\.5 s") as raised:
        McpToolset.stdio(sys.executable, [BAD_SERVER, "mute"], timeout=1.5)
    assert time.perf_counter() - t0 < 6.5
    assert "timeout" in str(raised.value)


def test_mcp_tools_have_a_time_limit_by_default(server_env: dict[str, str]) -> None:
    with McpToolset.stdio(sys.executable, [SERVER], env=server_env) as ts:
        assert {t.timeout for t in ts} == {60.0}


def test_the_server_dies_with_a_killed_parent(tmp_path: Path, server_env: dict[str, str]) -> None:
    """`kill -9` of the process that opened the toolset (no destructor, no atexit):
    the server is gone within a second."""
    script = (
        "import sys, time\n"
        "from ironloop.mcp import McpToolset\n"
        f"ts = McpToolset.stdio(sys.executable, [{SERVER!r}])\n"
        "print(ts.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ | server_env,
    )
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(parent.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(60)
        assert line and line[0].strip().isdigit(), line
        server = int(line[0])
        assert alive(server)
    finally:
        parent.kill()  # SIGKILL
        parent.wait()
    wait_gone(server, within=1.0)


def _start_http_server(port: int = 0) -> tuple[subprocess.Popen[str], str]:
    args = [sys.executable, SERVER, "--http"] + (["--port", str(port)] if port else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(30)
    assert line and line[0].startswith("READY "), f"the HTTP server did not start: {line}"
    return proc, line[0].split()[1]


def test_an_http_session_the_server_dropped_is_opened_again() -> None:
    """The HTTP server goes down (a call made meanwhile is an error result that says
    what happened, not the SDK's transport type name) and comes back with its sessions
    gone: the next call opens a new session and succeeds."""
    proc, url = _start_http_server()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        with McpToolset.http(url, timeout=30) as ts:
            node = ToolNode(ts.tools)
            assert run(node, ("add", {"a": 1, "b": 2}))[0].content == "3"
            proc.kill()
            proc.wait()
            (down,) = run(node, ("add", {"a": 1, "b": 1}))
            assert down.status == "error", down.content
            assert "rmcp::" not in down.content, down.content
            proc, _ = _start_http_server(port)
            (again,) = run(node, ("add", {"a": 2, "b": 2}))
            assert (again.status, again.content) == ("success", "4"), again.content
            (next_one,) = run(node, ("add", {"a": 3, "b": 2}))
            assert next_one.content == "5"
            assert not ts.closed
    finally:
        proc.kill()
        proc.wait()


def test_an_http_server_that_never_answers_fails_within_connect_timeout() -> None:
    """It accepts the connection and reads the request, and never answers."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    try:
        t0 = time.perf_counter()
        with pytest.raises(ConnectionError, match=r"handshake within 1\.5 s") as raised:
            McpToolset.http(f"http://127.0.0.1:{port}/mcp", connect_timeout=1.5)
        assert time.perf_counter() - t0 < 6.5
        assert "connect_timeout" in str(raised.value)
    finally:
        stop.set()
        for c in held:
            c.close()
        listener.close()
