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

#: What a bare ``import ironloop`` may load (modules new to ``sys.modules``): 18 of the
#: package's and 78 in all on CPython 3.11 when this was written, against 79 and 163
#: when the package imported its graph, agent, model and store modules eagerly.
MAX_IRONLOOP_MODULES = 20
MAX_MODULES = 90


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


def test_import_and_a_graph_without_messages_never_import_langchain_core():
    # Importing langchain-core costs ~130 ms: the choice of message classes waits for
    # the first message, so `import ironloop` and a graph of plain values skip it.
    out = run_fresh(
        """
        import sys
        from typing import TypedDict

        import ironloop
        from ironloop import END, START, MemorySaver, MessagesState, StateGraph

        assert "langchain_core" not in sys.modules, "import ironloop imported langchain_core"

        class S(TypedDict):
            n: int

        g = StateGraph(S)
        g.add_node("a", lambda s: {"n": s["n"] + 1})
        g.add_edge(START, "a")
        g.add_edge("a", END)
        out = g.compile(checkpointer=MemorySaver()).invoke({"n": 1}, {"configurable": {"thread_id": "t"}})
        assert out == {"n": 2}, out
        assert "langchain_core" not in sys.modules, "a graph without messages imported it"
        print("ok")
        """
    )
    assert out == "ok"


def test_the_first_message_the_engine_makes_has_the_chosen_class():
    # No Python code reads a message class before the engine makes a message (the
    # ToolNode's ToolMessage, from dict input): the engine asks for the choice itself,
    # so the result is langchain-core's class when it is installed, and
    # `ironloop.messages` names that same class afterwards.
    out = run_fresh(
        """
        import importlib.util, sys
        from ironloop import ToolNode, tool

        @tool
        def add(a: int, b: int) -> int:
            "Adds."
            return a + b

        call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}
        ai = {"role": "assistant", "content": "", "tool_calls": [call]}
        [msg] = ToolNode([add]).invoke({"messages": [ai]})["messages"]
        import ironloop.messages as m

        installed = importlib.util.find_spec("langchain_core") is not None
        assert m.USES_LANGCHAIN is installed
        assert type(msg) is m.ToolMessage, type(msg)
        assert msg.content == "3"
        print(type(msg).__module__.split(".")[0])
        """
    )
    import importlib.util

    expected = "langchain_core" if importlib.util.find_spec("langchain_core") else "ironloop"
    assert out == expected


def test_messages_module_examples():
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module("ironloop.messages"))
    assert result.failed == 0
    assert result.attempted > 0


def test_bare_import_loads_a_bounded_set_of_modules():
    # `import ironloop` loads the native engine and the few modules that wire it up;
    # the graph, agent, model and store machinery (and the stdlib modules they need)
    # wait until a name of theirs is first read. A heavy module coming back into a
    # bare import fails here, and so does the package's share growing unnoticed.
    out = run_fresh(
        """
        import json, sys
        before = set(sys.modules)
        import ironloop
        loaded = sorted(set(sys.modules) - before)
        print(json.dumps(loaded))
        """
    )
    import json

    loaded = json.loads(out.splitlines()[-1])
    heavy = {
        "asyncio",
        "langchain_core",
        "pydantic",
        "sqlite3",
        "typing_extensions",
        "ironloop.graph",
        "ironloop._agent",
        "ironloop._compiled",
        "ironloop.models",
        "ironloop.store",
        "ironloop.prebuilt",
    }
    assert not heavy & set(loaded), sorted(heavy & set(loaded))
    ours = [m for m in loaded if m.split(".")[0] == "ironloop"]
    assert len(ours) <= MAX_IRONLOOP_MODULES, ours
    assert len(loaded) <= MAX_MODULES, loaded


def test_public_names_still_resolve_after_a_bare_import():
    # Every name of `__all__` and every public submodule is reachable as an attribute
    # of the package, and `from ironloop import *` still binds them all.
    out = run_fresh(
        """
        import ironloop
        from ironloop.graph import StateGraph
        from ironloop._agent import create_react_agent

        assert ironloop.StateGraph is StateGraph
        assert ironloop.create_react_agent is create_react_agent
        assert ironloop.tools.workspace is ironloop.sources.workspace.workspace
        for name in ironloop.__all__:
            assert getattr(ironloop, name) is not None, name
        assert set(ironloop.__all__) <= set(dir(ironloop))
        ns = {}
        exec("from ironloop import *", ns)
        assert set(ironloop.__all__) <= set(ns)
        try:
            ironloop.no_such_name
        except AttributeError as e:
            assert "no_such_name" in str(e)
        else:
            raise AssertionError("an unknown name resolved")
        print("ok")
        """
    )
    assert out == "ok"
