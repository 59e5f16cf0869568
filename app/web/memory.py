"""Keeping a long-running app process's memory flat (glibc's allocator).

Two things made an app worker's resident memory creep up for minutes after its caches had
filled, although Python's own objects did not grow (``bench/load.py --scenario mixed``):

* glibc gives every thread that allocates its own malloc *arena* (up to 8 per core), and the
  request threadpool has 40 threads: each arena keeps freed memory for itself, so the same load
  spread over more and more arenas holds more and more of it. :func:`limit_arenas` caps them
  (``mallopt(M_ARENA_MAX)``, what the ``MALLOC_ARENA_MAX`` variable does, but set by the app so
  it holds however the app is started). Set before the threads and the simulation processes
  start, it covers them all.
* Freed memory inside an arena stays resident until glibc trims it, which it does only from the
  top of the heap. :class:`Trimmer` calls ``malloc_trim(0)`` now and then, which gives every
  wholly free page back to the system.

Neither changes what Python keeps; on a C library other than glibc both do nothing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from app.web.libc import LIBC, has

M_ARENA_MAX = -8  # mallopt parameter numbers (glibc malloc.h)
M_MMAP_THRESHOLD = -3
# Allocations from this size up get pages of their own (mmap), given back the moment they are
# freed. glibc's own threshold starts at 128 KB but rises to the largest block freed so far (up
# to 32 MB): after one answer of megabytes, every later one came from the heap, where a block
# freed below a live one stays resident until a trim finds its pages wholly free.
MMAP_THRESHOLD = 1 << 20
SNAPSHOT_FRAMES = 8  # a snapshot's stack depth: enough to tell who called the allocator


_LIBC = LIBC if has("mallopt", "malloc_trim") else None  # glibc only


def limit_arenas(count: int) -> bool:
    """At most ``count`` malloc arenas in this process and the ones it forks (0: glibc's own
    choice). Answers whether the C library took it."""
    if _LIBC is None or count <= 0:
        return False
    return bool(_LIBC.mallopt(M_ARENA_MAX, count))


def fix_mmap_threshold(size: int = MMAP_THRESHOLD) -> bool:
    """Blocks of ``size`` bytes and more are mapped on their own and unmapped when freed, for
    good (setting it stops glibc raising it after large frees). Answers whether it was taken."""
    if _LIBC is None or size <= 0:
        return False
    return bool(_LIBC.mallopt(M_MMAP_THRESHOLD, size))


def tune_heap(arenas: int) -> bool:
    """:func:`limit_arenas` and :func:`fix_mmap_threshold`, before this process starts threads."""
    limited = limit_arenas(arenas)
    return fix_mmap_threshold() and limited


def trim() -> bool:
    """Give the system back the free pages of every arena; answers whether any were."""
    if _LIBC is None:
        return False
    return bool(_LIBC.malloc_trim(0))


class Trimmer:
    """A daemon thread that calls :func:`trim` every ``every_s`` seconds until stopped."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.every_s <= 0 or _LIBC is None or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="malloc-trim", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            trim()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None


def _proc_kb(path: str, fields: tuple[bytes, ...]) -> int:
    total = 0
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(fields):
                    total += int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return total


def private_mb() -> float:
    """This process's private memory (not shared with other processes), MB."""
    return _proc_kb("/proc/self/smaps_rollup", (b"Private_Clean:", b"Private_Dirty:")) / 1024


class MemoryLog:
    """A daemon thread that appends one JSON line every ``every_s`` seconds to ``path``: this
    process's resident and private memory (MB), Python's allocated blocks and what each of
    ``probes`` answers (a cache's bytes, a map's entries): what ``bench/soak.py`` reads to tell
    what grows in an app worker (``APP_MEMORY_LOG``)."""

    def __init__(
        self,
        path: Path | None,
        every_s: float,
        probes: dict[str, Callable[[], float]],
        snapshot_s: float = 0.0,
    ):
        self.path, self.every_s, self.probes = path, every_s, probes
        # Every snapshot_s seconds (0: never) a tracemalloc snapshot is written beside the
        # log, "<log>.<pid>.<seconds>.tracemalloc": which lines hold what grew between two.
        self.snapshot_s = snapshot_s
        self._started = time.monotonic()
        self._snapped = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.path is None or self.every_s <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="memory-log", daemon=True)
        self._thread.start()

    def sample(self) -> dict[str, float]:
        line: dict[str, float] = {
            "pid": os.getpid(),
            "time": round(time.time(), 1),
            "rss_mb": round(_proc_kb("/proc/self/status", (b"VmRSS:",)) / 1024, 1),
            "private_mb": round(private_mb(), 1),
            "py_blocks": sys.getallocatedblocks(),
        }
        for name, probe in self.probes.items():
            try:
                line[name] = round(float(probe()), 1)
            except Exception:  # noqa: BLE001 - a probe that fails is left out
                continue
        # Not gc.get_objects(): it hands out tuples other threads are still building with
        # tuple(generator), whose resize then fails (SystemError in a request: a soak's 500s).
        return line

    def _run(self) -> None:
        assert self.path is not None
        while not self._stop.wait(self.every_s):
            try:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(self.sample(), separators=(",", ":")) + "\n")
                self._snapshot()
            except OSError:
                return

    def _snapshot(self) -> None:
        age = time.monotonic() - self._started
        if self.snapshot_s <= 0 or age - self._snapped < self.snapshot_s:
            return
        self._snapped = age
        if not tracemalloc.is_tracing():  # from the first interval on: not the start-up's work
            tracemalloc.start(SNAPSHOT_FRAMES)
            return
        assert self.path is not None
        name = f"{self.path.name}.{os.getpid()}.{age:05.0f}.tracemalloc"
        tracemalloc.take_snapshot().dump(str(self.path.with_name(name)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
