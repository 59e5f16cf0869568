"""Soak: the mixed load plus an adversarial client, for issue 24's "Done when".

    .venv/bin/python bench/soak.py                         # 10 minutes, 2 workers, 100 + 6 clients
    .venv/bin/python bench/soak.py --duration 60 --connections 30 --adversaries 3

It starts the app as ``bench/load.py`` does (migrate, uvicorn ``--workers``, a temporary SQLite
file, a free loopback port; ``--no-proxy-headers`` as ``scripts/serve``, with
``APP_TRUSTED_PROXIES=["127.0.0.1"]``: a reverse proxy on this host, so each simulated client is
told apart by the right-most ``X-Forwarded-For`` hop it sends), waits until it is ready, then
runs for ``--duration`` s: ``bench/load.py --scenario mixed`` (``--connections`` clients,
``--large`` of them sending the largest cwnd run) and ``--adversaries`` clients, each with its
own seed, that send what issue 24 found: the 90-byte scheduler body and larger ``max_tokens``,
TCP keepalive scripts, the largest cwnd runs, PNG and offline-HTML exports of big scenarios
(path over veth with 32 packets, a long keepalive trace), jobs started and abandoned, DELETEs
of other clients' jobs, spoofed forwarding hops, progress POSTs with only the consent cookie,
integers like 10**400 and lone surrogates in params, ``/s/<60 KB id>`` and
``/vendor/<pkg>/package.json``.

Prints: app worker deaths (worker pids sampled every second) and processes left in the
server's session that are no longer its descendants; every status per request kind, any 500 or
answer outside the documented codes; cheap-request p50/p95/p99 (target p99 ≤ 500 ms); the
server's memory (resident MB summed over its processes every second, PSS every 5 s, each by
role: supervisor, app workers, simulation processes, export browser) and "RSS flat within 20 %
after the first minute" judged two ways from 60 s to the clients' end, each its own verdict:
by each minute's floor (growth) and by every 10-s sample (spikes too); and each run's measured
time against its prediction (``expected_s`` of a 202, else the explainer's own
``expected_seconds``), flagging those over 2×. Bounded: loopback only, at most 300 clients,
every request and phase has a hard time limit. Asserts nothing: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load as L  # noqa: E402

MAX_CLIENTS = 300
DOCUMENTED = frozenset(
    {200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 409, 410, 413, 422, 429, 503}
)
CHEAP = ("page", "step:frames", "step:progress", "adv:progress")
CHEAP_P99_MS = 500.0
OVER = 2.0  # a run measured over this many times its prediction is flagged
MIN_PREDICTED_S = 0.05  # predictions under this count as this (a request's own round trip)
BIG = 10**400
SURROGATE = "\ud800"
SCHED_90 = (
    b'{"config":{"num_gpu_blocks":1000000},"requests":[{"id":"a","prompt_tokens":1,'
    b'"max_tokens":300}]}'
)
PATH_BIG = {"path": "tx", "device": "veth", "packets": 32, "payload_bytes": 1448}


VERDICTS: list[str] = []  # one line per criterion of issue 24's "Done when", printed last


STRICTER = "stricter than the criterion: "


def verdict(criterion: str, figure: str, met: bool | None) -> None:
    """Record a criterion's figure and whether it is met (None: not measured); a reading
    stricter than the issue's words (``STRICTER``…) is printed beside it, in lower case."""
    word = "not measured" if met is None else ("MET" if met else "NOT MET")
    if criterion.startswith(STRICTER):
        word = f"({word.lower()})"
    VERDICTS.append(f"   {word:<12} {criterion}: {figure}")


