"""``ironloop serve``: threads — create, get, search, count, update, copy, delete — and a
thread's state: get, update, at a checkpoint, history. Driven by langgraph-sdk."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import NotFoundError
from serve_support import Server, serve


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory.mktemp("serve")) as s:
        yield s


def test_create_get_update_delete(server: Server) -> None:
    client = get_sync_client(url=server.url)
    thread = client.threads.create(metadata={"user": "ada"})
    tid = thread["thread_id"]
    assert thread["status"] == "idle"
    assert client.threads.get(tid)["metadata"] == {"user": "ada"}
    # if_exists="do_nothing" returns the existing thread.
    assert client.threads.create(thread_id=tid, if_exists="do_nothing")["thread_id"] == tid
    updated = client.threads.update(tid, metadata={"topic": "maths"})
    assert updated["metadata"] == {"user": "ada", "topic": "maths"}
    client.threads.delete(tid)
    with pytest.raises(NotFoundError):
        client.threads.get(tid)


async def test_search_and_count(server: Server) -> None:
    client = get_client(url=server.url)
    mine = [
        await client.threads.create(metadata={"owner": "search-test", "i": i}) for i in range(3)
    ]
    found = await client.threads.search(metadata={"owner": "search-test"}, limit=10)
    assert [t["thread_id"] for t in found] == [t["thread_id"] for t in reversed(mine)]
    page = await client.threads.search(
        metadata={"owner": "search-test"}, limit=2, offset=1, sort_by="created_at", sort_order="asc"
    )
    assert [t["metadata"]["i"] for t in page] == [1, 2]
    assert await client.threads.count(metadata={"owner": "search-test"}) == 3
    await client.runs.wait(mine[0]["thread_id"], "steps", input={"items": ["x"]})
    by_values = await client.threads.search(values={"items": ["x", "first", "second"]})
    assert [t["thread_id"] for t in by_values] == [mine[0]["thread_id"]]
    idle = await client.threads.search(metadata={"owner": "search-test"}, status="idle")
    assert len(idle) == 3


async def test_state_history_and_update(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    empty = await client.threads.get_state(tid)
    assert empty["values"] == {} and empty["checkpoint"] is None
    await client.runs.wait(tid, "steps", input={"items": ["in"]})
    state = await client.threads.get_state(tid)
    assert state["values"]["items"] == ["in", "first", "second"]
    assert state["next"] == []
    assert state["checkpoint"]["thread_id"] == tid
    assert state["metadata"]["graph_id"] == "steps"
    history = await client.threads.get_history(tid, limit=10)
    assert history[0]["checkpoint_id"] == state["checkpoint_id"]
    assert [h["values"].get("items") for h in history][:3] == [
        ["in", "first", "second"], ["in", "first"], ["in"],
    ]  # fmt: skip
    assert len(await client.threads.get_history(tid, limit=2)) == 2
    # The state at an earlier checkpoint.
    earlier = await client.threads.get_state(tid, checkpoint_id=history[1]["checkpoint_id"])
    assert earlier["values"]["items"] == ["in", "first"]
    assert earlier["next"] == ["second"]
    # update_state as a node, through the channel's reducer.
    out = await client.threads.update_state(tid, {"items": ["edited"]}, as_node="second")
    assert out["checkpoint"]["checkpoint_id"]
    after = await client.threads.get_state(tid)
    assert after["values"]["items"] == ["in", "first", "second", "edited"]
    assert (await client.threads.get(tid))["values"]["items"][-1] == "edited"


async def test_a_threads_values_are_its_state_once_a_run_ends(server: Server) -> None:
    """The thread's record (``threads.get``, ``join``) holds what ``get_state`` reads
    (the state, not the output schema's part: ``summary`` outputs only ``count``),
    after a run that ended (settled from its streamed values) and one paused at a
    breakpoint (settled from the state read back)."""
    client = get_client(url=server.url)
    cases = [("steps", {}, ["a", "first", "second"]), ("summary", {}, ["a", "counted"]),
             ("steps", {"interrupt_after": ["first"]}, ["a", "first"])]  # fmt: skip
    for graph, options, items in cases:
        tid = (await client.threads.create())["thread_id"]
        run = await client.runs.create(tid, graph, input={"items": ["a"]}, **options)
        joined = await client.runs.join(tid, run["run_id"])
        state = await client.threads.get_state(tid)
        thread = await client.threads.get(tid)
        assert state["values"]["items"] == items, graph
        assert thread["values"] == state["values"] == joined, graph
        assert thread["status"] == ("interrupted" if options else "idle"), graph
        if graph == "summary":
            assert state["values"]["count"] == 2


async def test_copy_holds_the_history(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create(metadata={"copied": "yes"})
    await client.runs.wait(thread["thread_id"], "steps", input={"items": ["a"]})
    copy = await client.threads.copy(thread["thread_id"])
    assert copy["thread_id"] != thread["thread_id"]
    assert copy["metadata"]["copied"] == "yes"
    state = await client.threads.get_state(copy["thread_id"])
    assert state["values"]["items"] == ["a", "first", "second"]
    # The whole history came along (the saver's copy_thread), not just the state.
    source_history = await client.threads.get_history(thread["thread_id"])
    copied_history = await client.threads.get_history(copy["thread_id"])
    assert len(copied_history) == len(source_history) > 1
    assert [h["values"] for h in copied_history] == [h["values"] for h in source_history]
    # The copy runs on its own from there.
    await client.runs.wait(copy["thread_id"], "steps", input={"items": ["b"]})
    assert (await client.threads.get_state(thread["thread_id"]))["values"]["items"] == [
        "a", "first", "second",
    ]  # fmt: skip


def test_delete_removes_the_checkpoints(server: Server) -> None:
    client = get_sync_client(url=server.url)
    thread = client.threads.create()
    tid = thread["thread_id"]
    client.runs.wait(tid, "steps", input={"items": ["a"]})
    client.threads.delete(tid)
    # The same id made again starts empty.
    client.threads.create(thread_id=tid)
    assert client.threads.get_state(tid)["values"] == {}


def test_record_times_are_written_as_datetime_isoformat(monkeypatch: pytest.MonkeyPatch) -> None:
    """``db.now`` (every record's ``created_at`` / ``updated_at``, sorted as text) writes
    what ``datetime.isoformat`` does, whole seconds and a new second included."""
    from datetime import datetime, timezone

    from ironloop.serve import db

    instants = [1_764_470_055_000_000, 1_764_470_055_000_001, 1_764_470_055_999_999,
                1_764_470_056_123_456, 0, 951_782_400_500_000]  # fmt: skip
    for micros in instants:
        monkeypatch.setattr(db.time, "time_ns", lambda m=micros: m * 1000 + 999)
        sec, frac = divmod(micros, 1_000_000)
        want = datetime.fromtimestamp(sec, timezone.utc).replace(microsecond=frac).isoformat()
        assert db.now() == want
