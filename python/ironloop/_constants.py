"""Graph constants, as in LangGraph."""

from __future__ import annotations

from typing import Final

from ironloop._ironloop import _END, _INTERRUPT, _START

# Spelled once, in the core (``src/graph/spec.rs``, ``reserved.rs``).
START: Final = _START
END: Final = _END
#: The key of a pause in a result or an ``updates`` / ``values`` chunk.
INTERRUPT: Final = _INTERRUPT

#: The ``configurable`` key of LangGraph's strict resume (its internal
#: ``CONFIG_KEY_STRICT_RESUME``). ironloop resumes strictly unless it is ``False``: a
#: ``Command(resume=...)`` naming an interrupt that is not pending, or one value for
#: several, raises ``UnknownInterruptError`` before anything is written. With
#: ``False``, as LangGraph's default, unknown ids are ignored and one value for several
#: interrupts raises ``RuntimeError``.
CONFIG_KEY_STRICT_RESUME: Final = "__pregel_strict_resume"

#: The tag that keeps a model call out of the ``messages`` stream (LangGraph's
#: ``TAG_NOSTREAM``): a middleware's own calls carry it.
TAG_NOSTREAM: Final = "nostream"
#: The tag that hides a node or edge from tracing and streaming UIs (LangGraph's
#: ``TAG_HIDDEN``).
TAG_HIDDEN: Final = "langsmith:hidden"


def __getattr__(name: str) -> object:
    # LangGraph 1.x still answers ``from langgraph.constants import Send`` (and
    # ``Interrupt``), with a deprecation warning: packages built on LangGraph
    # (trustcall) import them from there.
    if name in ("Send", "Interrupt"):
        import warnings

        from ironloop import types
        from ironloop.warnings import LangGraphDeprecatedSinceV10

        warnings.warn(
            f"Importing {name} from langgraph.constants is deprecated. "
            f"Please use 'from langgraph.types import {name}' instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return getattr(types, name)
    if name == "PREVIOUS":
        import warnings

        from ironloop.warnings import LangGraphDeprecatedSinceV10

        warnings.warn(
            "Importing PREVIOUS from langgraph.constants is deprecated. This constant is "
            "now private and should not be used directly.",
            LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        return "__previous__"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
