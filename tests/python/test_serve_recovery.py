"""``ironloop serve`` survives a crash: a server SIGKILLed mid-run is started again on
the same project folder and finishes the run from its last saved step; SIGTERM stops
a server whose run is then finished by the next one."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client
from serve_support import serve

COUNTER_GRAPH = """
import operator, os, time
from typing import Annotated, TypedDict
from ironloop import END, START, StateGraph

LOG = os.path.join(os.path.dirname(__file__), "calls.log")

class State(TypedDict, total=False):
    items: Annotated[list[str], operator.add]

def step(name, pause):
    def node(state):
        with open(LOG, "a") as f:
            f.write(name + "\\n")
        time.sleep(pause)
        return {"items": [name]}
    return node

b = StateGraph(State)
b.add_node("one", step("one", 0))
b.add_node("two", step("two", 2.0))
b.add_node("three", step("three", 0))
b.add_edge(START, "one")
b.add_edge("one", "two")
b.add_edge("two", "three")
b.add_edge("three", END)
graph = b.compile()
"""


def make_project(tmp: Path) -> Path:
    folder = tmp / "proj"
    folder.mkdir()
    (folder / "langgraph.json").write_text('{"graphs": {"slow": "./slow.py:graph"}}')
    (folder / "slow.py").write_text(COUNTER_GRAPH)
    return folder


def wait_for_calls(folder: Path, wanted: list[str], timeout: float = 20) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = folder / "calls.log"
        calls = log.read_text().split() if log.exists() else []
        if calls[: len(wanted)] == wanted:
            return calls
        time.sleep(0.05)
    raise AssertionError(f"calls {calls}, wanted {wanted}")


@pytest.mark.parametrize(
    "how, drain", [(signal.SIGKILL, "10"), (signal.SIGTERM, "0")], ids=["sigkill", "sigterm"]
)
@pytest.mark.watchdog(120)
def test_a_run_cut_short_is_finished_by_the_next_server(
    tmp_path: Path, how: int, drain: str
) -> None:
    project = make_project(tmp_path)
    with serve(tmp_path, "--drain-seconds", drain, project=project) as first:
        client = get_sync_client(url=first.url)
        thread = client.threads.create()
        tid = thread["thread_id"]
        run = client.runs.create(tid, "slow", input={"items": ["in"]})
        wait_for_calls(first.folder, ["one", "two"])
        first.proc.send_signal(how)
        first.proc.wait(20)
    with serve(tmp_path, project=project) as second:
        client = get_sync_client(url=second.url)
        out = client.runs.join(tid, run["run_id"])
        assert out["items"] == ["in", "one", "two", "three"]
        assert client.runs.get(tid, run["run_id"])["status"] == "success"
        calls = (second.folder / "calls.log").read_text().split()
        # "one" finished and was saved before the stop: it never runs again; "two" was
        # cut short and runs again.
        assert calls == ["one", "two", "two", "three"]


@pytest.mark.watchdog(120)
def test_sigterm_lets_a_running_run_finish(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    with serve(tmp_path, project=project) as first:
        client = get_sync_client(url=first.url)
        tid = client.threads.create()["thread_id"]
        run = client.runs.create(tid, "slow", input={"items": ["in"]})
        wait_for_calls(first.folder, ["one", "two"])
        first.proc.send_signal(signal.SIGTERM)
        assert first.proc.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
        assert (first.folder / "calls.log").read_text().split() == ["one", "two", "three"]
    with serve(tmp_path, project=project) as second:
        client = get_sync_client(url=second.url)
        assert client.runs.get(tid, run["run_id"])["status"] == "success"
        assert client.threads.get_state(tid)["values"]["items"] == ["in", "one", "two", "three"]
