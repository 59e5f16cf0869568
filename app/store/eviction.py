"""Keeping the trace store bounded: traces are a cache (content-addressed, run again when
missing), so those stored more than ``trace_store_days`` ago go, and the oldest go while all
of them take more than ``trace_store_mb`` (compressed, as stored; the presets are never
evicted and count in the total). Unbounded, the ``trace`` table grew from 2.3 to 50.9 MB in
11 minutes of distinct runs.

Cheap, and not on every request: each app worker evicts at most every ``EVERY_S`` seconds
(from its job watchdog thread, the first time a minute after it starts), sooner only when it
has itself stored a tenth of the budget since. Deleting is idempotent, so workers evicting
at the same time do no harm.
A SQLite file does not shrink when rows go (its free pages are reused, so it stops growing);
``VACUUM`` gives the space back to the disk.

Users' recordings (``recording`` table) are kept bounded the same way, by their own
``recording_store_days`` and ``recording_store_mb`` (``evict=repo.evict_recordings``); they
are evicted when an upload finds the eviction due, not from the job watchdog.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from datetime import timedelta

from sqlalchemy import Engine

from app.store import repo
from app.store.models import utcnow

EVERY_S = 300.0
FIRST_AFTER_S = 60.0
log = logging.getLogger("stepscope")


class TraceEviction:
    def __init__(
        self,
        engine: Engine,
        *,
        max_mb: float,
        max_days: float,
        keep: Callable[[], Collection[str]] = frozenset,
        every_s: float = EVERY_S,
        first_after_s: float = FIRST_AFTER_S,
        evict: Callable[..., tuple[int, int]] | None = None,
        what: str = "stored traces",
    ) -> None:
        self.engine = engine
        self.max_bytes = int(max_mb * 1024 * 1024) if max_mb > 0 else None
        self.max_age = timedelta(days=max_days) if max_days > 0 else None
        self.keep = keep
        self.evict = evict  # None: repo.evict_traces; repo.evict_recordings for the recordings
        self.what = what
        self.every_s = every_s
        self._lock = threading.Lock()
        self._stored = 0  # bytes this process stored since the last eviction
        # when it last evicted (monotonic); the first time is ``first_after_s`` from now
        self._last = time.monotonic() - every_s + first_after_s
        self.runs = 0

    def stored(self, nbytes: int) -> None:
        """This process stored a trace of ``nbytes``."""
        with self._lock:
            self._stored += nbytes

    def due(self, now: float) -> bool:
        if self.max_bytes is None and self.max_age is None:
            return False
        with self._lock:
            if now - self._last >= self.every_s:
                return True
            return self.max_bytes is not None and self._stored * 10 >= self.max_bytes

    def maybe_run(self, now: float | None = None) -> tuple[int, int] | None:
        """Evict if due; answers (traces deleted, bytes left), or None when not due."""
        now = time.monotonic() if now is None else now
        if not self.due(now):
            return None
        return self.run(now)

    def run(self, now: float | None = None) -> tuple[int, int]:
        with self._lock:
            self._last = time.monotonic() if now is None else now
            self._stored = 0
        self.runs += 1
        before = utcnow() - self.max_age if self.max_age is not None else None
        with repo.session_for(self.engine) as db:
            evict = self.evict or repo.evict_traces
            gone, left = evict(
                db=db, stored_before=before, max_bytes=self.max_bytes, keep=self.keep()
            )
        if gone:
            log.info("evicted %d %s; %.1f MB left", gone, self.what, left / 1_048_576)
        return gone, left
