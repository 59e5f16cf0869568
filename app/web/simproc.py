"""Simulation processes that die with their worker, hold nothing of the server's, and cannot
take more than their share of memory or CPU.

The app workers start their simulation processes (see :mod:`app.web.runs`) from a fork server of
their own (:mod:`app.web.simworker`; forked from the worker where there is none). A fork
inherits all of its parent: uvicorn's signal handlers (a handler that only sets a flag on a server the child
does not run, so SIGTERM did nothing), every socket (the listening one too: a child left behind
kept the port bound, and the next ``scripts/serve`` failed with "Address already in use"), and
no tie to its parent's life (a worker killed by the OOM killer left its children running). So
each simulation process, as it starts (:func:`init_process`):

* gets ``PR_SET_PDEATHSIG`` = SIGKILL (``prctl(2)``) and a thread that checks ``getppid()``
  twice a second (a parent that died before the ``prctl`` call, or a kernel without it), and
  that its app worker lives (started by the fork server, whose parent the worker is: the fork
  server exits when the worker's end of its pipe closes, and the kernel then ends this one);
* restores the default handling of SIGTERM, SIGINT and SIGHUP and drops the signal wakeup fd;
* swaps every inherited socket for ``/dev/null`` (``dup2``: the fd number stays taken, so an
  object that still thinks it owns the socket closes nothing else);
* gets hard limits (``setrlimit``): an address space of ``APP_SIM_MEMORY_MB`` and, per run,
  ``APP_SIM_RUN_MB`` more than the process had when the run began (``RLIMIT_AS``'s soft limit,
  set before each run to the address space in use plus the allowance, back to the hard one
  after: a run cannot grow its process by more, however large the process already is) and
  ``APP_SIM_CPU_S`` seconds of CPU: a profiling timer (``ITIMER_PROF``: the process's CPU, to
  the millisecond) is set for each run and its SIGPROF fails the run; ``RLIMIT_CPU`` (whole
  seconds of the process's whole life) is set a second past that, its SIGXCPU failing the run
  too, as a backstop (a hard limit set on the process ends it outright). Whole seconds alone
  let a run of a 1-s allowance take up to 2 s, and a test's run over it passed on a faster
  machine. A run over any fails alone with
  :class:`SimLimitExceeded` (HTTP 422 naming the limit); the process goes on to the next run.

``PR_SET_PDEATHSIG`` fires when the *thread* that forked the process ends, not the process, so
every fork happens on one thread that lives as long as the app process (:class:`_Spawner`),
never on a request thread. A process that dies anyway (the OOM killer, a segfault, SIGKILL)
breaks its ``ProcessPoolExecutor``; :class:`LanePool` answers the runs it held with
:class:`SimProcessDied` (HTTP 503 with ``Retry-After``) and forks a new pool for the next ones.

:func:`follow_master` ties an app worker to uvicorn's master the same way (SIGTERM, then SIGKILL
after a grace period), so a killed master leaves no worker holding the port.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import queue
import resource
import signal
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from multiprocessing.context import BaseContext
from typing import Any, TypeVar

from app.sim.core import Message, msg
from app.web import memory
from app.web.libc import LIBC

log = logging.getLogger("stepscope")
T = TypeVar("T")

PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_PARENT_S = 0.5  # how often a process checks that its parent is alive
MASTER_GRACE_S = 5.0  # an app worker whose master died has this long to shut down cleanly
REBUILD_RETRY_S = 1.0


# --- failures a run can end in -----------------------------------------------------------------


class SimLimitExceeded(Exception):
    """A run went over the memory or CPU a simulation process may use (HTTP 422)."""

    def __init__(self, limit: str, amount: float, per_run: bool = False) -> None:
        super().__init__(limit, amount, per_run)  # picklable: it crosses back from the process
        self.limit = limit  # "memory" | "cpu"
        self.amount = amount  # the limit, in MB or CPU seconds
        self.per_run = per_run  # memory: the growth one run may add (APP_SIM_RUN_MB)

    @property
    def message(self) -> Message:
        if self.limit == "memory" and self.per_run:
            return msg(
                "this simulation needs more than the {mb} MB of memory one run may add "
                "(APP_SIM_RUN_MB); choose smaller parameters",
                mb=round(self.amount),
            )
        if self.limit == "memory":
            return msg(
                "this simulation needs more than the {mb} MB of memory a run may use "
                "(APP_SIM_MEMORY_MB); choose smaller parameters",
                mb=round(self.amount),
            )
        return msg(
            "this simulation needs more than the {s} s of CPU time a run may use "
            "(APP_SIM_CPU_S); choose smaller parameters",
            s=f"{self.amount:g}",
        )

    def __str__(self) -> str:
        unit = "MB" if self.limit == "memory" else "s of CPU"
        return f"over the simulation's {self.limit} limit ({self.amount:g} {unit})"


class SimProcessDied(Exception):
    """The process running this run died (killed from outside: the OOM killer, a signal); the
    pool is replaced. Nothing says the run itself was at fault: try again (HTTP 503)."""

    retry_after = 2

    def __init__(self) -> None:
        super().__init__("the simulation process stopped unexpectedly")

    @property
    def message(self) -> Message:
        return msg(
            "the simulation process stopped unexpectedly; try again in {s} s", s=self.retry_after
        )


class _CpuExceeded(BaseException):
    """Raised by the CPU limits' handler (a BaseException: no ``except Exception`` swallows it)."""


