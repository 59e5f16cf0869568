"""Memory of the export browser (Playwright's driver and the Chromium it starts for PNGs) through a
series of PNG exports: resident MB summed over its processes and PSS (each shared page counted
once), sampled every 0.1 s, in an app of its own (a temporary SQLite file, one process).

Prints, for each PNG: the browser's figures just before it, the peak while it was drawn, and
where they settled after it (the PNG's page and context closed, the browser kept); and, with
``--idle-s``, what happened once the browser had been idle that long (closed: 0). These are the
figures behind the choice of how long the server keeps its export browser
(``APP_EXPORT_BROWSER_IDLE_S``) and how ``bench/soak.py`` judges "RSS flat".

    .venv/bin/python bench/png_memory.py                   # 6 PNGs of the soak's 32-packet path
    .venv/bin/python bench/png_memory.py --count 4 --gap-s 3 --explainer skb --preset rx-frame

A benchmark that prints numbers, not a test: they depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from app.main import create_app  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.web import pngbrowser  # noqa: E402

# the soak's PNG export (bench/soak.py PATH_BIG): a 32-packet walk over veth
PATH_BIG = {"path": "tx", "device": "veth", "packets": 32, "payload_bytes": 1448}


def _tree(root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out.append(pid)
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _field(path: str, name: str) -> int:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def browser_mb(driver: int | None) -> tuple[float, float, int]:
    """Resident MB summed, PSS MB and the number of processes of the driver's tree."""
    if driver is None:
        return 0.0, 0.0, 0
    pids = _tree(driver)
    rss = sum(_field(f"/proc/{p}/status", "VmRSS:") for p in pids)
    pss = sum(_field(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids)
    return rss / 1024, pss / 1024, len(pids)


class Sampler:
    def __init__(self, app: object) -> None:
        self.app = app
        self.points: list[tuple[float, float, float, int]] = []
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            driver, _ = self.app.state.pngs.pids()  # type: ignore[attr-defined]
            rss, pss, n = browser_mb(driver)
            self.points.append((time.perf_counter() - self.t0, rss, pss, n))
            time.sleep(0.1)

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def between(self, a: float, b: float) -> list[tuple[float, float, float, int]]:
        return [p for p in self.points if a <= p[0] <= b]

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _fmt(points: list[tuple[float, float, float, int]], pick: str) -> str:
    if not points:
        return "no sample"
    if pick == "peak":
        p = max(points, key=lambda x: x[1])
    else:
        p = points[-1]
    return f"RSS {p[1]:.0f} / PSS {p[2]:.0f} MB ({p[3]} processes)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=6, help="PNGs exported one after the other")
    ap.add_argument("--gap-s", type=float, default=4.0, help="wait between PNGs")
    ap.add_argument("--idle-s", type=float, default=0.0, help="APP_EXPORT_BROWSER_IDLE_S (0: kept)")
    ap.add_argument("--explainer", default="path")
    ap.add_argument("--preset", default=None, help="a preset (else the soak's 32-packet path)")
    ap.add_argument(
        "--chromium-arg", action="append", default=[], help="one more switch for Chromium (to try)"
    )
    ap.add_argument("--save", type=Path, default=None, help="write each PNG into this folder")
    args = ap.parse_args()
    pngbrowser.CHROMIUM_ARGS += args.chromium_arg
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            database_url=f"sqlite:///{Path(tmp) / 'bench.db'}",
            expensive_runs_per_minute=10_000,  # exports count against it: not what is measured
            export_browser_idle_s=args.idle_s,
        )
        app = create_app(settings)
        with TestClient(app) as client, Sampler(app) as s:
            print(
                f"{args.count} PNG exports, {args.gap_s:g} s apart, browser idle limit "
                f"{args.idle_s:g} s (0: kept); load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
            )
            for i in range(args.count):
                if args.preset:
                    q = f"explainer={args.explainer}&preset={args.preset}&step={i}"
                else:
                    raw = {**PATH_BIG, "payload_bytes": 1448 - i}
                    p = base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")
                    q = f"explainer=path&p={p}&step={50 + 7 * i}"
                # the run and the step's picture first, so the window below is Chromium's
                client.get(f"/export/svg?{q}").raise_for_status()
                before = s.now()
                t = time.perf_counter()
                r = client.get(f"/export/png?{q}")
                wall = time.perf_counter() - t
                after = s.now()
                if args.save is not None:
                    args.save.mkdir(parents=True, exist_ok=True)
                    (args.save / f"png{i + 1}.png").write_bytes(r.content)
                time.sleep(args.gap_s)
                print(
                    f"   PNG {i + 1}: {r.status_code}, {len(r.content) / 1024:.0f} KB, {wall:.1f} s; "
                    f"before {_fmt(s.between(0, before), 'last')}; "
                    f"peak {_fmt(s.between(before, after), 'peak')}; "
                    f"{args.gap_s:g} s after {_fmt(s.between(after, s.now()), 'last')}"
                )
            if args.idle_s > 0:
                time.sleep(args.idle_s + 1)
                print(f"   after {args.idle_s + 1:g} s idle: {_fmt(s.points[-1:], 'last')}")
            rss = [p[1] for p in s.points if p[3]]
            pss = [p[2] for p in s.points if p[3]]
            if rss:
                print(
                    f"   while a browser lived: RSS {min(rss):.0f}-{max(rss):.0f} MB, "
                    f"PSS {min(pss):.0f}-{max(pss):.0f} MB"
                )


if __name__ == "__main__":
    main()
