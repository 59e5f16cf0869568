"""Simulation processes that die with their worker, hold none of its sockets, and run within
hard memory and CPU limits (app.web.simproc); a server killed with SIGKILL can start again."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.sim.core import Frame, ParamError, Progress, SourceRef, Trace, msg
from app.web.runs import Busy, Job, RunService
from app.web.simproc import SimLimitExceeded, SimProcessDied
from tests.contract.toy import CounterState, ToyExplainer
from tests.native import pure_python

ROOT = Path(__file__).resolve().parents[2]


# --- an explainer that takes what it is told to ------------------------------------------------


@dataclass(frozen=True)
class HogParams:
    mb: int = 0  # allocate this much at once
    cpu_s: float = 0.0  # spend this much CPU time
    sleep_s: float = 0.0  # wait this long (reporting progress)
    tag: int = 0  # distinct runs of the same work
    keep_mb: int = 0  # leave this much allocated in the process after the run


class HogExplainer(ToyExplainer):
    name = "hog"  # type: ignore[misc]
    sim_version = "hog-1"  # type: ignore[misc]

    def parse(self, raw: Any) -> HogParams:  # type: ignore[override]
        if not isinstance(raw, dict):
            raise ParamError.single((), "params must be an object")
        return HogParams(**raw)

    def dump(self, params: HogParams) -> dict[str, Any]:  # type: ignore[override]
        return {
            "mb": params.mb,
            "cpu_s": params.cpu_s,
            "sleep_s": params.sleep_s,
            "t": params.tag,
            "keep": params.keep_mb,
        }

    def cost(self, params: HogParams) -> float:  # type: ignore[override]
        return 1.0

    def run(  # type: ignore[override]
        self, params: HogParams, progress: Progress | None = None
    ) -> Trace[CounterState, None]:
        block = bytearray(params.mb * 1024 * 1024)
        KEPT.append(b"\x01" * (params.keep_mb * 1024 * 1024))  # written: resident, its own
        start = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        spins = 0
        while resource.getrusage(resource.RUSAGE_SELF).ru_utime - start < params.cpu_s:
            spins += sum(range(10_000)) & 1
        until = time.monotonic() + params.sleep_s
        while time.monotonic() < until:
            if progress is not None:
                progress(0, 1)
            time.sleep(0.02)
        frame = Frame(
            index=0,
            op="start",
            result="ok",
            narration=msg("The counter is {value}.", value=len(block) + spins),
            source=SourceRef(function="hog", path="hog.c", line=1),
            state=CounterState(value=0, limit=1),
        )
        return Trace(
            explainer=self.name,
            sim_version=self.sim_version,
            params=params,
            frames=(frame,),
            series=None,
        )


HOG = HogExplainer()
KEPT: list[bytes] = []  # in a simulation process: what runs left behind


def sim_pids(runs: RunService) -> list[int]:
    return runs._pools["long"].pids()


def wait_for(check: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


# --- limits ------------------------------------------------------------------------------------


def test_a_run_over_the_memory_limit_fails_alone(make_runs: Callable[..., RunService]) -> None:
    """With APP_SIM_MEMORY_MB set, a run that asks for more fails with the memory limit named;
    the same process then runs the next run."""
    runs = make_runs(sim_memory_mb=1536, sim_run_mb=0)
    before = sim_pids(runs)
    with pytest.raises(SimLimitExceeded) as failed:
        runs.trace(HOG, HogParams(mb=4096))
    assert failed.value.limit == "memory" and failed.value.amount == 1536
    assert "APP_SIM_MEMORY_MB" in failed.value.message.render(lambda s: s)
    assert len(runs.trace(HOG, HogParams(mb=8)).frames) == 1
    assert sim_pids(runs) == before


def test_a_run_over_the_cpu_limit_fails_alone(make_runs: Callable[..., RunService]) -> None:
    """A run that spends more CPU than APP_SIM_CPU_S is stopped (SIGXCPU) and fails with the CPU
    limit named; the limit counts per run, so the same process runs the next one."""
    # its wait is CPU time: at nice 0, not starved by a loaded machine
    runs = make_runs(sim_cpu_s=1, sim_nice=0)
    before = sim_pids(runs)
    with pytest.raises(SimLimitExceeded) as failed:
        runs.trace(HOG, HogParams(cpu_s=30))
    assert failed.value.limit == "cpu"
    for tag in (1, 2):  # each under the limit, together over it
        assert len(runs.trace(HOG, HogParams(cpu_s=0.6, tag=tag)).frames) == 1
    with pytest.raises(SimLimitExceeded):  # the limit is not rounded up to whole seconds
        runs.trace(HOG, HogParams(cpu_s=1.6, tag=3))
    assert sim_pids(runs) == before


@pure_python  # needs a run that takes seconds: the pure modules' pace
def test_over_the_cpu_limit_the_api_answers_422_naming_it(tmp_path: Path) -> None:
    """Through the API the limit is a 422 whose detail names APP_SIM_CPU_S, not a 500; the
    server goes on serving."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'api.db'}",
        sim_cpu_s=0.5,  # the run below takes ~1.8 s of CPU on a fast machine
        sim_nice=0,  # its wait is CPU time: not starved by a loaded machine
        job_threshold_s=1000,
    )
    body = {
        "link": {"rate_mbps": 100, "rtt_ms": 40, "buffer_bdp": 1},
        "flows": [{"cc": "cubic"}],
        "duration_s": 160,
        "seed": 0,
    }
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        r = client.post("/api/v1/explainers/cwnd/run", json=body)
        assert r.status_code == 422, r.text
        detail = r.json()["detail"][0]
        assert detail["type"] == "sim_limit.cpu" and "APP_SIM_CPU_S" in detail["msg"]
        assert client.get("/api/v1/health").status_code == 200


