"""``ironloop serve``: the command, the project's langgraph.json (graphs, env,
dependencies, http.app), assistants, and errors as JSON 4xx — over real HTTP, driven
by langgraph-sdk's own clients."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from serve_support import Server, ironloop_command, serve


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory.mktemp("serve")) as s:
        yield s


def test_help_documents_every_option() -> None:
    out = subprocess.run(
        [*ironloop_command(), "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for option in ("--config", "--host", "--port", "--postgres", "--data-dir", "--max-running",
                   "--max-body-mb", "--log-level"):  # fmt: skip
        assert option in out


def test_a_bad_project_is_refused_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "langgraph.json").write_text('{"graphs": {"agent": "./missing.py:graph"}}')
    proc = subprocess.run(
        [*ironloop_command(), "serve", "--config", str(tmp_path / "langgraph.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "graph 'agent': no file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_storage_is_sqlite_in_the_project_folder(server: Server) -> None:
    assert (server.folder / ".ironloop" / "checkpoints.db").exists()
    assert (server.folder / ".ironloop" / "server.db").exists()


def test_custom_routes_env_and_dependencies(server: Server) -> None:
    # http.app is mounted beside the API; its handler reads a variable from the .env
    # file langgraph.json names; agent.py imports a module from "./lib".
    r = httpx.get(server.url + "/hello")
    assert r.json() == {"greeting": "hello from .env"}
    assert httpx.get(server.url + "/ok").json() == {"ok": True}


def test_assistants_one_per_graph_with_langgraphs_ids(server: Server) -> None:
    client = get_sync_client(url=server.url)
    found = client.assistants.search(limit=10)
    assert sorted(a["graph_id"] for a in found) == ["agent", "nested", "steps", "summary"]
    agent = client.assistants.search(graph_id="agent")[0]
    # langgraph dev derives the same id from the graph id.
    assert agent["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    assert client.assistants.get(agent["assistant_id"])["graph_id"] == "agent"
    nested = client.assistants.search(graph_id="nested")[0]
    assert nested["description"] == "a graph with a subgraph"


async def test_assistant_graph_and_schemas(server: Server) -> None:
    client = get_client(url=server.url)
    drawing = await client.assistants.get_graph("steps")
    assert [n["id"] for n in drawing["nodes"]] == ["__start__", "first", "second", "__end__"]
    assert {(e["source"], e["target"]) for e in drawing["edges"]} == {
        ("__start__", "first"), ("first", "second"), ("second", "__end__"),
    }  # fmt: skip
    agent = await client.assistants.get_graph("agent")
    assert any(e.get("conditional") for e in agent["edges"])
    schemas = await client.assistants.get_schemas("steps")
    assert schemas["graph_id"] == "steps"
    assert set(schemas["state_schema"]["properties"]) == {"items", "ask", "sleep", "fail", "echo"}
    subgraphs = await client.assistants.get_subgraphs("nested")
    assert "inner" in subgraphs


def test_errors_are_json_4xx_naming_the_problem(server: Server) -> None:
    client = get_sync_client(url=server.url)
    # runs.wait raises httpx's own error (the SDK reads its body only for other calls).
    with pytest.raises(httpx.HTTPStatusError) as info:
        client.runs.wait(None, "nope", input={})
    assert info.value.response.status_code == 422
    assert "registered graphs: agent" in info.value.response.read().decode()
    with pytest.raises(NotFoundError, match="not found"):
        client.threads.get("00000000-0000-0000-0000-000000000000")
    with pytest.raises(UnprocessableEntityError, match="must be a UUID"):
        client.threads.get("not-a-uuid")
    with pytest.raises(UnprocessableEntityError, match="stream_mode 'bogus'"):
        client.runs.create(None, "steps", input={}, stream_mode="bogus")  # type: ignore[arg-type]
    with pytest.raises(UnprocessableEntityError, match="interrupt_before"):
        client.runs.create(None, "steps", input={}, interrupt_before=["nowhere"])
    thread = client.threads.create()
    with pytest.raises(ConflictError, match="already exists"):
        client.threads.create(thread_id=thread["thread_id"])
    raw = [
        httpx.post(server.url + "/threads", content=b"{not json",
                   headers={"content-type": "application/json"}),
        httpx.post(server.url + "/threads", json=[1, 2]),
        httpx.post(server.url + "/threads", json={"metadata": "x"}),
        httpx.post(server.url + "/threads/search", json={"limit": -1}),
        httpx.get(server.url + "/no/such/route"),
        httpx.delete(server.url + "/assistants/search"),
    ]  # fmt: skip
    for r in raw:
        assert 400 <= r.status_code < 500, r.text
        assert r.headers["content-type"] == "application/json"
        assert r.json()["detail"]
        assert "Traceback" not in r.text
    assert "'metadata' must be an object" in raw[2].json()["detail"]


def test_request_bodies_are_size_limited(tmp_path: Path) -> None:
    with serve(tmp_path, "--max-body-mb", "0.01") as s:
        r = httpx.post(s.url + "/threads", json={"metadata": {"x": "y" * 20_000}})
        assert r.status_code == 413
        assert "limit of 10485 bytes" in r.json()["detail"]
        assert httpx.post(s.url + "/threads", json={"metadata": {"x": "y"}}).status_code == 200


def test_cors_is_closed_by_default(server: Server) -> None:
    r = httpx.options(
        server.url + "/threads",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in r.headers
