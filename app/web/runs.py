"""Running simulations for the web: a bounded process pool, a content-addressed trace store,
jobs with progress for long runs, cancellation when nobody waits any more, per-client limits.

* **Where runs happen.** Never in a request thread: in pools of processes forked when the
  app starts (again when one dies; each runs within memory and CPU limits and dies with its
  worker: app.web.simproc). Runs expected to take at most ``quick_run_s`` go to their own
  ``sim_quick_workers`` processes, so a small run never waits behind a long one; the rest to
  ``sim_workers`` processes that run at a lower CPU priority (``sim_nice``), so pages and small
  runs stay quick while long runs use what CPU is left. Each lane holds at most its workers +
  ``sim_queue`` runs running or waiting; past that a request gets :class:`Busy` (HTTP 503
  with ``Retry-After``).
* **Traces are content-addressed** by (explainer, sim_version, canonical params). A finished
  trace is kept in memory (an LRU bounded in bytes) and in the database (pickled, compressed), so
  every worker process and every restart shares it; the same params asked twice at once run once.
* **Long runs are jobs.** A run expected to take more than ``job_threshold_s`` does not hold the
  request: :class:`JobStarted` is raised, pages show a progress bar (simulated work done / total)
  and the API answers 202 with the job's URL. A job nobody has asked about for ``job_idle_s`` is
  cancelled; a short run whose client disconnects is cancelled (see :meth:`RunService.wait`).
* **Expensive runs are rate-limited per client**: at most ``expensive_runs_per_minute`` runs
  expected to take over a second (:class:`RateLimited`, HTTP 429 with ``Retry-After``).

Cancelling sets a flag in memory shared with the worker processes; the simulation's progress
callback sees it and raises :class:`~app.sim.core.Cancelled`, which frees the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ctypes
import hashlib
import heapq
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Engine

from app.settings import Settings
from app.sim.core import Cancelled, EncodedJSON, Explainer, Trace, msg
from app.sim.core.cost import MAX_TRACE_BYTES, TraceTooLarge
from app.store import repo
from app.store.eviction import TraceEviction
from app.store.models import SharedJob
from app.web import answers, joberrors
from app.web.eta import Biases, LaneClock, machine_load
from app.web.simproc import LanePool, Limits, Recycle, Usage
from app.web.simworker import Answer, InheritedFd, Ran, init_worker, sim_context, simulate
from app.web.tracecache import (  # noqa: F401 - decode_trace_sized, MEMORY_PER_…: the API of runs
    MEMORY_PER_PICKLED_BYTE,
    TraceCache,
    decode_trace,
    decode_trace_sized,
    encode_trace,
    pickle_trace,
)

AnyTrace = Trace[Any, Any]
T = TypeVar("T")
LOOP_STORE_WAIT_S = 0.25  # an event loop waits this long for the store when a run is submitted
ANSWER_POLL_S = 0.005  # how often a waiter for an answer looks whether it is written

# The client (IP) of the request being served, set by middleware; read for per-client limits.
current_client: contextvars.ContextVar[str] = contextvars.ContextVar("client", default="-")
# Whether that request came from another site's page other than by following a link (the
# browser's Sec-Fetch-* headers): such a request may read what is kept, but starts no long run.
cross_site: contextvars.ContextVar[bool] = contextvars.ContextVar("cross_site", default=False)


class Busy(Exception):
    """Every worker and queue place is taken: try again in ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        self.message = msg("the simulator is busy; try again in {s} s", s=retry_after)
        super().__init__(str(self.message))
        self.retry_after = retry_after


class RateLimited(Exception):
    """This client asked for too many expensive runs in the last minute."""

    def __init__(self, retry_after: int, limit: int) -> None:
        self.message = msg(
            "at most {limit} long simulations a minute per client; try again in {s} s",
            limit=limit,
            s=retry_after,
        )
        super().__init__(str(self.message))
        self.retry_after = retry_after


class CrossSite(Exception):
    """Another site's page (an image, a script, a frame, a fetch) asked for a long run."""

    def __init__(self) -> None:
        self.message = msg(
            "another site's page asked for this long simulation; open the link itself to run it"
        )
        super().__init__(str(self.message))


class JobStarted(Exception):
    """The run takes a while: it goes on as a job; answer with its progress page or URL."""

    def __init__(self, job: Job) -> None:
        super().__init__(job.key)
        self.job = job


