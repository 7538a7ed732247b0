"""The ``Graph`` ``get_graph()`` returns: langchain-core's, whose ``to_json()`` shows
START and function nodes as LangGraph's does. Imported only when a graph is drawn
(langchain-core is optional)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables.graph import Graph

from ironloop._constants import START
from ironloop._node_spec import NodeRunnable

#: How LangGraph's ``to_json()`` names the runnable of a function node and of START
#: (its ``RunnableCallable``): the JSON its tools (LangGraph Studio, the server's
#: ``/assistants/{id}/graph``) read.
FUNCTION_NODE_ID = ("langgraph", "_internal", "_runnable", "RunnableCallable")


class DrawnGraph(Graph):
    """langchain-core's ``Graph`` whose ``to_json()`` shows START and function nodes as
    LangGraph's does (a runnable, not data of an ``"unknown"`` type)."""

    def to_json(self, *, with_schemas: bool = False) -> dict[str, list[dict[str, Any]]]:
        out = super().to_json(with_schemas=with_schemas)
        for entry, node in zip(out["nodes"], self.nodes.values(), strict=True):
            if node.id == START or isinstance(node.data, NodeRunnable):
                entry["type"] = "runnable"
                entry["data"] = {"id": list(FUNCTION_NODE_ID), "name": node.id}
        return out
