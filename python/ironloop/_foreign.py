"""Recognising langchain-core objects without importing langchain-core.

An object of one of its classes can only exist once the class's module has been
imported, so each check looks the class up in ``sys.modules`` and never imports
anything: with langchain-core absent (or unused) every check is a dict lookup that
answers ``False``. The adapters themselves live in ``ironloop._langchain``, imported
only when one of these checks has said yes.
"""

from __future__ import annotations

import sys
from typing import Any


def _class(module: str, name: str) -> Any:
    mod = sys.modules.get(module)
    return None if mod is None else getattr(mod, name, None)


def is_langchain_tool(obj: Any) -> bool:
    """A ``langchain_core.tools.BaseTool`` (``@tool``, ``StructuredTool``, ...)."""
    cls = _class("langchain_core.tools.base", "BaseTool")
    return cls is not None and isinstance(obj, cls)


def is_langchain_runnable(obj: Any) -> bool:
    """A ``langchain_core`` ``Runnable``: a chat model, a bound model, a prompt..."""
    cls = _class("langchain_core.runnables.base", "Runnable")
    return cls is not None and isinstance(obj, cls)


def is_langchain_message(obj: Any) -> bool:
    """A ``langchain_core.messages.BaseMessage``."""
    cls = _class("langchain_core.messages.base", "BaseMessage")
    return cls is not None and isinstance(obj, cls)
