"""The programs ``scripts/test.sh`` type-checks with mypy (``tests/typing/``) also run:
a typed middleware (``AgentMiddleware[State, Context]``) gets its own state field and
the run's typed context."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PROGRAM = Path(__file__).resolve().parents[1] / "typing" / "langchain_middleware.py"


def test_the_typed_middleware_program_runs() -> None:
    spec = importlib.util.spec_from_file_location("langchain_middleware", PROGRAM)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    out = module.main()
    assert out["model_calls"] == 2
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    assert out["messages"][2].text == "HI"
    assert module.seen_prompts == ["You are talking to Ada."] * 2
