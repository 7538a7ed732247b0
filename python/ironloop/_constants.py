"""Graph constants, as in LangGraph."""

from __future__ import annotations

from typing import Final

START: Final = "__start__"
END: Final = "__end__"
