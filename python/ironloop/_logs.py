"""Keeps the Rust side's logging levels in step with Python's ``logging``.

Rust records reach the ``ironloop.*`` loggers (``ironloop.model.http``,
``ironloop.checkpoint.sqlite``, …) through a bridge that caches each logger's
effective level, so a disabled record never takes the GIL. Python's ``logging``
keeps a cache of the same kind and clears it whenever levels change
(``Logger.setLevel``, ``logging.disable``, ``logging.config.dictConfig``); this
module hooks that one place so the Rust cache is cleared with it. Not public API.

Example:
    >>> import logging
    >>> logging.getLogger("ironloop").setLevel(logging.INFO)  # retries now show
"""

from __future__ import annotations

import logging
from typing import Any

from ironloop._ironloop import _reset_log_cache


def follow_level_changes(manager: Any = logging.Logger.manager) -> None:
    """Clears the Rust level cache each time ``logging`` clears its own."""
    clear = getattr(manager, "_clear_cache", None)
    if clear is None or getattr(clear, "_ironloop", False):
        return  # another Python: levels are read at first use (documented)

    def _clear_cache() -> None:
        clear()
        _reset_log_cache()

    _clear_cache._ironloop = True  # type: ignore[attr-defined]
    manager._clear_cache = _clear_cache


follow_level_changes()
