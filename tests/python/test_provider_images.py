"""Images in user messages, as the wire of each provider wants them, against loopback
servers: OpenAI's ``image_url`` parts and Anthropic's ``image`` blocks, from the image
parts LangChain users write (OpenAI's ``image_url`` shape, and langchain-core's
standard ``image`` blocks by URL or base64 data)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_models_http import Loopback, an_message, anthropic, oa_completion, openai

from ironloop.messages import AIMessage, HumanMessage, ToolMessage

PNG = "iVBORw0KGgo="
DATA_URL = f"data:image/png;base64,{PNG}"
WEB_URL = "https://example.com/cat.png"

#: The image parts a LangChain program puts in a user message, each with the data URL
#: or web URL it stands for.
PARTS: list[tuple[dict[str, Any], str]] = [
    ({"type": "image_url", "image_url": {"url": DATA_URL}}, DATA_URL),
    ({"type": "image_url", "image_url": WEB_URL}, WEB_URL),
    ({"type": "image", "url": WEB_URL}, WEB_URL),
    ({"type": "image", "base64": PNG, "mime_type": "image/png"}, DATA_URL),
    ({"type": "image", "source_type": "base64", "data": PNG, "mime_type": "image/png"}, DATA_URL),
    ({"type": "image", "source_type": "url", "url": WEB_URL}, WEB_URL),
]


@pytest.fixture
def server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


def question(part: dict[str, Any]) -> list[Any]:
    return [HumanMessage(content=[{"type": "text", "text": "what is this?"}, part])]


@pytest.mark.parametrize(("part", "url"), PARTS)
def test_user_images_reach_openai_as_image_url_parts(
    server: Loopback, part: dict[str, Any], url: str
) -> None:
    server.json(oa_completion("a cat"))
    assert openai(server).invoke(question(part)).content == "a cat"
    (user,) = server.requests[0]["body"]["messages"]
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }


@pytest.mark.parametrize(("part", "url"), PARTS)
def test_user_images_reach_anthropic_as_image_blocks(
    server: Loopback, part: dict[str, Any], url: str
) -> None:
    server.json(an_message([{"type": "text", "text": "a cat"}]))
    assert anthropic(server, prompt_caching=False).invoke(question(part)).content == "a cat"
    (user,) = server.requests[0]["body"]["messages"]
    source = (
        {"type": "base64", "media_type": "image/png", "data": PNG}
        if url == DATA_URL
        else {"type": "url", "url": WEB_URL}
    )
    assert user == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": source},
        ],
    }


def test_an_anthropic_image_block_passes_to_anthropic_unchanged(server: Loopback) -> None:
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    server.json(an_message([{"type": "text", "text": "a cat"}]))
    anthropic(server, prompt_caching=False).invoke(question(block))
    (user,) = server.requests[0]["body"]["messages"]
    assert user["content"][1] == block


def tool_result(part: dict[str, Any]) -> list[Any]:
    return [
        ("user", "what is in the picture?"),
        AIMessage(content="", tool_calls=[{"name": "look", "args": {}, "id": "call_9"}]),
        ToolMessage(
            content=[{"type": "text", "text": "the picture:"}, part], tool_call_id="call_9"
        ),
    ]


@pytest.mark.parametrize(("part", "url"), PARTS)
def test_tool_result_images_reach_openai_as_content_parts(
    server: Loopback, part: dict[str, Any], url: str
) -> None:
    server.json(oa_completion("a cat"))
    openai(server).invoke(tool_result(part))
    sent = server.requests[0]["body"]["messages"][-1]
    assert sent == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": [
            {"type": "text", "text": "the picture:"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }


@pytest.mark.parametrize(("part", "url"), PARTS)
def test_tool_result_images_reach_anthropic_as_image_blocks(
    server: Loopback, part: dict[str, Any], url: str
) -> None:
    server.json(an_message([{"type": "text", "text": "a cat"}]))
    anthropic(server, prompt_caching=False).invoke(tool_result(part))
    result = server.requests[0]["body"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["content"][1]["type"] == "image"
    source = result["content"][1]["source"]
    if url == DATA_URL:
        assert source == {"type": "base64", "media_type": "image/png", "data": PNG}
    else:
        assert source == {"type": "url", "url": WEB_URL}
