"""``ShellToolMiddleware`` (LangChain 1.5's): a ``shell`` tool backed by one persistent
shell session per agent run — ``cd``, variables and files carry over from command to
command — started by an execution policy (``shell_execution``), with startup and
shutdown commands, a time limit per command, bounded output and optional redaction
of what the output shows (``RedactionRule``: the PII detectors, in Rust)."""

from __future__ import annotations

import logging
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from typing_extensions import NotRequired

from ironloop._ironloop import _BASH_ENV_ALLOWED
from ironloop._tool import tool
from ironloop.messages import ToolMessage
from ironloop.middleware._redaction import PIIDetectionError, RedactionRule
from ironloop.middleware.shell_execution import (
    SHELL_TEMP_PREFIX,
    BaseExecutionPolicy,
    CodexSandboxExecutionPolicy,
    DockerExecutionPolicy,
    HostExecutionPolicy,
)
from ironloop.middleware.types import AgentMiddleware, AgentState, PrivateStateAttr, ToolCallRequest

__all__ = [
    "CodexSandboxExecutionPolicy",
    "DockerExecutionPolicy",
    "HostExecutionPolicy",
    "RedactionRule",
    "ShellSession",
    "ShellToolMiddleware",
    "ShellToolState",
]

logger = logging.getLogger(__name__)

DEFAULT_TOOL_DESCRIPTION = (
    "Execute a shell command inside a persistent session. Before running a command, "
    "confirm the working directory is correct (e.g., inspect with `ls` or `pwd`) and "
    "ensure any parent directories exist. Prefer absolute paths and quote paths "
    'containing spaces, such as `cd "/path/with spaces"`. Chain multiple commands '
    "with `&&` or `;` instead of embedding newlines. Avoid unnecessary `cd` usage "
    "unless explicitly required so the session remains stable. Outputs may be "
    "truncated when they become very large, and long running commands will be "
    "terminated once their configured timeout elapses."
)


class ShellToolState(AgentState):
    """The agent's state with the id of the run's shell session (private)."""

    shell_session_id: NotRequired[Annotated[str, PrivateStateAttr]]


@dataclass
class CommandResult:
    """What one command gave: its output (stderr lines marked), exit code (``None``
    after a timeout) and whether the output was cut."""

    output: str
    exit_code: int | None
    timed_out: bool
    truncated: bool


class ShellSession:
    """One long-lived shell process. Each command is written to its stdin followed by
    a line that prints a unique marker and the exit code; output is read until that
    marker. A command that outlives ``policy.command_timeout`` kills the session's
    whole process group and the session is started again."""

    def __init__(
        self,
        workspace: Path,
        policy: BaseExecutionPolicy,
        command: Sequence[str],
        env: Mapping[str, str],
    ) -> None:
        self.workspace, self.policy, self.command, self.env = workspace, policy, command, env
        self._lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._process = self.policy.spawn(
            workspace=self.workspace, env=self.env, command=self.command
        )
        self._lines = queue.Queue()
        for name in ("stdout", "stderr"):
            stream = getattr(self._process, name)
            threading.Thread(target=self._pump, args=(name, stream), daemon=True).start()

    def _pump(self, name: str, stream: Any) -> None:
        for line in iter(stream.readline, ""):
            self._lines.put((name, line))
        self._lines.put((name, None))

    def restart(self) -> None:
        self.stop(self.policy.termination_timeout)
        self.start()

    def stop(self, timeout: float) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        try:
            if process.stdin is not None:
                process.stdin.write("exit\n")
                process.stdin.flush()
            process.wait(timeout=timeout)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self._kill(process)

    @staticmethod
    def _kill(process: subprocess.Popen[str]) -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        process.wait()

    def execute(self, command: str, *, timeout: float) -> CommandResult:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self.start()
            assert self._process is not None and self._process.stdin is not None
            marker = f"__IRONLOOP_DONE_{uuid.uuid4().hex}__"
            self._process.stdin.write(f"{command}\nprintf '\\n{marker} %s\\n' $?\n")
            self._process.stdin.flush()
            return self._collect(marker, timeout)

    def _collect(self, marker: str, timeout: float) -> CommandResult:
        out: list[str] = []
        deadline = time.monotonic() + timeout
        limit = self.policy.max_output_lines
        budget = self.policy.max_output_bytes
        truncated = False
        while True:
            left = deadline - time.monotonic()
            try:
                name, line = self._lines.get(timeout=max(left, 0))
            except queue.Empty:
                assert self._process is not None
                self._kill(self._process)
                self._process = None
                return CommandResult("".join(out), None, True, truncated)
            if line is None:
                if name == "stdout":  # the shell exited (``exit`` in the command)
                    return CommandResult("".join(out), self._exit_code(), False, truncated)
                continue
            if name == "stdout" and line.startswith(marker):
                code = line.strip().rsplit(" ", 1)[-1]
                exit_code = int(code) if code.lstrip("-").isdigit() else None
                # The marker's printf starts with a newline of its own.
                return CommandResult("".join(out).rstrip("\n"), exit_code, False, truncated)
            shown = line if name == "stdout" else f"[stderr] {line}"
            size = sum(len(s.encode()) for s in out) + len(shown.encode())
            if len(out) >= limit or (budget is not None and size > budget):
                truncated = True
                continue
            out.append(shown)

    def _exit_code(self) -> int | None:
        process, self._process = self._process, None
        return None if process is None else process.wait()


