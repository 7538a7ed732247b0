"""Graph constants, as in LangGraph."""

from __future__ import annotations

from typing import Final

START: Final = "__start__"
END: Final = "__end__"
#: The key of a pause in a result or an ``updates`` / ``values`` chunk.
INTERRUPT: Final = "__interrupt__"
