"""What a run costs besides its simulation: the trace it produces.

A run's time is its simulated work (``Explainer.cost`` ÷ ``Limits.work_per_second``) plus the
trace it builds and stores: every frame's state is built, pickled and compressed, and a trace of
many frames, or of a large state per frame, costs more than its simulated events say (a
one-request scheduler run over a million KV blocks; a keepalive script ticking for an hour).
Each explainer predicts its trace's bytes (``Explainer.expected_bytes``: frames × the bytes of
each frame's state); the server refuses a run predicted over :data:`MAX_TRACE_BYTES` before
running it, and a worker refuses a trace over it after (a hard cap, whatever the prediction).

Figures from ``bench/cost_calibration.py`` on the 2-core reference machine.
"""

from __future__ import annotations

from typing import Any

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.i18n import msg

# Pickled bytes of one trace at most. Decoded, a trace takes up to 8 times its pickle (see
# app.web.tracecache.MEMORY_PER_PICKLED_BYTE) and its JSON up to twice: 50 MB pickled is at most
# ~400 MB in a worker's memory.
MAX_TRACE_BYTES = 50_000_000

# Seconds to build, pickle and compress one byte of trace, beyond the simulated work: ~0.23 µs
# for the kernel explainers (skb, path, tcp; one frame of ~1 KB takes ~0.25 ms).
SECONDS_PER_BYTE = 2.3e-7


def megabytes(n: float) -> str:
    """``n`` bytes in MB, as a limit is named: "50", "1,234", "0.1"."""
    return f"{n / 1e6:,.0f}" if n >= 1e6 else f"{n / 1e6:.2g}"


class TraceTooLarge(ParamError):
    """A run's trace is (or would be) over :data:`MAX_TRACE_BYTES`: refused like any params the
    server cannot take (HTTP 422), naming the limit."""

    def __init__(self, size: float, limit: float | None = None) -> None:
        self.size = size
        self.limit = MAX_TRACE_BYTES if limit is None else limit
        text = msg(
            "this run's trace would be about {size} MB; the limit is {limit} MB: ask for fewer "
            "steps (a shorter run, fewer packets or requests)",
            size=megabytes(size),
            limit=megabytes(self.limit),
        )
        super().__init__([ParamIssue(loc=(), msg=text)])

    def __reduce__(self) -> tuple[Any, ...]:  # raised in a worker process, re-raised here
        return (TraceTooLarge, (self.size, self.limit))
