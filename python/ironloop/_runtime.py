"""Event-loop plumbing used by the Rust engine. Not public API."""

from __future__ import annotations

import asyncio
import logging
import threading

logger = logging.getLogger("ironloop")

_bg_loop: asyncio.AbstractEventLoop | None = None
_bg_lock = threading.Lock()


def background_loop() -> asyncio.AbstractEventLoop:
    """The loop that runs async tools for sync callers (``invoke``), on its own thread."""
    global _bg_loop
    with _bg_lock:
        if _bg_loop is None or _bg_loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="ironloop-async-tools", daemon=True
            )
            thread.start()
            _bg_loop = loop
        return _bg_loop
