"""Predicted vs measured cost of runs, per explainer (issue 24). Prints figures; asserts nothing.

For every explainer's presets and a few adversarial bodies (small requests that make large
traces), each run in a fresh process (so one run's memory does not slow the next):

* **predicted**: ``expected_seconds(params)`` and ``expected_bytes(params)``, what the server
  uses to choose a lane, start a job, charge the client's quota and refuse a run up front;
* **measured**: CPU seconds (after a warm-up run, as in a server worker) to simulate and store the trace as a worker does (``run`` + pickle +
  zlib), frames, the pickled trace's bytes, and the JSON the API builds (``public_json`` +
  ``json.dumps``: seconds and bytes), and the process's peak RSS.

``ratio`` is measured ÷ predicted seconds, each at least 0.1 s (the target is within 2×: 0.5
to 2.0). Runs that are
refused up front (predicted bytes over ``MAX_TRACE_BYTES``) are shown as refused and not run.

    .venv/bin/python bench/cost_calibration.py                 # everything
    .venv/bin/python bench/cost_calibration.py --only scheduler --adversarial
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import pickle
import resource
import sys
import time
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.explainers import builtin  # noqa: E402
from app.sim.core import ParamError  # noqa: E402
from app.sim.core.cost import MAX_TRACE_BYTES  # noqa: E402

_TCP_LONG = {
    "script": [
        {"t_ms": 0, "endpoint": "server", "call": "listen"},
        {"t_ms": 0, "endpoint": "server", "call": "accept"},
        {"t_ms": 0, "endpoint": "client", "call": "connect", "keepalive": True},
        {"t_ms": 10, "endpoint": "client", "call": "recv"},
    ],
    "sysctl": {"tcp_keepalive_time_s": 1, "tcp_keepalive_intvl_s": 1, "tcp_keepalive_probes": 9},
    "until_ms": 3_600_000,
}

ADVERSARIAL: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "scheduler": [
        (
            "1M blocks, 300 tokens",
            {
                "config": {"num_gpu_blocks": 1_000_000},
                "requests": [{"id": "a", "prompt_tokens": 1, "max_tokens": 300}],
            },
        ),
        (
            "1M blocks, 4000 tokens",
            {
                "config": {"num_gpu_blocks": 1_000_000},
                "requests": [{"id": "a", "prompt_tokens": 1, "max_tokens": 4000}],
            },
        ),
        (
            "64 requests × 1000 tokens",
            {
                "requests": [
                    {"id": f"r{i}", "prompt_tokens": 500, "max_tokens": 1000} for i in range(64)
                ]
            },
        ),
    ],
    "tcp": [
        ("keepalive 1 s for an hour", _TCP_LONG),
        (
            "bulk 1 MB, 1 ms RTT",
            {
                "script": [
                    {"t_ms": 0, "endpoint": "server", "call": "listen"},
                    {"t_ms": 0, "endpoint": "server", "call": "accept"},
                    {"t_ms": 0, "endpoint": "client", "call": "connect"},
                    {"t_ms": 10, "endpoint": "client", "call": "send", "bytes": 1_000_000},
                    {"t_ms": 10, "endpoint": "server", "call": "recv"},
                ],
                "until_ms": 60_000,
            },
        ),
    ],
    "cwnd": [
        (
            "largest: 1 flow at the event limit",
            {
                "link": {"rate_mbps": 330, "rtt_ms": 40, "buffer_bdp": 1},
                "flows": [{"cc": "cubic"}],
                "duration_s": 60,
            },
        ),
        (
            "16 BBR flows, RED, at the limit",
            {
                "link": {"rate_mbps": 12, "rtt_ms": 40, "buffer_bdp": 1, "aqm": "red"},
                "flows": [{"cc": "bbr"} for _ in range(16)],
                "duration_s": 30,
                "sample_ms": 10,
            },
        ),
    ],
    "path": [
        ("veth, 32 packets", {"path": "rx", "device": "veth", "packets": 32}),
        ("veth, 64 packets", {"path": "rx", "device": "veth", "packets": 64}),
        ("loopback, 64 packets", {"path": "rx", "device": "loopback", "packets": 64}),
    ],
    "skb": [
        (
            "500 ops",
            {"ops": [{"op": "alloc_skb", "size": 2048}] + [{"op": "skb_reserve", "len": 0}] * 499},
        ),
    ],
}


FLOOR_S = 0.1


def _measure(name: str, raw: dict[str, Any], out: Any) -> None:
    plugin = next(p for p in builtin() if p.name == name)
    sim = plugin.sim
    try:
        params = sim.parse(raw)
    except ParamError as exc:
        out.send({"error": str(exc)[:120]})
        return
    predicted_s = sim.expected_seconds(params)
    predicted_b = sim.expected_bytes(params)
    row: dict[str, Any] = {"predicted_s": predicted_s, "predicted_b": predicted_b}
    if predicted_b > MAX_TRACE_BYTES:
        row["refused"] = True
        out.send(row)
        return
    # warm up as a server worker is (modules imported, lazy tables built): the cheapest preset
    cheapest = min(sim.presets, key=lambda p: sim.expected_seconds(sim.parse(dict(p.params))))
    sim.run(sim.parse(dict(cheapest.params)))
    # CPU seconds: the machine is shared, wall time says more about the neighbours
    t0 = time.process_time()
    trace = sim.run(params)
    pickled = pickle.dumps(trace, protocol=pickle.HIGHEST_PROTOCOL)
    zlib.compress(pickled, 1)
    row["run_s"] = time.process_time() - t0
    row["frames"] = len(trace.frames)
    row["bytes"] = len(pickled)
    t0 = time.process_time()
    body = json.dumps(sim.public_json(trace), separators=(",", ":"))
    row["json_s"] = time.process_time() - t0
    row["json_b"] = len(body)
    row["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.send(row)


def measure(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    here, there = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_measure, args=(name, raw, there))
    proc.start()
    row: dict[str, Any] = here.recv()
    proc.join()
    return row


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", help="one explainer's name")
    ap.add_argument("--adversarial", action="store_true", help="only the adversarial bodies")
    args = ap.parse_args()
    print(f"trace cap: {MAX_TRACE_BYTES / 1e6:g} MB pickled; CPU seconds after a warm-up run")
    head = (
        f"{'explainer':10} {'case':36} {'pred s':>7} {'meas s':>7} {'ratio':>5} "
        f"{'frames':>7} {'pred MB':>7} {'MB':>6} {'json s':>6} {'json MB':>7} {'RSS MB':>6}"
    )
    print(head)
    worst: dict[str, tuple[float, float]] = {}
    for plugin in builtin():
        name = plugin.name
        if args.only and name != args.only:
            continue
        cases = [] if args.adversarial else [(p.slug, dict(p.params)) for p in plugin.sim.presets]
        cases += ADVERSARIAL.get(name, [])
        for label, raw in cases:
            r = measure(name, raw)
            if "error" in r:
                print(f"{name:10} {label[:36]:36} refused by parse: {r['error']}")
                continue
            if r.get("refused"):
                print(
                    f"{name:10} {label[:36]:36} {r['predicted_s']:7.3f} {'-':>7} {'-':>5} "
                    f"{'-':>7} {r['predicted_b'] / 1e6:7.1f}  refused up front (over the cap)"
                )
                continue
            # runs under 0.1 s are all quick (one lane, no job, no quota) and their CPU time is
            # mostly noise: the ratio counts from a floor of 0.1 s on both sides
            ratio = max(r["run_s"], FLOOR_S) / max(r["predicted_s"], FLOOR_S)
            lo, hi = worst.get(name, (ratio, ratio))
            worst[name] = (min(lo, ratio), max(hi, ratio))
            print(
                f"{name:10} {label[:36]:36} {r['predicted_s']:7.3f} {r['run_s']:7.3f} "
                f"{ratio:5.2f} {r['frames']:7d} {r['predicted_b'] / 1e6:7.2f} "
                f"{r['bytes'] / 1e6:6.2f} {r['json_s']:6.2f} {r['json_b'] / 1e6:7.2f} "
                f"{r['rss_mb']:6.0f}"
            )
    print(f"\nratio measured/predicted seconds (floor {FLOOR_S} s), per explainer:")
    for name, (lo, hi) in worst.items():
        ok = "within 2×" if lo >= 0.5 and hi <= 2.0 else "OUTSIDE 2×"
        print(f"  {name:10} {lo:.2f} .. {hi:.2f}  {ok}")


if __name__ == "__main__":
    main()
