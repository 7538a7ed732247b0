"""ironloop.openapi: a petstore spec (3.0 YAML, 3.1 JSON) as tools, run against a
real HTTP server on loopback — path, query, header and body parameters arrive as the
spec says; a 404 is an error ToolMessage naming the status; calls run in parallel;
timeouts, bad arguments and credentials in errors — inside ToolNode and
create_react_agent, called directly, and the example program and the snippet of docs/tools.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from ironloop import ToolNode, create_react_agent
from ironloop.errors import OpenApiFetchError, ToolExecutionError, ToolInvalidArgsError
from ironloop.messages import AIMessage, ToolMessage
from ironloop.models import ScriptedChatModel
from ironloop.openapi import NativeTool, OpenApiToolset

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPEC_30 = FIXTURES / "petstore-3.0.yaml"
SPEC_31 = FIXTURES / "petstore-3.1.json"
NAMES = ["listPets", "createPet", "showPetById", "deletePet", "getInventory"]
TOKEN = "sk-test-0123456789abcdef"


class PetStore(ThreadingHTTPServer):
    """The API the fixtures describe, under /api/v1, plus its spec at /openapi.json."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.pets: dict[int, dict[str, Any]] = {
            1: {"id": 1, "name": "Rex", "tag": "dog"},
            2: {"id": 2, "name": "Tom", "tag": "cat"},
            3: {"id": 3, "name": "Fido", "tag": "dog"},
        }
        self.requests: list[dict[str, Any]] = []
        self.delay = 0.0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class Handler(BaseHTTPRequestHandler):
    server: PetStore

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self, method: str) -> None:
        url = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        seen: dict[str, Any] = {
            "method": method,
            "path": url.path,
            "query": parse_qs(url.query),
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": json.loads(raw) if raw else None,
        }
        store = self.server
        with store.lock:
            store.requests.append(seen)
        if url.path == "/openapi.json":
            data = SPEC_31.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        parts = url.path.removeprefix("/api/v1").strip("/").split("/")
        q: dict[str, list[str]] = seen["query"]
        if parts == ["pets"] and method == "GET":
            pets = list(store.pets.values())
            if "tag" in q:
                pets = [p for p in pets if p["tag"] == q["tag"][0]]
            return self.reply(200, pets[: int(q.get("limit", ["100"])[0])])
        if parts == ["pets"] and method == "POST":
            auth = self.headers.get("Authorization", "")
            if auth != f"Bearer {TOKEN}":
                return self.reply(401, {"code": 401, "message": f"bad credentials: {auth}"})
            body = seen["body"] or {}
            with store.lock:
                pet = {"id": max(store.pets) + 1, "name": body["name"], "tag": body.get("tag")}
                store.pets[pet["id"]] = pet
            return self.reply(201, pet)
        if len(parts) == 2 and parts[0] == "pets":
            pet_id = int(parts[1])
            if pet_id not in store.pets:
                return self.reply(404, {"code": 404, "message": f"pet {pet_id} not found"})
            if method == "DELETE":
                rid = self.headers.get("X-Request-Id")
                if not rid:
                    return self.reply(400, {"code": 400, "message": "X-Request-Id is required"})
                with store.lock:
                    del store.pets[pet_id]
                return self.reply(200, {"deleted": pet_id, "request_id": rid})
            return self.reply(200, store.pets[pet_id])
        if parts == ["store", "inventory"]:
            time.sleep(store.delay)
            return self.reply(200, {"available": len(store.pets)})
        self.reply(404, {"code": 404, "message": f"no route {method} {url.path}"})

    def do_GET(self) -> None:
        self.handle_any("GET")

    def do_POST(self) -> None:
        self.handle_any("POST")

    def do_DELETE(self) -> None:
        self.handle_any("DELETE")


@pytest.fixture
def store() -> Iterator[PetStore]:
    server = PetStore()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def pets(store: PetStore) -> OpenApiToolset:
    return OpenApiToolset.from_file(
        SPEC_30,
        base_url=f"{store.url}/api/v1",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )


def ai(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": n, "args": a, "id": f"c{i}"} for i, (n, a) in enumerate(calls)],
    )


