"""OpenAIChat and AnthropicChat against loopback HTTP servers.

Each test starts a ``ThreadingHTTPServer`` on 127.0.0.1 that records the requests it
receives and answers with canned responses in each provider's wire format (JSON
bodies and SSE streams shaped after the public API references). The assertions check
both sides: what the provider would receive (body, headers) and what ironloop makes
of the answer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import operator
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypedDict

import pytest

from ironloop import StateGraph, create_react_agent, tool
from ironloop.errors import ModelError
from ironloop.graph import MessagesState
from ironloop.messages import AIMessage, AIMessageChunk, ToolMessage
from ironloop.models import AnthropicChat, OpenAIChat

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"


# --------------------------------------------------------------------------- server


class Loopback:
    """A recording HTTP server with a queue of canned replies."""

    def __init__(self) -> None:
        self.replies: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                with owner.lock:
                    owner.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": json.loads(raw) if raw else None,
                            "at": time.monotonic(),
                        }
                    )
                    reply = owner.replies.popleft() if owner.replies else None
                if reply is None:
                    reply = {"status": 599, "json": {"error": {"message": "no reply left"}}}
                time.sleep(reply.get("delay", 0))
                try:
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, reply: dict[str, Any]) -> None:
                self.send_response(reply.get("status", 200))
                for k, v in reply.get("headers", {}).items():
                    self.send_header(k, v)
                if "sse" in reply:
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for piece in reply["sse"]:
                        self.wfile.write(piece.encode())
                        self.wfile.flush()
                        time.sleep(reply.get("gap", 0.005))
                elif "echo" in reply:
                    # A server that echoes the request's headers in an error text.
                    body = reply["echo"](dict(self.headers.items())).encode()
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                else:
                    body = json.dumps(reply["json"]).encode()
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                self.close_connection = True

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def json(self, body: Any, status: int = 200, **extra: Any) -> Loopback:
        self.replies.append({"status": status, "json": body, **extra})
        return self

    def sse(self, events: list[str], **extra: Any) -> Loopback:
        self.replies.append({"status": 200, "sse": events, **extra})
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


# --------------------------------------------------------------------------- wire formats


def oa_completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "refusal": None,
        "annotations": [],
    }
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in tool_calls
        ]
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": 1117,
            "completion_tokens": 46,
            "total_tokens": 1163,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "service_tier": "default",
        "system_fingerprint": "fp_fc9f1d7035",
    }


def oa_chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return (
        "data: "
        + json.dumps(
            {
                "id": "chatcmpl-123",
                "object": "chat.completion.chunk",
                "created": 1694268190,
                "model": "gpt-4o-mini",
                "system_fingerprint": "fp_44709d6fcb",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
                "usage": None,
            }
        )
        + "\n\n"
    )


def oa_usage_chunk() -> str:
    return (
        "data: "
        + json.dumps(
            {
                "id": "chatcmpl-123",
                "object": "chat.completion.chunk",
                "created": 1694268190,
                "model": "gpt-4o-mini",
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
            }
        )
        + "\n\n"
    )


OA_DONE = "data: [DONE]\n\n"


def oa_text_stream(*pieces: str) -> list[str]:
    return [
        oa_chunk({"role": "assistant", "content": "", "refusal": None}),
        *(oa_chunk({"content": p}) for p in pieces),
        oa_chunk({}, "stop"),
        oa_usage_chunk(),
        OA_DONE,
    ]


def oa_tool_stream(call_id: str, name: str, *arg_pieces: str, text: str = "") -> list[str]:
    events = [oa_chunk({"role": "assistant", "content": "", "refusal": None})]
    if text:
        events.append(oa_chunk({"content": text}))
    events.append(
        oa_chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
    )
    for p in arg_pieces:
        events.append(oa_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
    events += [oa_chunk({}, "tool_calls"), oa_usage_chunk(), OA_DONE]
    return events


def an_message(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 2095,
            "output_tokens": 503,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def an_event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def an_start() -> str:
    return an_event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5-20250929",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 25, "output_tokens": 1},
            },
        },
    )


def an_end(stop: str, output_tokens: int = 15) -> list[str]:
    return [
        an_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        an_event("message_stop", {"type": "message_stop"}),
    ]


def an_text_stream(*pieces: str) -> list[str]:
    return [
        an_start(),
        an_event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        an_event("ping", {"type": "ping"}),
        *(
            an_event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                },
            )
            for p in pieces
        ),
        an_event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *an_end("end_turn"),
    ]


def an_tool_stream(calls: list[tuple[str, str, list[str]]], text: str = "") -> list[str]:
    events = [an_start()]
    index = 0
    if text:
        events += [
            an_event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            an_event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            ),
            an_event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        index = 1
    for call_id, name, pieces in calls:
        events.append(
            an_event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                },
            )
        )
        for p in pieces:
            events.append(
                an_event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": p},
                    },
                )
            )
        events.append(
            an_event("content_block_stop", {"type": "content_block_stop", "index": index})
        )
        index += 1
    return events + an_end("tool_use")


# --------------------------------------------------------------------------- tools


@tool
def add(a: int, b: int) -> int:
    """Adds two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool
def now() -> str:
    """The current time."""
    return "12:00"


def openai(server: Loopback, **kw: Any) -> OpenAIChat:
    kw.setdefault("api_key", OPENAI_KEY)
    return OpenAIChat("gpt-4o-mini", base_url=server.url + "/v1", **kw)


def anthropic(server: Loopback, **kw: Any) -> AnthropicChat:
    kw.setdefault("api_key", ANTHROPIC_KEY)
    return AnthropicChat("claude-sonnet-4-5", base_url=server.url, **kw)


# --------------------------------------------------------------------------- OpenAI


