"""OpenTelemetry spans of tool calls that run in Rust — workspace tools, an MCP server's
tools (the official MCP Python SDK's server, a real process), an OpenAPI spec's
operations (a real HTTP server on loopback) — and of a LangChain chat model as the
agent's model (langchain-openai against a loopback OpenAI server): one span per call
with the GenAI attributes, under the step that ran it across parallel calls and
inside sub-agents, read back with the SDK's ``InMemorySpanExporter``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from test_mcp import SERVER
from test_models_http import Loopback, oa_completion, oa_text_stream
from test_openapi import SPEC_30, TOKEN, PetStore
from test_openapi import store as store
from test_tracing import by_name, parent_of
from test_tracing import oa_server as oa_server
from test_tracing import spans as spans

from ironloop import _tracing, create_react_agent, tool
from ironloop.mcp import McpToolset
from ironloop.messages import ToolMessage
from ironloop.models import ScriptedChatModel
from ironloop.openapi import OpenApiToolset
from ironloop.tools import workspace

OPENAI_KEY = "sk-test-openai-0123456789abcdef"


def calls(*named: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A scripted answer calling tools, with the ids given."""
    return {
        "content": "",
        "tool_calls": [{"id": i, "name": n, "args": a} for i, n, a in named],
    }


def tool_spans(got: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    """The ``execute_tool`` spans by call id (one each)."""
    out: dict[str, ReadableSpan] = {}
    for s in by_name(got, "execute_tool "):
        call_id = str(s.attributes["gen_ai.tool.call.id"])
        assert call_id not in out, f"two spans for call {call_id}"
        out[call_id] = s
    return out


def assert_tool_span(span: ReadableSpan, name: str, call_id: str) -> None:
    attrs = span.attributes or {}
    assert span.name == f"execute_tool {name}"
    assert attrs["gen_ai.operation.name"] == "execute_tool"
    assert attrs["gen_ai.tool.name"] == name
    assert attrs["gen_ai.tool.call.id"] == call_id
    assert attrs["gen_ai.tool.type"] == "function"


def one_step_parent(spans_: list[ReadableSpan], got: tuple[ReadableSpan, ...]) -> ReadableSpan:
    """The one step span every span of ``spans_`` is a child of."""
    parents = {parent_of(s, got).context.span_id for s in spans_}  # type: ignore[union-attr]
    assert len(parents) == 1, "parallel calls of one message are not siblings"
    step = parent_of(spans_[0], got)
    assert step is not None and step.name.startswith("step ")
    return step


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    (r / "notes.txt").write_text("alpha\nbeta\n")
    (r / "todo.txt").write_text("gamma\n")
    return r


def test_workspace_tools_get_a_span_each_under_their_step(
    spans: InMemorySpanExporter,
    root: Path,
) -> None:
    model = ScriptedChatModel(
        [
            calls(
                ("w1", "read_file", {"path": "notes.txt"}),
                ("w2", "read_file", {"path": "todo.txt"}),
                ("w3", "read_file", {"path": "missing.txt"}),
                ("w4", "no_such_tool", {}),
                ("w5", "read_file", {"nope": 1}),
            ),
            "done",
        ]
    )
    out = create_react_agent(model, workspace(root), name="filer").invoke(
        {"messages": [("user", "read")]}
    )
    statuses = [m.status for m in out["messages"] if isinstance(m, ToolMessage)]
    assert statuses == ["success", "success", "error", "error", "error"]
    got = spans.get_finished_spans()
    by_id = tool_spans(got)
    assert sorted(by_id) == ["w1", "w2", "w3", "w4", "w5"]
    for call_id, name in [
        ("w1", "read_file"),
        ("w2", "read_file"),
        ("w3", "read_file"),
        ("w4", "no_such_tool"),
        ("w5", "read_file"),
    ]:
        assert_tool_span(by_id[call_id], name, call_id)
    step = one_step_parent(list(by_id.values()), got)
    (run,) = by_name(got, "invoke_agent filer")
    assert parent_of(step, got) is run
    for ok in ("w1", "w2"):
        assert "error.type" not in (by_id[ok].attributes or {})
        assert by_id[ok].status.status_code is StatusCode.UNSET
    # Failures carry the class the error is raised as, and say what happened, but
    # never quote the arguments.
    expected = {
        "w3": "ToolExecutionError",
        "w4": "ToolNotFoundError",
        "w5": "ToolInvalidArgsError",
    }
    for call_id, kind in expected.items():
        span = by_id[call_id]
        assert span.attributes["error.type"] == kind, call_id
        assert span.status.status_code is StatusCode.ERROR
    assert "missing.txt" in (by_id["w3"].status.description or "")
    assert "nope" not in (by_id["w5"].status.description or "")
    text = json.dumps([dict(s.attributes or {}) for s in got])
    assert "alpha" not in text and "notes.txt" not in text


def test_mcp_tools_of_a_server_process_get_spans_under_parallel_sub_agents_steps(
    spans: InMemorySpanExporter,
) -> None:
    def mathematician(msgs: list[Any]) -> Any:
        if isinstance(msgs[-1], ToolMessage):
            return "sum ready"
        q = str(msgs[0].content)  # each sub-agent's call ids start with its question
        return calls(
            (f"{q}_add", "add", {"a": 2, "b": 3}),
            (f"{q}_fail", "fail", {"reason": "nope"}),
            (f"{q}_slow", "slow", {"seconds": 30}),
        )

    with McpToolset.stdio(sys.executable, [SERVER], timeout=2.0) as mcp:
        sub = create_react_agent(ScriptedChatModel(mathematician), mcp.tools, name="mathematician")

        @tool
        def ask_math(question: str) -> str:
            """Asks the sub-agent that has the MCP server's tools."""
            return str(sub.invoke({"messages": [("user", question)]})["messages"][-1].content)

        planner = create_react_agent(
            ScriptedChatModel(
                [
                    calls(
                        ("p1", "ask_math", {"question": "q1"}),
                        ("p2", "ask_math", {"question": "q2"}),
                    ),
                    "done",
                ]
            ),
            [ask_math],
            name="planner",
        )
        planner.invoke({"messages": [("user", "go")]})
    got = spans.get_finished_spans()
    by_id = tool_spans(got)
    assert sorted(by_id) == sorted(
        ["p1", "p2"] + [f"{q}_{t}" for q in ("q1", "q2") for t in ("add", "fail", "slow")]
    )
    # The two ask_math calls are siblings under the planner's tools step.
    one_step_parent([by_id["p1"], by_id["p2"]], got)
    subs = by_name(got, "invoke_agent mathematician")
    assert len(subs) == 2
    for p, q in (("p1", "q1"), ("p2", "q2")):
        assert_tool_span(by_id[p], "ask_math", p)
        assert_tool_span(by_id[f"{q}_add"], "add", f"{q}_add")
        assert_tool_span(by_id[f"{q}_fail"], "fail", f"{q}_fail")
        # This ask_math call's sub-agent run is under its span; that run's MCP calls
        # are siblings under one of its own steps, not under the other run's.
        (sub_run,) = [s for s in subs if parent_of(s, got) is by_id[p]]
        mcp_calls = [by_id[f"{q}_{t}"] for t in ("add", "fail", "slow")]
        step = one_step_parent(mcp_calls, got)
        assert parent_of(step, got) is sub_run
        assert "error.type" not in (by_id[f"{q}_add"].attributes or {})
        failed = by_id[f"{q}_fail"]
        assert failed.attributes["error.type"] == "ToolExecutionError"
        assert "fail: nope" in (failed.status.description or "")
        assert by_id[f"{q}_slow"].attributes["error.type"] == "ToolTimeoutError"
        # Parallel: the add call did not wait for the slow one's 2 s timeout.
        assert by_id[f"{q}_add"].end_time < by_id[f"{q}_slow"].end_time  # type: ignore[operator]


def test_openapi_operations_get_spans_and_no_credential(
    spans: InMemorySpanExporter,
    store: PetStore,
) -> None:
    pets = OpenApiToolset.from_file(
        SPEC_30,
        base_url=f"{store.url}/api/v1",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    model = ScriptedChatModel(
        [
            calls(
                ("o1", "showPetById", {"petId": 1}),
                ("o2", "showPetById", {"petId": 99}),
                ("o3", "getInventory", {}),
            ),
            "done",
        ]
    )
    create_react_agent(model, pets.tools, name="shop").invoke({"messages": [("user", "pets")]})
    got = spans.get_finished_spans()
    by_id = tool_spans(got)
    assert sorted(by_id) == ["o1", "o2", "o3"]
    assert_tool_span(by_id["o1"], "showPetById", "o1")
    assert_tool_span(by_id["o3"], "getInventory", "o3")
    one_step_parent(list(by_id.values()), got)
    assert by_id["o2"].attributes["error.type"] == "ToolExecutionError"
    assert "HTTP 404" in (by_id["o2"].status.description or "")
    dump = json.dumps(
        [[dict(s.attributes or {}), s.status.description, s.name] for s in got], default=str
    )
    assert TOKEN not in dump and "Rex" not in dump


def test_a_rust_tool_invoked_directly_in_a_traced_tool_nests_under_it(
    spans: InMemorySpanExporter,
    root: Path,
) -> None:
    read = next(t for t in workspace(root) if t.name == "read_file")

    @tool
    def summarize(path: str) -> str:
        """Reads a file with the workspace tool and counts its lines."""
        return str(len(str(read.invoke({"path": path})).splitlines()))

    model = ScriptedChatModel([calls(("s1", "summarize", {"path": "notes.txt"})), "done"])
    create_react_agent(model, [summarize]).invoke({"messages": [("user", "go")]})
    got = spans.get_finished_spans()
    outer = next(s for s in by_name(got, "execute_tool summarize"))
    inner = next(s for s in by_name(got, "execute_tool read_file"))
    assert parent_of(inner, got) is outer


def test_untraced_runs_open_no_tool_span(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    # No tracer: the executor gets no call tracer, and tool_start is never called.
    monkeypatch.setattr(_tracing, "_tracer", None)
    seen: list[str] = []
    monkeypatch.setattr(
        _tracing.RunTrace, "tool_start", staticmethod(lambda name, cid: seen.append(cid))
    )
    model = ScriptedChatModel([calls(("u1", "read_file", {"path": "notes.txt"})), "done"])
    out = create_react_agent(model, workspace(root)).invoke({"messages": [("user", "go")]})
    assert out["messages"][-1].content == "done"
    assert seen == []


# --------------------------------------------------------------- LangChain models


@pytest.fixture
def chat_openai(oa_server: Loopback) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model="gpt-4o-mini", base_url=oa_server.url + "/v1", api_key=OPENAI_KEY, max_retries=0
    )


def lc_tools() -> list[Any]:
    @tool
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    return [add]


def assert_chat_span(span: ReadableSpan) -> None:
    attrs = span.attributes or {}
    assert span.name == "chat gpt-4o-mini"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-4o-mini"


def test_a_langchain_model_as_the_agents_model_gets_chat_spans(
    spans: InMemorySpanExporter,
    oa_server: Loopback,
    chat_openai: Any,
) -> None:
    oa_server.json(oa_completion(tool_calls=[("call_1", "add", json.dumps({"a": 2, "b": 3}))]))
    oa_server.json(oa_completion("5"))
    agent = create_react_agent(chat_openai, lc_tools(), name="lc")
    out = agent.invoke({"messages": [("user", "2+3?")]})
    assert out["messages"][-1].content == "5"
    got = spans.get_finished_spans()
    chats = by_name(got, "chat ")
    assert len(chats) == 2
    (run,) = by_name(got, "invoke_agent lc")
    for c in chats:
        assert_chat_span(c)
        assert c.attributes["gen_ai.usage.input_tokens"] == 1117
        assert c.attributes["gen_ai.usage.output_tokens"] == 46
        assert c.attributes["gen_ai.response.model"].startswith("gpt-4o-mini")
        step = parent_of(c, got)
        assert step is not None and parent_of(step, got) is run
    (call,) = by_name(got, "execute_tool add")
    assert call.attributes["gen_ai.tool.call.id"] == "call_1"


async def test_a_langchain_model_streamed_by_the_agent_gets_one_chat_span(
    spans: InMemorySpanExporter,
    oa_server: Loopback,
    chat_openai: Any,
) -> None:
    # Under stream_mode="messages" the agent streams the LangChain model itself.
    oa_server.sse(oa_text_stream("hel", "lo"))
    agent = create_react_agent(chat_openai, [], name="lc")
    parts = [c async for c in agent.astream({"messages": [("user", "hi")]}, stream_mode="messages")]
    assert "".join(str(m.content) for m, _ in parts) == "hello"
    assert oa_server.requests[0]["body"]["stream"] is True
    got = spans.get_finished_spans()
    (chat,) = by_name(got, "chat ")
    assert_chat_span(chat)
    assert chat.attributes["gen_ai.usage.input_tokens"] == 9
    assert chat.attributes["gen_ai.usage.output_tokens"] == 12
    (run,) = by_name(got, "invoke_agent lc")
    assert parent_of(parent_of(chat, got), got) is run  # type: ignore[arg-type]


def test_a_failing_langchain_model_call_carries_error_type(
    spans: InMemorySpanExporter,
    oa_server: Loopback,
    chat_openai: Any,
) -> None:
    oa_server.json({"error": {"message": "bad request"}}, status=400)
    with pytest.raises(Exception) as raised:
        create_react_agent(chat_openai, []).invoke({"messages": [("user", "go")]})
    (chat,) = by_name(spans.get_finished_spans(), "chat ")
    assert chat.attributes["error.type"] == type(raised.value).__qualname__
    assert chat.status.status_code is StatusCode.ERROR
