"""How ``ShellToolMiddleware``'s shell process is started (LangChain 1.5's execution
policies): on the host, in ironloop's workspace way (the workspace root as working
directory, its own process group so a timeout kills everything it started, the
environment an allow-list); inside the Codex CLI sandbox; or in a Docker container.
A policy whose program is missing is refused with a message naming it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "BaseExecutionPolicy",
    "CodexSandboxExecutionPolicy",
    "DockerExecutionPolicy",
    "HostExecutionPolicy",
]


def _spawn(
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.Popen[str]:
    """The shell process: pipes for its three streams, text mode, its own session
    (process group), so that a timeout or a stop can kill what it started too."""
    return subprocess.Popen(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        text=True,
        encoding="utf-8",
        errors="replace",
        bufsize=1,
        env=dict(env),
        preexec_fn=preexec_fn,
        start_new_session=True,
    )


def _positive(name: str, value: float | None) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"{name} must be positive if provided.")


@dataclass
class BaseExecutionPolicy:
    """What every policy sets: how long a command may run (``command_timeout``), the
    startup commands (``startup_timeout``), how long a stopping shell gets before it
    is killed (``termination_timeout``), and how much output a result keeps
    (``max_output_lines``, ``max_output_bytes``)."""

    command_timeout: float = 30.0
    startup_timeout: float = 30.0
    termination_timeout: float = 10.0
    max_output_lines: int = 100
    max_output_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.max_output_lines <= 0:
            raise ValueError("max_output_lines must be positive.")
        _positive("max_output_bytes", self.max_output_bytes)

    def spawn(
        self, *, workspace: Path, env: Mapping[str, str], command: Sequence[str]
    ) -> subprocess.Popen[str]:
        """Starts the persistent shell ``command`` in ``workspace`` with ``env``."""
        raise NotImplementedError(f"{type(self).__name__} does not say how to start a shell")


@dataclass
class HostExecutionPolicy(BaseExecutionPolicy):
    """The shell runs on this host, in the workspace root, in its own process group,
    with the workspace tools' environment allow-list (plus ``env``): no filesystem or
    network sandbox — a command can reach whatever this process's user can. Optional
    ``cpu_time_seconds`` / ``memory_bytes`` limits apply to the shell and what it runs
    (POSIX resource limits)."""

    cpu_time_seconds: int | None = None
    memory_bytes: int | None = None
    create_process_group: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("cpu_time_seconds", self.cpu_time_seconds)
        _positive("memory_bytes", self.memory_bytes)

    def _limits(self) -> Callable[[], None] | None:
        if self.cpu_time_seconds is None and self.memory_bytes is None:
            return None
        import resource

        cpu, memory = self.cpu_time_seconds, self.memory_bytes

        def apply() -> None:  # runs in the child, before exec
            if cpu is not None:
                resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
            if memory is not None:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        return apply

    def spawn(
        self, *, workspace: Path, env: Mapping[str, str], command: Sequence[str]
    ) -> subprocess.Popen[str]:
        return _spawn(command, env=env, cwd=workspace, preexec_fn=self._limits())


def _program(binary: str, policy: str) -> str:
    path = shutil.which(binary)
    if path is None:
        raise RuntimeError(
            f"{policy} needs the {binary!r} program, which is not on PATH: install it, "
            "or use HostExecutionPolicy"
        )
    return path


@dataclass
class CodexSandboxExecutionPolicy(BaseExecutionPolicy):
    """The shell runs inside the Codex CLI's sandbox (``codex sandbox <platform>``:
    Seatbelt on macOS, Landlock/seccomp on Linux); ``config_overrides`` become its
    ``-c key=value`` options."""

    binary: str = "codex"
    platform: Literal["auto", "macos", "linux"] = "auto"
    config_overrides: Mapping[str, Any] = field(default_factory=dict)

    def command(self, shell: Sequence[str]) -> list[str]:
        """The full command line that starts ``shell`` in the sandbox."""
        platform = self.platform
        if platform == "auto":
            if sys.platform.startswith("linux"):
                platform = "linux"
            elif sys.platform == "darwin":
                platform = "macos"
            else:
                raise RuntimeError(
                    "CodexSandboxExecutionPolicy cannot tell this platform's sandbox: set "
                    "platform='linux' or 'macos'"
                )
        line = [_program(self.binary, "CodexSandboxExecutionPolicy"), "sandbox", platform]
        for key, value in sorted(dict(self.config_overrides).items()):
            try:
                shown = json.dumps(value)
            except TypeError:
                shown = str(value)
            line += ["-c", f"{key}={shown}"]
        return [*line, "--", *shell]

    def spawn(
        self, *, workspace: Path, env: Mapping[str, str], command: Sequence[str]
    ) -> subprocess.Popen[str]:
        return _spawn(self.command(command), env=env, cwd=workspace)


@dataclass
class DockerExecutionPolicy(BaseExecutionPolicy):
    """The shell runs in a new Docker container (``docker run -i``) of ``image``: no
    network unless ``network_enabled``, removed on exit, the workspace mounted at the
    same path when it is a real directory (a temporary workspace is not mounted).
    ``memory_bytes``, ``cpus``, ``read_only_rootfs``, ``user`` and ``extra_run_args``
    become ``docker run`` options. Refused (``RuntimeError``) when ``docker`` is not
    installed."""

    binary: str = "docker"
    image: str = "python:3.12-alpine3.19"
    remove_container_on_exit: bool = True
    network_enabled: bool = False
    extra_run_args: Sequence[str] | None = None
    memory_bytes: int | None = None
    cpu_time_seconds: Any | None = None
    cpus: str | None = None
    read_only_rootfs: bool = False
    user: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("memory_bytes", self.memory_bytes)
        if self.cpu_time_seconds is not None:
            raise RuntimeError(
                "DockerExecutionPolicy does not support cpu_time_seconds; configure CPU "
                "limits using Docker run options such as '--cpus'."
            )
        if self.cpus is not None and not self.cpus.strip():
            raise ValueError("cpus must be a non-empty string when provided.")
        if self.user is not None and not self.user.strip():
            raise ValueError("user must be a non-empty string when provided.")
        self.extra_run_args = tuple(self.extra_run_args or ())

    def command(self, workspace: Path, env: Mapping[str, str], shell: Sequence[str]) -> list[str]:
        """The ``docker run`` command line that starts ``shell``."""
        line = [_program(self.binary, "DockerExecutionPolicy"), "run", "-i"]
        if self.remove_container_on_exit:
            line.append("--rm")
        if not self.network_enabled:
            line += ["--network", "none"]
        if self.memory_bytes is not None:
            line += ["--memory", str(self.memory_bytes)]
        temporary = workspace.name.startswith(SHELL_TEMP_PREFIX)
        if workspace.is_dir() and not temporary:
            line += ["-v", f"{workspace}:{workspace}", "-w", str(workspace)]
        else:
            line += ["-w", "/"]
        if self.read_only_rootfs:
            line.append("--read-only")
        for key, value in env.items():
            line += ["-e", f"{key}={value}"]
        if self.cpus is not None:
            line += ["--cpus", self.cpus]
        if self.user is not None:
            line += ["--user", self.user]
        line += [*(self.extra_run_args or ()), self.image, *shell]
        return line

    def spawn(
        self, *, workspace: Path, env: Mapping[str, str], command: Sequence[str]
    ) -> subprocess.Popen[str]:
        # The container gets `env`; the docker client itself runs with this process's.
        return _spawn(self.command(workspace, env, command), env=os.environ, cwd=workspace)


#: The prefix of a temporary workspace (one made because no ``workspace_root`` was
#: given): deleted when the session ends, never mounted into a container.
SHELL_TEMP_PREFIX = "ironloop-shell-"
