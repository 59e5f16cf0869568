"""Speed of a large run through the JSON API (issue 26, "The scheduler API, faster"). Prints
figures; asserts nothing.

Workload (the issue's): the scheduler with N requests of 512-token prompts and 128 output
tokens, max_num_batched_tokens 8192, 4,096 GPU blocks, prefix caching (``bench/
scheduler_speed.py``'s). Each run POSTs it to ``/api/v1/explainers/scheduler/run`` with request
ids no earlier run used (the same length, so the same bytes: the server simulates every time)
and reads the whole answer; then, after ``--settle`` seconds (the answer is sent before the
trace is stored), asks again for the same params ("kept trace": the trace is stored, so no
simulation — but a trace this large is read back from the store and decoded, since it is over
the in-memory cache's per-trace share). A run that becomes a job (202) is followed to
its result. ``--gzip`` asks for a gzipped answer, as browsers, httpx and requests do (the app's
GZip middleware then compresses it).

Two servers on loopback, started the way ``scripts/serve`` starts one worker (a temporary SQLite
file, no access log, ``--no-proxy-headers``), answer in turn, so the machine's load falls on
both alike:

* ``before``: the API's JSON as it was built before this bench (the explainer's public JSON as
  Python objects, encoded with the standard library by Starlette's ``JSONResponse``, from the
  trace the worker reads back from the store once the simulation process has stored it);
* ``after``: the API as it is (``app.web.routes.api``: a new run's answer written in its
  simulation process into the run slot's memory file and sent from those pages, ``app.web.
  answers``; a kept trace's by ``trace_response``). Its default answer has the steps in their
  compact form (``"steps_encoding": "edits"``, docs/api.md); ``--form full`` asks it for the
  steps as full lists, the answer as it was before that form.

``--check`` decodes each server's first answer (``app.sim.serving.stepedits.decode_answer``)
and compares it with the same params' ``?form=full`` answer, and the servers' with each other.

Printed per server: the median and best wall time of the request (until the last byte is
read), the server's CPU time for it (every process of the server: app and simulation; then
the app worker's own, the rest being its simulation processes'), the client's, and the
answer's size; the load average before and after. Other work on the machine
stretches the wall times; the CPU times say what the request costs.

    .venv/bin/python bench/api_speed.py                  # 4096 requests, 7 runs
    .venv/bin/python bench/api_speed.py --sizes 256 4096 --runs 5 --check
    .venv/bin/python bench/api_speed.py --runs 5 --modes after --form full   # the full lists
    .venv/bin/python bench/api_speed.py --runs 3 --gzip
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import load as L  # noqa: E402

API = "/api/v1/explainers/scheduler/run"
TAGS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
MODES = ("before", "after")
SETTLE = [1.0]  # seconds between a run and asking for it again (--settle)


def workload(n: int, tag: str) -> dict[str, Any]:
    """``bench/scheduler_speed.py``'s workload, its ids starting with ``tag`` (one letter, as
    its ``r``: the same bytes, a different trace)."""
    return {
        "config": {
            "max_num_batched_tokens": 8192,
            "block_size": 16,
            "num_gpu_blocks": 4096,
            "enable_prefix_caching": True,
            "max_model_len": 2048,
        },
        "requests": [
            {"id": f"{tag}{i}", "prompt_tokens": 512, "max_tokens": 128} for i in range(n)
        ],
    }


# --- the server ---------------------------------------------------------------------------------


def serve(mode: str, port: int) -> None:  # pragma: no cover - runs in the server process
    """Run the app on ``port`` in this process (one uvicorn worker, as ``scripts/serve`` starts
    each), answering runs the ``mode`` way."""
    import uvicorn

    from app.main import app
    from app.web.routes import api, jobs

    if mode == "before":
        from fastapi.responses import JSONResponse

        from app.web.runs import RunService

        submit = RunService.submit

        def submit_without_answer(self: Any, *args: Any, answer: Any = None, **kw: Any) -> Any:
            return submit(self, *args, **kw)  # the answer written from the stored trace, as before

        RunService.submit = submit_without_answer  # type: ignore[method-assign]

        def stdlib_response(plugin: Any, trace: Any, *_: Any) -> Any:
            return JSONResponse(api.trace_json(plugin, trace))

        api.trace_response = stdlib_response  # type: ignore[assignment]
        if hasattr(jobs, "trace_response"):
            jobs.trace_response = stdlib_response
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        backlog=2048,
    )


@dataclass
class Server:
    mode: str
    tmp: tempfile.TemporaryDirectory[str] = field(
        default_factory=lambda: tempfile.TemporaryDirectory(prefix="stepscope-api-")
    )
    port: int = field(default_factory=L.free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "APP_DATABASE_URL": f"sqlite:///{self.tmp.name}/api.db",
            "APP_EXPENSIVE_RUNS_PER_MINUTE": "1000",  # one client asks for every run
            "APP_WARM_PRESETS": "0",
        }
        py = sys.executable
        subprocess.run([py, "-m", "app.store.migrate"], cwd=ROOT, env=env, check=True)
        cmd = [py, str(Path(__file__).resolve()), "--serve", self.mode, "--port", str(self.port)]
        log = (Path(self.tmp.name) / "server.log").open("wb")
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url("/api/v1/explainers"), timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"the {self.mode} server did not start within 90 s")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def cpu_s(self) -> float:
        return L.tree_cpu_s(self.proc.pid) if self.proc else float("nan")

    def app_cpu_s(self) -> float:
        """The app worker's own CPU time (its threads; not its simulation processes)."""
        if self.proc is None:
            return float("nan")
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / L.CLK_TCK

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()


