"""CPU time of consecutive PNG exports: ``GET /export/png`` for N different steps of one preset
in an app of its own (a temporary SQLite file), each drawn by Chromium (nothing from the PNG
cache). Prints the CPU time of this process (the app: the page of each step, the requests)
and of the processes under it (Playwright's driver and Chromium), per PNG and in all, and the
wall time of each PNG.

A process's CPU time reaches its parent's count when the parent waits for it, and Chromium
does not wait for all of its own (they go to init, their time uncounted: half of it, measured):
so this process is made a child subreaper (``PR_SET_CHILD_SUBREAPER``, Linux), every orphan
under it comes to it, and after the app's shutdown it waits for all of them.

    .venv/bin/python bench/png_cpu.py
    .venv/bin/python bench/png_cpu.py --count 20 --explainer tcp --preset handshake

A benchmark that prints numbers, not a test: they depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def _reap_all(limit_s: float = 30.0) -> int:
    """Wait for every process under this one (orphans included); answers how many."""
    reaped, deadline = 0, time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # none left
            break
        if pid == 0:
            time.sleep(0.1)
        else:
            reaped += 1
    return reaped


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10, help="PNGs exported one after the other")
    ap.add_argument("--explainer", default="skb")
    ap.add_argument("--preset", default="rx-frame")
    ap.add_argument("--scale", type=int, default=1)
    args = ap.parse_args()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("   (not a subreaper: Chromium's orphans are not counted)")
    base = f"/export/png?explainer={args.explainer}&preset={args.preset}&scale={args.scale}"
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite:///{Path(tmp) / 'bench.db'}",
            expensive_runs_per_minute=10_000,  # exports count against it: not what is measured
        )
        app = create_app(settings)
        with TestClient(app) as client:
            # the run and the page machinery first: what follows is the PNGs
            warm = client.get(f"/export/svg?explainer={args.explainer}&preset={args.preset}")
            warm.raise_for_status()
            cpu0 = _cpu()
            walls = []
            t0 = time.perf_counter()
            for i in range(args.count):
                # themes and steps alternate: no two requests are the same PNG
                url = f"{base}&step={i // 2}&theme={('light', 'dark')[i % 2]}"
                t = time.perf_counter()
                r = client.get(url)
                walls.append(time.perf_counter() - t)
                if r.status_code != 200 or r.headers["content-type"] != "image/png":
                    raise SystemExit(f"{url}: {r.status_code} {r.text[:200]}")
            wall = time.perf_counter() - t0
            cpu_open = _cpu()
        _reap_all()
        cpu1 = _cpu()  # the app shut down: every process under it has exited and is counted
    me, kids = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    n = args.count
    print(
        f"{n} PNG exports ({args.explainer}/{args.preset}, scale {args.scale}), load "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    print(
        f"   CPU s: app process {me:.2f} ({me / n:.3f} per PNG), driver and Chromium "
        f"{kids:.2f} ({kids / n:.3f} per PNG; {cpu_open[1] - cpu0[1]:.2f} counted before the "
        f"app's shutdown), in all {me + kids:.2f} ({(me + kids) / n:.3f} per PNG)"
    )
    print(f"   wall s: {wall:.2f} in all; each PNG: " + ", ".join(f"{w:.2f}" for w in walls))


if __name__ == "__main__":
    main()