@dataclass
class _Session:
    session: ShellSession
    workspace: Path
    temporary: bool


class ShellToolMiddleware(AgentMiddleware):
    """Gives the agent a ``shell`` tool (``command``, or ``restart=True``) run in a
    persistent shell session, one per agent run, started before the run and ended
    after it.

    ``workspace_root`` is the session's working directory (made if missing; a
    temporary directory, deleted afterwards, when ``None``). ``startup_commands`` run
    first and must succeed (else ``RuntimeError``); ``shutdown_commands`` run last
    (failures are logged). ``execution_policy`` starts the shell: the default,
    ``HostExecutionPolicy``, runs it on this host in its own process group with the
    workspace tools' environment allow-list plus ``env`` — not a sandbox;
    ``DockerExecutionPolicy`` and ``CodexSandboxExecutionPolicy`` isolate it and are
    refused when their program is not installed. ``redaction_rules``
    (``RedactionRule``) rewrite what a result shows (``block``: the result is an
    error). ``shell_command`` is the shell (``("/bin/bash",)``).

    Example:
        >>> m = ShellToolMiddleware(workspace_root="/tmp/ironloop-shell-example")
        >>> [t.name for t in m.tools]
        ['shell']
    """

    state_schema: Any = ShellToolState

    def __init__(
        self,
        workspace_root: str | Path | None = None,
        *,
        startup_commands: tuple[str, ...] | list[str] | str | None = None,
        shutdown_commands: tuple[str, ...] | list[str] | str | None = None,
        execution_policy: BaseExecutionPolicy | None = None,
        redaction_rules: tuple[RedactionRule, ...] | list[RedactionRule] | None = None,
        tool_description: str | None = None,
        tool_name: str = "shell",
        shell_command: Sequence[str] | str | None = None,
        env: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self._workspace_root = Path(workspace_root) if workspace_root is not None else None
        self._startup = _commands(startup_commands)
        self._shutdown = _commands(shutdown_commands)
        self._policy = execution_policy or HostExecutionPolicy()
        self._rules = [r.resolve() for r in redaction_rules or ()]
        self._shell = _shell_command(shell_command)
        self._env = _environment(env)
        self._tool_name = tool_name
        self._sessions: dict[str, _Session] = {}

        def shell(command: str | None = None, restart: bool = False) -> str:
            """Run ``command`` in the session, or restart the session.

            Args:
                command: The shell command to execute.
                restart: Whether to restart the shell session.
            """
            raise RuntimeError(
                f"the {tool_name!r} tool runs only inside an agent with its "
                "ShellToolMiddleware (it needs the run's shell session)"
            )

        description = tool_description or DEFAULT_TOOL_DESCRIPTION
        self.tools = [tool(name=tool_name, description=description)(shell)]

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Starts the run's shell session and runs the startup commands."""
        if state.get("shell_session_id") in self._sessions:
            return None
        temporary = self._workspace_root is None
        if self._workspace_root is None:
            workspace = Path(tempfile.mkdtemp(prefix=SHELL_TEMP_PREFIX))
        else:
            workspace = self._workspace_root
            workspace.mkdir(parents=True, exist_ok=True)
        session = ShellSession(workspace, self._policy, self._shell, self._env)
        session.start()
        for command in self._startup:
            result = session.execute(command, timeout=self._policy.startup_timeout)
            if result.timed_out or result.exit_code not in (0, None):
                session.stop(self._policy.termination_timeout)
                why = "timed out" if result.timed_out else f"exit code {result.exit_code}"
                raise RuntimeError(f"Startup command {command!r} failed ({why}): {result.output}")
        key = uuid.uuid4().hex
        self._sessions[key] = _Session(session, workspace, temporary)
        return {"shell_session_id": key}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Runs the shutdown commands (failures logged) and ends the session."""
        held = self._sessions.pop(state.get("shell_session_id") or "", None)
        if held is None:
            return None
        for command in self._shutdown:
            result = held.session.execute(command, timeout=self._policy.command_timeout)
            if result.timed_out:
                logger.warning("Shutdown command %r timed out", command)
            elif result.exit_code not in (0, None):
                logger.warning(
                    "Shutdown command %r failed with exit code %s", command, result.exit_code
                )
        held.session.stop(self._policy.termination_timeout)
        if held.temporary:
            shutil.rmtree(held.workspace, ignore_errors=True)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.after_agent(state, runtime)

    def _run(self, request: ToolCallRequest) -> ToolMessage:
        call = request.tool_call
        state = request.state if isinstance(request.state, dict) else {}
        held = self._sessions.get(state.get("shell_session_id") or "")

        def answer(content: str, status: Literal["success", "error"] = "success") -> ToolMessage:
            return ToolMessage(
                content=content, tool_call_id=call["id"], name=call["name"], status=status
            )

        if held is None:
            return answer("The shell session is not running: start the agent again.", "error")
        args = call.get("args") or {}
        if args.get("restart"):
            held.session.restart()
            return answer("Shell session restarted.")
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return answer("Give a `command` to run, or `restart=true`.", "error")
        result = held.session.execute(command, timeout=self._policy.command_timeout)
        if result.timed_out:
            held.session.start()
            return answer(
                f"Error: Command timed out after {self._policy.command_timeout:.1f} seconds.",
                "error",
            )
        text = result.output or "<no output>"
        try:
            for rule in self._rules:
                text, _ = rule.apply(text)
        except PIIDetectionError as e:
            return answer(f"Output blocked: {e}", "error")
        if result.truncated:
            text += (
                f"\n\n... Output truncated (at most {self._policy.max_output_lines} lines"
                + (
                    f" / {self._policy.max_output_bytes} bytes"
                    if self._policy.max_output_bytes
                    else ""
                )
                + ")."
            )
        if result.exit_code not in (0, None):
            return answer(f"{text}\n\nExit code: {result.exit_code}", "error")
        return answer(text)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[Any], Any]) -> Any:
        if request.tool_call["name"] != self._tool_name:
            return handler(request)
        return self._run(request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        if request.tool_call["name"] != self._tool_name:
            return await handler(request)
        import asyncio

        return await asyncio.to_thread(self._run, request)


def _commands(commands: tuple[str, ...] | list[str] | str | None) -> tuple[str, ...]:
    if commands is None:
        return ()
    return (commands,) if isinstance(commands, str) else tuple(commands)


def _shell_command(command: Sequence[str] | str | None) -> tuple[str, ...]:
    if command is None:
        return ("/bin/bash",)
    shell = (command,) if isinstance(command, str) else tuple(command)
    if not shell:
        raise ValueError("shell_command must contain at least one argument.")
    return shell


def _environment(env: Mapping[str, Any] | None) -> dict[str, str]:
    """The session's environment: the workspace tools' allow-list taken from this
    process (so an API key it holds is not shown to the model), plus ``env``."""
    out = {k: os.environ[k] for k in _BASH_ENV_ALLOWED if k in os.environ}
    for key, value in (env or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"Environment variable names must be strings, got {key!r}")
        out[key] = str(value)
    return out