# --- what a run took, and fresh processes ------------------------------------------------------


def test_a_runs_cpu_time_and_its_process_are_logged(
    make_runs: Callable[..., RunService], tmp_path: Path
) -> None:
    """With APP_RUN_LOG set, every finished run appends a line: its prediction, the CPU time
    it spent in its simulation process (not the wall time: a run that waits spends none), the
    process's own memory after it and its pid."""
    log = tmp_path / "runs.jsonl"
    runs = make_runs(run_log=log)
    runs.trace(HOG, HogParams(cpu_s=0.4))
    runs.trace(HOG, HogParams(sleep_s=0.4, keep_mb=64))
    wait_for(lambda: len(_lines(log)) == 2, 30)  # written as each job settles
    spin, sleep = _lines(log)
    (pid,) = sim_pids(runs)
    assert spin["explainer"] == "hog" and spin["state"] == "done" and spin["pid"] == pid
    assert spin["expected_s"] == HOG.expected_seconds(HogParams(cpu_s=0.4))
    assert 0.4 <= spin["cpu_s"] <= spin["run_s"] + 0.05 and spin["wall_s"] >= spin["run_s"]
    assert sleep["run_s"] >= 0.4 and sleep["cpu_s"] < 0.3
    assert sleep["private_mb"] >= spin["private_mb"] + 60


def test_a_process_that_grew_is_replaced_after_its_run(
    make_runs: Callable[..., RunService],
) -> None:
    """A run that leaves its process holding more than APP_SIM_RECYCLE_MB of its own ends
    normally; the next run is in a fresh process (the old one's memory went with it)."""
    runs = make_runs(sim_recycle_mb=96)
    assert len(runs.trace(HOG, HogParams(keep_mb=8)).frames) == 1
    (first,) = sim_pids(runs)
    assert len(runs.trace(HOG, HogParams(keep_mb=8, tag=1)).frames) == 1
    assert sim_pids(runs) == [first]  # under the limit: the same process
    assert len(runs.trace(HOG, HogParams(keep_mb=128)).frames) == 1  # its result still comes
    assert len(runs.trace(HOG, HogParams(tag=2)).frames) == 1
    assert runs._pools["long"].recycled == 1 and runs._pools["long"].replaced == 0
    (second,) = sim_pids(runs)
    assert second != first
    wait_for(lambda: not Path(f"/proc/{first}").exists() or _proc_state(first) == "Z", 30)


def test_a_process_is_replaced_after_its_runs(
    make_runs: Callable[..., RunService], tmp_path: Path
) -> None:
    """After APP_SIM_RECYCLE_RUNS runs a process is replaced; the next runs go to the new one."""
    log = tmp_path / "runs.jsonl"
    runs = make_runs(sim_recycle_runs=2, sim_recycle_mb=0, run_log=log)
    for tag in range(5):
        assert len(runs.trace(HOG, HogParams(tag=tag)).frames) == 1
    wait_for(lambda: len(_lines(log)) == 5, 30)  # written as each job settles
    pids = [line["pid"] for line in _lines(log)]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4] != pids[0]
    assert runs._pools["long"].recycled == 2 and runs._pools["long"].replaced == 0


