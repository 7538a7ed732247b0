"""Every error a user can get from the Rust engine is an ``ironloop.errors`` class
(mapped in ``src/bindings/errors.rs``), and still the built-in it used to be."""

from __future__ import annotations

import inspect
import math
import re
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ironloop import errors, tool
from ironloop._tool import Tool
from ironloop.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointIntegrityError,
    CheckpointNotFoundError,
    CheckpointSerializationError,
    CheckpointStorageError,
    InvalidArgumentError,
    IronloopError,
    McpConnectionError,
    McpError,
    McpSessionError,
    ModelError,
    OpenApiError,
    OpenApiFetchError,
    OpenApiFileError,
    OpenApiFileNotFoundError,
    OpenApiSpecError,
    ToolSourceError,
    WorkspaceConfigError,
    WorkspaceError,
    WorkspaceFileError,
    WorkspaceNotFoundError,
)
from ironloop.mcp import McpToolset
from ironloop.models import AnthropicChat, OpenAIChat
from ironloop.openapi import OpenApiToolset
from ironloop.tools import workspace

SPEC = """
openapi: 3.0.3
info: {title: T, version: "1"}
servers: [{url: "http://127.0.0.1:9/v1"}]
paths: {}
"""


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raised(cls: type[BaseException], fn: Callable[[], Any], match: str | None = None) -> Any:
    """Runs ``fn``, checks that it raises exactly ``cls`` (an ``IronloopError``) and
    returns the exception."""
    with pytest.raises(cls, match=match) as info:
        fn()
    assert type(info.value) is cls
    assert isinstance(info.value, IronloopError)
    return info.value


def test_every_class_is_exported_and_an_ironloop_error() -> None:
    classes = [
        v for _, v in inspect.getmembers(errors, inspect.isclass) if v.__module__ == errors.__name__
    ]
    assert sorted(c.__name__ for c in classes) == sorted(errors.__all__)
    # NodeError (LangGraph's, in this module) is what an error handler is told, not
    # an exception.
    classes.remove(errors.NodeError)
    # Every exception is an IronloopError; the warnings (CheckpointTypeWarning) are
    # UserWarnings, which `warnings.filterwarnings` can select.
    warns = [c for c in classes if issubclass(c, Warning)]
    assert [c.__name__ for c in warns] == ["CheckpointTypeWarning"]
    assert all(issubclass(c, UserWarning) for c in warns)
    assert all(issubclass(c, IronloopError) for c in classes if c not in warns)


@pytest.mark.parametrize(
    ("cls", "family", "builtin"),
    [
        (InvalidArgumentError, IronloopError, ValueError),
        (OpenApiSpecError, OpenApiError, ValueError),
        (OpenApiFetchError, OpenApiError, ConnectionError),
        (OpenApiFileError, OpenApiError, OSError),
        (OpenApiFileNotFoundError, OpenApiFileError, FileNotFoundError),
        (McpConnectionError, McpError, ConnectionError),
        (McpSessionError, McpError, RuntimeError),
        (WorkspaceConfigError, WorkspaceError, ValueError),
        (WorkspaceNotFoundError, WorkspaceError, FileNotFoundError),
        (WorkspaceFileError, WorkspaceError, OSError),
        (CheckpointSerializationError, CheckpointError, TypeError),
        (CheckpointNotFoundError, CheckpointError, LookupError),
        (CheckpointNotFoundError, CheckpointError, ValueError),
        (CheckpointStorageError, CheckpointError, Exception),
        (CheckpointConflictError, CheckpointError, Exception),
        (CheckpointIntegrityError, CheckpointError, Exception),
    ],
)
def test_hierarchy(cls: type, family: type, builtin: type) -> None:
    assert issubclass(cls, family) and issubclass(cls, builtin)
    if family is CheckpointError:
        assert issubclass(cls, IronloopError)
    elif family is not IronloopError:
        assert issubclass(cls, ToolSourceError)


# --------------------------------------------------------------------------- timeouts


TIMEOUT_MSG = r"^timeout must be a positive number of seconds \(or None\), got "

TIMEOUT_TAKERS: dict[str, Callable[[Any], Any]] = {
    "OpenAIChat": lambda t: OpenAIChat("m", api_key="k", timeout=t),
    "AnthropicChat": lambda t: AnthropicChat("m", api_key="k", timeout=t),
    "McpToolset.stdio": lambda t: McpToolset.stdio("/nonexistent/ironloop-mcp", timeout=t),
    "McpToolset.http": lambda t: McpToolset.http("http://127.0.0.1:9/mcp", timeout=t),
    "OpenApiToolset.from_str": lambda t: OpenApiToolset.from_str(SPEC, timeout=t),
    "workspace": lambda t: workspace(".", timeout=t),
}


@pytest.mark.parametrize("take", TIMEOUT_TAKERS.values(), ids=TIMEOUT_TAKERS.keys())
@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (-1, "-1"),
        (0, "0"),
        (-0.5, "-0.5"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        (True, "True"),
        ("5", "'5'"),
        (1e300, "1e+300"),
    ],
)
def test_one_timeout_check_everywhere(take: Callable[[Any], Any], value: Any, shown: str) -> None:
    e = raised(
        InvalidArgumentError, lambda: take(value), match=TIMEOUT_MSG + re.escape(shown) + r"(\n|$)"
    )
    assert isinstance(e, ValueError)


def test_timeout_accepts_ints_floats_and_none() -> None:
    assert OpenAIChat("m", api_key="k", timeout=5).url
    assert OpenAIChat("m", api_key="k", timeout=None).url
    assert OpenApiToolset.from_str(SPEC, timeout=1).tools == []
    assert {t.timeout for t in workspace(".", timeout=2)} == {2.0}
    assert Tool("t", "d", parameters={"type": "object"}, func=print, timeout=3).timeout == 3.0


