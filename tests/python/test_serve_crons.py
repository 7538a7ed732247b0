"""``ironloop serve``: crons — runs on a schedule, on a thread or on fresh threads;
search, count, update, delete — driven by langgraph-sdk. A sixth cron field is
seconds, so the schedules here fire every second."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from serve_support import Server, serve

EVERY_SECOND = "* * * * * *"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory.mktemp("serve")) as s:
        yield s


async def test_a_thread_cron_runs_on_its_schedule(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    cron = await client.crons.create_for_thread(
        tid, "steps", schedule=EVERY_SECOND, input={"items": ["tick"]}
    )
    assert cron["thread_id"] == tid and cron["enabled"] and cron["next_run_date"]
    await asyncio.sleep(2.6)
    await client.crons.update(cron["cron_id"], enabled=False)
    await asyncio.sleep(1.2)  # a run started just before is let finish
    runs = await client.runs.list(tid, limit=50)
    assert len(runs) >= 2
    items = (await client.threads.get_state(tid))["values"]["items"]
    assert items == ["tick", "first", "second"] * len(runs)
    await asyncio.sleep(1.2)
    assert len(await client.runs.list(tid, limit=50)) == len(runs)  # disabled: no more
    await client.crons.delete(cron["cron_id"])
    with pytest.raises(NotFoundError):
        await client.crons.delete(cron["cron_id"])


async def test_a_stateless_cron_search_and_count(server: Server) -> None:
    client = get_client(url=server.url)
    cron = await client.crons.create(
        "steps", schedule=EVERY_SECOND, input={"items": ["kept"]}, on_run_completed="keep",
        metadata={"job": "nightly"},
    )  # fmt: skip
    assert cron["thread_id"] is None
    found = await client.crons.search(assistant_id="steps")
    assert cron["cron_id"] in [c["cron_id"] for c in found]
    assert await client.crons.count(assistant_id="steps") >= 1
    await asyncio.sleep(1.6)
    await client.crons.delete(cron["cron_id"])
    kept = await client.threads.search(values={"items": ["kept", "first", "second"]})
    assert kept  # each run had a thread of its own, kept


async def test_a_bad_schedule_is_refused(server: Server) -> None:
    client = get_client(url=server.url)
    with pytest.raises(UnprocessableEntityError, match="cron expression"):
        await client.crons.create("steps", schedule="every day", input={})
    with pytest.raises(UnprocessableEntityError, match="time zone"):
        await client.crons.create("steps", schedule="0 * * * *", timezone="Mars/Olympus")
