"""Fan-out of class events to the students connected to this app process.

A step is stored first (:func:`app.web.classes.store.append`), then delivered:

* on PostgreSQL, every process LISTENs on one channel; the ``pg_notify`` sent at the step's
  commit reaches every replica and worker (one listening connection per process, in a
  thread), and the process that stored the step hands it to its own students at once;
* on SQLite (one machine), the process that stored the step hands it to its own students at
  once, and each process polls the class's last event id every ``poll_s`` (0.1 s) for steps
  stored by its other workers (one indexed read per class with students, not per student).

Each student's stream also catches up from the database whenever it sees a gap in the event
ids, so a lost notification delays a step but never loses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

import psycopg
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from app.web.classes import store
from app.web.classes.store import Event
from app.web.memo import Memo

log = logging.getLogger(__name__)


class Hub:
    def __init__(self, engine: Engine, poll_s: float = 0.1) -> None:
        self.engine = engine
        self.poll_s = poll_s
        self.postgres = engine.dialect.name == "postgresql"
        self._subs: dict[str, set[asyncio.Queue[Event]]] = {}
        self._last: dict[str, int] = {}  # the last event id handed out per class
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pollers: dict[str, asyncio.Task[None]] = {}
        self._stop = threading.Event()
        self._listener: threading.Thread | None = None
        # each event's SSE bytes per language, encoded once for all this process's students
        self.encoded: Memo[tuple[str, int, str], bytes] = Memo(1024, weigh=len, budget=4 << 20)

    # --- students ------------------------------------------------------------------------

    def subscribe(self, class_id: str) -> asyncio.Queue[Event]:
        """A queue receiving the class's events from now on (call on the event loop)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._pollers.clear()  # a new loop (a test's): its tasks died with the old one
        queue: asyncio.Queue[Event] = asyncio.Queue()
        self._subs.setdefault(class_id, set()).add(queue)
        if self.postgres:
            self._listen()
        elif class_id not in self._pollers:
            self._pollers[class_id] = loop.create_task(self._poll(class_id))
        return queue

    def unsubscribe(self, class_id: str, queue: asyncio.Queue[Event]) -> None:
        subs = self._subs.get(class_id)
        if subs is not None:
            subs.discard(queue)
            if not subs:
                del self._subs[class_id]
                self._last.pop(class_id, None)
                poller = self._pollers.pop(class_id, None)
                if poller is not None:
                    poller.cancel()

    def listeners(self, class_id: str) -> int:
        return len(self._subs.get(class_id, ()))

    # --- delivery ------------------------------------------------------------------------

    def published(self, events: list[Event]) -> None:
        """Events this process just stored (any thread): hand them to its students now, without
        waiting for the notification or the poll that brings them to the other processes (the
        one of the two that comes second is dropped by its event id)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        for ev in events:
            loop.call_soon_threadsafe(self._dispatch, ev)

    def _dispatch(self, ev: Event) -> None:
        if ev.seq <= self._last.get(ev.class_id, 0):
            return  # handed out already (by the poller, or the other way round)
        subs = self._subs.get(ev.class_id)
        if not subs:
            return
        self._last[ev.class_id] = ev.seq
        for queue in subs:
            queue.put_nowait(ev)

    async def _poll(self, class_id: str) -> None:
        last = await run_in_threadpool(store.latest_seq, self.engine, class_id)
        self._last.setdefault(class_id, last)
        while class_id in self._subs:
            await asyncio.sleep(self.poll_s)
            seq = await run_in_threadpool(store.latest_seq, self.engine, class_id)
            if seq > self._last.get(class_id, 0):
                after = self._last.get(class_id, 0)
                for ev in await run_in_threadpool(store.events_after, self.engine, class_id, after):
                    self._dispatch(ev)

    def _listen(self) -> None:
        if self._listener is None or not self._listener.is_alive():
            self._stop.clear()
            self._listener = threading.Thread(target=self._listen_loop, name="class-listen")
            self._listener.daemon = True
            self._listener.start()

    def _listen_loop(self) -> None:
        url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        while not self._stop.is_set():
            try:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {store.CHANNEL}")
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=1.0):
                            self._hand_over(Event.from_payload(note.payload))
            except (psycopg.Error, OSError) as exc:  # the database restarted: listen again
                log.warning("class events: listening again after %s", exc)
                self._stop.wait(1.0)

    def _hand_over(self, ev: Event) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._dispatch, ev)

    def close(self) -> None:
        self._stop.set()
        if self._listener is not None:
            self._listener.join(timeout=3)