def run(node: ToolNode, *calls: tuple[str, dict[str, Any]]) -> list[ToolMessage]:
    out: list[ToolMessage] = node.invoke({"messages": [ai(*calls)]})["messages"]
    assert [m.tool_call_id for m in out] == [f"c{i}" for i in range(len(calls))]
    return out


def test_a_30_yaml_spec_becomes_tools(pets: OpenApiToolset, store: PetStore) -> None:
    assert [t.name for t in pets] == NAMES
    assert len(pets) == 5 and "listPets" in pets and "nope" not in pets
    assert all(isinstance(t, NativeTool) for t in pets.tools)
    assert pets.title == "Swagger Petstore" and pets.version == "1.0.0"
    assert pets.base_url == f"{store.url}/api/v1"
    assert pets.skipped == []
    assert (
        repr(pets) == f"OpenApiToolset('Swagger Petstore', base_url='{store.url}/api/v1', 5 tools)"
    )

    listing = pets["listPets"]
    assert listing.description == "List all pets"
    assert listing.timeout == 10.0
    limit = listing.parameters["properties"]["limit"]
    assert limit["type"] == "integer" and limit["maximum"] == 100
    assert (
        limit["description"] == "How many items to return at one time (max 100) (query parameter)"
    )
    assert "required" not in listing.parameters

    create = pets["createPet"].parameters
    assert create["required"] == ["body"]
    body = create["properties"]["body"]
    assert body["description"] == "The pet to add to the store"
    assert body["required"] == ["name"]  # `id` is readOnly: the server sets it
    assert set(body["properties"]) == {"name", "tag"}
    assert body["properties"]["tag"]["type"] == ["string", "null"]  # nullable: true

    delete = pets["deletePet"].parameters
    assert delete["required"] == ["petId", "X-Request-Id"]
    assert delete["properties"]["petId"]["type"] == "integer"
    assert "header parameter" in delete["properties"]["X-Request-Id"]["description"]
    assert pets["deletePet"].to_openai()["function"]["parameters"] == delete
    with pytest.raises(KeyError, match="no tool 'nope'"):
        pets["nope"]


def test_a_31_json_spec_becomes_the_same_tools(store: PetStore) -> None:
    pets = OpenApiToolset.from_str(SPEC_31.read_text(), base_url=f"{store.url}/api/v1")
    assert [t.name for t in pets] == NAMES
    limit = pets["listPets"].parameters["properties"]["limit"]
    assert limit["type"] == ["integer", "null"]
    body = pets["createPet"].parameters["properties"]["body"]
    assert body["properties"]["name"]["examples"] == ["doggie"]
    node = ToolNode(pets.tools)
    [m] = run(node, ("showPetById", {"petId": 2}))
    assert m.status == "success"
    assert m.text == 'HTTP 200 OK\n{"id": 2, "name": "Tom", "tag": "cat"}'


def test_from_url_resolves_the_relative_server(store: PetStore) -> None:
    pets = OpenApiToolset.from_url(f"{store.url}/openapi.json", headers={"X-Trace": "t-1"})
    assert pets.base_url == f"{store.url}/api/v1"
    assert store.requests[-1]["headers"]["x-trace"] == "t-1"
    [m] = run(ToolNode(pets.tools), ("listPets", {"tag": "cat"}))
    assert m.text == 'HTTP 200 OK\n[{"id": 2, "name": "Tom", "tag": "cat"}]'
    assert store.requests[-1]["query"] == {"tag": ["cat"]}
    assert store.requests[-1]["headers"]["x-trace"] == "t-1"

    with pytest.raises(ConnectionError, match="404"):
        OpenApiToolset.from_url(f"{store.url}/nothing-here.json")


async def test_afrom_url(store: PetStore) -> None:
    pets = await OpenApiToolset.afrom_url(f"{store.url}/openapi.json")
    assert [t.name for t in pets] == NAMES
    out = await ToolNode(pets.tools).ainvoke([ai(("showPetById", {"petId": 1}))])
    assert out[0].text.startswith("HTTP 200 OK\n")