def _lines(log: Path) -> list[dict[str, Any]]:
    text = log.read_text() if log.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


def _proc_state(pid: int) -> str:
    try:
        return _proc_status(pid)["State"][0]
    except (OSError, KeyError):
        return "gone"


# --- the store on the event loop -------------------------------------------------------------


class LongHog(HogExplainer):
    name = "longhog"  # type: ignore[misc]

    def expected_seconds(self, params: HogParams) -> float:  # type: ignore[override]
        return 5.0  # a long run: counted against the client's quota, shared as a job


LONG_HOG = LongHog()


def submit_on_a_loop(runs: RunService, params: HogParams) -> Job:
    """``runs.submit`` as the run API's async handler calls it: on the event loop's thread."""

    async def handler() -> Job:
        return runs.submit(LONG_HOG, params, runs.key(LONG_HOG, params))

    # On a thread of its own: a worker that ran browser tests before has Playwright's loop
    # running on the main thread, where asyncio.run refuses to start another.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, handler()).result()


def test_a_store_that_does_not_answer_holds_no_event_loop(
    make_runs: Callable[..., RunService], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a long run against the client's quota writes to the database, which may wait
    seconds for another writer; on an event loop a run that cannot be counted at once is
    answered Busy (503 with Retry-After) and the loop goes on. Off the loop it waits."""
    runs = make_runs()
    stuck = threading.Event()
    take_hit = runs._take_hit

    def slow_take_hit(key: str, limit: int) -> int:
        stuck.wait(60)
        return take_hit(key, limit)

    monkeypatch.setattr(runs, "_take_hit", slow_take_hit)
    with pytest.raises(Busy):
        submit_on_a_loop(runs, HogParams(tag=1))
    assert runs.running == 0
    stuck.set()
    job = submit_on_a_loop(runs, HogParams(tag=2))  # the store answers: admitted
    assert job.future.result(timeout=30) is not None


def test_a_job_shared_late_ends_after_its_row_is_written(
    make_runs: Callable[..., RunService], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long run's row for the other workers is written on the service's own thread when the
    event loop submits it; the loop does not wait for a slow store, and the run's end is
    written only after its row (else the row would say "running" for ever)."""
    runs = make_runs(job_threshold_s=1.0)
    stuck = threading.Event()
    share = runs._share

    def slow_share(job: Job) -> None:
        stuck.wait(60)
        share(job)

    monkeypatch.setattr(runs, "_share", slow_share)
    job = submit_on_a_loop(runs, HogParams(tag=3))
    assert job.shared and runs.shared_job(job.key) is None  # not written yet
    wait_for(lambda: job.usage is not None, 30)  # the run itself is over
    stuck.set()
    wait_for(lambda: job.state == "done", 30)
    row = runs.shared_job(job.key)
    assert row is not None and row.state == "done"


# --- what a simulation process inherits -------------------------------------------------------


def _proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _sockets_of(pid: int) -> list[str]:
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:"):
            found.append(target)
    return found


def test_sim_processes_drop_the_servers_signal_handlers_and_sockets(
    make_runs: Callable[..., RunService],
) -> None:
    """A handler the server set for SIGTERM and a listening socket it holds are not the
    simulation processes': SIGTERM ends one (the run it had fails with SimProcessDied, 503), the
    pool is forked again and the next run works."""
    listener = socket.create_server(("127.0.0.1", 0))
    old = signal.signal(signal.SIGTERM, lambda *_: None)  # as uvicorn's handler would be
    try:
        runs = make_runs()
    finally:
        signal.signal(signal.SIGTERM, old)
    try:
        assert len(runs.trace(HOG, HogParams(tag=1)).frames) == 1  # the process is set up
        (pid,) = sim_pids(runs)
        assert _sockets_of(pid) == [] and _sockets_of(os.getpid())
        caught = int(_proc_status(pid)["SigCgt"], 16)
        assert not caught & (1 << (signal.SIGTERM - 1))
        outcome: list[BaseException] = []

        def run() -> None:
            try:
                runs.trace(HOG, HogParams(sleep_s=60))
            except BaseException as exc:  # noqa: BLE001 - the test looks at it
                outcome.append(exc)

        waiter = threading.Thread(target=run, daemon=True)
        waiter.start()
        wait_for(lambda: runs.running == 1, 30)
        time.sleep(0.3)  # the run is in the process
        os.kill(pid, signal.SIGTERM)
        waiter.join(30)
        assert len(outcome) == 1 and isinstance(outcome[0], SimProcessDied)
        assert len(runs.trace(HOG, HogParams(mb=1)).frames) == 1
        assert runs._pools["long"].replaced == 1 and sim_pids(runs) != [pid]
    finally:
        listener.close()


# --- a server killed with SIGKILL -------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _session(sid: int) -> dict[int, tuple[int, str]]:
    """Live processes of session ``sid``: pid → (parent pid, state); zombies are dead."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, ppid, session = fields[0], int(fields[1]), int(fields[3])
        if session == sid and state not in ("Z", "X"):
            found[int(entry.name)] = (ppid, state)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:100]
    except OSError:
        return "?"


def _get(url: str, timeout: float = 5) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback
            return int(r.status), r.read()
    except urllib.error.HTTPError as e:
        return int(e.code), e.read()


def _serve(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """The app as scripts/serve starts it (2 workers), in a session of its own."""
    uvicorn = Path(sys.executable).parent / "uvicorn"
    cmd = [str(uvicorn), "app.main:app", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", "2", "--backlog", "2048", "--no-access-log"]
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _wait_healthy(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180  # a loaded machine takes long to import the app twice
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()
        try:
            if _get(f"http://127.0.0.1:{port}/api/v1/health")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError("the server did not start:\n" + log.read_text())


def _kill_session(sid: int) -> None:
    try:
        os.killpg(sid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_killed_worker_and_master_leave_no_process_and_the_port_free(tmp_path: Path) -> None:
    """Start the server (2 workers), start a long run, SIGKILL a worker and then the master:
    every worker and simulation process exits within seconds (nothing holds the port), and
    the server starts again on the same port."""
    port = _free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
        "APP_JOB_IDLE_S": "600",
        # the pure modules: the run below must still be going when the worker is killed
        "APP_NATIVE": "0",
    }
    subprocess.run(
        [sys.executable, "-m", "app.store.migrate"], cwd=ROOT, env=env, check=True, timeout=120
    )
    log = tmp_path / "server.log"
    server = _serve(port, env, log)
    sids = [server.pid]
    try:
        _wait_healthy(port, server, log)
        body = {
            "link": {"rate_mbps": 100, "rtt_ms": 40, "buffer_bdp": 1},
            "flows": [{"cc": "cubic"}],
            "duration_s": 160,
            "seed": 7,
        }
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/explainers/cwnd/run",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as r:  # noqa: S310 - loopback
            assert r.status == 202
        procs = _session(server.pid)
        tree = [(p, *procs[p], _cmdline(p)) for p in procs]
        # the master's children that run the app (not multiprocessing's resource tracker)
        workers = [
            p
            for p, (ppid, _) in procs.items()
            if ppid == server.pid and "resource_tracker" not in _cmdline(p)
        ]
        # below the workers: simulation processes (two per worker: long runs and small runs)
        sims = [p for p, (ppid, _) in procs.items() if ppid in procs and ppid != server.pid]
        assert len(sims) >= 2, (server.pid, tree)
        busy = [p for p in sims if procs[p][1] == "R"] or sims  # the one running the job?
        worker = busy[0]
        while worker in procs and worker not in workers:  # up from a fork server's child
            worker = procs[worker][0]
        worker = worker if worker in workers else workers[0]
        os.kill(worker, signal.SIGKILL)
        time.sleep(1.0)
        os.kill(server.pid, signal.SIGKILL)
        server.wait(10)
        deadline = time.monotonic() + 30
        while _session(server.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _session(server.pid)
        assert left == {}, [(p, *left[p], _cmdline(p)) for p in left]

        again = _serve(port, env, log)  # "Address already in use" if anything kept the port
        sids.append(again.pid)
        _wait_healthy(port, again, log)
        assert _get(f"http://127.0.0.1:{port}/api/v1/health")[0] == 200
        again.send_signal(signal.SIGTERM)
        again.wait(60)
    finally:
        for sid in sids:
            _kill_session(sid)
