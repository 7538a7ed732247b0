"""Which of LangGraph's and LangChain's own tests are their public API: the written rules.

A user ports a LangGraph or LangChain 1.x agent program by changing its imports; the
tests that show what such a program may rely on are the ones that use public names
only. The rules, in order:

1. **Files**: LangGraph's files about graphs, the functional API, prebuilt agents and
   tool nodes, interrupts and time travel, runtime, retries, state schemas, savers
   and stores, the v3 stream-events protocol and its transformers (``FILES``). Left
   out whole: channel and Pregel internals, remote graphs (a server), LangSmith
   tracing, serializer migrations, and DeltaChannel (an internal channel type). The
   stream protocol's private modules (``langgraph.stream._mux``...) are internals
   by rule 2.
   LangChain's ``tests/unit_tests/agents/``: ``create_agent``, every middleware test
   (core and built-in), the typing tests, structured output, system messages, state
   schemas, injected runtime, names, streaming and the v3 stream transformers. Left
   out whole: the files that call OpenAI's API (``*_spec.py``,
   ``test_response_format_integration.py``: a service and a key) and LangSmith
   tracing (``test_tracing.py``). Of the savers' sdists, the store tests
   (``langgraph-checkpoint``'s, ``langgraph-checkpoint-sqlite``'s and
   ``langgraph-checkpoint-postgres``'s).
2. **Internals**: a test whose body names something its file imports from a LangGraph
   or LangChain module that is not public (a path component starting with ``_``, or
   ``INTERNAL_PREFIXES``), or a private (``_``-prefixed) name of a public one, is left
   out.
3. **Snapshot files**: a test comparing against syrupy snapshot files (``snapshot``
   fixture) is left out: the files pin LangGraph's drawing and debug text.
4. **Private attributes** (LangChain's suite): a test that reads or calls a private
   attribute of an object (``middleware._create_summary(...)``, ``x._tool_filter``: a
   ``_``-prefixed, non-dunder attribute) tests the implementation, not the API, and is
   left out. (The test module's own ``_helpers`` are plain names, not attributes.)
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
        # The v3 stream-events protocol (``ironloop.stream``).
        "test_stream_events_v3.py",
        "test_stream_events_v3_e2e.py",
        "test_stream_events_v3_kwarg_forwarding.py",
        "test_pregel_stream_events_v3.py",
        "test_stream_lifecycle_transformer.py",
        "test_stream_messages_transformer.py",
        "test_stream_subgraph_transformer.py",
        "test_stream_data_transformers.py",
        "test_stream_before_builtins.py",
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
    "langchain": tuple(
        f"unit_tests/agents/{f}"
        for f in (
            "test_agent_name.py",
            "test_agent_streaming.py",
            "test_create_agent_tool_validation.py",
            "test_fetch_last_ai_and_tool_messages.py",
            "test_injected_runtime_create_agent.py",
            "test_invalid_tool_calls.py",
            "test_kwargs_tool_runtime_injection.py",
            "test_response_format.py",
            "test_responses.py",
            "test_return_direct_graph.py",
            "test_state_schema.py",
            "test_system_message.py",
            "test_subagent_streaming.py",
            "test_subagent_transformer.py",
            "middleware_typing/test_middleware_backwards_compat.py",
            "middleware_typing/test_middleware_type_errors.py",
            "middleware_typing/test_middleware_typing.py",
            "middleware/core/test_composition.py",
            "middleware/core/test_decorators.py",
            "middleware/core/test_diagram.py",
            "middleware/core/test_dynamic_tools.py",
            "middleware/core/test_framework.py",
            "middleware/core/test_internal_call_transformer.py",
            "middleware/core/test_overrides.py",
            "middleware/core/test_sync_async_wrappers.py",
            "middleware/core/test_tools.py",
            "middleware/core/test_transformers.py",
            "middleware/core/test_wrap_model_call.py",
            "middleware/core/test_wrap_model_call_state_update.py",
            "middleware/core/test_wrap_tool_call.py",
            "middleware/implementations/test_auto_mode.py",
            "middleware/implementations/test_context_editing.py",
            "middleware/implementations/test_file_search.py",
            "middleware/implementations/test_human_in_the_loop.py",
            "middleware/implementations/test_model_call_limit.py",
            "middleware/implementations/test_model_fallback.py",
            "middleware/implementations/test_model_refusal.py",
            "middleware/implementations/test_model_retry.py",
            "middleware/implementations/test_model_router.py",
            "middleware/implementations/test_pii.py",
            "middleware/implementations/test_provider_tool_search.py",
            "middleware/implementations/test_shell_execution_policies.py",
            "middleware/implementations/test_shell_tool.py",
            "middleware/implementations/test_structured_output_retry.py",
            "middleware/implementations/test_summarization.py",
            "middleware/implementations/test_todo.py",
            "middleware/implementations/test_tool_call_limit.py",
            "middleware/implementations/test_tool_emulator.py",
            "middleware/implementations/test_tool_error.py",
            "middleware/implementations/test_tool_retry.py",
            "middleware/implementations/test_tool_selection.py",
        )
    ),
    # The stores' own suites (savers are covered elsewhere: these files only).
    "langgraph-checkpoint": ("test_store.py",),
    "langgraph-checkpoint-sqlite": ("test_store.py", "test_async_store.py", "test_ttl.py"),
    "langgraph-checkpoint-postgres": ("test_store.py", "test_async_store.py"),
    # LangGraph's ecosystem: packages built on LangGraph, installed unmodified beside
    # ironloop (requirements-dev.txt), their ``langgraph`` imports answered by the shim.
    "langgraph-supervisor": (
        "test_agent_name.py",
        "test_supervisor.py",
        "test_supervisor_functional_api.py",
    ),
    "langgraph-swarm": ("test_import.py", "test_swarm.py"),
}

#: The packages whose modules the internals rule reads (``langchain`` is LangChain
#: 1.x's agents package; ``langchain_core`` stays real and is not judged).
PACKAGES = ("langgraph", "langgraph_sdk", "langchain")

#: Public-looking LangGraph modules that hold internals.
INTERNAL_PREFIXES = (
    "langgraph.channels",
    "langgraph.checkpoint.serde",
    "langgraph.pregel.debug",
    "langgraph.pregel.protocol",
    "langgraph.pregel.remote",
    "langgraph.pregel.main",
    "langgraph.pregel.types",
    "langgraph_sdk",
)


def is_internal(module: str) -> bool:
    if module.split(".", 1)[0] not in PACKAGES:
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


def excluded(
    nodeid: str,
    used: set[str],
    internal: set[str],
    fixtures: list[str],
    attributes: set[str] = frozenset(),  # type: ignore[assignment]
) -> str | None:
    """Why a collected test is outside the selection, or ``None`` when it is in.
    ``attributes``: the attribute names the test's body reads."""
    file = nodeid.split("::", 1)[0].removeprefix("tests/")
    if not any(file in files for files in FILES.values()):
        return "file not selected"
    hit = sorted(used & internal)
    if hit:
        return f"uses LangGraph internals: {', '.join(hit)}"
    if "snapshot" in fixtures:
        return "compares against snapshot files"
    if file in FILES["langchain"]:
        private = sorted(a for a in attributes if a.startswith("_") and not a.endswith("__"))
        if private:
            return f"uses private attributes: {', '.join(private)}"
    return None
