"""Import LangGraph's names from ironloop: the change a user makes when porting.

``install()`` puts a finder first on ``sys.meta_path`` that answers every import of
``langgraph`` / ``langgraph.*`` with a module whose names are looked up in the ironloop
modules the table below gives for it (with LangGraph's spelling of a few names, such
as ``InMemorySaver``). Nothing else is changed: langchain-core stays real, and a
LangGraph module or name ironloop has no counterpart for fails to import with an error
naming it, so a program that needs it is reported, not silently run on something else.

Used by the runners of LangGraph's own benchmarks (``benches/python/langgraph_suite.py``)
and test suite: their code is fetched from PyPI and run unchanged, this shim standing in
for the import lines a user would edit.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

#: LangGraph module -> the ironloop modules whose names it has (looked up in order).
MODULES: dict[str, tuple[str, ...]] = {
    "langgraph": ("ironloop",),
    "langgraph.constants": ("ironloop._constants",),
    "langgraph.graph": ("ironloop.graph",),
    "langgraph.graph.state": ("ironloop.graph",),
    "langgraph.graph.message": ("ironloop.graph",),
    "langgraph.types": ("ironloop.types",),
    "langgraph.errors": ("ironloop.errors",),
    "langgraph.warnings": ("ironloop.warnings",),
    "langgraph.runtime": ("ironloop.runtime",),
    "langgraph.config": ("ironloop.graph", "ironloop.runtime"),
    "langgraph.pregel": ("ironloop.graph",),
    "langgraph.prebuilt": ("ironloop.prebuilt",),
    "langgraph.prebuilt.chat_agent_executor": ("ironloop.prebuilt.chat_agent_executor",),
    "langgraph.prebuilt.tool_node": ("ironloop.prebuilt.tool_node",),
    "langgraph.checkpoint": ("ironloop.checkpoint",),
    "langgraph.checkpoint.base": ("ironloop.checkpoint",),
    "langgraph.checkpoint.memory": ("ironloop.checkpoint",),
    "langgraph.checkpoint.sqlite": ("ironloop.checkpoint",),
    "langgraph.checkpoint.postgres": ("ironloop.checkpoint",),
    "langgraph.store": ("ironloop.store",),
    "langgraph.store.base": ("ironloop.store",),
    "langgraph.store.memory": ("ironloop.store",),
}

#: (LangGraph module, name) -> the ironloop name it is spelt as.
RENAMES: dict[tuple[str, str], str] = {
    ("langgraph.pregel", "Pregel"): "CompiledStateGraph",
}


def _runnable_callable(
    func: Callable[..., Any], afunc: Callable[..., Any] | None = None, *args: Any, **kwargs: Any
) -> Callable[..., Any]:
    """LangGraph's internal ``RunnableCallable(func, afunc)`` (a node with a sync and an
    async body, used by its ``sequential`` benchmark): ironloop takes the sync body,
    which it runs under ``invoke`` and ``ainvoke`` alike."""
    return func


#: LangGraph internals its benchmarks import, with what stands in for them.
INTERNALS: dict[str, dict[str, Any]] = {
    "langgraph._internal": {},
    "langgraph._internal._runnable": {"RunnableCallable": _runnable_callable},
}


class ShimMissing(NotImplementedError):
    """Raised when a test uses a LangGraph name ironloop has no counterpart for."""


class _Missing:
    """Stands for a LangGraph name ironloop lacks, in lenient mode: importing it works
    (so a test file's other tests still run), using it raises :class:`ShimMissing`."""

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise ShimMissing(f"ironloop has no counterpart of {self._qualname}")

    __call__ = _fail

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        """A class deriving from a missing one is defined (the file still imports);
        making an instance fails."""
        qualname = self._qualname

        class MissingBase:
            def __new__(cls, *args: Any, **kwargs: Any) -> Any:
                raise ShimMissing(f"ironloop has no counterpart of {qualname}")

        return (MissingBase,)

    def __getitem__(self, item: Any) -> Any:
        return self

    __iter__ = _fail
    __enter__ = _fail

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._qualname}.{attr}")

    # In an annotation (``X | None``, ``list[X]``) a missing name stays a stand-in.
    def __or__(self, other: Any) -> Any:
        return self

    __ror__ = __or__

    def __repr__(self) -> str:
        return f"<missing in ironloop: {self._qualname}>"


_LENIENT = False


class _Module(types.ModuleType):
    """A LangGraph module whose attributes are ironloop's."""

    def __init__(self, name: str, targets: Sequence[str], extra: dict[str, Any]) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package: its submodules go through the finder
        self._targets = tuple(targets)
        self.__dict__.update(extra)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        wanted = RENAMES.get((self.__name__, attr), attr)
        for target in self._targets:
            mod = importlib.import_module(target)
            if hasattr(mod, wanted):
                value = getattr(mod, wanted)
                setattr(self, attr, value)
                return value
        if _LENIENT:
            return _Missing(f"{self.__name__}.{attr}")
        raise AttributeError(
            f"ironloop has no counterpart of {self.__name__}.{attr} "
            f"(looked in {', '.join(self._targets) or 'no module'}); "
            "see scripts/upstream/langgraph_shim.py"
        )


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "langgraph" and not fullname.startswith("langgraph."):
            return None
        if fullname not in MODULES and fullname not in INTERNALS and not _LENIENT:
            raise ModuleNotFoundError(
                f"ironloop has no counterpart of the module {fullname} "
                "(see scripts/upstream/langgraph_shim.py)",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        name = spec.name
        return _Module(name, MODULES.get(name, ()), INTERNALS.get(name, {}))

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install(*, lenient: bool = False) -> None:
    """Answers ``langgraph`` imports with ironloop's names from now on (idempotent).

    ``lenient``: a module or name ironloop lacks imports as a stand-in that raises
    :class:`ShimMissing` when used, so that a test file whose other tests need only
    what ironloop has can run them (the test suite runner); otherwise the import
    fails at once (the benchmark runner, and a user's program)."""
    global _LENIENT
    _LENIENT = _LENIENT or lenient
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        for name in [m for m in sys.modules if m == "langgraph" or m.startswith("langgraph.")]:
            del sys.modules[name]
        sys.meta_path.insert(0, _Finder())
