"""Replacing an app worker whose memory has grown, the way a process manager does (gunicorn's
``--max-requests``, Celery's ``--max-memory-per-child``), without losing a request or a job.

What an app worker holds after its caches have filled still grew under the adversarial soak of
issue 24 while the objects it keeps did not: Python's allocated blocks 1.61 M → 1.53 M and its
bounded caches full from the first minute, while its private memory went 218 → 395 MB in seven
minutes. That is memory freed but not given back (Python's small-object arenas are returned only
when wholly empty; the transient work of a large export or a long walk's layout, interleaved with
what stays, keeps many partly used), and a heap trim cannot reach it. So a bound is kept instead:

:class:`Recycler` reads the worker's private memory (not shared with its siblings) every few
seconds; over ``limit_mb``, after the first ``after_s``, it logs why and asks the worker to stop
(SIGTERM, as uvicorn's supervisor does): the worker stops taking connections (its siblings take
them; it stops a second before the signal, see :func:`stop_accepting`), finishes the requests
under way, then, in the app's shutdown, lets the jobs it runs end
(:meth:`app.web.runs.RunService.drain`, at most ``drain_s``) before its simulation processes
stop; uvicorn's supervisor starts a fresh worker in its place. Only a worker with a supervisor
does this (a spawned child of uvicorn's ``--workers``): a single-process server has nobody to
start it again. And one at a time, so that the others serve meanwhile: a worker goes only while
it holds a lock its siblings share (an abstract Unix socket named after the supervisor: no file,
let go when its holder ends), only while every other worker it has seen taking connections
takes them (a worker that does holds an abstract socket named after the supervisor and itself
from its start on; one that has ended, or one started in its place that is still importing the
app, holds none), and once every sibling is at least ``after_s`` old (a new one is still warming
up). The lock goes with its holder's end, before the supervisor has noticed and started another
(it looks every half second, and the new one takes seconds to start): a sibling that took its
turn in that gap left the server with no worker at all (a CI run's health check went
unanswered for 5 s that way).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from typing import Any, Protocol

from app.web.memory import private_mb

log = logging.getLogger("stepscope.recycle")

CHECK_S = 5.0  # private memory read this often (one read of /proc/self/smaps_rollup)
SETTLE_S = 1.0  # from taking no more connections to the shutdown (see stop_accepting)


class Draining(Protocol):
    """What a worker's jobs are run by (app.web.runs.RunService)."""

    @property
    def running(self) -> int: ...

    def drain(self, limit_s: float) -> int: ...


def _stat(pid: int) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first; none if gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _age_s(pid: int) -> float:
    """Seconds since process ``pid`` started (0 if it is gone)."""
    try:
        start_ticks = int(_stat(pid)[19])
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return 0.0
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (not ended: gone, or a zombie its parent has not reaped)."""
    state = _stat(pid)[:1]
    return bool(state) and state[0] not in (b"Z", b"X")


def siblings() -> list[int]:
    """The other live processes of this one's parent (uvicorn's other workers; its resource
    tracker, if any, too)."""
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/task/{parent}/children", encoding="ascii") as f:
            pids = [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []
    return [p for p in pids if p != os.getpid() and _alive(p)]


def _accepting_name(pid: int) -> str:
    return f"stepscope-accepting-{os.getppid()}-{pid}"


def sign_accepting() -> socket.socket:
    """Say that this worker takes connections (held until its end: the socket's name is the
    sign)."""
    sign = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sign.bind("\0" + _accepting_name(os.getpid()))
    return sign


def accepting(others: list[int] | None = None) -> list[int]:
    """The live siblings (``others``, or :func:`siblings`) that take connections (their sign is
    bound: /proc/net/unix lists it). The sign's socket may outlive its worker in a child it
    forked: only live siblings count."""
    try:
        with open("/proc/net/unix", encoding="ascii", errors="replace") as f:
            names = {line.rsplit(None, 1)[-1] for line in f if "@stepscope-accepting-" in line}
    except OSError:
        return []
    return [
        p for p in (siblings() if others is None else others) if "@" + _accepting_name(p) in names
    ]


def take_turn(after_s: float, seen: int = 0) -> socket.socket | None:
    """The siblings' lock (held while the socket is open), if no sibling holds it, at least
    ``seen`` siblings take connections (one that has ended, or is starting in its place, does
    not) and no sibling is younger than ``after_s``; else None."""
    others = siblings()
    if len(accepting(others)) < seen or any(_age_s(p) < after_s for p in others):
        return None
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        lock.bind(f"\0stepscope-recycle-{os.getppid()}")
    except OSError:  # a sibling is being replaced
        lock.close()
        return None
    return lock


def _listeners() -> list[Any]:
    """The listening servers of this worker's uvicorn, found by its SIGTERM handler (a method
    of uvicorn's ``Server``, which keeps them in ``servers``); none where there is no such."""
    owner = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return list(getattr(owner, "servers", None) or [])


