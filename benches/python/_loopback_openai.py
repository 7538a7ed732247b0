"""A loopback OpenAI-compatible chat server for benchmarks, in its own process.

It answers ``POST /v1/chat/completions`` after a fixed ``delay`` with a scripted
reply, in the real Chat Completions wire format, streaming (SSE, with
``stream_options.include_usage``) or not, as the request asks. Every conversation
makes ``rounds`` tool rounds of ``calls`` parallel calls to the tool ``tool`` (args
``{"query": "<round>.<call>"}``), then answers with the text ``answer``::

    from _loopback_openai import LoopbackOpenAI

    with LoopbackOpenAI(delay=0.05, rounds=3, calls=2) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="loopback")
        ...
        print(srv.stats())  # requests served, server CPU seconds, per-round gaps

The round is read from the request itself (the number of ``tool`` messages divided
by ``calls``), so the server keeps no state a client could desynchronise, and any
number of conversations run at once. A first user message may override the
script for its conversation with a marker ``[loopback rounds=R calls=K]``.

The conversation is identified by its first user message (give each one a unique
marker, e.g. ``"conversation 17"``): the server records when each of its requests
arrived, and ``stats()["round_gaps"]`` gives, for every pair of consecutive
requests of one conversation, the seconds between them — the delay plus whatever
the client spent between rounds (tools, checkpoints, building the next request),
measured the same way for every client framework.

The server is ``asyncio.Protocol`` over raw HTTP/1.1 (keep-alive, ``Content-Length``
request bodies; chunked responses for streams), one process per ``workers`` sharing
the port through ``SO_REUSEPORT``; its own CPU time is in ``stats()`` so a benchmark
can show it is not the bottleneck. Standard library only.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
from typing import Any

__all__ = ["LoopbackOpenAI"]

_MARKER = re.compile(r"\[loopback rounds=(\d+) calls=(\d+)\]")
_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024


class LoopbackOpenAI:
    """A scripted OpenAI-compatible server on ``127.0.0.1``, in child process(es).

    Args:
        delay: seconds between a request's arrival and its reply (the model's latency).
        rounds: tool rounds per conversation before the final answer.
        calls: parallel tool calls per round.
        tool: the name of the tool the scripted assistant calls (args ``{"query": str}``).
        answer: the final answer's text.
        workers: server processes sharing the port (``SO_REUSEPORT``); 1 is plenty
            for a few thousand requests per second.
        port: the port to listen on; 0 (default) picks a free one.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        delay: float = 0.05,
        rounds: int = 3,
        calls: int = 2,
        *,
        tool: str = "lookup",
        answer: str = "All done.",
        workers: int = 1,
        port: int = 0,
    ) -> None:
        if delay < 0 or rounds < 0 or calls < 1 or workers < 1:
            raise ValueError(
                "LoopbackOpenAI needs delay >= 0, rounds >= 0, calls >= 1 and workers >= 1 "
                f"(got delay={delay}, rounds={rounds}, calls={calls}, workers={workers})"
            )
        self.delay = delay
        self.rounds = rounds
        self.calls = calls
        self.tool = tool
        self.answer = answer
        self.workers = workers
        self.port = port
        self._procs: list[subprocess.Popen[str]] = []

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: the ``base_url`` for an OpenAI client."""
        if not self._procs:
            raise RuntimeError("LoopbackOpenAI is not running: call start() or use `with`")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LoopbackOpenAI:
        """Starts the server process(es); returns once they accept connections."""
        if self._procs:
            raise RuntimeError("LoopbackOpenAI is already running")
        config = {
            "delay": self.delay,
            "rounds": self.rounds,
            "calls": self.calls,
            "tool": self.tool,
            "answer": self.answer,
            "reuse_port": self.workers > 1,
        }
        try:
            for _ in range(self.workers):
                config["port"] = self.port
                proc = subprocess.Popen(
                    [sys.executable, os.path.abspath(__file__), json.dumps(config)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                self._procs.append(proc)
                msg = self._read(proc)
                if "error" in msg:
                    raise RuntimeError(f"LoopbackOpenAI: a server process failed: {msg['error']}")
                self.port = msg["port"]
        except BaseException:
            self.stop()
            raise
        return self

    @staticmethod
    def _read(proc: subprocess.Popen[str]) -> dict[str, Any]:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(
                f"LoopbackOpenAI: a server process exited (status {proc.wait()}); "
                "its error is on stderr above"
            )
        out: dict[str, Any] = json.loads(line)
        return out

    def stats(self, reset: bool = False) -> dict[str, Any]:
        """What the server saw since start (or the last ``reset``): ``requests``,
        ``cpu_seconds`` (the server processes' own CPU time) and ``round_gaps``
        (seconds between consecutive requests of one conversation, all conversations)."""
        total: dict[str, Any] = {"requests": 0, "cpu_seconds": 0.0, "round_gaps": []}
        for proc in self._procs:
            assert proc.stdin is not None
            proc.stdin.write("reset\n" if reset else "stats\n")
            proc.stdin.flush()
            part = self._read(proc)
            total["requests"] += part["requests"]
            total["cpu_seconds"] += part["cpu_seconds"]
            total["round_gaps"].extend(part["round_gaps"])
        return total

    def stop(self) -> None:
        """Stops the server process(es); idempotent."""
        for proc in self._procs:
            try:
                assert proc.stdin is not None
                proc.stdin.close()  # end of input: the server exits
            except OSError:
                pass
        for proc in self._procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        self._procs = []

    def __enter__(self) -> LoopbackOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- the server process ---------------------------------------------------------------


class _Script:
    """The scripted replies and the per-conversation arrival times."""

    def __init__(self, delay: float, rounds: int, calls: int, tool: str, answer: str) -> None:
        self.delay = delay
        self.rounds = rounds
        self.calls = calls
        self.tool = tool
        self.answer = answer
        self.ids = itertools.count()
        self.requests = 0
        self.arrivals: dict[str, list[float]] = {}
        self.cpu0 = time.process_time()

    def stats(self, reset: bool) -> dict[str, Any]:
        gaps = [b - a for times in self.arrivals.values() for a, b in itertools.pairwise(times)]
        out = {
            "requests": self.requests,
            "cpu_seconds": time.process_time() - self.cpu0,
            "round_gaps": gaps,
        }
        if reset:
            self.requests = 0
            self.arrivals = {}
            self.cpu0 = time.process_time()
        return out

    def reply(self, request: dict[str, Any], now: float) -> tuple[dict[str, Any], bool, bool]:
        """The response body for ``request``, whether to stream it, and with usage."""
        messages = request.get("messages")
        if not isinstance(messages, list):
            raise ValueError("the request has no 'messages' list")
        first = next(
            (m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"),
            None,
        )
        key = first if isinstance(first, str) else json.dumps(first, sort_keys=True)
        self.requests += 1
        self.arrivals.setdefault(key, []).append(now)
        rounds, calls = self.rounds, self.calls
        found = _MARKER.search(key)
        if found:
            rounds, calls = int(found.group(1)), max(1, int(found.group(2)))
        tool_messages = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")
        round_ = tool_messages // calls
        n = next(self.ids)
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if round_ < rounds:
            message["tool_calls"] = [
                {
                    "id": f"call_{n}_{i}",
                    "type": "function",
                    "function": {
                        "name": self.tool,
                        "arguments": json.dumps({"query": f"{round_}.{i}"}),
                    },
                }
                for i in range(calls)
            ]
            finish = "tool_calls"
        else:
            message["content"] = self.answer
            finish = "stop"
        prompt_tokens = 10 * len(messages)
        completion_tokens = 5 * len(message.get("tool_calls") or ()) or 3
        body = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(request.get("model", "loopback")),
            "system_fingerprint": "fp_loopback",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        options = request.get("stream_options") or {}
        return body, bool(request.get("stream")), bool(options.get("include_usage"))


def _sse(body: dict[str, Any], include_usage: bool) -> bytes:
    """``body`` as the chunk events OpenAI streams: the role, the content or each tool
    call (name then arguments), the finish reason, the usage, ``[DONE]``."""
    base = {k: body[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    choice = body["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        c = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [c]}

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if message.get("content"):
        events.append(chunk({"content": message["content"]}))
    for i, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": i, "id": call["id"], "type": "function"}
        head["function"] = {"name": call["function"]["name"], "arguments": ""}
        events.append(chunk({"tool_calls": [head]}))
        args = {"index": i, "function": {"arguments": call["function"]["arguments"]}}
        events.append(chunk({"tool_calls": [args]}))
    events.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        events.append({**base, "choices": [], "usage": body["usage"]})
    out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return out + b"data: [DONE]\n\n"


def _response(status: str, body: bytes, content_type: str = "application/json") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\nconnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


def _error(status: str, message: str) -> bytes:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return _response(status, json.dumps(body).encode())


class _Http(asyncio.Protocol):
    """One client connection: parses requests, answers each after the delay."""

    def __init__(self, script: _Script) -> None:
        self.script = script
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > _MAX_HEAD:
                    self._close(_error("431 Request Header Fields Too Large", "header too large"))
                return
            head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "chunked" in headers.get("transfer-encoding", ""):
                self._close(_error("411 Length Required", "send the body with content-length"))
                return
            length = int(headers.get("content-length", "0") or 0)
            if length > _MAX_BODY:
                self._close(_error("413 Payload Too Large", "request body too large"))
                return
            if len(self.buf) < end + 4 + length:
                return
            body = bytes(self.buf[end + 4 : end + 4 + length])
            del self.buf[: end + 4 + length]
            self._handle(head[0], body)

    def _handle(self, request_line: str, body: bytes) -> None:
        method, _, rest = request_line.partition(" ")
        path = rest.partition(" ")[0].split("?")[0]
        if method != "POST" or not path.endswith("/chat/completions"):
            self._send(_error("404 Not Found", f"no route {method} {path}"))
            return
        try:
            request = json.loads(body)
            reply, stream, usage = self.script.reply(request, time.monotonic())
        except ValueError as e:  # JSONDecodeError is a ValueError
            self._send(_error("400 Bad Request", f"bad request: {e}"))
            return
        if stream:
            events = _sse(reply, usage)
            head = (
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
            )
            out = head + f"{len(events):x}\r\n".encode() + events + b"\r\n0\r\n\r\n"
        else:
            out = _response("200 OK", json.dumps(reply).encode())
        self.loop.call_later(self.script.delay, self._send, out)

    def _send(self, out: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(out)

    def _close(self, out: bytes) -> None:
        self._send(out)
        if self.transport is not None:
            self.transport.close()


def _serve(config: dict[str, Any]) -> None:
    """The server process: listen, report the port on stdout, then answer each command
    line on stdin (``stats`` / ``reset``) with a JSON line; exit at end of input."""
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if config["reuse_port"]:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", config["port"]))
        sock.listen(4096)
    except OSError as e:
        print(json.dumps({"error": f"cannot listen on 127.0.0.1:{config['port']}: {e}"}))
        return
    script = _Script(
        config["delay"], config["rounds"], config["calls"], config["tool"], config["answer"]
    )
    asyncio.run(_main(sock, script))


async def _main(sock: socket.socket, script: _Script) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Http(script), sock=sock, backlog=4096)
    done = loop.create_future()
    stdin = sys.stdin.fileno()

    def control() -> None:
        data = os.read(stdin, 4096)
        if not data:  # end of input: the parent stopped us (or went away)
            if not done.done():
                done.set_result(None)
            return
        for command in data.decode().split():
            if command in ("stats", "reset"):
                print(json.dumps(script.stats(reset=command == "reset")), flush=True)

    loop.add_reader(stdin, control)
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    await done
    loop.remove_reader(stdin)
    server.close()
    os._exit(0)  # skip waiting for idle keep-alive connections


if __name__ == "__main__":
    _serve(json.loads(sys.argv[1]))
