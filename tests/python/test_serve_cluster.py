"""``ironloop serve`` scaled out: several server processes on one PostgreSQL database.

300 background runs created across 3 servers each finish once; one server SIGKILLed
mid-run has its runs taken over from their last saved step by another; one SIGTERMed
finishes what it runs and takes nothing new; a run's stream, ``join`` and ``cancel``
work from a server that does not hold it. Side effects are counted in a file every
server appends to: a line per node call (thread tag, node, server pid, time)."""

from __future__ import annotations

import asyncio
import itertools
import signal
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import NotFoundError
from pg_support import postgres_url, temp_schema
from serve_support import Server, serve

EFFECTS_GRAPH = """
import operator, os, time
from typing import Annotated, TypedDict
from ironloop import END, START, StateGraph

LOG = os.path.join(os.path.dirname(__file__), "effects.log")
PAUSE = {"one": 0.05, "two": float(os.environ.get("TWO_PAUSE", "0.5")), "three": 0.05}

class State(TypedDict, total=False):
    tag: str
    items: Annotated[list[str], operator.add]
    big: str

def step(name):
    def node(state):
        with open(LOG, "a") as f:
            f.write(f"{state['tag']} {name} {os.getpid()} {time.time():.3f}\\n")
        time.sleep(PAUSE[name])
        out = {"items": [name]}
        if name == "three" and state["tag"].startswith("big"):
            out["big"] = "x" * 20_000  # an event too large for one notification
        return out
    return node

b = StateGraph(State)
for name in ("one", "two", "three"):
    b.add_node(name, step(name))
b.add_edge(START, "one")
b.add_edge("one", "two")
b.add_edge("two", "three")
b.add_edge("three", END)
graph = b.compile()
"""
NODES = ["one", "two", "three"]


def make_project(tmp: Path) -> Path:
    folder = tmp / "proj"
    folder.mkdir()
    (folder / "langgraph.json").write_text('{"graphs": {"effects": "./effects.py:graph"}}')
    (folder / "effects.py").write_text(EFFECTS_GRAPH)
    return folder


def effects(server: Server) -> list[tuple[str, str, int, float]]:
    log = server.folder / "effects.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(t, n, int(p), float(s)) for t, n, p, s in (line.split() for line in lines)]


def under_way(server: Server, at_least: int) -> bool:
    """Whether ``server`` has written ``at_least`` effects and is inside one of its
    runs: a tag whose last effect is this server's "one" or "two"."""
    seen = effects(server)
    mine = [e for e in seen if e[2] == server.proc.pid]
    last = {tag: (node, pid) for tag, node, pid, _ in seen}
    return len(mine) >= at_least and any(
        node in ("one", "two") and pid == server.proc.pid for node, pid in last.values()
    )


def cluster_args(schema: str, *more: str) -> tuple[str, ...]:
    return ("--postgres", postgres_url(), "--postgres-schema", schema,
            "--run-lease-seconds", "3", "--log-level", "warning", *more)  # fmt: skip


