"""Assistants: a graph of ``langgraph.json`` with a config, a context, metadata and a
name, versioned. Each graph has one made at start (its id derived from the graph id,
as LangGraph derives it; ``metadata.created_by`` is ``"system"``); more are created,
updated (a new version each time), pointed at an earlier version, and deleted over the
API. Kept in the server's records beside the threads and runs."""

from __future__ import annotations

import json
from typing import Any

from .db import Records, now
from .errors import ApiError
from .graphs import ServedGraph, assistant_id_for

_SCHEMA = """
CREATE TABLE IF NOT EXISTS assistants (
    assistant_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS assistant_versions (
    assistant_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    graph_id TEXT NOT NULL,
    config TEXT NOT NULL,
    context TEXT NOT NULL,
    metadata TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (assistant_id, version)
);
"""
_LATEST = (
    "SELECT a.assistant_id, a.version, a.created_at, a.updated_at, v.graph_id, v.config,"
    " v.context, v.metadata, v.name, v.description FROM assistants a JOIN assistant_versions v"
    " ON v.assistant_id = a.assistant_id AND v.version = a.version"
)
SORT_KEYS = ("assistant_id", "graph_id", "name", "created_at", "updated_at")


def _json(row: Any, *, latest: bool) -> dict[str, Any]:
    out = {
        "assistant_id": row["assistant_id"],
        "graph_id": row["graph_id"],
        "config": json.loads(row["config"]),
        "context": json.loads(row["context"]),
        "metadata": json.loads(row["metadata"]),
        "name": row["name"],
        "description": row["description"],
        "version": int(row["version"]),
        "created_at": row["created_at"],
    }
    if latest:
        out["updated_at"] = row["updated_at"]
    return out


