"""CPU time and peak memory of the recorded overlays (issue 23). Prints figures; asserts nothing.

A cwnd recording as large as the app takes (200,000 tcp_probe samples: a per-ACK recording of
about 25 s at 20 Mbit/s, made here from the model's own CUBIC run and interpolated), turned into
its overlay (the model's run for the same link, the sawtooth numbers of both sides, the steps)
and drawn (the chart's figure and the comparison table); and a path recording of 2,000 events
(500 packets over veth), grouped, matched to the walks and drawn. CPU time is
``time.process_time`` (other work shares the CPUs); peak RSS is the process's.

    .venv/bin/python bench/recorded_overlay.py
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.sim.congestion import parse, run  # noqa: E402
from app.web.explainers.cwnd.recording import RECORDING as CWND  # noqa: E402
from app.web.explainers.path.recording import RECORDING as PATH  # noqa: E402
from tests.sim.path.pathrec import recording, veth_tx  # noqa: E402

SAMPLES = 200_000


def cwnd_recording() -> dict[str, Any]:
    raw = {
        "link": {"rate_mbps": 20, "rtt_ms": 40, "buffer_bytes": 100_000},
        "flows": [{"cc": "cubic"}],
        "duration_s": 25,
        "sample_ms": 1,
    }
    flow = run(parse(raw)).series["flows"][0]
    n = len(flow["t"])
    points = []
    for k in range(SAMPLES):
        i = k * n // SAMPLES
        ss = flow["ssthresh"][i]
        points.append(
            {
                "t_ms": k * 25_000 / SAMPLES,
                "cwnd": flow["cwnd"][i],
                "ssthresh": 2147483647 if ss is None else ss,
                "srtt_us": round(flow["srtt_ms"][i] * 1000),
            }
        )
    return {
        "kind": "cwnd",
        "link": {"rate_mbit": 20, "rtt_ms": 40, "buffer_bytes": 100_000, "mtu": 1500},
        "duration_ms": 25_000,
        "flows": [{"cc": "cubic", "src": "a", "dst": "b", "series": points}],
    }


def timed(label: str, rec: dict[str, Any], view: Any) -> None:
    t0 = time.process_time()
    trace = view.trace(rec, {})
    t1 = time.process_time()
    static = view.static(trace)
    pictures = sum(len(view.picture(trace, f)) for f in trace.frames)
    t2 = time.process_time()
    print(
        f"{label}: overlay {t1 - t0:.2f} s CPU, {len(trace.frames)} steps; drawn (static "
        f"{len(static) / 1e3:.0f} kB + every step {pictures / 1e3:.0f} kB) {t2 - t1:.2f} s CPU"
    )


def main() -> None:
    rec = cwnd_recording()
    timed(f"cwnd, {SAMPLES:,} samples, 25 s of CUBIC at 20 Mbit/s", rec, CWND)
    events = recording(*(veth_tx(t=i * 1.0, skb=f"ffff8880{i:08x}") for i in range(500)))
    timed(f"path, {len(events['events']):,} events", events, PATH)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
