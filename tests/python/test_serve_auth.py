"""``ironloop serve`` security: LangGraph's custom auth (a ``langgraph_sdk.Auth`` object
named by langgraph.json's ``"auth"``) scoping threads, runs and store items to their
owner; and the plain API-key mode. Driven by langgraph-sdk with each user's token."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import AuthenticationError, NotFoundError, PermissionDeniedError
from serve_support import PROJECT, Server, serve

AUTH = """
from langgraph_sdk import Auth

auth = Auth()
TOKENS = {"token-a": "alice", "token-b": "bob", "token-r": "reader"}


@auth.authenticate
async def authenticate(authorization: str | None) -> dict:
    token = (authorization or "").removeprefix("Bearer ")
    if token not in TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="unknown token")
    user = TOKENS[token]
    return {"identity": user, "permissions": ["read"] if user == "reader" else ["read", "write"]}


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: dict):
    if ctx.action in ("create", "create_run", "update", "delete") and "write" not in ctx.permissions:
        return False
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    if isinstance(metadata, dict):
        metadata.update(filters)
    return filters


@auth.on.assistants
async def assistants_for_all(ctx: Auth.types.AuthContext, value: dict):
    return None


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: dict):
    value["namespace"] = (ctx.user.identity, *value["namespace"])
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve-auth")
    project = tmp / "src"
    shutil.copytree(PROJECT, project)
    (project / "auth.py").write_text(AUTH)
    config = json.loads((project / "langgraph.json").read_text())
    config["auth"] = {"path": "./auth.py:auth"}
    (project / "langgraph.json").write_text(json.dumps(config))
    with serve(tmp, project=project) as s:
        yield s


def as_user(server: Server, token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_user_b_cannot_reach_user_as_thread(server: Server) -> None:
    alice = get_client(url=server.url, headers=as_user(server, "token-a"))
    bob = get_client(url=server.url, headers=as_user(server, "token-b"))
    thread = await alice.threads.create()
    tid = thread["thread_id"]
    assert thread["metadata"]["owner"] == "alice"
    out = await alice.runs.wait(tid, "steps", input={"items": ["secret"], "ask": True})
    assert out["__interrupt__"]
    run = (await alice.runs.list(tid))[0]

    with pytest.raises(NotFoundError):
        await bob.threads.get(tid)
    with pytest.raises(NotFoundError):
        await bob.threads.get_state(tid)
    with pytest.raises(NotFoundError):
        await bob.threads.get_history(tid)
    with pytest.raises(NotFoundError):  # resume it
        await bob.runs.create(tid, "steps", command={"resume": "stolen"})
    with pytest.raises(NotFoundError):  # stream on it
        async for _ in bob.runs.stream(tid, "steps", input={"items": ["x"]}):
            pass
    with pytest.raises(NotFoundError):
        await bob.runs.join_stream(tid, run["run_id"]).__anext__()
    with pytest.raises(NotFoundError):
        await bob.runs.get(tid, run["run_id"])
    with pytest.raises(NotFoundError):
        await bob.threads.update_state(tid, {"items": ["bob"]})
    with pytest.raises(NotFoundError):
        await bob.threads.delete(tid)
    assert tid not in [t["thread_id"] for t in await bob.threads.search(limit=100)]
    assert await bob.threads.count() == 0

    # Alice still has it all, untouched, and resumes it.
    state = await alice.threads.get_state(tid)
    assert state["values"]["items"] == ["secret", "first"]
    out = await alice.runs.wait(tid, "steps", command={"resume": "ok"})
    assert out["items"] == ["secret", "first", "second:ok"]
    assert [t["thread_id"] for t in await alice.threads.search(limit=100)] == [tid]


def test_permissions_and_authentication(server: Server) -> None:
    reader = get_sync_client(url=server.url, headers=as_user(server, "token-r"))
    with pytest.raises(PermissionDeniedError):
        reader.threads.create()
    assert reader.assistants.search(graph_id="steps")[0]["graph_id"] == "steps"
    nobody = get_sync_client(url=server.url, headers={"Authorization": "Bearer nope"})
    with pytest.raises(AuthenticationError, match="unknown token"):
        nobody.threads.search()
    r = httpx.post(server.url + "/threads", json={})
    assert r.status_code == 401 and r.json() == {"detail": "unknown token"}
    assert httpx.get(server.url + "/ok").status_code == 200  # health checks stay open


async def test_store_items_are_per_user(server: Server) -> None:
    alice = get_client(url=server.url, headers=as_user(server, "token-a"))
    bob = get_client(url=server.url, headers=as_user(server, "token-b"))
    await alice.store.put_item(["notes"], "n1", {"text": "alice's"})
    await bob.store.put_item(["notes"], "n1", {"text": "bob's"})
    assert (await alice.store.get_item(["notes"], "n1"))["value"] == {"text": "alice's"}
    assert (await bob.store.get_item(["notes"], "n1"))["value"] == {"text": "bob's"}
    found = await bob.store.search_items(["notes"])
    assert [i["value"]["text"] for i in found["items"]] == ["bob's"]


def test_api_key_mode(tmp_path: Path) -> None:
    with serve(tmp_path, "--api-key", "s3cret") as s:
        with pytest.raises(AuthenticationError, match="API key"):
            get_sync_client(url=s.url, api_key="wrong").threads.create()
        r = httpx.post(s.url + "/threads", json={})
        assert r.status_code == 401
        client = get_sync_client(url=s.url, api_key="s3cret")
        thread = client.threads.create()
        assert client.runs.wait(thread["thread_id"], "steps", input={})["items"] == [
            "first", "second",
        ]  # fmt: skip
