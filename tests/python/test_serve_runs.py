"""``ironloop serve``: runs — wait, background + join, stream (every mode the engine
has, subgraphs), join_stream, cancel, list, stateless runs, multitask strategies,
if_not_exists, per-run breakpoints, interrupt() and Command resume, failures.
Driven by langgraph-sdk's async and sync clients over loopback HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError
from serve_support import Server, serve


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(tmp_path_factory.mktemp("serve")) as s:
        yield s


async def test_wait_returns_the_final_state(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    out = await client.runs.wait(thread["thread_id"], "steps", input={"items": ["x"]})
    assert out == {"items": ["x", "first", "second"]}
    out = await client.runs.wait(thread["thread_id"], "steps", input={"items": ["y"]})
    assert out["items"] == ["x", "first", "second", "y", "first", "second"]
    runs = await client.runs.list(thread["thread_id"])
    assert [r["status"] for r in runs] == ["success", "success"]


def test_agent_calls_its_tool_sync_client(server: Server) -> None:
    client = get_sync_client(url=server.url)
    thread = client.threads.create()
    out = client.runs.wait(
        thread["thread_id"], "agent",
        input={"messages": [{"role": "user", "content": "weather in Paris?"}]},
    )  # fmt: skip
    kinds = [m["type"] for m in out["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"]
    assert out["messages"][1]["tool_calls"][0]["args"] == {"city": "Paris"}
    assert out["messages"][2]["content"] == "sunny, 21°C"
    assert out["messages"][3]["content"] == "The weather: sunny, 21°C"


async def test_background_run_and_join(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "steps", input={"items": ["bg"]})
    assert run["status"] in ("pending", "running")
    assert run["thread_id"] == thread["thread_id"]
    out = await client.runs.join(thread["thread_id"], run["run_id"])
    assert out["items"] == ["bg", "first", "second"]
    got = await client.runs.get(thread["thread_id"], run["run_id"])
    assert got["status"] == "success"
    with pytest.raises(NotFoundError):
        await client.runs.get(thread["thread_id"], "00000000-0000-0000-0000-000000000000")
    # Joined again once it has ended: answered from the thread's record, read with
    # whether the thread has the run (one statement); another thread's run is not found.
    again = await client.runs.join(thread["thread_id"], run["run_id"])
    assert again["items"] == ["bg", "first", "second"]
    other = await client.threads.create()
    with pytest.raises(httpx.HTTPStatusError) as refused:  # the SDK's join raises httpx's
        await client.runs.join(other["thread_id"], run["run_id"])
    assert refused.value.response.status_code == 404


async def test_a_runs_end_is_the_threads_values_everywhere(server: Server) -> None:
    """A run's end stores the thread's values as encoded once, and a join answers that
    text as it is: the thread read, searched and joined again (after the run, from the
    database) all give the same values as data, not as a string."""
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "agent", input={"messages": [
        {"role": "user", "content": "weather in Paris? «ünïcode»"}]})  # fmt: skip
    joined = await client.runs.join(tid, run["run_id"])
    again = await client.runs.join(tid, run["run_id"])  # the run has ended: read back
    stored = (await client.threads.get(tid))["values"]
    assert isinstance(stored, dict) and joined == again == stored
    assert stored["messages"][0]["content"] == "weather in Paris? «ünïcode»"
    assert [m["type"] for m in stored["messages"]] == ["human", "ai", "tool", "ai"]
    found = await client.threads.search(values={"messages": stored["messages"]})
    assert [t["thread_id"] for t in found] == [tid]
    state = await client.threads.get_state(tid)
    assert state["values"] == stored


async def collect(stream: Any) -> list[tuple[str, Any]]:
    return [(part.event, part.data) async for part in stream]


async def test_stream_modes(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    parts = await collect(
        client.runs.stream(
            thread["thread_id"], "steps", input={"items": ["s"]},
            stream_mode=["values", "updates", "custom"],
        )
    )  # fmt: skip
    assert parts[0][0] == "metadata" and parts[0][1]["run_id"]
    assert parts[1:] == [
        ("values", {"items": ["s"]}),
        ("custom", {"progress": "first"}),
        ("updates", {"first": {"items": ["first"]}}),
        ("values", {"items": ["s", "first"]}),
        ("updates", {"second": {"items": ["second"]}}),
        ("values", {"items": ["s", "first", "second"]}),
    ]
    tasks = await collect(
        client.runs.stream(thread["thread_id"], "steps", input={}, stream_mode="tasks")
    )
    assert [(e, d["name"], "result" in d) for e, d in tasks[1:]] == [
        ("tasks", "first", False), ("tasks", "first", True),
        ("tasks", "second", False), ("tasks", "second", True),
    ]  # fmt: skip
    debug = await collect(
        client.runs.stream(thread["thread_id"], "steps", input={}, stream_mode="debug")
    )
    assert {d["type"] for e, d in debug[1:]} >= {"checkpoint", "task", "task_result"}


async def test_messages_tuple_streams_tokens(server: Server) -> None:
    client = get_client(url=server.url)
    parts = await collect(
        client.runs.stream(
            None, "agent", input={"messages": [{"role": "user", "content": "hello there"}]},
            stream_mode="messages-tuple",
        )
    )  # fmt: skip
    chunks = [d for e, d in parts if e == "messages"]
    text = "".join(msg["content"] for msg, meta in chunks if msg["type"] == "AIMessageChunk")
    assert text == "You said: hello there"
    assert len(chunks) >= 4  # word by word
    assert all(meta["langgraph_node"] == "agent" for _msg, meta in chunks)
    # On a thread: only the modes asked for are sent, and the thread is settled with
    # the run's final values all the same (from the engine's values, not streamed).
    thread = await client.threads.create()
    parts = await collect(
        client.runs.stream(
            thread["thread_id"], "agent",
            input={"messages": [{"role": "user", "content": "hello again"}]},
            stream_mode="messages-tuple",
        )
    )  # fmt: skip
    assert {e for e, _d in parts} == {"metadata", "messages"}
    record = await client.threads.get(thread["thread_id"])
    state = await client.threads.get_state(thread["thread_id"])
    assert record["status"] == "idle"
    assert record["values"] == state["values"]
    assert [m["type"] for m in record["values"]["messages"]] == ["human", "ai"]
    assert record["values"]["messages"][-1]["content"] == "You said: hello again"


async def test_tools_streams_langgraphs_tool_events(server: Server) -> None:
    client = get_client(url=server.url)
    parts = await collect(
        client.runs.stream(
            None, "agent", input={"messages": [{"role": "user", "content": "weather in Paris?"}]},
            stream_mode="tools",
        )
    )  # fmt: skip
    tools = [d for e, d in parts if e == "tools"]
    assert [d["event"] for d in tools] == ["tool-started", "tool-finished"]
    assert tools[0]["tool_name"] == "get_weather" and tools[0]["input"] == {"city": "Paris"}
    assert tools[1]["tool_call_id"] == tools[0]["tool_call_id"]
    assert tools[1]["output"]["content"] == "sunny, 21°C"


async def test_stream_subgraphs_names_the_namespace(server: Server) -> None:
    client = get_client(url=server.url)
    parts = await collect(
        client.runs.stream(
            None, "nested", input={"items": ["n"]}, stream_mode="updates", stream_subgraphs=True
        )
    )
    events = [e for e, _ in parts[1:]]
    inner = [e for e in events if e.startswith("updates|inner:")]
    assert len(inner) == 2  # first and second, inside the subgraph
    assert "updates" in events
    assert parts[-1] == ("updates", {"after": {"items": ["after"]}})


async def test_join_stream_follows_a_background_run(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    run = await client.runs.create(
        thread["thread_id"], "steps", input={"items": ["j"], "sleep": 0.5}, stream_mode="updates"
    )
    parts = await collect(client.runs.join_stream(thread["thread_id"], run["run_id"]))
    assert [e for e, _ in parts] == ["updates", "updates"]
    assert parts[-1][1] == {"second": {"items": ["second"]}}


async def test_cancel_a_running_run(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    run = await client.runs.create(thread["thread_id"], "steps", input={"items": ["c"], "sleep": 3})
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    assert time.monotonic() - started < 2.5
    got = await client.runs.get(thread["thread_id"], run["run_id"])
    assert got["status"] == "interrupted"
    # The thread takes new runs at once.
    out = await client.runs.wait(thread["thread_id"], "steps", input={"items": ["after"]})
    assert out["items"][-2:] == ["first", "second"]


async def test_stateless_runs_leave_no_thread(server: Server) -> None:
    client = get_client(url=server.url)
    before = await client.threads.count()
    out = await client.runs.wait(None, "steps", input={"items": ["free"]})
    assert out == {"items": ["free", "first", "second"]}
    parts = await collect(client.runs.stream(None, "steps", input={}, stream_mode="values"))
    assert parts[-1] == ("values", {"items": ["first", "second"]})
    await asyncio.sleep(0.2)
    assert await client.threads.count() == before


async def test_if_not_exists(server: Server) -> None:
    client = get_client(url=server.url)
    tid = "0b1e5c3a-0000-4000-8000-00000000abcd"
    with pytest.raises(NotFoundError):
        await client.runs.create(tid, "steps", input={})
    out = await client.runs.wait(tid, "steps", input={"items": ["new"]}, if_not_exists="create")
    assert out["items"] == ["new", "first", "second"]
    assert (await client.threads.get(tid))["metadata"]["graph_id"] == "steps"


async def test_multitask_reject_and_enqueue(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "steps", input={"items": ["1"], "sleep": 0.6})
    with pytest.raises(ConflictError, match="multitask strategy"):
        await client.runs.create(tid, "steps", input={"items": ["2"]})
    second = await client.runs.create(
        tid, "steps", input={"items": ["2"], "sleep": 0}, multitask_strategy="enqueue"
    )
    out = await client.runs.join(tid, second["run_id"])
    assert out["items"] == ["1", "first", "second", "2", "first", "second"]
    assert (await client.runs.get(tid, first["run_id"]))["status"] == "success"


async def test_multitask_interrupt_and_rollback(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "steps", input={"items": ["1"], "sleep": 0.8})
    await asyncio.sleep(0.2)
    second = await client.runs.create(
        tid, "steps", input={"items": ["2"], "sleep": 0}, multitask_strategy="interrupt"
    )
    out = await client.runs.join(tid, second["run_id"])
    # The first run stopped after its step: "second" never ran for it.
    assert out["items"] == ["1", "first", "2", "first", "second"]
    assert (await client.runs.get(tid, first["run_id"]))["status"] == "interrupted"

    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "steps", input={"items": ["1"], "sleep": 0.8})
    await asyncio.sleep(0.2)
    second = await client.runs.create(
        tid, "steps", input={"items": ["2"], "sleep": 0}, multitask_strategy="rollback"
    )
    out = await client.runs.join(tid, second["run_id"])
    assert out["items"] == ["2", "first", "second"]  # the first run's steps are gone
    with pytest.raises(NotFoundError):  # and so is the run, as LangGraph deletes it
        await client.runs.get(tid, first["run_id"])


async def test_interrupt_and_command_resume(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    out = await client.runs.wait(tid, "steps", input={"items": ["q"], "ask": True})
    assert out["__interrupt__"][0]["value"] == {"question": "go on?"}
    state = await client.threads.get_state(tid)
    assert state["next"] == ["second"]
    assert state["tasks"][0]["interrupts"][0]["value"] == {"question": "go on?"}
    assert (await client.threads.get(tid))["status"] == "interrupted"
    parts = await collect(
        client.runs.stream(tid, "steps", command={"resume": "yes"}, stream_mode="updates")
    )
    assert parts[1:] == [("updates", {"second": {"items": ["second:yes"]}})]
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_per_run_breakpoints(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    out = await client.runs.wait(tid, "steps", input={"items": ["b"]}, interrupt_before=["second"])
    assert out["items"] == ["b", "first"]
    assert (await client.threads.get_state(tid))["next"] == ["second"]
    out = await client.runs.wait(tid, "steps", input=None)  # continue
    assert out["items"] == ["b", "first", "second"]
    out = await client.runs.wait(tid, "steps", input={"items": ["c"]}, interrupt_after=["first"])
    assert out["items"][-2:] == ["c", "first"]
    # Without breakpoints the same graph runs through.
    other = await client.threads.create()
    out = await client.runs.wait(other["thread_id"], "steps", input={"items": ["d"]})
    assert out["items"] == ["d", "first", "second"]


async def test_a_failing_run_reports_its_error(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    with pytest.raises(Exception, match="RuntimeError: second was asked to fail"):
        await client.runs.wait(tid, "steps", input={"fail": True})
    out = await client.runs.wait(tid, "steps", input={"fail": True}, raise_error=False)
    assert out["__error__"] == {"error": "RuntimeError", "message": "second was asked to fail"}
    parts = await collect(client.runs.stream(tid, "steps", input={"fail": True}))
    assert parts[-1] == ("error", {"error": "RuntimeError", "message": "second was asked to fail"})
    runs = await client.runs.list(tid)
    assert runs[0]["status"] == "error"
    assert (await client.threads.get(tid))["status"] == "error"
    assert "Traceback" not in str(parts)


async def test_legacy_messages_and_checkpoints_modes(server: Server) -> None:
    client = get_client(url=server.url)
    parts = await collect(
        client.runs.stream(
            None, "agent", input={"messages": [{"role": "user", "content": "a b c"}]},
            stream_mode=["messages", "checkpoints"],
        )
    )  # fmt: skip
    events = [e for e, _ in parts]
    assert "messages/metadata" in events
    partial = [d for e, d in parts if e == "messages/partial"]
    # Each partial event holds the message so far: the text grows chunk by chunk.
    texts = [d[0]["content"] for d in partial]
    assert texts[-1] == "You said: a b c" and len(texts) >= 3
    assert all(texts[i + 1].startswith(texts[i]) for i in range(len(texts) - 1))
    checkpoints = [d for e, d in parts if e == "checkpoints"]
    assert checkpoints and all("values" in c and "next" in c for c in checkpoints)


async def test_resumable_stream_replays_from_an_event_id(server: Server) -> None:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    run = await client.runs.create(
        thread["thread_id"], "steps", input={"items": ["r"], "sleep": 0.6},
        stream_mode="updates", stream_resumable=True,
    )  # fmt: skip
    await asyncio.sleep(0.2)
    # Joined late, from event 0: the run's metadata event, sent before, comes too.
    parts = await collect(
        client.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="0")
    )
    assert [e for e, _ in parts] == ["metadata", "updates", "updates"]


async def test_events_mode(server: Server) -> None:
    client = get_client(url=server.url)
    parts = await collect(
        client.runs.stream(
            None, "agent", input={"messages": [{"role": "user", "content": "x y"}]},
            stream_mode="events",
        )
    )  # fmt: skip
    events = [d for e, d in parts if e == "events"]
    assert (events[0]["event"], events[0]["name"]) == ("on_chain_start", "agent")  # the graph
    assert (events[-1]["event"], events[-1]["name"]) == ("on_chain_end", "agent")
    assert events[-1]["data"]["output"]["messages"][-1]["content"] == "You said: x y"
    names = [(e["event"], e["name"]) for e in events[1:-1] if e["event"] != "on_chat_model_stream"]
    # The node's start, its output, its end (as LangGraph's events stream shows them).
    assert names == [
        ("on_chain_start", "agent"),
        ("on_chain_stream", "agent"),
        ("on_chain_end", "agent"),
    ]
    tokens = [e["data"]["chunk"]["content"] for e in events if e["event"] == "on_chat_model_stream"]
    assert "".join(tokens) == "You said: x y"
