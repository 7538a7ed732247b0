"""Graph constants, as in LangGraph."""

from __future__ import annotations

START = "__start__"
END = "__end__"