def on_event_loop() -> bool:
    """Whether this thread is running an asyncio event loop (an async request handler)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _stored() -> Future[bytes]:
    """A settled future standing for a result that is in the trace store."""
    done: Future[bytes] = Future()
    done.set_result(b"")
    return done


# A run answered in its request goes ahead of the jobs submitted up to this long before it (see
# _due); ahead of every job, a stream of them (one explainer's largest runs, under
# job_threshold_s since the compiled modules) held a 2.8-s job back 110 s in a soak (told 11.5 s).
HELD_AHEAD_S = 30.0
WARM_CLAIM_S = 600  # a worker's claim to warm a preset at start-up holds this long


ABANDONED_S = 3.0  # a waiting job nobody asked about since this long after its 202 is left


def _followed(job: Job, now: float) -> float | None:
    """How much of a waiting job's work a run queued behind it waits for (app.web.eta): all of
    it if someone waits for it, asked about it since it was submitted or it warms a preset;
    none if nobody has since :data:`ABANDONED_S` after its submission (its client left: it is
    cancelled, unrun, once ``job_idle_s`` has passed; the soaks' abandoned jobs made the
    estimates of the runs behind them 2-4 times too long); ``None`` (the lane's recent share)
    for one too new to tell."""
    if job.waiters or job.warm or job.seen - job.started > 0.5:
        return 1.0
    return 0.0 if now - job.started > ABANDONED_S else None


def run_record(job: Job, state: str, now: float) -> dict[str, Any]:
    """One line of the run log: the prediction, and what the run took. ``cpu_s`` is the
    simulation process's own CPU time for the run (what ``expected_seconds`` predicts, whatever
    else shares the CPUs); ``run_s`` its wall time in that process; ``wall_s`` from the request
    to the end, with ``queued_s`` of it spent waiting for a process; ``private_mb`` the
    process's own memory after it (see app.web.simproc.private_mb)."""
    usage = job.usage
    queued = (job.handed or now) - job.started
    return {
        "explainer": job.explainer,
        "key": job.key,
        "lane": job.lane,
        "state": state,
        "expected_s": round(job.expected_s, 6),
        "eta_s": round(job.eta_s, 4),
        "cpu_s": None if usage is None else round(usage.cpu_s, 4),
        "run_s": None if usage is None else round(usage.wall_s, 4),
        "wall_s": round(now - job.started, 4),
        "queued_s": round(max(0.0, queued), 4),
        "private_mb": None if usage is None else round(usage.private_mb, 1),
        "grew_mb": None if usage is None else round(usage.grew_mb, 1),
        "pid": None if usage is None else usage.pid,
        "time": round(time.time(), 3),
    }


@dataclass(eq=False)
class Job:
    key: str
    explainer: str
    slot: int
    expected_s: float
    future: Future[bytes]
    started: float = field(default_factory=time.monotonic)
    seen: float = field(default_factory=time.monotonic)  # last time someone asked about it
    waiters: int = 0
    lane: str = "long"  # long | quick
    handed: float = 0.0  # when a simulation process took it (monotonic; 0: not yet)
    usage: Usage | None = None  # what the run took in its process (when it ended there)
    sharing: Future[None] | None = None  # its row being written for the other workers
    warm: bool = False  # started ahead of any visitor (see RunService.warm): never idle
    state: str = "running"  # running | done | cancelled | failed
    error: str = ""
    shared: bool = False  # its state is in the database for the other workers (a long run)
    answer: Answer | None = None  # builds the API's answer in the simulation process
    answered: EncodedJSON | None = None  # that answer, read when the run ended, until taken
    answer_taken: bool = False  # its answer file was claimed for reading (once)
    answer_read: threading.Event = field(default_factory=threading.Event)  # …and read
    eta_s: float = 0.0  # seconds from its submission to its stored result, as estimated then

    def touch(self) -> None:
        self.seen = time.monotonic()


