"""Node error handlers, node timeouts and drained runs, as LangGraph 1.2's
(``add_node(error_handler=, timeout=)``, ``set_node_defaults``, ``RunControl``), and the
``Runtime`` a node is given. The engine enforces them where it runs a task, so they
hold for the engine's own nodes (a ``ToolNode``) and subgraphs as for functions."""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest

from ironloop import END, START, Command, MemorySaver, StateGraph, ToolNode, interrupt, tool
from ironloop.errors import GraphDrained, NodeError, NodeTimeoutError
from ironloop.graph import add_messages, get_stream_writer
from ironloop.messages import AIMessage
from ironloop.runtime import ExecutionInfo, RunControl, Runtime
from ironloop.types import RetryPolicy, TimeoutPolicy


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def _fails(state: State) -> dict[str, Any]:
    raise ValueError("boom")


def _logs(entry: str) -> Any:
    def node(state: State) -> dict[str, Any]:
        return {"log": [entry]}

    return node


# --- error handlers ---------------------------------------------------------------


def test_handler_replaces_the_failed_node_and_routes_with_command() -> None:
    seen: list[NodeError] = []

    def handler(state: State, error: NodeError) -> Command[Any]:
        seen.append(error)
        return Command(update={"log": ["handled"]}, goto="after")

    g = StateGraph(State)
    g.add_node("fails", _fails, error_handler=handler).add_node("after", _logs("after"))
    g.add_node("edge_target", _logs("edge_target"))
    g.add_edge(START, "fails").add_edge("fails", "edge_target")
    graph = g.compile()
    # The failed node's own edge does not fire: the handler's goto routes on.
    assert graph.invoke({"log": []}) == {"log": ["handled", "after"]}
    assert [e.node for e in seen] == ["fails"]
    assert isinstance(seen[0].error, ValueError) and str(seen[0].error) == "boom"
    updates = list(graph.stream({"log": []}))
    assert updates == [
        {"__error_handler__fails": {"log": ["handled"]}},
        {"after": {"log": ["after"]}},
    ]


def test_handler_runs_after_the_retries_and_its_own_failure_fails_the_run() -> None:
    attempts: list[int] = []

    def flaky(state: State) -> dict[str, Any]:
        attempts.append(1)
        raise ValueError("boom")

    def handler(state: State) -> dict[str, Any]:
        raise RuntimeError("handler failed")

    policy = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=ValueError)
    g = StateGraph(State)
    g.add_node("flaky", flaky, retry_policy=policy, error_handler=handler)
    graph = g.add_edge(START, "flaky").compile()
    with pytest.raises(RuntimeError, match="handler failed"):
        graph.invoke({"log": []})
    assert len(attempts) == 3


def test_default_handler_handles_nodes_without_their_own() -> None:
    def own(state: State) -> dict[str, Any]:
        return {"log": ["own"]}

    def default(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"default:{error.node}"]}

    g = StateGraph(State).set_node_defaults(error_handler=default)
    g.add_node("a", _fails).add_node("b", _fails, error_handler=own)
    graph = g.add_edge(START, "a").add_edge(START, "b").compile()
    assert sorted(graph.invoke({"log": []})["log"]) == ["default:a", "own"]


def test_a_node_named_as_the_default_handler_is_refused() -> None:
    g = StateGraph(State).set_node_defaults(error_handler=lambda s: {})
    g.add_node("__default_error_handler__", _logs("x")).add_edge(START, "__default_error_handler__")
    with pytest.raises(ValueError, match="__default_error_handler__"):
        g.compile()


def test_interrupt_is_not_a_failure_for_the_handler() -> None:
    handled: list[str] = []

    def asks(state: State) -> dict[str, Any]:
        return {"log": [interrupt("ok?")]}

    def handler(state: State) -> dict[str, Any]:
        handled.append("h")
        return {}

    g = StateGraph(State).add_node("asks", asks, error_handler=handler).add_edge(START, "asks")
    graph = g.compile(checkpointer=MemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert "__interrupt__" in graph.invoke({"log": []}, config)
    assert graph.invoke(Command(resume="yes"), config) == {"log": ["yes"]}
    assert handled == []


def test_handler_handles_a_failure_inside_a_subgraph() -> None:
    sub = StateGraph(State).add_node("inner", _fails).add_edge(START, "inner").compile()

    def handler(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"{error.node}:{error.error}"]}

    g = StateGraph(State).add_node("sub", sub, error_handler=handler).add_edge(START, "sub")
    assert g.compile().invoke({"log": []}) == {"log": ["sub:boom"]}