def test_openai_request_shape_and_parallel_tool_calls(server: Loopback) -> None:
    server.json(
        oa_completion(
            None,
            [
                ("call_abc", "add", '{"a": 2, "b": 3}'),
                ("call_def", "now", "{}"),
            ],
        )
    )
    history = [
        ("system", "Be brief."),
        ("user", "2+3, and the time?"),
        AIMessage(content="", tool_calls=[{"name": "now", "args": {}, "id": "call_0"}]),
        ToolMessage(content="11:59", tool_call_id="call_0", name="now"),
        {"role": "user", "content": "again"},
    ]
    msg = openai(server).invoke(
        history, tools=[add, now.to_openai()], tool_choice="add", parallel_tool_calls=True
    )
    assert isinstance(msg, AIMessage)
    assert [(c["name"], c["args"], c["id"]) for c in msg.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "call_abc"),
        ("now", {}, "call_def"),
    ]
    # Detail counts as langchain-openai reports them (OpenAI sends them, zero or not).
    assert msg.usage_metadata == {
        "input_tokens": 1117,
        "output_tokens": 46,
        "total_tokens": 1163,
        "input_token_details": {"cache_read": 0},
        "output_token_details": {"reasoning": 0},
    }

    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    body = req["body"]
    assert body["model"] == "gpt-4o-mini"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+3, and the time?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "now", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "11:59"},
        {"role": "user", "content": "again"},
    ]
    assert body["tools"] == [add.to_openai(), now.to_openai()]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["parallel_tool_calls"] is True
    assert "stream" not in body


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("any", "required"),
        ("none", "none"),
        (
            {"type": "function", "function": {"name": "now"}},
            {"type": "function", "function": {"name": "now"}},
        ),
    ],
)
def test_openai_tool_choice(server: Loopback, choice: Any, wire: Any) -> None:
    server.json(oa_completion("ok"))
    openai(server).invoke([("user", "hi")], tools=[now], tool_choice=choice)
    assert server.requests[0]["body"]["tool_choice"] == wire


def test_openai_stream_text_and_tool_call_argument_deltas(server: Loopback) -> None:
    server.sse(oa_tool_stream("call_1", "add", '{"a"', ": 2, ", '"b": 3}', text="Adding."))
    chunks = list(openai(server).stream([("user", "2+3?")], tools=[add]))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert "".join(c.text for c in chunks) == "Adding."
    # Each fragment in a chunk of its own, as the server sent it (id and name first).
    assert [
        [(f["name"], f["args"], f["id"], f["index"]) for f in c.tool_call_chunks]
        for c in chunks
        if c.tool_call_chunks
    ] == [
        [("add", "", "call_1", 0)],
        [(None, '{"a"', None, 0)],
        [(None, ": 2, ", None, 0)],
        [(None, '"b": 3}', None, 0)],
    ]
    whole = functools.reduce(operator.add, chunks)
    assert whole.tool_calls == [
        {"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1", "type": "tool_call"}
    ]
    usage = {"input_tokens": 9, "output_tokens": 12, "total_tokens": 21}
    assert chunks[-1].usage_metadata == usage and whole.usage_metadata == usage
    body = server.requests[0]["body"]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_tool_call_fragments_are_yielded_as_they_arrive(server: Loopback) -> None:
    server.sse(oa_tool_stream("call_1", "add", '{"a": 2,', ' "b": 3}'), gap=0.2)
    t0 = time.monotonic()
    stamps = []
    for c in openai(server).stream("2+3?", tools=[add]):
        stamps.append((time.monotonic() - t0, bool(c.tool_call_chunks)))
    first_fragment = next(t for t, fragment in stamps if fragment)
    assert first_fragment < stamps[-1][0] - 0.3, stamps


def test_openai_stream_yields_tokens_as_they_arrive(server: Loopback) -> None:
    server.sse(oa_text_stream("one ", "two ", "three"), gap=0.2)
    t0 = time.monotonic()
    stamps = []
    texts = []
    for c in openai(server).stream("count"):
        stamps.append(time.monotonic() - t0)
        texts.append(c.text)
    assert texts[:3] == ["one ", "two ", "three"]
    # The first token arrived well before the stream ended.
    assert stamps[0] < stamps[-1] - 0.3


def test_retry_after_is_honoured_on_429(server: Loopback) -> None:
    server.json(
        {
            "error": {
                "message": "Rate limit reached",
                "type": "requests",
                "code": "rate_limit_exceeded",
            }
        },
        status=429,
        headers={"Retry-After": "1"},
    )
    server.json(oa_completion("ok"))
    t0 = time.monotonic()
    assert openai(server).invoke("hi").content == "ok"
    assert time.monotonic() - t0 >= 1.0
    first, second = server.requests
    assert second["at"] - first["at"] >= 1.0


def test_500_then_success(server: Loopback) -> None:
    server.json(
        {"error": {"message": "The server had an error while processing your request."}}, status=500
    )
    server.json(oa_completion("ok"))
    assert openai(server).invoke("hi").content == "ok"
    assert len(server.requests) == 2


def test_400_is_a_model_error_without_retry(server: Loopback) -> None:
    server.json(
        {
            "error": {
                "message": "Invalid 'messages[0].role': did not expect 'tool'.",
                "type": "invalid_request_error",
                "param": "messages[0].role",
                "code": None,
            }
        },
        status=400,
    )
    with pytest.raises(ModelError) as info:
        openai(server, max_retries=5).invoke("hi")
    err = info.value
    assert err.status_code == 400  # type: ignore[attr-defined]
    assert err.provider == "openai"  # type: ignore[attr-defined]
    assert "HTTP 400" in str(err)
    assert "did not expect 'tool'" in str(err)
    assert len(server.requests) == 1


def test_retries_run_out(server: Loopback) -> None:
    for _ in range(3):
        server.json({"error": {"message": "overloaded"}}, status=503)
    with pytest.raises(ModelError) as info:
        openai(server, max_retries=2).invoke("hi")
    assert info.value.status_code == 503  # type: ignore[attr-defined]
    assert len(server.requests) == 3


def test_timeout(server: Loopback) -> None:
    server.json(oa_completion("late"), delay=2.0)
    t0 = time.monotonic()
    with pytest.raises(ModelError) as info:
        openai(server, timeout=0.3, max_retries=0).invoke("hi")
    assert time.monotonic() - t0 < 1.5
    assert info.value.kind == "timeout"  # type: ignore[attr-defined]
    assert "timeout" in str(info.value)


def test_malformed_tool_arguments_become_invalid_tool_calls(server: Loopback) -> None:
    server.json(
        oa_completion(
            None,
            [
                ("call_ok", "now", ""),
                ("call_bad", "add", '{"a": 1, "b": '),
            ],
        )
    )
    msg = openai(server).invoke("hi", tools=[add, now])
    assert [c["id"] for c in msg.tool_calls] == ["call_ok"]
    assert msg.tool_calls[0]["args"] == {}
    (bad,) = msg.invalid_tool_calls
    assert bad["id"] == "call_bad"
    assert bad["name"] == "add"
    assert bad["args"] == '{"a": 1, "b": '
    assert "JSON" in bad["error"]


