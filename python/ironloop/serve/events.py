"""LangGraph's ``events`` stream mode (``astream_events`` v2's shape), made from what
the engine streams: the run's and each task's ``on_chain_start`` / ``on_chain_end``
(from ``tasks``), a model's tokens as ``on_chat_model_stream`` (from ``messages``)."""

from __future__ import annotations

from typing import Any

#: The engine's stream modes the view is made from.
SOURCES = ("tasks", "messages", "values")


class EventsView:
    def __init__(self, run_id: str, name: str, metadata: dict[str, Any]) -> None:
        self.run_id, self.name, self.metadata = run_id, name, metadata
        self.output: Any = None

    def _event(self, event: str, name: str, run_id: str, data: dict[str, Any],
               parents: list[str], metadata: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
        return {
            "event": event,
            "name": name,
            "run_id": run_id,
            "data": data,
            "tags": [],
            "metadata": {**self.metadata, **(metadata or {})},
            "parent_ids": parents,
        }

    def start(self, payload: Any) -> dict[str, Any]:
        return self._event("on_chain_start", self.name, self.run_id, {"input": payload}, [])

    def on(self, mode: str, chunk: Any, ns: tuple[str, ...]) -> list[dict[str, Any]]:
        parents = [self.run_id]
        if mode == "values" and not ns:
            self.output = chunk
        elif mode == "tasks" and isinstance(chunk, dict):
            node_meta = {"langgraph_node": chunk.get("name"), "checkpoint_ns": "|".join(ns)}
            if "input" in chunk:
                data = {"input": chunk["input"]}
                return [self._event("on_chain_start", chunk["name"], chunk["id"], data,
                                    parents, node_meta)]  # fmt: skip
            data = {"output": chunk.get("result")}
            if chunk.get("error"):
                data["error"] = chunk["error"]
            return [self._event("on_chain_end", chunk["name"], chunk["id"], data, parents,
                                node_meta)]  # fmt: skip
        elif mode == "messages":
            message, meta = chunk
            if type(message).__name__.endswith("Chunk"):
                meta = meta if isinstance(meta, dict) else {}
                name = str(meta.get("ls_model_name") or meta.get("langgraph_node") or "model")
                return [self._event("on_chat_model_stream", name, self.run_id,
                                    {"chunk": message}, parents, meta)]  # fmt: skip
        return []

    def end(self) -> dict[str, Any]:
        return self._event("on_chain_end", self.name, self.run_id, {"output": self.output}, [])
