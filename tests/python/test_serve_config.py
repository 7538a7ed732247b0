"""``ironloop serve``: what ``langgraph.json`` says about storage — the store's
semantic index and TTL, the checkpointer's thread TTL — honoured by a real server and
driven by langgraph-sdk; a misspelt or unsupported key refused at start with a reason."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.errors import NotFoundError
from serve_support import PROJECT, free_port, ironloop_command, serve

from ironloop.serve.project import Project, ProjectError

# A deterministic embedding: a text's vector counts the letters a, e and o.
EMBED = """
def embed(texts):
    return [[t.count("a") + 1.0, t.count("e") + 1.0, t.count("o") + 1.0] for t in texts]
"""


def project_with(tmp: Path, **config: object) -> Path:
    folder = tmp / "project"
    shutil.copytree(PROJECT, folder)
    raw = json.loads((folder / "langgraph.json").read_text())
    raw.update(config)
    (folder / "langgraph.json").write_text(json.dumps(raw))
    (folder / "embed.py").write_text(EMBED)
    return folder


def test_store_index_from_langgraph_json_ranks_by_meaning(tmp_path: Path) -> None:
    project_with(tmp_path, store={"index": {"dims": 3, "embed": "./embed.py:embed",
                                            "fields": ["text"]}})  # fmt: skip
    with serve(tmp_path) as server:
        client = get_sync_client(url=server.url)
        client.store.put_item(["notes"], "a", {"text": "aaaa"})
        client.store.put_item(["notes"], "o", {"text": "oooo"})
        found = client.store.search_items(["notes"], query="ooo")["items"]
        assert [i["key"] for i in found] == ["o", "a"]
        assert found[0]["score"] > found[1]["score"]


def test_checkpointer_ttl_sweeps_idle_threads(tmp_path: Path) -> None:
    # default_ttl 0.01 min = 0.6 s, swept every 0.005 min = 0.3 s.
    project_with(tmp_path, checkpointer={"ttl": {"strategy": "delete", "default_ttl": 0.01,
                                                 "sweep_interval_minutes": 0.005}})  # fmt: skip
    with serve(tmp_path) as server:
        client = get_sync_client(url=server.url)
        old = client.threads.create()
        client.runs.wait(old["thread_id"], "steps", input={"items": []})
        assert client.threads.get_state(old["thread_id"])["values"]["items"] == [
            "first",
            "second",
        ]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                client.threads.get(old["thread_id"])
            except NotFoundError:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the idle thread was not swept within 20 s")
        # A thread used just now is kept until it too has been idle default_ttl.
        fresh = client.threads.create()
        assert client.threads.get(fresh["thread_id"])["thread_id"] == fresh["thread_id"]


def test_storage_keys_are_checked(tmp_path: Path) -> None:
    folder = project_with(tmp_path)
    path = folder / "langgraph.json"
    raw = json.loads(path.read_text())
    cases = [
        ({"store": {"indx": {}}}, r"unknown key\(s\) indx"),
        ({"store": {"path": "./s.py:store"}}, "cannot be plugged in"),
        ({"store": {"index": {"dims": 0, "embed": "openai:x"}}}, "dims"),
        ({"store": {"ttl": {"default_ttl": -1}}}, "store.ttl.default_ttl"),
        ({"checkpointer": {"ttl": {"strategy": "archive", "default_ttl": 5}}}, "keep_latest"),
        ({"checkpointer": {"ttl": {"default_ttl": "1d"}}}, "positive number of minutes"),
    ]
    for extra, message in cases:
        path.write_text(json.dumps({**raw, **extra}))
        project = Project.load(path)
        with pytest.raises(ProjectError, match=message):
            project.store_options()
            project.checkpointer_ttl()
    path.write_text(json.dumps({**raw, "checkpointer": {"ttl": {"default_ttl": 60}}}))
    ttl = Project.load(path).checkpointer_ttl()
    assert ttl is not None and (ttl.ttl, ttl.strategy, ttl.every) == (3600.0, "delete", 300.0)


def test_a_second_server_on_a_data_folder_is_refused_and_the_first_keeps_serving(
    tmp_path: Path,
) -> None:
    """One server owns its SQLite data folder (it keeps the records' file locked): a
    second one started on it exits at once naming the folder, instead of resuming
    and running the first one's runs a second time; the first is unharmed."""
    with serve(tmp_path) as server:
        client = get_sync_client(url=server.url)
        thread = client.threads.create()
        second = subprocess.run(
            [*ironloop_command(), "serve", "--config", str(server.folder / "langgraph.json"),
             "--port", str(free_port())],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 2, second.stderr
        assert "server.db" in second.stderr and "--data-dir" in second.stderr, second.stderr
        assert client.threads.get(thread["thread_id"])["thread_id"] == thread["thread_id"]
        assert client.threads.create()["thread_id"]


def test_server_gc_freezes_what_is_loaded_and_still_collects_cycles() -> None:
    """``tune_gc`` (run by ``ironloop serve`` once its project is loaded): what exists
    then is out of the collector's walks, young collections are rarer, and a cycle
    made afterwards is still collected (run in a process of its own: the collector's
    settings are the process's)."""
    import subprocess
    import sys

    script = """
import gc, weakref
from ironloop.serve.app import SERVER_GC_THRESHOLD, tune_gc
class Node:
    pass
tune_gc()
assert gc.get_freeze_count() > 0, gc.get_freeze_count()
assert gc.get_threshold()[0] == SERVER_GC_THRESHOLD, gc.get_threshold()
a, b = Node(), Node()
a.other, b.other = b, a
gone = weakref.ref(a)
del a, b
gc.collect()
assert gone() is None, "a cycle made after tune_gc was not collected"
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
