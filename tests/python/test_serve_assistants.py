"""``ironloop serve``: assistants created, updated (versioned), pointed at a version,
searched and deleted over the API, and runs taking their config and context; stateless
runs in a batch; webhooks called with a run's result when it ends; threads.copy.
Driven by langgraph-sdk, as LangGraph's Agent Server answers it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from serve_support import Server, serve


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory.mktemp("serve-assistants")) as s:
        yield s


ECHO = {"items": [], "echo": True}


def test_create_run_update_version_and_set_latest(server: Server) -> None:
    client = get_sync_client(url=server.url)
    made = client.assistants.create(
        "steps", config={"configurable": {"tone": "warm"}}, context={"lang": "fr"},
        metadata={"team": "a"}, name="French steps",
    )  # fmt: skip
    aid = made["assistant_id"]
    assert made["graph_id"] == "steps" and made["version"] == 1
    assert made["config"] == {"configurable": {"tone": "warm"}} and made["context"] == {
        "lang": "fr"
    }
    assert client.assistants.get(aid)["name"] == "French steps"
    # A run of the assistant takes its config and context; the run's own win per key.
    out = client.runs.wait(None, aid, input=ECHO)
    assert out["items"] == ["first:warm:fr:None", "second"]
    out = client.runs.wait(None, aid, input=ECHO, config={"configurable": {"tone": "dry"}},
                           context={"style": "short"})  # fmt: skip
    assert out["items"] == ["first:dry:fr:short", "second"]
    # The graph's own assistant has neither.
    assert client.runs.wait(None, "steps", input=ECHO)["items"] == [
        "first:None:None:None",
        "second",
    ]
    # A thread run by the assistant names it.
    thread = client.threads.create()
    run = client.runs.create(thread["thread_id"], aid, input=ECHO)
    assert run["assistant_id"] == aid
    client.runs.join(thread["thread_id"], run["run_id"])
    assert client.threads.get(thread["thread_id"])["metadata"]["assistant_id"] == aid

    # An update is a new version, made the latest; metadata is merged.
    updated = client.assistants.update(aid, context={"lang": "de"}, metadata={"stage": "beta"})
    assert updated["version"] == 2 and updated["context"] == {"lang": "de"}
    assert updated["config"] == {"configurable": {"tone": "warm"}}
    assert updated["metadata"] == {"team": "a", "stage": "beta"}
    assert client.runs.wait(None, aid, input=ECHO)["items"][0] == "first:warm:de:None"
    versions = client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [2, 1]
    assert [v["context"] for v in versions] == [{"lang": "de"}, {"lang": "fr"}]
    assert [v["version"] for v in client.assistants.get_versions(aid, metadata={"stage": "beta"})
            ] == [2]  # fmt: skip
    # Back to version 1: runs use it again.
    back = client.assistants.set_latest(aid, 1)
    assert back["version"] == 1 and back["context"] == {"lang": "fr"}
    assert client.runs.wait(None, aid, input=ECHO)["items"][0] == "first:warm:fr:None"
    with pytest.raises(NotFoundError, match="no version 7"):
        client.assistants.set_latest(aid, 7)


def test_search_count_and_if_exists(server: Server) -> None:
    client = get_sync_client(url=server.url)
    aid = "0b0c0d0e-0000-4000-8000-000000000001"
    first = client.assistants.create("steps", assistant_id=aid, name="Searchable One",
                                     metadata={"kind": "searched"})  # fmt: skip
    again = client.assistants.create("agent", assistant_id=aid, if_exists="do_nothing")
    assert again["graph_id"] == "steps" and again["created_at"] == first["created_at"]
    with pytest.raises(ConflictError, match="already exists"):
        client.assistants.create("steps", assistant_id=aid)
    client.assistants.create("nested", name="Searchable Two", metadata={"kind": "searched"})
    found = client.assistants.search(metadata={"kind": "searched"})
    assert sorted(a["name"] for a in found) == ["Searchable One", "Searchable Two"]
    assert [a["name"] for a in client.assistants.search(name="one")] == ["Searchable One"]
    by_graph = client.assistants.search(graph_id="nested", metadata={"kind": "searched"})
    assert [a["name"] for a in by_graph] == ["Searchable Two"]
    assert client.assistants.count(metadata={"kind": "searched"}) == 2
    # The graphs' own assistants are still found, as under langgraph dev.
    system = client.assistants.search(metadata={"created_by": "system"})
    assert sorted(a["graph_id"] for a in system) == ["agent", "nested", "steps", "summary"]
    page = client.assistants.search(metadata={"kind": "searched"}, limit=1,
                                    response_format="object")  # fmt: skip
    assert len(page["assistants"]) == 1 and page["next"] == "1"


def test_delete_with_its_threads(server: Server) -> None:
    client = get_sync_client(url=server.url)
    aid = client.assistants.create("steps", name="short-lived")["assistant_id"]
    kept = client.threads.create()
    used = client.threads.create()
    client.runs.wait(used["thread_id"], aid, input={"items": ["x"]})
    client.runs.wait(kept["thread_id"], "steps", input={"items": ["y"]})
    client.assistants.delete(aid, delete_threads=True)
    with pytest.raises(NotFoundError):
        client.assistants.get(aid)
    with pytest.raises(NotFoundError):
        client.threads.get(used["thread_id"])
    assert client.threads.get(kept["thread_id"])["status"] == "idle"
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.runs.wait(None, aid, input={"items": []})
    assert refused.value.response.status_code == 404


def test_assistant_mistakes_are_named(server: Server) -> None:
    client = get_sync_client(url=server.url)
    with pytest.raises(NotFoundError, match="Graph 'nope' not found"):
        client.assistants.create("nope")
    with pytest.raises(UnprocessableEntityError, match="must be a UUID"):
        client.assistants.create("steps", assistant_id="not-a-uuid")
    r = httpx.post(server.url + "/assistants", json={"config": {}})
    assert r.status_code == 422 and "'graph_id' is required" in r.json()["detail"]
    r = httpx.post(server.url + "/assistants", json={"graph_id": "steps", "context": [1]})
    assert r.status_code == 422 and "'context' must be an object" in r.json()["detail"]
    aid = client.assistants.create("steps")["assistant_id"]
    r = httpx.patch(server.url + f"/assistants/{aid}", json={"graph_id": "missing"})
    assert r.status_code == 404 and "missing" in r.json()["detail"]
    r = httpx.post(server.url + f"/assistants/{aid}/latest", json={})
    assert r.status_code == 422 and "'version' is required" in r.json()["detail"]


async def test_batch_of_stateless_runs(server: Server) -> None:
    client = get_client(url=server.url)
    aid = (await client.assistants.create("steps", context={"lang": "it"}))["assistant_id"]
    runs = await client.runs.create_batch([
        {"assistant_id": "steps", "input": {"items": ["a"]}},
        {"assistant_id": aid, "input": ECHO, "metadata": {"n": 2}},
    ])  # fmt: skip
    system = await client.assistants.search(graph_id="steps", metadata={"created_by": "system"})
    assert [r["assistant_id"] for r in runs] == [system[0]["assistant_id"], aid]
    assert runs[1]["metadata"] == {"n": 2}
    assert len({r["thread_id"] for r in runs}) == 2
    # Stateless: each runs on a thread of its own, dropped when it ends.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        remaining = [r for r in runs if (await client.threads.search(ids=[r["thread_id"]]))]
        if not remaining:
            break
        await _sleep(0.05)
    assert not remaining
    # One bad run refuses the whole batch, named by its index; nothing starts.
    before = await client.threads.count()
    r = httpx.post(server.url + "/runs/batch", json=[
        {"assistant_id": "steps", "input": {}}, {"assistant_id": "steps", "stream_mode": "nope"},
    ])  # fmt: skip
    assert r.status_code == 422 and r.json()["detail"].startswith("run 1 of the batch: stream_mode")
    assert await client.threads.count() == before
    r = httpx.post(server.url + "/runs/batch", json={"assistant_id": "steps"})
    assert r.status_code == 422 and "JSON array" in r.json()["detail"]


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


class Receiver:
    """A loopback HTTP server keeping what is POSTed to it."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.end_headers()
                with receiver.arrived:
                    receiver.posts.append((self.path, body))
                    receiver.arrived.notify_all()

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def wait_for(self, n: int, timeout: float = 15) -> list[tuple[str, dict[str, Any]]]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.posts) >= n, timeout)
            return list(self.posts)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.http.shutdown()


