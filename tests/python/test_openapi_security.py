"""ironloop.openapi ``credentials=`` and multipart bodies, against a real HTTP server
on loopback: API keys land in the header, query or cookie the spec's
``securitySchemes`` name; HTTP bearer and basic; OAuth2 client credentials fetched
from the token endpoint once for many parallel calls, refreshed when they expire and
after a 401; the first satisfiable ``security`` alternative wins; bad credentials
are refused at construction without echoing them; a server that echoes a credential
or token shows ``[redacted]``; ``multipart/form-data`` bodies arrive as parts and
``application/x-www-form-urlencoded`` bodies as fields."""

from __future__ import annotations

import base64
import email.parser
import email.policy
import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from ironloop import ToolNode
from ironloop.errors import ToolExecutionError, ToolInvalidArgsError
from ironloop.messages import AIMessage, ToolMessage
from ironloop.openapi import OpenApiToolset

KEY = "key-PLANTED-0123456789"
TOKEN = "bearer-PLANTED-abcdef987"
PASSWORD = "pw-PLANTED-s3cr3t!"
CLIENT_SECRET = "client-PLANTED-secret-42"


def op(security: Any = None, method: str = "get", **extra: Any) -> dict[str, Any]:
    o: dict[str, Any] = {"responses": {"200": {"description": "ok"}}, **extra}
    if security is not None:
        o["security"] = security
    return {method: o}


SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Secured", "version": "1"},
    "security": [{"hkey": []}],
    "components": {
        "securitySchemes": {
            "hkey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "qkey": {"type": "apiKey", "in": "query", "name": "api_key"},
            "ckey": {"type": "apiKey", "in": "cookie", "name": "session_id"},
            "bearer": {"type": "http", "scheme": "bearer"},
            "basic": {"type": "http", "scheme": "basic"},
            "oauth": {
                "type": "oauth2",
                "flows": {
                    "clientCredentials": {
                        "tokenUrl": "/oauth/token",
                        "scopes": {"read": "", "write": ""},
                    }
                },
            },
        }
    },
    "paths": {
        "/default": op(),
        "/query": op([{"qkey": []}]),
        "/cookie": op([{"ckey": []}]),
        "/bearer": op([{"bearer": []}]),
        "/basic": op([{"basic": []}]),
        "/either": op([{"hkey": [], "bearer": []}, {"basic": []}]),
        "/public": op([]),
        "/oauth": op([{"oauth": ["read"]}]),
        "/echo": op([{"bearer": []}]),
        "/form": {
            "post": {
                "operationId": "form",
                "security": [],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "q": {"type": "string"},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                    "n": {"type": "integer"},
                                    "ok": {"type": "boolean"},
                                },
                                "required": ["q"],
                            }
                        }
                    },
                },
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/upload": {
            "post": {
                "operationId": "upload",
                "security": [],
                "requestBody": {
                    "required": True,
                    "content": {
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "title": {"type": "string"},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                    "meta": {"type": "object"},
                                    "count": {"type": "integer"},
                                    "file": {"type": "string", "format": "binary"},
                                },
                                "required": ["title", "file"],
                            },
                            "encoding": {"count": {"contentType": "text/plain"}},
                        }
                    },
                },
                "responses": {"200": {"description": "ok"}},
            }
        },
    },
}


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.token_requests: list[dict[str, Any]] = []
        self.expires_in: float | None = 3600
        self.fail_token = False
        self.revoked: set[str] = set()
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.handle_any()

    def do_POST(self) -> None:
        self.handle_any()

    def handle_any(self) -> None:
        url = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        srv = self.server
        if url.path == "/oauth/token":
            form = parse_qs(raw.decode())
            with srv.lock:
                k = len(srv.token_requests)
                srv.token_requests.append(
                    {"auth": self.headers.get("Authorization"), "form": form, "at": time.time()}
                )
            if srv.fail_token:
                return self.reply(400, {"error": "invalid_client", "echo": raw.decode()})
            body: dict[str, Any] = {"access_token": f"tok-{k}-PLANTED", "token_type": "Bearer"}
            if srv.expires_in is not None:
                body["expires_in"] = srv.expires_in
            time.sleep(0.05)  # a slow token endpoint: parallel calls must share a fetch
            return self.reply(200, body)
        auth = self.headers.get("Authorization") or ""
        if url.path == "/api/oauth" and auth.removeprefix("Bearer ") in srv.revoked:
            return self.reply(401, {"error": "token revoked"})
        if url.path == "/api/echo":
            return self.reply(200, {"you_sent": auth})
        seen: dict[str, Any] = {
            "path": url.path,
            "query": parse_qs(url.query),
            "auth": auth,
            "key": self.headers.get("X-API-Key"),
            "cookie": self.headers.get("Cookie"),
            "content_type": self.headers.get("Content-Type"),
        }
        if url.path == "/api/form":
            seen["raw"] = raw.decode()
            seen["form"] = parse_qs(raw.decode(), keep_blank_values=True)
        if url.path == "/api/upload":
            msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw
            )
            seen["parts"] = [
                {
                    "name": p.get_param("name", header="content-disposition"),
                    "filename": p.get_filename(),
                    "type": p.get_content_type() if p.get("Content-Type") else None,
                    "data": p.get_payload(decode=True).decode(),
                }
                for p in msg.iter_parts()
            ]
        with srv.lock:
            srv.requests.append(seen)
        return self.reply(200, seen)


