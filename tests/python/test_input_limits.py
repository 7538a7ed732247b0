"""Outside input is bounded, each bound with a default, a way to change it and an
error that says which bound was crossed: OpenAPI specs (size, YAML alias expansion,
nesting — also through ``from_url``), model responses (body size, SSE line length),
and tool-call arguments as JSON text nested 100,000 deep (an invalid tool call, not a
crash)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from test_models_http import Loopback, oa_chunk, oa_completion, openai

from ironloop.errors import ModelError, OpenApiFetchError, OpenApiSpecError
from ironloop.openapi import OpenApiToolset

PETS = """\
openapi: 3.0.3
info: {title: Pets, version: "1"}
servers: [{url: "http://127.0.0.1:9/v1"}]
paths:
  /pets:
    get:
      operationId: listPets
      responses: {"200": {description: ok}}
"""


def alias_bomb(levels: int = 9) -> str:
    """ "Billion laughs": each anchor refers to the one before nine times (9**9 leaves)."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "openapi: 3.0.3\ninfo: {title: x, version: '1'}\n" + "\n".join(lines) + "\npaths: {}\n"


def test_a_yaml_alias_bomb_is_refused_in_well_under_a_second() -> None:
    bomb = alias_bomb()
    assert len(bomb) < 2_000
    start = time.monotonic()
    with pytest.raises(OpenApiSpecError, match=r"more than 100000 nodes once aliases are expanded"):
        OpenApiToolset.from_str(bomb)
    # Well under a second even in the debug build the suite runs (~0.05 s in release).
    assert time.monotonic() - start < 1.0


def test_max_spec_nodes_is_settable() -> None:
    assert [t.name for t in OpenApiToolset.from_str(PETS)] == ["listPets"]
    with pytest.raises(OpenApiSpecError, match=r"more than 10 nodes.*max_spec_nodes"):
        OpenApiToolset.from_str(PETS, max_spec_nodes=10)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # yaml-rust2's scanner stops flow collections at its own limit first.
        ("a: " + "[" * 100_000, "nested deeper than 128 levels|recursion limit exceeded"),
        ("a:\n" + "".join("  " * i + "- \n" for i in range(1, 400)), "nested deeper than 128"),
        ('{"a":' * 100_000, "recursion limit exceeded"),
    ],
)
def test_deep_nesting_is_refused_not_a_stack_overflow(text: str, message: str) -> None:
    with pytest.raises(OpenApiSpecError, match=message):
        OpenApiToolset.from_str(text)


def test_a_spec_larger_than_max_spec_bytes_is_refused() -> None:
    with pytest.raises(OpenApiSpecError, match=r"more than max_spec_bytes \(100\)"):
        OpenApiToolset.from_str(PETS, max_spec_bytes=100)


def test_yaml_reads_as_before() -> None:
    """The bounded reader keeps the YAML 1.2 core schema: `no` stays a string, numbers
    and booleans are typed, anchors and aliases resolve, keys keep their text."""
    spec = PETS + textwrap.indent(
        textwrap.dedent(
            """\
            /pets/{id}:
              parameters: &p
                - {name: id, in: path, required: true, schema: {type: integer}}
              delete:
                operationId: deletePet
                parameters: *p
                responses: {"204": {description: "no"}}
                x-flags: {on: no, 1.0: yes, enabled: true, n: 3, f: 1.5, nothing: ~}
            """
        ),
        "  ",
    )
    ts = OpenApiToolset.from_str(spec)
    assert [t.name for t in ts] == ["listPets", "deletePet"]
    assert ts["deletePet"].parameters["properties"]["id"]["type"] == "integer"


@pytest.mark.parametrize("bad", ["0", "-1"])
def test_limits_must_be_positive(bad: str) -> None:
    from ironloop.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="max_spec_nodes must be an int >= 1"):
        OpenApiToolset.from_str(PETS, max_spec_nodes=int(bad))


class SpecServer:
    """Serves one text at /spec."""

    def __init__(self, body: str) -> None:
        data = body.encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/yaml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/spec"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_from_url_refuses_an_alias_bomb_and_an_oversized_spec() -> None:
    srv = SpecServer(alias_bomb())
    try:
        start = time.monotonic()
        with pytest.raises(OpenApiSpecError, match="once aliases are expanded"):
            OpenApiToolset.from_url(srv.url)
        assert time.monotonic() - start < 1.0
        with pytest.raises(OpenApiFetchError, match="larger than max_spec_bytes \\(100 bytes\\)"):
            OpenApiToolset.from_url(srv.url, max_spec_bytes=100)
    finally:
        srv.close()


# --------------------------------------------------------------------------- models


@pytest.fixture
def server() -> Iterator[Loopback]:
    s = Loopback()
    yield s
    s.close()


def test_tool_call_arguments_nested_100000_deep_are_an_invalid_call(server: Loopback) -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    server.json(oa_completion(None, [("c1", "add", deep)]))
    msg = openai(server).invoke("hi")
    assert msg.tool_calls == []
    (bad,) = msg.invalid_tool_calls
    assert "recursion limit exceeded" in bad["error"]


def test_a_response_nested_100000_deep_is_a_model_error(server: Loopback) -> None:
    server.replies.append({"status": 200, "echo": lambda _h: "[" * 100_000 + "]" * 100_000})
    with pytest.raises(ModelError, match="recursion limit exceeded"):
        openai(server, max_retries=0).invoke("hi")


def test_an_event_stream_line_longer_than_the_limit_is_a_model_error(server: Loopback) -> None:
    huge = "x" * (9 << 20)  # over the 8 MiB default
    server.sse([oa_chunk({"role": "assistant", "content": huge})], gap=0)
    with pytest.raises(ModelError, match=r"longer than 8388608 bytes.*IRONLOOP_MAX_SSE_LINE_BYTES"):
        list(openai(server, max_retries=0).stream("hi"))


CHILD = """
import sys
sys.path.insert(0, {here!r})
from test_models_http import Loopback, oa_completion, openai
from ironloop.errors import ModelError
s = Loopback()
s.json(oa_completion("x" * 5000))
try:
    openai(s, max_retries=0).invoke("hi")
except ModelError as e:
    print("ERROR", e)
else:
    print("OK")
"""


def test_the_response_limit_is_settable() -> None:
    env = {**os.environ, "IRONLOOP_MAX_RESPONSE_BYTES": "4096"}
    here = os.path.dirname(__file__)
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(here=here)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "larger than 4096 bytes (IRONLOOP_MAX_RESPONSE_BYTES" in out.stdout, (
        out.stdout + out.stderr
    )
