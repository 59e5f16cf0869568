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

import ctypes
import ctypes.util
import threading
from typing import Any

M_ARENA_MAX = -8  # mallopt parameter number (glibc malloc.h)


def _libc() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt  # noqa: B018 - glibc only
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def limit_arenas(count: int) -> bool:
    """At most ``count`` malloc arenas in this process and the ones it forks (0: glibc's own
    choice). Answers whether the C library took it."""
    if _LIBC is None or count <= 0:
        return False
    return bool(_LIBC.mallopt(M_ARENA_MAX, count))


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
