"""``ironloop serve`` as a real process on a free loopback port, for the serve tests:
a copy of ``fixtures/serve_project`` (its databases in a temporary folder), the
console script started, ``/ok`` polled until it answers."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

PROJECT = Path(__file__).parent / "fixtures" / "serve_project"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ironloop_command() -> list[str]:
    """The installed console script beside this interpreter (what ``pip install``
    made), else the module."""
    script = Path(sys.executable).parent / "ironloop"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ironloop.cli"]


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, folder: Path, log: Path) -> None:
        self.proc, self.url, self.folder, self.log = proc, url, folder, log

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serve(tmp: Path, *args: str, project: Path = PROJECT, env: dict[str, str] | None = None,
          ready_timeout: float = 30.0) -> Iterator[Server]:  # fmt: skip
    folder = tmp / "project"
    if not folder.exists():
        shutil.copytree(project, folder)
    port = free_port()
    log = tmp / f"server-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*ironloop_command(), "serve", "--config", str(folder / "langgraph.json"),
             "--port", str(port), *args],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    server = Server(proc, url, folder, log)
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"ironloop serve exited ({proc.returncode}):\n{server.output()}")
            try:
                if httpx.get(url + "/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"ironloop serve did not answer:\n{server.output()}")
            time.sleep(0.05)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
