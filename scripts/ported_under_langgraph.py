"""Runs the programs in tests/python/ported/ under LangGraph instead of ironloop.

Each ported program differs from its LangGraph original only in its imports; this
script undoes that change by putting stand-in ``ironloop`` modules on ``sys.modules``
that re-export LangGraph's objects under ironloop's names, then calls every ``test_*``
function of the given files (sync or async, no fixtures). A pass means the expected
values recorded in the test are what LangGraph itself gives.

Usage, with a Python that has langgraph and langchain-core (not ironloop) installed:
    python scripts/ported_under_langgraph.py tests/python/ported/*.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import sys
import traceback
import types
from pathlib import Path


def _module(name: str, **names: object) -> None:
    mod = types.ModuleType(name)
    mod.__dict__.update(names)
    sys.modules[name] = mod


def install_langgraph_as_ironloop() -> None:
    """``ironloop``, ``ironloop.graph``, ``.types``, ``.prebuilt``, ``.runtime`` as
    LangGraph's equivalents (the names the ported programs import)."""
    import langgraph.config as config
    import langgraph.graph as graph
    import langgraph.graph.message as message
    import langgraph.prebuilt as prebuilt
    import langgraph.runtime as runtime
    import langgraph.types as lg_types
    from langgraph.checkpoint.memory import InMemorySaver

    graph_names = {
        "START": graph.START,
        "END": graph.END,
        "StateGraph": graph.StateGraph,
        "MessagesState": graph.MessagesState,
        "add_messages": message.add_messages,
        "REMOVE_ALL_MESSAGES": message.REMOVE_ALL_MESSAGES,
        "get_stream_writer": config.get_stream_writer,
        "interrupt": lg_types.interrupt,
        "push_message": message.push_message,
    }
    _module("ironloop.graph", **graph_names)
    _module("ironloop.types", **{k: getattr(lg_types, k) for k in dir(lg_types)})
    _module("ironloop.prebuilt", **{k: getattr(prebuilt, k) for k in dir(prebuilt)})
    _module("ironloop.runtime", Runtime=runtime.Runtime, get_runtime=runtime.get_runtime)
    _module(
        "ironloop",
        MemorySaver=InMemorySaver,
        Runtime=runtime.Runtime,
        get_runtime=runtime.get_runtime,
        create_react_agent=prebuilt.create_react_agent,
        **graph_names,
    )


def run_file(path: Path) -> int:
    spec = importlib.util.spec_from_file_location(f"ported_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    failures = 0
    for name, fn in list(vars(mod).items()):
        if not (name.startswith("test_") and inspect.isfunction(fn)):
            continue
        try:
            if inspect.iscoroutinefunction(fn):
                asyncio.run(fn())
            else:
                fn()
            print(f"PASS {path.name}::{name}")
        except Exception:
            failures += 1
            print(f"FAIL {path.name}::{name}")
            traceback.print_exc()
    return failures


def main() -> int:
    install_langgraph_as_ironloop()
    failures = sum(run_file(Path(arg)) for arg in sys.argv[1:])
    print(f"{failures} failed under LangGraph")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
