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

Per explainer: each explainer's predictions have a bias of their own (the soaks measured CPU per
predicted second from 0.6 for one to 1.0 for another), and a lane runs several explainers: one
pace for the lane made a run of one explainer inherit another's bias (a quick-lane run told
0.24 s took 0.64 s). So, once runs have told it, a run's pace is its explainer's *bias* (CPU
seconds per predicted second, :class:`Biases`, shared by the lanes of an app worker) times the
lane's *slowdown* (wall seconds per CPU second in its processes: what else shares the CPUs),
each a moving average; the running runs' own pace corrects the slowdown now. An explainer not
measured yet goes at the lane's pace, as before.

Before a lane has measured any run (a server just started, and its long lane until the first
large run ends), its pace is the machine's load per CPU (the 1-minute load average over the CPU
count, at least 1: :func:`machine_load`) rather than 1.0, and the first run it measures sets
it (then a moving average, as before): the soak's first burst of eight large
runs, submitted within a second of each other at load 15 on 2 CPUs, was told 1.3-10.2 s and
took 5-33 s (its process's wall time per CPU second was 4-8 then).

Runs submitted *after* a run can still start before it (shortest first, and a run its client
waits for ahead of the jobs of the last half minute): a job told 4.8 s in the soak waited
11 s for a process behind the larger runs of another explainer submitted after it. So a run's wait is stretched
as a priority queue's is: over one less the share of the lane's processes that the runs of a
lower rank submitted in the last minute took (:meth:`LaneClock.arrived`, at most 1/2: twice
the wait).

A queued job counts as its client follows it (``RunService._eta``): fully if someone waits for
it or asked about it since its 202, not at all if nobody has for a few seconds after it (it will
be cancelled unrun), the lane's recent kept share while too new to tell.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

ALPHA = 0.3  # weight of the latest run in the moving averages
MIN_EXPECTED_S = 0.02  # runs predicted shorter than this say little about the pace
MIN_PACE, MAX_PACE = 0.05, 1000.0
LIVE_MIN_S = 0.5  # a running run's pace counts once it has run this long…
LIVE_MIN_DONE = 0.05  # …and done this share of its work


MIN_CPU_S = 0.01  # runs that used less CPU say little about the slowdown
# Runs that will pass a waiting one: the work submitted to the lane over this long lately, of
# the runs that would start before it, tells how much more will come while it waits...
ARRIVAL_WINDOW_S = 60.0
MIN_ARRIVAL_SPAN_S = 10.0  # (a lane younger than this: as if it were this old)
MAX_PASSING_SHARE = 0.5  # ...up to this share of the lane's processes' time (its wait × 2)

# A running run: its predicted work, seconds since it started in a process, the share of it done
# (-1: not known) and its explainer ("": not known); a queued one: its predicted work (and
# explainer). The shorter tuples of earlier versions are taken too.
Running = tuple[float, float] | tuple[float, float, float] | tuple[float, float, float, str]
# … and how much of a queued run's work counts (1: someone follows it; 0: its client left; None:
# not known, the lane's recent kept share)
Ahead = float | tuple[float, str] | tuple[float, str, float | None]


def machine_load() -> float:
    """Runnable processes per CPU lately (the 1-minute load average over the CPU count), at
    least 1.0: how many times longer than its CPU time a run takes on shared CPUs, roughly (1.0
    where the load average is not known)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1.0
    return min(MAX_PACE, max(1.0, load / (os.cpu_count() or 1)))


class Biases:
    """Each explainer's measured CPU seconds per predicted second (a moving average)."""

    def __init__(self) -> None:
        self._bias: dict[str, float] = {}
        self._lock = threading.Lock()

    def record(self, explainer: str, ratio: float) -> None:
        ratio = min(MAX_PACE, max(MIN_PACE, ratio))
        with self._lock:
            old = self._bias.get(explainer)
            self._bias[explainer] = ratio if old is None else old + ALPHA * (ratio - old)

    def get(self, explainer: str) -> float | None:
        with self._lock:
            return self._bias.get(explainer)


class LaneClock:
    """What one lane's recent runs measured, and the wait a new run can expect from it."""

    def __init__(
        self,
        workers: int,
        biases: Biases | None = None,
        load: Callable[[], float] | None = None,
        born: float | None = None,
    ) -> None:
        self.workers = max(1, workers)
        self.load = load  # the pace until a run has measured it (None: 1.0; machine_load)
        self.measured = False  # a run of the lane has told the pace
        self.pace = 1.0  # wall seconds per predicted second in the lane's processes, lately
        self.slow = 1.0  # wall seconds per CPU second in the lane's processes, lately
        self.slow_known = False  # a run has measured it
        self.store_s = 0.0  # from a process's end to the stored result, lately
        self.kept = 1.0  # share of the work queued in the lane that was done, lately
        self.biases = biases if biases is not None else Biases()
        self._lock = threading.Lock()
        self._born = time.monotonic() if born is None else born  # (time.monotonic's)
        # runs submitted lately: when, their rank (lower starts first), predicted work, explainer
        self._arrivals: deque[tuple[float, float, float, str]] = deque()

    def arrived(self, rank: float, expected_s: float, explainer: str = "", now: float = -1) -> None:
        """A run of ``expected_s`` of work (of ``explainer``) entered the lane's queue, where
        runs of a lower ``rank`` start first (app.web.runs: its expected work, less the head
        start of a run its client waits for)."""
        now = time.monotonic() if now < 0 else now
        with self._lock:
            self._arrivals.append((now, rank, expected_s, explainer))
            while self._arrivals and self._arrivals[0][0] < now - ARRIVAL_WINDOW_S:
                self._arrivals.popleft()

    def _passing(self, rank: float, now: float, pace_of: Callable[[str], float]) -> float:
        """The share of the lane's processes' time that runs submitted after one of ``rank``,
        but started before it, will take while it waits: the work of the lane's recent
        arrivals of a lower rank per second, at their pace and the lane's kept share."""
        with self._lock:
            recent = [a for a in self._arrivals if a[0] >= now - ARRIVAL_WINDOW_S]
            kept = self.kept
        span = max(MIN_ARRIVAL_SPAN_S, min(ARRIVAL_WINDOW_S, now - self._born))
        work = sum(e * pace_of(name) for _, r, e, name in recent if r < rank)
        return min(MAX_PASSING_SHARE, work * kept / (span * self.workers))

    @property
    def slowdown(self) -> float:  # the name of earlier versions
        return self.pace

    def record(
        self,
        expected_s: float,
        run_s: float,
        store_s: float,
        cpu_s: float | None = None,
        explainer: str = "",
    ) -> None:
        """A run predicted at ``expected_s`` of work ended in a process after ``run_s`` of wall
        time (``cpu_s`` of CPU time there, where known, for ``explainer``), then took
        ``store_s`` until its result was stored."""
        with self._lock:
            if expected_s >= MIN_EXPECTED_S and run_s > 0:
                ratio = min(MAX_PACE, max(MIN_PACE, run_s / expected_s))
                # the first measured run sets it (as the slowdown's), whatever was guessed
                self.pace = ratio if not self.measured else self.pace + ALPHA * (ratio - self.pace)
                self.measured = True
                if cpu_s is not None and cpu_s >= MIN_CPU_S and explainer:
                    slow = min(MAX_PACE, max(MIN_PACE, run_s / cpu_s))
                    self.slow = (
                        slow if not self.slow_known else self.slow + ALPHA * (slow - self.slow)
                    )
                    self.slow_known = True
                    self.biases.record(explainer, cpu_s / expected_s)
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
        running: Iterable[Running] = (),
        ahead: Iterable[Ahead] = (),
        explainer: str = "",
        rank: float | None = None,
        now: float = -1,
    ) -> float:
        """Seconds until the result of a run of ``expected_s`` of work (of ``explainer``, where
        known) submitted now, with ``running`` runs in the lane's processes (their predicted
        work, seconds since they started there and, where known, the share of it done and
        their explainer) and the ``ahead`` runs (their predicted work, and explainer) to be
        started before it; with its ``rank`` among the lane's runs, the runs that will be
        submitted while it waits and start before it (the recent ones' rate: :meth:`arrived`)
        make its wait longer, as a priority queue's (its wait over one less their share of the
        processes' time)."""
        with self._lock:
            pace, slow, known, store, kept = (
                self.pace,
                self.slow,
                self.slow_known,
                self.store_s,
                self.kept,
            )
            if not self.measured and self.load is not None:
                pace = self.load()
        busy = [_running(r) for r in running]
        queue = [_ahead(a) for a in ahead]
        names = {explainer, *(b[3] for b in busy), *(q[1] for q in queue)}
        bias = {name: self.biases.get(name) for name in names}
        live, live_slow = [], []
        for e, since, done, name in busy:
            if since >= LIVE_MIN_S and done >= LIVE_MIN_DONE and e >= MIN_EXPECTED_S:
                live.append(since / (done * e))  # its own pace so far
                b = bias.get(name)
                if b is not None:
                    live_slow.append(since / (done * e * b))
        if live:  # the runs under way say how fast the lane goes now
            now_pace = min(MAX_PACE, max(MIN_PACE, sum(live) / len(live)))
            pace = (pace + now_pace) / 2
        if live_slow and known:
            slow = (slow + min(MAX_PACE, max(MIN_PACE, sum(live_slow) / len(live_slow)))) / 2

        def pace_of(name: str) -> float:
            if name not in bias:  # a recent arrival's explainer (app.web.eta.LaneClock._passing)
                bias[name] = self.biases.get(name)
            b = bias.get(name) if known else None
            return pace if b is None else b * slow

        left = sum(
            (1.0 - done) * e * pace_of(name) if done >= 0 else max(0.0, e * pace_of(name) - since)
            for e, since, done, name in busy
        )
        queued = sum(e * pace_of(name) * (kept if w is None else w) for e, name, w in queue)
        # a free process at once; else the work ahead shared out over the lane's processes
        wait = 0.0 if len(busy) < self.workers and not queued else (left + queued) / self.workers
        if wait > 0 and rank is not None:
            now = time.monotonic() if now < 0 else now
            wait /= 1.0 - self._passing(rank, now, pace_of)
        return wait + expected_s * pace_of(explainer) + store


def _running(r: Running) -> tuple[float, float, float, str]:
    """A running run as (predicted work, seconds since it started, share done or -1, explainer)."""
    done = float(r[2]) if len(r) > 2 else -1.0
    name = str(r[3]) if len(r) > 3 else ""
    return float(r[0]), float(r[1]), done, name


def _ahead(a: Ahead) -> tuple[float, str, float | None]:
    """A queued run as (predicted work, explainer, share of it that counts or None)."""
    if isinstance(a, int | float):
        return float(a), "", None
    return float(a[0]), str(a[1]), a[2] if len(a) > 2 else None