# --- the client ---------------------------------------------------------------------------------


@dataclass
class Sample:
    wall: float
    server_cpu: float
    app_cpu: float  # of server_cpu, the app worker's own (the rest: simulation processes)
    client_cpu: float
    size: int
    status: str


ACCEPT: dict[str, str] = {}  # --gzip: Accept-Encoding: gzip, as browsers, httpx and requests send
FORM = [""]  # --form full: "?form=full", the steps as full lists (the answer before "edits")


def fetch(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None) -> Any:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers={**headers, **ACCEPT})
    resp = conn.getresponse()
    return resp, resp.read()


def run_once(server: Server, body: bytes, keep: list[bytes] | None = None) -> Sample:
    """POST ``body``, following a job (202) to its result; the whole answer is read."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    cpu0, app0 = server.cpu_s(), server.app_cpu_s()
    c0, t0 = time.process_time(), time.perf_counter()
    try:
        resp, data = fetch(conn, "POST", API + FORM[0], body)
        status = str(resp.status)
        if resp.status == 202:
            result = json.loads(data)["result_url"]
            while resp.status == 202:
                time.sleep(0.05)
                resp, data = fetch(conn, "GET", result + FORM[0], None)
            status = f"202→{resp.status}"
    finally:
        conn.close()
    wall, client = time.perf_counter() - t0, time.process_time() - c0
    if keep is not None:
        keep.append(data)
    return Sample(wall, server.cpu_s() - cpu0, server.app_cpu_s() - app0, client, len(data), status)


def line(label: str, samples: list[Sample]) -> str:
    walls = [s.wall for s in samples]
    cpus = [s.server_cpu for s in samples]
    statuses = sorted({s.status for s in samples})
    return (
        f"  {label:<22} wall median {statistics.median(walls):.3f} s (best {min(walls):.3f})"
        f" | server CPU median {statistics.median(cpus):.3f} s (best {min(cpus):.3f};"
        f" app {statistics.median(s.app_cpu for s in samples):.3f})"
        f" | client CPU {statistics.median(s.client_cpu for s in samples):.3f} s"
        f" | {samples[0].size / 1e6:.1f} MB | HTTP {', '.join(statuses)}"
    )


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} ({os.cpu_count()} CPUs)"


def bench(servers: dict[str, Server], n: int, runs: int, check: bool) -> None:
    fresh: dict[str, list[Sample]] = {m: [] for m in servers}
    kept: dict[str, list[Sample]] = {m: [] for m in servers}
    settled: dict[str, list[float]] = {m: [] for m in servers}  # CPU until asked again
    first: dict[str, bytes] = {}  # --check: each server's first answer
    for k in range(runs):
        body = json.dumps(workload(n, TAGS[k % len(TAGS)])).encode()
        for mode, server in servers.items():  # in turn: the load falls on both alike
            answers: list[bytes] | None = [] if check and k == 0 else None
            cpu0 = server.cpu_s()
            fresh[mode].append(run_once(server, body, answers))
            time.sleep(SETTLE[0])  # the answer comes before the trace is stored: let it be
            settled[mode].append(server.cpu_s() - cpu0)
            kept[mode].append(run_once(server, body))
            if answers:
                first[mode] = answers[0]
    print(f"{n} requests, {runs} runs; {load_average()}")
    for mode in servers:
        print(line(f"{mode}: run", fresh[mode]))
        print(
            f"  {mode + ': run, stored':<22} server CPU until asked again (the trace compressed"
            f" and stored too) median {statistics.median(settled[mode]):.3f} s"
        )
        print(line(f"{mode}: kept trace", kept[mode]))
    if check:
        check_meaning(servers, n, first)


def check_meaning(servers: dict[str, Server], n: int, first: dict[str, bytes]) -> None:
    """--check: each server's first answer, parsed and decoded (a compact answer's steps as
    full lists: ``app.sim.serving.stepedits.decode_answer``), equals the documented answer of
    the same params, asked again with ``?form=full`` (the trace is kept by now), and the
    servers' answers equal each other."""
    from app.sim.serving.stepedits import decode_answer

    body = json.dumps(workload(n, TAGS[0])).encode()
    decoded: dict[str, Any] = {}
    for mode, answer in first.items():
        conn = http.client.HTTPConnection("127.0.0.1", servers[mode].port, timeout=300)
        try:
            _, full = fetch(conn, "POST", API + "?form=full", body)
        finally:
            conn.close()
        parsed = json.loads(answer)
        decoded[mode] = decode_answer(parsed)
        print(
            f"  {mode}: answer {len(answer) / 1e6:.1f} MB"
            f" ({parsed.get('steps_encoding', 'full')}), ?form=full {len(full) / 1e6:.1f} MB;"
            f" decoded equals ?form=full: {decoded[mode] == json.loads(full)}"
        )
    if len(decoded) > 1:
        values = list(decoded.values())
        print(f"  answers decoded equal across servers: {all(v == values[0] for v in values)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[4096])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--modes", nargs="*", choices=MODES, default=list(MODES))
    ap.add_argument(
        "--check",
        action="store_true",
        help="decode the answers and compare their meaning (with ?form=full, across servers)",
    )
    ap.add_argument(
        "--gzip", action="store_true", help="ask for gzip (the server compresses the answer)"
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=SETTLE[0],
        help="seconds between a run and asking for it again (its trace is stored after the "
        "answer is sent)",
    )
    ap.add_argument(
        "--form",
        choices=("compact", "full"),
        default="compact",
        help="the answer's form (full: the steps as full lists, as the API answered before"
        " its compact form; a before server answers full either way)",
    )
    ap.add_argument("--serve", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return
    SETTLE[0] = args.settle
    FORM[0] = "?form=full" if args.form == "full" else ""
    if args.gzip:
        ACCEPT["Accept-Encoding"] = "gzip"
        args.check = False  # the answers are compressed
    print(
        f"python {sys.version.split()[0]}; {load_average()}; gzip: {args.gzip}; form: {args.form}"
    )
    servers = {mode: Server(mode) for mode in args.modes}
    try:
        for server in servers.values():
            server.start()
        for server in servers.values():  # the first request of a process imports and warms up
            run_once(server, json.dumps(workload(8, "w")).encode())
        for n in args.sizes:
            bench(servers, n, min(args.runs, len(TAGS)), args.check)
    finally:
        for server in servers.values():
            server.stop()
    print(f"done; {load_average()}")


if __name__ == "__main__":
    main()
