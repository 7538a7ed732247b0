"""``ironloop serve``'s HTTP protocol (``ironloop.serve.http``): uvicorn's, with a
response's head and body sent in one write; streamed parts still go out as they come,
and nothing gathered is lost when the connection closes."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from ironloop.serve.http import ServeProtocol


class Recorder(asyncio.Transport):
    """A transport that keeps what is written, one entry a write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: Any) -> None:
        assert not self.closed, "written after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 2024)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def json_app(scope: Any, receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await receive()
    body = b'{"ok":true}'
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


async def streaming_app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    await asyncio.sleep(0.01)  # the next event comes later
    await send({"type": "http.response.body", "body": b"data: 2\n\n", "more_body": False})


async def exchange(app: Any, request: bytes, turns: int = 50) -> Recorder:
    """Feeds ``request`` to a ``ServeProtocol`` serving ``app`` and lets the loop run."""
    loop = asyncio.get_running_loop()
    config = Config(app, http=ServeProtocol, log_level="warning", access_log=False)
    protocol = ServeProtocol(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport = Recorder()
    protocol.connection_made(transport)
    protocol.data_received(request)
    for _ in range(turns):
        await asyncio.sleep(0.001)
    return transport


GET = b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"


async def test_a_response_is_one_write() -> None:
    transport = await exchange(json_app, GET)
    assert len(transport.writes) == 1
    head, _, body = transport.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and body == b'{"ok":true}'
    assert not transport.closed  # kept alive for the next request


async def test_two_requests_on_one_connection_each_one_write() -> None:
    transport = await exchange(json_app, GET + GET)
    assert len(transport.writes) == 2
    assert all(w.endswith(b'{"ok":true}') for w in transport.writes)


async def test_streamed_parts_go_out_as_they_come() -> None:
    transport = await exchange(streaming_app, GET)
    # The head with the first event (one turn), then the second event with the end.
    assert len(transport.writes) == 2
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK")
    assert transport.writes[0].endswith(b"data: 1\n\n\r\n")
    assert transport.writes[1] == b"9\r\ndata: 2\n\n\r\n0\r\n\r\n"


async def test_a_closing_response_is_sent_before_the_close() -> None:
    close = b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    transport = await exchange(json_app, close)
    assert transport.closed
    assert len(transport.writes) == 1 and transport.writes[0].endswith(b'{"ok":true}')
    assert b"connection: close" in transport.writes[0].lower()


# -- the routes every run takes, answered without Starlette's layers (``ServeApp``)


def hot_app(tmp_path: Path, **options: Any) -> Any:
    """The app serving the test project's plain graph (``steps.py``), in this process."""
    from ironloop.serve import Project, ServeOptions, create_app

    shutil.copy(Path(__file__).parent / "fixtures" / "serve_project" / "steps.py", tmp_path)
    (tmp_path / "langgraph.json").write_text('{"graphs": {"steps": "./steps.py:graph"}}')
    project = Project.load(str(tmp_path / "langgraph.json"))
    return create_app(project, ServeOptions(data_dir=tmp_path / "data", **options))


def starlette_endpoint(app: Any, method: str, path: str) -> Any:
    """The handler Starlette's own routing gives ``method`` on ``path``."""
    from starlette.routing import Match

    scope = {"type": "http", "method": method, "path": path, "root_path": ""}
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return getattr(route, "endpoint", None)
    return None


def test_a_hot_path_goes_where_starlette_routes_it(tmp_path: Path) -> None:
    from ironloop.serve.app import HOT_ROUTES

    app = hot_app(tmp_path)
    tid, rid = "5f0e0b8e-1c1a-4c39-8a4e-2b1f0f6d1a01", "stream"
    for method, paths in HOT_ROUTES.items():
        for template in paths:
            path = template.replace("{tid}", tid).replace("{rid}", rid)
            found = app.hot.find(method, path)
            assert found is not None, (method, path)
            assert found[0] is starlette_endpoint(app, method, path), (method, path)
            assert found[1] == {k: v for k, v in (("tid", tid), ("rid", rid)) if k in template}
    # Anything else is left to Starlette: other methods, empty parameters, a trailing
    # slash (redirected by Starlette), other paths.
    for method, path in [("GET", "/threads"), ("HEAD", f"/threads/{tid}/runs/{rid}/join"),
                         ("POST", "/threads//runs"), ("POST", "/threads/"),
                         ("POST", f"/threads/{tid}/runs/"), ("GET", f"/threads/{tid}/runs/x"),
                         ("POST", f"/threads/{tid}/runs/batch")]:  # fmt: skip
        assert app.hot.find(method, path) is None, (method, path)


async def test_a_hot_route_answers_errors_as_the_app_does(tmp_path: Path) -> None:
    import httpx

    app = hot_app(tmp_path)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    client = httpx.AsyncClient(transport=transport, base_url="http://x")
    async with app.router.lifespan_context(app), client:
        r = await client.post("/threads", content=b"{not json")
        assert r.status_code == 422 and "Invalid JSON" in r.json()["detail"]
        tid = (await client.post("/threads", json={})).json()["thread_id"]
        r = await client.get(f"/threads/{tid}/runs/5f0e0b8e-1c1a-4c39-8a4e-2b1f0f6d1a01/join")
        assert r.status_code == 404 and r.json()["detail"] == (
            "Run with ID 5f0e0b8e-1c1a-4c39-8a4e-2b1f0f6d1a01 not found"
        )

        def broken(*_args: Any) -> None:
            raise RuntimeError("disk on fire")

        app.state.records.create_thread = broken
        r = await client.post("/threads", json={})
        assert r.status_code == 500 and r.headers["content-type"] == "application/json"
        assert "RuntimeError" in r.json()["detail"] and "disk on fire" not in r.text


async def test_with_middleware_every_request_passes_it(tmp_path: Path) -> None:
    import httpx

    app = hot_app(tmp_path, api_key="sesame")
    assert app.hot is None
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://x") as client:
        assert (await client.post("/threads", json={})).status_code == 401
        ok = await client.post("/threads", json={}, headers={"x-api-key": "sesame"})
        assert ok.status_code == 200
