"""A LangGraph project's ``langgraph.json``: which graphs to serve, the environment,
the folders to import from and the custom HTTP app, read as ``langgraph dev`` reads it."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ProjectError(Exception):
    """``langgraph.json`` or an object it names cannot be used; the message says why."""


@dataclass
class Project:
    """What ``langgraph.json`` asks for, with paths resolved against its folder."""

    root: Path
    graphs: dict[str, str]
    descriptions: dict[str, str | None] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    dependencies: list[str] = field(default_factory=list)
    http: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, config_path: str | os.PathLike[str]) -> Project:
        path = Path(config_path).resolve()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ProjectError(f"cannot read {path}: {e.strerror}") from None
        except json.JSONDecodeError as e:
            raise ProjectError(f"{path} is not valid JSON: {e}") from None
        if not isinstance(raw, dict):
            raise ProjectError(f"{path} must hold a JSON object")
        graphs_raw = raw.get("graphs")
        if not isinstance(graphs_raw, dict) or not graphs_raw:
            raise ProjectError(f'{path} needs "graphs": {{"name": "./file.py:variable"}}')
        graphs: dict[str, str] = {}
        descriptions: dict[str, str | None] = {}
        for name, spec in graphs_raw.items():
            if isinstance(spec, dict):
                descriptions[name] = spec.get("description")
                spec = spec.get("path")
            if not isinstance(spec, str) or ":" not in spec:
                raise ProjectError(
                    f'graph {name!r} in {path}: expected "./file.py:variable" or '
                    f'"package.module:variable", got {spec!r}'
                )
            graphs[name] = spec
        http = raw.get("http") or {}
        if not isinstance(http, dict):
            raise ProjectError(f'"http" in {path} must be an object')
        deps = raw.get("dependencies") or []
        if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
            raise ProjectError(f'"dependencies" in {path} must be a list of strings')
        return cls(
            root=path.parent,
            graphs=graphs,
            descriptions=descriptions,
            env=_read_env(raw.get("env"), path.parent),
            dependencies=deps,
            http=http,
            raw=raw,
        )

    def prepare(self) -> None:
        """Sets the environment (variables already set win, as with ``langgraph dev``)
        and makes the project's local dependencies importable."""
        for key, value in self.env.items():
            os.environ.setdefault(key, value)
        for dep in [".", *self.dependencies]:
            if dep.startswith((".", "/")):
                folder = str((self.root / dep).resolve())
                if folder not in sys.path:
                    sys.path.insert(0, folder)

    def import_object(self, spec: str, what: str) -> Any:
        """The object ``spec`` names: ``./file.py:variable`` (relative to the project)
        or ``package.module:variable``."""
        target, _, attr = spec.rpartition(":")
        try:
            if target.endswith(".py") or "/" in target:
                file = (self.root / target).resolve()
                if not file.is_file():
                    raise ProjectError(f"{what}: no file {file}")
                name = "_ironloop_project_" + "_".join(
                    file.relative_to(self.root).with_suffix("").parts
                )
                module = sys.modules.get(name)
                if module is None:
                    mod_spec = importlib.util.spec_from_file_location(name, file)
                    assert mod_spec is not None and mod_spec.loader is not None
                    module = importlib.util.module_from_spec(mod_spec)
                    sys.modules[name] = module
                    mod_spec.loader.exec_module(module)
            else:
                module = importlib.import_module(target)
        except ProjectError:
            raise
        except Exception as e:
            raise ProjectError(f"{what}: importing {target} failed: {type(e).__name__}: {e}") from e
        obj = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise ProjectError(f"{what}: {target} has no {attr!r}")
            obj = getattr(obj, part)
        return obj


def _read_env(env: Any, root: Path) -> dict[str, str]:
    if env is None:
        return {}
    if isinstance(env, dict):
        return {str(k): str(v) for k, v in env.items()}
    if isinstance(env, str):
        file = root / env
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as e:
            raise ProjectError(f'"env" file {file}: {e.strerror}') from None
        out: dict[str, str] = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.removeprefix("export ").partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            out[key.strip()] = value
        return out
    raise ProjectError('"env" must be an object or the path of a .env file')
