"""Load test on loopback: a lecture hall opening one shared walkthrough, and a mixed load.

    .venv/bin/python bench/load.py --quick             # starts its own server, both scenarios
    .venv/bin/python bench/load.py --url http://127.0.0.1:8000 --scenario hall

Without ``--url`` it starts the app the way ``scripts/serve`` does (migrate, then uvicorn with
``--workers``) on a free loopback port and a temporary SQLite database, waits until
``/api/v1/health`` says every preset is stored (``--no-ready``: start the load at once, into the
workers' start-up), samples the server's RSS (all worker processes) every second, and stops it
at the end.

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
import gzip
import heapq
import html
import ipaddress
import json
import json as _json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

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
    notes: list[str] = field(default_factory=list)
    statuses: dict[str, dict[int, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    started: float = field(default_factory=time.perf_counter)
    ended: float = 0.0
    slowest: list[tuple[float, float, str, str]] = field(default_factory=list)  # a min-heap

    def note_slow(self, seconds: float, t0: float, kind: str, what: str) -> None:
        """Keep the 12 slowest requests (seconds, start, kind, method and URL)."""
        item = (seconds, t0 - self.started, kind, what[:90])
        if len(self.slowest) < 12:
            heapq.heappush(self.slowest, item)
        elif seconds > self.slowest[0][0]:
            heapq.heapreplace(self.slowest, item)

    def record(self, kind: str, seconds: float, status: int | None, error: str = "") -> None:
        self.latencies[kind].append(seconds)
        self.statuses[kind][status or 0] += 1
        if error or status is None or (status >= 400 and status not in NOT_ERRORS.get(kind, ())):
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
        for kind in sorted(NOT_ERRORS):
            if kind in self.statuses:
                print(f"   {kind} answers: {dict(sorted(self.statuses[kind].items()))}")
        for what, n in sorted(self.errors.items(), key=lambda kv: -kv[1])[:12]:
            print(f"   error {what}: {n}")
        for kind, n in sorted(self.unfinished.items()):
            print(f"   {kind}: {n} requests still running at the end (not counted above)")
        cheap = sorted(x for k in CHEAP for x in self.latencies.get(k, []))
        if cheap:
            print(
                f"   cheap requests ({', '.join(k for k in CHEAP if k in self.latencies)}): "
                f"p50 {pct(cheap, 50):.0f} ms, p99 {pct(cheap, 99):.0f} ms"
            )
        for note in self.notes:
            print(f"   {note}")
        if self.slowest:
            print("   slowest requests (seconds, started at s, kind, request):")
            for seconds, at, kind, what in sorted(self.slowest, reverse=True):
                print(f"     {seconds:6.2f}  @{at:6.1f}  {kind:14} {what}")


def pct(sorted_xs: list[float], p: float) -> float:
    if not sorted_xs:
        return float("nan")
    i = min(len(sorted_xs) - 1, max(0, round(p / 100 * len(sorted_xs)) - 1))
    return sorted_xs[i] * 1000


class Response:
    """What the load client keeps of an answer: status, headers (lower-case names), body."""

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def body(self) -> bytes:
        """The body inflated (only what the client reads: pages it parses, JSON answers)."""
        if self.headers.get("content-encoding") == "gzip":
            return gzip.decompress(self.content)
        return self.content

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise RuntimeError(f"HTTP {self.status_code}: {self.text[:300]}")


class Client:
    """A deliberately small HTTP/1.1 keep-alive client on asyncio streams, so that the load
    client, which shares the CPUs with the server, spends as little of them as it can (httpx
    costs about a millisecond of CPU per request; this a tenth of that). Like a browser it keeps
    up to ``connections`` connections per origin, sends cookies it was given, and does not
    decompress bodies (``Accept-Encoding: gzip``: a browser inflates in its own process)."""

    def __init__(self, base: str, timeout: float, connections: int = 4) -> None:
        parts = urlsplit(base)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.netloc = parts.netloc
        self.timeout = timeout
        self.cookies: dict[str, str] = {}
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots = asyncio.Semaphore(connections)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()

    async def get(self, url: str, **kw: Any) -> Response:
        return await self.request("GET", url, **kw)

    async def post(self, url: str, **kw: Any) -> Response:
        return await self.request("POST", url, **kw)

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        body = b"" if json is None else _json.dumps(json).encode()
        lines = [
            f"{method} {url} HTTP/1.1",
            f"Host: {self.netloc}",
            "User-Agent: stepscope-bench/2",
            "Accept-Encoding: gzip",
        ]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if json is not None:
            lines.append("Content-Type: application/json")
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        async with self._slots:
            return await asyncio.wait_for(self._exchange(raw), self.timeout)

    async def _exchange(self, raw: bytes) -> Response:
        for attempt in (0, 1):
            fresh = attempt == 1 or not self._idle
            if fresh:
                reader, writer = await asyncio.open_connection(self.host, self.port)
            else:
                reader, writer = self._idle.pop()
            try:
                writer.write(raw)
                response, keep = await self._read(reader)
            except (ConnectionError, asyncio.IncompleteReadError):
                writer.close()
                if fresh or attempt:  # a kept connection the server had closed: retry once
                    raise
                continue
            except BaseException:
                writer.close()
                raise
            if keep:
                self._idle.append((reader, writer))
            else:
                writer.close()
            return response
        raise ConnectionError("unreachable")  # pragma: no cover

    async def _read(self, reader: asyncio.StreamReader) -> tuple[Response, bool]:
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in header_lines:
            if not line:
                continue
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                cookie, _, _ = value.partition(";")
                k, _, v = cookie.partition("=")
                self.cookies[k.strip()] = v.strip()
            headers[name] = value
        if "content-length" in headers:
            content = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                parts.append(await reader.readexactly(size + 2))
                if size == 0:
                    break
            content = b"".join(p[:-2] for p in parts)
        elif status in (204, 304) or 100 <= status < 200:
            content = b""
        else:
            content = await reader.read()
            return Response(status, headers, content), False
        return Response(status, headers, content), headers.get("connection") != "close"


async def timed(
    stats: Stats,
    kind: str,
    client: Client,
    method: str,
    url: str,
    **kw: Any,
) -> Response | None:
    t0 = time.perf_counter()
    try:
        r = await client.request(method, url, **kw)
    except asyncio.CancelledError:
        stats.unfinished[kind] += 1
        raise
    except Exception as exc:  # timeouts, refused connections: counted, the client goes on
        stats.record(kind, time.perf_counter() - t0, None, type(exc).__name__)
        return None
    took = time.perf_counter() - t0
    stats.record(kind, took, r.status_code)
    stats.note_slow(took, t0, kind, f"{method} {url} → {r.status_code}")
    return r


# --- the server ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants (uvicorn's workers), in MB."""
    return sum(tree_rss_by_role(pid).values())


