"""When a run's result will be ready: its predicted work, the runs ahead of it, and how fast
runs have gone through lately.

``Explainer.expected_seconds`` predicts a run's *work*: the CPU seconds its simulation process
spends on it (``bench/cost_calibration.py`` and the soak's run log hold it to that, within 2×).
A client waits longer than that: for a process, when the lane's processes are busy with runs
started before (or shorter than) its own, and for the CPUs, which the simulation processes
share with the app workers at a lower priority (and, on a shared machine, with everything
else). A run of 4 s of work was measured taking 17-83 s from its request under the soak.

:class:`LaneClock` keeps, per lane of one app worker, what its last runs measured: the wall
time their process took per second of *predicted* work (the *pace*: 1.0 on idle CPUs with an
exact prediction; it takes in the prediction's own bias, so a lane whose runs use 0.7 of their
predicted CPU on CPUs shared 2:1 goes at 1.4), the time from a process's end to the stored
result (the trace handed back and written), and how much of the work queued in the lane was
ever done (the *kept* share: a job cancelled or abandoned while it waited leaves the queue
having done none of it; one cancelled while running, the part it ran). :meth:`LaneClock.eta`
answers, when a run is submitted, the seconds until its result: what is left of the running
runs (from their progress) and the kept share of the work queued ahead of it, shared out over
the lane's processes, plus its own work, each at the pace (the recent runs' pace, and the
running runs' own pace so far where they have gone far enough to tell), plus the storing.
Cheap: a few sums over the lane's runs, under the lane's lock.

The soak of issue 24 (long jobs, many abandoned by their clients) measured wall/eta
between 0.20 and 3.22 with the slowdown per CPU second and every queued run counted in full:
most runs finished in under half their eta (the runs ahead were cancelled before they ran, and
some explainers' predictions ran 1.5× the CPU used), the first runs of a burst in over twice it (no
pace known yet: the running runs' own pace now says it). The API gives it to the client as ``eta_s`` beside ``expected_s``; the run log
(``APP_RUN_LOG``) records it so ``bench/soak.py`` can hold each run's wall time to it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

ALPHA = 0.3  # weight of the latest run in the moving averages
MIN_EXPECTED_S = 0.02  # runs predicted shorter than this say little about the pace
MIN_PACE, MAX_PACE = 0.05, 1000.0
LIVE_MIN_S = 0.5  # a running run's pace counts once it has run this long…
LIVE_MIN_DONE = 0.05  # …and done this share of its work


class LaneClock:
    """What one lane's recent runs measured, and the wait a new run can expect from it."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.pace = 1.0  # wall seconds per predicted second in the lane's processes, lately
        self.store_s = 0.0  # from a process's end to the stored result, lately
        self.kept = 1.0  # share of the work queued in the lane that was done, lately
        self._lock = threading.Lock()

    @property
    def slowdown(self) -> float:  # the name of earlier versions
        return self.pace

    def record(self, expected_s: float, run_s: float, store_s: float) -> None:
        """A run predicted at ``expected_s`` of work ended in a process after ``run_s`` of wall
        time, then took ``store_s`` until its result was stored."""
        with self._lock:
            if expected_s >= MIN_EXPECTED_S and run_s > 0:
                ratio = min(MAX_PACE, max(MIN_PACE, run_s / expected_s))
                self.pace += ALPHA * (ratio - self.pace)
            self.store_s += ALPHA * (max(0.0, store_s) - self.store_s)

    def ended(self, done: float) -> None:
        """A run that entered the lane left it having done ``done`` (0..1) of its work: 1 for
        a run that ended in its process, what it ran of it for one cancelled while running, 0
        for one cancelled (or abandoned) while it waited."""
        with self._lock:
            self.kept += ALPHA * (min(1.0, max(0.0, done)) - self.kept)

    def eta(
        self,
        expected_s: float,
        running: Iterable[tuple[float, float] | tuple[float, float, float]] = (),
        ahead: Iterable[float] = (),
    ) -> float:
        """Seconds until the result of a run of ``expected_s`` of work submitted now, with
        ``running`` runs in the lane's processes (their predicted work, seconds since they
        started there and, where known, the share of it done) and the ``ahead`` runs (their
        predicted work) to be started before it."""
        with self._lock:
            pace, store, kept = self.pace, self.store_s, self.kept
        busy = [(r[0], r[1], r[2] if len(r) > 2 else -1.0) for r in running]
        live = [
            since / (done * e)
            for e, since, done in busy
            if since >= LIVE_MIN_S and done >= LIVE_MIN_DONE and e >= MIN_EXPECTED_S
        ]
        if live:  # the runs under way say how fast the lane goes now
            now_pace = min(MAX_PACE, max(MIN_PACE, sum(live) / len(live)))
            pace = (pace + now_pace) / 2
        left = sum(
            (1.0 - done) * e * pace if done >= 0 else max(0.0, e * pace - since)
            for e, since, done in busy
        )
        queued = sum(ahead) * pace * kept
        # a free process at once; else the work ahead shared out over the lane's processes
        wait = 0.0 if len(busy) < self.workers and not queued else (left + queued) / self.workers
        return wait + expected_s * pace + store