def test_truncated_stream_is_a_model_error(server: Loopback) -> None:
    server.sse([oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hal"})])
    seen = []
    with pytest.raises(ModelError, match="truncated"):
        for c in openai(server).stream("hi"):
            seen.append(c.text)
    assert seen == ["Hal"]


def test_key_from_environment(server: Loopback, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-42")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env-42")
    server.json(oa_completion("ok"))
    server.json(an_message([{"type": "text", "text": "ok"}]))
    OpenAIChat("gpt-4o-mini", base_url=server.url + "/v1").invoke("hi")
    AnthropicChat("claude-sonnet-4-5", base_url=server.url).invoke("hi")
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-from-env-42"
    assert server.requests[1]["headers"]["x-api-key"] == "sk-ant-from-env-42"


def test_missing_key_for_the_official_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        OpenAIChat("gpt-4o-mini")
    # As LangChain's ChatAnthropic: made without a key, it fails at its first call
    # (sending nothing), with the error naming the fix.
    keyless = AnthropicChat("claude-sonnet-4-5")
    for call in (lambda: keyless.invoke("hi"), lambda: list(keyless.stream("hi"))):
        with pytest.raises(ModelError, match=r"without an API key.*ANTHROPIC_API_KEY"):
            call()
    with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
        asyncio.run(keyless.ainvoke("hi"))
    # A local server needs no key.
    assert OpenAIChat("llama3.2", base_url="http://localhost:11434/v1").url == (
        "http://localhost:11434/v1/chat/completions"
    )


def test_the_key_never_appears_in_errors_or_reprs(server: Loopback) -> None:
    server.json(
        {
            "error": {
                "message": f"Incorrect API key provided: {OPENAI_KEY}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        },
        status=401,
    )
    server.json(
        {
            "type": "error",
            "error": {
                "type": "authentication_error",
                "message": f"invalid x-api-key {ANTHROPIC_KEY}",
            },
        },
        status=401,
    )
    oa, an = openai(server), anthropic(server)
    with pytest.raises(ModelError) as e1:
        oa.invoke("hi")
    with pytest.raises(ModelError) as e2:
        an.invoke("hi")
    for err, key in ((e1.value, OPENAI_KEY), (e2.value, ANTHROPIC_KEY)):
        assert key not in str(err)
        assert key not in repr(err)
        assert err.status_code == 401  # type: ignore[attr-defined]
    assert OPENAI_KEY not in repr(oa)
    assert ANTHROPIC_KEY not in repr(an)
    assert OPENAI_KEY not in repr(vars(oa))


@pytest.mark.parametrize("cut_at", range(-12, 4))
def test_a_key_echoed_across_the_cut_of_an_error_text_is_scrubbed(
    server: Loopback, cut_at: int
) -> None:
    # Error texts are shortened to 500 characters; the echoed header straddles the cut.
    def echo(headers: dict[str, str]) -> str:
        auth = next(v for k, v in headers.items() if k.lower() == "authorization")
        start = 500 - len("Bearer ") + cut_at - len(OPENAI_KEY) // 2
        return "x" * start + "Authorization: " + auth + " " + "y" * 600

    server.replies.append({"status": 400, "echo": echo})
    with pytest.raises(ModelError) as e:
        openai(server).invoke("hi")
    text = str(e.value)
    for n in range(6, len(OPENAI_KEY) + 1):
        assert OPENAI_KEY[:n] not in text, (n, text[-80:])


def test_header_values_and_url_secrets_never_show(server: Loopback) -> None:
    extra = "extra-header-secret-42"
    in_url = "query-secret-in-url-7"
    server.json({"error": {"message": f"bad {extra} and {in_url}"}}, status=403)
    oa = OpenAIChat(
        "gpt-4o-mini",
        base_url=server.url + f"/v1?api-key={in_url}",
        api_key=OPENAI_KEY,
        default_headers={"x-extra-key": extra},
    )
    assert in_url not in repr(oa) and extra not in repr(oa)
    with pytest.raises(ModelError) as e:
        oa.invoke("hi")
    assert extra not in str(e.value) and in_url not in str(e.value)
    assert "[redacted]" in str(e.value)


def test_sync_calls_release_the_gil(server: Loopback) -> None:
    for _ in range(4):
        server.json(oa_completion("ok"), delay=0.5)
    model = openai(server)
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(model.invoke("hi").text)) for _ in range(4)
    ]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["ok"] * 4
    assert time.monotonic() - t0 < 1.4  # 4 × 0.5 s if they ran one at a time


async def test_openai_ainvoke_and_astream(server: Loopback) -> None:
    server.json(oa_completion("async ok"))
    server.sse(oa_text_stream("a", "b", "c"))
    model = openai(server)
    msg = await model.ainvoke([("user", "hi")])
    assert msg.content == "async ok"
    chunks = [c async for c in model.astream([("user", "hi")])]
    assert [c.text for c in chunks][:3] == ["a", "b", "c"]
    # Two concurrent calls on one loop.
    server.json(oa_completion("x"), delay=0.5)
    server.json(oa_completion("x"), delay=0.5)
    t0 = time.monotonic()
    both = await asyncio.gather(model.ainvoke("1"), model.ainvoke("2"))
    assert [m.text for m in both] == ["x", "x"]
    assert time.monotonic() - t0 < 0.9  # 1.0 s one after the other


class Weather(TypedDict):
    city: str
    celsius: int


def test_openai_response_format_is_native_json_schema(server: Loopback) -> None:
    server.json(oa_completion('{"city": "Paris", "celsius": 21}'))
    msg = openai(server).invoke("weather?", response_format=Weather)
    assert json.loads(msg.text) == {"city": "Paris", "celsius": 21}
    rf = server.requests[0]["body"]["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["name"] == "Weather"
    assert rf["json_schema"]["schema"]["properties"]["celsius"]["type"] == "integer"


def test_extra_request_fields_and_model_defaults(server: Loopback) -> None:
    server.json(oa_completion("ok"))
    model = openai(
        server,
        temperature=0.2,
        max_tokens=64,
        model_kwargs={"seed": 7},
        default_headers={"HTTP-Referer": "https://example.com"},
    )
    model.invoke("hi", top_p=0.5, stop=["\n"])
    req = server.requests[0]
    assert req["body"]["temperature"] == 0.2
    assert req["body"]["max_tokens"] == 64  # not the official endpoint: max_tokens
    assert req["body"]["seed"] == 7
    assert req["body"]["top_p"] == 0.5
    assert req["body"]["stop"] == ["\n"]
    assert req["headers"]["http-referer"] == "https://example.com"


def test_the_http_models_take_one_set_of_options_and_refuse_others() -> None:
    shared = {"timeout": 5.0, "max_retries": 0, "model_kwargs": {"top_k": 3}}
    model = AnthropicChat(
        "claude", "http://127.0.0.1:9", "k", thinking={"type": "enabled"}, **shared
    )
    assert model.model_kwargs == {"top_k": 3} and model.url == "http://127.0.0.1:9/v1/messages"
    with pytest.raises(
        TypeError, match=r"OpenAIChat\(\) got unexpected keyword argument\(s\) \['thinking'\]"
    ):
        OpenAIChat("gpt-4o-mini", thinking={"type": "enabled"})  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"\['headers'\]"):
        AnthropicChat("claude", headers=[("a", "b")])  # type: ignore[call-arg]


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_request_shape_and_tool_use(server: Loopback) -> None:
    server.json(
        an_message(
            [
                {"type": "text", "text": "Both at once."},
                {"type": "tool_use", "id": "toolu_01A", "name": "add", "input": {"a": 2, "b": 3}},
                {"type": "tool_use", "id": "toolu_01B", "name": "now", "input": {}},
            ],
            stop="tool_use",
        )
    )
    history = [
        ("system", "Be brief."),
        ("user", "2+3 and the time?"),
        AIMessage(
            content="",
            tool_calls=[
                {"name": "now", "args": {}, "id": "toolu_0"},
                {"name": "add", "args": {"a": 1, "b": 1}, "id": "toolu_1"},
            ],
        ),
        ToolMessage(content="11:59", tool_call_id="toolu_0", name="now"),
        ToolMessage(content="boom", tool_call_id="toolu_1", name="add", status="error"),
    ]
    msg = anthropic(server, prompt_caching=False).invoke(
        history, tools=[add, now], tool_choice="required", parallel_tool_calls=True
    )
    assert msg.text == "Both at once."
    assert [(c["name"], c["args"], c["id"]) for c in msg.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "toolu_01A"),
        ("now", {}, "toolu_01B"),
    ]
    assert msg.usage_metadata == {
        "input_tokens": 2095,
        "output_tokens": 503,
        "total_tokens": 2598,
        "input_token_details": {"cache_read": 0, "cache_creation": 0},
    }
    (req,) = server.requests
    assert req["path"] == "/v1/messages"
    assert req["headers"]["x-api-key"] == ANTHROPIC_KEY
    assert req["headers"]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req["headers"]
    body = req["body"]
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 4096
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "2+3 and the time?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_0", "name": "now", "input": {}},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_0", "content": "11:59"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "boom",
                    "is_error": True,
                },
            ],
        },
    ]
    assert body["tools"] == [add.to_anthropic(), now.to_anthropic()]
    assert body["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize(
    ("choice", "parallel", "wire"),
    [
        ("auto", None, {"type": "auto"}),
        ("none", None, {"type": "none"}),
        ("add", None, {"type": "tool", "name": "add"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
    ],
)
def test_anthropic_tool_choice(
    server: Loopback, choice: Any, parallel: bool | None, wire: Any
) -> None:
    server.json(an_message([{"type": "text", "text": "ok"}]))
    anthropic(server).invoke("hi", tools=[add], tool_choice=choice, parallel_tool_calls=parallel)
    assert server.requests[0]["body"]["tool_choice"] == wire


def test_anthropic_stream_with_input_json_deltas_and_empty_arguments(server: Loopback) -> None:
    server.sse(
        an_tool_stream(
            [("toolu_1", "add", ['{"a": ', '2, "b"', ": 3}"]), ("toolu_2", "now", [""])],
            text="On it.",
        )
    )
    chunks = list(anthropic(server).stream("2+3 and the time?", tools=[add, now]))
    assert len({c.id for c in chunks}) == 1
    assert "".join(c.text for c in chunks) == "On it."
    # Fragments by content-block index: the tool_use start (id, name), then each
    # input_json_delta.
    assert [
        (f["name"], f["args"], f["id"], f["index"]) for c in chunks for f in c.tool_call_chunks
    ] == [
        ("add", "", "toolu_1", 1),
        (None, '{"a": ', None, 1),
        (None, '2, "b"', None, 1),
        (None, ": 3}", None, 1),
        ("now", "", "toolu_2", 2),
        (None, "", None, 2),
    ]
    whole = functools.reduce(operator.add, chunks)
    assert [(c["name"], c["args"], c["id"]) for c in whole.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "toolu_1"),
        ("now", {}, "toolu_2"),
    ]
    assert chunks[-1].usage_metadata["output_tokens"] == 15
    assert server.requests[0]["body"]["stream"] is True


def test_anthropic_overloaded_then_success_and_400_without_retry(server: Loopback) -> None:
    server.json(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        status=529,
        headers={"retry-after": "0.2"},
    )
    server.json(an_message([{"type": "text", "text": "fine"}]))
    server.json(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
        },
        status=400,
    )
    model = anthropic(server)
    assert model.invoke("hi").text == "fine"
    with pytest.raises(ModelError, match="max_tokens: Field required") as info:
        model.invoke("hi")
    assert info.value.status_code == 400  # type: ignore[attr-defined]
    assert info.value.provider == "anthropic"  # type: ignore[attr-defined]
    assert len(server.requests) == 3