def test_webhook_gets_the_runs_result(server: Server, receiver: Receiver) -> None:
    client = get_sync_client(url=server.url)
    thread = client.threads.create()
    tid = thread["thread_id"]
    run = client.runs.create(tid, "steps", input={"items": ["hook"]},
                             webhook=receiver.url + "/done?x=1")  # fmt: skip
    client.runs.join(tid, run["run_id"])
    path, body = receiver.wait_for(1)[0]
    assert path == "/done?x=1"
    assert body["run_id"] == run["run_id"] and body["thread_id"] == tid
    assert body["status"] == "success"
    assert body["values"] == {"items": ["hook", "first", "second"]}
    assert body["kwargs"]["webhook"] == receiver.url + "/done?x=1"
    assert body["run_started_at"] <= body["run_ended_at"] <= body["webhook_sent_at"]
    # A failed run's webhook says so; a stateless wait run calls it too.
    failed = client.runs.create(tid, "steps", input={"fail": True}, webhook=receiver.url + "/f")
    client.runs.join(tid, failed["run_id"])
    client.runs.wait(None, "steps", input={"items": ["w"]}, webhook=receiver.url + "/w")
    posts = dict(receiver.wait_for(3))
    assert posts["/f"]["status"] == "error"
    assert "second was asked to fail" in posts["/f"]["error"]
    assert posts["/w"]["values"]["items"] == ["w", "first", "second"]


def test_webhook_must_be_an_http_url(server: Server) -> None:
    for bad in ("ftp://example.com/x", "/relative", "not a url"):
        r = httpx.post(server.url + "/runs", json={"assistant_id": "steps", "webhook": bad})
        assert r.status_code == 422, bad
        assert "'webhook' must be an absolute http or https URL" in r.json()["detail"]


def test_copy_carries_the_latest_state(server: Server) -> None:
    client = get_sync_client(url=server.url)
    tid = client.threads.create(metadata={"who": "copied"})["thread_id"]
    client.runs.wait(tid, "steps", input={"items": ["c"]})
    copy = client.threads.copy(tid)
    assert copy["thread_id"] != tid and copy["metadata"]["who"] == "copied"
    assert client.threads.get_state(copy["thread_id"])["values"]["items"] == [
        "c",
        "first",
        "second",
    ]
    # The copy runs on from there, the source unchanged.
    out = client.runs.wait(copy["thread_id"], "steps", input={"items": ["more"]})
    assert out["items"] == ["c", "first", "second", "more", "first", "second"]
    assert client.threads.get_state(tid)["values"]["items"] == ["c", "first", "second"]
