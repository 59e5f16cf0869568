"""A small thread-safe LRU map, bounded in entries and optionally in weight (pages and pictures
are built from request threads). For facts that never change within a process: per-trace
layouts, known sessions. A weighed map (``weigh`` gives each value's size in any unit, ``budget``
the most it holds) drops its oldest entries past the budget, keeping at least the newest: entries
bounded only by count grew a worker by ~75 MB for each long walk (the soak's RSS climb)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    def __init__(self, size: int, weigh: Callable[[V], int] | None = None, budget: int = 0) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._weigh, self._budget = weigh, budget
        self._weights: dict[K, int] = {}
        self.weight = 0  # the total weight held (weighed maps)

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        with self._lock:
            if self._weigh is not None:
                self.weight += self._weigh(value) - self._weights.get(key, 0)
                self._weights[key] = self._weigh(value)
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size or (
                self._budget and self.weight > self._budget and len(self._items) > 1
            ):
                old, _ = self._items.popitem(last=False)
                self.weight -= self._weights.pop(old, 0)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weights.clear()
            self.weight = 0