def test_handler_handles_the_engine_tool_node() -> None:
    """A ``ToolNode`` is run by the engine, not by a Python function: its failure
    reaches the handler all the same."""

    @tool
    def explode(x: int) -> str:
        """Fails."""
        raise ValueError("tool broke")

    class Msgs(TypedDict):
        messages: Annotated[list[Any], add_messages]

    def handler(state: Msgs, error: NodeError) -> dict[str, Any]:
        return {"messages": [AIMessage(f"recovered from {error.node}")]}

    call = AIMessage("", tool_calls=[{"name": "explode", "args": {"x": 1}, "id": "c1"}])
    g = StateGraph(Msgs)
    g.add_node("tools", ToolNode([explode], handle_tool_errors=False), error_handler=handler)
    out = g.add_edge(START, "tools").compile().invoke({"messages": [call]})
    assert out["messages"][-1].content == "recovered from tools"


async def test_handler_on_the_async_path_with_a_failing_sibling_handled() -> None:
    async def afails(state: State) -> dict[str, Any]:
        raise ValueError("async boom")

    async def handler(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"handled:{error.error}"]}

    g = StateGraph(State)
    g.add_node("a", afails, error_handler=handler).add_node("b", _logs("b"))
    graph = g.add_edge(START, "a").add_edge(START, "b").compile()
    assert sorted((await graph.ainvoke({"log": []}))["log"]) == ["b", "handled:async boom"]


# --- timeouts ---------------------------------------------------------------------


async def _slow(state: State) -> dict[str, Any]:
    await asyncio.sleep(5)
    return {"log": ["slow"]}


@pytest.mark.parametrize("how", ["ainvoke", "invoke", "stream"])
def test_run_timeout_fails_the_node_on_every_path(how: str) -> None:
    g = StateGraph(State).add_node("slow", _slow, timeout=0.05).add_edge(START, "slow")
    graph = g.compile()
    with pytest.raises(NodeTimeoutError) as info:
        if how == "ainvoke":
            asyncio.run(graph.ainvoke({"log": []}))
        elif how == "invoke":
            graph.invoke({"log": []})
        else:
            list(graph.stream({"log": []}))
    assert (info.value.node, info.value.kind, info.value.run_timeout) == ("slow", "run", 0.05)
    assert info.value.timeout == 0.05 and info.value.idle_timeout is None


