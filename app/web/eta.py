"""When a run's result will be ready: its predicted work, the runs ahead of it, and how fast
runs have gone through lately.

``Explainer.expected_seconds`` predicts a run's *work*: the CPU seconds its simulation process
spends on it (``bench/cost_calibration.py`` and the soak's run log hold it to that, within 2×).
A client waits longer than that: for a process, when the lane's processes are busy with runs
started before (or shorter than) its own, and for the CPUs, which the simulation processes
share with the app workers at a lower priority (and, on a shared machine, with everything
else). A run of 4 s of work was measured taking 17-83 s from its request under the soak.

:class:`LaneClock` keeps, per lane of one app worker, what its last runs measured: the wall
time their process took per CPU second (the *slowdown*, 1.0 on idle CPUs) and the time from a
process's end to the stored result (the trace handed back and written). :meth:`LaneClock.eta`
answers, when a run is submitted, the seconds until its result: the work of the runs ahead of
it shared out over the lane's processes, plus its own, each stretched by the slowdown, plus the
storing. The API gives it to the client as ``eta_s`` beside ``expected_s``; the run log
(``APP_RUN_LOG``) records it so ``bench/soak.py`` can hold each run's wall time to it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

ALPHA = 0.3  # weight of the latest run in the moving averages
MIN_CPU_S = 0.02  # runs shorter than this say little about the slowdown
MAX_SLOWDOWN = 1000.0


class LaneClock:
    """What one lane's recent runs measured, and the wait a new run can expect from it."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.slowdown = 1.0  # wall seconds per CPU second in the lane's processes, lately
        self.store_s = 0.0  # from a process's end to the stored result, lately
        self._lock = threading.Lock()

    def record(self, cpu_s: float, run_s: float, store_s: float) -> None:
        """A run ended in a process: ``cpu_s`` of CPU in ``run_s`` of wall time, then
        ``store_s`` until its result was stored."""
        with self._lock:
            if cpu_s >= MIN_CPU_S and run_s > 0:
                ratio = min(MAX_SLOWDOWN, max(1.0, run_s / cpu_s))
                self.slowdown += ALPHA * (ratio - self.slowdown)
            self.store_s += ALPHA * (max(0.0, store_s) - self.store_s)

    def eta(
        self,
        expected_s: float,
        running: Iterable[tuple[float, float]] = (),
        ahead: Iterable[float] = (),
    ) -> float:
        """Seconds until the result of a run of ``expected_s`` of work submitted now, with
        ``running`` runs in the lane's processes (their expected work, seconds since they
        started there) and the ``ahead`` runs (their expected work) to be started before it."""
        with self._lock:
            slow, store = self.slowdown, self.store_s
        busy = [(e, since) for e, since in running]
        left = sum(max(0.0, e * slow - since) for e, since in busy)
        queued = sum(ahead) * slow
        # a free process at once; else the work ahead shared out over the lane's processes
        wait = 0.0 if len(busy) < self.workers and not queued else (left + queued) / self.workers
        return wait + expected_s * slow + store