def wait_until(what: str, check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


async def create_runs(servers: list[Server], n: int) -> list[tuple[str, str, str]]:
    """``n`` threads and a background run on each, round robin over the servers:
    (tag, thread id, run id)."""
    clients = [get_client(url=s.url) for s in servers]
    limit = asyncio.Semaphore(24)

    async def one(i: int) -> tuple[str, str, str]:
        client = clients[i % len(clients)]
        async with limit:
            thread = await client.threads.create()
            run = await client.runs.create(
                thread["thread_id"], "effects", input={"tag": f"t{i}", "items": []}
            )
        return f"t{i}", thread["thread_id"], run["run_id"]

    return await asyncio.gather(*(one(i) for i in range(n)))


@pytest.mark.watchdog(150)
def test_three_servers_run_300_runs_once_through_a_kill_and_a_drain(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    with temp_schema() as schema, ExitStack() as stack:
        servers = [
            stack.enter_context(serve(tmp_path, *cluster_args(schema, "--max-running", "12",
                                                              "--drain-seconds", "10"),
                                      project=project))
            for _ in range(3)
        ]  # fmt: skip
        killed, drained, survivor = servers
        runs = asyncio.run(create_runs(servers, 300))
        assert len({rid for _, _, rid in runs}) == 300

        # The kill lands mid-run: the killed server has run steps and is inside a run
        # now (a run whose last step so far is its "one" or "two": its "two" pauses for
        # 0.5 s, so the kill comes while it is under way, whatever the machine's load).
        wait_until("the first server to be inside a run",
                   lambda: under_way(killed, 20))  # fmt: skip
        killed.proc.send_signal(signal.SIGKILL)
        killed.proc.wait(10)
        finished = sum(n == "three" for _, n, _, _ in effects(killed))
        assert finished < 250, f"{finished} runs had finished before the kill: too late to test it"
        term_at = time.time()
        drained.proc.send_signal(signal.SIGTERM)
        assert drained.proc.wait(30) in (0, -signal.SIGTERM)

        client = get_sync_client(url=survivor.url, timeout=120)
        for tag, tid, rid in runs:
            client.runs.join(tid, rid)
            record = client.runs.get(tid, rid)
            assert record["status"] == "success", (tag, record)
            assert [r["run_id"] for r in client.runs.list(tid)] == [rid]
            assert client.threads.get_state(tid)["values"]["items"] == NODES, tag

    calls: dict[str, list[tuple[str, int, float]]] = defaultdict(list)
    for tag, node, pid, at in effects(survivor):
        calls[tag].append((node, pid, at))
    assert len(calls) == 300
    taken_over = 0
    for tag, seq in calls.items():
        nodes = [n for n, _, _ in seq]
        if nodes == NODES:
            continue
        # Only the step the kill cut short runs again: a saved step never does.
        assert len(nodes) == 4, (tag, seq)
        cut = next(n for n in NODES if nodes.count(n) == 2)
        at = nodes.index(cut)
        assert nodes[: at + 1] + nodes[at + 2 :] == NODES and nodes[at + 1] == cut, seq
        pids = [p for _, p, _ in seq]
        # The first call was the killed server's last one on the thread; another
        # server made the second.
        assert pids[at] == killed.proc.pid and killed.proc.pid not in pids[at + 1 :], seq
        taken_over += 1
    killed_pid, drained_pid = killed.proc.pid, drained.proc.pid
    # Runs the killed server had under way went on elsewhere from their saved steps.
    moved = [tag for tag, seq in calls.items()
             if seq[0][1] == killed_pid and seq[-1][1] != killed_pid]  # fmt: skip
    assert moved, (
        "the killed server had no run under way",
        killed_pid,
        drained_pid,
        survivor.proc.pid,
        {p for seq in calls.values() for _, p, _ in seq},
    )
    assert taken_over <= len(moved)
    # The drained server finished every run it had started, and started none after
    # the signal (a second's slack for a run it had claimed just before).
    started = [seq for seq in calls.values() if seq[0][1] == drained_pid]
    assert started and all(seq[-1][1] == drained_pid and len(seq) == 3 for seq in started)
    assert all(seq[0][2] < term_at + 1.0 for seq in started)
    assert any(seq[0][2] > term_at + 1.0 for seq in calls.values()), "no run was left queued"


@pytest.mark.watchdog(90)
def test_stream_join_and_cancel_from_a_server_that_does_not_hold_the_run(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    with temp_schema() as schema, ExitStack() as stack:
        env = {"TWO_PAUSE": "1.0"}
        holder, other = (
            stack.enter_context(serve(tmp_path, *cluster_args(schema), project=project, env=env))
            for _ in range(2)
        )
        a, b = get_sync_client(url=holder.url), get_sync_client(url=other.url)
        tid = a.threads.create(metadata={"k": "v"})["thread_id"]
        assert b.threads.get(tid)["metadata"] == {"k": "v"}
        # A stream run is held by the server it was asked of.
        parts = a.runs.stream(tid, "effects", input={"tag": "big-1", "items": []},
                              stream_mode="values")  # fmt: skip
        first = next(iter(parts))
        rid = first.data["run_id"]
        seen = list(b.runs.join_stream(tid, rid))
        rest = list(parts)
        assert [p.event for p in rest][-1] == "values"
        assert rest[-1].data["items"] == NODES and len(rest[-1].data["big"]) == 20_000
        # The other server relayed the steps that ended after it joined: the last one
        # with its 20 kB value (too large for a notification) included.
        assert seen and seen[-1].event == "values"
        assert seen[-1].data["items"] == NODES and seen[-1].data["big"] == "x" * 20_000
        assert b.runs.get(tid, rid)["status"] == "success"

        run = a.runs.create(tid, "effects", input={"tag": "t-2", "items": []})
        assert b.runs.join(tid, run["run_id"])["items"] == NODES * 2
        assert a.runs.get(tid, run["run_id"])["status"] == "success"

        run = b.runs.create(tid, "effects", input={"tag": "t-3", "items": []})
        wait_until("the run to reach its slow step",
                   lambda: ("t-3", "two") in [(t, n) for t, n, _, _ in effects(holder)])  # fmt: skip
        # A run queued behind it is claimed by no server yet: cancelled where it waits.
        queued = a.runs.create(tid, "effects", input={"tag": "t-4", "items": []},
                               multitask_strategy="enqueue")  # fmt: skip
        b.runs.cancel(tid, queued["run_id"])
        assert a.runs.get(tid, queued["run_id"])["status"] == "interrupted"
        b.runs.join(tid, queued["run_id"])
        pid = next(p for t, n, p, _ in effects(holder) if t == "t-3")
        # The cancel is asked of the server that does not hold the run: it passes it on.
        (b if pid == holder.proc.pid else a).runs.cancel(tid, run["run_id"])
        wait_until("the run to stop",
                   lambda: a.runs.get(tid, run["run_id"])["status"] == "interrupted")  # fmt: skip
        assert [n for t, n, _, _ in effects(holder) if t == "t-3"] == ["one", "two"]
        time.sleep(1.5)  # a claim poll and more: the cancelled run stays unrun
        assert not [n for t, n, _, _ in effects(holder) if t == "t-4"]


def test_an_assistant_made_on_one_server_runs_on_another(tmp_path: Path) -> None:
    with temp_schema() as schema, ExitStack() as stack:
        a, b = [stack.enter_context(serve(tmp_path, *cluster_args(schema))) for _ in range(2)]
        on_a, on_b = get_sync_client(url=a.url), get_sync_client(url=b.url)
        aid = on_a.assistants.create("steps", context={"lang": "fr"})["assistant_id"]
        echo = {"items": [], "echo": True}
        assert on_b.runs.wait(None, aid, input=echo)["items"][0] == "first:None:fr:None"
        on_b.assistants.update(aid, config={"configurable": {"tone": "warm"}})
        # A background run, queued for either server, runs the latest version.
        tid = on_a.threads.create()["thread_id"]
        run = on_a.runs.create(tid, aid, input=echo)
        assert on_b.runs.join(tid, run["run_id"])["items"][0] == "first:warm:fr:None"
        assert [v["version"] for v in on_a.assistants.get_versions(aid)] == [2, 1]
        assert on_b.assistants.count(graph_id="steps") == 2


@pytest.mark.watchdog(90)
def test_a_cron_fires_once_a_due_time_across_servers(tmp_path: Path) -> None:
    """Two servers share the crons table: every due time of a cron starts one run
    (the server that moves the cron's date on starts it), never one a server."""
    from datetime import datetime

    project = make_project(tmp_path)
    with temp_schema() as schema, ExitStack() as stack:
        servers = [stack.enter_context(serve(tmp_path, *cluster_args(schema), project=project))
                   for _ in range(2)]  # fmt: skip
        client = get_sync_client(url=servers[0].url)
        tid = client.threads.create()["thread_id"]
        cron = client.crons.create_for_thread(
            tid, "effects", schedule="* * * * * *", input={"tag": "cron", "items": []}
        )
        time.sleep(3.4)
        get_sync_client(url=servers[1].url).crons.update(cron["cron_id"], enabled=False)
        wait_until(
            "the cron's last run to end", lambda: client.threads.get(tid)["status"] == "idle"
        )
        runs = client.runs.list(tid, limit=50)
        assert 2 <= len(runs) <= 5, runs
        assert all(r["status"] == "success" for r in runs), runs
        starts = sorted(datetime.fromisoformat(r["created_at"]).timestamp() for r in runs)
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert min(gaps) > 0.6, f"two runs for one due time: {gaps}"
        ran = [n for tag, n, _, _ in effects(servers[0]) if tag == "cron"]
        assert ran.count("one") == len(runs) and ran.count("three") == len(runs)
        assert client.threads.get_state(tid)["values"]["items"] == NODES * len(runs)


@pytest.mark.watchdog(90)
def test_stateless_background_runs_are_queued_for_any_server(tmp_path: Path) -> None:
    """``runs.create(None, ...)`` on a server that runs one run at a time: the runs go
    into the queue, the other server takes what the first has no room for, each runs
    once, and each run's thread is dropped by the server that ran it."""
    project = make_project(tmp_path)
    with temp_schema() as schema, ExitStack() as stack:
        small = stack.enter_context(
            serve(tmp_path, *cluster_args(schema, "--max-running", "1"), project=project)
        )
        other = stack.enter_context(serve(tmp_path, *cluster_args(schema), project=project))
        client = get_sync_client(url=small.url)
        runs = [client.runs.create(None, "effects", input={"tag": f"s{i}", "items": []})
                for i in range(6)]  # fmt: skip
        assert len({r["thread_id"] for r in runs}) == 6

        def dropped() -> bool:
            return not any(t["thread_id"] in {r["thread_id"] for r in runs}
                           for t in client.threads.search(limit=100))  # fmt: skip

        wait_until("every stateless run's thread to be dropped", dropped)
        calls = [(tag, n, pid) for tag, n, pid, _ in effects(small) if tag.startswith("s")]
        for i in range(6):
            assert [n for tag, n, _ in calls if tag == f"s{i}"] == NODES, calls
        # Runs created on ``small`` ran on ``other`` too: the queue is shared. Which
        # server takes how many is the claimers' race (under load ``other`` may take
        # all six), so only ``other``'s share is asserted, and nothing ran elsewhere.
        pids = {pid for *_, pid in calls}
        assert other.proc.pid in pids and pids <= {small.proc.pid, other.proc.pid}, calls


@pytest.mark.watchdog(90)
def test_interrupt_and_rollback_steer_a_run_another_server_holds(tmp_path: Path) -> None:
    """A queued ``interrupt`` run stops the thread's running run (on whichever server
    holds it) at the end of its step, marked interrupted, then runs; ``rollback``
    discards the running run's steps and its record."""
    project = make_project(tmp_path)
    with temp_schema() as schema, ExitStack() as stack:
        servers = [stack.enter_context(serve(tmp_path, *cluster_args(schema), project=project))
                   for _ in range(2)]  # fmt: skip
        first, second = (get_sync_client(url=s.url) for s in servers)
        for action in ("interrupt", "rollback"):
            tid = first.threads.create()["thread_id"]
            a = first.runs.create(tid, "effects", input={"tag": f"{action}-a", "items": []})
            started = (f"{action}-a", "one")
            wait_until("the first run's first step",
                       lambda s=started: any((t, n) == s for t, n, _, _ in effects(servers[0])))  # fmt: skip
            b = second.runs.create(tid, "effects", input={"tag": f"{action}-b", "items": []},
                                   multitask_strategy=action)  # fmt: skip
            out = second.runs.join(tid, b["run_id"])
            ran_a = [n for tag, n, _, _ in effects(servers[0]) if tag == f"{action}-a"]
            assert "three" not in ran_a, ran_a  # stopped before its last step
            if action == "interrupt":
                assert out["items"] == [*ran_a, *NODES], out  # its steps so far, kept
                assert first.runs.get(tid, a["run_id"])["status"] == "interrupted"
            else:
                assert out["items"] == NODES, out  # the first run's steps are gone
                with pytest.raises(NotFoundError):
                    first.runs.get(tid, a["run_id"])
            assert second.runs.get(tid, b["run_id"])["status"] == "success"