def test_anthropic_truncated_stream_and_error_event(server: Loopback) -> None:
    server.sse(an_text_stream("never", " ends")[:-2])  # no message_delta / message_stop
    server.sse(
        [
            an_start(),
            an_event(
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
        ]
    )
    model = anthropic(server)
    with pytest.raises(ModelError, match="truncated"):
        list(model.stream("hi"))
    with pytest.raises(ModelError, match="overloaded_error"):
        list(model.stream("hi"))


def test_anthropic_response_format_is_a_forced_tool(server: Loopback) -> None:
    server.json(
        an_message(
            [
                {
                    "type": "tool_use",
                    "id": "toolu_s",
                    "name": "Weather",
                    "input": {"city": "Paris", "celsius": 21},
                }
            ],
            stop="tool_use",
        )
    )
    msg = anthropic(server).invoke("weather?", response_format=Weather)
    assert json.loads(msg.text) == {"city": "Paris", "celsius": 21}
    assert msg.tool_calls == []
    body = server.requests[0]["body"]
    assert body["tool_choice"] == {"type": "tool", "name": "Weather"}
    assert body["tools"][0]["name"] == "Weather"


# --------------------------------------------------------------------------- end to end


def test_react_agent_round_trip_with_openai(server: Loopback) -> None:
    server.json(oa_completion(None, [("call_1", "add", '{"a": 2, "b": 3}')]))
    server.json(oa_completion("2 + 3 = 5"))
    agent = create_react_agent(openai(server), [add], prompt="Be brief.")
    out = agent.invoke({"messages": [("user", "2+3?")]})
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert out["messages"][2].content == "5"
    assert out["messages"][-1].content == "2 + 3 = 5"
    second = server.requests[1]["body"]["messages"]
    assert second[0] == {"role": "system", "content": "Be brief."}
    assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}
    assert server.requests[0]["body"]["tools"] == [add.to_openai()]


