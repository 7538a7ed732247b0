"""The arguments of a model call, read in one place (``chat_args`` in
``src/bindings/models.rs``) for ``invoke`` (waited for or awaited) and ``stream``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_models_http import OA_DONE, Loopback, oa_chunk, oa_completion, openai

from ironloop._ironloop import _ChatModelCore


@pytest.fixture
def server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


def core(server: Loopback) -> _ChatModelCore:
    return _ChatModelCore("openai", "m", base_url=server.url + "/v1", api_key="k", max_retries=0)


def test_the_three_calls_send_the_same_request(server: Loopback) -> None:
    kw: dict[str, Any] = {
        "temperature": 0.5,
        "max_tokens": 7,
        "stop": "END",
        "parallel_tool_calls": False,
        "extra": {"seed": 1, "top_p": 0.1},
        "top_p": 0.9,  # an unknown keyword is a body field, over `extra`
    }
    tools = [{"name": "add", "description": "Adds.", "parameters": {"type": "object"}}]
    c = core(server)
    server.json(oa_completion("a"))
    c.invoke("hi", tools, "add", **kw)
    server.sse([oa_chunk({"content": "b"}, "stop"), OA_DONE])
    c.stream([("user", "hi")], tools, "add", **kw).collect()
    bodies = [r["body"] for r in server.requests]
    for body in bodies:
        assert body["messages"] == [{"role": "user", "content": "hi"}]
        assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.5, 7, ["END"])
        assert body["parallel_tool_calls"] is False
        assert (body["seed"], body["top_p"]) == (1, 0.9)
        assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert bodies[0]["tools"] == bodies[1]["tools"]


async def test_awaited_invoke_reads_the_same_arguments(server: Loopback) -> None:
    server.json(oa_completion("a"))
    await core(server).invoke("hi", None, None, asynchronous=True, max_tokens=3, seed=5)
    body = server.requests[0]["body"]
    assert (body["max_tokens"], body["seed"]) == (3, 5)


def test_a_body_field_named_extra_through_the_public_api(server: Loopback) -> None:
    server.json(oa_completion("a"))
    openai(server).invoke("hi", extra={"x": 1}, extra_body={"seed": 2})
    body = server.requests[0]["body"]
    assert (body["extra"], body["seed"]) == ({"x": 1}, 2)


def test_a_bad_keyword_is_named_before_any_request(server: Loopback) -> None:
    c = core(server)
    with pytest.raises(TypeError) as info:
        c.invoke("hi", max_tokens="many")  # type: ignore[arg-type]
    assert "while processing 'max_tokens'" in info.value.__notes__
    with pytest.raises(TypeError, match="extra body fields must be a dict"):
        c.stream("hi", extra=[1])
    with pytest.raises(TypeError, match="a tool must be"):
        c.invoke("hi", [{"nothing": 1}])
    assert server.requests == []
