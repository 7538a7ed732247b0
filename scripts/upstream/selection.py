"""Which of LangGraph's own tests are its public API: the written rules.

A user ports a LangGraph program by changing its imports; the tests that show what
such a program may rely on are the ones that use LangGraph's public names only. The
rules, in order:

1. **Files**: the suite's files about graphs, the functional API, prebuilt agents and
   tool nodes, interrupts and time travel, runtime, retries, state schemas, savers
   and stores (``FILES``). Left out whole: channel and Pregel internals, the v3
   stream-events protocol and its transformers, remote graphs (a server), LangSmith
   tracing, serializer migrations, and DeltaChannel (an internal channel type). Of
   the savers' sdists, the store tests (``langgraph-checkpoint``'s and
   ``langgraph-checkpoint-sqlite``'s).
2. **Internals**: a test whose body names something its file imports from a LangGraph
   module that is not public (a path component starting with ``_``, or
   ``INTERNAL_PREFIXES``), or a private (``_``-prefixed) name of a public one, is left
   out.
3. **Snapshot files**: a test comparing against syrupy snapshot files (``snapshot``
   fixture) is left out: the files pin LangGraph's drawing and debug text.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: suite -> the test files selected (relative to the sdist's ``tests/``).
FILES: dict[str, tuple[str, ...]] = {
    "langgraph": (
        "test_pregel.py",
        "test_pregel_async.py",
        "test_time_travel.py",
        "test_time_travel_async.py",
        "test_runtime.py",
        "test_messages_state.py",
        "test_subgraph_persistence.py",
        "test_subgraph_persistence_async.py",
        "test_interruption.py",
        "test_interrupt_state.py",
        "test_strict_resume.py",
        "test_large_cases.py",
        "test_large_cases_async.py",
        "test_retry.py",
        "test_state.py",
        "test_pydantic.py",
        "test_type_checking.py",
        "test_parent_command.py",
        "test_parent_command_async.py",
        "test_managed_values.py",
        "test_stream_namespaces.py",
        "test_deprecation.py",
        "test_tool_stream_handler.py",
    ),
    "langgraph-prebuilt": (
        "test_react_agent.py",
        "test_react_agent_graph.py",
        "test_tool_node.py",
        "test_tool_node_validation_error_filtering.py",
        "test_validation_node.py",
        "test_injected_state_not_required.py",
        "test_on_tool_call.py",
        "test_tool_node_interceptor_unregistered.py",
        "test_deprecation.py",
    ),
    # The stores' own suites (savers are covered elsewhere: these files only).
    "langgraph-checkpoint": ("test_store.py",),
    "langgraph-checkpoint-sqlite": ("test_store.py", "test_async_store.py", "test_ttl.py"),
}

#: Public-looking LangGraph modules that hold internals.
INTERNAL_PREFIXES = (
    "langgraph.channels",
    "langgraph.checkpoint.serde",
    "langgraph.stream",
    "langgraph.pregel.debug",
    "langgraph.pregel.protocol",
    "langgraph.pregel.remote",
    "langgraph.pregel.main",
    "langgraph.pregel.types",
    "langgraph_sdk",
)


def is_internal(module: str) -> bool:
    if not module.startswith(("langgraph", "langgraph_sdk")):
        return False
    if any(part.startswith("_") for part in module.split(".")):
        return True
    return module.startswith(INTERNAL_PREFIXES)


def internal_names(path: str) -> set[str]:
    """The names a test file imports from LangGraph's internal modules."""
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and is_internal(node.module):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and is_internal(node.module + "._"):
            # A private name of a public module (``from langgraph.x import _helper``).
            names.update(a.asname or a.name for a in node.names if a.name.startswith("_"))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if is_internal(a.name):
                    names.add((a.asname or a.name).split(".")[0])
    return names


def excluded(nodeid: str, used: set[str], internal: set[str], fixtures: list[str]) -> str | None:
    """Why a collected test is outside the selection, or ``None`` when it is in."""
    file = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    if not any(file in files for files in FILES.values()):
        return "file not selected"
    hit = sorted(used & internal)
    if hit:
        return f"uses LangGraph internals: {', '.join(hit)}"
    if "snapshot" in fixtures:
        return "compares against snapshot files"
    return None