# --- dying with the parent -----------------------------------------------------------------------


_LIBC = LIBC


def set_parent_death_signal(sig: int) -> bool:
    """Have the kernel send ``sig`` to this process when its parent (thread) ends; Linux only.
    Answers whether the kernel took it."""
    if _LIBC is None:
        return False
    try:
        return int(_LIBC.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except AttributeError:  # not Linux
        return False


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (exists and is not a zombie waiting for its parent)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def _watch_parent(parent: int, sig: int, grace_s: float, owner: int | None = None) -> None:
    while os.getppid() == parent and (owner is None or alive(owner)):
        threading.Event().wait(WATCH_PARENT_S)
    if sig != signal.SIGKILL:
        with contextlib.suppress(OSError):
            os.kill(os.getpid(), sig)
        threading.Event().wait(grace_s)
    os.kill(os.getpid(), signal.SIGKILL)


def follow_parent(
    parent: int, sig: int = signal.SIGKILL, grace_s: float = 0.0, owner: int | None = None
) -> None:
    """End this process when ``parent`` (its parent's pid now) dies: ``sig`` at once from the
    kernel, and from a watchdog thread if the kernel did not (then SIGKILL ``grace_s`` later);
    and when ``owner`` dies, if given (the app worker of a process its fork server started)."""
    set_parent_death_signal(sig)
    threading.Thread(
        target=_watch_parent, args=(parent, sig, grace_s, owner), name="parent-watch", daemon=True
    ).start()


def follow_master() -> None:
    """In an app worker that uvicorn's master started (``--workers N``): shut down when the
    master dies (SIGTERM: uvicorn closes the listening socket and finishes its requests; SIGKILL
    after :data:`MASTER_GRACE_S`). Run alone (no master) it does nothing: a server started
    from a shell must outlive the shell."""
    import multiprocessing

    master = multiprocessing.parent_process()
    if master is None or master.pid is None:
        return
    if master.pid != os.getppid():
        if not alive(master.pid):
            # the master died while it started this worker (it restarts a killed worker at
            # once; killed itself a moment later, it left this one to init): end now
            os.kill(os.getpid(), signal.SIGTERM)
        return  # else not a process the master started (a fork server's child that imported us)
    follow_parent(master.pid, signal.SIGTERM, MASTER_GRACE_S)


def restore_signals() -> None:
    """Default handling of the signals that end a process (the server's handlers only set a
    flag on a server this process does not run), and no signal wakeup fd of the server's."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)


def release_sockets() -> int:
    """Swap every socket this process inherited for ``/dev/null``; answers how many."""
    released = 0
    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd == devnull:
                continue
            try:
                if stat.S_ISSOCK(os.fstat(fd).st_mode):
                    os.dup2(devnull, fd, inheritable=False)
                    released += 1
            except OSError:  # the fd of the listing itself, gone by now
                continue
    except FileNotFoundError:  # no /proc
        pass
    finally:
        os.close(devnull)
    return released


# --- limits ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Limits:
    memory_mb: int  # address space of a simulation process (0: no limit)
    cpu_s: float  # CPU seconds of one run (0: no limit)
    run_mb: int = 0  # address space one run may add to its process (0: no limit)
    arenas: int = 0  # glibc malloc arenas (app.web.memory.tune_heap; 0: glibc's default)


@dataclass(frozen=True, slots=True)
class Recycle:
    """When a lane's processes are replaced by fresh ones, after a run: one holds more than
    ``private_mb`` of its own (what a large run left behind: CPython keeps freed small objects
    in its own arenas, and a fragmented heap cannot be trimmed; and the pages of its worker's
    heap it was forked with, which it alone holds once the worker has moved on) or has done
    ``runs`` runs (0: never)."""

    private_mb: float = 0.0
    runs: int = 0

    def due(self, usage: Usage) -> bool:
        return (0 < self.private_mb < usage.private_mb) or (0 < self.runs <= usage.runs)


_limits = Limits(0, 0.0)
_running = False  # a run is under way (SIGPROF or SIGXCPU fails it)


def _on_cpu_limit(_sig: int, _frame: Any) -> None:
    if _running:
        raise _CpuExceeded


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _set_cpu_soft(seconds: int | None) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = hard if seconds is None else seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _set_memory_soft(limit: int | None) -> None:
    """The address-space soft limit: ``limit`` bytes (at most the hard limit), or the hard one."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = hard if limit is None else limit
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def apply_memory_limit(mb: int) -> None:
    if mb <= 0:
        return
    limit = mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def init_process(
    parent: int, limits: Limits, then: Callable[..., None] | None, args: tuple[Any, ...]
) -> None:
    """The first thing a simulation process does (its pool's initializer). ``parent`` is the
    app process the pool belongs to: this process's parent, or (started by the fork server,
    app.web.simworker) its grandparent, whose death ends the fork server and so this process
    (and, should that fail, the watchdog thread, which watches both)."""
    global _limits
    # before any thread: started by the fork server, nothing of the worker's settings is here
    memory.tune_heap(limits.arenas)
    direct = os.getppid()
    follow_parent(direct, owner=None if direct == parent else parent)
    if os.getppid() != direct or not alive(parent):  # died before the kernel was told
        os.kill(os.getpid(), signal.SIGKILL)
    restore_signals()
    release_sockets()
    _limits = limits
    signal.signal(signal.SIGXCPU, _on_cpu_limit)
    signal.signal(signal.SIGPROF, _on_cpu_limit)
    apply_memory_limit(limits.memory_mb)
    if then is not None:
        then(*args)


@dataclass(frozen=True, slots=True)
class Usage:
    """What one run took in its simulation process: its own CPU time (user + system; what its
    prediction is held to, whatever else shares the CPUs), its wall time in the process, the
    process's own memory after the run (MB, :func:`private_mb`), how many runs it has done, and
    the most its resident memory grew over what it was when the run began (MB, 0.0 where not
    known; :func:`rss_growth`)."""

    cpu_s: float
    wall_s: float
    private_mb: float
    pid: int
    runs: int
    grew_mb: float = 0.0


_runs_done = 0  # runs this simulation process has done


def private_mb() -> float:
    """The resident memory only this process maps (MB; 0 where /proc is missing): what it
    allocated itself, and the pages of its app worker's heap it holds alone because the worker
    has since changed or freed them. Its resident size says less: right after the fork it
    already counts every page of the worker's, shared and not copied."""
    total = 0
    try:
        with open("/proc/self/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith((b"Private_Clean:", b"Private_Dirty:")):
                    total += int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return total / 1024


def _status_mb(field: bytes) -> float:
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0.0


def _memory_soft_below_hard() -> bool:
    """Whether the run's own allowance, not the process's hard limit, is what was hit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    return hard == resource.RLIM_INFINITY or soft < hard


def rss_mark() -> float:
    """Reset this process's resident high-water mark to its resident size now (Linux 4.0+:
    ``/proc/self/clear_refs``); answers that size in MB (0.0 where not known)."""
    try:
        with open("/proc/self/clear_refs", "wb") as f:
            f.write(b"5")
    except OSError:
        return 0.0
    return _status_mb(b"VmRSS:")


def rss_growth(mark: float) -> float:
    """How far (MB) this process's resident size rose above ``mark`` (:func:`rss_mark`) at
    its highest since."""
    return max(0.0, _status_mb(b"VmHWM:") - mark) if mark > 0 else 0.0


def limited(fn: Callable[..., T], *args: Any) -> tuple[T, Usage]:
    """Run ``fn(*args)`` in a simulation process within its limits; its result and what it took."""
    global _running, _runs_done
    cpu = _limits.cpu_s
    mark = rss_mark()
    cpu0, wall0 = _cpu_used(), time.monotonic()
    if cpu > 0:
        _set_cpu_soft(math.ceil(cpu0 + cpu) + 1)  # the backstop
        signal.setitimer(signal.ITIMER_PROF, cpu)
    grow_mb = _limits.run_mb
    if grow_mb > 0 and (size := _status_mb(b"VmSize:")) > 0:
        _set_memory_soft(int((size + grow_mb) * 1024 * 1024))
    _running = True
    try:
        result = fn(*args)
        _runs_done += 1
        cpu_s, wall_s = _cpu_used() - cpu0, time.monotonic() - wall0
        grew = rss_growth(mark)
        memory.trim()  # before measuring: what a large run freed goes back to the system
        return result, Usage(cpu_s, wall_s, private_mb(), os.getpid(), _runs_done, grew)
    except MemoryError:
        if grow_mb > 0 and _memory_soft_below_hard():
            raise SimLimitExceeded("memory", grow_mb, per_run=True) from None
        raise SimLimitExceeded("memory", _limits.memory_mb) from None
    except _CpuExceeded:
        raise SimLimitExceeded("cpu", cpu) from None
    finally:
        _running = False
        if cpu > 0:
            signal.setitimer(signal.ITIMER_PROF, 0)
            _set_cpu_soft(None)
        if grow_mb > 0:
            _set_memory_soft(None)
        memory.trim()  # what a large (or failed) run freed goes back to the system


# --- forking from one long-lived thread ----------------------------------------------------------


class _Spawner:
    """One thread per app process that does every fork of simulation processes, so their
    parent-death signal is tied to the process's life, not to a request thread's."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _loop(self) -> None:
        while True:
            fn, done = self._calls.get()
            if not done.set_running_or_notify_cancel():
                continue
            try:
                done.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)

    def post(self, fn: Callable[[], T]) -> Future[T]:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="sim-spawner", daemon=True)
                self._thread.start()
        done: Future[T] = Future()
        self._calls.put((fn, done))
        return done