def _two_rounds(server: Loopback) -> None:
    server.json(oa_completion(None, [("call_1", "add", '{"a": 2, "b": 3}')]))
    server.json(oa_completion("2 + 3 = 5"))


def _python_model_steps(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Counts the agent's model steps that go through Python (``call_model``)."""
    from ironloop import _agent

    seen: list[Any] = []
    real, areal = _agent.call_model, _agent.acall_model

    def counted(*args: Any, **kw: Any) -> Any:
        seen.append("sync")
        return real(*args, **kw)

    async def acounted(*args: Any, **kw: Any) -> Any:
        seen.append("async")
        return await areal(*args, **kw)

    monkeypatch.setattr(_agent, "call_model", counted)
    monkeypatch.setattr(_agent, "acall_model", acounted)
    return seen


def _shown(messages: list[Any]) -> list[dict[str, Any]]:
    """The messages as dicts, without the ids ironloop makes for each run."""
    out = []
    for m in messages:
        d = m.model_dump()
        d.pop("id")
        for call in d.get("tool_calls") or ():
            call.pop("id", None)
        out.append(d)
    return out


def test_the_engine_makes_an_ironloop_models_agent_step_itself(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An OpenAIChat agent: the engine calls the model, no Python per model step; what
    # the run returns and sends is what the Python step (taken while token usage is
    # totalled) gives.
    from ironloop import get_usage_metadata_callback

    steps = _python_model_steps(monkeypatch)
    agent = create_react_agent(openai(server), [add], prompt="Be brief.", name="calc")
    _two_rounds(server)
    native = agent.invoke({"messages": [("user", "2+3?")]})
    assert steps == []
    _two_rounds(server)
    with get_usage_metadata_callback() as cb:
        through_python = agent.invoke({"messages": [("user", "2+3?")]})
    assert steps == ["sync", "sync"]
    assert cb.usage_metadata["gpt-4o-mini"]["total_tokens"] == 2 * 1163
    assert _shown(native["messages"]) == _shown(through_python["messages"])
    assert [m.name for m in native["messages"] if m.type == "ai"] == ["calc", "calc"]
    assert native["messages"][-1].response_metadata == (
        through_python["messages"][-1].response_metadata
    )
    assert native["messages"][-1].usage_metadata["total_tokens"] == 1163
    bodies = [r["body"] for r in server.requests]
    assert bodies[:2] == bodies[2:], "the same requests either way"
    assert bodies[0]["messages"][0] == {"role": "system", "content": "Be brief."}
    assert bodies[0]["tools"] == [add.to_openai()]


async def test_the_engine_makes_the_step_under_ainvoke_too(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _python_model_steps(monkeypatch)
    agent = create_react_agent(openai(server), [add])
    _two_rounds(server)
    out = await agent.ainvoke({"messages": [("user", "2+3?")]})
    assert out["messages"][-1].content == "2 + 3 = 5"
    assert steps == []
    assert "system" not in [m["role"] for m in server.requests[0]["body"]["messages"]]


def test_an_agent_step_the_engine_cannot_make_goes_through_python(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _python_model_steps(monkeypatch)

    class Logged(OpenAIChat):
        calls = 0

        def invoke(self, *args: Any, **kw: Any) -> AIMessage:
            Logged.calls += 1
            return super().invoke(*args, **kw)

    # A subclass with a call of its own.
    _two_rounds(server)
    agent = create_react_agent(
        Logged("gpt-4o-mini", base_url=server.url + "/v1", api_key=OPENAI_KEY), [add]
    )
    assert agent.invoke({"messages": [("user", "2+3?")]})["messages"][-1].content == "2 + 3 = 5"
    assert Logged.calls == 2
    # A prompt that is a function.
    _two_rounds(server)
    agent = create_react_agent(
        openai(server), [add], prompt=lambda s: [("system", "Hi."), *s["messages"]]
    )
    agent.invoke({"messages": [("user", "2+3?")]})
    assert server.requests[-1]["body"]["messages"][0] == {"role": "system", "content": "Hi."}
    # Extra request fields, set after the agent was made.
    model = openai(server)
    agent = create_react_agent(model, [add])
    model.model_kwargs["seed"] = 7
    _two_rounds(server)
    agent.invoke({"messages": [("user", "2+3?")]})
    assert server.requests[-1]["body"]["seed"] == 7
    # A call of the instance's own.
    model = openai(server)
    own: list[Any] = []
    real_invoke = model.invoke

    def spied(*args: Any, **kw: Any) -> AIMessage:
        own.append(1)
        return real_invoke(*args, **kw)

    model.invoke = spied  # type: ignore[method-assign]
    _two_rounds(server)
    create_react_agent(model, [add]).invoke({"messages": [("user", "2+3?")]})
    assert len(own) == 2
    assert steps == ["sync"] * 8
    # The class's call patched after an agent of it was made: agents made since take
    # the patched call (the check is made for every agent, not once per class).
    create_react_agent(openai(server), [add])
    patched: list[Any] = []
    original = OpenAIChat.invoke

    def patched_invoke(self: Any, *args: Any, **kw: Any) -> AIMessage:
        patched.append(1)
        return original(self, *args, **kw)

    monkeypatch.setattr(OpenAIChat, "invoke", patched_invoke)
    _two_rounds(server)
    create_react_agent(openai(server), [add]).invoke({"messages": [("user", "2+3?")]})
    assert len(patched) == 2
    assert steps == ["sync"] * 10


def test_the_engines_step_streams_tokens_as_the_models_invoke_does(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    # stream_mode="messages": the engine streams the model's chunks itself; the
    # items are the ones the model's invoke sends from the Python step.
    from ironloop import get_usage_metadata_callback

    steps = _python_model_steps(monkeypatch)
    agent = create_react_agent(openai(server), [add], name="calc")

    def run() -> list[Any]:
        server.sse(oa_tool_stream("call_1", "add", '{"a": 2,', ' "b": 3}'))
        server.sse(oa_text_stream("The ", "sum ", "is ", "5."))
        config = {"configurable": {"thread_id": "t"}, "metadata": {"user": "u1"}}
        items = agent.stream(
            {"messages": [("user", "2+3?")]}, config, stream_mode=["messages", "updates"]
        )
        shown = []
        for mode, item in items:
            if mode == "updates":
                ((node, update),) = item.items()
                shown.append((mode, node, _shown(update["messages"])))
                continue
            chunk, meta = item
            d = chunk.model_dump()
            d.pop("id")
            meta = {k: v for k, v in meta.items() if "checkpoint" not in k and "task" not in k}
            shown.append((mode, type(chunk).__name__, d, meta))
        return shown

    native = run()
    assert steps == []
    with get_usage_metadata_callback():
        through_python = run()
    assert steps == ["sync", "sync"]
    assert native == through_python
    texts = [i[2]["content"] for i in native if i[0] == "messages" and i[1] == "AIMessageChunk"]
    assert "".join(texts) == "The sum is 5."
    metas = [i[3] for i in native if i[0] == "messages"]
    assert metas[0]["langgraph_node"] == "agent"
    assert metas[0]["user"] == "u1" and metas[0]["thread_id"] == "t"
    # Each answer shows as its chunks only, not again as the node's returned message.
    assert [i[1] for i in native if i[0] == "messages"].count("AIMessage") == 0
    assert [u[1] for u in native if u[0] == "updates"] == ["agent", "tools", "agent"]
    assert native[-1][2][0]["name"] == "calc"
    assert all(r["body"]["stream"] is True for r in server.requests)


def test_a_stream_cut_short_in_the_engines_step_fails_as_in_python(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The chunks that came are streamed, then the run fails with the model's error,
    # either way.
    from ironloop import get_usage_metadata_callback

    steps = _python_model_steps(monkeypatch)
    agent = create_react_agent(openai(server), [add])

    def run() -> tuple[list[str], BaseException]:
        server.sse([oa_chunk({"role": "assistant", "content": ""}), oa_chunk({"content": "Hal"})])
        seen: list[str] = []
        with pytest.raises(ModelError, match="truncated") as e:
            for chunk, _ in agent.stream({"messages": [("user", "hi")]}, stream_mode="messages"):
                seen.append(chunk.text)
        return seen, e.value

    native, native_error = run()
    assert steps == []
    with get_usage_metadata_callback():
        through_python, python_error = run()
    assert steps == ["sync"]
    assert [t for t in native if t] == [t for t in through_python if t] == ["Hal"]
    assert str(native_error) == str(python_error)


async def test_an_engine_step_cancelled_with_its_run_stops_its_request(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run cancelled while the model is answering (asyncio.wait_for) ends at once.
    steps = _python_model_steps(monkeypatch)
    agent = create_react_agent(openai(server), [add])
    server.json(oa_completion("late"), delay=2.0)
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(agent.ainvoke({"messages": [("user", "hi")]}), 0.2)
    assert time.monotonic() - started < 1.0
    assert steps == []
    assert len(server.requests) == 1


def test_a_model_error_in_the_engines_step_is_the_models_exception(
    server: Loopback, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ironloop import get_usage_metadata_callback

    steps = _python_model_steps(monkeypatch)
    agent = create_react_agent(openai(server), [add])
    bad = {"error": {"message": "Invalid model.", "type": "invalid_request_error"}}
    server.json(bad, status=400)
    with pytest.raises(ModelError) as native:
        agent.invoke({"messages": [("user", "2+3?")]})
    assert steps == []
    server.json(bad, status=400)
    with get_usage_metadata_callback(), pytest.raises(ModelError) as through_python:
        agent.invoke({"messages": [("user", "2+3?")]})
    assert steps == ["sync"]
    assert type(native.value) is type(through_python.value)
    assert str(native.value) == str(through_python.value)
    assert "Invalid model." in str(native.value)


def test_react_agent_streams_messages_with_openai(server: Loopback) -> None:
    server.sse(oa_tool_stream("call_1", "add", '{"a": 2,', ' "b": 3}'))
    server.sse(oa_text_stream("The ", "sum ", "is ", "5."))
    agent = create_react_agent(openai(server), [add])
    items = list(agent.stream({"messages": [("user", "2+3?")]}, stream_mode="messages"))
    agent_chunks = [c for c, meta in items if meta["langgraph_node"] == "agent"]
    texts = [c.text for c in agent_chunks if c.text]
    assert texts == ["The ", "sum ", "is ", "5."]
    # The call's fragments reach the stream as chunks, and add up to the call.
    assert all(isinstance(c, AIMessageChunk) for c in agent_chunks)
    first_answer = [c for c in agent_chunks if c.id == agent_chunks[0].id]
    assert sum(1 for c in first_answer if c.tool_call_chunks) == 3
    whole = functools.reduce(operator.add, first_answer)
    assert whole.tool_calls == [
        {"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1", "type": "tool_call"}
    ]
    tool_msgs = [c for c, meta in items if meta["langgraph_node"] == "tools"]
    assert all(isinstance(m, ToolMessage) for m in tool_msgs)


async def test_react_agent_astream_messages_with_anthropic(server: Loopback) -> None:
    server.sse(an_tool_stream([("toolu_1", "now", [""])]))
    server.sse(an_text_stream("It ", "is ", "12:00."))
    agent = create_react_agent(anthropic(server), [now])
    texts: list[str] = []
    fragments: list[dict[str, Any]] = []
    async for chunk, meta in agent.astream(
        {"messages": [("user", "time?")]}, stream_mode="messages"
    ):
        if meta["langgraph_node"] == "agent" and chunk.text:
            texts.append(chunk.text)
        if chunk.type == "AIMessageChunk" and chunk.tool_call_chunks:
            fragments += chunk.tool_call_chunks
    assert texts == ["It ", "is ", "12:00."]
    assert [(f["name"], f["id"]) for f in fragments] == [("now", "toolu_1"), (None, None)]
    second = server.requests[1]["body"]["messages"]
    assert second[-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "12:00",
                "cache_control": {"type": "ephemeral"},  # the latest turn: a breakpoint
            }
        ],
    }


def test_react_agent_round_trip_with_anthropic(server: Loopback) -> None:
    server.json(
        an_message(
            [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 4, "b": 5}}],
            stop="tool_use",
        )
    )
    server.json(an_message([{"type": "text", "text": "9"}]))
    out = create_react_agent(anthropic(server), [add], prompt="Be brief.").invoke(
        {"messages": [("user", "4+5?")]}
    )
    assert out["messages"][-1].content == "9"
    assert server.requests[1]["body"]["system"] == [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]


def test_custom_graph_node_calling_invoke_streams_tokens(server: Loopback) -> None:
    server.sse(oa_text_stream("Hel", "lo ", "there"))
    model = openai(server)

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState).add_node("chat", chat).set_entry_point("chat").compile()
    items = list(graph.stream({"messages": [("user", "hi")]}, stream_mode="messages"))
    texts = [c.text for c, meta in items if meta["langgraph_node"] == "chat" and c.text]
    assert texts == ["Hel", "lo ", "there"]
    assert server.requests[0]["body"]["stream"] is True
    # Without stream_mode="messages", a plain request.
    server.json(oa_completion("plain"))
    out = graph.invoke({"messages": [("user", "hi")]})
    assert out["messages"][-1].content == "plain"
    assert "stream" not in server.requests[1]["body"]


async def test_custom_async_graph_node_streams_tokens(server: Loopback) -> None:
    server.sse(an_text_stream("As", "ync"))
    model = anthropic(server)

    async def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState).add_node("chat", chat).set_entry_point("chat").compile()
    texts = []
    async for chunk, meta in graph.astream({"messages": [("user", "hi")]}, stream_mode="messages"):
        if meta["langgraph_node"] == "chat" and chunk.text:
            texts.append(chunk.text)
    assert texts == ["As", "ync"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_react_agent_structured_response(server: Loopback, provider: str) -> None:
    if provider == "openai":
        server.json(oa_completion("Paris is sunny, 21°C."))
        server.json(oa_completion('{"city": "Paris", "celsius": 21}'))
        model: Any = openai(server)
    else:
        # create_react_agent passes the bare schema: the forced tool is named "response".
        server.json(an_message([{"type": "text", "text": "Paris is sunny, 21°C."}]))
        server.json(
            an_message(
                [
                    {
                        "type": "tool_use",
                        "id": "toolu_s",
                        "name": "response",
                        "input": {"city": "Paris", "celsius": 21},
                    }
                ],
                stop="tool_use",
            )
        )
        model = anthropic(server)
    agent = create_react_agent(model, [add], response_format=Weather)
    out = agent.invoke({"messages": [("user", "weather in Paris?")]})
    assert out["structured_response"] == {"city": "Paris", "celsius": 21}
    body = server.requests[1]["body"]
    if provider == "openai":
        assert body["response_format"]["type"] == "json_schema"
    else:
        assert body["tool_choice"] == {"type": "tool", "name": "response"}


def test_bind_tools(server: Loopback) -> None:
    server.json(oa_completion(None, [("call_1", "now", "{}")]))
    bound = openai(server).bind_tools([now], tool_choice="now")
    msg = bound.invoke("time?")
    assert msg.tool_calls[0]["name"] == "now"
    body = server.requests[0]["body"]
    assert body["tools"] == [now.to_openai()]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "now"}}


# --------------------------------------------------------------------------- logging


def test_retries_and_dropped_connections_reach_python_logging(
    server: Loopback, caplog: pytest.LogCaptureFixture
) -> None:
    """Rust-side records land on ``ironloop.*`` loggers at levels that make sense."""
    caplog.set_level(logging.INFO, logger="ironloop")
    for _ in range(2):
        server.json({"error": {"message": "overloaded"}}, status=503, headers={"retry-after": "0"})
    server.json(oa_completion("fine"))
    assert openai(server, max_retries=2).invoke("hi").text == "fine"
    retries = [r for r in caplog.records if "retry" in r.getMessage()]
    assert [r.levelno for r in retries] == [logging.INFO, logging.INFO]
    assert all(r.name.startswith("ironloop.model") for r in retries), [r.name for r in retries]
    assert "retry 1 of 2" in retries[0].getMessage()
    assert "retry 2 of 2" in retries[1].getMessage()

    # Nothing listens on this port: the connection fails, which is a warning.
    caplog.clear()
    dead = OpenAIChat(
        "gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key=OPENAI_KEY, max_retries=0
    )
    with pytest.raises(ModelError):
        dead.invoke("hi")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and warnings[0].name.startswith("ironloop.model")
    assert all(OPENAI_KEY not in r.getMessage() for r in caplog.records)


def test_a_level_change_after_the_first_record_takes_effect(
    server: Loopback, caplog: pytest.LogCaptureFixture
) -> None:
    """The Rust side caches levels; changing a level in Python drops that cache."""
    caplog.set_level(logging.WARNING, logger="ironloop")
    server.json({"error": {"message": "busy"}}, status=503, headers={"retry-after": "0"})
    server.json(oa_completion("one"))
    openai(server, max_retries=1).invoke("hi")
    assert not [r for r in caplog.records if "retry" in r.getMessage()]

    caplog.set_level(logging.INFO, logger="ironloop")  # Logger.setLevel underneath
    server.json({"error": {"message": "busy"}}, status=503, headers={"retry-after": "0"})
    server.json(oa_completion("two"))
    openai(server, max_retries=1).invoke("hi")
    assert [r.levelno for r in caplog.records if "retry" in r.getMessage()] == [logging.INFO]


# --------------------------------------------------------------------------- reasoning, caching, images

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"


def streamed(model: Any, messages: Any) -> tuple[list[Any], Any]:
    """The model's chunks as an agent streams them, and the message the state keeps."""
    chunks, final = [], None
    agent = create_react_agent(model, [])
    for mode, data in agent.stream({"messages": messages}, stream_mode=["messages", "values"]):
        if mode == "messages":
            chunks.append(data[0])
        else:
            final = data
    assert final is not None
    return chunks, final["messages"][-1]


THINKING = {"type": "enabled", "budget_tokens": 2048}


def test_anthropic_thinking_blocks_are_kept_and_sent_back_during_tool_use(
    server: Loopback,
) -> None:
    thought = {"type": "thinking", "thinking": "4 plus 5; use add.", "signature": SIGNATURE}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    server.json(
        an_message(
            [
                thought,
                redacted,
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 4, "b": 5}},
            ],
            stop="tool_use",
        )
    )
    server.json(an_message([thought, {"type": "text", "text": "9"}]))
    model = anthropic(server, thinking=THINKING)
    out = create_react_agent(model, [add]).invoke({"messages": [("user", "4+5?")]})

    first = server.requests[0]["body"]
    assert first["thinking"] == THINKING
    assert first["max_tokens"] == 4096 + 2048  # room for an answer after the budget
    # The answer keeps its thinking, signatures included, before its text.
    ai_call, answer = out["messages"][1], out["messages"][-1]
    assert ai_call.content == [thought, redacted]
    assert answer.content == [thought, {"type": "text", "text": "9"}]
    assert answer.text == "9"
    # During tool use the thinking goes back unchanged, before the tool_use block.
    assistant = server.requests[1]["body"]["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == [thought, redacted]
    assert assistant["content"][2]["type"] == "tool_use"


def test_anthropic_thinking_streams_as_reasoning_chunks(server: Loopback) -> None:
    def delta(index: int, d: dict[str, Any]) -> str:
        return an_event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
        )

    def start(index: int, block: dict[str, Any]) -> str:
        return an_event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )

    server.sse(
        [
            an_start(),
            start(0, {"type": "thinking", "thinking": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "Two plus "}),
            delta(0, {"type": "thinking_delta", "thinking": "two is four."}),
            delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
            an_event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            start(1, {"type": "text", "text": ""}),
            delta(1, {"type": "text_delta", "text": "4"}),
            an_event("content_block_stop", {"type": "content_block_stop", "index": 1}),
            *an_end("end_turn"),
        ]
    )
    chunks, whole = streamed(anthropic(server, thinking=THINKING), "2+2?")
    reasoning = [c.content[0]["thinking"] for c in chunks if isinstance(c.content, list)]
    assert reasoning == ["Two plus ", "two is four."]
    assert [c.content[0]["index"] for c in chunks if isinstance(c.content, list)] == [0, 0]
    assert "".join(c.text for c in chunks) == "4"
    assert whole.content == [
        {"type": "thinking", "thinking": "Two plus two is four.", "signature": SIGNATURE},
        {"type": "text", "text": "4"},
    ]