class Assistants:
    """The assistants table and the graphs they run. ``cached``: this process is the
    only writer (SQLite records), so what ``resolve`` reads per run is kept in memory."""

    def __init__(self, records: Records, graphs: dict[str, ServedGraph], *, cached: bool) -> None:
        self.records, self.graphs = records, graphs
        self._cache: dict[str, dict[str, Any]] | None = {} if cached else None
        records._script(_SCHEMA)
        for graph in graphs.values():  # LangGraph makes them at start too
            self.put(assistant_id_for(graph.graph_id), graph.graph_id, config={}, context={},
                     metadata={"created_by": "system"}, name=graph.graph_id,
                     description=graph.description, if_exists="do_nothing")  # fmt: skip

    def _forget(self) -> None:
        if self._cache is not None:
            self._cache.clear()

    def graph(self, graph_id: str) -> ServedGraph:
        graph = self.graphs.get(graph_id)
        if graph is None:
            raise ApiError(
                404, f"Graph {graph_id!r} not found: langgraph.json serves "
                f"{', '.join(self.graphs)}"
            )  # fmt: skip
        return graph

    def get(self, assistant_id: str) -> dict[str, Any] | None:
        """The assistant at its latest version; a graph id names the graph's own one."""
        if assistant_id in self.graphs:
            assistant_id = assistant_id_for(assistant_id)
        if self._cache is not None and assistant_id in self._cache:
            return self._cache[assistant_id]
        rows = self.records._exec(_LATEST + " WHERE a.assistant_id = ?", (assistant_id,))
        found = _json(rows[0], latest=True) if rows else None
        if found is not None and self._cache is not None:
            self._cache[assistant_id] = found
        return found

    def resolve(self, assistant_id: str) -> tuple[ServedGraph, dict[str, Any]]:
        """The graph an assistant id (or a graph id, as LangGraph accepts) runs, and the
        assistant (its config and context are a run's defaults)."""
        found = self.get(assistant_id)
        if found is None or found["graph_id"] not in self.graphs:
            raise ApiError(
                404 if len(assistant_id) == 36 else 422,
                f"Invalid assistant: {assistant_id!r}. Must be either an assistant UUID or one "
                f"of the registered graphs: {', '.join(self.graphs)}",
            )
        return self.graphs[found["graph_id"]], found

    def put(self, assistant_id: str, graph_id: str, *, config: dict[str, Any],
            context: dict[str, Any], metadata: dict[str, Any], name: str,
            description: str | None, if_exists: str) -> dict[str, Any]:  # fmt: skip
        """Creates an assistant at version 1; an existing id is a 409 unless
        ``if_exists`` is ``"do_nothing"`` (the existing one is returned)."""
        self.graph(graph_id)
        t = now()
        added = self.records._count(
            "INSERT INTO assistants (assistant_id, version, created_at, updated_at)"
            " VALUES (?,?,?,?) ON CONFLICT (assistant_id) DO NOTHING",
            (assistant_id, 1, t, t),
        )
        if added:
            self._version(assistant_id, 1, graph_id, config, context, metadata, name,
                          description, t)  # fmt: skip
        elif if_exists != "do_nothing":
            raise ApiError(409, f"Assistant with ID {assistant_id} already exists")
        self._forget()
        found = self.get(assistant_id)
        assert found is not None
        return found

    def _version(self, assistant_id: str, version: int, graph_id: str, config: dict[str, Any],
                 context: dict[str, Any], metadata: dict[str, Any], name: str,
                 description: str | None, t: str) -> None:  # fmt: skip
        self.records._exec(
            "INSERT INTO assistant_versions (assistant_id, version, graph_id, config, context,"
            " metadata, name, description, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (assistant_id, version, graph_id, json.dumps(config), json.dumps(context),
             json.dumps(metadata), name, description, t),
        )  # fmt: skip

    def update(self, current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
        """A new version of ``current`` with ``changes`` (graph_id, config, context, name,
        description; metadata merged into the current one), made the latest."""
        aid = current["assistant_id"]
        graph_id = changes.get("graph_id") or current["graph_id"]
        self.graph(graph_id)
        rows = self.records._exec(
            "SELECT MAX(version) AS v FROM assistant_versions WHERE assistant_id = ?", (aid,)
        )
        version, t = int(rows[0]["v"] or 0) + 1, now()
        self._version(
            aid, version, graph_id,
            changes["config"] if changes.get("config") is not None else current["config"],
            changes["context"] if changes.get("context") is not None else current["context"],
            {**current["metadata"], **(changes.get("metadata") or {})},
            changes.get("name") or current["name"],
            changes.get("description") or current["description"], t,
        )  # fmt: skip
        self.records._exec(
            "UPDATE assistants SET version = ?, updated_at = ? WHERE assistant_id = ?",
            (version, t, aid),
        )
        self._forget()
        found = self.get(aid)
        assert found is not None
        return found

    def set_latest(self, assistant_id: str, version: int) -> dict[str, Any]:
        rows = self.records._exec(
            "SELECT 1 FROM assistant_versions WHERE assistant_id = ? AND version = ?",
            (assistant_id, version),
        )
        if not rows:
            raise ApiError(404, f"Assistant {assistant_id} has no version {version}")
        self.records._exec(
            "UPDATE assistants SET version = ?, updated_at = ? WHERE assistant_id = ?",
            (version, now(), assistant_id),
        )
        self._forget()
        found = self.get(assistant_id)
        assert found is not None
        return found

    def versions(self, assistant_id: str) -> list[dict[str, Any]]:
        """Every version of the assistant, newest first."""
        rows = self.records._exec(
            "SELECT * FROM assistant_versions WHERE assistant_id = ? ORDER BY version DESC",
            (assistant_id,),
        )
        return [_json(r, latest=False) for r in rows]

    def delete(self, assistant_id: str) -> None:
        self.records._exec("DELETE FROM assistant_versions WHERE assistant_id = ?", (assistant_id,))
        self.records._exec("DELETE FROM assistants WHERE assistant_id = ?", (assistant_id,))
        self._forget()

    def all(self, sort_by: str = "created_at", descending: bool = True) -> list[dict[str, Any]]:
        order = "DESC" if descending else "ASC"
        column = "v.graph_id" if sort_by == "graph_id" else "v.name" if sort_by == "name" else (
            f"a.{sort_by}")  # fmt: skip
        rows = self.records._exec(f"{_LATEST} ORDER BY {column} {order}, a.assistant_id {order}")
        return [_json(r, latest=True) for r in rows]
