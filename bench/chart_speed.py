"""How fast the charts appear and how long the main thread is blocked: every congestion-control
walkthrough (and compare), whose charts are drawn by plotly.js in the browser, and every vLLM
scheduler walkthrough (and compare), whose timeline and charts are SVG drawn by the server.

    .venv/bin/python bench/chart_speed.py              # every preset + compare, 3 runs each
    .venv/bin/python bench/chart_speed.py --runs 5 --only cubic-vs-reno,compare
    .venv/bin/python bench/chart_speed.py --explainer scheduler

Starts the app (migrate, then uvicorn on a free loopback port with a temporary SQLite database),
asks for each page once so the simulation is cached (the figures are about drawing, not
simulating), then opens each page ``--runs`` times in headless Debian chromium driven by
Playwright, each time in a fresh browser context (empty cache; ``--warm``: the page is loaded
twice first, as for a returning reader, so scripts come from the cache). Per page it prints the median of:

  first chart   ms from navigation start to the first chart painted (a MutationObserver sees a
                Plotly ``.main-svg`` or the scheduler's ``.sched-static svg`` appear; then two
                animation frames for the paint). plotly.js draws a figure of stacked rows in
                passes, the top row's lines first: this is when those are on screen
  all charts    ms until every chart on the page is drawn ("stepscope:charts-ready"; for the
                server-drawn scheduler charts, the same as first chart)
  longest task  the longest main-thread task (PerformanceObserver "longtask", ≥ 50 ms; 0 = none)
  tasks > 50    how many long tasks, and their total blocking time (sum of ms over 50)
  HTML / JS     kB of the page and of its scripts as encoded (gzip), from Resource Timing

and the worst run's longest task. A benchmark that prints numbers, not a test: the figures
depend on the machine and on what else runs on it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.settings import Settings  # noqa: E402
from app.web.exporting import CHROMIUM_ARGS  # noqa: E402

# Runs before any page script: watches for the first chart and collects long tasks.
PROBE = """
(() => {
  const probe = window.__chartProbe = { first: null, ready: null, tasks: [] };
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) probe.tasks.push(e.duration);
    }).observe({ type: "longtask", buffered: true });
  } catch (e) { probe.noLongtask = true; }
  const painted = () => requestAnimationFrame(() => requestAnimationFrame(() => {
    if (probe.first === null) probe.first = performance.now();
    // server-drawn charts are complete once painted; plotly.js ones say when they are
    if (!document.querySelector(".chart .main-svg") && probe.ready === null) probe.ready = probe.first;
  }));
  const seen = () => document.querySelector(".chart .main-svg, .sched-static svg");
  const mo = new MutationObserver(() => { if (seen()) { mo.disconnect(); painted(); } });
  mo.observe(document, { childList: true, subtree: true });
  document.addEventListener("stepscope:charts-ready", () => {
    if (probe.ready === null) probe.ready = performance.now();
  });
})();
"""

COLLECT = """
() => {
  const p = window.__chartProbe;
  const res = performance.getEntriesByType("resource");
  const nav = performance.getEntriesByType("navigation")[0];
  const js = res.filter((r) => r.initiatorType === "script" || r.name.endsWith(".js"));
  return {
    first: p.first, ready: p.ready, tasks: p.tasks, noLongtask: !!p.noLongtask,
    html: nav ? nav.encodedBodySize || nav.transferSize : 0,
    ttfb: nav ? nav.responseStart : 0,
    js: js.reduce((s, r) => s + (r.encodedBodySize || r.transferSize || 0), 0),
    charts: document.querySelectorAll(".chart .main-svg").length,
  };
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """The app under uvicorn on loopback with a throw-away database."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="stepscope-charts-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "APP_DATABASE_URL": f"sqlite:///{self.tmp.name}/bench.db"}
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Server:
        py = str(ROOT / ".venv" / "bin" / "python")
        py = py if Path(py).exists() else sys.executable
        subprocess.run([py, "-m", "app.store.migrate"], cwd=ROOT, env=self.env, check=True)
        cmd = [py, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port"]
        cmd += [str(self.port), "--log-level", "warning"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env, start_new_session=True)
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                if httpx.get(f"{self.url}/api/v1/explainers", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.__exit__()
        raise RuntimeError("the server did not start within 90 s")

    def __exit__(self, *exc: object) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.tmp.cleanup()


CHARTED = ("cwnd", "scheduler")  # the explainers whose pages carry charts


def walkthroughs(explainers: tuple[str, ...], only: set[str] | None) -> list[tuple[str, str]]:
    """(name, path) of every preset page and the compare page of each explainer."""
    from app.explainers import builtin  # the one list of explainers

    pages = []
    for plugin in builtin():
        if plugin.sim.name not in explainers:
            continue
        base = f"/explainers/{plugin.sim.name}"
        tag = "" if len(explainers) == 1 else plugin.sim.name[:5] + ":"
        pages += [(tag + p.slug, f"{base}/presets/{p.slug}") for p in plugin.sim.presets]
        pages += [(tag + a.key, f"{base}/{a.path}") for a in plugin.web.actions]
    return [(n, path) for n, path in pages if only is None or n.split(":")[-1] in only]


def _ms(values: list[float | None]) -> str:
    """The median of the values that were measured, as ``123ms`` (``–`` when none were)."""
    got = [v for v in values if v is not None]
    return f"{statistics.median(got):.0f}ms" if got else "–"


def measure(browser: Any, url: str, width: int, height: int, *, warm: bool) -> dict[str, Any]:
    ctx = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = ctx.new_page()
        page.add_init_script(PROBE)
        if warm:  # a returning reader: scripts (and V8's code cache for them) already stored
            for _ in range(2):
                page.goto(url, wait_until="load", timeout=60_000)
                page.wait_for_function("() => window.__chartProbe.ready !== null", timeout=60_000)
        page.goto(url, wait_until="load", timeout=60_000)
        try:
            page.wait_for_function("() => window.__chartProbe.ready !== null", timeout=30_000)
        except PlaywrightTimeout:  # a page with no chart: its long tasks still count
            pass
        page.wait_for_timeout(600)  # let trailing tasks (cursor, resize) show up
        out: dict[str, Any] = page.evaluate(COLLECT)
        return out
    finally:
        ctx.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="page loads per walkthrough (default 3)")
    ap.add_argument("--only", help="comma-separated preset slugs (and/or 'compare')")
    ap.add_argument(
        "--explainer", choices=(*CHARTED, "all"), default="all", help="whose walkthroughs"
    )
    ap.add_argument("--width", type=int, default=1440)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument(
        "--warm", action="store_true", help="measure a repeat visit (browser cache filled first)"
    )
    args = ap.parse_args()
    runs = max(1, min(args.runs, 20))
    only = set(args.only.split(",")) if args.only else None
    chromium = str(Settings().chromium)
    from playwright.sync_api import sync_playwright

    print(
        f"{args.explainer} charts in headless chromium ({chromium}), viewport {args.width}×{args.height}, "
        f"{runs} runs per page, {'warm' if args.warm else 'cold'} browser cache, {os.cpu_count()} CPUs (load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())})"
    )
    with Server() as server, sync_playwright() as pw:
        pages = walkthroughs(CHARTED if args.explainer == "all" else (args.explainer,), only)
        for _, path in pages:  # simulate once: the cache answers the measured loads
            httpx.get(server.url + path, timeout=120)
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            head = (
                f"{'walkthrough':<26}{'first chart':>12}{'all charts':>12}{'longest task':>14}"
                f"{'worst':>8}{'tasks>50':>10}{'TBT':>7}{'HTML kB':>9}{'JS kB':>7}{'TTFB':>6}"
            )
            print(head)
            print("-" * len(head))
            for name, path in pages:
                res = [
                    measure(browser, server.url + path, args.width, args.height, warm=args.warm)
                    for _ in range(runs)
                ]
                med = statistics.median
                longest = [max(r["tasks"], default=0.0) for r in res]
                count = med([len(r["tasks"]) for r in res])
                tbt = med([sum(max(0.0, t - 50) for t in r["tasks"]) for r in res])
                print(
                    f"{name:<26}{_ms([r['first'] for r in res]):>12}"
                    f"{_ms([r['ready'] for r in res]):>12}"
                    f"{med(longest):>12.0f}ms{max(longest):>6.0f}ms{count:>10.0f}{tbt:>5.0f}ms"
                    f"{med([r['html'] for r in res]) / 1e3:>9.0f}{med([r['js'] for r in res]) / 1e3:>7.0f}"
                    f"{med([r['ttfb'] for r in res]):>4.0f}ms"
                )
                if any(r["noLongtask"] for r in res):
                    print("  (this chromium does not report long tasks)")
        finally:
            browser.close()
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
