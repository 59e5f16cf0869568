"""Speed and memory of the congestion-control simulator (issue 4). Prints figures; asserts nothing.

Each scenario runs in a fresh interpreter so its peak RSS is its own. Targets from the issues
(this 2-core machine): 60 s of 1 CUBIC flow on 100 Mbit/s / 40 ms / 1-BDP in ≤ 1.0 s (issue 4),
4 flows in ≤ 1.5 s, peak memory ≤ 150 MB; 1 BBR flow in ≤ 1.0 s (issue 20). ns-3 3.44 needs
14.5 s / 743 MB for the first (../shared/reference/peers.md). The verdict compares the best CPU
time (``time.process_time``), not wall time: other work shares the two CPUs, and the load
average is printed before and after.

    .venv/bin/python bench/cwnd_speed.py            # all scenarios, 3 runs each
    .venv/bin/python bench/cwnd_speed.py --runs 5
    .venv/bin/python bench/cwnd_speed.py --opcodes "bbr x1"   # where the per-ACK work goes
    APP_NATIVE=0 .venv/bin/python bench/cwnd_speed.py       # the pure-Python modules

The ``code`` column says whether the mypyc-compiled modules ran (``scripts/build_native.py``
builds them; ``app/sim/native.py`` loads them only while they match the sources).

``--opcodes`` runs 5 simulated seconds of one scenario under an opcode tracer and prints the
bytecodes executed per ACK in each function of the simulator (slow: one to two minutes). Time per
bytecode is not constant (multi-digit ints, floats and calls cost more), but the count does
not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = {"rate_mbps": 100, "rtt_ms": 40, "buffer_packets": 333}

SCENARIOS = {
    "cubic x1": ("cubic", 1, 1.0),
    "cubic x4": ("cubic", 4, 1.5),
    "reno x1": ("reno", 1, None),
    "bbr x1": ("bbr", 1, 1.0),
    "bbr x4": ("bbr", 4, None),
}
NS3 = {"cubic x1": 14.5, "cubic x4": 15.4, "reno x1": 15.8, "bbr x1": 17.0, "bbr x4": 72.7}


def raw(cc: str, n: int) -> dict[str, object]:
    return {
        "link": LINK,
        "flows": [{"cc": cc, "start_s": 0.1 * i} for i in range(n)],
        "duration_s": 60,
        "mss": 1448,
        "seed": 0,
        "sample_ms": 10,
    }


def one(name: str, runs: int) -> dict[str, object]:
    """Runs in the child: time the simulation itself, then a cached repeat."""
    t0 = time.perf_counter()
    from app.sim.congestion import parse, run
    from app.sim.congestion.run import simulate

    import_s = time.perf_counter() - t0
    import app.sim.congestion.engine as engine
    from app.sim.native import compiled

    cc, n, _target = SCENARIOS[name]
    params = parse(raw(cc, n))
    walls, cpus = [], []
    trace = None
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        trace = simulate(params)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    assert trace is not None
    run(params)  # fill the cache
    w = time.perf_counter()
    run(params)
    cached = time.perf_counter() - w
    s = trace.summary
    return {
        "native": compiled(engine),
        "import_s": import_s,
        "walls": walls,
        "cpus": cpus,
        "cached_s": cached,
        "packets": s["packets_simulated"],
        "acks": s["acks_simulated"],
        "events": s["events_processed"],
        "goodput": s["goodput_mbps"],
        "util": s["utilisation"],
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def opcodes(name: str, seconds: float = 5.0) -> None:
    """Bytecodes per ACK, by function, in ``seconds`` of scenario ``name`` (after a warm-up)."""
    sys.path.insert(0, str(ROOT))  # this tree's app, as the timed children get it
    from collections import Counter
    from types import FrameType
    from typing import Any

    from app.sim.congestion import parse
    from app.sim.congestion.run import simulate

    cc, n, _target = SCENARIOS[name]
    params = parse({**raw(cc, n), "duration_s": seconds})
    simulate(params)
    counts: Counter[tuple[str, str]] = Counter()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            counts[(Path(frame.f_code.co_filename).name, frame.f_code.co_name)] += 1
        return local

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        if "/app/sim/" not in frame.f_code.co_filename:
            return None
        frame.f_trace_opcodes = True
        return local

    sys.settrace(call)
    try:
        trace = simulate(params)
    finally:
        sys.settrace(None)
    acks = trace.summary["acks_simulated"]
    print(
        f"{name}, {seconds:g} s simulated: {acks} ACKs, "
        f"{sum(counts.values()) / acks:.0f} bytecodes per ACK"
    )
    for (module, func), c in counts.most_common(20):
        print(f"{c / acks:8.1f}  {module}:{func}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="*", default=list(SCENARIOS))
    ap.add_argument("--opcodes", metavar="SCENARIO", choices=list(SCENARIOS))
    args = ap.parse_args()
    if args.opcodes:
        opcodes(args.opcodes)
        return
    if args.one:
        print(json.dumps(one(args.one, args.runs)))
        return
    print(
        f"congestion-control simulator, 60 s on 100 Mbit/s / 40 ms / 333-packet buffer; "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; "
        f"best and median of {args.runs} runs"
    )
    print(
        f"{'scenario':10} {'wall best':>9} {'median':>7} {'cpu':>6} {'target':>7} "
        f"{'pkts':>8} {'pkts/s wall':>11} {'events/s':>9} {'peak RSS':>9} {'cached':>9} "
        f"{'ns-3':>6} {'code':>6}"
    )
    for name in args.only:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, __file__, "--one", name, "--runs", str(args.runs)],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        r = json.loads(out.stdout)
        best = min(r["walls"])
        cpu = min(r["cpus"])
        target = SCENARIOS[name][2]
        verdict = (
            "" if target is None else (f"≤{target:.1f} " + ("ok" if cpu <= target else "MISS"))
        )
        print(
            f"{name:10} {best:8.3f}s {statistics.median(r['walls']):6.3f}s "
            f"{cpu:5.2f}s {verdict:>7} {r['packets']:8d} "
            f"{r['packets'] / best:11,.0f} {r['events'] / best:9,.0f} "
            f"{r['rss_mb']:7.1f}MB {r['cached_s'] * 1e6:7.1f}µs {NS3[name]:5.1f}s "
            f"{'native' if r['native'] else 'pure':>6}"
        )
    print(
        "pkts = data packets offered to the bottleneck; events = ACKs + timers + samples; "
        "peak RSS includes the interpreter; cached = repeat of run() on the same params; "
        "code = native when the mypyc build ran (scripts/build_native.py; APP_NATIVE=0: pure); "
        f"target: best cpu; load average now {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
