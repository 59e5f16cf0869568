"""An app worker whose memory has grown is replaced (app.web.recycle): one at a time, only under
a supervisor, after its jobs have ended; no request and no job is lost on the way."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from app.web import recycle
from app.web.recycle import Recycler, take_turn
from app.web.runs import RunService
from tests.web.test_robust_processes import (
    HOG,
    ROOT,
    HogParams,
    _free_port,
    _get,
    _kill_session,
    _serve,
    _session,
    _wait_healthy,
)


def test_a_worker_without_a_supervisor_or_a_limit_is_never_replaced() -> None:
    assert not recycle.supervised()  # pytest's own process: nobody would start it again
    assert not Recycler(limit_mb=1, after_s=0).start()
    assert not Recycler(limit_mb=0, after_s=0).start(supervised_only=False)


def test_over_the_limit_only_once_old_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recycle, "private_mb", lambda: 500.0)
    young = Recycler(limit_mb=400, after_s=3600)
    assert young.over() is None  # not within its first hour
    old = Recycler(limit_mb=400, after_s=0)
    assert old.over() == 500.0
    assert Recycler(limit_mb=600, after_s=0).over() is None


def test_one_worker_at_a_time_and_not_while_another_is_new(monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn is a lock the siblings share (taken by one, refused to the next until its holder
    lets go), and nobody takes it while a sibling is younger than ``after_s``."""
    monkeypatch.setattr(recycle, "siblings", lambda: [])
    first = take_turn(after_s=60)
    assert first is not None
    try:
        assert take_turn(after_s=60) is None  # held
    finally:
        first.close()
    again = take_turn(after_s=60)
    assert again is not None  # let go with its socket (its process's end)
    again.close()
    monkeypatch.setattr(recycle, "siblings", lambda: [os.getpid()])
    assert take_turn(after_s=3600) is None  # a sibling started under an hour ago (this one)
    mine = take_turn(after_s=0)
    assert mine is not None
    mine.close()


