"""Finding what holds an app worker's event loop (``APP_LOOP_STALL_MS``; off by default).

Every request of a worker waits while its event loop runs one callback: a page rendered in an
async handler, JSON built there, a database write waited for, or the GIL held by another of
the worker's threads (unpickling a trace, a garbage collection of a large heap). A cheap
request's tail latency under load is mostly such stalls, and they are found by looking at the
loop while it is held, not by guessing.

:class:`LoopWatch` ticks on the loop every :data:`TICK_S`; a thread of its own notices when the
tick is late by more than the threshold and samples the loop thread's Python stack every
:data:`SAMPLE_S` until the loop runs again, then logs one line: how long the loop was held
and the innermost frames of the app seen most often while it was, e.g.::

    event loop held 840 ms (9 samples): app/web/routes/export.py:212 frame_picture ×7; ...

It also times the cyclic garbage collector's full collections (``gc.callbacks``) and logs any
over the threshold, on whichever thread they ran (the GIL is held throughout). ``bench/soak.py``
turns it on and sums the lines up from the server's log.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

log = logging.getLogger("stepscope")

TICK_S = 0.02  # the loop marks itself alive this often
SAMPLE_S = 0.05  # a held loop's stack is sampled this often
APP_ROOT = str(Path(__file__).resolve().parents[2])  # frames under here are the app's own
FRAMES_SHOWN = 3  # distinct places named in one line


def _short(entry: traceback.FrameSummary) -> str:
    name = entry.filename
    if name.startswith(APP_ROOT) and "/.venv/" not in name:
        name = name[len(APP_ROOT) + 1 :]
    else:  # a library's: its package and file
        name = "/".join(Path(name).parts[-2:])
    return f"{name}:{entry.lineno} {entry.name}"


def _where(frame: Any) -> str:
    """The innermost frame of the app's own code in ``frame``'s stack, and the innermost frame
    of all when that is another (a library's, or the loop's own: the loop waiting in C for the
    GIL or a CPU shows as the frame that started it)."""
    stack = traceback.extract_stack(frame)
    if not stack:
        return "?"
    mine = next(
        (
            e
            for e in reversed(stack)
            if e.filename.startswith(APP_ROOT) and "/.venv/" not in e.filename
        ),
        None,
    )
    inner = _short(stack[-1])
    if mine is None or mine is stack[-1]:
        return inner
    return f"{_short(mine)} > {inner}"


class LoopWatch:
    """Logs each time the running event loop is held longer than ``threshold_s``, and where."""

    def __init__(self, threshold_s: float) -> None:
        self.threshold_s = threshold_s
        self.stalls = 0  # held loops logged (tests, monitoring)
        self.collections = 0  # slow full collections logged
        self._tick = time.monotonic()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gc_started = 0.0

    def start(self) -> None:
        """On the event loop's thread (the app's lifespan)."""
        if self.threshold_s <= 0 or self._thread is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._tick = time.monotonic()
        self._stop.clear()
        self._loop.call_soon(self._beat)
        gc.callbacks.append(self._on_gc)
        self._thread = threading.Thread(target=self._watch, name="loop-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def _beat(self) -> None:
        self._tick = time.monotonic()
        if not self._stop.is_set() and self._loop is not None:
            self._loop.call_later(TICK_S, self._beat)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._gc_started = time.monotonic()
            return
        took = time.monotonic() - self._gc_started
        if self._gc_started and took > self.threshold_s:
            self.collections += 1
            log.warning(
                "full garbage collection took %.0f ms (%d objects collected) on %s",
                took * 1000,
                info.get("collected", 0),
                threading.current_thread().name,
            )

    def _watch(self) -> None:
        while not self._stop.wait(TICK_S):
            if time.monotonic() - self._tick <= self.threshold_s + TICK_S:
                continue
            seen: Counter[str] = Counter()
            began = self._tick
            while self._tick == began and not self._stop.is_set():
                frame = sys._current_frames().get(self._loop_thread)
                if frame is not None:
                    seen[_where(frame)] += 1
                del frame
                time.sleep(SAMPLE_S)
            self.stalls += 1
            held = (self._tick if self._tick != began else time.monotonic()) - began - TICK_S
            log.warning(
                "event loop held %.0f ms (%d samples): %s",
                held * 1000,
                sum(seen.values()),
                "; ".join(f"{where} ×{n}" for where, n in seen.most_common(FRAMES_SHOWN)),
            )
