"""``langgraph.json``'s checkpointer TTL: threads left alone longer than
``default_ttl`` are swept, as LangGraph's Agent Server sweeps them."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone
from typing import Any

from .project import CheckpointerTTL

log = logging.getLogger("ironloop.serve")


async def sweep_threads(app: Any, ttl: CheckpointerTTL) -> None:
    """Every ``ttl.every`` seconds, the threads not updated for ``ttl.ttl`` seconds and
    not running are swept: with ``"delete"`` the thread, its runs and its checkpoints
    are gone (as ``DELETE /threads/{id}``); with ``"keep_latest"`` only its latest
    checkpoint is kept. A failed sweep is logged and tried again at the next tick
    (servers sharing a database each sweep; a thread already gone is skipped)."""
    while True:
        await asyncio.sleep(ttl.every)
        try:
            swept = await sweep_once(app, ttl)
        except Exception:
            log.exception("sweeping expired threads failed; trying again in %.0f s", ttl.every)
        else:
            if swept:
                log.info("swept %d expired thread(s) (%s)", len(swept), ttl.strategy)


async def sweep_once(app: Any, ttl: CheckpointerTTL) -> list[str]:
    """One sweep; returns the swept threads' ids."""
    from .thread_routes import drop_thread

    cutoff = datetime.now(timezone.utc).timestamp() - ttl.ttl
    records = app.state.records
    threads = await asyncio.to_thread(
        records.search_threads, sort_by="updated_at", descending=False
    )
    expired = [
        t["thread_id"]
        for t in threads
        if t["status"] != "busy"
        and datetime.fromisoformat(t["updated_at"]).timestamp() < cutoff
        and not app.state.runner.on_thread(t["thread_id"])
    ]
    for tid in expired:
        if ttl.strategy == "delete":
            await drop_thread(app, tid)
        else:
            await app.state.checkpointer.aprune([tid], strategy="keep_latest")
    return expired