def test_only_while_every_sibling_seen_taking_connections_takes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sibling takes connections from the end of its start until it ends (its sign); one that ended
    (a zombie until its supervisor reaps it, then gone) or is starting in its place does not. With
    fewer doing so than once seen, nobody takes the turn: else the server could be left with no
    worker taking connections."""
    here = os.getpid()
    monkeypatch.setattr(recycle.os, "getppid", lambda: here)  # siblings: this one's children
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_SERVES],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        monkeypatch.setattr(
            recycle, "siblings", lambda: [child.pid] if recycle._alive(child.pid) else []
        )
        assert recycle.accepting() == []  # starting
        assert child.stdout is not None and child.stdout.readline() == b"accepting\n"
        assert recycle.accepting() == [child.pid]
        assert child.stdin is not None
        child.stdin.close()  # it ends
        deadline = time.monotonic() + 30
        while recycle._alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert Path(f"/proc/{child.pid}").exists()  # not reaped yet: a zombie
        assert recycle.accepting() == []
    finally:
        child.kill()
        child.wait()
    monkeypatch.setattr(recycle, "_age_s", lambda pid: 3600.0)
    monkeypatch.setattr(recycle, "siblings", lambda: [101, 102])
    monkeypatch.setattr(recycle, "accepting", lambda *_: [101])  # 102 ended, or is starting
    assert take_turn(after_s=60, seen=2) is None
    turn = take_turn(after_s=60, seen=1)
    assert turn is not None
    turn.close()
    watcher = Recycler(limit_mb=1, after_s=0, every_s=0.01)
    monkeypatch.setattr(recycle, "private_mb", lambda: 0.0)  # under the limit: only watches
    monkeypatch.setattr(recycle, "accepting", lambda *_: [101, 102])
    assert watcher.start(supervised_only=False)
    deadline = time.monotonic() + 10
    while watcher.seen < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    monkeypatch.setattr(recycle, "accepting", lambda *_: [101])
    time.sleep(0.05)
    watcher.stop()
    assert watcher.seen == 2  # the most seen at once is kept


CHILD_SERVES = """
import sys
from app.web import recycle
sign = recycle.sign_accepting()
print("accepting", flush=True)
sys.stdin.read()
"""


class _Server:
    """What :func:`recycle.stop_accepting` finds of uvicorn's: its SIGTERM handler, a method of
    an object that keeps the listening servers in ``servers``."""

    def __init__(self) -> None:
        self.servers: list[asyncio.AbstractServer] = []

    def handle_exit(self, sig: int, frame: object) -> None:
        pass


def test_a_replaced_worker_stops_taking_connections_and_keeps_those_it_has() -> None:
    """Before its shutdown a replaced worker closes its listening servers on its own event
    loop: a new connection is refused there (the siblings take it), one taken before stays
    open (its request is read and answered, not reset). Without a loop or uvicorn's server it
    does nothing."""
    assert not recycle.stop_accepting(None)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    owner = _Server()
    previous = signal.signal(signal.SIGTERM, owner.handle_exit)
    try:
        assert not recycle.stop_accepting(loop)  # no listening server yet
        server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(lambda _r, _w: None, "127.0.0.1", 0), loop
        ).result(10)
        owner.servers.append(server)
        port = server.sockets[0].getsockname()[1]
        taken = socket.create_connection(("127.0.0.1", port), timeout=5)
        time.sleep(0.2)  # accepted by the loop
        assert recycle.stop_accepting(loop)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=5)
        taken.sendall(b"GET / HTTP/1.1\r\n\r\n")
        taken.settimeout(0.3)
        with pytest.raises(TimeoutError):  # open: no end of file, no reset
            taken.recv(1)
        taken.close()
    finally:
        signal.signal(signal.SIGTERM, previous)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_a_replaced_worker_lets_its_jobs_end(make_runs: Callable[..., RunService]) -> None:
    """The drain waits for the worker's running and queued jobs to end (their results kept),
    up to its limit; past it, it answers how many had not."""
    runs = make_runs(job_idle_s=600)  # nobody polls here; a loaded machine starts them late
    jobs = [
        runs.submit(HOG, p, runs.key(HOG, p))
        for p in (HogParams(sleep_s=1.0, tag=t) for t in (1, 2))
    ]
    assert runs.running == 2
    assert Recycler(limit_mb=1, after_s=0).drain(runs, limit_s=60) == 0
    assert [job.state for job in jobs] == ["done", "done"]
    slow = HogParams(sleep_s=30.0, tag=3)
    runs.submit(HOG, slow, runs.key(HOG, slow))
    started = time.monotonic()
    assert runs.drain(limit_s=0.5) == 1  # still running at the limit
    assert time.monotonic() - started < 5


def _outside_tree(master: int) -> list[int]:
    """Live processes of the server's session that are not its master's descendants."""
    procs = _session(master)
    inside = {master}
    grew = True
    while grew:
        more = {p for p, (ppid, _) in procs.items() if ppid in inside} - inside
        grew = bool(more)
        inside |= more
    return sorted(set(procs) - inside)


def _post(port: int, path: str, body: object) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as r:  # noqa: S310 - loopback
        return int(r.status), json.loads(r.read())


def test_replaced_workers_finish_their_jobs_and_the_server_keeps_answering(
    tmp_path: Path,
) -> None:
    """A server (2 workers) whose workers are always over the limit: once old enough, each is
    replaced in turn; jobs submitted before finish (those of a replaced worker before it goes),
    the server answers every request meanwhile, and no process is left behind."""
    port = _free_port()
    after_s = 10  # a new one is warm by then (one still starting holds its siblings back anyway)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
        "APP_JOB_IDLE_S": "600",
        "APP_NATIVE": "0",  # runs of seconds, still going when their worker is replaced
        "APP_WORKER_RECYCLE_MB": "1",
        "APP_WORKER_RECYCLE_AFTER_S": str(after_s),
        "APP_LOOP_STALL_MS": "1000",  # a slow answer says in the log where its worker was held
    }
    subprocess.run(
        [sys.executable, "-m", "app.store.migrate"], cwd=ROOT, env=env, check=True, timeout=120
    )
    log = tmp_path / "server.log"
    launched = time.monotonic()
    server = _serve(port, env, log)
    try:
        _wait_healthy(port, server, log)
        # the jobs start a little before the workers may go: they are running when they do
        time.sleep(max(0.0, launched + after_s - 4 - time.monotonic()))
        jobs = []
        for seed in range(6):  # each on a connection of its own (six: a client's quota a minute)
            status, job = _post(
                port,
                "/api/v1/explainers/cwnd/run",
                {
                    "link": {"rate_mbps": 1000, "rtt_ms": 40, "buffer_packets": 1000},
                    "flows": [{"cc": "cubic"}],
                    "duration_s": 20,  # ~3 s of CPU each at nice 15, one at a time per worker
                    "seed": 100 + seed,
                },
            )
            assert status == 202, job
            jobs.append(str(job["status_url"]))
        states: dict[str, str] = {}
        answers: dict[int, int] = {}
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            asked = time.monotonic()
            try:
                code = _get(f"http://127.0.0.1:{port}/api/v1/health")[0]
            except OSError as e:
                raise AssertionError(
                    f"health unanswered after {time.monotonic() - asked:.1f} s ({e!r}):\n"
                    + log.read_text()[-4000:]
                ) from e
            answers[code] = answers.get(code, 0) + 1
            for url in jobs:
                if states.get(url, "running") == "running":
                    code, body = _get(f"http://127.0.0.1:{port}{url}")
                    if code == 200:
                        states[url] = json.loads(body)["state"]
            text = log.read_text()
            drains = re.findall(r"ended in [\d.]+ s, 0 cancelled", text)
            if len(drains) >= 2 and len(states) == len(jobs) and "running" not in states.values():
                break
            time.sleep(0.3)
        text = log.read_text()
        assert states == {url: "done" for url in jobs}, (states, text[-3000:])
        assert answers.keys() == {200}, answers
        replaced = re.findall(r"recycling app worker (\d+)", text)
        assert len(replaced) >= 2 and len(set(replaced)) == len(replaced), text[-3000:]
        # each replaced worker let its jobs end. How many it had is up to the kernel, which
        # hands a new connection to either worker (a CI run's ten all went to the one replaced
        # last, after they had ended): the drain itself is test_a_replaced_worker_lets_its_jobs_end's
        drained = re.findall(
            r"(\d+) jobs were running or queued; (\d+) ended in [\d.]+ s, 0 ", text
        )
        assert len(drained) >= 2 and all(had == ended for had, ended in drained), text[-3000:]
        # nothing of a replaced worker outlives it (its fork server included)
        deadline = time.monotonic() + 15
        while _outside_tree(server.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _outside_tree(server.pid) == []
        server.send_signal(signal.SIGTERM)
        server.wait(60)
        deadline = time.monotonic() + 30
        while _session(server.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _session(server.pid) == {}
    finally:
        _kill_session(server.pid)