def stop_accepting(loop: asyncio.AbstractEventLoop | None) -> bool:
    """Have this worker stop taking connections, keeping those it has (on its event loop
    ``loop``, as uvicorn's own shutdown does first); answers whether it did.

    uvicorn's shutdown then closes every connection without a request under way, and a
    connection it had just taken whose request was not read yet is among them: closed with
    unread data, it is reset (a CI run's poll got "Connection reset by peer" as a worker was
    replaced). Taking no more connections a moment before the shutdown lets those requests be
    read, and then answered like any other under way."""
    listeners = _listeners()
    if loop is None or loop.is_closed() or not listeners:
        return False
    closed = threading.Event()

    def close() -> None:
        for listener in listeners:
            listener.close()
        closed.set()

    loop.call_soon_threadsafe(close)
    return closed.wait(5.0)


def supervised() -> bool:
    """This process was started by a supervisor that replaces it when it ends (uvicorn's
    ``--workers`` spawns each worker as a multiprocessing child)."""
    return multiprocessing.parent_process() is not None


class Recycler:
    """A daemon thread that ends this worker gracefully once its private memory is over
    ``limit_mb`` (0: never), not before ``after_s`` seconds from its start."""

    def __init__(self, limit_mb: float, after_s: float, every_s: float = CHECK_S) -> None:
        self.limit_mb, self.after_s, self.every_s = limit_mb, after_s, every_s
        self.fired = threading.Event()  # the worker is being replaced: drain, then stop
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._born = time.monotonic()
        self._turn: socket.socket | None = None  # held until this process ends
        # the most siblings seen taking connections at once (all of them, once all started)
        self.seen = 0
        self._sign: socket.socket | None = None  # this worker takes connections (see accept)
        self._loop: asyncio.AbstractEventLoop | None = None  # the worker's, where it has one

    def start(self, *, supervised_only: bool = True) -> bool:
        """Start watching; answers whether it does (not with no limit, nor, unless told,
        without a supervisor to start a new worker)."""
        if self.limit_mb <= 0 or self._thread is not None:
            return False
        if supervised_only and not supervised():
            return False
        self._stop.clear()
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # started outside the worker's loop (a test)
            self._loop = None
        self._thread = threading.Thread(target=self._run, name="recycle", daemon=True)
        self._thread.start()
        return True

    def accept(self) -> None:
        """At the end of the worker's start, if watching: say that it takes connections (its
        siblings count it; see :func:`accepting`)."""
        if self._thread is not None and self._sign is None:
            self._sign = sign_accepting()

    def over(self) -> float | None:
        """This worker's private MB if it is over the limit and old enough to be replaced."""
        if time.monotonic() - self._born < self.after_s:
            return None
        held = private_mb()
        return held if held > self.limit_mb else None

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.seen = max(self.seen, len(accepting()))
            held = self.over()
            if held is None:
                continue
            self._turn = take_turn(self.after_s, self.seen)
            if self._turn is None:  # a sibling goes first, or has just been replaced
                continue
            self.fired.set()
            # one line an operator (and bench/soak.py) can find: which pid, and why
            log.warning(
                "recycling app worker %d: %.0f MB of its own memory, over APP_WORKER_RECYCLE_MB"
                " %.0f; it finishes its requests and jobs, then a fresh worker takes its place",
                os.getpid(),
                held,
                self.limit_mb,
            )
            if stop_accepting(self._loop):
                time.sleep(SETTLE_S)  # what it has taken is read: then answered, not reset
            os.kill(os.getpid(), signal.SIGTERM)
            return

    def drain(self, runs: Draining, limit_s: float) -> int:
        """In the replaced worker's shutdown: wait for its jobs to end (at most ``limit_s``);
        logs how many there were and how many did not end; answers the latter."""
        started, jobs = time.monotonic(), runs.running
        left = runs.drain(limit_s)
        log.warning(
            "app worker %d: %d jobs were running or queued; %d ended in %.1f s, %d cancelled",
            os.getpid(),
            jobs,
            jobs - left,
            time.monotonic() - started,
            left,
        )
        return left

    def stop(self) -> None:
        """Stop watching (the lock, if taken, is kept: it goes with the process)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._thread = None
