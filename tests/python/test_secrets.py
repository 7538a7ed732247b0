"""Planted secrets never leak: keys and header values given to a model, an OpenAPI
toolset and an MCP server, through agents whose servers fail and succeed, are absent
from every checkpoint (the SQLite file's bytes), every ``repr``, every exception text,
every log record of the ``ironloop.*`` loggers at DEBUG and every stream event."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_models_http import OA_DONE, Loopback, oa_chunk, oa_text_stream, oa_usage_chunk
from test_openapi import SPEC_30, PetStore

from ironloop import SqliteSaver, create_react_agent
from ironloop.mcp import McpToolset
from ironloop.models import OpenAIChat
from ironloop.openapi import OpenApiToolset

SERVER = str(Path(__file__).with_name("mcp_server.py"))

# One planted key per place, each told apart by its tail.
MODEL_KEY = "sk-PLANTED-model-key-0001"
HEADER_VALUE = "sk-PLANTED-default-header-0002"
QUERY_VALUE = "sk-PLANTED-base-url-query-0003"
OPENAPI_KEY = "sk-PLANTED-openapi-cred-0004"
MCP_KEY = "sk-PLANTED-mcp-header-0005"
PLANTED = [MODEL_KEY, HEADER_VALUE, QUERY_VALUE, OPENAPI_KEY, MCP_KEY]


def leaks(text: str) -> list[str]:
    """Every planted key of which `text` shows a piece (the marker, or the unique
    tail of one)."""
    found = ["sk-PLANTED"] if "PLANTED" in text else []
    return found + [k for k in PLANTED if k[-9:] in text]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(f"{record.name} {record.getMessage()} {record.args!r}")
        if record.exc_info:
            self.texts.append("".join(traceback.format_exception(*record.exc_info)))


@pytest.fixture
def records() -> Iterator[Records]:
    h = Records()
    log = logging.getLogger("ironloop")
    old = log.level
    log.addHandler(h)
    log.setLevel(logging.DEBUG)
    try:
        yield h
    finally:
        log.removeHandler(h)
        log.setLevel(old)


@pytest.fixture
def mcp_http() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, SERVER, "--http"], stdout=subprocess.PIPE, text=True)
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(30)
        assert line and line[0].startswith("READY "), line
        yield line[0].split()[1]
    finally:
        proc.kill()
        proc.wait()


def echo_everything(headers: dict[str, str]) -> str:
    # A server that echoes every request header in its error text.
    return "rejected: " + json.dumps(headers)


def exception_texts(e: BaseException) -> list[str]:
    return [str(e), repr(e), "".join(traceback.format_exception(type(e), e, e.__traceback__))]


def test_planted_keys_appear_nowhere(tmp_path: Path, records: Records, mcp_http: str) -> None:
    seen: list[tuple[str, str]] = []  # (where, text)

    def look(where: str, *objs: Any) -> None:
        for o in objs:
            seen.append((where, o if isinstance(o, str) else repr(o)))

    model_server, store, failing_mcp = Loopback(), PetStore(), Loopback()
    threading.Thread(target=store.serve_forever, daemon=True).start()
    try:
        model = OpenAIChat(
            "gpt-4o-mini",
            base_url=model_server.url + f"/v1?api-key={QUERY_VALUE}",
            api_key=MODEL_KEY,
            default_headers={"x-extra-key": HEADER_VALUE},
        )
        pets = OpenApiToolset.from_file(
            SPEC_30,
            base_url=f"{store.url}/api/v1",
            headers={"Authorization": f"Bearer {OPENAPI_KEY}"},
        )
        # An MCP server that answers 401 and echoes the request's headers.
        failing_mcp.replies.extend({"status": 401, "echo": echo_everything} for _ in range(4))
        with pytest.raises(ConnectionError) as refused:
            McpToolset.http(
                failing_mcp.url + "/mcp", headers={"Authorization": f"Bearer {MCP_KEY}"}
            )
        look("MCP connect error", *exception_texts(refused.value))
        mcp = McpToolset.http(
            mcp_http, headers={"Authorization": f"Bearer {MCP_KEY}"}, prefix="m", timeout=5
        )
        look("objects", model, pets, mcp, *pets.tools, *mcp.tools, vars(model))

        saver = SqliteSaver.from_conn_string(str(tmp_path / "cp.db"))
        agent = create_react_agent(model, [*pets.tools, *mcp.tools], checkpointer=saver)
        look("objects", agent, saver)

        # 1. The model's server refuses, echoing every header and the URL.
        model_server.replies.append({"status": 401, "echo": echo_everything})
        cfg: dict[str, Any] = {"configurable": {"thread_id": "t1"}}
        with pytest.raises(Exception) as failed:
            for ev in agent.stream(
                {"messages": [("user", "go")]},
                cfg,
                stream_mode=["values", "updates", "debug", "custom", "messages"],
            ):
                look("stream event", ev)
        look("model error", *exception_texts(failed.value))

        # 2. It fails once more (a 500, retried: a log record) and then answers: tools
        # that fail (a 401 echoing the OpenAPI credential, an MCP
        # tool that raises) and succeed, then a last answer.
        calls = [
            ("c1", "createPet", json.dumps({"body": {"name": "Nemo"}})),
            ("c2", "listPets", json.dumps({"limit": 2})),
            ("c3", "m__add", json.dumps({"a": 2, "b": 3})),
            ("c4", "m__fail", "{}"),
        ]
        model_server.replies.append({"status": 500, "echo": echo_everything})
        model_server.sse(
            [
                oa_chunk({"role": "assistant", "content": "", "refusal": None}),
                *(
                    oa_chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": cid,
                                    "type": "function",
                                    "function": {"name": name, "arguments": args},
                                }
                            ]
                        }
                    )
                    for i, (cid, name, args) in enumerate(calls)
                ),
                oa_chunk({}, "tool_calls"),
                oa_usage_chunk(),
                OA_DONE,
            ]
        )
        model_server.sse(oa_text_stream("do", "ne"))
        cfg = {"configurable": {"thread_id": "t2"}}
        for ev in agent.stream(
            {"messages": [("user", "go")]},
            cfg,
            stream_mode=["values", "updates", "debug", "custom", "messages"],
        ):
            look("stream event", ev)
        state = agent.get_state(cfg)
        tool_texts = {
            m.tool_call_id: (m.status, m.text) for m in state.values["messages"] if m.type == "tool"
        }
        assert tool_texts["c1"][0] == "error" and "401" in tool_texts["c1"][1], tool_texts
        assert tool_texts["c2"][0] == "success" and tool_texts["c3"] == ("success", "5"), tool_texts
        assert tool_texts["c4"][0] == "error", tool_texts
        assert state.values["messages"][-1].text == "done"
        look(
            "state",
            state,
            *agent.get_state_history(cfg),
            agent.get_state({"configurable": {"thread_id": "t1"}}),
        )
        mcp.close()
    finally:
        model_server.close()
        failing_mcp.close()
        store.shutdown()
        store.server_close()

    # The servers did get the keys: they were sent, and echoed back.
    sent = json.dumps(model_server.requests)
    assert MODEL_KEY in sent and HEADER_VALUE in sent
    assert any(r["headers"].get("authorization") == f"Bearer {OPENAPI_KEY}" for r in store.requests)
    assert failing_mcp.requests

    # The checkpoint file, and its WAL if any, byte for byte.
    for f in tmp_path.glob("cp.db*"):
        data = f.read_bytes()
        assert b"PLANTED" not in data, f"{f.name} holds a planted key"
        for k in PLANTED:
            assert k[-9:].encode() not in data, (f.name, k)
    look("log record", *records.texts)
    assert records.texts, "no log record was captured: the scan would prove nothing"
    hits = [(where, leaks(text), text[:300]) for where, text in seen if leaks(text)]
    assert not hits, hits


KEY = "sk-proj-Zq8vR2mXw4LpT7yN0bKcHs3D"


@pytest.mark.parametrize(
    "shown",
    [
        KEY.upper(),
        KEY.lower(),
        KEY.removeprefix("sk-"),
        KEY[-12:],
        f"{KEY[:6]}...{KEY[-8:]}",  # a provider's masked form: its visible tail
    ],
)
def test_a_changed_key_in_a_providers_error_body_is_scrubbed(shown: str, records: Records) -> None:
    """Providers echo a key changed: upper-cased, without its `sk-` prefix, or only its
    last characters. None of it reaches the exception or the log."""
    server = Loopback()
    try:
        body = {"error": {"message": f"Incorrect API key provided: {shown}.", "code": 401}}
        server.replies.append({"status": 401, "json": body})
        model = OpenAIChat("gpt-4o-mini", base_url=server.url + "/v1", api_key=KEY)
        with pytest.raises(Exception) as failed:
            model.invoke("hi")
        texts = exception_texts(failed.value) + records.texts
        assert "[redacted]" in str(failed.value), str(failed.value)
        visible = shown.split("...")[-1]
        for t in texts:
            assert visible not in t and visible.lower() not in t.lower(), t
        assert "Incorrect API key provided" in str(failed.value)
    finally:
        server.close()
