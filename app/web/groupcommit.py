"""Small writes that many requests make at once, committed together by one thread.

Every step of every student in a lecture hall saves their progress: a hundred small writes a
second. Made one transaction each from the request threadpool, they queued on the database's
single write lock (SQLite's busy handler polls, waiting up to 100 ms between tries), held
threadpool threads while they waited, and pages waited for those threads: under the mixed load
a quarter of the threads' time went to waiting for the lock, and page p99 reached seconds.

:class:`GroupCommit` takes each write from the event loop, hands it to its one writer thread
and lets the request await the commit: while a batch is being written the next one gathers, so
the number of transactions stays small however many requests come, no request thread waits for
the lock, and an answer still means the write is committed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
Waiting = tuple[T, asyncio.Future[None], asyncio.AbstractEventLoop]


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # the request went away (cancelled); the write stands
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


class GroupCommit(Generic[T]):
    """``write(items)`` commits a batch in one transaction (called on the writer thread);
    :meth:`submit` waits until the batch holding its item is committed (or raises what the
    write raised). At most ``max_batch`` items go in one transaction."""

    def __init__(self, write: Callable[[Sequence[T]], None], *, max_batch: int = 500) -> None:
        self._write = write
        self.max_batch = max_batch
        self._pending: list[Waiting[T]] = []
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self.batches = 0  # transactions written (for tests and benchmarks)
        self.items = 0
        self._closed = False

    def close(self) -> None:
        """Let the writer thread end once what is waiting is written (the app is stopping)."""
        with self._wake:
            self._closed = True
            self._wake.notify()

    async def submit(self, item: T) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._wake:
            self._closed = False  # an app started again (tests) writes again
            self._pending.append((item, future, loop))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
                self._thread.start()
            self._wake.notify()
        await future

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending:
                    if self._closed:
                        self._thread = None
                        return
                    self._wake.wait()
                batch = self._pending[: self.max_batch]
                del self._pending[: self.max_batch]
            error: BaseException | None = None
            try:
                self._write([item for item, _, _ in batch])
            except BaseException as exc:  # every waiter of this batch hears of it
                error = exc
            self.batches += 1
            self.items += len(batch)
            for _, future, loop in batch:
                try:
                    loop.call_soon_threadsafe(_settle, future, error)
                except RuntimeError:  # that event loop has closed: nobody waits any more
                    pass