def test_bad_specs_and_options_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="relative") as e:
        OpenApiToolset.from_file(SPEC_30)
    assert "base_url" in str(e.value)
    with pytest.raises(FileNotFoundError):
        OpenApiToolset.from_file(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match=r"Swagger 2\.0"):
        OpenApiToolset.from_str('{"swagger": "2.0", "paths": {}}')
    with pytest.raises(ValueError, match="not valid JSON or YAML"):
        OpenApiToolset.from_str("openapi: [3.0")
    remote = SPEC_30.read_text().replace(
        "'#/components/parameters/limit'", "'https://example.com/common.yaml#/limit'"
    )
    with pytest.raises(ValueError, match=r"GET /pets: \$ref .*common\.yaml#/limit.* bundle"):
        OpenApiToolset.from_str(remote, base_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="base_url must start with http"):
        OpenApiToolset.from_file(SPEC_30, base_url="ftp://x")
    with pytest.raises(ValueError, match="timeout"):
        OpenApiToolset.from_file(SPEC_30, base_url="http://x", timeout=0)
    with pytest.raises(TypeError, match="headers"):
        OpenApiToolset.from_file(SPEC_30, base_url="http://x", headers={"A": 1})  # type: ignore[dict-item]


def test_parameters_reach_the_server(pets: OpenApiToolset, store: PetStore) -> None:
    node = ToolNode(pets.tools, strategy="sequential")
    out = run(
        node,
        ("listPets", {"limit": 2, "tag": "dog"}),
        ("createPet", {"body": {"name": "Nemo", "tag": None}}),
        ("deletePet", {"petId": 2, "X-Request-Id": "req-42"}),
    )
    assert [m.status for m in out] == ["success"] * 3
    assert out[0].text == (
        'HTTP 200 OK\n[{"id": 1, "name": "Rex", "tag": "dog"}, {"id": 3, "name": "Fido", "tag": "dog"}]'
    )
    assert out[1].text == 'HTTP 201 Created\n{"id": 4, "name": "Nemo", "tag": null}'
    assert out[1].artifact == {
        "status": 201,
        "content_type": "application/json",
        "body": {"id": 4, "name": "Nemo", "tag": None},
    }
    assert out[2].text == 'HTTP 200 OK\n{"deleted": 2, "request_id": "req-42"}'
    listing, created, deleted = store.requests
    assert (listing["method"], listing["path"]) == ("GET", "/api/v1/pets")
    assert listing["query"] == {"limit": ["2"], "tag": ["dog"]}
    assert (created["method"], created["path"]) == ("POST", "/api/v1/pets")
    assert created["headers"]["content-type"] == "application/json"
    assert created["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert created["body"] == {"name": "Nemo", "tag": None}
    assert (deleted["method"], deleted["path"]) == ("DELETE", "/api/v1/pets/2")
    assert deleted["headers"]["x-request-id"] == "req-42"
    assert 2 not in store.pets


def test_parallel_calls_and_a_404_as_an_error_message(
    pets: OpenApiToolset, store: PetStore
) -> None:
    store.delay = 0.5
    node = ToolNode(pets.tools)  # strategy="parallel"
    t0 = time.monotonic()
    out = run(
        node,
        ("getInventory", {}),
        ("getInventory", {}),
        ("showPetById", {"petId": 99}),
        ("getInventory", {}),
        ("showPetById", {"petId": 3}),
    )
    elapsed = time.monotonic() - t0
    assert elapsed < 1.3, f"three 0.5 s calls took {elapsed:.2f}s: not concurrent"
    assert [m.status for m in out] == ["success", "success", "error", "success", "success"]
    assert out[0].text == 'HTTP 200 OK\n{"available": 3}'
    err = out[2]
    assert err.name == "showPetById"
    assert "HTTP 404 Not Found" in err.text
    assert "pet 99 not found" in err.text
    assert "showPetById" in err.text
    assert out[4].text.startswith("HTTP 200 OK\n")


def test_a_timeout_is_an_error_message(store: PetStore) -> None:
    pets = OpenApiToolset.from_file(SPEC_30, base_url=f"{store.url}/api/v1", timeout=0.3)
    store.delay = 3.0
    t0 = time.monotonic()
    [m, ok] = run(ToolNode(pets.tools), ("getInventory", {}), ("showPetById", {"petId": 1}))
    assert time.monotonic() - t0 < 2.0
    assert m.status == "error" and "timed out" in m.text, m.text
    assert ok.status == "success"


def test_bad_arguments_never_reach_the_server(pets: OpenApiToolset, store: PetStore) -> None:
    out = run(
        ToolNode(pets.tools),
        ("showPetById", {"petId": "one"}),
        ("deletePet", {"petId": 1}),
        ("listPets", {"limit": 500}),
        ("listPets", {"limt": 5}),
    )
    assert [m.status for m in out] == ["error"] * 4
    assert all("Error invoking tool" in m.text for m in out), [m.text for m in out]
    assert store.requests == []


def test_credentials_never_reach_the_model(store: PetStore) -> None:
    wrong = "sk-wrong-9876543210fedcba"
    pets = OpenApiToolset.from_file(
        SPEC_30,
        base_url=f"{store.url}/api/v1",
        headers={"Authorization": f"Bearer {wrong}", "X-Api-Key": "key-abcdef-123456"},
    )
    [m] = run(ToolNode(pets.tools), ("createPet", {"body": {"name": "Nemo"}}))
    assert m.status == "error"
    assert "HTTP 401 Unauthorized" in m.text
    assert wrong not in m.text and "[redacted]" in m.text, m.text
    assert store.requests[-1]["headers"]["x-api-key"] == "key-abcdef-123456"


@pytest.mark.parametrize("max_bytes", range(40, 80, 3))
def test_a_credential_cut_by_max_output_bytes_is_scrubbed(store: PetStore, max_bytes: int) -> None:
    # The server echoes the Authorization header; unscrubbed, the body would be cut to
    # max_bytes inside the echoed key for most of these sizes: no piece of it may
    # reach the model (it is scrubbed before the cut).
    wrong = "sk-wrong-9876543210fedcba"
    pets = OpenApiToolset.from_file(
        SPEC_30,
        base_url=f"{store.url}/api/v1",
        headers={"Authorization": f"Bearer {wrong}"},
        max_output_bytes=max_bytes,
    )
    [m] = run(ToolNode(pets.tools), ("createPet", {"body": {"name": "Nemo"}}))
    assert m.status == "error" and "HTTP 401" in m.text, m.text
    for n in range(6, len(wrong) + 1):
        assert wrong[:n] not in m.text, (n, m.text)


def test_called_directly(pets: OpenApiToolset) -> None:
    show = pets["showPetById"]
    assert show(petId=1) == {
        "status": 200,
        "content_type": "application/json",
        "body": {"id": 1, "name": "Rex", "tag": "dog"},
    }
    with pytest.raises(ToolExecutionError, match="HTTP 404 Not Found"):
        show.invoke({"petId": 42})
    with pytest.raises(ToolInvalidArgsError):
        show.invoke({})


def test_inside_create_react_agent(pets: OpenApiToolset, store: PetStore) -> None:
    model = ScriptedChatModel(
        [
            {
                "content": "",
                "tool_calls": [
                    {"name": "createPet", "args": {"body": {"name": "Nemo", "tag": "fish"}}},
                    {"name": "showPetById", "args": {"petId": 12}},
                ],
            },
            {"content": "", "tool_calls": [{"name": "showPetById", "args": {"petId": 4}}]},
            "Nemo the fish is pet 4; there is no pet 12.",
        ]
    )
    agent = create_react_agent(model, pets.tools)
    out = agent.invoke({"messages": [("user", "Add Nemo, a fish, and check pet 12.")]})
    msgs = out["messages"]
    assert msgs[-1].text == "Nemo the fish is pet 4; there is no pet 12."
    tool_msgs = [m for m in msgs if isinstance(m, ToolMessage)]
    assert [(m.name, m.status) for m in tool_msgs] == [
        ("createPet", "success"),
        ("showPetById", "error"),
        ("showPetById", "success"),
    ]
    assert "HTTP 404 Not Found" in tool_msgs[1].text
    assert tool_msgs[2].text == 'HTTP 200 OK\n{"id": 4, "name": "Nemo", "tag": "fish"}'
    _, tools = model.calls[0]
    assert tools is not None
    assert [t["function"]["name"] for t in tools] == NAMES


async def test_inside_create_react_agent_async(pets: OpenApiToolset) -> None:
    model = ScriptedChatModel(
        [
            {"content": "", "tool_calls": [{"name": "listPets", "args": {"limit": 1}}]},
            "Rex.",
        ]
    )
    agent = create_react_agent(model, pets.tools)
    out = await agent.ainvoke({"messages": [("user", "First pet?")]})
    assert out["messages"][-2].text == 'HTTP 200 OK\n[{"id": 1, "name": "Rex", "tag": "dog"}]'
    assert out["messages"][-1].text == "Rex."


def test_example_runs() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRONLOOP_MODEL")}
    proc = subprocess.run(
        [sys.executable, str(REPO / "examples" / "openapi_agent.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "tools: listPets, createPet, showPetById, deletePet" in out
    assert "[success] createPet: HTTP 201 Created" in out
    assert "[error] showPetById:" in out and "HTTP 404 Not Found" in out
    assert "Bearer" not in out


def test_the_guides_snippet_runs() -> None:
    readme = (REPO / "docs" / "tools.md").read_text()
    code = readme.split("## OpenAPI tools", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    expected = [line[2:] for line in code.splitlines() if line.startswith("# [")]
    got = proc.stdout.splitlines()
    assert got == expected, got


class Redirector(ThreadingHTTPServer):
    """Serves a spec whose one operation answers with a redirect to `target`, and
    records what reaches it (`hits`)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.target = ""
        self.hits: list[str] = []
        owner = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/spec.json":
                    spec = {
                        "openapi": "3.1.0",
                        "info": {"title": "r", "version": "1"},
                        "servers": [{"url": "/api"}],
                        "paths": {"/go": {"get": {"operationId": "go", "responses": {}}}},
                    }
                    return self._send(200, json.dumps(spec))
                if self.path == "/moved-spec.json":
                    return self._redirect(f"{owner.target}/spec.json")
                if self.path == "/api/go":
                    return self._redirect(f"{owner.target}/landed")
                owner.hits.append(
                    f"{self.headers.get('Host')} {self.path} {self.headers.get('X-Api-Key')}"
                )
                self._send(200, json.dumps({"landed": True}))

            def _redirect(self, to: str) -> None:
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _send(self, status: int, body: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(("127.0.0.1", 0), H)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def test_redirects_only_to_the_specs_hosts_unless_allowed() -> None:
    # `localhost` and `127.0.0.1` are the same machine but different hosts: the API at
    # 127.0.0.1 redirects a call (with its credential header) to localhost.
    srv = Redirector()
    port = srv.server_port
    try:
        srv.target = f"http://localhost:{port}"
        headers = {"X-Api-Key": "key-abcdef-123456"}
        ts = OpenApiToolset.from_url(f"http://127.0.0.1:{port}/spec.json", headers=headers)
        [m] = run(ToolNode(ts.tools), ("go", {}))
        assert m.status == "error", m.text
        assert "redirected to host `localhost`" in m.text, m.text
        assert 'allowed_hosts=["localhost"]' in m.text, m.text
        assert srv.hits == []
        # Allowed, it is followed (and the same host always is).
        ts = OpenApiToolset.from_url(
            f"http://127.0.0.1:{port}/spec.json", headers=headers, allowed_hosts=["LocalHost"]
        )
        [m] = run(ToolNode(ts.tools), ("go", {}))
        assert m.status == "success" and "landed" in m.text, m.text
        assert srv.hits == [f"localhost:{port} /landed key-abcdef-123456"]
        srv.target = f"http://127.0.0.1:{port}"
        ts = OpenApiToolset.from_url(f"http://127.0.0.1:{port}/spec.json")
        assert run(ToolNode(ts.tools), ("go", {}))[0].status == "success"
        # The fetch of the spec itself is held to the same rule.
        srv.target = f"http://localhost:{port}"
        with pytest.raises(OpenApiFetchError, match="redirected to host `localhost`"):
            OpenApiToolset.from_url(f"http://127.0.0.1:{port}/moved-spec.json", headers=headers)
        with pytest.raises(TypeError, match="allowed_hosts"):
            OpenApiToolset.from_url(f"http://127.0.0.1:{port}/spec.json", allowed_hosts="localhost")  # type: ignore[arg-type]
    finally:
        srv.shutdown()
        srv.server_close()
