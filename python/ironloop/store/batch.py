"""``AsyncBatchedBaseStore``: a store whose concurrent ``a…`` calls are gathered into
one ``abatch`` (LangGraph's base class for stores behind a network hop).

Each ``a…`` call queues its op and awaits a future; one task on the event loop takes
everything queued, merges repeated reads and writes to the same item (the last write
wins), calls ``abatch`` once and hands each caller its result.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from ironloop.store.base import BaseStore, Op, PutOp

__all__ = ["AsyncBatchedBaseStore"]


def _merge(ops: list[Op]) -> tuple[list[int], list[Op]]:
    """Each op's position among the distinct ops, and those ops: equal reads once,
    writes to one item once (at the first write's place, with the last value)."""
    where: list[int] = []
    distinct: list[Op] = []
    puts: dict[tuple[tuple[str, ...], str], int] = {}
    for op in ops:
        if isinstance(op, PutOp):
            at = puts.get((op.namespace, op.key))
            if at is None:
                at = puts[(op.namespace, op.key)] = len(distinct)
                distinct.append(op)
            else:
                distinct[at] = op
        else:
            at = next((i for i, d in enumerate(distinct) if d == op), -1)
            if at < 0:
                at = len(distinct)
                distinct.append(op)
        where.append(at)
    return where, distinct


async def _serve(queue: asyncio.Queue[tuple[asyncio.Future[Any], Op]], ref: Any) -> None:
    while True:
        pending = [await queue.get()]
        while not queue.empty():
            pending.append(queue.get_nowait())
        pending = [(f, op) for f, op in pending if not f.done()]
        store = ref()
        if store is None:
            return
        if not pending:
            continue
        where, distinct = _merge([op for _, op in pending])
        try:
            results = await store.abatch(distinct)
        except Exception as e:
            for f, _ in pending:
                if not f.done():
                    f.set_exception(e)
            continue
        finally:
            del store
        for (f, _), at in zip(pending, where, strict=False):
            if not f.done():
                f.set_result(results[at])


class AsyncBatchedBaseStore(BaseStore):
    """A ``BaseStore`` whose ``a…`` methods batch concurrent calls. Subclasses
    implement ``batch`` and ``abatch``; the sync methods call ``batch`` directly."""

    __slots__ = ("_aqueue", "_loop", "_task")

    def __init__(self) -> None:
        super().__init__()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._aqueue: asyncio.Queue[tuple[asyncio.Future[Any], Op]] | None = None
        self._task: asyncio.Task[None] | None = None

    def _ensure_task(self) -> asyncio.Queue[tuple[asyncio.Future[Any], Op]]:
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._loop is not loop:
            self._loop = loop
            self._aqueue = asyncio.Queue()
            self._task = loop.create_task(_serve(self._aqueue, weakref.ref(self)))
        assert self._aqueue is not None
        return self._aqueue

    async def _arun_one(self, op: Op) -> Any:
        """Queues ``op`` for the next ``abatch`` of everything queued meanwhile."""
        queue = self._ensure_task()
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        queue.put_nowait((fut, op))
        return await fut
