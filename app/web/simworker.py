"""The simulation process's side of a run (app.web.runs), and where those processes come from.

**Forked from a small server, not from the app worker.** A process forked from the app worker
starts with the worker's whole heap resident (shared, but counted in its resident size), and a
process replaced after a large run (app.web.simproc.Recycle) was forked again from the worker
as it was by then: its caches full, its heap grown. The 10-minute soak of issue 24 saw the
simulation processes' resident memory rise from 683 to 900-1,070 MB (peaks 1,383-1,586) that
way, following the app workers' growth three times over. So the processes come from
multiprocessing's *forkserver*: a fresh interpreter each app worker starts once, which imports
what runs need (:func:`sim_context`'s preload) and forks every simulation process of that worker
(of every lane, and each replacement): each starts with that small, fixed heap, whatever the
worker holds by then.

Nothing is inherited by forking any more, so what the processes share with the worker is handed
over as they start: the shared arrays of progress, cancel flags and answers (pickled with their
file descriptors), and the answer files (:class:`InheritedFd`). A run names its slot's answer
file by the worker's descriptor number; :func:`simulate` finds its own copy of it.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import zlib
from collections.abc import Callable, Sequence
from multiprocessing import reduction
from multiprocessing.context import BaseContext
from typing import Any

from app.sim.core import Cancelled, Explainer, Trace
from app.sim.core.cost import MAX_TRACE_BYTES
from app.web import answers
from app.web.tracecache import encode_trace, pickle_trace

AnyTrace = Trace[Any, Any]
# A run's API answer from its trace, as pieces of bytes (picklable: it goes to the process)
Answer = Callable[[AnyTrace], Sequence[bytes | bytearray | memoryview]]
# What a run hands back: its trace as stored, and the bytes of the API answer it wrote into its
# slot's answer file (app.web.answers; -1: none)
Ran = tuple[bytes, int]

# Modules every simulation process needs, imported once by the fork server (with the explainers'
# own modules the app worker has loaded by then: see sim_context)
PRELOAD = ("app.web.routes.api", "app.web.simworker", "app.web.simproc")


# How simulation processes start: "forkserver", or "fork" (copies of the app worker: what a test
# that patches a module in its own process needs the processes to see)
START_METHOD = "forkserver"


def sim_context() -> BaseContext:
    """The multiprocessing context simulation processes start from: the fork server (its
    preload: :data:`PRELOAD` and every ``app.sim`` / ``app.web.explainers`` module imported in
    this process now); forks of this process where there is none (or :data:`START_METHOD`
    says so)."""
    available = multiprocessing.get_all_start_methods()
    forkserver = START_METHOD == "forkserver" and "forkserver" in available
    ctx = multiprocessing.get_context("forkserver" if forkserver else "fork")
    if forkserver:
        loaded = sorted(
            name for name in sys.modules if name.startswith(("app.sim.", "app.web.explainers."))
        )
        ctx.set_forkserver_preload([*PRELOAD, *loaded])
    return ctx


def stop_fork_server() -> bool:
    """End this process's fork server, if it started one (its simulation processes stopped
    first): for an app worker being replaced (app.web.recycle). A soak that replaced workers
    found a process of its server's session still alive at its end outside the server's tree
    (fork servers of replaced workers among those seen); the fork server is what a worker does
    not stop with its pools. The next run here, if any, starts a new one (multiprocessing finds
    the old one gone). Answers whether there was one."""
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)  # noqa: SLF001 - no public way
    if not pid:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


class InheritedFd:
    """A file descriptor of this process, for a simulation process as it starts: the same
    number in a forked one; pickled into one started by the fork server, a copy of it there
    (multiprocessing's fd passing), found by the number it had here (:func:`local_fd`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.local = fd

    def __reduce__(self) -> tuple[Any, ...]:
        return (_received, (self.fd, reduction.DupFd(self.fd)))


def _received(fd: int, dup: Any) -> InheritedFd:
    inherited = InheritedFd(fd)
    inherited.local = int(dup.detach())
    return inherited


_progress: Any = None  # shared array of progress fractions, one slot per queued/running run
_cancel: Any = None  # shared array of cancel flags
_answered: Any = None  # shared array: a slot's answer is in its answer file (its size + 1)
_fds: dict[int, int] = {}  # the app worker's descriptor number → this process's


def local_fd(fd: int) -> int:
    """This process's descriptor for the app worker's ``fd`` (the same where it was forked)."""
    return _fds.get(fd, fd)


def init_worker(
    progress: Any,
    cancel: Any,
    nice: int = 0,
    answered: Any = None,
    files: Sequence[InheritedFd] = (),
) -> None:
    """A simulation process's set-up (its pool's initializer, after app.web.simproc's)."""
    global _progress, _cancel, _answered
    _progress, _cancel, _answered = progress, cancel, answered
    _fds.clear()
    _fds.update({f.fd: f.local for f in files})
    if nice > 0:
        os.nice(nice)
    # Everything this process started with (the fork server's modules) out of the cyclic
    # collector's sight: it is never garbage here, and each full collection walked all of it,
    # writing to every page it touched (copies of the shared pages), during the runs.
    gc.freeze()


def simulate(
    explainer: Explainer[Any], params: Any, slot: int, answer: tuple[Answer, int] | None = None
) -> Ran:
    """Run in a simulation process: the trace, pickled and compressed (or Cancelled); with
    ``answer`` (its builder and the slot's answer file), the API's answer written there."""
    progress, cancel = _progress, _cancel

    def report(done: float, total: float) -> None:
        if cancel[slot]:
            raise Cancelled
        progress[slot] = done / total if total > 0 else 0.0

    trace = explainer.run(params, report)
    if answer is None:
        return encode_trace(trace, limit=MAX_TRACE_BYTES), -1
    build, fd = answer
    raw = pickle_trace(trace, limit=MAX_TRACE_BYTES)  # over the cap: no answer (a 422)
    size = answers.put(local_fd(fd), build(trace))
    if _answered is not None:  # the worker may send it now, while the trace is compressed
        _answered[slot] = size + 1
    return zlib.compress(raw, 1), size
