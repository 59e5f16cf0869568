"""Shared scenarios for the congestion-control tests (each run once per test session)."""

from __future__ import annotations

import functools
from typing import Any

from app.sim.congestion import parse, run
from app.sim.core.trace import Trace

# The ns-3 comparison set-up in ../shared/reference/peers.md: 100 Mbit/s, 40 ms, 333-packet
# (1 BDP) drop-tail buffer, 1448-byte segments, 60 s.
LFN_LINK = {"rate_mbps": 100, "rtt_ms": 40, "buffer_packets": 333}
BDP_PLUS_BUFFER = 678  # segments, as peers.md counts it (345 + 333)


def raw(
    cc: str | list[str], *, duration: float = 60, link: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    ccs = [cc] if isinstance(cc, str) else cc
    return {
        "link": dict(link or LFN_LINK),
        "flows": [{"cc": c, "start_s": 0.1 * i} for i, c in enumerate(ccs)],
        "duration_s": duration,
        "mss": 1448,
        "seed": 0,
        "sample_ms": 10,
        "connect": "established",  # these scenarios start established, as ns-3's comparison did
        **extra,
    }


@functools.cache
def lfn(cc: str) -> Trace:
    """One flow of ``cc`` on the ns-3 comparison link for 60 s."""
    return run(parse(raw(cc)))


def events(trace: Trace, kind: str, flow: int = 0) -> list[dict[str, Any]]:
    return [e for e in trace.series["flows"][flow]["events"] if e["type"] == kind]


def at(series: dict[str, Any], key: str, t: float) -> Any:
    """The sample of ``key`` at the first tick at or after ``t``."""
    ts = series["t"]
    for i, x in enumerate(ts):
        if x >= t - 1e-9:
            return series[key][i]
    return series[key][-1]
