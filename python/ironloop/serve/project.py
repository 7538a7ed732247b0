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

    def store_options(self) -> dict[str, Any]:
        """``"store"``'s ``index`` and ``ttl`` as the store constructors take them
        (LangGraph's shapes: ``{"dims", "embed", "fields"}`` and ``{"default_ttl"`` in
        minutes, ``"refresh_on_read", "sweep_interval_minutes"}``); an ``embed`` naming a
        file or module function (``"./embed.py:embed"``) is imported."""
        config = _section(self.raw, "store", ("index", "ttl"))
        out: dict[str, Any] = {}
        index = config.get("index")
        if index is not None:
            index = dict(_section({"index": index}, "index", ("dims", "embed", "fields")))
            if not isinstance(index.get("dims"), int) or index["dims"] <= 0:
                raise ProjectError('"store.index.dims" must be a positive integer')
            embed = index.get("embed")
            if isinstance(embed, str) and ":" in embed and embed.split(":")[0].endswith(".py"):
                index["embed"] = self.import_object(embed, '"store.index.embed"')
            out["index"] = index
        if config.get("ttl") is not None:
            ttl = _section({"ttl": config["ttl"]}, "ttl", STORE_TTL_KEYS)
            for key in ("default_ttl", "sweep_interval_minutes"):
                _positive(ttl.get(key), f"store.ttl.{key}")
            out["ttl"] = dict(ttl)
        return out

    def checkpointer_ttl(self) -> CheckpointerTTL | None:
        """``"checkpointer": {"ttl": {...}}``: threads not updated for ``default_ttl``
        minutes are swept (``strategy`` ``"delete"`` or ``"keep_latest"``) every
        ``sweep_interval_minutes`` (LangGraph's default 5)."""
        config = _section(self.raw, "checkpointer", ("ttl",))
        if config.get("ttl") is None:
            return None
        ttl = _section(config, "ttl", ("strategy", "default_ttl", "sweep_interval_minutes"))
        strategy = ttl.get("strategy", "delete")
        if strategy not in ("delete", "keep_latest"):
            raise ProjectError(
                f'"checkpointer.ttl.strategy" must be "delete" or "keep_latest", got {strategy!r}'
            )
        default = _positive(ttl.get("default_ttl"), "checkpointer.ttl.default_ttl")
        if default is None:
            return None  # no default: nothing expires
        every = _positive(
            ttl.get("sweep_interval_minutes"), "checkpointer.ttl.sweep_interval_minutes"
        )
        return CheckpointerTTL(default * 60.0, strategy, (every or 5.0) * 60.0)

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


#: The keys of LangGraph's store TTL configuration.
STORE_TTL_KEYS = ("default_ttl", "refresh_on_read", "sweep_interval_minutes")


@dataclass(frozen=True)
class CheckpointerTTL:
    """How the server expires threads: older than ``ttl`` seconds, pruned with
    ``strategy``, looked for every ``every`` seconds."""

    ttl: float
    strategy: str
    every: float


def _section(raw: dict[str, Any], key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    """``raw[key]``, an object with only ``allowed`` keys (a misspelt key is an error,
    not a setting silently ignored)."""
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProjectError(f'"{key}" in langgraph.json must be an object')
    unknown = sorted(set(value) - set(allowed))
    if "path" in unknown:
        raise ProjectError(
            f'"{key}.path" in langgraph.json: ironloop serve keeps threads and the store in '
            "its own SQLite database or the --postgres one; a custom implementation "
            "cannot be plugged in (remove the key)"
        )
    if unknown:
        raise ProjectError(
            f'"{key}" in langgraph.json has unknown key(s) {", ".join(unknown)} '
            f"(known: {', '.join(allowed)})"
        )
    return value


def _positive(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ProjectError(f'"{what}" must be a positive number of minutes, got {value!r}')
    return float(value)


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