def tree_rss_by_role(pid: int) -> dict[str, float]:
    """Resident memory (MB) of the server's process tree by role: the uvicorn supervisor, the app
    workers (its children), the simulation processes (theirs, forked by each app worker) and
    the export browser (Playwright's driver and the Chromium it starts for a PNG, and theirs).
    Summed resident sizes count a page shared by several processes (a simulation process and
    the app worker it was forked from) once per process: see PSS for each page once."""
    return tree_mem_by_role(pid, pss=False)


def _proc_kb(pid: int, pss: bool) -> int:
    """A process's resident (``VmRSS``) or proportional (``Pss``: each page shared by n
    processes counted 1/n in each) size in kB; reading PSS walks the process's page tables."""
    path, pattern = (
        (f"/proc/{pid}/smaps_rollup", r"^Pss:\s+(\d+)")
        if pss
        else (f"/proc/{pid}/status", r"VmRSS:\s+(\d+)")
    )
    found = re.search(pattern, Path(path).read_text(), re.M)
    return int(found.group(1)) if found else 0


def tree_mem_by_role(pid: int, *, pss: bool) -> dict[str, float]:
    """MB of the server's process tree by role (:func:`tree_rss_by_role`), resident or PSS."""
    out = {
        "supervisor": 0.0,
        "app workers": 0.0,
        "simulation processes": 0.0,
        "export browser": 0.0,
    }
    roles = ("supervisor", "app workers", "simulation processes")
    todo, seen = [(pid, 0, False)], set()
    while todo:
        p, depth, browser = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            kb = _proc_kb(p, pss)
            if depth >= 2 and not browser:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes()
                browser = b"chromium" in cmd or b"playwright" in cmd
            out["export browser" if browser else roles[min(depth, 2)]] += kb / 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                kids = (task / "children").read_text().split()
                todo += [(int(c), depth + 1, browser) for c in kids]
        except OSError:
            continue
    return out