def token(raw: Any) -> str:
    """A ``p=`` token, as app.web.sources.encode_params makes it."""
    data = json.dumps(raw, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# --- what the server does ------------------------------------------------------------------


def proc_stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def children(pid: int) -> set[int]:
    out: set[int] = set()
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            out |= {int(c) for c in (task / "children").read_text().split()}
    except OSError:
        pass
    return out


def session_members(sid: int) -> set[int]:
    """Every process whose session is ``sid`` (the server is started in a session of its own)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields is not None and len(fields) > 3 and fields[3] == str(sid):
                out.add(int(entry.name))
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:100]
    except OSError:
        return "?"


def full_cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "?"


@dataclass
class ProcWatch:
    """App workers (the master's children) and simulation processes (theirs) over time."""

    master: int
    workers: set[int] = field(default_factory=set)
    sims: set[int] = field(default_factory=set)
    worker_deaths: list[tuple[float, int]] = field(default_factory=list)
    sim_exits: int = 0
    servers: int = 0  # the app workers' fork servers (app.web.simworker), at most
    orphans: dict[int, str] = field(default_factory=dict)
    counts: list[tuple[float, int, int]] = field(default_factory=list)

    def sample(self, t: float) -> None:
        if proc_stat(self.master) is None:
            return
        live = {p for p in children(self.master) if "resource_tracker" not in cmdline(p)}
        self.worker_deaths += [(t, p) for p in self.workers - live]
        sims: set[int] = set()
        servers: set[int] = set()
        for c in (c for w in live for c in children(w)):
            cmd = full_cmdline(c)
            if (
                "multiprocessing.forkserver" in cmd
            ):  # a worker's fork server: its children run the simulations
                servers.add(c)
                sims |= children(c)
            elif "chromium" not in cmd and "playwright" not in cmd:
                sims.add(c)
        self.sim_exits += len(self.sims - sims)
        self.workers, self.sims, self.servers = live, sims, max(self.servers, len(servers))
        self.counts.append((t, len(live), len(sims)))
        for p in session_members(self.master) - set(L.tree_pids(self.master)):
            self.orphans.setdefault(p, cmdline(p))

    async def run(self, t0: float, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample(time.perf_counter() - t0)
            await asyncio.sleep(1.0)

    def report(self, recycled: set[int] | None = None) -> None:
        """``recycled``: the app workers that logged being replaced for their memory
        (app.web.recycle): planned, each finishing its requests and jobs, not deaths."""
        recycled = recycled or set()
        planned = [(t, p) for t, p in self.worker_deaths if p in recycled]
        deaths = [(t, p) for t, p in self.worker_deaths if p not in recycled]
        ws = [n for _, n, _ in self.counts]
        ss = [n for _, _, n in self.counts]
        print("\n== processes (sampled every second)")
        if not ws:
            print("   not measured (--url)")
            verdict("0 worker deaths", "not measured (--url)", None)
            return
        left = {p: c for p, c in self.orphans.items() if proc_stat(p) is not None}
        verdict(
            "0 worker deaths, no process left outside the server's tree",
            f"{len(deaths)} app worker deaths ({len(planned)} replaced for their "
            f"memory, as planned); {len(left)} processes of its session "
            f"outside its master's tree still alive at the end ({len(self.orphans)} seen)",
            not deaths and not left,
        )
        print(
            f"   app workers: {min(ws)}-{max(ws)} alive; worker deaths: {len(deaths)}"
            + "".join(f" (pid {p} at {t:.0f} s)" for t, p in deaths[:8])
            + " (target: 0)"
        )
        print(
            f"   app workers replaced for their memory (APP_WORKER_RECYCLE_MB): {len(planned)}"
            + "".join(f" (pid {p} gone at {t:.0f} s)" for t, p in planned[:8])
        )
        print(
            f"   simulation processes: {min(ss)}-{max(ss)} alive; {self.sim_exits} exited and "
            "were replaced (a run over its limit may end its process, one that grew is replaced "
            f"after its run); started by {self.servers} fork servers"
        )
        print(
            f"   processes of the server's session that are not descendants of its master: "
            f"{len(self.orphans)}"
            + "".join(f"\n     pid {p}: {c}" for p, c in list(self.orphans.items())[:8])
        )


# --- runs and their predictions ----------------------------------------------------------


class Predictor:
    """The explainers' own ``expected_seconds`` (the same code the server costs a run with),
    for runs answered at once (a 202 carries its ``expected_s``)."""

    def __init__(self) -> None:
        sys.path.insert(0, str(L.ROOT))
        from app import explainers

        self.sims = {p.name: p.sim for p in explainers.builtin()}

    def expected(self, name: str, raw: Any) -> float | None:
        sim = self.sims.get(name)
        if sim is None:
            return None
        try:
            return float(sim.expected_seconds(sim.parse(raw)))
        except Exception:  # noqa: BLE001 - invalid params: no prediction
            return None


@dataclass
class RunRecord:
    kind: str
    expected_s: float | None
    measured_s: float
    outcome: str  # "200", "job done", "job failed: ...", ...


@dataclass
class Adversary:
    base: str
    stop_at: float
    timeout: float
    largest: dict[str, Any] | None
    keepalive: dict[str, Any] | None
    walkthrough: str
    steps: int
    vendor: list[str]
    predictor: Predictor
    stats: L.Stats = field(default_factory=L.Stats)
    runs: list[RunRecord] = field(default_factory=list)
    jobs: list[tuple[str, str]] = field(default_factory=list)  # (status URL, owner address)
    findings: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    accepted: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))

    def left(self) -> float:
        return self.stop_at - time.perf_counter()


async def send(
    adv: Adversary,
    kind: str,
    c: L.Client,
    method: str,
    url: str,
    body: bytes | None = None,
    ctype: str = "application/json",
    headers: dict[str, str] | None = None,
) -> L.Response | None:
    """One request with a raw body (load.Client only sends JSON it encodes itself)."""
    lines = [f"{method} {url} HTTP/1.1", f"Host: {c.netloc}", "User-Agent: stepscope-soak/1"]
    lines.append("Accept-Encoding: gzip")
    if c.cookies:
        lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in c.cookies.items()))
    if body is not None:
        lines += [f"Content-Type: {ctype}", f"Content-Length: {len(body)}"]
    elif method in ("POST", "DELETE"):
        lines.append("Content-Length: 0")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    t0 = time.perf_counter()
    try:
        async with c._slots:
            r = await asyncio.wait_for(c._exchange(raw), c.timeout)
    except asyncio.CancelledError:
        adv.stats.unfinished[kind] += 1
        raise
    except Exception as exc:  # noqa: BLE001 - timeouts, dropped connections: counted
        adv.stats.record(kind, time.perf_counter() - t0, None, type(exc).__name__)
        return None
    took = time.perf_counter() - t0
    adv.stats.record(kind, took, r.status_code)
    adv.stats.note_slow(took, t0, kind, f"{method} {url[:70]} → {r.status_code}")
    return r