@pytest.fixture()
def server() -> Iterator[Server]:
    s = Server()
    t = threading.Thread(target=s.serve_forever, daemon=True)
    t.start()
    yield s
    s.shutdown()
    s.server_close()


class Toolset(OpenApiToolset):
    __slots__ = ("_server",)


def toolset(server: Server, **credentials: Any) -> OpenApiToolset:
    ts = Toolset.from_str(
        json.dumps(SPEC), base_url=f"{server.url}/api", credentials=credentials, timeout=10
    )
    ts._server = server  # type: ignore[attr-defined]
    return ts


def name(path: str) -> str:
    return f"get_{path.strip('/')}"


def body(ts: OpenApiToolset, path: str, **args: Any) -> dict[str, Any]:
    """What the server received (the tool's result echoes it, credentials redacted)."""
    out = ts[name(path)](**args)
    assert out["status"] == 200, out
    for secret in (KEY, TOKEN, PASSWORD, CLIENT_SECRET, "PLANTED"):
        assert secret not in json.dumps(out), out
    seen: dict[str, Any] = ts._server.requests[-1]  # type: ignore[attr-defined]
    return seen


def test_each_scheme_puts_its_credential_where_the_spec_says(server: Server) -> None:
    ts = toolset(
        server,
        hkey=KEY,
        qkey=KEY,
        ckey=KEY,
        bearer=TOKEN,
        basic=("ann", PASSWORD),
    )
    assert body(ts, "/default")["key"] == KEY  # the spec-wide requirement
    assert body(ts, "/query")["query"] == {"api_key": [KEY]}
    assert body(ts, "/cookie")["cookie"] == f"session_id={KEY}"
    assert body(ts, "/bearer")["auth"] == f"Bearer {TOKEN}"
    basic = base64.b64encode(f"ann:{PASSWORD}".encode()).decode()
    assert body(ts, "/basic")["auth"] == f"Basic {basic}"
    public = body(ts, "/public")
    assert (public["key"], public["auth"], public["cookie"]) == (None, "", None)
    # Only the schemes an operation asks for are sent.
    assert body(ts, "/query")["key"] is None and body(ts, "/bearer")["query"] == {}


def test_the_first_alternative_with_every_credential_wins(server: Server) -> None:
    both = toolset(server, hkey=KEY, bearer=TOKEN, basic={"username": "a", "password": PASSWORD})
    seen = body(both, "/either")
    assert (seen["key"], seen["auth"]) == (KEY, f"Bearer {TOKEN}")
    only_basic = toolset(server, basic=("a", PASSWORD))
    seen = body(only_basic, "/either")
    assert seen["key"] is None and seen["auth"].startswith("Basic ")
    # hkey alone does not satisfy the first alternative (it needs bearer too).
    half = toolset(server, hkey=KEY, basic=("a", PASSWORD))
    assert body(half, "/either")["auth"].startswith("Basic ")


