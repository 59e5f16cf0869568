"""The discrete-event core every clocked simulation shares.

An :class:`EventQueue` is a heap of ``(time, priority, seq, kind, arg)`` entries: earliest time
first, then lower priority, then insertion order (``seq``), so equal-time events are processed
deterministically in the order they were scheduled. ``kind`` is a small int the simulation
dispatches on and ``arg`` its operand (a flow, an endpoint, a segment).

Timers are lazy (:class:`Timer`): arming one pushes a heap entry only when the new deadline is
earlier than the one already queued; a later deadline just moves ``deadline``, and when a stale
entry pops, :meth:`Timer.due` says to re-queue it instead of firing. Re-arming a retransmission
timer on every ACK thus costs no heap work. This is how the kernel's ``sk_reset_timer`` is
modelled without a heap entry per reset.

``step()`` processes one event and ``run(until)`` processes every event up to a time, so a test
can walk a run and finishing in steps gives the same result as running at once.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

Handler = Callable[[float, int, Any], None]
"""``handler(now, kind, arg)`` processes one event."""


class EventQueue:
    """A deterministic ``(time, priority, seq)`` event heap. Hot loops may read ``heap`` and
    ``seq`` directly (they are public for that); everything else goes through the methods."""

    __slots__ = ("heap", "now", "processed", "seq")

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, int, int, Any]] = []
        self.seq = itertools.count()
        self.now = 0.0
        self.processed = 0

    def __len__(self) -> int:
        return len(self.heap)

    def push(self, time: float, kind: int, arg: Any = None, priority: int = 0) -> None:
        heapq.heappush(self.heap, (time, priority, next(self.seq), kind, arg))

    def pop(self) -> tuple[float, int, Any]:
        time, _prio, _seq, kind, arg = heapq.heappop(self.heap)
        self.now = time
        return time, kind, arg

    def step(self, handler: Handler) -> bool:
        """Process the earliest event; False when there is none."""
        if not self.heap:
            return False
        time, kind, arg = self.pop()
        self.processed += 1
        handler(time, kind, arg)
        return True

    def run(self, handler: Handler, until: float | None = None) -> int:
        """Process events with ``time <= until`` (all, when None); returns how many ran."""
        heap = self.heap
        pop = heapq.heappop
        done = 0
        while heap and (until is None or heap[0][0] <= until):
            time, _prio, _seq, kind, arg = pop(heap)
            self.now = time
            done += 1
            handler(time, kind, arg)
        self.processed += done
        if until is not None and until > self.now:
            self.now = until
        return done


class Timer:
    """A lazily re-armed timer (see the module docstring): at most one heap entry per deadline
    that is earlier than the one queued."""

    __slots__ = ("arg", "deadline", "kind", "queue", "queued_at")

    def __init__(self, queue: EventQueue, kind: int, arg: Any = None) -> None:
        self.queue = queue
        self.kind = kind
        self.arg = arg
        self.deadline: float | None = None  # when it should fire; None when stopped
        self.queued_at: float | None = None  # the earliest heap entry it has

    @property
    def armed(self) -> bool:
        return self.deadline is not None

    def arm(self, at: float) -> None:
        self.deadline = at
        if self.queued_at is None or at < self.queued_at:
            self.queued_at = at
            self.queue.push(at, self.kind, self.arg)

    def stop(self) -> None:
        self.deadline = None

    def due(self, now: float) -> bool:
        """Call when this timer's event pops: True if it fires now. A stale entry (the timer
        was stopped or moved later) returns False and, if still armed, re-queues itself."""
        if self.queued_at is not None and now < self.queued_at:
            return False  # an entry superseded by an earlier one, which is still queued
        self.queued_at = None
        if self.deadline is None:
            return False
        if now + 1e-12 < self.deadline:
            self.queued_at = self.deadline
            self.queue.push(self.deadline, self.kind, self.arg)
            return False
        self.deadline = None
        return True
