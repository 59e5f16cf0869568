"""Building a recording's trace within the limits a run has.

A recording's view (``RecordingView.trace``) may run a model (an overlay may run its
explainer's simulation for the recording's parameters) and always walks the user's file, so
it gets what a simulation run gets: it runs in a simulation process of its own
(:class:`~app.web.simproc.LanePool`, one process per app process, started by the same fork
server as the runs' processes, app.web.simworker) under the same hard limits, ``APP_SIM_CPU_S`` seconds of CPU and ``APP_SIM_MEMORY_MB`` of
address space. Over either it fails alone with
:class:`~app.web.simproc.SimLimitExceeded` (HTTP 422 naming the limit, app.web.failures); a
process that died answers :class:`~app.web.simproc.SimProcessDied` (503 with ``Retry-After``).

One process builds one recording at a time; a request waits for its turn at most
:func:`wait_limit_s` (the CPU limit of the build before it and of its own, and a margin), then
gets :class:`BuildWaitExceeded` (503 naming that wait). Builds are cached by the caller
(``app.web.recordings.TRACES``), so the process works only when a view or its overrides are new.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from app.settings import Settings
from app.sim.core import Message, Trace, msg
from app.web.simproc import LanePool, Limits, Recycle
from app.web.simworker import sim_context

Build = Callable[[Mapping[str, Any], Mapping[str, Any]], Trace[Any, Any]]
WAIT_MARGIN_S = 10.0  # beyond two CPU limits: forking the process, handing the trace back
RETRY_AFTER_S = 5


class BuildWaitExceeded(Exception):
    """The recording's build did not end within :func:`wait_limit_s` (HTTP 503)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds

    @property
    def message(self) -> Message:
        return msg(
            "building this recording's view took more than {s} s (twice APP_SIM_CPU_S, and "
            "a margin, waiting for the simulation process included); try again in {retry} s",
            s=round(self.seconds),
            retry=RETRY_AFTER_S,
        )


def wait_limit_s(settings: Settings, margin_s: float = WAIT_MARGIN_S) -> float | None:
    """How long a request waits for its build: the build before it and its own may each take
    the CPU limit (None: no CPU limit, no wait limit)."""
    return 2 * settings.sim_cpu_s + margin_s if settings.sim_cpu_s > 0 else None


def _lower_priority(nice: int) -> None:
    if nice > 0:
        os.nice(nice)


class RecordingBuilder:
    """The simulation process that builds recordings' traces (one per app process)."""

    def __init__(self, settings: Settings, margin_s: float = WAIT_MARGIN_S) -> None:
        self.settings = settings
        self.margin_s = margin_s
        self._lock = threading.Lock()
        self._pool: LanePool | None = None

    def start(self) -> None:
        """Start the process now, when the app starts (as RunService.start does). It comes from
        the fork server, not from this process: a copy of this process would hold every file
        it has open (a pipe to a child process, such as a browser driver's stdin, then never
        reaches its end, and that child never exits), and a replacement forked after a build
        over a limit would copy whatever the app opened by then."""
        self._lane()

    def _lane(self) -> LanePool:
        with self._lock:
            if self._pool is None:
                s = self.settings
                self._pool = LanePool(
                    sim_context(),
                    1,
                    Limits(s.sim_memory_mb, s.sim_cpu_s),
                    _lower_priority,
                    (max(0, s.sim_nice),),
                    Recycle(s.sim_recycle_mb, s.sim_recycle_runs),
                )
            return self._pool

    def build(
        self, fn: Build, recording: Mapping[str, Any], overrides: Mapping[str, Any]
    ) -> Trace[Any, Any]:
        """``fn(recording, overrides)`` in the simulation process, within its limits (blocks:
        call it off the event loop). Its ParamError (bad overrides) comes back as raised."""
        future = self._lane().submit(fn, dict(recording), dict(overrides))
        limit = wait_limit_s(self.settings, self.margin_s)
        try:
            return future.result(timeout=limit)
        except FutureTimeout:
            future.cancel()
            raise BuildWaitExceeded(limit or 0.0) from None

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