class RunService:
    def __init__(self, settings: Settings, engine: Engine) -> None:
        self.settings = settings
        self.engine = engine
        self.workers = max(1, settings.sim_workers)
        queue = max(0, settings.sim_queue)
        # lane → (worker processes, niceness, slots); slots index the shared arrays
        self._lanes: dict[str, tuple[int, int, list[int]]] = {
            "long": (self.workers, max(0, settings.sim_nice), list(range(self.workers + queue)))
        }
        quick = max(0, settings.sim_quick_workers)
        if quick:
            first = self.workers + queue
            nice = max(0, settings.sim_quick_nice)
            self._lanes["quick"] = (quick, nice, list(range(first, first + quick + queue)))
        slots = sum(len(free) for _, _, free in self._lanes.values())
        ctx = sim_context()  # the fork server (app.web.simworker)
        self._answers = answers.AnswerFiles(slots)  # before any fork: the processes inherit them
        self._answered = ctx.Array(ctypes.c_longlong, slots, lock=False)
        self._progress = ctx.Array(ctypes.c_double, slots, lock=False)
        self._cancel = ctx.Array(ctypes.c_byte, slots, lock=False)
        self._free = {lane: list(free) for lane, (_, _, free) in self._lanes.items()}
        self._ctx = ctx
        self._pools: dict[str, LanePool] = {}
        # runs waiting for a worker, per lane: (submitted + expected seconds, arrival, job,
        # explainer, params); the least first
        self._pending: dict[str, list[tuple[float, int, Job, Explainer[Any], Any]]] = {
            lane: [] for lane in self._lanes
        }
        self._busy = dict.fromkeys(self._lanes, 0)  # runs handed to each lane's workers
        biases = Biases()  # each explainer's CPU per predicted second, for every lane
        self._clocks = {
            lane: LaneClock(workers, biases, load=machine_load)
            for lane, (workers, _, _) in self._lanes.items()
        }
        self._order = 0
        self._jobs: dict[str, Job] = {}
        self._ended: OrderedDict[str, Job] = OrderedDict()  # finished jobs, for status pages
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()
        # the presets (free_keys) pinned; others in a quarter, full soon (app.web.tracecache)
        cache_bytes = settings.trace_cache_mb * 1024 * 1024
        self._cache = TraceCache(cache_bytes, others_bytes=cache_bytes // 4)
        # Keys of runs nobody is charged for (the presets: a fixed set, each run once per store)
        self.free_keys: set[str] = set()
        self._stop = threading.Event()
        # database writes a request on the event loop must not wait for (see _off_loop)
        self._store = ThreadPoolExecutor(max_workers=4, thread_name_prefix="run-store")
        self._watchdog: threading.Thread | None = None
        self.eviction = TraceEviction(
            engine,
            max_mb=settings.trace_store_mb,
            max_days=settings.trace_store_days,
            keep=lambda: self.free_keys,
        )

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Fork the workers now, and start the watchdog. They die with this process, hold none
        of its sockets, and run within memory and CPU limits (see app.web.simproc)."""
        s = self.settings
        limits = Limits(s.sim_memory_mb, s.sim_cpu_s, s.sim_run_mb, s.malloc_arenas)
        recycle = Recycle(self.settings.sim_recycle_mb, self.settings.sim_recycle_runs)
        with self._lock:
            if not self._pools:
                for lane, (workers, nice, _) in self._lanes.items():
                    files = [InheritedFd(self._answers.fd(slot)) for slot in self._lanes[lane][2]]
                    initargs = (self._progress, self._cancel, nice, self._answered, files)
                    self._pools[lane] = LanePool(
                        self._ctx, workers, limits, init_worker, initargs, recycle
                    )
        if self._watchdog is None:
            self._stop.clear()
            self._watchdog = threading.Thread(target=self._watch, name="job-watchdog", daemon=True)
            self._watchdog.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            for job in self._jobs.values():
                self._cancel[job.slot] = 1
            pools, self._pools = self._pools, {}
            waiting = [job for pending in self._pending.values() for _, _, job, _, _ in pending]
            for pending in self._pending.values():
                pending.clear()
        for job in waiting:
            if not job.future.done():
                job.future.set_exception(Cancelled())
        for pool in pools.values():
            pool.shutdown(wait=True, cancel_futures=True)
        if self._watchdog is not None:
            self._watchdog.join(timeout=2)
            self._watchdog = None
        self._answers.close()

    def drain(self, limit_s: float, every_s: float = 0.25) -> int:
        """Wait until every job of this worker has ended (nothing new comes in: its server has
        stopped taking connections), at most ``limit_s``; answers how many had not."""
        end = time.monotonic() + limit_s
        while True:
            left = self.running
            if not left or time.monotonic() >= end:
                return left
            time.sleep(every_s)

    # --- traces ------------------------------------------------------------------------------

    @property
    def trace_cache(self) -> TraceCache:
        """Decoded traces kept in this process (monitoring: app.web.memory.MemoryLog)."""
        return self._cache

    @staticmethod
    def key(explainer: Explainer[Any], params: Any) -> str:
        canonical = json.dumps(explainer.dump(params), sort_keys=True, separators=(",", ":"))
        text = f"{explainer.name}\n{explainer.sim_version}\n{canonical}"
        return hashlib.sha256(text.encode()).hexdigest()[:40]

    def cached(self, key: str) -> AnyTrace | None:
        found = self._cache.get(key)
        if found is not None:
            return found
        with repo.session_for(self.engine) as db:
            data = repo.get_trace_data(db=db, key=key)
        if data is None:
            return None
        try:
            trace, size = decode_trace_sized(data)
        except MemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - stale or corrupt: run again, never a 500
            # A class moved or changed shape without a sim_version bump, or a damaged row:
            # forget it, and the caller runs the trace again and stores it anew.
            logging.getLogger("stepscope").warning("stored trace %s unreadable: %r", key, exc)
            with repo.session_for(self.engine) as db:
                repo.delete_trace(db=db, key=key)
            return None
        self._cache.put(key, trace, size, pinned=key in self.free_keys)
        return trace

    def _keep(self, key: str, explainer: Explainer[Any], data: bytes) -> None:
        """Store a finished trace. It is decoded (and kept in memory) when someone asks for it:
        a job whose client has left costs no decoding, and a large result fetched once does
        not push the traces pages use out of memory."""
        with repo.session_for(self.engine) as db:
            repo.put_trace_data(
                db=db,
                key=key,
                explainer=explainer.name,
                sim_version=explainer.sim_version,
                data=data,
            )
        self.eviction.stored(len(data))

    # --- running -----------------------------------------------------------------------------

    def trace(self, explainer: Explainer[Any], params: Any) -> AnyTrace:
        """The trace of ``params``: cached, or run now (short runs), or :class:`JobStarted`."""
        key = self.key(explainer, params)
        found = self.cached(key)
        if found is not None:
            return found
        job = self.submit(explainer, params, key)
        if job.expected_s > self.settings.job_threshold_s:
            raise JobStarted(job)
        return self.wait(job, explainer)

    def submit(
        self,
        explainer: Explainer[Any],
        params: Any,
        key: str,
        *,
        charge: bool = True,
        answer: Answer | None = None,
    ) -> Job:
        """Start a run, or join the same run already under way (``charge``: count it against
        the client's quota of long runs). A run whose trace is predicted over
        ``MAX_TRACE_BYTES`` is refused before it starts (:class:`TraceTooLarge`, a 422).
        ``answer``: a new run also builds its API answer in the simulation process, for
        :meth:`wait_answer` (a run joined is answered from its trace)."""
        size = explainer.expected_bytes(params)
        if size > MAX_TRACE_BYTES:
            raise TraceTooLarge(size, MAX_TRACE_BYTES)
        expected = explainer.expected_seconds(params)
        if expected > 1.0 and charge and key not in self.free_keys:
            with self._lock:
                joined = self._join(key)
            if joined is not None:
                return joined
            self._admit_expensive()  # outside the lock: it asks the database
        with self._lock:
            joined = self._join(key)
            if joined is not None:
                return joined
            quick = "quick" in self._lanes and expected <= self.settings.quick_run_s
            lane = "quick" if quick else "long"
            pool, free = self._pools.get(lane), self._free[lane]
            if not free or pool is None:
                if pool is None:
                    raise Busy(5)
                raise Busy(max(1, round(min(expected, 30.0))) if self._jobs else 2)
            slot = free.pop()
            self._progress[slot] = 0.0
            self._cancel[slot] = 0
            self._answered[slot] = 0
            future: Future[bytes] = Future()
            job = Job(
                key=key,
                explainer=explainer.name,
                slot=slot,
                expected_s=expected,
                future=future,
                lane=lane,
                answer=answer,
                eta_s=self._eta(lane, expected, explainer.name),
            )
            self._jobs[key] = job
            self._order += 1
            # shortest first, a run's wait counting against its length (app.web.eta); a run
            # whose client waits for it in its request goes before every job
            due = self._due(time.monotonic(), expected)
            heapq.heappush(self._pending[lane], (due, self._order, job, explainer, params))
        if expected > self.settings.job_threshold_s:
            # before it can finish (its end is written over this row); see _finished
            job.shared = True
            job.sharing = self._store.submit(self._share, job)
            if not on_event_loop():
                job.sharing.result()
            else:
                with contextlib.suppress(FutureTimeout):
                    job.sharing.result(timeout=LOOP_STORE_WAIT_S)
        future.add_done_callback(partial(self._finished, job, explainer))
        self._dispatch(lane)
        return job

    def _due(self, now: float, expected: float) -> float:
        """Where a run submitted ``now`` waits among its lane's (lowest first): its submission
        plus its expected work, so shorter runs go first but a run that has waited is not
        passed by every shorter one after it; a run short enough to be answered in its request
        (at most ``job_threshold_s``: its client's connection is held) :data:`HELD_AHEAD_S`
        earlier still, ahead of the jobs submitted in the half minute before it (a soak's short
        runs of 0.9 s waited in the long lane behind queued jobs of minutes' work until their
        clients gave up at 60 s) but not of a job that has waited longer (ahead of every job,
        a stream of them held a job back for minutes)."""
        held = expected <= self.settings.job_threshold_s
        return now + expected - (HELD_AHEAD_S if held else 0.0)

    def _eta(self, lane: str, expected: float, explainer: str = "") -> float:
        """Seconds until a run of ``expected`` submitted to ``lane`` now is stored (under the
        lock; app.web.eta): what is left of the lane's running runs, the share of the work
        queued before it that the lane has lately done (jobs cancelled or abandoned while they
        wait leave without running), its own work, each at its explainer's measured CPU per
        predicted second times the lane's recent slowdown (the lane's pace until measured) and
        that of the runs under way. Waiting runs start in the order of their
        submission time plus their expected work: shortest first, but a run that has waited is
        not passed by every shorter one that comes later (then its wait could not be told)."""
        now = time.monotonic()
        running = [
            (job.expected_s, now - job.handed, float(self._progress[job.slot]), job.explainer)
            for job in self._jobs.values()
            if job.lane == lane and job.handed and job.state == "running"
        ]
        due = self._due(now, expected)
        clock = self._clocks[lane]
        ahead = [
            (job.expected_s, job.explainer, _followed(job, now))
            for d, _, job, _, _ in self._pending[lane]
            if d <= due and not self._cancel[job.slot]  # a cancelled one leaves unrun
        ]
        eta = clock.eta(expected, running, ahead, explainer, rank=due - now, now=now)
        clock.arrived(due - now, expected, explainer, now=now)
        return eta

    # --- jobs every worker can answer for ----------------------------------------------------
    # A client polls its job through any of the app's workers (each keep-alive connection lands
    # on one of them), so the worker running a job shares its state, progress and end in the
    # database; the others answer from there, record the interest (so the running worker does
    # not cancel a job whose client is polling elsewhere) and pass cancel requests on.

    def _share(self, job: Job) -> None:
        with repo.session_for(self.engine) as db:
            repo.share_job(
                db=db,
                key=job.key,
                explainer=job.explainer,
                expected_s=job.expected_s,
                now=time.time(),
            )

    def _sync_shared(self) -> None:
        """Write the progress of this worker's shared jobs; take in interest and cancel
        requests other workers recorded."""
        with self._lock:
            mine = [job for job in self._jobs.values() if job.shared and job.state == "running"]
        if not mine:
            return
        progress = {job.key: float(self._progress[job.slot]) for job in mine}
        with repo.session_for(self.engine) as db:
            seen = repo.report_jobs(db=db, progress=progress)
        wall, mono = time.time(), time.monotonic()
        for job in mine:
            if job.key not in seen:
                continue
            seen_at, cancel = seen[job.key]
            job.seen = max(job.seen, mono - max(0.0, wall - seen_at))
            if cancel:
                self._cancel[job.slot] = 1

    def shared_job(self, key: str, *, cancel: bool = False) -> SharedJob | None:
        """A job another worker runs (or ran), as it shared it; counts as interest in it."""
        with repo.session_for(self.engine) as db:
            row = repo.look_at_job(db=db, key=key, now=time.time(), cancel=cancel)
            if row is not None:
                db.expunge(row)
        return row

    def warm(self, runs: list[tuple[Explainer[Any], Any]], *, one_by_one: bool = False) -> int:
        """Start the runs not stored yet (presets when the app starts, a scenario when it is
        shared), so the first visitor of a lecture hall finds the trace ready; nobody waits for
        them. ``one_by_one``: wait for each before the next (a background thread warming many,
        never holding more than one worker). Answers how many ran or started."""
        started = 0
        token = current_client.set("warm-up")  # not any visitor's quota of long runs
        try:
            for explainer, params in sorted(runs, key=lambda r: r[0].expected_seconds(r[1])):
                if self._stop.is_set():
                    break
                key = self.key(explainer, params)
                if self.cached(key) is not None or (one_by_one and not self._claim_warm(key)):
                    continue
                try:
                    job = self.submit(explainer, params, key, charge=not one_by_one)
                except (Busy, RateLimited):
                    break
                job.warm = True
                started += 1
                if one_by_one:
                    try:
                        job.future.result()
                    except Exception:  # noqa: BLE001 - a preset that fails is not warmed
                        continue
        finally:
            current_client.reset(token)
        return started

    def _claim_warm(self, key: str) -> bool:
        """Whether this worker warms ``key`` at start-up: the first of the app's workers to ask
        in a ten-minute window does (every worker used to run every preset as it started, so
        N workers did the start-up's work N times)."""
        window = int(time.time()) // WARM_CLAIM_S * WARM_CLAIM_S
        with repo.session_for(self.engine) as db:
            return repo.count_hit(db=db, key=f"warm:{key}", window_start=window) == 1

    def stored_count(self, keys: list[str]) -> int:
        with repo.session_for(self.engine) as db:
            return repo.stored_trace_count(db=db, keys=keys)

    def _dispatch(self, lane: str) -> None:
        """Hand waiting runs of ``lane`` to free workers, the one expected to be shortest first
        (a run of a few seconds does not wait behind several of the longest; the time a run has
        waited counts against its length), and settle those cancelled while they waited."""
        dropped: list[Job] = []
        handed: list[tuple[Job, Future[tuple[Ran, Usage]]]] = []
        with self._lock:
            pending, pool = self._pending[lane], self._pools.get(lane)
            if any(self._cancel[job.slot] for _, _, job, _, _ in pending):
                dropped = [job for _, _, job, _, _ in pending if self._cancel[job.slot]]
                pending[:] = [e for e in pending if not self._cancel[e[2].slot]]
                heapq.heapify(pending)
            while pool is not None and pending and self._busy[lane] < self._lanes[lane][0]:
                _, _, job, explainer, params = heapq.heappop(pending)
                self._busy[lane] += 1
                job.handed = time.monotonic()
                answer = None if job.answer is None else (job.answer, self._answers.fd(job.slot))
                ran = pool.submit_measured(simulate, explainer, params, job.slot, answer)
                handed.append((job, ran))
        # Outside the lock: a run already over calls back at once, and the callback takes it.
        for job, inner in handed:
            inner.add_done_callback(partial(self._relay, job))
        for job in dropped:
            if not job.future.done():
                job.future.set_exception(Cancelled())

    def _relay(self, job: Job, inner: Future[tuple[Ran, Usage]]) -> None:
        """A worker finished ``job``: free the worker for the next run, then settle the job."""
        with self._lock:
            self._busy[job.lane] -= 1
        self._dispatch(job.lane)
        ok = not inner.cancelled() and inner.exception() is None
        self._settle_answer(job, ok)
        if inner.cancelled():
            job.future.set_exception(Cancelled())
        elif (exc := inner.exception()) is not None:
            job.future.set_exception(exc)
        else:
            (data, _), job.usage = inner.result()
            job.future.set_result(data)

    def _claim_answer(self, job: Job) -> int:
        """The size of ``job``'s answer if it is in its file and this caller is the first to
        claim it (it reads it, then sets ``answer_read``); else -1."""
        with self._lock:
            if job.answer is None or job.answer_taken:
                return -1
            size = int(self._answered[job.slot]) - 1
            if size < 0:
                return -1
            job.answer_taken = True
            return size

    def _early_answer(self, job: Job) -> EncodedJSON | None:
        """``job``'s answer, read while its process still encodes the trace, if this waiter
        is the first to claim it."""
        size = self._claim_answer(job)
        if size < 0:
            return None
        try:
            return EncodedJSON(self._answers.take(job.slot, size))
        except (OSError, MemoryError):  # answered from the trace instead
            logging.getLogger("stepscope").exception("answer of %s unreadable", job.key)
            return None
        finally:
            job.answer_read.set()

    def _settle_answer(self, job: Job, ok: bool) -> None:
        """The run ended: an answer nobody has claimed is read for a waiter to come (``ok``)
        or dropped; the slot's file is empty once ``answer_read`` is set (see _finished)."""
        if job.answer is None:
            return
        size = self._claim_answer(job)
        if size < 0:
            if not job.answer_taken:  # none was written (a waiter reading one sets the event)
                self._answers.clear(job.slot)
                job.answer_read.set()
            return
        try:
            if ok:
                job.answered = EncodedJSON(self._answers.take(job.slot, size))
            else:
                self._answers.clear(job.slot)
        except (OSError, MemoryError):  # answered from the trace instead
            logging.getLogger("stepscope").exception("answer of %s unreadable", job.key)
        finally:
            job.answer_read.set()

    def wait(
        self, job: Job, explainer: Explainer[Any], poll: Callable[[], bool] | None = None
    ) -> AnyTrace:
        """Block until ``job`` ends and return its trace. ``poll`` (optional) is asked now and then
        whether the client has gone; if it has and nobody else waits, the run is cancelled."""
        found = self._wait(job, poll, take_answer=False)
        assert not isinstance(found, EncodedJSON)
        return found

    def wait_answer(
        self, job: Job, explainer: Explainer[Any], poll: Callable[[], bool] | None = None
    ) -> AnyTrace | EncodedJSON:
        """:meth:`wait`, answered with the API answer the simulation process built (``submit``'s
        ``answer``) when there is one to take (the first waiter takes it); else the trace."""
        return self._wait(job, poll, take_answer=True)

    def _wait(
        self, job: Job, poll: Callable[[], bool] | None, *, take_answer: bool
    ) -> AnyTrace | EncodedJSON:
        with self._lock:
            job.waiters += 1
        future = job.future  # the job lets go of its result once stored (see _finished)
        # a waiter for an answer looks for it often: it is ready before the run ends
        early = take_answer and job.answer is not None
        try:
            while True:
                try:
                    future.result(timeout=ANSWER_POLL_S if early else 0.1)
                    break
                except TimeoutError:
                    if early and (answered := self._early_answer(job)) is not None:
                        return answered
                    job.touch()
                    if poll is not None and poll():
                        self.release(job)
                        raise Cancelled from None
                except Cancelled:
                    raise
            if take_answer:
                with self._lock:
                    answered, job.answered = job.answered, None
                if answered is not None:
                    return answered
            found = self.cached(job.key)
            if found is None:  # stored by the done callback after the waiters woke
                found = decode_trace(future.result())
            return found
        finally:
            with self._lock:
                job.waiters -= 1
                if not job.waiters and future.done():
                    job.answered = None  # nobody else will take it

    def release(self, job: Job) -> None:
        """The caller no longer wants ``job``: cancel it unless someone else is waiting."""
        with self._lock:
            if job.waiters <= 1 and job.state == "running":
                self._cancel[job.slot] = 1
        self._dispatch(job.lane)

    def cancel(self, key: str) -> bool:
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                return False
            self._cancel[job.slot] = 1
        self._dispatch(job.lane)
        return True

    def job(self, key: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(key) or self._ended.get(key)
        if job is not None:
            job.touch()
        return job

    def peek(self, key: str) -> Job | None:
        """The job under ``key`` without counting as interest in it (monitoring, tests)."""
        with self._lock:
            return self._jobs.get(key) or self._ended.get(key)

    def progress(self, job: Job) -> float:
        return 1.0 if job.state == "done" else float(self._progress[job.slot])

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._jobs)

    def _finished(self, job: Job, explainer: Explainer[Any], future: Future[bytes]) -> None:
        # The job says it ended only once its slot is free (whoever sees the end can start the
        # next run): its end is worked out first, shared, then published with the slot.
        error = ""
        try:
            self._keep(job.key, explainer, future.result())
            state = "done"
        except Cancelled:
            state = "cancelled"
        except Exception as exc:  # noqa: BLE001 - a run that fails must still free its slot
            state, error = "failed", joberrors.describe(exc)  # shown in each reader's language
        if job.sharing is not None:  # its row is written before its end is
            with contextlib.suppress(Exception):
                job.sharing.result(timeout=60)
        if job.answer is not None and job.handed:  # its slot's answer file is read or emptied
            job.answer_read.wait(timeout=30)
        for attempt in range(5 if job.shared else 0):
            try:
                with repo.session_for(self.engine) as db:
                    repo.end_job(db=db, key=job.key, state=state, error=error)
                break
            except Exception:  # noqa: BLE001 - the slot must be freed even if the store is down
                time.sleep(0.05 * (attempt + 1))
        clock = self._clocks[job.lane]
        if job.usage is not None and job.handed:
            store_s = time.monotonic() - job.handed - job.usage.wall_s
            clock.record(job.expected_s, job.usage.wall_s, store_s, job.usage.cpu_s, job.explainer)
        # how much of its queued work the lane did: none for a job that left while it waited
        ran = 1.0 if state != "cancelled" else float(self._progress[job.slot]) if job.handed else 0
        clock.ended(ran)
        self._log_run(job, state)
        with self._lock:
            if state == "done":
                # Finished jobs are kept a while for status pages: not their (megabytes of)
                # result, which is in the store now (the 10-minute soak grew by ~1 MB a
                # finished large job).
                job.future = _stored()
            if not job.waiters:  # an answer nobody waits for (its waiter left or took it)
                job.answered = None
            job.state, job.error = state, error
            self._jobs.pop(job.key, None)
            self._free[job.lane].append(job.slot)
            self._ended[job.key] = job
            while len(self._ended) > 256:
                self._ended.popitem(last=False)

    def _log_run(self, job: Job, state: str) -> None:
        """Append the run's figures to ``settings.run_log`` (one JSON line), if set."""
        path = self.settings.run_log
        if path is None:
            return
        line = run_record(job, state, time.monotonic())
        try:
            with self._log_lock, path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
        except OSError:  # a log that cannot be written must not fail the run
            logging.getLogger("stepscope").warning("run log %s not writable", path)

    def _join(self, key: str) -> Job | None:
        """The run of ``key`` already under way, as one more client asks for it (under the lock)."""
        job = self._jobs.get(key)
        if job is not None:
            job.touch()
        return job

    def charge_client(self) -> None:
        """Count one long run (an export that draws every step or starts a browser) against
        this request's client: :class:`RateLimited` past the quota, :class:`CrossSite` when
        another site's page asked."""
        self._admit_expensive()

    def _admit_expensive(self) -> None:
        """May the client of this request start a run expected to take over a second? Not when
        another site's page asked for it behind the visitor's back (:class:`CrossSite`), nor past
        ``expensive_runs_per_minute`` in the last minute (:class:`RateLimited`), counted in the
        database so the limit holds across every worker and replica."""
        if cross_site.get():
            raise CrossSite()
        limit = self.settings.expensive_runs_per_minute
        key = "runs:" + repo.address_key(current_client.get())
        retry_after = self._off_loop(partial(self._take_hit, key, limit))
        if retry_after is None:  # the store did not answer in time: this worker's requests first
            raise Busy(2)
        if retry_after:
            raise RateLimited(retry_after, limit)

    def _take_hit(self, key: str, limit: int) -> int:
        with repo.session_for(self.engine) as db:
            return repo.take_hit(db=db, key=key, limit=limit, window_s=60, now=time.time())

    def _off_loop(self, fn: Callable[[], T]) -> T | None:
        """``fn()`` (a database write). Called on an event loop's thread (the run API submits
        from its handler), it runs on a thread of the service's own and is waited for at most
        :data:`LOOP_STORE_WAIT_S`; ``None`` if it has not answered by then (it goes on). A
        write waits up to SQLite's busy timeout (5 s) for another's, and each such wait on the
        event loop held every request of the worker (soaks saw 40-70 s stalls, a dozen runs
        submitted behind one long write)."""
        if not on_event_loop():
            return fn()
        try:
            return self._store.submit(fn).result(timeout=LOOP_STORE_WAIT_S)
        except FutureTimeout:
            return None

    def _watch(self) -> None:
        """Cancel jobs nobody has asked about for ``job_idle_s`` (their clients left)."""
        idle = self.settings.job_idle_s
        pruned = synced = time.monotonic()
        while not self._stop.wait(min(1.0, idle / 4)):
            try:
                self._sync_shared()
                synced = time.monotonic()  # other workers' interest is known up to here
                if time.monotonic() - pruned > 600:  # forget jobs nobody asked about for a day
                    pruned = time.monotonic()
                    with repo.session_for(self.engine) as db:
                        repo.prune_jobs(db=db, before=time.time() - 86_400)
                self.eviction.maybe_run()  # every few minutes (app.store.eviction)
            except Exception:  # noqa: BLE001 - a busy or absent store must not stop the watch
                pass
            now = time.monotonic()
            with self._lock:
                for job in self._jobs.values():
                    # A shared job's polls may reach other workers: what they recorded is
                    # known only up to the last sync (a busy store must not look like no one).
                    known = synced if job.shared else now
                    if job.waiters == 0 and known - job.seen > idle and not job.warm:
                        self._cancel[job.slot] = 1
            for lane in self._lanes:  # outside the lock: dispatching takes it
                self._dispatch(lane)