def test_tool_and_bash_timeouts_name_what_is_wrong() -> None:
    raised(
        InvalidArgumentError,
        lambda: Tool("t", "d", parameters={"type": "object"}, func=print, timeout=-1),
        match=r"^tool 't': timeout must be a positive number of seconds \(or None\), got -1(\n|$)",
    )

    def noop() -> None:
        pass

    raised(InvalidArgumentError, lambda: tool(timeout=0)(noop), match=r"'noop'.*got 0(\n|$)")
    raised(
        InvalidArgumentError,
        lambda: workspace(".", bash_timeout=-2),
        match=r"^bash_timeout must be a positive number of seconds, got -2(\n|$)",
    )
    raised(
        InvalidArgumentError,
        lambda: workspace(".", max_bash_timeout=None),  # type: ignore[arg-type]
        match=r"^max_bash_timeout must be a positive number of seconds, got None(\n|$)",
    )


def test_a_tool_timeout_changed_after_construction_is_checked_by_the_engine() -> None:
    from ironloop import ToolNode

    t = Tool("t", "d", parameters={"type": "object"}, func=print)
    t.timeout = -1.0
    raised(InvalidArgumentError, lambda: ToolNode([t]), match='^tool "t": timeout must be')


# --------------------------------------------------------------------------- OpenAPI


def test_openapi_errors(tmp_path: Path) -> None:
    raised(OpenApiSpecError, lambda: OpenApiToolset.from_str("{ not: [json"), "not valid")
    raised(OpenApiSpecError, lambda: OpenApiToolset.from_str('{"swagger": "2.0"}'))
    e = raised(
        OpenApiFileNotFoundError, lambda: OpenApiToolset.from_file(tmp_path / "missing.yaml")
    )
    assert isinstance(e, FileNotFoundError) and isinstance(e, OpenApiError)
    raised(OpenApiFileError, lambda: OpenApiToolset.from_file(tmp_path))  # a directory
    url = f"http://127.0.0.1:{closed_port()}/openapi.json"
    e = raised(OpenApiFetchError, lambda: OpenApiToolset.from_url(url), "cannot fetch")
    assert isinstance(e, ConnectionError)


async def test_openapi_async_fetch_error() -> None:
    url = f"http://127.0.0.1:{closed_port()}/openapi.json"
    with pytest.raises(OpenApiFetchError):
        await OpenApiToolset.afrom_url(url)


# --------------------------------------------------------------------------- MCP


def test_mcp_connection_errors() -> None:
    e = raised(McpConnectionError, lambda: McpToolset.stdio("/nonexistent/ironloop-mcp"))
    assert isinstance(e, ConnectionError) and isinstance(e, ToolSourceError)
    # A program that is not an MCP server: the handshake fails.
    raised(
        McpConnectionError,
        lambda: McpToolset.stdio(sys.executable, ["-c", "pass"]),
        "handshake",
    )
    raised(McpConnectionError, lambda: McpToolset.http(f"http://127.0.0.1:{closed_port()}/mcp"))


async def test_mcp_async_connection_error() -> None:
    with pytest.raises(McpConnectionError):
        await McpToolset.astdio("/nonexistent/ironloop-mcp")


# --------------------------------------------------------------------------- workspace


def test_workspace_errors(tmp_path: Path) -> None:
    e = raised(WorkspaceNotFoundError, lambda: workspace(tmp_path / "missing"), "missing")
    assert isinstance(e, FileNotFoundError)
    (tmp_path / "f").write_text("")
    e = raised(WorkspaceConfigError, lambda: workspace(tmp_path / "f"), "not a directory")
    assert isinstance(e, ValueError)


# --------------------------------------------------------------------------- models


@pytest.mark.parametrize("cls", [OpenAIChat, AnthropicChat])
def test_model_connection_error_carries_its_attributes(
    cls: type[OpenAIChat] | type[AnthropicChat],
) -> None:
    model = cls("m", base_url=f"http://127.0.0.1:{closed_port()}", api_key="k", max_retries=0)
    e = raised(ModelError, lambda: model.invoke("hi"), "connection failed")
    assert e.provider == cls._provider
    assert e.status_code is None
    assert e.retryable is True


async def test_model_errors_from_async_and_streamed_calls() -> None:
    model = OpenAIChat(
        "m", base_url=f"http://127.0.0.1:{closed_port()}", api_key="k", max_retries=0
    )
    with pytest.raises(ModelError) as info:
        await model.ainvoke("hi")
    assert info.value.provider == "openai"
    with pytest.raises(ModelError):
        list(model.stream("hi"))


def test_model_config_error() -> None:
    raised(ModelError, lambda: OpenAIChat("m", base_url="not a url", api_key="k"))


# --------------------------------------------------------------------------- classes


def test_raised_classes_are_the_classes_of_ironloop_errors() -> None:
    """The engine caches the classes: what it raises is the very class users catch."""
    for _ in range(2):
        with pytest.raises(OpenApiSpecError) as info:
            OpenApiToolset.from_str("[")
        assert type(info.value) is errors.OpenApiSpecError


def test_other_out_of_range_arguments() -> None:
    raised(
        InvalidArgumentError,
        lambda: OpenApiToolset.from_str(SPEC, max_output_bytes=0),
        "max_output_bytes",
    )
    raised(InvalidArgumentError, lambda: workspace(".", max_output_bytes=0), "max_output_bytes")
    model = OpenAIChat("m", api_key="k")
    raised(InvalidArgumentError, lambda: model.invoke("hi", tool_choice={"x": 1}), "tool_choice")
