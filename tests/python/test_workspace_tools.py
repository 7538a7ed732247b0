"""ironloop.tools.workspace: the Rust workspace tools as Python tool objects, inside
ToolNode and create_react_agent like any tool — errors as error ToolMessages naming
the path, timeouts, cancellation — called directly, and the example program."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ironloop import ToolNode, create_react_agent, tool
from ironloop.errors import (
    ToolExecutionError,
    ToolInvalidArgsError,
    ToolTimeoutError,
)
from ironloop.messages import AIMessage, ToolMessage
from ironloop.models import ScriptedChatModel
from ironloop.tools import NativeTool, workspace

REPO = Path(__file__).resolve().parents[2]
FILE_TOOLS = ["read_file", "write_file", "edit_file", "list_files", "search"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET\n")
    (r / "notes.txt").write_text("alpha\nbeta\nalpha\n")
    (r / ".gitignore").write_text("*.log\n")
    (r / "debug.log").write_text("beta in a log\n")
    return r


def ai(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)],
    )


def run(node: ToolNode, *calls: tuple[str, dict[str, Any]]) -> list[ToolMessage]:
    out: list[ToolMessage] = node.invoke({"messages": [ai(*calls)]})["messages"]
    assert [m.tool_call_id for m in out] == [f"c{i}" for i in range(len(calls))]
    return out


def test_tool_objects_look_like_tools(root: Path) -> None:
    tools = workspace(root)
    assert [t.name for t in tools] == FILE_TOOLS
    assert all(isinstance(t, NativeTool) for t in tools)
    read = tools[0]
    assert read.return_direct is False
    assert read.timeout is None
    assert read.parameters["required"] == ["path"]
    assert read.args_schema == read.parameters
    assert "UTF-8 text file" in read.description
    assert read.to_openai() == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": read.description,
            "parameters": read.parameters,
        },
    }
    assert read.to_anthropic()["input_schema"] == read.parameters
    assert repr(read) == "NativeTool(name='read_file')"
    bash = workspace(root, allow_bash=True, bash_timeout=5, timeout=9.5)
    assert [t.name for t in bash] == [*FILE_TOOLS, "bash"]
    assert bash[-1].parameters["required"] == ["command"]
    assert "default 5" in bash[-1].description
    assert {t.timeout for t in bash} == {9.5}


def test_bad_roots_and_options_raise(root: Path) -> None:
    with pytest.raises(FileNotFoundError, match="missing"):
        workspace(root / "missing")
    with pytest.raises(ValueError, match="not a directory"):
        workspace(root / "notes.txt")
    with pytest.raises(ValueError, match="bash_timeout"):
        workspace(root, bash_timeout=0)
    with pytest.raises(ValueError, match="timeout"):
        workspace(root, timeout=-1.0)
    with pytest.raises(ValueError, match="max_output_bytes"):
        workspace(root, max_output_bytes=0)
    with pytest.raises(TypeError, match="allow_bash"):
        workspace(root, allow_bash="yes")  # type: ignore[arg-type]
    workspace(str(root))  # str or PathLike


def test_direct_calls(root: Path) -> None:
    read, write, edit, ls, search = workspace(root)
    assert (
        write(path="sub/new.txt", content="hi\n") == "Wrote 3 bytes to `sub/new.txt` (a new file)."
    )
    assert read(path="sub/new.txt") == "hi\n"
    assert read.invoke({"path": "notes.txt", "offset": 2, "limit": 1}).startswith("beta\n")
    assert ls() == ".gitignore\nnotes.txt\nsub/\nsub/new.txt"
    assert search.invoke({"pattern": "beta"}) == "notes.txt:2: beta"
    with pytest.raises(
        ToolExecutionError, match=r"occurs 2 times in `notes.txt` \(at lines 1, 3\)"
    ):
        edit(path="notes.txt", old="alpha", new="gamma")
    with pytest.raises(
        ToolInvalidArgsError, match=r"`\.\./outside/secret.txt` leaves the workspace"
    ):
        read(path="../outside/secret.txt")
    with pytest.raises(ToolInvalidArgsError, match="path"):
        read()  # the schema is checked first
    assert read({"path": "sub/new.txt"}) == "hi\n"
    with pytest.raises(TypeError, match="as keywords"):
        read("sub/new.txt", limit=1)
    with pytest.raises(TypeError, match="must be a dict"):
        read.invoke("notes.txt")  # type: ignore[arg-type]


async def test_direct_ainvoke(root: Path) -> None:
    read = workspace(root)[0]
    assert await read.ainvoke({"path": "notes.txt"}) == "alpha\nbeta\nalpha\n"
    with pytest.raises(ToolExecutionError, match="`nope` does not exist"):
        await read.ainvoke({"path": "nope"})


def test_toolnode_turns_every_escape_into_an_error_message(root: Path) -> None:
    (root / "link_out").symlink_to(root.parent / "outside")
    (root / "file_out").symlink_to(root.parent / "outside" / "secret.txt")
    node = ToolNode(workspace(root))
    escapes = ["../outside/secret.txt", "/etc/passwd", "a/../../x", "link_out/secret.txt"]
    calls: list[tuple[str, dict[str, Any]]] = []
    for p in escapes:
        calls += [
            ("read_file", {"path": p}),
            ("write_file", {"path": p, "content": "pwned"}),
            ("edit_file", {"path": p, "old": "TOP", "new": "x"}),
            ("list_files", {"path": p}),
            ("search", {"pattern": "SECRET", "path": p}),
        ]
    calls += [("read_file", {"path": "file_out"}), ("read_file", {"path": "notes.txt"})]
    out = run(node, *calls)
    for m, (name, args) in zip(out[:-1], calls[:-1], strict=True):
        assert m.status == "error", (name, args, m.content)
        assert m.name == name
        assert f"`{args['path']}`" in m.text, m.text
        assert "workspace root" in m.text
    assert out[-1].status == "success"
    assert out[-1].text == "alpha\nbeta\nalpha\n"
    assert (root.parent / "outside" / "secret.txt").read_text() == "TOP SECRET\n"
    assert not (root.parent / "x").exists()
    # Walking the root does not follow the link either.
    (listing,) = run(node, ("list_files", {}))
    assert "secret" not in listing.text
    (found,) = run(node, ("search", {"pattern": "SECRET"}))
    assert found.text.startswith("[no matches")


def test_toolnode_mixes_native_and_python_tools(root: Path) -> None:
    @tool
    def shout(text: str) -> str:
        """Upper-cases text."""
        return text.upper()

    node = ToolNode([*workspace(root), shout], strategy="sequential")
    assert set(node.tools_by_name) == {*FILE_TOOLS, "shout"}
    out = run(
        node,
        ("edit_file", {"path": "notes.txt", "old": "beta", "new": "BETA"}),
        ("shout", {"text": "hi"}),
        ("edit_file", {"path": "notes.txt", "old": "alpha", "new": "x"}),
        ("read_file", {"path": "notes.txt", "offset": "two"}),  # invalid args
        ("search", {"pattern": "beta", "ignore_case": True}),  # debug.log is ignored
    )
    assert [m.status for m in out] == ["success", "success", "error", "error", "success"]
    assert out[0].text.startswith("Edited `notes.txt`")
    assert out[1].text == "HI"
    assert "`old` occurs 2 times in `notes.txt`" in out[2].text
    assert out[3].text.startswith(
        "Error invoking tool 'read_file' with kwargs {'path': 'notes.txt', 'offset': 'two'} "
        "with error:\n offset: "
    )
    assert out[4].text == "notes.txt:2: BETA"
    with pytest.raises(ValueError, match=r"several tools named .*'read_file'"):
        ToolNode([*workspace(root), *workspace(root)])


def test_handle_tool_errors_false_raises_the_typed_error(root: Path) -> None:
    node = ToolNode(workspace(root), handle_tool_errors=False)
    with pytest.raises(ToolInvalidArgsError, match="/etc/passwd"):
        node.invoke({"messages": [ai(("read_file", {"path": "/etc/passwd"}))]})


def test_no_bash_unless_allowed(root: Path) -> None:
    (m,) = run(ToolNode(workspace(root)), ("bash", {"command": "touch pwned"}))
    assert m.status == "error"
    assert m.text.startswith("Error: bash is not a valid tool, try one of [")
    assert not (root / "pwned").exists()


def test_bash_in_toolnode(root: Path) -> None:
    node = ToolNode(workspace(root, allow_bash=True, max_output_bytes=200))
    (ok, bad, long) = run(
        node,
        ("bash", {"command": "cat notes.txt | sort -u"}),
        ("bash", {"command": "echo nope >&2; exit 4"}),
        ("bash", {"command": "seq 1 1000"}),
    )
    assert ok.status == "success"
    assert ok.text == "exit code: 0\n[stdout]\nalpha\nbeta"
    assert bad.status == "success"  # a failing command is a result the model reads
    assert bad.text == "exit code: 4\n[stderr]\nnope"
    assert "[truncated: " in long.text and " bytes omitted]" in long.text
    assert long.text.endswith("1000")


def test_bash_gets_an_allow_listed_environment(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret-0001")
    monkeypatch.setenv("LANG", "C.UTF-8")
    node = ToolNode(workspace(root, allow_bash=True, env={"PROJECT": "demo"}))
    (m,) = run(node, ("bash", {"command": "env"}))
    env = dict(line.split("=", 1) for line in m.text.split("\n")[2:] if "=" in line)
    assert "sk-parent-secret-0001" not in m.text
    assert "OPENAI_API_KEY" not in env
    assert env["PROJECT"] == "demo"
    assert env["LANG"] == "C.UTF-8"
    assert env["PATH"] == os.environ["PATH"]  # commands are still found


def test_bash_timeout_is_an_error_message(root: Path) -> None:
    node = ToolNode(workspace(root, allow_bash=True, bash_timeout=0.5))
    start = time.monotonic()
    (m,) = run(node, ("bash", {"command": "echo working; sleep 30"}))
    assert time.monotonic() - start < 5
    assert m.status == "error"
    assert "timed out after 0.5s" in m.text
    assert "working" in m.text


def test_per_call_timeout_like_tool_timeout(root: Path) -> None:
    # `timeout=` is the executor's limit, as with @tool(timeout=...).
    tools = workspace(root, allow_bash=True, timeout=0.3)
    (m,) = run(ToolNode(tools), ("bash", {"command": "sleep 30"}))
    assert m.status == "error"
    assert "timed out after 0.300s" in m.text
    with pytest.raises(ToolTimeoutError):
        ToolNode(tools, handle_tool_errors=False).invoke(
            {"messages": [ai(("bash", {"command": "sleep 30"}))]}
        )


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_dead(pid: int) -> None:
    deadline = time.monotonic() + 5
    while _alive(pid):
        assert time.monotonic() < deadline, f"process {pid} survived"
        time.sleep(0.02)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_cancelling_ainvoke_kills_the_command(root: Path) -> None:
    node = ToolNode(workspace(root, allow_bash=True))
    msg = ai(("bash", {"command": "sleep 30 & echo $! > pid.txt; wait"}))
    task = asyncio.ensure_future(node.ainvoke({"messages": [msg]}))
    pid_file = root / "pid.txt"
    for _ in range(250):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    assert _alive(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 5
    while _alive(pid):
        assert time.monotonic() < deadline, f"process {pid} survived"
        await asyncio.sleep(0.02)


async def test_toolnode_ainvoke(root: Path) -> None:
    node = ToolNode(workspace(root))
    out = await node.ainvoke(
        {
            "messages": [
                ai(("read_file", {"path": "notes.txt"}), ("list_files", {"pattern": "*.log"}))
            ]
        }
    )
    assert [m.text for m in out["messages"]] == [
        "alpha\nbeta\nalpha\n",
        "[nothing under the workspace root matches `*.log`]",
    ]


def test_react_agent_with_workspace_tools(root: Path) -> None:
    model = ScriptedChatModel(
        [
            {
                "content": "",
                "tool_calls": [
                    {"name": "search", "args": {"pattern": "^alpha$"}},
                    {"name": "read_file", "args": {"path": "../outside/secret.txt"}},
                ],
            },
            {
                "content": "",
                "tool_calls": [
                    {
                        "name": "write_file",
                        "args": {"path": "out/summary.md", "content": "# alpha x2\n"},
                    }
                ],
            },
            "Done: alpha appears twice; summary written.",
        ]
    )
    agent = create_react_agent(model, workspace(root))
    out = agent.invoke({"messages": [("user", "Count alpha and write a summary.")]})
    msgs = out["messages"]
    assert msgs[-1].text == "Done: alpha appears twice; summary written."
    tool_msgs = [m for m in msgs if isinstance(m, ToolMessage)]
    assert [(m.name, m.status) for m in tool_msgs] == [
        ("search", "success"),
        ("read_file", "error"),
        ("write_file", "success"),
    ]
    assert tool_msgs[0].text == "notes.txt:1: alpha\nnotes.txt:3: alpha"
    assert "`../outside/secret.txt`" in tool_msgs[1].text
    assert (root / "out" / "summary.md").read_text() == "# alpha x2\n"
    # The model was shown the tools as OpenAI-format dicts.
    _, tools = model.calls[0]
    assert tools is not None
    assert [t["function"]["name"] for t in tools] == FILE_TOOLS


async def test_react_agent_ainvoke_with_workspace_tools(root: Path) -> None:
    model = ScriptedChatModel(
        [
            {"content": "", "tool_calls": [{"name": "list_files", "args": {}}]},
            "listed",
        ]
    )
    agent = create_react_agent(model, workspace(root))
    out = await agent.ainvoke({"messages": [("user", "ls")]})
    assert out["messages"][-2].text == ".gitignore\nnotes.txt"
    assert out["messages"][-1].text == "listed"


def test_example_runs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRONLOOP_MODEL")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "workspace_agent.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "tools: read_file, write_file, edit_file, list_files, search, bash" in out
    assert "[success] edit_file: Edited `greet.py`" in out
    assert "[success] bash: exit code: 0" in out
    assert "Hello, Ada!" in out
    assert "[error] read_file:" in out and "`../../etc/passwd`" in out
    assert "debug.log" not in out  # ignored by the scratch project's .gitignore
    assert 'return f"Hello, {name}!"' in out


def test_the_guides_snippet_runs() -> None:
    readme = (REPO / "docs" / "tools.md").read_text()
    code = readme.split("## Workspace tools", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    expected = [
        line[2:].removesuffix("...") for line in code.splitlines() if line.startswith("# [")
    ]
    got = proc.stdout.splitlines()
    assert len(got) == len(expected) == 3, got
    for g, e in zip(got, expected, strict=True):
        assert g.startswith(e), (g, e)


def _bytes_read() -> int:
    """What this process has read from files and pipes so far (Linux's `rchar`)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io")
def test_read_file_of_a_huge_line_reads_only_what_it_returns(root: Path) -> None:
    # One 200 MB line: read_file returns its first 64 KiB and stops reading there
    # (before: it loaded the whole line, +202 MB of memory, to return 64 KiB).
    size = 200 * 1024 * 1024
    with open(root / "huge.txt", "wb") as f:
        chunk = b"x" * (1 << 20)
        for _ in range(size >> 20):
            f.write(chunk)
    read = workspace(root)[0]
    before = _bytes_read()
    t = time.perf_counter()
    text = read(path="huge.txt")
    took = time.perf_counter() - t
    read_bytes = _bytes_read() - before
    assert text.startswith("x" * 65536)
    assert "line 1 is longer than 65536 bytes" in text
    assert len(text) < 66000
    assert read_bytes < 1024 * 1024, f"read {read_bytes} bytes to return {len(text)}"
    assert took < 5, took
