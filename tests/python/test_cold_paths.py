"""Cold paths: what a process pays before and during its first run.

A run of sync nodes and sync tools must never import ``asyncio`` (nor start the
background event loop that async tools of a sync caller use): importing it is most of
what a first ``invoke`` used to cost over the next. Each check runs in a fresh
interpreter, so that nothing imported by the test process counts.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_fresh(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_sync_graph_and_agent_never_import_asyncio():
    out = run_fresh(
        """
        import sys, threading
        from typing import TypedDict

        import ironloop
        from ironloop import END, MemorySaver, StateGraph, ToolNode, create_react_agent, tool
        from ironloop.messages import AIMessage
        from ironloop.models import ScriptedChatModel

        assert "asyncio" not in sys.modules, "import ironloop imported asyncio"

        class S(TypedDict):
            count: int

        g = StateGraph(S)
        g.add_node("a", lambda s: {"count": s["count"] + 1})
        g.add_node("b", lambda s: {"count": s["count"] + 1})
        g.set_entry_point("a")
        g.add_conditional_edges("a", lambda s: END if s["count"] >= 6 else "b", ["b", END])
        g.add_edge("b", "a")
        graph = g.compile(checkpointer=MemorySaver())
        cfg = {"configurable": {"thread_id": "t"}}
        assert graph.invoke({"count": 0}, cfg) == {"count": 7}
        assert [c for c in graph.stream({"count": 0}, {"configurable": {"thread_id": "u"}})]

        @tool
        def add(a: int, b: int) -> int:
            "Adds."
            return a + b

        calls = [{"name": "add", "args": {"a": i, "b": 1}, "id": f"c{i}"} for i in range(3)]
        node = ToolNode([add])
        res = node.invoke({"messages": [AIMessage(content="", tool_calls=calls)]})
        assert [m.content for m in res["messages"]] == ["1", "2", "3"]

        model = ScriptedChatModel([{"content": "", "tool_calls": calls}, "done"])
        agent = create_react_agent(model, [add], checkpointer=MemorySaver())
        final = agent.invoke({"messages": [("user", "go")]}, cfg)
        assert final["messages"][-1].content == "done"

        assert "asyncio" not in sys.modules, "a sync run imported asyncio"
        names = [t.name for t in threading.enumerate()]
        assert not any(n.startswith("ironloop-async") for n in names), names
        print("ok")
        """
    )
    assert out == "ok"


def test_async_tool_of_a_sync_caller_still_gets_its_loop():
    # The loop is looked up lazily now: the first async call of a sync run starts it.
    out = run_fresh(
        """
        import sys
        from ironloop import ToolNode, tool
        from ironloop.messages import AIMessage

        @tool
        async def twice(x: int) -> int:
            "Doubles."
            import asyncio
            await asyncio.sleep(0)
            return 2 * x

        calls = [{"name": "twice", "args": {"x": i}, "id": f"c{i}"} for i in range(4)]
        res = ToolNode([twice]).invoke({"messages": [AIMessage(content="", tool_calls=calls)]})
        assert [m.content for m in res["messages"]] == ["0", "2", "4", "6"], res
        # And again, on the same (now running) background loop.
        res = ToolNode([twice]).invoke({"messages": [AIMessage(content="", tool_calls=calls)]})
        assert [m.content for m in res["messages"]] == ["0", "2", "4", "6"], res
        print("ok")
        """
    )
    assert out == "ok"


def test_create_agent_is_still_importable_from_the_package():
    out = run_fresh(
        """
        import ironloop
        from ironloop import create_agent
        from ironloop._create_agent import create_agent as direct
        assert create_agent is direct and ironloop.create_agent is direct
        assert "create_agent" in ironloop.__all__
        print("ok")
        """
    )
    assert out == "ok"