def test_anthropic_prompt_caching_breakpoints_and_cache_usage(server: Loopback) -> None:
    usage = {
        "input_tokens": 20,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 2000,
    }
    server.json({**an_message([{"type": "text", "text": "ok"}]), "usage": usage})
    server.json(an_message([{"type": "text", "text": "ok"}]))
    history = [("system", "You are terse."), ("user", "hi"), ("ai", "hello"), ("user", "again")]
    msg = anthropic(server).invoke(history, tools=[add, now])
    body = server.requests[0]["body"]
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": ephemeral}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == ephemeral
    assert body["messages"][-1]["content"][-1]["cache_control"] == ephemeral
    assert all("cache_control" not in b for m in body["messages"][:-1] for b in m["content"])
    assert msg.usage_metadata == {
        "input_tokens": 2020,
        "output_tokens": 5,
        "total_tokens": 2025,
        "input_token_details": {"cache_read": 2000, "cache_creation": 0},
    }

    anthropic(server, prompt_caching=False).invoke(history, tools=[add, now])
    assert "cache_control" not in json.dumps(server.requests[1]["body"])


def test_openai_compatible_reasoning_content_is_kept_and_not_sent_back(server: Loopback) -> None:
    done = oa_completion("4")
    done["choices"][0]["message"]["reasoning_content"] = "2 and 2 make 4."
    server.json(done)
    msg = openai(server).invoke("2+2?")
    assert msg.content == [
        {"type": "reasoning", "reasoning": "2 and 2 make 4."},
        {"type": "text", "text": "4"},
    ]
    assert msg.text == "4"

    server.sse(
        [
            oa_chunk({"role": "assistant", "content": "", "reasoning_content": "Hm, "}),
            oa_chunk({"reasoning_content": "five."}),
            oa_chunk({"content": "5"}),
            oa_chunk({}, "stop"),
            OA_DONE,
        ]
    )
    chunks, whole = streamed(openai(server), [("user", "2+2?"), msg, ("user", "and 2+3?")])
    assert [c.content[0]["reasoning"] for c in chunks if isinstance(c.content, list)] == [
        "Hm, ",
        "five.",
    ]
    assert whole.content[0] == {"type": "reasoning", "reasoning": "Hm, five."}
    # The earlier answer went back as its text only.
    assert server.requests[1]["body"]["messages"][1] == {"role": "assistant", "content": "4"}


