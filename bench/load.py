"""Load test on loopback: a lecture hall opening one shared walkthrough, and a mixed load.

    .venv/bin/python bench/load.py --quick             # starts its own server, both scenarios
    .venv/bin/python bench/load.py --url http://127.0.0.1:8000 --scenario hall

Without ``--url`` it starts the app the way ``scripts/serve`` does (migrate, then uvicorn with
``--workers``) on a free loopback port and a temporary SQLite database, samples the server's
RSS (all worker processes) every second, and stops it at the end.

Scenarios:
  hall   ``--hall-clients`` (300) browsers open the same shared walkthrough within
         ``--hall-window`` (10 s): page, its CSS/JS, then ``--hall-steps`` steps, each a
         progress POST (and a frames fetch when the step leaves the embedded window).
  mixed  ``--connections`` (100) clients for ``--duration`` (180 s; ``--quick`` 30 s): pages,
         steps and API runs, while ``--large`` (8) of them send the largest run the cwnd
         explainer accepts (found from its own 422 advice) over and over.

Prints requests/s, p50/p95/p99 latency per request kind, errors, and server RSS over time.
Bounded: at most 2,000 clients, loopback addresses only, every phase has a hard time limit.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
MAX_CLIENTS = 2_000
ASSET_RE = re.compile(r'(?:src|href)="(/(?:static|vendor)/[^"?#]+)')
FRAME_WINDOW = 120  # frames a player page embeds (app.web.player.FRAME_WINDOW)


# --- measurements ----------------------------------------------------------------------------


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    unfinished: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    started: float = field(default_factory=time.perf_counter)
    ended: float = 0.0

    def record(self, kind: str, seconds: float, status: int | None, error: str = "") -> None:
        self.latencies[kind].append(seconds)
        if error or status is None or status >= 400:
            self.errors[f"{kind}: {error or status}"] += 1

    def report(self, title: str) -> None:
        elapsed = (self.ended or time.perf_counter()) - self.started
        total = sum(len(v) for v in self.latencies.values())
        errors = sum(self.errors.values())
        print(f"\n== {title}: {total} requests in {elapsed:.1f} s = {total / elapsed:.1f} req/s, ")
        print(f"   {errors} errors ({100 * errors / max(total, 1):.1f}%)")
        print(
            f"   {'kind':<16}{'n':>7}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        )
        for kind in sorted(self.latencies):
            xs = sorted(self.latencies[kind])
            print(
                f"   {kind:<16}{len(xs):>7}{len(xs) / elapsed:>8.1f}"
                f"{pct(xs, 50):>9.0f}{pct(xs, 95):>9.0f}{pct(xs, 99):>9.0f}{xs[-1] * 1000:>9.0f}"
            )
        for what, n in sorted(self.errors.items(), key=lambda kv: -kv[1])[:12]:
            print(f"   error {what}: {n}")
        for kind, n in sorted(self.unfinished.items()):
            print(f"   {kind}: {n} requests still running at the end (not counted above)")


def pct(sorted_xs: list[float], p: float) -> float:
    if not sorted_xs:
        return float("nan")
    i = min(len(sorted_xs) - 1, max(0, round(p / 100 * len(sorted_xs)) - 1))
    return sorted_xs[i] * 1000


async def fetch_raw(client: httpx.AsyncClient, method: str, url: str) -> httpx.Response:
    """Download a response's bytes as they come over the wire (gzipped), without decoding them:
    a browser decompresses in its own process, so the load client should not pay for it."""
    async with client.stream(method, url) as r:
        async for _ in r.aiter_raw():
            pass
        return r


async def timed(
    stats: Stats,
    kind: str,
    client: httpx.AsyncClient,
    method: str,
    url: str,
    raw: bool = False,
    **kw: Any,
) -> httpx.Response | None:
    t0 = time.perf_counter()
    try:
        if raw:
            r = await fetch_raw(client, method, url)
        else:
            r = await client.request(method, url, **kw)
    except asyncio.CancelledError:
        stats.unfinished[kind] += 1
        raise
    except Exception as exc:  # timeouts, refused connections: counted, the client goes on
        stats.record(kind, time.perf_counter() - t0, None, type(exc).__name__)
        return None
    stats.record(kind, time.perf_counter() - t0, r.status_code)
    return r


# --- the server ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (uvicorn's workers), in MB."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, AttributeError):
            continue
    return total / 1024


class Server:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.tmp = tempfile.TemporaryDirectory(prefix="stepscope-load-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = {
            **os.environ,
            "APP_DATABASE_URL": f"sqlite:///{self.tmp.name}/load.db",
            # every simulated browser comes from 127.0.0.1: lift the per-address share quota
            "APP_SHARE_QUOTA_PER_CLIENT": "1000000",
        }

    def start(self) -> None:
        py = str(ROOT / ".venv" / "bin" / "python")
        py = py if Path(py).exists() else sys.executable
        subprocess.run([py, "-m", "app.store.migrate"], cwd=ROOT, env=self.env, check=True)
        cmd = [py, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--workers", str(self.workers), "--log-level", "warning"]
        self.log_path = Path(self.tmp.name) / "server.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                if httpx.get(f"{self.url}/api/v1/explainers", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        raise RuntimeError("the server did not start within 90 s")

    def rss_mb(self) -> float:
        return tree_rss_mb(self.proc.pid) if self.proc else float("nan")

    def log_summary(self) -> str:
        """What the server logged: tracebacks by their last line (client disconnects included)."""
        self.log.flush()
        text = self.log_path.read_text(errors="replace")
        last = re.findall(r"^(\w+(?:\.\w+)*(?:Error|Exception|Stream)\b.*)$", text, re.M)
        counts: dict[str, int] = defaultdict(int)
        for line in last:
            counts[line[:100]] += 1
        if not counts:
            return "server log: no errors"
        top = "; ".join(
            f"{n}× {what}" for what, n in sorted(counts.items(), key=lambda kv: -kv[1])[:4]
        )
        return f"server log: {text.count('Traceback')} tracebacks ({top})"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        self.tmp.cleanup()


async def sample_rss(server: Server | None, samples: list[tuple[float, float]], t0: float) -> None:
    while server is not None:
        samples.append((time.perf_counter() - t0, server.rss_mb()))
        await asyncio.sleep(1.0)


def print_rss(samples: list[tuple[float, float]], title: str) -> None:
    if not samples:
        print(f"   server RSS ({title}): not measured (--url)")
        return
    every = max(1, len(samples) // 12)
    points = ", ".join(f"{t:.0f}s {mb:.0f}" for t, mb in samples[::every])
    peak = max(mb for _, mb in samples)
    print(f"   server RSS MB ({title}, all workers): peak {peak:.0f}; {points}")


# --- scenarios -------------------------------------------------------------------------------


def new_client(base: str, timeout: float, connections: int = 4) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base,
        timeout=timeout,
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        headers={"user-agent": "stepscope-bench/1"},
    )


async def explainer_info(base: str) -> dict[str, Any]:
    async with new_client(base, 30) as c:
        data = (await c.get("/api/v1/explainers")).json()
    return {e["name"]: e for e in data["explainers"]}


async def hall(base: str, args: argparse.Namespace, info: dict[str, Any]) -> Stats:
    ex = info["cwnd"] if "cwnd" in info else next(iter(info.values()))
    preset = next(p for p in ex["presets"] if p["slug"] == ex["default_preset"])
    async with new_client(base, 60) as c:
        c.cookies.set("stepscope_ok", "1")
        r = await c.post(
            "/api/v1/scenarios",
            json={"explainer": ex["name"], "params": preset["params"], "title": "Lecture"},
        )
        r.raise_for_status()
        sid = r.json()["id"]
    print(
        f"\nhall: {args.hall_clients} browsers open /s/{sid} ({ex['name']}) within "
        f"{args.hall_window:g} s and take {args.hall_steps} steps each"
    )
    stats = Stats()
    assets_seen: set[str] = set()

    async def browser(i: int) -> None:
        await asyncio.sleep(random.uniform(0, args.hall_window))
        async with new_client(base, args.timeout, 6) as c:
            page = await timed(stats, "page", c, "GET", f"/s/{sid}")
            if page is None or page.status_code != 200:
                return
            c.cookies.set("stepscope_ok", "1")  # what the page's probe cookie does in a browser
            count = int(m.group(1)) if (m := re.search(r'data-count="(\d+)"', page.text)) else 1
            assets = sorted(set(ASSET_RE.findall(page.text)))
            assets_seen.update(assets)
            await asyncio.gather(*(timed(stats, "asset", c, "GET", a, raw=True) for a in assets))
            for step in range(1, min(args.hall_steps, count - 1) + 1):
                await asyncio.sleep(random.uniform(0.5, 1.5) * args.think)
                if step % FRAME_WINDOW == FRAME_WINDOW - 10:  # the player fetches ahead
                    await timed(
                        stats,
                        "frames",
                        c,
                        "GET",
                        f"/explainers/{ex['name']}/frames",
                        params={"start": step + 10, "count": 60, "preset": preset["slug"]},
                    )
                await timed(
                    stats,
                    "progress",
                    c,
                    "POST",
                    "/api/v1/progress",
                    json={"walkthrough": f"/s/{sid}", "step": step},
                )

    tasks = [asyncio.create_task(browser(i)) for i in range(args.hall_clients)]
    limit = args.hall_window + args.hall_steps * args.think * 1.5 + args.timeout + 30
    done, pending = await asyncio.wait(tasks, timeout=limit)
    for t in pending:
        t.cancel()
    stats.ended = time.perf_counter()
    if pending:
        stats.errors[f"browsers unfinished after {limit:.0f} s"] = len(pending)
    return stats


def largest_cwnd_run(base: str) -> dict[str, Any]:
    """The largest cwnd run the explainer accepts: ask for far too much and take its advice."""
    raw = {
        "link": {"rate_mbps": 1000, "rtt_ms": 40, "buffer_packets": 1000},
        "flows": [{"cc": "cubic", "start_s": 0}],
        "duration_s": 600,
    }
    r = httpx.post(f"{base}/api/v1/explainers/cwnd/run", json=raw, timeout=60)
    text = json.dumps(r.json(), ensure_ascii=False)
    m = re.search(r"duration_s to ≤ ([0-9.]+) s", text)
    if r.status_code != 422 or not m:
        raise RuntimeError(f"could not find the largest cwnd run: {r.status_code} {text[:300]}")
    raw["duration_s"] = float(m.group(1))
    return raw


async def mixed(base: str, args: argparse.Namespace, info: dict[str, Any]) -> Stats:
    large = largest_cwnd_run(base) if args.large else None
    skb = info["skb"]
    skb_preset = skb["presets"][0]
    pages = ["/"] + [p["url"] for e in info.values() for p in e["presets"]]
    async with new_client(base, 60) as c:
        shared = [
            (
                await c.post("/api/v1/scenarios", json={"explainer": "skb", "params": p["params"]})
            ).json()["id"]
            for p in skb["presets"][:3]
        ]
    pages += [f"/s/{s}" for s in shared]
    print(
        f"\nmixed: {args.connections} connections for {args.duration:g} s; {args.large} of them "
        f"send the largest cwnd run ({json.dumps(large) if large else 'none'})"
    )
    stats = Stats()
    stop_at = time.perf_counter() + args.duration

    async def heavy() -> None:
        async with new_client(base, args.timeout, 1) as c:
            while time.perf_counter() < stop_at:
                await timed(
                    stats, "run-largest", c, "POST", "/api/v1/explainers/cwnd/run", json=large
                )

    async def visitor(i: int) -> None:
        rnd = random.Random(i)
        async with new_client(base, args.timeout, 1) as c:
            c.cookies.set("stepscope_ok", "1")
            while time.perf_counter() < stop_at:
                roll = rnd.random()
                if roll < 0.35:
                    await timed(stats, "page", c, "GET", rnd.choice(pages))
                elif roll < 0.55:
                    await timed(
                        stats,
                        "frames",
                        c,
                        "GET",
                        "/explainers/skb/frames",
                        params={"start": 0, "count": 60, "preset": skb_preset["slug"]},
                    )
                elif roll < 0.75:
                    await timed(
                        stats,
                        "progress",
                        c,
                        "POST",
                        "/api/v1/progress",
                        json={"walkthrough": f"/s/{rnd.choice(shared)}", "step": 1},
                    )
                elif roll < 0.9:
                    params = rnd.choice(skb["presets"])["params"]
                    await timed(
                        stats, "run-skb", c, "POST", "/api/v1/explainers/skb/run", json=params
                    )
                else:
                    preset = rnd.choice(info["cwnd"]["presets"]) if "cwnd" in info else None
                    if preset:
                        await timed(
                            stats,
                            "run-cwnd",
                            c,
                            "POST",
                            "/api/v1/explainers/cwnd/run",
                            json=preset["params"],
                        )
                await asyncio.sleep(rnd.uniform(0, 0.2))

    tasks = [asyncio.create_task(heavy()) for _ in range(args.large if large else 0)]
    tasks += [asyncio.create_task(visitor(i)) for i in range(args.connections - len(tasks))]
    await asyncio.wait(tasks, timeout=args.duration + 5)
    stats.ended = time.perf_counter()
    for t in tasks:
        t.cancel()  # requests still running at the end are dropped, not counted
    await asyncio.gather(*tasks, return_exceptions=True)
    return stats


# --- main ------------------------------------------------------------------------------------


def check_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    addrs = {info[4][0] for info in socket.getaddrinfo(host, None)}
    if not addrs or not all(ipaddress.ip_address(a).is_loopback for a in addrs):
        raise SystemExit(f"--url must point at a loopback address, not {host!r}")


async def run(args: argparse.Namespace, base: str, server: Server | None) -> None:
    info = await explainer_info(base)
    for name in ("hall", "mixed"):
        if args.scenario not in (name, "both"):
            continue
        samples: list[tuple[float, float]] = []
        sampler = asyncio.create_task(sample_rss(server, samples, time.perf_counter()))
        stats = await (hall if name == "hall" else mixed)(base, args, info)
        sampler.cancel()
        stats.report(name)
        print_rss(samples, name)
        if server is not None:
            print("   " + server.log_summary())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a running server (loopback only); else one is started")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--scenario", choices=["hall", "mixed", "both"], default="both")
    ap.add_argument("--quick", action="store_true", help="mixed for 30 s, 10 steps per browser")
    ap.add_argument("--hall-clients", type=int, default=300)
    ap.add_argument("--hall-window", type=float, default=10.0)
    ap.add_argument("--hall-steps", type=int, default=20)
    ap.add_argument("--think", type=float, default=1.0, help="seconds between steps (mean)")
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--large", type=int, default=8, help="clients sending the largest run")
    ap.add_argument("--duration", type=float, default=None, help="mixed, s (180; quick 30)")
    ap.add_argument("--timeout", type=float, default=60.0, help="per request, s")
    args = ap.parse_args()
    args.duration = args.duration or (30.0 if args.quick else 180.0)
    if args.quick:
        args.hall_steps = min(args.hall_steps, 10)
    args.hall_clients = min(args.hall_clients, MAX_CLIENTS)
    args.connections = min(args.connections, MAX_CLIENTS)
    args.large = min(args.large, args.connections)
    random.seed(1)
    server = None
    if args.url:
        check_loopback(args.url)
        base = args.url.rstrip("/")
    else:
        server = Server(args.workers)
        print(f"starting the app on {server.url} with {args.workers} workers (SQLite, WAL)")
        server.start()
        base = server.url
    try:
        asyncio.run(run(args, base, server))
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
