"""The trace cache, and traces as they cross between processes and into the store.

A finished trace is pickled and compressed in its simulation process (:func:`encode_trace`;
over ``limit`` pickled bytes it is refused: the hard cap on what a run produces), stored so
every app worker shares it, and decoded again where it is asked for (:func:`decode_trace_sized`,
with about the memory it takes decoded). :class:`TraceCache` keeps decoded traces per app
process, least recently used first out, bounded by that memory estimate.
"""

from __future__ import annotations

import contextlib
import gc
import pickle
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

from app.sim.core import Frame, Trace
from app.sim.core.cost import TraceTooLarge

AnyTrace = Trace[Any, Any]

# Decoded, a trace takes 4.5 to 8 times the bytes of its pickle (tracemalloc, every explainer's
# presets): the cache counts the upper end, so its bound is one in real memory. (Compressed
# sizes say less: a trace is 18 to 86 times its stored bytes, as repetitive as it is.)
MEMORY_PER_PICKLED_BYTE = 8


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a trace is pickled or unpickled: both make (or
    walk) hundreds of thousands of objects none of which is garbage, and the collections they
    set off took as long as the pickling itself (the largest run of the API bench: 0.11 → 0.05 s
    to pickle). Ends enabled if it was, whichever thread finishes last."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def encode_trace(trace: AnyTrace, limit: int | None = None) -> bytes:
    """The trace pickled and compressed; over ``limit`` pickled bytes, :class:`TraceTooLarge`
    (the hard cap on what a run produces, whatever its prediction said)."""
    return zlib.compress(pickle_trace(trace, limit), 1)


def pickle_trace(trace: AnyTrace, limit: int | None = None) -> bytes:
    """The trace pickled (:func:`encode_trace` before compressing)."""
    with _collector_paused():
        raw = pickle.dumps(trace, protocol=pickle.HIGHEST_PROTOCOL)
    if limit is not None and len(raw) > limit:
        raise TraceTooLarge(len(raw), limit)
    return raw


def decode_trace(data: bytes) -> AnyTrace:
    return decode_trace_sized(data)[0]


def decode_trace_sized(data: bytes) -> tuple[AnyTrace, int]:
    """The trace, and about how many bytes of memory it takes once decoded."""
    raw = zlib.decompress(data)
    # Only ever our own traces, from our own database.
    with _collector_paused():
        trace: AnyTrace = pickle.loads(raw)  # noqa: S301
    if not _whole(trace, Trace) or not all(_whole(f, Frame) for f in trace.frames[:1]):
        raise TypeError("not a whole trace (stored by a different version of its classes?)")
    return trace, len(raw) * MEMORY_PER_PICKLED_BYTE


def _whole(obj: object, cls: type) -> bool:
    """``obj`` is a ``cls`` with every field set (a slotted dataclass pickled before a field
    was added unpickles without it)."""
    return isinstance(obj, cls) and all(hasattr(obj, f.name) for f in fields(cls))


# --- the server side ---------------------------------------------------------------------------


class TraceCache:
    """Decoded traces in memory, bounded in (estimated) bytes: *pinned* ones (the presets: a
    fixed set, decoded as the app warms up) stay; the others, least recently used first out,
    take at most ``others_bytes`` and what the pinned ones leave of ``max_bytes``.

    The others' share is small so that it is full soon: an app worker's memory is flat once its
    caches are, and the whole 64 MB, filled by the results of distinct runs, was still filling
    after ten minutes of the soak (the worker's resident memory with it: 261 -> 417 MB)."""

    def __init__(self, max_bytes: int, others_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self.others_bytes = max_bytes if others_bytes is None else min(others_bytes, max_bytes)
        self.used = 0
        self.pinned_used = 0
        self._items: OrderedDict[str, tuple[AnyTrace, int]] = OrderedDict()
        self._pinned: dict[str, tuple[AnyTrace, int]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items) + len(self._pinned)

    def get(self, key: str) -> AnyTrace | None:
        with self._lock:
            pinned = self._pinned.get(key)
            if pinned is not None:
                return pinned[0]
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: str, trace: AnyTrace, size: int, pinned: bool = False) -> None:
        """Keep ``trace`` (about ``size`` bytes decoded); ``pinned``: for good, while the
        pinned ones fit in ``max_bytes``."""
        with self._lock:
            # One trace may take at most an eighth: a few very large results (fetched once, by
            # the API) must not push out everything the pages use.
            if key in self._items or key in self._pinned or size > self.max_bytes // 8:
                return
            if pinned and self.pinned_used + size <= self.max_bytes:
                self._pinned[key] = (trace, size)
                self.pinned_used += size
                self.used += size
                self._evict()
                return
            self._items[key] = (trace, size)
            self.used += size
            self._evict()

    def _evict(self) -> None:
        room = min(self.others_bytes, self.max_bytes - self.pinned_used)
        while self._items and self.used - self.pinned_used > room:
            _, (_, old) = self._items.popitem(last=False)
            self.used -= old
