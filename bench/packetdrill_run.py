"""Run every packetdrill script of a folder against the TCP model and print each one's verdict,
the counts of line statuses and the time it took (parse + run), then the totals.

    .venv/bin/python -m bench.packetdrill_run content/packetdrill [--repeat N]

Also times a 100-line script (a handshake, then 1000-byte writes each ACKed; the issue's
budget: under 50 ms): wall time (best, median, worst) and CPU time, with the load average,
since on a shared machine the wall time also counts the wait for a CPU. Figures only;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import Counter
from pathlib import Path

from app.sim.tcp.packetdrill.lexer import ScriptSyntaxError
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import RunLimitError, run


def one(text: str) -> tuple[str, Counter[str], float]:
    t0 = time.perf_counter()
    try:
        result = run(parse(text))
    except ScriptSyntaxError as exc:
        return f"syntax error: {exc}", Counter(), time.perf_counter() - t0
    except RunLimitError as exc:
        return f"over the run limit: {exc}", Counter(), time.perf_counter() - t0
    dt = time.perf_counter() - t0
    v = result.verdict
    verdict = "pass" if v.passed else f"FAIL line {v.line}: {v.reason.render()}"
    return verdict, Counter(r.status for r in result.lines), dt


def hundred_lines(folder: Path) -> str:
    """A client script of about 100 lines: a handshake, then 1000-byte writes each ACKed."""
    head = [
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3",
        "+0...0.010 connect(3, ..., ...) = 0",
        "+0 > S 0:0(0) <...>",
        "+.01 < S. 0:0(0) ack 1 win 65535 <mss 1000>",
        "+0 > . 1:1(0) ack 1",
    ]
    body: list[str] = []
    seq = 1
    while len(head) + len(body) < 97:
        body += [
            "+0 write(3, ..., 1000) = 1000",
            f"+0 > P. {seq}:{seq + 1000}(1000) ack 1",
            f"+.01 < . 1:1(0) ack {seq + 1000} win 65535",
        ]
        seq += 1000
    return "\n".join([*head, *body, "+0 close(3) = 0", f"+0 > F. {seq}:{seq}(0) ack 1"]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    totals: Counter[str] = Counter()
    passed = 0
    files = sorted(args.folder.glob("*.pkt"))
    for f in files:
        text = f.read_text()
        best = float("inf")
        for _ in range(args.repeat):
            verdict, counts, dt = one(text)
            best = min(best, dt)
        totals.update(counts)
        passed += verdict == "pass"
        counts_s = " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        print(f"{f.name:40s} {best * 1000:7.2f} ms  {counts_s:45s} {verdict}")
    print(f"scripts: {len(files)}, passed: {passed}, lines: {dict(sorted(totals.items()))}")
    text = hundred_lines(args.folder)
    times: list[float] = []
    cpu: list[float] = []
    for _ in range(max(args.repeat, 5)):
        c0 = time.process_time()
        verdict, counts, dt = one(text)
        cpu.append((time.process_time() - c0) * 1000)
        times.append(dt * 1000)
    n = text.count("\n")
    # wall time waits for a CPU on a loaded machine; CPU time is the run's own cost
    print(
        f"a {n}-line script, {len(times)} runs: wall best {min(times):.2f} ms, median "
        f"{statistics.median(times):.2f} ms, worst {max(times):.2f} ms; CPU median "
        f"{statistics.median(cpu):.2f} ms, worst {max(cpu):.2f} ms ({verdict}); "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