_SPAWNER = _Spawner()


def _after_fork_in_child() -> None:
    global _SPAWNER
    _SPAWNER = _Spawner()  # the parent's thread does not exist here


os.register_at_fork(after_in_child=_after_fork_in_child)


def _noop() -> None:
    return None


class LanePool:
    """A ``ProcessPoolExecutor`` of simulation processes that replaces itself when broken.

    ``submit`` returns a future of its own: a run in a process that died ends in
    :class:`SimProcessDied`, a run over the memory limit in :class:`SimLimitExceeded`; runs
    submitted while the new pool is being forked wait for it."""

    def __init__(
        self,
        ctx: BaseContext,
        workers: int,
        limits: Limits,
        initializer: Callable[..., None] | None = None,
        initargs: tuple[Any, ...] = (),
        recycle: Recycle | None = None,
    ) -> None:
        self._ctx = ctx
        self.workers = workers
        self.limits = limits
        self.recycle = recycle or Recycle()
        self.recycled = 0  # pools forked again because a process grew or had done its runs
        self._init = (initializer, initargs)
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._waiting: list[tuple[Callable[..., Any], tuple[Any, ...], Future[Any]]] = []
        self._closed = False
        self.replaced = 0  # pools forked again after one broke
        self._pool = _SPAWNER.post(self._build).result()

    def _build(self) -> ProcessPoolExecutor:
        """Fork the processes (on the spawner thread: with fork, the first submit forks them)."""
        initializer, initargs = self._init
        pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=self._ctx,
            initializer=init_process,
            initargs=(os.getpid(), self.limits, initializer, initargs),
        )
        for _ in range(self.workers):
            pool.submit(_noop)
        return pool

    def pids(self) -> list[int]:
        """The simulation processes' ids (monitoring, tests)."""
        with self._lock:
            pool = self._pool
        procs: dict[int, Any] = getattr(pool, "_processes", None) or {}
        return sorted(procs)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``fn(*args)`` in a simulation process: its result."""
        plain: Future[T] = Future()
        self.submit_measured(fn, *args).add_done_callback(partial(_copy_outcome, plain, first=True))
        return plain

    def submit_measured(self, fn: Callable[..., T], *args: Any) -> Future[tuple[T, Usage]]:
        """Run ``fn(*args)`` in a simulation process: its result and what it took (:class:`Usage`)."""
        outer: Future[tuple[T, Usage]] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new runs after shutdown")
            pool = self._pool
            if pool is None:  # a new pool is being forked
                self._waiting.append((fn, args, outer))
                return outer
            try:
                inner = pool.submit(limited, fn, *args)
            except BrokenProcessPool:
                self._waiting.append((fn, args, outer))
                self._broken(pool)
                return outer
        inner.add_done_callback(partial(self._settle, pool, outer))
        return outer

    def _settle(self, pool: ProcessPoolExecutor, outer: Future[Any], inner: Future[Any]) -> None:
        if inner.cancelled():
            outer.cancel()
            return
        exc = inner.exception()
        if isinstance(exc, BrokenProcessPool):
            with self._lock:
                self._broken(pool)
            outer.set_exception(SimProcessDied())
        elif isinstance(exc, MemoryError):  # while handing the result back
            outer.set_exception(SimLimitExceeded("memory", self.limits.memory_mb))
        elif exc is not None:
            outer.set_exception(exc)
        else:
            result = inner.result()
            if self.recycle.due(result[1]):
                with self._lock:
                    self._renew(pool)
            outer.set_result(result)

    def _renew(self, pool: ProcessPoolExecutor) -> None:
        """A process of ``pool`` holds over ``recycle.private_mb`` or did ``recycle.runs`` runs
        (under the lock): fork a new pool, once; the old one's processes finish the runs they
        hold, then exit (their memory, however fragmented, goes back with them)."""
        if self._pool is not pool or self._closed:
            return
        self._pool = None
        _SPAWNER.post(partial(self._rebuild, pool, renew=True))

    def _broken(self, pool: ProcessPoolExecutor) -> None:
        """``pool`` broke (under the lock): fork a new one, once."""
        if self._pool is not pool or self._closed:
            return
        self._pool = None
        log.warning("a simulation process died; forking its pool again")
        _SPAWNER.post(partial(self._rebuild, pool))

    def _rebuild(self, old: ProcessPoolExecutor, renew: bool = False) -> None:
        """On the spawner thread: a new pool, then the runs that waited for it."""
        old.shutdown(wait=False, cancel_futures=not renew)
        while True:
            try:
                pool = self._build()
                break
            except OSError:  # fork failed (out of memory or processes): try again shortly
                log.exception("could not fork simulation processes")
                with self._lock:
                    waiting, self._waiting = self._waiting, []
                for _, _, outer in waiting:
                    outer.set_exception(SimProcessDied())
                if self._closed:
                    return
                threading.Event().wait(REBUILD_RETRY_S)
        with self._lock:
            if self._closed:
                pool.shutdown(wait=False, cancel_futures=True)
                return
            self._pool = pool
            if renew:
                self.recycled += 1
            else:
                self.replaced += 1
            waiting, self._waiting = self._waiting, []
        for fn, args, outer in waiting:
            if outer.cancelled():
                continue
            try:
                chained = self.submit_measured(fn, *args)
            except RuntimeError as exc:
                outer.set_exception(exc)
                continue
            chained.add_done_callback(partial(_copy_outcome, outer))

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
            waiting, self._waiting = self._waiting, []
        for _, _, outer in waiting:
            outer.cancel()
        if pool is not None:
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def _copy_outcome(outer: Future[Any], inner: Future[Any], first: bool = False) -> None:
    """Settle ``outer`` as ``inner`` ended (``first``: with the first item of its result)."""
    if outer.done():
        return
    if inner.cancelled():
        outer.cancel()
    elif (exc := inner.exception()) is not None:
        outer.set_exception(exc)
    else:
        outer.set_result(inner.result()[0] if first else inner.result())