async def test_heartbeats_and_stream_writes_keep_an_idle_node_alive() -> None:
    async def beating(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
        for _ in range(6):
            await asyncio.sleep(0.03)
            runtime.heartbeat()
        return {"log": ["beat"]}

    async def writing(state: State) -> dict[str, Any]:
        for i in range(6):
            await asyncio.sleep(0.03)
            get_stream_writer()({"i": i})
        return {"log": ["wrote"]}

    idle = TimeoutPolicy(idle_timeout=0.1)
    g = StateGraph(State).add_node("beating", beating, timeout=idle)
    g.add_node("writing", writing, timeout=idle)
    graph = g.add_edge(START, "beating").add_edge("beating", "writing").compile()
    chunks = [c async for c in graph.astream({"log": []}, stream_mode=["values", "custom"])]
    assert chunks[-1] == ("values", {"log": ["beat", "wrote"]})


async def test_under_refresh_on_heartbeat_stream_writes_are_no_progress() -> None:
    async def writing(state: State) -> dict[str, Any]:
        for i in range(10):
            await asyncio.sleep(0.03)
            get_stream_writer()({"i": i})
        return {"log": ["wrote"]}

    policy = TimeoutPolicy(idle_timeout=0.1, refresh_on="heartbeat")
    g = StateGraph(State).add_node("writing", writing, timeout=policy).add_edge(START, "writing")
    with pytest.raises(NodeTimeoutError) as info:
        [c async for c in g.compile().astream({"log": []}, stream_mode="custom")]
    assert info.value.kind == "idle" and info.value.idle_timeout == 0.1


async def test_a_timed_out_subgraph_node_and_the_default_timeout() -> None:
    sub = StateGraph(State).add_node("inner", _slow).add_edge(START, "inner").compile()
    g = StateGraph(State).set_node_defaults(timeout=TimeoutPolicy(run_timeout=0.05))
    g.add_node("sub", sub).add_edge(START, "sub")
    with pytest.raises(NodeTimeoutError, match="'sub' exceeded its run timeout"):
        await g.compile().ainvoke({"log": []})


async def test_a_timeout_goes_to_the_error_handler() -> None:
    def handler(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [type(error.error).__name__]}

    g = StateGraph(State).add_node("slow", _slow, timeout=0.05, error_handler=handler)
    assert await g.add_edge(START, "slow").compile().ainvoke({"log": []}) == {
        "log": ["NodeTimeoutError"]
    }


def test_timeouts_are_refused_on_sync_function_nodes_and_checked() -> None:
    g = StateGraph(State).add_node("sync", _logs("x"), timeout=1.0).add_edge(START, "sync")
    with pytest.raises(ValueError, match="only supported for async nodes"):
        g.compile()
    with pytest.raises(ValueError, match="run_timeout must be greater than 0"):
        StateGraph(State).add_node("n", _slow, timeout=0)
    with pytest.raises(ValueError, match="refresh_on"):
        TimeoutPolicy.coerce(TimeoutPolicy(idle_timeout=1, refresh_on="never"))  # type: ignore[arg-type]
    policy = TimeoutPolicy.coerce(TimeoutPolicy(run_timeout=1.0))
    assert TimeoutPolicy.coerce(policy) is policy


# --- draining ---------------------------------------------------------------------


def _drain_graph(control: RunControl, ran: list[str]) -> Any:
    def first(state: State) -> dict[str, Any]:
        ran.append("first")
        control.request_drain()
        return {"log": ["first"]}

    def second(state: State) -> dict[str, Any]:
        ran.append("second")
        return {"log": ["second"]}

    g = StateGraph(State).add_node("first", first).add_node("second", second)
    return (
        g.add_edge(START, "first").add_edge("first", "second").compile(checkpointer=MemorySaver())
    )


def test_drain_stops_before_the_next_step_and_the_run_continues_later() -> None:
    control, ran = RunControl(), []
    graph = _drain_graph(control, ran)
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(GraphDrained, match="shutdown") as info:
        graph.invoke({"log": []}, config, control=control)
    assert info.value.reason == "shutdown" and ran == ["first"]
    assert graph.get_state(config).next == ("second",)
    assert graph.invoke(None, config) == {"log": ["first", "second"]}
    assert control.drain_requested and control.drain_reason == "shutdown"


async def test_drain_in_the_last_step_finishes_normally_and_is_seen_in_runtime() -> None:
    control = RunControl()
    seen: list[bool] = []

    async def only(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
        assert runtime.control is control
        control.request_drain("deploy")
        seen.append(runtime.drain_requested)
        return {"log": ["only"]}

    g = StateGraph(State).add_node("only", only).add_edge(START, "only")
    assert await g.compile().ainvoke({"log": []}, control=control) == {"log": ["only"]}
    assert seen == [True] and control.drain_reason == "deploy"


def test_drain_from_another_thread_while_a_step_runs() -> None:
    control, started = RunControl(), threading.Event()

    def waits(state: State) -> dict[str, Any]:
        started.set()
        threading.Event().wait(0.2)
        return {"log": ["waited"]}

    g = StateGraph(State).add_node("waits", waits).add_node("next", _logs("next"))
    graph = g.add_edge(START, "waits").add_edge("waits", "next").compile()
    threading.Thread(target=lambda: started.wait(5) and control.request_drain("sigterm")).start()
    with pytest.raises(GraphDrained, match="sigterm"):
        for _ in graph.stream({"log": []}, control=control):
            pass


def test_control_must_be_a_run_control() -> None:
    graph = StateGraph(State).add_node("n", _logs("n")).add_edge(START, "n").compile()
    with pytest.raises(TypeError, match="RunControl"):
        graph.invoke({"log": []}, control=object())  # type: ignore[arg-type]


# --- Runtime ------------------------------------------------------------------------


def test_execution_info_of_a_task_and_its_attempts() -> None:
    infos: list[ExecutionInfo] = []

    def node(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
        assert runtime.execution_info is not None
        infos.append(runtime.execution_info)
        if len(infos) < 3:
            raise ValueError("again")
        return {"log": ["done"]}

    policy = RetryPolicy(max_attempts=3, initial_interval=0.0, jitter=False, retry_on=ValueError)
    g = StateGraph(State).add_node("node", node, retry_policy=policy).add_edge(START, "node")
    graph = g.compile(checkpointer=MemorySaver())
    graph.invoke({"log": []}, {"configurable": {"thread_id": "t-1"}, "run_id": "r-1"})
    assert [i.node_attempt for i in infos] == [1, 2, 3]
    assert len({i.node_first_attempt_time for i in infos}) == 1
    first = infos[0]
    assert (first.thread_id, first.run_id) == ("t-1", "r-1")
    assert first.checkpoint_ns == f"node:{first.task_id}"  # the task's own, as LangGraph's
    assert first.task_id.startswith(first.checkpoint_id) and first.task_id.endswith(":node")


def test_runtime_override_merge_and_patch() -> None:
    control = RunControl()
    base: Runtime[Any] = Runtime(context={"user": "ann"}, control=control)
    merged = base.merge(Runtime(store="s"))
    assert (merged.context, merged.store, merged.control) == ({"user": "ann"}, "s", control)
    assert base.override(context=None).context is None and base.context == {"user": "ann"}
    with pytest.raises(RuntimeError, match="execution_info"):
        base.patch_execution_info(node_attempt=2)
    info = ExecutionInfo(checkpoint_id="c", checkpoint_ns="", task_id="t")
    patched = base.override(execution_info=info).patch_execution_info(node_attempt=2)
    assert patched.execution_info is not None and patched.execution_info.node_attempt == 2
    assert not Runtime().drain_requested and Runtime().drain_reason is None
    Runtime().heartbeat()  # a no-op outside a task


def test_end_is_still_reachable_from_a_handler() -> None:
    def handler(state: State) -> Command[Any]:
        return Command(update={"log": ["h"]}, goto=END)

    g = StateGraph(State).add_node("fails", _fails, error_handler=handler)
    g.add_node("never", _logs("never")).add_edge(START, "fails").add_edge("fails", "never")
    assert g.compile().invoke({"log": []}) == {"log": ["h"]}


def test_execution_info_in_a_subgraph_names_its_own_task() -> None:
    infos: dict[str, ExecutionInfo] = {}

    def capture(name: str) -> Any:
        def node(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
            assert runtime.execution_info is not None
            infos[name] = runtime.execution_info
            return {"log": [name]}

        return node

    sub = StateGraph(State).add_node("inner", capture("inner")).add_edge(START, "inner")
    g = StateGraph(State).add_node("outer", capture("outer")).add_node("sub", sub.compile())
    graph = g.add_edge(START, "outer").add_edge("outer", "sub").compile(checkpointer=MemorySaver())
    graph.invoke({"log": []}, {"configurable": {"thread_id": "t-sub"}})
    outer, inner = infos["outer"], infos["inner"]
    assert outer.thread_id == inner.thread_id == "t-sub"
    assert outer.checkpoint_ns == f"outer:{outer.task_id}"
    assert inner.checkpoint_ns.startswith("sub:") and inner.checkpoint_ns.endswith(
        f"inner:{inner.task_id}"
    )


# --- functional API -----------------------------------------------------------------


async def test_task_timeout_per_attempt_and_entrypoint_timeout() -> None:
    from ironloop.func import entrypoint, task

    calls: list[int] = []

    @task(
        timeout=TimeoutPolicy(idle_timeout=0.05),
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False),
    )
    async def slow_once(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            await asyncio.sleep(1)
        return x + 1

    @entrypoint()
    async def workflow(x: int) -> int:
        return await slow_once(x)

    # The first attempt times out, the retry (NodeTimeoutError is retried) succeeds.
    assert await workflow.ainvoke(1) == 2 and calls == [1, 1]

    @entrypoint(timeout=0.05)
    async def too_slow(x: int) -> int:
        await asyncio.sleep(1)
        return x

    with pytest.raises(NodeTimeoutError, match="'too_slow' exceeded its run timeout"):
        await too_slow.ainvoke(1)


def test_sync_tasks_and_entrypoints_refuse_a_timeout() -> None:
    from ironloop.func import entrypoint, task

    with pytest.raises(ValueError, match="only supported for async"):
        task(timeout=1.0)(lambda x: x)

    def sync_flow(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="only supported for async"):
        entrypoint(timeout=1.0)(sync_flow)


def test_a_tasks_runtime_keeps_its_execution_info_through_override() -> None:
    seen: list[tuple[Any, Any]] = []

    def node(state: State, runtime: Runtime[Any]) -> dict[str, Any]:
        changed = runtime.override(context="other")
        seen.append((changed.execution_info, runtime.execution_info))
        assert changed.context == "other" and changed.stream_writer is runtime.stream_writer
        return {"log": ["n"]}

    g = StateGraph(State).add_node("n", node).add_edge(START, "n")
    g.compile().invoke({"log": []})
    ((changed, original),) = seen
    assert changed == original and original.task_id.endswith(":n") and original.thread_id is None