def test_an_operation_without_its_credentials_is_called_without_and_logged(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ironloop"):
        ts = toolset(server, qkey=KEY)
    text = caplog.text
    assert "GET /bearer needs credentials for bearer" in text, text
    assert "GET /either needs credentials for hkey + bearer or basic" in text, text
    assert KEY not in text
    assert body(ts, "/bearer")["auth"] == ""


def test_bad_credentials_are_refused_at_construction_without_echoing(server: Server) -> None:
    with pytest.raises(ValueError, match=r'"hkye".*"basic", "bearer", "ckey", "hkey"') as e:
        toolset(server, hkye=KEY)
    assert KEY not in str(e.value)
    with pytest.raises(ValueError, match="needs a username and password") as e:
        toolset(server, basic=PASSWORD)
    assert PASSWORD not in str(e.value)
    with pytest.raises(ValueError, match="needs OAuth2 client credentials"):
        toolset(server, oauth=TOKEN)
    with pytest.raises(TypeError, match=r"unknown fields \['pasword'\]") as te:
        toolset(server, basic={"username": "a", "pasword": PASSWORD})
    assert PASSWORD not in str(te.value)
    with pytest.raises(TypeError, match="must be a str"):
        toolset(server, hkey=12345)


def test_echoed_credentials_are_redacted(server: Server) -> None:
    ts = toolset(server, bearer=TOKEN)
    out = ts[name("/echo")]()
    assert TOKEN not in json.dumps(out) and "[redacted]" in json.dumps(out), out
    node = ToolNode(ts.tools)
    call = {"name": name("/echo"), "args": {}, "id": "c0"}
    [m] = node.invoke({"messages": [AIMessage(content="", tool_calls=[call])]})["messages"]
    assert TOKEN not in m.text and "[redacted]" in m.text, m.text


def oauth(server: Server, **extra: Any) -> OpenApiToolset:
    return toolset(server, oauth={"client_id": "app 1", "client_secret": CLIENT_SECRET, **extra})


def run_parallel(ts: OpenApiToolset, n: int) -> list[ToolMessage]:
    calls = [{"name": name("/oauth"), "args": {}, "id": f"c{i}"} for i in range(n)]
    out: list[ToolMessage] = ToolNode(ts.tools).invoke(
        {"messages": [AIMessage(content="", tool_calls=calls)]}
    )["messages"]
    assert all(m.status == "success" for m in out), [m.text for m in out]
    return out


def test_oauth2_client_credentials_one_fetch_for_parallel_calls(server: Server) -> None:
    ts = oauth(server)
    out = run_parallel(ts, 8)
    assert len(server.token_requests) == 1
    [req] = server.token_requests
    # client_secret_basic: both halves form-encoded, then Basic.
    expected = base64.b64encode(f"app%201:{CLIENT_SECRET}".encode()).decode()
    assert req["auth"] == f"Basic {expected}"
    assert req["form"] == {"grant_type": ["client_credentials"], "scope": ["read"]}
    assert all("[redacted]" in m.text and "PLANTED" not in m.text for m in out)
    assert {r["auth"] for r in server.requests} == {"Bearer tok-0-PLANTED"}
    # Cached: later calls reuse it.
    run_parallel(ts, 3)
    assert len(server.token_requests) == 1


def test_oauth2_token_refreshed_on_expiry_and_after_a_401(server: Server) -> None:
    server.expires_in = 1
    ts = oauth(server, scopes=["read", "write"], auth_method="post")
    assert body(ts, "/oauth")["auth"] == "Bearer tok-0-PLANTED"
    req = server.token_requests[0]
    assert req["auth"] is None
    assert req["form"]["client_id"] == ["app 1"]
    assert req["form"]["scope"] == ["read write"]
    time.sleep(1.05)  # past expires_in less its margin (a tenth)
    assert body(ts, "/oauth")["auth"] == "Bearer tok-1-PLANTED"
    server.expires_in = 3600
    server.revoked.add("tok-1-PLANTED")
    with pytest.raises(ToolExecutionError, match="HTTP 401"):
        ts[name("/oauth")]()
    assert len(server.token_requests) == 2  # the refused call is not retried
    assert body(ts, "/oauth")["auth"] == "Bearer tok-2-PLANTED"


def test_oauth2_token_endpoint_failure_is_an_error_naming_the_scheme(server: Server) -> None:
    server.fail_token = True
    ts = oauth(server, auth_method="post")
    with pytest.raises(ToolExecutionError) as e:
        ts[name("/oauth")]()
    text = str(e.value)
    assert 'could not get an OAuth2 token for security scheme "oauth"' in text, text
    assert "HTTP 400" in text and "invalid_client" in text
    assert CLIENT_SECRET not in text and "[redacted]" in text, text


def test_multipart_bodies_arrive_as_parts(server: Server) -> None:
    ts = toolset(server)
    upload = ts["upload"]
    props = upload.parameters["properties"]["body"]["properties"]
    assert "sent as a file" in props["file"]["description"]
    out = upload(
        body={
            "title": "Report",
            "tags": ["a", "b"],
            "meta": {"pages": 2},
            "count": 3,
            "file": "line one\nline two",
        }
    )
    assert out["status"] == 200
    seen = server.requests[-1]
    assert seen["content_type"].startswith("multipart/form-data; boundary=")
    parts = {(p["name"], p["data"]): p for p in seen["parts"]}
    assert [p["name"] for p in seen["parts"]] == ["title", "tags", "tags", "meta", "count", "file"]
    assert parts[("title", "Report")]["filename"] is None
    assert ("tags", "a") in parts and ("tags", "b") in parts
    meta = parts[("meta", '{"pages":2}')]
    assert meta["type"] == "application/json"
    assert parts[("count", "3")]["type"] == "text/plain"
    f = parts[("file", "line one\nline two")]
    assert (f["filename"], f["type"]) == ("file", "application/octet-stream")
    with pytest.raises(ToolInvalidArgsError, match="file"):
        upload(body={"title": "no file"})


def test_form_encoded_bodies_arrive_as_fields(server: Server) -> None:
    ts = toolset(server)
    out = ts["form"](body={"q": "a b&c=d", "tags": ["x", "y"], "n": 3, "ok": True})
    assert out["status"] == 200
    seen = server.requests[-1]
    assert seen["content_type"] == "application/x-www-form-urlencoded"
    assert seen["form"] == {"q": ["a b&c=d"], "tags": ["x", "y"], "n": ["3"], "ok": ["true"]}
    # Reserved characters are escaped, so the fields come back as they were sent.
    assert "&c=d" not in seen["raw"]
    with pytest.raises(ToolInvalidArgsError, match="q"):
        ts["form"](body={"n": 1})
