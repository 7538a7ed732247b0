"""LangChain's ``astream_events`` v2 events, made from what the engine streams: the
run's ``on_chain_start`` / ``on_chain_stream`` (its ``updates``) / ``on_chain_end``,
each task's ``on_chain_start`` / ``on_chain_end`` (from ``tasks``; a failed task's has
no end, as in LangChain's), a model's tokens as
``on_chat_model_stream`` (from ``messages``). Used by ``astream_events`` and by the
server's ``events`` stream mode."""

from __future__ import annotations

import warnings
from typing import Any

#: The engine's stream modes the view is made from.
SOURCES = ("tasks", "messages", "values", "updates")


class EventsView:
    """Turns one run's stream items into ``astream_events`` v2 events."""

    def __init__(
        self, run_id: str, name: str, metadata: dict[str, Any], version: str = "v2"
    ) -> None:
        self.run_id, self.name, self.metadata = run_id, name, metadata
        #: ``"v1"``: LangChain's deprecated events, whose ``parent_ids`` are empty and
        #: whose run output is its last streamed chunk (the last update).
        self.v1 = version == "v1"
        if self.v1:
            warnings.warn(
                "astream_events version='v1' is deprecated. Use version='v2' or astream instead.",
                DeprecationWarning,
                stacklevel=3,
            )
        self.output: Any = None
        self.last_update: Any = None
        #: Each running task's input, shown again in its ``on_chain_end`` (LangChain's).
        self.inputs: dict[str, Any] = {}
        #: The run's ``on_chain_stream`` events not shown yet: the engine streams a
        #: step's updates before its tasks' results, LangChain shows them after.
        self.held: list[dict[str, Any]] = []

    def _event(self, event: str, name: str, run_id: str, data: dict[str, Any],
               parents: list[str], metadata: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
        return {
            "event": event,
            "name": name,
            "run_id": run_id,
            "data": data,
            "tags": [],
            "metadata": {**self.metadata, **(metadata or {})},
            "parent_ids": [] if self.v1 else parents,
        }

    def start(self, payload: Any) -> dict[str, Any]:
        return self._event("on_chain_start", self.name, self.run_id, {"input": payload}, [])

    def on(self, mode: str, chunk: Any, ns: tuple[str, ...]) -> list[dict[str, Any]]:
        if mode == "values" and not ns:
            self.output = chunk
        elif mode == "updates" and not ns:
            self.last_update = chunk
            self.held.append(
                self._event("on_chain_stream", self.name, self.run_id, {"chunk": chunk}, [])
            )
        elif mode == "tasks" and isinstance(chunk, dict):
            return self._task(chunk, ns)
        elif mode == "messages":
            message, meta = chunk
            if type(message).__name__.endswith("Chunk"):
                meta = meta if isinstance(meta, dict) else {}
                name = str(meta.get("ls_model_name") or meta.get("langgraph_node") or "model")
                return [self._event("on_chat_model_stream", name, self.run_id,
                                    {"chunk": message}, [self.run_id], meta)]  # fmt: skip
        return []

    def _task(self, chunk: dict[str, Any], ns: tuple[str, ...]) -> list[dict[str, Any]]:
        """A task's start, or its output (``on_chain_stream``) and end, followed by the
        run's updates held until this task's end."""
        parents = [self.run_id]
        name, task_id = chunk["name"], chunk["id"]
        node_meta = {"langgraph_node": name, "checkpoint_ns": "|".join(ns)}
        if "input" in chunk:
            self.inputs[task_id] = chunk["input"]
            data = {"input": chunk["input"]}
            return [self._event("on_chain_start", name, task_id, data, parents, node_meta)]
        if chunk.get("error"):  # LangChain's v2 events show no end of a failed run
            self.inputs.pop(task_id, None)
            return []
        result = chunk.get("result")
        if isinstance(result, dict) and result.keys() == {"__return__"}:
            result = result["__return__"]  # a `@task` call's: what it returned
        data = {"chunk": result}
        out = [self._event("on_chain_stream", name, task_id, data, parents, node_meta)]
        data = {"output": result}
        if task_id in self.inputs:
            data["input"] = self.inputs.pop(task_id)
        out.append(self._event("on_chain_end", name, task_id, data, parents, node_meta))
        if not ns:
            shown = [e for e in self.held if name in (e["data"]["chunk"] or {})]
            self.held = [e for e in self.held if e not in shown]
            out.extend(shown)
        return out

    def end(self) -> list[dict[str, Any]]:
        """The run's last events: any updates still held, then its ``on_chain_end``."""
        output = self.last_update if self.v1 else self.output
        last = self._event("on_chain_end", self.name, self.run_id, {"output": output}, [])
        held, self.held = self.held, []
        return [*held, last]
