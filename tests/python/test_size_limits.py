"""Every source's size limits go through one check (``size_limit`` in the core's
glue): the same error, naming the option, for the workspace tools, MCP and OpenAPI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ironloop.errors import InvalidArgumentError
from ironloop.mcp import McpToolset
from ironloop.openapi import OpenApiToolset
from ironloop.tools import workspace

SPEC = """
openapi: 3.0.0
info: {title: t, version: "1"}
servers: [{url: "http://127.0.0.1:9"}]
paths:
  /ping:
    get:
      operationId: ping
      responses: {"200": {description: ok}}
"""

# Each refused before anything is opened: nothing listens on port 9.
MAKERS: dict[str, Callable[[Any], Any]] = {
    "max_output_bytes": lambda v: workspace(".", max_output_bytes=v),
    "max_message_bytes": lambda v: McpToolset.http("http://127.0.0.1:9/mcp", max_message_bytes=v),
    "max_spec_bytes": lambda v: OpenApiToolset.from_str(SPEC, max_spec_bytes=v),
    "max_spec_nodes": lambda v: OpenApiToolset.from_str(SPEC, max_spec_nodes=v),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "10", None])
def test_a_limit_that_is_not_an_int_of_at_least_one_is_refused(name: str, bad: Any) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"^{name} must be an int >= 1, got "):
        MAKERS[name](bad)


def test_a_good_limit_is_taken() -> None:
    assert [t.name for t in OpenApiToolset.from_str(SPEC, max_output_bytes=1)] == ["ping"]
    assert workspace(".", max_output_bytes=1)


@pytest.mark.parametrize(
    "make",
    [
        lambda h: McpToolset.http("http://127.0.0.1:9/mcp", headers=h),
        lambda h: OpenApiToolset.from_str(SPEC, headers=h),
    ],
)
def test_headers_are_checked_by_one_rule_that_never_shows_a_value(make: Any) -> None:
    """Headers may hold a credential: a bad one is named by its type, not shown."""
    with pytest.raises(TypeError, match=r"^headers must map str to str, got 'X-Key': bytes$"):
        make({"X-Key": b"s3cret"})
    with pytest.raises(TypeError, match="headers must be a mapping of str to str, got list"):
        make([("X-Key", "v")])