async def run_and_follow(
    adv: Adversary,
    c: L.Client,
    kind: str,
    explainer: str,
    raw: Any,
    xff: str,
    *,
    abandon: bool = False,
) -> None:
    """POST a run; a 200 is measured against the explainer's prediction, a 202 is followed
    (polled every 0.5 s, as job.js does) to its end, or abandoned."""
    body = json.dumps(raw).encode()
    hdr = {"X-Forwarded-For": xff}
    t0 = time.perf_counter()
    r = await send(adv, kind, c, "POST", f"/api/v1/explainers/{explainer}/run", body, headers=hdr)
    took = time.perf_counter() - t0
    if r is None:
        return
    if r.status_code == 200:
        adv.runs.append(RunRecord(kind, adv.predictor.expected(explainer, raw), took, "200"))
        return
    if r.status_code != 202:
        return
    adv.accepted[(xff.rsplit(",", 1)[-1].strip(), int(time.perf_counter() // 60))] += 1
    data = r.json()
    status_url = str(data.get("status_url") or r.headers.get("location", ""))
    # the wait the server estimated for it (app.web.eta); its predicted work if none
    expected = float(data.get("eta_s") or data.get("expected_s", "nan"))
    if abandon:
        adv.jobs.append((status_url, xff.rsplit(",", 1)[-1].strip()))
        return
    deadline = t0 + min(max(60.0, 10 * expected), 300.0)
    outcome = "still running at 10× its prediction (or 300 s)"
    try:
        while time.perf_counter() < deadline:
            await asyncio.sleep(0.5)
            s = await send(adv, "adv:job-poll", c, "GET", status_url, headers=hdr)
            if s is None or s.status_code == 404:  # not visible from this worker yet
                continue
            state = str(s.json().get("state", "?")) if s.status_code == 200 else str(s.status_code)
            if state != "running":
                error = f": {s.json().get('error')}" if "error" in s.text else ""
                outcome = f"job {state}{error}"
                break
    except asyncio.CancelledError:  # the soak ended while this job ran: it is counted so far
        outcome = "still running when the soak ended"
        adv.runs.append(RunRecord(kind, expected, time.perf_counter() - t0, outcome))
        raise
    adv.runs.append(RunRecord(kind, expected, time.perf_counter() - t0, outcome))


# --- the adversarial requests ------------------------------------------------------------

Action = Callable[[Adversary, L.Client, random.Random, str], Awaitable[None]]


async def a_sched(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    if rnd.random() < 0.3:  # the exact 90-byte body (stored after its first run)
        t0 = time.perf_counter()
        r = await send(adv, "adv:sched-90", c, "POST", "/api/v1/explainers/scheduler/run", SCHED_90)
        if r is not None and r.status_code == 200:
            raw = json.loads(SCHED_90)
            pred = adv.predictor.expected("scheduler", raw)
            adv.runs.append(RunRecord("adv:sched-90", pred, time.perf_counter() - t0, "200"))
        return
    mt = rnd.choice((300, 1_000, 3_000, 10_000, 100_000, 1_000_000))
    raw = {
        "config": {"num_gpu_blocks": 1_000_000},
        "requests": [{"id": f"a{rnd.randrange(10**9)}", "prompt_tokens": 1, "max_tokens": mt}],
    }
    await run_and_follow(adv, c, "adv:sched-big", "scheduler", raw, xff)


async def a_keepalive(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    if adv.keepalive is None:
        return
    raw = {**adv.keepalive, "until_ms": rnd.randrange(1_000_000, 3_600_000)}
    await run_and_follow(adv, c, "adv:keepalive", "tcp", raw, xff)


async def a_cwnd(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    if adv.largest is not None:
        raw = {**adv.largest, "seed": rnd.randrange(10**6, 10**9)}
        await run_and_follow(adv, c, "adv:cwnd-largest", "cwnd", raw, xff)


async def a_export(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    hdr = {"X-Forwarded-For": xff}
    raw: dict[str, Any] = {**PATH_BIG, "payload_bytes": rnd.randrange(1000, 1449)}
    name = "path"
    if adv.keepalive is not None and rnd.random() < 0.4:
        raw, name = {**adv.keepalive, "until_ms": rnd.randrange(1_000_000, 3_600_000)}, "tcp"
    q = {"explainer": name, "p": token(raw)}
    what = rnd.choice(("png", "html"))
    if what == "png":
        q["step"] = str(rnd.randrange(0, 400))
    url = f"/export/{what}?{urlencode(q)}"
    r = await send(adv, f"adv:export-{what}", c, "GET", url, headers=hdr)
    if r is not None and r.status_code == 200 and len(r.content) > 50_000_000:
        adv.findings[f"an {what} export over 50 MB"] += 1


async def a_abandon(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    if adv.largest is not None:
        raw = {**adv.largest, "seed": rnd.randrange(10**6, 10**9)}
        await run_and_follow(adv, c, "adv:abandoned", "cwnd", raw, xff, abandon=True)


async def a_delete(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    """DELETE another client's job (as another address): the answer must not be 204."""
    others = [(u, o) for u, o in adv.jobs if o != xff.rsplit(",", 1)[-1].strip()]
    if not others:
        return
    url, _ = rnd.choice(others)
    r = await send(adv, "adv:delete-other", c, "DELETE", url, headers={"X-Forwarded-For": xff})
    if r is not None and r.status_code == 204:
        adv.findings["DELETE of another client's job answered 204"] += 1


async def a_spoof(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    """Long runs with a new left-most X-Forwarded-For hop each time (the right-most, the
    address the proxy saw, stays): the per-client quota must still hold."""
    spoofed = f"198.51.100.{rnd.randrange(1, 255)}, {xff}"
    if adv.largest is not None:
        raw = {**adv.largest, "seed": rnd.randrange(10**6, 10**9)}
        await run_and_follow(adv, c, "adv:spoofed-xff", "cwnd", raw, spoofed, abandon=True)


async def a_progress(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    """POST /api/v1/progress with only the consent cookie, 20 in a row (each a new session)."""
    body = json.dumps({"walkthrough": adv.walkthrough, "step": 1}).encode()
    for step in range(20):
        if adv.left() <= 0:
            return
        c.cookies = {"stepscope_ok": "1"}
        at = 1 + step % max(1, adv.steps - 1)
        body = json.dumps({"walkthrough": adv.walkthrough, "step": at}).encode()
        await send(
            adv,
            "adv:progress",
            c,
            "POST",
            "/api/v1/progress",
            body,
            headers={"X-Forwarded-For": xff},
        )


def bad_bodies(adv: Adversary) -> list[tuple[str, str, bytes]]:
    """(explainer, what, body) with 10**400 or a lone surrogate somewhere."""
    sched = {"config": {"num_gpu_blocks": 1000}, "requests": [{"id": "a", "prompt_tokens": 1}]}
    out = [
        (
            "scheduler",
            "int max_tokens",
            json.dumps(
                {**sched, "requests": [{"id": "a", "prompt_tokens": 1, "max_tokens": BIG}]}
            ).encode(),
        ),
        (
            "scheduler",
            "surrogate id",
            json.dumps({**sched, "requests": [{"id": SURROGATE, "prompt_tokens": 1}]}).encode(),
        ),
        ("scheduler", "surrogate key", json.dumps({**sched, SURROGATE: 1}).encode()),
        (
            "scheduler",
            "raw surrogate bytes",
            b'{"config":{},"requests":[{"id":"\xed\xa0\x80","prompt_tokens":1}]}',
        ),
    ]
    if adv.largest is not None:
        out.append(
            ("cwnd", "int duration_s", json.dumps({**adv.largest, "duration_s": BIG}).encode())
        )
        link = {**adv.largest["link"], "rate_mbps": BIG}
        out.append(("cwnd", "int rate_mbps", json.dumps({**adv.largest, "link": link}).encode()))
    if adv.keepalive is not None:
        out.append(("tcp", "int until_ms", json.dumps({**adv.keepalive, "until_ms": BIG}).encode()))
        out.append(("tcp", "surrogate key", json.dumps({**adv.keepalive, SURROGATE: 1}).encode()))
    return out


async def a_params(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    """10**400 and lone surrogates: in a JSON body, in a p= link, in a form field."""
    name, _, body = rnd.choice(bad_bodies(adv))
    hdr = {"X-Forwarded-For": xff}
    await send(adv, "adv:bad-json", c, "POST", f"/api/v1/explainers/{name}/run", body, headers=hdr)
    try:
        p = base64.urlsafe_b64encode(body).decode().rstrip("=")
    except ValueError:
        return
    link = rnd.choice((f"/explainers/{name}/custom?p={p}", f"/export/json?explainer={name}&p={p}"))
    await send(adv, "adv:bad-link", c, "GET", link, headers=hdr)
    form = f"action=validate&title=%ED%A0%80&{quote(SURROGATE, errors='surrogatepass')}=1"
    form_hdr = {**hdr, "Origin": adv.base, "Sec-Fetch-Site": "same-origin"}
    await send(
        adv,
        "adv:bad-form",
        c,
        "POST",
        f"/explainers/{name}/edit",
        form.encode(),
        "application/x-www-form-urlencoded",
        form_hdr,
    )


async def a_paths(adv: Adversary, c: L.Client, rnd: random.Random, xff: str) -> None:
    """A 60 KB shared-scenario id (its 404 must not echo it) and a vendored package.json."""
    big_id = "".join(rnd.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(60_000))
    r = await send(adv, "adv:huge-id", c, "GET", f"/s/{big_id}", headers={"X-Forwarded-For": xff})
    if r is not None and big_id[:2000] in r.text:
        adv.findings["/s/<60 KB id> echoes the id"] += 1
    for pkg in adv.vendor[:3]:
        r = await send(adv, "adv:vendor-pkg", c, "GET", f"/vendor/{pkg}/package.json")
        if r is not None and r.status_code == 200:
            adv.findings[f"/vendor/{pkg}/package.json served"] += 1


ACTIONS: dict[str, tuple[Action, int]] = {  # name: (action, weight)
    "scheduler": (a_sched, 3),
    "keepalive": (a_keepalive, 2),
    "cwnd-largest": (a_cwnd, 1),
    "export": (a_export, 1),
    "abandon": (a_abandon, 1),
    "delete-other": (a_delete, 2),
    "spoof": (a_spoof, 1),
    "progress": (a_progress, 2),
    "bad-params": (a_params, 3),
    "odd-paths": (a_paths, 1),
}


async def adversary(adv: Adversary, i: int, seed: int) -> None:
    rnd = random.Random(seed * 1000 + i)
    xff = f"10.0.{i // 250}.{i % 250 + 1}"  # the address a proxy on this host would append
    # The first round sends each kind once, starting at a different one per client (so a short
    # run still sends every kind); then each round sends every kind as often as its weight, in
    # an order of the client's seed.
    names = list(ACTIONS)
    order = names[3 * i % len(names) :] + names[: 3 * i % len(names)]
    async with L.new_client(adv.base, adv.timeout, 2) as c:
        c.cookies["stepscope_ok"] = "1"
        while adv.left() > 0:
            for name in order:
                if adv.left() <= 0:
                    break
                await ACTIONS[name][0](adv, c, rnd, xff)
                await asyncio.sleep(rnd.uniform(0.2, 1.0))
            order = [name for name, (_, weight) in ACTIONS.items() for _ in range(weight)]
            rnd.shuffle(order)


# --- setup, report, main -------------------------------------------------------------------


async def prepare(base: str, args: argparse.Namespace, predictor: Predictor) -> Adversary:
    info = await L.explainer_info(base)
    largest = await L.largest_cwnd_run(base) if "cwnd" in info else None
    keepalive = None
    if "tcp" in info:
        ka = next((p for p in info["tcp"]["presets"] if p["slug"] == "keepalive"), None)
        if ka is not None:  # probes every second on a link that answers them, for an hour
            keepalive = {**ka["params"], "network": []}
            keepalive["sysctl"] = {
                "tcp_keepalive_time_s": 1,
                "tcp_keepalive_intvl_s": 1,
                "tcp_keepalive_probes": 127,
            }
    async with L.new_client(base, 60) as c:
        page = await c.get(info["skb"]["presets"][0]["url"])
    vendor = sorted(
        {a.split("/")[2] for a in L.ASSET_RE.findall(page.text) if a.startswith("/vendor/")}
    )
    return Adversary(
        base=base,
        stop_at=time.perf_counter() + args.duration,
        timeout=args.timeout,
        largest=largest,
        keepalive=keepalive,
        walkthrough=L.Player(page.text).walkthrough,
        steps=L.Player(page.text).count,
        vendor=vendor or ["htmx.org"],
        predictor=predictor,
    )


def report_statuses(stats: list[L.Stats]) -> None:
    print("\n== answers by request kind (status: count; 0 = no answer: timeout or dropped)")
    bad: dict[str, int] = defaultdict(int)
    for s in stats:
        for kind in sorted(s.statuses):
            codes = dict(sorted(s.statuses[kind].items()))
            print(f"   {kind:<20} {codes}")
            for code, n in codes.items():
                if code == 500 or code not in DOCUMENTED:
                    bad[f"{kind} → {code}"] += n
    fives = sum(n for k, n in bad.items() if k.endswith("→ 500"))
    print(
        f"   500s: {fives} (target: 0); answers "
        "outside 200/201/202/204/304/400/401/403/404/405/409/410/413/422/429/503: "
        + (", ".join(f"{k}: {n}" for k, n in sorted(bad.items())) or "none")
    )
    total = sum(n for s in stats for codes in s.statuses.values() for n in codes.values())
    verdict(
        "no 500, every answer within the documented codes (0 = no answer in --timeout)",
        f"{fives} × 500 of {total} requests; outside the documented codes: "
        + (", ".join(f"{k}: {n}" for k, n in sorted(bad.items())) or "none"),
        not bad,
    )


def report_cheap(stats: list[L.Stats]) -> None:
    print("\n== cheap requests (target: p99 ≤ 500 ms)")
    every: list[float] = []
    for kind in CHEAP:
        xs = sorted(x for s in stats for x in s.latencies.get(kind, []))
        every += xs
        if xs:
            print(
                f"   {kind:<16} n {len(xs):>6}  p50 {L.pct(xs, 50):6.0f}  p95 {L.pct(xs, 95):6.0f}"
                f"  p99 {L.pct(xs, 99):6.0f} ms"
            )
    every.sort()
    if every:
        p99 = L.pct(every, 99)
        word = "met" if p99 <= CHEAP_P99_MS else "NOT met"
        print(
            f"   all cheap: n {len(every)}, p50 {L.pct(every, 50):.0f}, p95 {L.pct(every, 95):.0f}, "
            f"p99 {p99:.0f} ms ({word})"
        )
        verdict(
            f"cheap requests p99 ≤ {CHEAP_P99_MS:.0f} ms",
            f"p99 {p99:.0f} ms (p50 {L.pct(every, 50):.0f}, p95 {L.pct(every, 95):.0f}; "
            f"n {len(every)}: {', '.join(CHEAP)})",
            p99 <= CHEAP_P99_MS,
        )
    else:
        verdict(f"cheap requests p99 ≤ {CHEAP_P99_MS:.0f} ms", "no cheap request", None)


async def sample_pss(server: L.Server | None, out: list[L.Sample], t0: float) -> None:
    """PSS by role every 5 s (reading it walks each process's page tables: not every second)."""
    while server is not None and server.proc is not None:
        roles = L.tree_mem_by_role(server.proc.pid, pss=True)
        out.append((time.perf_counter() - t0, sum(roles.values()), roles))
        await asyncio.sleep(5.0)


def flatness(points: list[tuple[float, float]], after_s: float) -> str:
    """ "low-high MB, within N % (flat|NOT flat)" of the points from ``after_s`` on."""
    later = [mb for t, mb in points if t >= after_s]
    if len(later) < 2:
        return f"shorter than {after_s:.0f} s: not judged"
    low, top = min(later), max(later)
    spread = 100 * (top - low) / low if low > 0 else float("inf")
    verdict = "flat" if spread <= 20 else "NOT flat"
    return f"{low:.0f}-{top:.0f} MB, within {spread:.0f} % ({verdict}; target 20 %)"


def floor_values(
    points: list[tuple[float, float]], after_s: float, window_s: float = 60.0
) -> list[tuple[float, float]]:
    """(window start, lowest figure) of each ``window_s`` from ``after_s`` on: memory between
    large runs and exports (a run may hold a few hundred MB while it runs; a leak raises the
    floor)."""
    low: dict[int, float] = {}
    for t, mb in points:
        if t >= after_s:
            w = int((t - after_s) // window_s)
            low[w] = min(low.get(w, mb), mb)
    return [(after_s + w * window_s, mb) for w, mb in sorted(low.items())]


def floors(points: list[tuple[float, float]], after_s: float, window_s: float = 60.0) -> str:
    """:func:`floor_values` as "60-120 s 900, 120-180 s 980"."""
    return ", ".join(
        f"{start:.0f}-{start + window_s:.0f} s {mb:.0f}"
        for start, mb in floor_values(points, after_s, window_s)
    )


def ten_second_samples(samples: list[L.Sample]) -> list[L.Sample]:
    """The first sample of each 10-s window (samples are taken about once a second)."""
    seen: dict[int, L.Sample] = {}
    for sample in samples:
        seen.setdefault(int(sample[0]) // 10, sample)
    return [seen[k] for k in sorted(seen)]


def spread(points: list[float]) -> tuple[float, float, float]:
    """min, max, and max over min as a percentage above 100 (0 = flat)."""
    low, top = min(points), max(points)
    return low, top, (100 * (top - low) / low if low > 0 else float("inf"))


FLAT_PCT = 20.0
ROLES = ("supervisor", "app workers", "simulation processes", "export browser")


def judged(samples: list[L.Sample], until_s: float) -> list[L.Sample]:
    """The samples "RSS flat" is judged on: from the end of the first minute to the clients'
    end (after it the server idles and lets go of what it held)."""
    return [s for s in samples if L.WARM_UP_S <= s[0] < until_s]


def _floors_of(samples: list[L.Sample], role: str | None = None) -> list[float]:
    points = [(t, mb if role is None else roles.get(role, 0.0)) for t, mb, roles in samples]
    return [mb for _, mb in floor_values(points, L.WARM_UP_S)]


def _arrow(values: list[float]) -> str:
    return " → ".join(f"{v:.0f}" for v in values)


def _pct(values: list[float]) -> float:
    return spread(values)[2] if values else float("nan")


def _grew(values: list[float]) -> float:
    """How far the highest floor rose above the first minute's, as a percentage: growth (a
    floor lower than the first, a worker being replaced for its memory, is not)."""
    if not values or values[0] <= 0:
        return float("nan")
    return 100 * (max(values) - values[0]) / values[0]


def memory_judgement(
    rss: list[L.Sample], pss: list[L.Sample], until_s: float
) -> tuple[list[str], list[tuple[str, str, bool | None]]]:
    """How "RSS flat within 20 % after the first minute" is judged, both ways, on the samples
    from 60 s to ``until_s``: (a) **growth**, each minute's floor (its lowest sample: what the
    server keeps between large runs and exports), and (b) **spikes**, every 10-s sample of the
    summed RSS (one per 10 s of the 1-s samples) and every 5-s PSS sample; each of them for the
    whole tree (summed RSS, and PSS: each shared page counted once) and by role. Answers the
    report's lines and the two verdicts (criterion, figure, met), met on the summed RSS."""
    r, p = judged(rss, until_s), judged(pss, until_s)
    crit_a = "RSS flat within 20 % after the first minute, by each minute's floor (growth)"
    crit_b = STRICTER + "every 10-s sample within 20 % after the first minute (spikes too)"
    tens = ten_second_samples(r)
    if len(tens) < 2:
        why = f"shorter than {L.WARM_UP_S:.0f} s: not judged"
        return [f"   {why}"], [(crit_a, why, None), (crit_b, why, None)]
    lines = [f"   judged from {L.WARM_UP_S:.0f} s to the clients' end at {until_s:.0f} s"]
    fr, fp = _floors_of(r), _floors_of(p)
    lines.append(
        f"   (a) growth, each minute's floor, MB: summed RSS {_arrow(fr)} (highest +{_grew(fr):.0f} %"
        f" over the first; max/min +{_pct(fr):.0f} %); PSS {_arrow(fp)} (+{_grew(fp):.0f} %; "
        f"max/min +{_pct(fp):.0f} %)"
    )
    lines.append(
        "       by role, RSS floors: "
        + "; ".join(f"{role} {_arrow(_floors_of(r, role))}" for role in ROLES)
    )
    if p:
        lines.append(
            "       by role, PSS floors: "
            + "; ".join(f"{role} {_arrow(_floors_of(p, role))}" for role in ROLES)
        )
    lo, hi, pct = spread([mb for _, mb, _ in tens])
    lo_p, hi_p, pct_p = spread([mb for _, mb, _ in p]) if p else (0.0, 0.0, float("nan"))
    lo1, hi1, pct1 = spread([mb for _, mb, _ in r])
    bare = [mb - roles.get("export browser", 0.0) for _, mb, roles in tens]
    lo2, hi2, pct2 = spread(bare)
    bare_p = [mb - roles.get("export browser", 0.0) for _, mb, roles in p] or [0.0]
    lo3, hi3, pct3 = spread(bare_p)
    lines.append(
        f"   (b) spikes, every 10-s sample: summed RSS {lo:.0f}-{hi:.0f} MB (+{pct:.0f} %; "
        f"every 1-s sample {lo1:.0f}-{hi1:.0f}, +{pct1:.0f} %); PSS every 5 s {lo_p:.0f}-"
        f"{hi_p:.0f} MB (+{pct_p:.0f} %)"
    )
    lines.append(
        "       by role, RSS min-max: "
        + "; ".join(
            f"{role} {min(s[2].get(role, 0.0) for s in r):.0f}-"
            f"{max(s[2].get(role, 0.0) for s in r):.0f}"
            for role in ROLES
        )
    )
    lines.append(
        f"       without the export browser: summed RSS {lo2:.0f}-{hi2:.0f} MB (+{pct2:.0f} %), "
        f"PSS {lo3:.0f}-{hi3:.0f} MB (+{pct3:.0f} %)"
    )
    t_top, mb_top, roles_top = max(r, key=lambda sample: sample[1])
    lines.append(
        f"       the highest 1-s sample, {mb_top:.0f} MB at {t_top:.0f} s: "
        + "; ".join(f"{role} {mb:.0f}" for role, mb in roles_top.items())
    )
    verdicts: list[tuple[str, str, bool | None]] = [
        (
            crit_a,
            f"floors of the summed RSS {_arrow(fr)} MB (highest +{_grew(fr):.0f} % over the first"
            f" minute's), of PSS {_arrow(fp)} MB (+{_grew(fp):.0f} %)",
            _grew(fr) <= FLAT_PCT,
        ),
        (
            crit_b,
            f"summed RSS {lo:.0f}-{hi:.0f} MB (+{pct:.0f} %), PSS {lo_p:.0f}-{hi_p:.0f} MB "
            f"(+{pct_p:.0f} %); without the export browser (0-"
            f"{max(s[2].get('export browser', 0.0) for s in r):.0f} MB) RSS +{pct2:.0f} %, "
            f"PSS +{pct3:.0f} %",
            pct <= FLAT_PCT,
        ),
    ]
    return lines, verdicts


def report_memory(rss: list[L.Sample], pss: list[L.Sample], until_s: float) -> None:
    print(
        "\n== server memory: every process of the server's tree (master, app workers, simulation "
        "processes, export browser); RSS = resident MB summed over them, sampled every second "
        "(a page mapped by n processes counted n times), PSS every 5 s (counted once)"
    )
    if not rss:
        print("   not measured (--url)")
        verdict("RSS flat within 20 % after the first minute", "not measured (--url)", None)
        return
    print(
        "   RSS every 10 s: "
        + ", ".join(f"{t:.0f}s {mb:.0f}" for t, mb, _ in ten_second_samples(rss))
    )
    if pss:
        every = max(1, len(pss) // 16)
        print("   PSS: " + ", ".join(f"{t:.0f}s {mb:.0f}" for t, mb, _ in pss[::every]))
    lines, verdicts = memory_judgement(rss, pss, until_s)
    for line in lines:
        print(line)
    for criterion, figure, met in verdicts:
        verdict(criterion, figure, met)


def read_run_log(path: Path, since: float) -> list[dict[str, Any]]:
    """The server's run log (``APP_RUN_LOG``: a JSON line per finished run), from ``since``
    (time.time()) on: the runs of the soak, not the presets run at start-up."""
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:  # a line being written as the server stopped
            continue
        if isinstance(rec, dict) and float(rec.get("time", 0)) >= since:
            out.append(rec)
    return out


def _ratio(measured: float, expected: float) -> float:
    return measured / max(expected, MIN_PREDICTED_S)


def _eta_ratio(wall: float, eta: float) -> float:
    """Wall time over the eta, each at least :data:`MIN_PREDICTED_S` (a request's own round
    trip): a run told 9 ms that took 6 ms is within 2× of it, not 0.12× of 50 ms (the floor on
    one side only counted 30-50 tiny runs per soak as "outside 2×", under their eta)."""
    return max(wall, MIN_PREDICTED_S) / max(eta, MIN_PREDICTED_S)


def _eta(r: dict[str, Any]) -> float:
    """The run's wall time as the server estimated it when the run was submitted (``eta_s``:
    the runs ahead of it and the recent pace, app.web.eta), else its predicted work."""
    eta = r.get("eta_s")
    return float(eta) if eta else float(r["expected_s"])


def _p50(xs: list[float]) -> float:
    return xs[(len(xs) - 1) // 2]


def eta_misses_line(records: list[dict[str, Any]]) -> str:
    """The runs outside 2× of their eta by lane, and which way: over it (slower than told) or
    under half of it (faster)."""
    by_lane: dict[str, list[float]] = defaultdict(list)
    for r in records:
        if r.get("cpu_s") is not None:
            by_lane[str(r.get("lane", "?"))].append(_eta_ratio(float(r["wall_s"]), _eta(r)))
    return "wall time outside 2× of the eta, by lane: " + "; ".join(
        f"{lane} {sum(1 for x in xs if x > OVER)} slower, "
        f"{sum(1 for x in xs if x < 1 / OVER)} faster, of {len(xs)}"
        for lane, xs in sorted(by_lane.items())
    )


def run_log_lines(records: list[dict[str, Any]]) -> list[str]:
    """What the server's own run log says, per explainer: each run's CPU time in its simulation
    process against ``expected_seconds`` (the prediction of its work: CPU time does not count
    other processes sharing the CPUs or the wait for a process), and its wall time from the
    request to the stored result against ``eta_s``, the wait the client was told when it was
    submitted (the runs ahead of it and the lane's recent pace; app.web.eta), and against
    ``expected_seconds`` too, with the wait for a process. Runs that ended in a process (done,
    or failed there) have a CPU time; runs cancelled or refused before one took them do not."""
    lines = []
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_name[str(rec["explainer"])].append(rec)
    cpu_over = eta_over = wall_over = timed = 0
    for name, recs in sorted(by_name.items()):
        measured = [r for r in recs if r.get("cpu_s") is not None]
        cpu = sorted(_ratio(float(r["cpu_s"]), float(r["expected_s"])) for r in measured)
        wall = sorted(_ratio(float(r["wall_s"]), float(r["expected_s"])) for r in measured)
        eta = sorted(_eta_ratio(float(r["wall_s"]), _eta(r)) for r in measured)
        queued = sorted(float(r["queued_s"]) for r in measured)
        over_c = sum(1 for x in cpu if x > OVER)
        over_w = sum(1 for x in wall if x > OVER)
        over_e = sum(1 for x in eta if x > OVER or x < 1 / OVER)
        cpu_over, wall_over, timed = cpu_over + over_c, wall_over + over_w, timed + len(cpu)
        eta_over += over_e
        states: dict[str, int] = defaultdict(int)
        for r in recs:
            states[str(r["state"])] += 1
        if not cpu:
            lines.append(
                f"   {name:<10} n {len(recs):>4}; no run ended in a process {dict(states)}"
            )
            continue
        worst = max(measured, key=lambda r: _ratio(float(r["cpu_s"]), float(r["expected_s"])))
        lines.append(
            f"   {name:<10} n {len(recs):>4} {dict(states)}; CPU/predicted p50 "
            f"{_p50(cpu):.2f}, max {cpu[-1]:.2f} ({worst['cpu_s']:.2f} s for "
            f"{worst['expected_s']:.3g} s), over {OVER:g}×: {over_c}; wall/eta p50 "
            f"{_p50(eta):.2f}, min {eta[0]:.2f}, max {eta[-1]:.2f}, outside {OVER:g}×: {over_e}; "
            f"wall/predicted p50 {_p50(wall):.2f}, max {wall[-1]:.2f}; waited for a process "
            f"p50 {_p50(queued):.2f}, max {queued[-1]:.2f} s"
        )
    lines.append("   " + eta_misses_line(records))
    lines.append(
        f"   runs whose CPU time is over {OVER:g}× their predicted work: {cpu_over} of {timed}; "
        f"whose wall time is outside {OVER:g}× of the eta they were given: {eta_over}; over "
        f"{OVER:g}× their predicted work: {wall_over} (predictions, and against an eta wall "
        f"times, under {MIN_PREDICTED_S * 1000:.0f} ms count as {MIN_PREDICTED_S * 1000:.0f} ms)"
    )
    if timed:
        verdict(
            f"every run within {OVER:g}× of its predicted cost, CPU time",
            f"{cpu_over} of {timed} runs over {OVER:g}× expected_seconds (the CPU time of "
            "each run in its simulation process, from the server's run log)",
            cpu_over == 0,
        )
        verdict(
            STRICTER + f"every run's wall time within {OVER:g}× of the eta_s it was told",
            f"{eta_over} of {timed} runs outside {OVER:g}× of the eta_s they were given "
            f"(request to stored result; {wall_over} over {OVER:g}× expected_seconds)",
            eta_over == 0,
        )
    else:
        verdict(f"every run within {OVER:g}× of its predicted cost", "no run in the log", None)
    for name, recs in sorted(by_name.items()):
        grew = sorted(float(r["grew_mb"]) for r in recs if r.get("grew_mb") is not None)
        if grew:
            lines.append(
                f"   {name:<10} resident memory a run added to its process at its peak: p50 "
                f"{_p50(grew):.0f}, max {grew[-1]:.0f} MB"
            )
    sizes = [float(r["private_mb"]) for r in records if r.get("private_mb") is not None]
    if sizes:
        pids = {r["pid"] for r in records if r.get("pid") is not None}
        lines.append(
            f"   simulation processes after their runs: {min(sizes):.0f}-{max(sizes):.0f} MB "
            f"of their own (not shared with their app worker); {len(pids)} processes ran them"
        )
    return lines


def report_run_log(path: Path | None, since: float) -> None:
    print(
        "\n== runs as the server measured them (APP_RUN_LOG): CPU time in the simulation "
        "process and wall time, each against expected_seconds"
    )
    if path is None:
        print("   not measured (--url)")
        return
    for line in run_log_lines(read_run_log(path, since)):
        print(line)
    if path.exists():  # the server's temporary directory goes when it stops
        kept = Path(tempfile.gettempdir()) / f"stepscope-soak-runs-{os.getpid()}.jsonl"
        shutil.copyfile(path, kept)
        print(f"   the run log is kept in {kept}")


def report_runs(adv: Adversary) -> None:
    print(
        f"\n== runs as the clients saw them: measured vs predicted (flagged over {OVER:g}×; a "
        "200 is timed from the request against expected_seconds, a job from its 202 to the poll "
        "that saw it end, ±0.5 s, against the eta_s of the 202)"
    )
    by_kind: dict[str, list[RunRecord]] = defaultdict(list)
    for r in adv.runs:
        by_kind[r.kind].append(r)
    flagged = 0
    for kind, rs in sorted(by_kind.items()):
        ratios = sorted(
            r.measured_s / max(r.expected_s, MIN_PREDICTED_S)
            for r in rs
            if r.expected_s is not None
        )
        outcomes: dict[str, int] = defaultdict(int)
        for r in rs:
            outcomes[r.outcome[:60]] += 1
        worst = max(rs, key=lambda r: r.measured_s)
        print(
            f"   {kind:<18} n {len(rs):>4}; measured/predicted p50 "
            f"{(ratios[(len(ratios) - 1) // 2] if ratios else float('nan')):.2f}, max "
            f"{(ratios[-1] if ratios else float('nan')):.2f}; slowest {worst.measured_s:.2f} s "
            f"(predicted {worst.expected_s if worst.expected_s is not None else float('nan'):.2f} s); "
            f"{dict(outcomes)}"
        )
        for r in rs:
            if r.expected_s is not None and r.measured_s > OVER * max(
                r.expected_s, MIN_PREDICTED_S
            ):
                flagged += 1
    print(
        f"   runs over {OVER:g}× their prediction: {flagged} of "
        f"{sum(1 for r in adv.runs if r.expected_s is not None)} (predictions under 50 ms count "
        "as 50 ms: a request's own round trip)"
    )
    per_min = max(adv.accepted.values(), default=0)
    print(
        "   long runs accepted from one client address in one minute (all hops): "
        f"max {per_min} (the quota: 6 by default)"
    )
    for what, n in sorted(adv.findings.items()):
        print(f"   FINDING {what}: {n}")


STALL_RE = re.compile(r"event loop held (\d+) ms \((\d+) samples\): (.*)$", re.M)
GC_RE = re.compile(r"full garbage collection took (\d+) ms", re.M)
LOOP_STALL_MS = 200  # the server logs each time an app worker's loop is held longer than this


def stall_lines(text: str) -> list[str]:
    """What the server's loop watch (``APP_LOOP_STALL_MS``, app.web.loopwatch) logged: how
    often and how long an app worker's event loop was held, and where it was held most (each
    place weighted by its samples, 50 ms apart)."""
    stalls = [(int(ms), int(n), where) for ms, n, where in STALL_RE.findall(text)]
    gcs = [int(ms) for ms in GC_RE.findall(text)]
    if not stalls and not gcs:
        return [f"   no event loop held over {LOOP_STALL_MS} ms"]
    held = sorted(ms for ms, _, _ in stalls)
    places: dict[str, int] = defaultdict(int)
    for _, _, where in stalls:
        for part in where.split("; "):
            name, _, count = part.rpartition(" ×")
            if name and count.isdigit():
                places[name] += int(count)
    out = [
        f"   event loops held over {LOOP_STALL_MS} ms: {len(held)} times, "
        f"{sum(held) / 1000:.1f} s in all, longest {held[-1] if held else 0} ms"
        + (f"; full garbage collections over it: {len(gcs)}, longest {max(gcs)} ms" if gcs else "")
    ]
    top = sorted(places.items(), key=lambda kv: -kv[1])[:8]
    out += [f"     {n:>4} samples  {where}" for where, n in top]
    return out


async def sample_load(out: list[tuple[float, float]], t0: float) -> None:
    """The machine's 1-minute load average every 10 s (the soak shares the CPUs with whatever
    else runs: its latencies and wall times say as much about that as about the server)."""
    while True:
        out.append((time.perf_counter() - t0, os.getloadavg()[0]))
        await asyncio.sleep(10.0)


def report_verdicts(loads: list[tuple[float, float]]) -> None:
    """One line per criterion of issue 24's "Done when", to be quoted as they are."""
    print("\n== verdicts (issue 24, Done when)")
    figures = [la for _, la in loads]
    if figures:
        print(
            f"   machine load average (1 min) during the soak: {min(figures):.1f}-"
            f"{max(figures):.1f}, median {sorted(figures)[len(figures) // 2]:.1f} on "
            f"{os.cpu_count()} CPUs (the server and this client included)"
        )
    for line in VERDICTS:
        print(line)


def report_stalls(server: L.Server | None) -> None:
    print(f"\n== app workers' event loops held over {LOOP_STALL_MS} ms (app.web.loopwatch)")
    if server is None:
        print("   not measured (--url)")
        return
    server.log.flush()
    for line in stall_lines(server.log_path.read_text(errors="replace")):
        print(line)


RECYCLED = re.compile(r"recycling app worker (\d+)")


def recycled_workers(server: L.Server | None) -> set[int]:
    """The app workers that logged being replaced for their memory (app.web.recycle)."""
    if server is None:
        return set()
    server.log.flush()
    return {int(m) for m in RECYCLED.findall(server.log_path.read_text(errors="replace"))}


def run_log(server: L.Server | None) -> Path | None:
    return None if server is None else Path(server.tmp.name) / "runs.jsonl"


def memory_log(server: L.Server | None) -> Path | None:
    return None if server is None else Path(server.tmp.name) / "memory.jsonl"


def memory_log_lines(records: list[dict[str, Any]], t0: float) -> list[str]:
    """What each app worker's memory log (``APP_MEMORY_LOG``, app.web.memory.MemoryLog) says
    at 60 s and at the end, and the change: which of its caches and counts grew with it."""
    by_pid: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        by_pid[int(rec["pid"])].append(rec)
    lines = []
    for pid, recs in sorted(by_pid.items()):
        recs.sort(key=lambda r: float(r["time"]))
        first = next((r for r in recs if float(r["time"]) - t0 >= 60), recs[0])
        last = recs[-1]
        parts = []
        for name in last:
            if name in ("pid", "time") or name not in first:
                continue
            a, b = float(first[name]), float(last[name])
            parts.append(f"{name} {a:g} → {b:g}")
        lines.append(f"   app worker {pid} at 60 s → end: " + "; ".join(parts))
        minutes: dict[int, dict[str, Any]] = {}
        for r in recs:  # the last record of each minute
            minutes[int((float(r["time"]) - t0) // 60)] = r
        trend = [
            f"{float(r.get('rss_mb', 0)):.0f}/{float(r.get('private_mb', 0)):.0f}"
            for _, r in sorted(minutes.items())
        ]
        lines.append(f"     resident/private MB at the end of each minute: {' → '.join(trend)}")
    return lines


def report_memory_log(path: Path | None, t0: float) -> None:
    print("\n== app workers' memory by part (APP_MEMORY_LOG, every 10 s)")
    records = []
    if path is not None and path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and float(rec.get("time", 0)) >= t0:
                records.append(rec)
    if not records:
        print("   not measured")
        return
    for line in memory_log_lines(records, t0):
        print(line)


SNAPSHOT_DEPTH = 6  # frames printed per growing allocation site


def _snapshot_of(path: Path) -> tuple[str, int]:
    """The worker's pid and its age in seconds from a snapshot's name,
    ``<log>.<pid>.<seconds>.tracemalloc`` (app.web.memory.MemoryLog)."""
    pid, age = path.name.split(".")[-3:-1]
    return pid, int(age)


def report_snapshots(path: Path | None, top: int = 12) -> None:
    """Per app worker, the lines whose tracemalloc-traced memory grew most between its first
    snapshot past 60 s and its last (``--memory-snapshots``)."""
    if path is None:
        return
    by_pid: dict[str, list[tuple[int, Path]]] = defaultdict(list)
    for snap in path.parent.glob(path.name + ".*.tracemalloc"):
        pid, age = _snapshot_of(snap)
        by_pid[pid].append((age, snap))
    if not by_pid:
        return
    print("\n== what grew in each app worker (tracemalloc, first snapshot after 60 s → last)")
    for pid, snaps in sorted(by_pid.items()):
        snaps.sort()
        later = [s for s in snaps if s[0] >= 60] or snaps
        (age0, first), (age1, last) = later[0], later[-1]
        diff = tracemalloc.Snapshot.load(str(last)).compare_to(
            tracemalloc.Snapshot.load(str(first)), "traceback"
        )
        total = sum(d.size_diff for d in diff)
        print(f"   worker {pid}: {age0} s → {age1} s, traced {total / 1e6:+.1f} MB")
        for d in diff[:top]:
            print(f"     {d.size_diff / 1e6:+8.2f} MB {d.count_diff:+8d} blocks")
            for frame in d.traceback.format(limit=SNAPSHOT_DEPTH, most_recent_first=True):
                print(f"         {frame.strip()}")


async def soak(args: argparse.Namespace, base: str, server: L.Server | None) -> None:
    predictor = Predictor()
    adv = await prepare(base, args, predictor)
    info = await L.explainer_info(base)
    t0, since = time.perf_counter(), time.time()
    samples: list[L.Sample] = []
    stop = asyncio.Event()
    watch = ProcWatch(server.proc.pid) if server and server.proc else None
    pss: list[L.Sample] = []
    bg = [
        asyncio.create_task(L.sample_rss(server, samples, t0)),
        asyncio.create_task(sample_pss(server, pss, t0)),
    ]
    if watch is not None:
        bg.append(asyncio.create_task(watch.run(t0, stop)))
    loads: list[tuple[float, float]] = []
    bg.append(asyncio.create_task(sample_load(loads, t0)))
    print(f"\nadversaries: {args.adversaries} clients for {args.duration:g} s (seed {args.seed})")
    advs = [asyncio.create_task(adversary(adv, i, args.seed)) for i in range(args.adversaries)]
    mixed = asyncio.create_task(L.mixed(base, args, info, server))
    await asyncio.wait(advs, timeout=args.duration + 60)
    adv.stats.ended = time.perf_counter()
    for t in advs:
        t.cancel()
    await asyncio.gather(*advs, return_exceptions=True)
    stats = await asyncio.wait_for(mixed, timeout=args.duration + 180)
    stop.set()
    for t in bg:
        t.cancel()
    await asyncio.gather(*bg, return_exceptions=True)
    stats.report("mixed (alongside the adversaries)")
    adv.stats.report("adversaries")
    if watch is not None:
        watch.sample(time.perf_counter() - t0)
        watch.report(recycled_workers(server))
    report_statuses([stats, adv.stats])
    report_cheap([stats, adv.stats])
    report_memory(samples, pss, args.duration)
    report_runs(adv)
    report_run_log(run_log(server), since)
    report_memory_log(memory_log(server), since)
    report_snapshots(memory_log(server))
    report_stalls(server)
    if server is not None:
        print("\n   " + server.log_summary())
    report_verdicts(loads)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="a running server (loopback only); else one is started")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--duration", type=float, default=600.0, help="s (600)")
    ap.add_argument("--connections", type=int, default=100, help="mixed load clients (100)")
    ap.add_argument("--large", type=int, default=8, help="mixed clients sending the largest run")
    ap.add_argument("--adversaries", type=int, default=6, help="adversarial clients (6)")
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument(
        "--memory-snapshots",
        type=float,
        default=0.0,
        help="s between tracemalloc snapshots of each app worker (0: none; slows the workers)",
    )
    ap.add_argument("--timeout", type=float, default=60.0, help="per request, s")
    args = ap.parse_args()
    args.connections = min(args.connections, MAX_CLIENTS)
    args.adversaries = min(args.adversaries, MAX_CLIENTS - args.connections)
    args.large = min(args.large, args.connections)
    random.seed(args.seed)
    server = None
    if args.url:
        L.check_loopback(args.url)
        base = args.url.rstrip("/")
    else:
        server = L.Server(args.workers)  # --no-proxy-headers, as scripts/serve
        server.env["APP_TRUSTED_PROXIES"] = '["127.0.0.1"]'  # a reverse proxy on this host
        server.env["APP_RUN_LOG"] = str(run_log(server))
        server.env["APP_MEMORY_LOG"] = str(memory_log(server))
        server.env["APP_MEMORY_SNAPSHOT_S"] = str(args.memory_snapshots)
        server.env["APP_LOOP_STALL_MS"] = str(LOOP_STALL_MS)
        print(f"starting the app on {server.url} with {args.workers} workers (SQLite, WAL)")
        server.start()
        base = server.url
        print(f"ready {server.wait_ready():.1f} s after it answered")
    try:
        asyncio.run(soak(args, base, server))
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
