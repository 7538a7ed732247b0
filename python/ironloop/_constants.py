"""Graph constants, as in LangGraph."""

from __future__ import annotations

from typing import Final

START: Final = "__start__"
END: Final = "__end__"
#: The key of a pause in a result or an ``updates`` / ``values`` chunk.
INTERRUPT: Final = "__interrupt__"

#: The tag that keeps a model call out of the ``messages`` stream (LangGraph's
#: ``TAG_NOSTREAM``): a middleware's own calls carry it.
TAG_NOSTREAM: Final = "nostream"