def test_images_in_tool_results_reach_anthropic_as_image_blocks(server: Loopback) -> None:
    server.json(an_message([{"type": "text", "text": "a red dot"}]))
    pixel = "data:image/png;base64,iVBORw0KGgo="
    history = [
        ("user", "what is in the picture?"),
        AIMessage(content="", tool_calls=[{"name": "look", "args": {}, "id": "toolu_9"}]),
        ToolMessage(
            content=[
                {"type": "text", "text": "the picture:"},
                {"type": "image_url", "image_url": {"url": pixel}},
            ],
            tool_call_id="toolu_9",
        ),
    ]
    anthropic(server, prompt_caching=False).invoke(history)
    result = server.requests[0]["body"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["content"] == [
        {"type": "text", "text": "the picture:"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
    ]


def test_images_in_tool_results_reach_openai_as_content_parts(server: Loopback) -> None:
    # As langchain-openai sends them: the tool message's content becomes parts. An
    # OpenAI-compatible server that reads images there gets them; nothing is dropped.
    server.json(oa_completion("a red dot"))
    pixel = "data:image/png;base64,iVBORw0KGgo="
    history = [
        ("user", "what is in the picture?"),
        AIMessage(content="", tool_calls=[{"name": "look", "args": {}, "id": "call_9"}]),
        ToolMessage(
            content=[
                {"type": "text", "text": "the picture:"},
                {"type": "image_url", "image_url": {"url": pixel}},
            ],
            tool_call_id="call_9",
        ),
        ToolMessage(content=[{"type": "text", "text": "plain"}], tool_call_id="call_9"),
    ]
    assert openai(server).invoke(history).content == "a red dot"
    sent = server.requests[0]["body"]["messages"]
    assert sent[-2] == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": [
            {"type": "text", "text": "the picture:"},
            {"type": "image_url", "image_url": {"url": pixel}},
        ],
    }
    # A result without images stays one string, as before.
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_9", "content": "plain"}


def test_thinking_is_an_anthropic_setting() -> None:
    with pytest.raises(ModelError, match="AnthropicChat settings"):
        OpenAIChat(
            "gpt-4o-mini", api_key=OPENAI_KEY, base_url="http://127.0.0.1:9/v1"
        )._core.__class__("openai", "gpt-4o-mini", api_key=OPENAI_KEY, thinking=THINKING)
