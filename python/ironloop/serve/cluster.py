"""Several ``ironloop serve`` processes on one PostgreSQL database.

- Background runs go into the runs table (``PgRecords.enqueue_run``) and each server
  claims what it has room for (``FOR UPDATE SKIP LOCKED``): one server runs a run.
- A server renews the leases of the runs it holds; when one dies, its leases run out
  and another server claims its runs: a run that had started continues from its last
  saved step (the engine's checkpoints: a saved step is not run again), one that had
  not starts from its input. The engine's own run lease on the thread (an advisory
  lock PostgreSQL drops with the dead server's connection) keeps a late holder and the
  new one from running the thread at once.
- On SIGTERM a server stops claiming at once; on shutdown it hands over what is left.
- ``LISTEN/NOTIFY`` carries what other servers need to know: a run queued (claim now),
  a run ended (``join`` returns), a run's stream events (``join_stream`` from another
  server: sent only once one asks), a cancel for the run's holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import uuid
from collections.abc import AsyncIterator
from typing import Any

from .errors import ApiError
from .execution import ActiveRun, Runner, RunSpec, has_saved_step
from .pg import PgRecords

log = logging.getLogger("ironloop.serve")
#: The largest event sent inside a notification (PostgreSQL's limit is 8,000 bytes).
MAX_NOTIFY_BYTES = 7_000
Event = tuple[str, str, str]


def worker_name() -> str:
    return f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Cluster:
    """This server's part in the cluster: the claim, lease and listen loops."""

    def __init__(self, app: Any, records: PgRecords, url: str) -> None:
        self.app, self.records, self.url = app, records, url
        self.runner: Runner = app.state.runner
        self.channel = f"ironloop_serve:{records.schema}"
        self.draining = False
        self._wake = asyncio.Event()
        self._done: dict[str, set[asyncio.Event]] = {}
        self._streams: dict[str, set[asyncio.Queue[Event | None]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._listener: Any = None
        self._previous_sigterm: Any = None

    async def start(self) -> None:
        import psycopg
        from psycopg import sql

        self._listener = await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, application_name=f"ironloop-serve {self.records.worker}"
        )
        await self._listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        self.runner.on_end = self._ended
        loop = asyncio.get_running_loop()
        for job in (self._listen(), self._claim_loop(), self._renew_loop()):
            self._tasks.append(loop.create_task(job))
        self._watch_sigterm()

    def _watch_sigterm(self) -> None:
        """Stops claiming the moment SIGTERM arrives (the server then waits for its open
        connections before it shuts down: no run may be taken meanwhile)."""
        with contextlib.suppress(ValueError):  # not the main thread: no signals here
            previous = signal.getsignal(signal.SIGTERM)

            def on_sigterm(signum: int, frame: Any) -> None:
                self.draining = True
                if callable(previous):
                    previous(signum, frame)

            signal.signal(signal.SIGTERM, on_sigterm)
            self._previous_sigterm = previous

    def stop_claiming(self) -> None:
        self.draining = True

    async def close(self) -> None:
        """Hands over the runs left unfinished (the next claim takes them at once)."""
        self.draining = True
        if self.records.release_runs():
            self._notify("q")
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._listener is not None:
            await self._listener.close()

    def _notify(self, payload: str) -> None:
        try:
            self.records.notify(self.channel, payload)
        except Exception as e:  # the database went away: the polls catch up later
            log.warning("notification %r not sent: %s", payload[:40], e)

    # -- queue

    def enqueue(self, thread_id: str, spec: RunSpec, run_id: str) -> dict[str, Any]:
        """Queues a background run; returns its record."""
        record = self.runner.new_record(thread_id, spec, run_id)
        self.records.enqueue_run(record)
        self.runner.mark_busy(thread_id, spec)
        if spec.multitask_strategy in ("interrupt", "rollback"):
            self._steer_earlier(thread_id, record["created_at"], spec.multitask_strategy)
        self._notify("q")
        record.pop("kwargs_json")
        return record

    def _steer_earlier(self, thread_id: str, created_at: str, action: str) -> None:
        """The thread's earlier runs give way to an interrupting / rolling back one:
        one no server has claimed yet never runs; one running is told so by its
        holder (``s``), whose engine the new run's lease then steers."""
        for earlier in self.records.runs_before(thread_id, created_at):
            if earlier["owner"] is None and self.records.cancel_queued(earlier["run_id"]):
                if action == "rollback":
                    self.records.delete_run(earlier["run_id"])
                self._notify(f"d {earlier['run_id']}")
            else:
                self._notify(f"s {earlier['run_id']} {action}")

    async def _claim_loop(self) -> None:
        poll = max(0.2, self.records.lease / 3)
        while not self.draining:
            room = self.runner.room()
            if room > 0:
                try:
                    claimed = self.records.claim_runs(room)
                except Exception as e:
                    log.warning("claiming runs failed: %s", e)
                    claimed = []
                for record in claimed:
                    await self._take(record)
                if len(claimed) == room:
                    continue  # there may be more: claim again once there is room
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), poll)
            self._wake.clear()

    async def _take(self, record: dict[str, Any]) -> None:
        """Starts a claimed run: from its input, or (if it had started elsewhere and
        that server saved its input) from its last saved step."""
        from .run_routes import drop_when_done, parse_spec

        body = dict(record["kwargs"])
        if record["multitask_strategy"] not in ("interrupt", "rollback"):
            body["multitask_strategy"] = "enqueue"
        try:
            spec = parse_spec(self.app.state.assistants, body)
        except ApiError as e:
            log.warning("run %s cannot be started here: %s", record["run_id"], e.detail)
            self.records.set_run_status(record["run_id"], "error")
            self._notify(f"d {record['run_id']}")
            return
        if record["status"] == "running":
            if await asyncio.to_thread(
                has_saved_step, spec.graph, record["thread_id"], record["run_id"]
            ):
                spec.input, spec.command = None, None
            log.info("run %s taken over from a server that stopped", record["run_id"])
        run = self.runner.start(
            record["thread_id"], spec, record["run_id"], created_at=record["created_at"]
        )
        if record["kwargs"].get("on_completion") == "delete":
            drop_when_done(self.app, run)  # a stateless run's thread

    async def _renew_loop(self) -> None:
        while True:
            await asyncio.sleep(self.records.lease / 3)
            try:
                self.records.renew_leases()
            except Exception as e:
                log.warning("renewing run leases failed: %s", e)

    def _ended(self, run: ActiveRun) -> None:
        if run.record["status"] in ("pending", "running"):
            return  # stopped with the server: handed over, not ended
        self._notify(f"d {run.run_id}")
        self._wake.set()  # a slot is free
        if run.forward is not None:
            self.records.forget_events()  # those of runs long over

    # -- notifications

    async def _listen(self) -> None:
        async for note in self._listener.notifies():
            try:
                self._on_note(note.payload)
            except Exception as e:
                log.warning("notification %r not handled: %s", note.payload[:40], e)

    def _on_note(self, payload: str) -> None:
        kind, _, rest = payload.partition(" ")
        if kind == "q":
            self._wake.set()
        elif kind == "d":
            for done in self._done.get(rest, ()):
                done.set()
            for q in self._streams.get(rest, ()):
                q.put_nowait(None)
        elif kind == "w":
            active = self.runner.active.get(rest)
            if active is not None and active.forward is None:
                active.forward = self._forward
        elif kind == "c":
            run_id, _, action = rest.partition(" ")
            active = self.runner.active.get(run_id)
            if active is not None:
                asyncio.get_running_loop().create_task(self.runner.cancel(active, action))
        elif kind == "s":
            run_id, _, action = rest.partition(" ")
            active = self.runner.active.get(run_id)
            if active is not None:
                self.runner.steered(active, action)
        elif kind in ("e", "E"):
            head, _, data = rest.partition("\n")
            run_id, seq, event = [*head.split(" "), "", ""][:3]
            if kind == "E":
                found = self.records.get_event(int(event))
                if found is None:
                    return
                event, data = found
            for q in self._streams.get(run_id, ()):
                q.put_nowait((seq, event, data))

    def _forward(self, run: ActiveRun, item: Event) -> None:
        seq, event, data = item
        if len(data) + len(event) < MAX_NOTIFY_BYTES:
            self._notify(f"e {run.run_id} {seq} {event}\n{data}")
        else:
            self._notify(f"E {run.run_id} {seq} {self.records.put_event(run.run_id, event, data)}")

    # -- a run another server holds

    def unfinished(self, run_id: str) -> bool:
        return self.records.run_status(run_id) in ("pending", "running")

    async def wait_done(self, run_id: str) -> None:
        """Returns once the run has ended, wherever it runs."""
        done = asyncio.Event()
        self._done.setdefault(run_id, set()).add(done)
        try:
            while self.unfinished(run_id):
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(done.wait(), 1.0)
        finally:
            self._forget(self._done, run_id, done)

    async def events(self, run_id: str) -> AsyncIterator[Event]:
        """The events of a run another server holds, from now until it ends."""
        q: asyncio.Queue[Event | None] = asyncio.Queue()
        self._streams.setdefault(run_id, set()).add(q)
        try:
            self._notify(f"w {run_id}")
            while True:
                try:
                    item = await asyncio.wait_for(q.get(), 1.0)
                except asyncio.TimeoutError:
                    if not self.unfinished(run_id):
                        return
                    self._notify(f"w {run_id}")  # a server that took the run over
                    continue
                if item is None:
                    return
                yield item
        finally:
            self._forget(self._streams, run_id, q)

    def cancel(self, thread_id: str, run_id: str, action: str) -> None:
        """Cancels a run no server has claimed yet here, else asks its holder to."""
        if not self.records.cancel_queued(run_id):
            self._notify(f"c {run_id} {action}")
            return
        if not self.records.has_unfinished(thread_id):
            self.records.update_thread(thread_id, status="idle")
        self._notify(f"d {run_id}")

    @staticmethod
    def _forget(table: dict[str, set[Any]], key: str, item: Any) -> None:
        entries = table.get(key)
        if entries is not None:
            entries.discard(item)
            if not entries:
                del table[key]
