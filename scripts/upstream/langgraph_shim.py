"""Import LangGraph's and LangChain's names from ironloop: the change a user makes
when porting.

``install()`` puts a finder first on ``sys.meta_path`` that answers every import of
``langgraph`` / ``langgraph.*`` and ``langchain`` / ``langchain.*`` (LangChain 1.x's
agents package, not ``langchain_core``) with a module whose names are looked up in the
modules the table below gives for it (with LangGraph's spelling of a few names, such
as ``InMemorySaver``). Nothing else is changed: langchain-core stays real, and a
module or name ironloop has no counterpart for fails to import with an error naming
it, so a program that needs it is reported, not silently run on something else. The
only non-ironloop targets are langchain-core's own modules for the names LangChain
merely re-exports from it (``langchain.tools.BaseTool``, ``langchain.messages.
AnyMessage``): the import a user would write instead.

Used by the runners of LangGraph's own benchmarks (``benches/python/langgraph_suite.py``)
and of LangGraph's and LangChain's test suites: their code is fetched from PyPI and run
unchanged, this shim standing in for the import lines a user would edit.
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
    # LangGraph's tests switch strict resume with its internal config key.
    "langgraph._internal._constants": ("ironloop._constants",),
    "langgraph.graph": ("ironloop.graph",),
    "langgraph.graph.state": ("ironloop.graph",),
    "langgraph.graph.message": ("ironloop.graph",),
    "langgraph.types": ("ironloop.types",),
    "langgraph.errors": ("ironloop.errors",),
    "langgraph.func": ("ironloop.func",),
    "langgraph.managed": ("ironloop.managed",),
    "langgraph.managed.is_last_step": ("ironloop.managed",),
    "langgraph.cache": ("ironloop.cache",),
    "langgraph.cache.base": ("ironloop.cache.base",),
    "langgraph.cache.memory": ("ironloop.cache.memory",),
    "langgraph.cache.sqlite": ("ironloop.cache.sqlite",),
    "langgraph.warnings": ("ironloop.warnings",),
    "langgraph.runtime": ("ironloop.runtime",),
    "langgraph.config": ("ironloop.graph", "ironloop.runtime"),
    "langgraph.utils.config": ("ironloop.graph", "ironloop.runtime"),
    "langgraph.pregel": ("ironloop.graph",),
    "langgraph.stream": ("ironloop.stream",),
    "langgraph.stream.run_stream": ("ironloop.stream.run_stream",),
    "langgraph.stream.stream_channel": ("ironloop.stream.stream_channel",),
    "langgraph.stream.transformers": ("ironloop.stream.transformers",),
    "langgraph.stream._types": ("ironloop.stream._types",),
    "langgraph.stream._mux": ("ironloop.stream._mux",),
    "langgraph.stream._convert": ("ironloop.stream._convert",),
    # Deprecated in LangGraph 1.0: importing it warns (its names are ironloop.types').
    "langgraph.pregel.types": ("ironloop._pregel_types",),
    "langgraph.prebuilt": ("ironloop.prebuilt",),
    "langgraph.prebuilt.chat_agent_executor": ("ironloop.prebuilt.chat_agent_executor",),
    "langgraph.prebuilt.tool_node": ("ironloop.prebuilt.tool_node",),
    "langgraph.checkpoint": ("ironloop.checkpoint",),
    "langgraph.checkpoint.base": ("ironloop.checkpoint",),
    "langgraph.checkpoint.memory": ("ironloop.checkpoint",),
    "langgraph.checkpoint.sqlite": ("ironloop.checkpoint",),
    "langgraph.checkpoint.postgres": ("ironloop.checkpoint",),
    "langgraph.store": ("ironloop.store",),
    "langgraph.store.base": ("ironloop.store.base", "ironloop.store"),
    "langgraph.store.base.batch": ("ironloop.store.batch",),
    "langgraph.store.base.embed": ("ironloop.store.embed",),
    "langgraph.store.memory": ("ironloop.store.memory",),
    "langgraph.store.sqlite": ("ironloop.store.sqlite",),
    "langgraph.store.sqlite.base": ("ironloop.store.sqlite",),
    "langgraph.store.sqlite.aio": ("ironloop.store.sqlite",),
    "langgraph.store.postgres": ("ironloop.store.postgres",),
    "langgraph.store.postgres.base": ("ironloop.store.postgres",),
    "langgraph.store.postgres.aio": ("ironloop.store.postgres",),
    # LangChain 1.x (``langchain`` 1.5.2): its agents package.
    "langchain": ("ironloop",),
    "langchain.agents": ("ironloop.agents",),
    "langchain.agents.factory": ("ironloop.agents", "ironloop._structured_output"),
    "langchain.agents.structured_output": ("ironloop.agents.structured_output",),
    "langchain.agents._subagent_transformer": ("ironloop.stream._subagents",),
    "langchain.agents.middleware": ("ironloop.middleware",),
    "langchain.agents.middleware.types": ("ironloop.middleware.types", "ironloop.middleware"),
    **{
        f"langchain.agents.middleware.{m}": (f"ironloop.middleware.{m}", "ironloop.middleware")
        for m in (
            "auto_mode",
            "context_editing",
            "file_search",
            "human_in_the_loop",
            "internal_call_transformer",
            "model_call_limit",
            "model_refusal",
            "model_retry",
            "model_router",
            "pii",
            "provider_tool_search",
            "shell_tool",
            "summarization",
            "todo",
            "tool_call_limit",
            "tool_emulator",
            "tool_error",
            "tool_retry",
            "tool_selection",
        )
    },
    # LangChain modules whose ironloop counterpart has another name.
    "langchain.agents.middleware.model_fallback": (
        "ironloop.middleware.fallback",
        "ironloop.middleware",
    ),
    # LangChain re-exports langchain-core's tools (``tool``, ``BaseTool``...); the names
    # of LangGraph's it re-exports (``ToolNode``, ``InjectedState``...) are ironloop's.
    "langchain.tools": ("langchain_core.tools", "ironloop", "ironloop.prebuilt"),
    "langchain.messages": ("ironloop.messages", "langchain_core.messages"),
    "langchain.chat_models": ("ironloop.models", "langchain_core.language_models"),
}

#: The packages whose imports the shim answers.
PACKAGES = ("langgraph", "langchain")

#: (LangGraph module, name) -> the ironloop name it is spelt as.
RENAMES: dict[tuple[str, str], str] = {
    ("langgraph.pregel", "Pregel"): "CompiledStateGraph",
    ("langchain.chat_models", "init_chat_model"): "init_model",
    # The rule choosing the provider's native output for a bare schema.
    ("langchain.agents.factory", "_supports_provider_strategy"): "supports_provider_strategy",
    # A middleware module's own reference to it (what ``mock.patch`` replaces there).
    **{
        (m, "init_chat_model"): "init_model"
        for m in MODULES
        if m.startswith("langchain.agents.middleware.")
    },
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
    "langgraph.utils": {},
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

    # Nothing is an instance of a class ironloop lacks (``isinstance(g, RemoteGraph)``).
    def __instancecheck__(self, obj: Any) -> bool:
        return False

    def __subclasscheck__(self, cls: Any) -> bool:
        return False

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


#: The attributes of a shim module that are its own, not names of the modules it stands
#: for (a private name such as ``_sanitize_request_for_fallback`` is forwarded).
_OWN = frozenset({"_targets", "_originals"})


class _Module(types.ModuleType):
    """A LangGraph module whose attributes are ironloop's."""

    def __init__(self, name: str, targets: Sequence[str], extra: dict[str, Any]) -> None:
        super().__init__(name)
        self.__path__: list[str] = []  # a package: its submodules go through the finder
        self._targets = tuple(targets)
        #: name -> (ironloop module, its name there, its value) before a patch.
        self._originals: dict[str, tuple[types.ModuleType, str, Any]] = {}
        self.__dict__.update(extra)

    def __setattr__(self, attr: str, value: Any) -> None:
        """A name set here (``unittest.mock.patch("langchain....interrupt")``) is also
        set in the ironloop module that holds it, so the code reading it sees the
        patch, as it would in the upstream module."""
        super().__setattr__(attr, value)
        if attr in _OWN or attr.startswith("__"):
            return
        name = RENAMES.get((self.__name__, attr), attr)
        for target in self._targets:
            mod = sys.modules.get(target)
            if mod is not None and name in vars(mod):
                self._originals.setdefault(attr, (mod, name, vars(mod)[name]))
                setattr(mod, name, value)
                return

    def __delattr__(self, attr: str) -> None:
        """Undoing a patch (``mock.patch`` deletes what it set) puts the ironloop
        module's own value back."""
        super().__delattr__(attr)
        if attr in self._originals:
            mod, name, value = self._originals.pop(attr)
            setattr(mod, name, value)

    def __getattr__(self, attr: str) -> Any:
        if attr == "__all__":
            # The public names of the ironloop modules it stands for (what
            # ``from langchain.agents.middleware import *`` would give).
            names: list[str] = []
            for target in self._targets:
                try:
                    names += getattr(importlib.import_module(target), "__all__", [])
                except ModuleNotFoundError:
                    continue
            return list(dict.fromkeys(names))
        if attr.startswith("__"):
            raise AttributeError(attr)
        submodule = f"{self.__name__}.{attr}"
        if submodule in MODULES:
            # ``from langchain.agents.middleware import model_fallback``: the shim's
            # module for it, not a name looked up in the ironloop modules.
            return importlib.import_module(submodule)
        wanted = RENAMES.get((self.__name__, attr), attr)
        for target in self._targets:
            try:
                mod = importlib.import_module(target)
            except ModuleNotFoundError as e:
                if e.name != target:
                    raise
                continue  # a module ironloop does not have (yet): look in the next
            if hasattr(mod, wanted):
                value = getattr(mod, wanted)
                self.__dict__[attr] = value  # cached, not forwarded (see __setattr__)
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
        if fullname.split(".", 1)[0] not in PACKAGES:
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
    """Answers ``langgraph`` and ``langchain`` imports with ironloop's names from now on
    (idempotent).

    ``lenient``: a module or name ironloop lacks imports as a stand-in that raises
    :class:`ShimMissing` when used, so that a test file whose other tests need only
    what ironloop has can run them (the test suite runner); otherwise the import
    fails at once (the benchmark runner, and a user's program)."""
    global _LENIENT
    _LENIENT = _LENIENT or lenient
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        for name in [m for m in sys.modules if m.split(".", 1)[0] in PACKAGES]:
            del sys.modules[name]
        sys.meta_path.insert(0, _Finder())