def tree_pids(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


CLK_TCK = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """CPU time (user + system) used so far by a process and its live descendants, in s."""
    total = 0
    for p in tree_pids(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLK_TCK


class Server:
    def __init__(self, workers: int, uvicorn_args: list[str] | None = None) -> None:
        self.workers = workers
        self.uvicorn_args = uvicorn_args or []
        self.tmp = tempfile.TemporaryDirectory(prefix="stepscope-load-")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = {
            **os.environ,
            "APP_DATABASE_URL": f"sqlite:///{self.tmp.name}/load.db",
            # every simulated browser comes from 127.0.0.1: lift the per-address share quota
            "APP_SHARE_QUOTA_PER_CLIENT": "1000000",
            "APP_WARM_PRESETS": "1",  # as scripts/serve
        }

    def start(self) -> None:
        py = str(ROOT / ".venv" / "bin" / "python")
        py = py if Path(py).exists() else sys.executable
        subprocess.run([py, "-m", "app.store.migrate"], cwd=ROOT, env=self.env, check=True)
        cmd = [py, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--workers", str(self.workers), "--log-level", "warning"]
        # as scripts/serve: uvicorn's own proxy-header handling off (it would believe
        # X-Forwarded-For from any loopback peer); the app trusts APP_TRUSTED_PROXIES only
        cmd += ["--no-access-log", "--backlog", "2048", "--no-proxy-headers"]
        cmd += [a for a in self.uvicorn_args if a != "--no-proxy-headers"]
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
                with urllib.request.urlopen(f"{self.url}/api/v1/explainers", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("the server did not start within 90 s")

    def wait_ready(self, limit: float = 300, in_a_row: int = 10) -> float:
        """Wait until ``/api/v1/health`` answers 200 (every preset stored, the answering
        worker's pages rendered), as a load balancer's readiness check would before sending a
        room; answers the seconds waited. Each probe is a new connection, which lands on any
        worker: ``in_a_row`` 200s in a row make it all but certain that every worker is ready
        (a worker's own first request starts its warm-up)."""
        t0, good = time.time(), 0
        while time.time() - t0 < limit:
            try:
                with urllib.request.urlopen(f"{self.url}/api/v1/health", timeout=5) as r:
                    good = good + 1 if r.status == 200 else 0
            except OSError:  # 503 while warming (HTTPError is an OSError)
                good = 0
            if good >= in_a_row:
                return time.time() - t0
            time.sleep(0.5 if good == 0 else 0.05)
        raise RuntimeError(f"the server was not ready within {limit:g} s")

    def rss_mb(self) -> float:
        return tree_rss_mb(self.proc.pid) if self.proc else float("nan")

    def cpu_s(self) -> float:
        return tree_cpu_s(self.proc.pid) if self.proc else float("nan")

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
        if "Traceback" in self.log_path.read_text(errors="replace"):
            kept = Path(tempfile.gettempdir()) / f"stepscope-load-server-{self.port}.log"
            kept.write_bytes(self.log_path.read_bytes())
            print(f"   the server's log (with its tracebacks) is kept in {kept}")
        self.tmp.cleanup()


WARM_UP_S = 60.0  # RSS flatness is judged after this much of a run (caches fill, pools start)

Sample = tuple[float, float, dict[str, float]]  # seconds since start, total MB, MB by role


async def sample_rss(server: Server | None, samples: list[Sample], t0: float) -> None:
    while server is not None and server.proc is not None:
        roles = tree_rss_by_role(server.proc.pid)
        samples.append((time.perf_counter() - t0, sum(roles.values()), roles))
        await asyncio.sleep(1.0)


def print_rss(samples: list[Sample], title: str) -> None:
    if not samples:
        print(f"   server RSS ({title}): not measured (--url)")
        return
    every = max(1, len(samples) // 12)
    points = ", ".join(f"{t:.0f}s {mb:.0f}" for t, mb, _ in samples[::every])
    peak = max(mb for _, mb, _ in samples)
    print(
        f"   server RSS MB ({title}, all processes): start {samples[0][1]:.0f}, "
        f"peak {peak:.0f}, end {samples[-1][1]:.0f}; {points}"
    )
    first, last = samples[0][2], samples[-1][2]
    print(
        "   by role, start → end: "
        + "; ".join(f"{role} {first[role]:.0f} → {last[role]:.0f}" for role in first)
    )
    after = [mb for t, mb, _ in samples if t >= WARM_UP_S]
    if len(after) >= 2:
        base, top, low = after[0], max(after), min(after)
        print(
            f"   after the first {WARM_UP_S:.0f} s: {base:.0f} MB, then between {low:.0f} and "
            f"{top:.0f} MB: within {100 * (top - low) / low:.0f} % (target: flat within 20 %)"
        )


# --- scenarios -------------------------------------------------------------------------------


def new_client(base: str, timeout: float, connections: int = 4) -> Client:
    return Client(base, timeout, connections)


async def explainer_info(base: str) -> dict[str, Any]:
    async with new_client(base, 30) as c:
        data = (await c.get("/api/v1/explainers")).json()
    return {e["name"]: e for e in data["explainers"]}


async def share_default(base: str, info: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Share the default walkthrough of cwnd (else the first explainer): the lecturer's link."""
    ex = info["cwnd"] if "cwnd" in info else next(iter(info.values()))
    preset = next(p for p in ex["presets"] if p["slug"] == ex["default_preset"])
    async with new_client(base, 60) as c:
        c.cookies["stepscope_ok"] = "1"
        r = await c.post(
            "/api/v1/scenarios",
            json={"explainer": ex["name"], "params": preset["params"], "title": "Lecture"},
        )
        r.raise_for_status()
        return ex, str(r.json()["id"])


class Player:
    """What static/js/player.js and share.js make a browser fetch as a student steps: frames
    come embedded in the page (a window of them); stepping to within 15 frames of a missing one
    fetches 80 frames starting 20 before it; every step (after a 400 ms debounce) posts the
    reached step to /api/v1/progress."""

    def __init__(self, page: str) -> None:
        self.count = int(m.group(1)) if (m := re.search(r'data-count="(\d+)"', page)) else 1
        m = re.search(r'data-frames-url="([^"]*)"', page)
        self.frames_url = html.unescape(m.group(1)) if m else ""
        m = re.search(r'data-walkthrough="([^"]*)"', page)
        self.walkthrough = html.unescape(m.group(1)) if m else ""
        self.have = {int(n) for n in re.findall(r'<template id="frame-(\d+)"', page)}

    def fetches(self, step: int) -> list[str]:
        """The frame chunk URLs a browser fetches on arriving at ``step``."""
        out = []
        for n in (min(step + 15, self.count - 1), max(step - 15, 0)):
            if n in self.have or not self.frames_url:
                continue
            start = max(0, n - 20)
            sep = "&" if "?" in self.frames_url else "?"
            out.append(f"{self.frames_url}{sep}start={start}&count=80")
            self.have.update(range(start, min(start + 80, self.count)))
        return out


async def open_page(stats: Stats, c: Client, url: str, kind: str = "page") -> Player | None:
    """A browser opening ``url``: the page, then its CSS and JS over up to 6 connections."""
    page = await timed(stats, kind, c, "GET", url)
    if page is None or page.status_code != 200:
        return None
    text = page.text
    assets = sorted(set(ASSET_RE.findall(text)))
    await asyncio.gather(*(timed(stats, "asset", c, "GET", a) for a in assets))
    return Player(text)


async def step_to(stats: Stats, c: Client, player: Player, step: int) -> None:
    await asyncio.gather(*(timed(stats, "step:frames", c, "GET", u) for u in player.fetches(step)))
    if player.walkthrough:
        await timed(
            stats,
            "step:progress",
            c,
            "POST",
            "/api/v1/progress",
            json={"walkthrough": player.walkthrough, "step": step},
        )


async def hall(base: str, args: argparse.Namespace, info: dict[str, Any]) -> Stats:
    ex, sid = await share_default(base, info)
    print(
        f"\nhall: {args.hall_clients} browsers open /s/{sid} ({ex['name']}) within "
        f"{args.hall_window:g} s and take {args.hall_steps} steps each"
    )
    if not args.cold:  # the lecturer looks at the link once before sending it to the room
        async with new_client(base, 120) as c:
            t0 = time.perf_counter()
            r = await c.get(f"/s/{sid}")
            print(f"   the lecturer's look: {r.status_code} in {time.perf_counter() - t0:.2f} s")
    stats = Stats()

    async def browser(i: int) -> None:
        await asyncio.sleep(random.uniform(0, args.hall_window))
        async with new_client(base, args.timeout, 6) as c:
            player = await open_page(stats, c, f"/s/{sid}")
            if player is None:
                return
            for step in range(1, min(args.hall_steps, player.count - 1) + 1):
                await asyncio.sleep(random.uniform(0.5, 1.5) * args.think)
                await step_to(stats, c, player, step)

    tasks = [asyncio.create_task(browser(i)) for i in range(args.hall_clients)]
    limit = args.hall_window + args.hall_steps * args.think * 1.5 + args.timeout + 30
    done, pending = await asyncio.wait(tasks, timeout=limit)
    for t in pending:
        t.cancel()
    stats.ended = time.perf_counter()
    if pending:
        stats.errors[f"browsers unfinished after {limit:.0f} s"] = len(pending)
    return stats


async def largest_cwnd_run(base: str) -> dict[str, Any]:
    """The largest cwnd run the explainer accepts: ask for far too much and take its advice."""
    raw: dict[str, Any] = {
        "link": {"rate_mbps": 1000, "rtt_ms": 40, "buffer_packets": 1000},
        "flows": [{"cc": "cubic", "start_s": 0}],
        "duration_s": 600,
    }
    async with new_client(base, 60) as c:
        r = await c.post("/api/v1/explainers/cwnd/run", json=raw)
    text = json.dumps(r.json(), ensure_ascii=False)
    m = re.search(r"duration_s to ≤ ([0-9.]+) s", text)
    if r.status_code != 422 or not m:
        raise RuntimeError(f"could not find the largest cwnd run: {r.status_code} {text[:300]}")
    raw["duration_s"] = float(m.group(1))
    return raw


CHEAP = ("page", "asset", "step:frames", "step:progress", "run-skb", "run-cwnd")
NOT_ERRORS = {"run-largest": (202, 429, 503), "job-poll": (202, 404, 410)}  # expected answers


async def mixed(
    base: str, args: argparse.Namespace, info: dict[str, Any], server: Server | None
) -> Stats:
    large = await largest_cwnd_run(base) if args.large else None
    skb = info["skb"]
    pages = ["/"] + [p["url"] for e in info.values() for p in e["presets"]]
    async with new_client(base, 60) as c:
        c.cookies["stepscope_ok"] = "1"
        shared = []
        for p in skb["presets"][:3]:
            r = await c.post("/api/v1/scenarios", json={"explainer": "skb", "params": p["params"]})
            shared.append(r.json()["id"])
    pages += [f"/s/{s}" for s in shared]
    print(
        f"\nmixed: {args.connections} connections for {args.duration:g} s; {args.large} of them "
        f"send the largest cwnd run ({json.dumps(large) if large else 'none'}), each with "
        "another seed (so none is cached); the others open pages and step through them, and "
        "run small scenarios through the API"
    )
    stats = Stats()
    stop_at = time.perf_counter() + args.duration

    async def heavy(i: int) -> None:
        assert large is not None
        n = 0
        async with new_client(base, args.timeout, 1) as c:
            while time.perf_counter() < stop_at:
                n += 1
                body = {**large, "seed": 1000 * i + n}
                r = await timed(
                    stats, "run-largest", c, "POST", "/api/v1/explainers/cwnd/run", json=body
                )
                if r is not None and r.status_code in (429, 503):
                    wait = float(r.headers.get("retry-after", "1"))
                    await asyncio.sleep(min(wait, max(0.0, stop_at - time.perf_counter())))
                elif r is not None and r.status_code == 202:  # a job: follow it, as job.js does
                    result = r.json()["result_url"] if "result_url" in r.text else None
                    result = result or f"{r.headers['location']}/result"
                    while time.perf_counter() < stop_at:
                        await asyncio.sleep(1.0)
                        done = await timed(stats, "job-poll", c, "GET", result)
                        # 404: asked a worker that does not hold the job (it is not done yet)
                        if done is None or done.status_code not in (202, 404):
                            break

    async def visitor(i: int) -> None:
        rnd = random.Random(i)
        async with new_client(base, args.timeout, 2) as c:
            while time.perf_counter() < stop_at:
                roll = rnd.random()
                if roll < 0.5:
                    c.cookies.pop("stepscope_sid", None) if rnd.random() < 0.3 else None
                    player = await open_page(stats, c, rnd.choice(pages))
                    if player is None:
                        continue
                    for step in range(1, min(player.count - 1, rnd.randint(1, 30)) + 1):
                        if time.perf_counter() >= stop_at:
                            break
                        await asyncio.sleep(rnd.uniform(0.2, 1.0))
                        await step_to(stats, c, player, step)
                elif roll < 0.8:
                    params = rnd.choice(skb["presets"])["params"]
                    await timed(
                        stats, "run-skb", c, "POST", "/api/v1/explainers/skb/run", json=params
                    )
                elif "cwnd" in info:
                    preset = rnd.choice(info["cwnd"]["presets"])
                    await timed(
                        stats,
                        "run-cwnd",
                        c,
                        "POST",
                        "/api/v1/explainers/cwnd/run",
                        json=preset["params"],
                    )
                await asyncio.sleep(rnd.uniform(0.2, 1.0))

    tasks = [asyncio.create_task(heavy(i)) for i in range(args.large if large else 0)]
    tasks += [asyncio.create_task(visitor(i)) for i in range(args.connections - len(tasks))]
    await asyncio.wait(tasks, timeout=args.duration + 5)
    stats.ended = time.perf_counter()
    for t in tasks:
        t.cancel()  # requests still running at the end are dropped, not counted
    await asyncio.gather(*tasks, return_exceptions=True)
    if server is not None:
        # Idle: the server's CPU falls below 5 % of a core, measured over half-second windows.
        left, last = time.perf_counter(), server.cpu_s()
        idle_after = None
        while time.perf_counter() - left < 60:
            await asyncio.sleep(0.5)
            now = server.cpu_s()
            if now - last < 0.025:
                idle_after = time.perf_counter() - left - 0.5
                break
            last = now
        stats.notes.append(
            "server idle (< 5 % of a core) "
            + (
                f"{max(idle_after, 0):.1f} s after the clients left"
                if idle_after is not None
                else "not within 60 s of the clients leaving"
            )
        )
    return stats


async def cost(base: str, args: argparse.Namespace, info: dict[str, Any], server: Server) -> None:
    """Server CPU per request kind: ``--cost-n`` requests of each kind (4 at a time, keep-alive),
    the server's CPU time (all its processes) before and after, divided by the count. Robust to
    other work on the machine, unlike latencies."""
    ex, sid = await share_default(base, info)
    async with new_client(base, 60, 4) as warm:
        page = await warm.get(f"/s/{sid}")
        player = Player(page.text)
        frames = [u for u in Player(page.text).fetches(player.count - 16)] or [""]
        warm.cookies["stepscope_ok"] = "1"
        await warm.post("/api/v1/progress", json={"walkthrough": player.walkthrough, "step": 1})
        session = dict(warm.cookies)
    assets = sorted(set(ASSET_RE.findall(page.text)))
    plotly = next((a for a in assets if "plotly" in a), assets[0])
    css = next((a for a in assets if a.endswith(".css")), assets[0])
    skb = info["skb"]["presets"][0]["params"]
    kinds: list[tuple[str, str, str, Any, dict[str, str]]] = [
        ("page /s/ (no cookie)", "GET", f"/s/{sid}", None, {}),
        ("page /s/ 304", "GET", f"/s/{sid}", None, {"If-None-Match": page.headers.get("etag", "")}),
        ("page /s/ (session)", "GET", f"/s/{sid}", None, session),
        ("frames (session)", "GET", frames[0], None, session),
        (
            "progress (session)",
            "POST",
            "/api/v1/progress",
            {"walkthrough": player.walkthrough, "step": 2},
            session,
        ),
        ("asset css", "GET", css, None, {}),
        ("asset plotly.js", "GET", plotly, None, {}),
        ("run-skb (cached)", "POST", "/api/v1/explainers/skb/run", skb, {}),
        ("/api/v1/explainers", "GET", "/api/v1/explainers", None, {}),
    ]
    n = args.cost_n
    print(f"\ncost: server CPU per request, {n} requests of each kind, 4 at a time")
    print(f"   {'kind':<24}{'server ms':>10}{'client ms':>10}{'p50 ms':>8}  status")
    for kind, method, url, body, extra in kinds:
        if url:
            await cost_of(base, server, n, kind, method, url, body, extra)


async def cost_of(
    base: str,
    server: Server,
    n: int,
    kind: str,
    method: str,
    url: str,
    body: Any,
    extra: dict[str, str],
) -> None:
    """Send ``n`` requests of one kind, 4 at a time; print the server's and the client's CPU."""
    cookies = {k: v for k, v in extra.items() if k.startswith("stepscope_")}
    headers = {k: v for k, v in extra.items() if not k.startswith("stepscope_")}
    stats = Stats()
    statuses: dict[int, int] = defaultdict(int)
    async with new_client(base, 60, 4) as c:
        c.cookies.update(cookies)
        await c.request(method, url, json=body, headers=headers)  # warm

        async def one() -> None:
            r = await timed(stats, kind, c, method, url, json=body, headers=headers)
            statuses[r.status_code if r else 0] += 1
            c.cookies.clear()
            c.cookies.update(cookies)

        s0, c0 = server.cpu_s(), time.process_time()
        for start in range(0, n, 4):
            await asyncio.gather(*(one() for _ in range(min(4, n - start))))
        await asyncio.sleep(0.3)  # let the server finish its accounting
        s1, c1 = server.cpu_s(), time.process_time()
    xs = sorted(stats.latencies[kind])
    print(
        f"   {kind:<24}{(s1 - s0) / n * 1000:>10.2f}{(c1 - c0) / n * 1000:>10.2f}"
        f"{pct(xs, 50):>8.1f}  {dict(statuses)}"
    )


# --- main ------------------------------------------------------------------------------------


def check_loopback(url: str) -> None:
    host = urlsplit(url).hostname or ""
    addrs = {info[4][0] for info in socket.getaddrinfo(host, None)}
    if not addrs or not all(ipaddress.ip_address(a).is_loopback for a in addrs):
        raise SystemExit(f"--url must point at a loopback address, not {host!r}")


async def run(args: argparse.Namespace, base: str, server: Server | None) -> None:
    info = await explainer_info(base)
    if args.scenario == "cost":
        if server is None:
            raise SystemExit("--scenario cost measures the server's CPU: start it here (no --url)")
        await cost(base, args, info, server)
        return
    for name in ("hall", "mixed"):
        if args.scenario not in (name, "both"):
            continue
        samples: list[Sample] = []
        sampler = asyncio.create_task(sample_rss(server, samples, time.perf_counter()))
        s0 = server.cpu_s() if server else 0.0
        c0, w0 = time.process_time(), time.perf_counter()
        load0 = os.getloadavg()[0]
        stats = await (
            hall(base, args, info) if name == "hall" else mixed(base, args, info, server)
        )
        sampler.cancel()
        wall, client = time.perf_counter() - w0, time.process_time() - c0
        stats.report(name)
        server_cpu = (server.cpu_s() - s0) if server else float("nan")
        print(
            f"   CPU over {wall:.0f} s: server {server_cpu:.1f} s, load client {client:.1f} s "
            f"({100 * client / wall:.0f} % of one core); load average {load0:.1f} → "
            f"{os.getloadavg()[0]:.1f} (other work on the machine counts too)"
        )
        print_rss(samples, name)
        if server is not None:
            print("   " + server.log_summary())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a running server (loopback only); else one is started")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--scenario", choices=["hall", "mixed", "both", "cost"], default="both")
    ap.add_argument("--quick", action="store_true", help="mixed for 30 s, 10 steps per browser")
    ap.add_argument("--hall-clients", type=int, default=300)
    ap.add_argument("--hall-window", type=float, default=10.0)
    ap.add_argument("--hall-steps", type=int, default=20)
    ap.add_argument(
        "--cold", action="store_true", help="hall: students are the first to open the link"
    )
    ap.add_argument("--think", type=float, default=1.0, help="seconds between steps (mean)")
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--large", type=int, default=8, help="clients sending the largest run")
    ap.add_argument("--duration", type=float, default=None, help="mixed, s (180; quick 30)")
    ap.add_argument("--timeout", type=float, default=60.0, help="per request, s")
    ap.add_argument("--http", choices=["auto", "h11", "httptools"], default="auto")
    ap.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto")
    ap.add_argument(
        "--no-ready",
        dest="ready",
        action="store_false",
        help="start the load as soon as the started server answers, while it still runs its "
        "presets (default: wait for /api/v1/health, as a load balancer would)",
    )
    ap.add_argument("--cost-n", type=int, default=400, help="cost: requests per kind")
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
        server = Server(args.workers, [f"--http={args.http}", f"--loop={args.loop}"])
        print(
            f"starting the app on {server.url} with {args.workers} workers (SQLite, WAL; "
            f"uvicorn --http {args.http} --loop {args.loop})"
        )
        server.start()
        base = server.url
        if args.ready:
            waited = server.wait_ready()
            print(
                f"ready (every preset stored, /api/v1/health 200) {waited:.1f} s after it answered"
            )
        else:
            print("not waiting for the presets: the load meets the workers' start-up")
    try:
        asyncio.run(run(args, base, server))
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
