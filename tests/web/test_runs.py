"""The lecture-hall server: runs in a bounded process pool, long runs as jobs with progress,
cancellation when the client leaves, per-client limits, a shared trace store, cached pages."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from app import explainers
from app.main import create_app
from app.settings import Settings
from app.store.db import init_db, make_engine
from app.web import runs as runs_module
from app.web import simworker
from app.web.runs import RunService
from app.web.simproc import Usage
from app.web.sources import encode_params
from tests.browser.conftest import LiveServer
from tests.native import pure_python


def cwnd(duration: float, rate: float = 50, seed: int = 0) -> dict[str, Any]:
    """A congestion-control run; its cost grows with rate × duration."""
    return {
        "link": {"rate_mbps": rate, "rtt_ms": 40, "buffer_bdp": 1},
        "flows": [{"cc": "cubic"}],
        "duration_s": duration,
        "seed": seed,
    }


SMALL = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_put", "len": 100}]}


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    opened: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'runs.db'}", **overrides)
        client = TestClient(create_app(settings), raise_server_exceptions=False)
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


@contextmanager
def runs_held(client: TestClient, url: str) -> Iterator[None]:
    """The job at ``url`` on ``client``'s app, once under way, held still meanwhile: its
    simulation processes stopped (SIGSTOP), so it is still running afterwards however fast
    the machine runs it (a pure-Python run that took seconds takes under two on a fast one)."""
    wait_for(lambda: client.get(url).json()["progress"] > 0, 60)
    runs = client.app.state.site.runs  # type: ignore[attr-defined]
    pids = [pid for pool in runs._pools.values() for pid in pool.pids()]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def wait_for(check: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


def test_long_run_is_a_job_with_progress_and_a_result(
    make_client: Callable[..., TestClient],
) -> None:
    """A run expected to take longer than job_threshold_s answers 202 with a job URL whose
    progress climbs to done; the result is the same JSON a direct run gives."""
    client = make_client(job_threshold_s=0.0)
    r = client.post("/api/v1/explainers/cwnd/run", json=cwnd(4))
    assert r.status_code == 202
    status_url = r.headers["location"]
    assert status_url == r.json()["status_url"] and r.json()["state"] == "running"
    seen: list[float] = []

    def done() -> bool:
        job = client.get(status_url).json()
        seen.append(job["progress"])
        return bool(job["state"] == "done")

    wait_for(done)
    assert seen == sorted(seen) and seen[-1] == 1.0
    result = client.get(status_url + "/result")
    assert result.status_code == 200 and result.json()["summary"]["duration_s"] == 4
    again = client.post("/api/v1/explainers/cwnd/run", json=cwnd(4))  # now stored: no job
    assert again.status_code == 200 and again.json() == result.json()


def test_page_of_a_long_run_shows_a_progress_bar_then_the_player(
    make_client: Callable[..., TestClient],
) -> None:
    """A page whose run becomes a job shows a progress bar (no-store) that follows the job;
    once done, the same URL opens the player."""
    client = make_client(job_threshold_s=0.0)
    url = f"/explainers/cwnd/custom?p={encode_params(cwnd(3))}"
    page = client.get(url)
    assert page.status_code == 202 and 'id="job-progress"' in page.text
    assert page.headers["cache-control"] == "no-store"
    status_url = page.headers["location"]
    wait_for(lambda: client.get(status_url).json()["state"] == "done")
    player = client.get(url)
    assert player.status_code == 200 and 'id="cwnd-chart"' in player.text


def test_abandoned_job_is_cancelled(make_client: Callable[..., TestClient]) -> None:
    """A job nobody asks about for job_idle_s is cancelled and its worker freed."""
    client = make_client(job_threshold_s=0.0, job_idle_s=0.5)
    runs = client.app.state.site.runs  # type: ignore[attr-defined]
    r = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100))
    key = r.json()["job"]
    wait_for(lambda: (job := runs.peek(key)) is not None and job.state != "running", 20)
    assert runs.peek(key).state == "cancelled" and runs.running == 0
    assert client.get(f"/api/v1/jobs/{key}/result").status_code == 410


def test_client_that_disconnects_cancels_its_run(tmp_path: Path) -> None:
    """A short (non-job) run is cancelled when its client goes away before the answer."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'live.db'}", job_threshold_s=1e9)
    app = create_app(settings)
    body = json.dumps(cwnd(160, rate=100)).encode()
    with LiveServer(app) as server:
        runs = app.state.site.runs
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(
                b"POST /api/v1/explainers/cwnd/run HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            wait_for(lambda: runs.running == 1, 10)
            (job,) = list(runs._jobs.values())
        wait_for(lambda: job.state != "running", 10)  # the socket is closed: the client left
        assert job.state == "cancelled"


def test_queue_full_is_503_with_retry_after(make_client: Callable[..., TestClient]) -> None:
    """With every worker and queue place for long runs taken, a new long run answers 503 with
    Retry-After; a small run has workers of its own and still runs."""
    client = make_client(job_threshold_s=0.0, sim_queue=0)
    first = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100))
    assert first.status_code == 202
    busy = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100, seed=1))
    assert busy.status_code == 503 and int(busy.headers["retry-after"]) >= 1
    page = client.get(f"/explainers/skb/custom?p={encode_params(SMALL)}")
    assert page.status_code == 202 and "busy" not in page.text  # a job (threshold 0), running
    client.delete(f"/api/v1/jobs/{first.json()['job']}")


def test_small_runs_wait_with_long_ones_without_workers_of_their_own(
    make_client: Callable[..., TestClient],
) -> None:
    """With ``sim_quick_workers=0`` small runs share the one pool: behind a long run that fills
    it, a small run's page answers 503 (busy)."""
    client = make_client(job_threshold_s=0.0, sim_queue=0, sim_quick_workers=0)
    first = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100))
    assert first.status_code == 202
    page = client.get(f"/explainers/skb/custom?p={encode_params(SMALL)}")
    assert page.status_code == 503 and "busy" in page.text
    client.delete(f"/api/v1/jobs/{first.json()['job']}")


def test_shorter_waiting_runs_go_first(make_client: Callable[..., TestClient]) -> None:
    """Runs waiting for a worker start shortest expected first: a small run queued after a long
    one finishes while the long one is still going."""
    client = make_client(job_threshold_s=0.0, sim_quick_workers=0, job_idle_s=120)
    runs = client.app.state.site.runs  # type: ignore[attr-defined]
    first = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100)).json()["job"]
    long = client.post("/api/v1/explainers/cwnd/run", json=cwnd(150, rate=100, seed=1))
    small = client.post("/api/v1/explainers/cwnd/run", json=cwnd(2, rate=10))
    assert long.status_code == small.status_code == 202
    assert len(runs._pending["long"]) == 2  # both wait for the one worker
    client.delete(f"/api/v1/jobs/{first}")
    small_job, long_job = runs.peek(small.json()["job"]), runs.peek(long.json()["job"])
    wait_for(lambda: small_job.state != "running", 60)
    assert small_job.state == "done" and long_job.state == "running"
    client.delete(f"/api/v1/jobs/{long_job.key}")


def test_presets_and_new_shares_are_run_before_anyone_opens_them(
    make_client: Callable[..., TestClient],
) -> None:
    """With ``warm_presets`` every preset's trace is stored soon after start-up, and a scenario
    just shared is run and stored without anyone opening it (the lecturer's link is ready)."""
    client = make_client(warm_presets=True)
    site = client.app.state.site  # type: ignore[attr-defined]
    presets = [
        site.runs.key(p.sim, p.sim.parse(dict(preset.params)))
        for p in site.plugins
        for preset in p.sim.presets
    ]
    early = client.get("/api/v1/health")  # the presets take seconds: not all stored yet
    assert early.status_code == 503 and early.headers["retry-after"] == "5"
    assert early.json()["status"] == "warming"
    assert early.json()["presets"]["stored"] < early.json()["presets"]["total"] == len(presets)
    wait_for(lambda: all(site.runs.cached(k) is not None for k in presets), 120)
    # (Ready, 200, once this worker's pages are rendered too: tests/web/test_pagewarm.py.)
    later = client.get("/api/v1/health")
    assert later.headers["cache-control"] == "no-store"
    assert later.json()["presets"] == {"stored": len(presets), "total": len(presets)}
    client.get("/")
    params = {"ops": [{"op": "alloc_skb", "size": 777}]}
    r = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": params})
    assert r.status_code == 201
    skb = site.get("skb").sim
    wait_for(lambda: site.runs.cached(site.runs.key(skb, skb.parse(params))) is not None, 30)


def test_only_one_worker_warms_each_preset(tmp_path: Path) -> None:
    """Workers sharing a store claim each preset's warm-up: the first to ask runs it, the
    others leave it (each used to run every preset as it started)."""
    url = f"sqlite:///{tmp_path / 'claim.db'}"
    init_db(make_engine(url))
    one, two = (RunService(Settings(database_url=url), make_engine(url)) for _ in range(2))
    assert one._claim_warm("k1") is True
    assert two._claim_warm("k1") is False and one._claim_warm("k1") is False
    assert two._claim_warm("k2") is True


def test_health_is_ready_at_once_without_warm_up(make_client: Callable[..., TestClient]) -> None:
    """Without APP_WARM_PRESETS nothing is run at start, so nothing is waited for."""
    r = make_client().get("/api/v1/health")
    assert r.status_code == 200 and r.json()["status"] == "ready"
    assert r.json()["presets"]["stored"] == 0 < r.json()["presets"]["total"]


class DonePool:
    """A pool whose runs are over before ``submit`` returns (a run faster than a thread switch)."""

    def submit_measured(self, fn: Callable[..., bytes], *args: Any) -> Future[tuple[bytes, Usage]]:
        done: Future[tuple[bytes, Usage]] = Future()
        done.set_result((fn(*args), Usage(0.0, 0.0, 0.0, os.getpid(), 1)))
        return done


def test_a_run_over_at_once_does_not_lock_the_service(tmp_path: Path) -> None:
    """A run that has ended by the time it is handed over settles its job at once, and the
    service takes the next run (handing over must not hold the lock its callback needs)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'done.db'}", sim_quick_workers=0)
    engine = make_engine(settings.database_url)
    init_db(engine)
    runs = RunService(settings, engine)
    runs._pools["long"] = DonePool()  # type: ignore[assignment]
    simworker.init_worker(runs._progress, runs._cancel)
    skb = next(p for p in explainers.builtin() if p.name == "skb").sim
    for size in (100, 200):
        params = skb.parse({"ops": [{"op": "alloc_skb", "size": size}]})
        result: list[Any] = []
        worker = threading.Thread(
            target=lambda p=params, out=result: out.append(
                runs.wait(runs.submit(skb, p, runs.key(skb, p)), skb)
            ),
            daemon=True,
        )
        worker.start()
        worker.join(10)
        assert not worker.is_alive() and len(result[0].frames) >= 1


def test_simulations_run_at_lower_cpu_priority(make_client: Callable[..., TestClient]) -> None:
    """The long-run workers are reniced by ``sim_nice`` and the small-run workers by
    ``sim_quick_nice`` (the kernel then gives the app workers' requests the CPU first, and small
    runs before long ones); the app process keeps its own priority."""
    client = make_client(sim_nice=7, sim_quick_nice=3)
    runs = client.app.state.site.runs  # type: ignore[attr-defined]
    base = os.nice(0)
    assert runs._pools["long"].submit(os.nice, 0).result(timeout=30) == min(base + 7, 19)
    assert runs._pools["quick"].submit(os.nice, 0).result(timeout=30) == min(base + 3, 19)
    assert os.nice(0) == base
    unchanged = make_client(sim_quick_nice=0).app.state.site.runs  # type: ignore[attr-defined]
    assert unchanged._pools["quick"].submit(os.nice, 0).result(timeout=30) == base


@pure_python  # the longest preset is predicted over a second only at the pure modules' pace
def test_expensive_runs_are_rate_limited_per_client(make_client: Callable[..., TestClient]) -> None:
    """Runs expected to take over a second count against a per-client quota (429 past it);
    cheap runs and presets (however long) do not."""
    client = make_client(job_threshold_s=0.5, expensive_runs_per_minute=1)
    first = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100))
    assert first.status_code == 202
    second = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100, seed=2))
    assert second.status_code == 429 and int(second.headers["retry-after"]) >= 1
    assert client.post("/api/v1/explainers/skb/run", json=SMALL).status_code == 200
    site = client.app.state.site  # type: ignore[attr-defined]
    cwnd_sim = site.get("cwnd").sim
    longest = max(
        cwnd_sim.presets, key=lambda p: cwnd_sim.expected_seconds(cwnd_sim.parse(dict(p.params)))
    )
    assert cwnd_sim.expected_seconds(cwnd_sim.parse(dict(longest.params))) > 1.0
    preset = client.post("/api/v1/explainers/cwnd/run", json=dict(longest.params))
    assert preset.status_code in (200, 202)  # a preset never counts against the quota
    client.delete(f"/api/v1/jobs/{first.json()['job']}")


def test_expensive_run_quota_holds_across_workers(tmp_path: Path) -> None:
    """The per-client quota of long runs is counted in the database: two app instances (two
    workers) on one database together let a client start no more than the limit."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'q.db'}",
        job_threshold_s=0.5,
        expensive_runs_per_minute=3,
    )
    with TestClient(create_app(settings)) as a, TestClient(create_app(settings)) as b:
        answers = [
            (a if i % 2 else b).post("/api/v1/explainers/cwnd/run", json=cwnd(160, 100, seed=i))
            for i in range(6)
        ]
        assert [r.status_code for r in answers] == [202] * 3 + [429] * 3
        retry = int(answers[-1].headers["retry-after"])
        assert 1 <= retry <= 60
        for r in answers[:3]:
            a.delete(f"/api/v1/jobs/{r.json()['job']}")


SUBRESOURCE = {
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "no-cors",
    "Sec-Fetch-Dest": "image",
}
LINK = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}


def test_another_sites_page_cannot_start_a_long_run(make_client: Callable[..., TestClient]) -> None:
    """An image, script, frame or fetch on another site's page that names a long run (compare is
    a GET) is refused with 403 before anything runs; following a link from another site (a slide
    deck) still runs it, and so do clients that send no Sec-Fetch headers (curl)."""
    client = make_client(job_threshold_s=0.5)
    runs = client.app.state.site.runs  # type: ignore[attr-defined]
    url = "/explainers/cwnd/compare?algos=reno,cubic&rate_mbps=100&duration_s=150&rtt_ms=41"
    for headers in (
        SUBRESOURCE,
        {**SUBRESOURCE, "Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate"},
        {
            **SUBRESOURCE,
            "Sec-Fetch-Site": "same-site",
            "Sec-Fetch-Mode": "cors",
            "Sec-Fetch-Dest": "empty",
        },
    ):
        refused = client.get(url, headers=headers)
        assert refused.status_code == 403, headers
        assert "another site" in refused.text
        assert runs.running == 0
    api = client.post(
        "/api/v1/explainers/cwnd/run", json=cwnd(160, 100, seed=7), headers=SUBRESOURCE
    )
    assert api.status_code == 403 and "another site" in api.json()["detail"]
    # cheap runs, and what is already kept, are answered to anyone
    assert (
        client.post("/api/v1/explainers/skb/run", json=SMALL, headers=SUBRESOURCE).status_code
        == 200
    )
    followed = client.get(url, headers=LINK)
    assert followed.status_code == 202  # a job with its progress bar
    assert client.get(url.replace("41", "42")).status_code == 202  # no Sec-Fetch headers
    for job in list(runs._jobs):
        client.delete(f"/api/v1/jobs/{job}")


def test_traces_are_stored_and_shared_across_app_instances(
    make_client: Callable[..., TestClient],
) -> None:
    """A finished trace is stored in the database: another app (worker, restart) serves it
    without running the simulation again."""
    first = make_client()
    assert first.post("/api/v1/explainers/skb/run", json=SMALL).status_code == 200
    second = make_client()
    runs = second.app.state.site.runs  # type: ignore[attr-defined]
    sim = second.app.state.site.plugin("skb").sim  # type: ignore[attr-defined]
    key = runs.key(sim, sim.parse(SMALL))
    assert runs.cached(key) is not None and runs.running == 0


def test_pages_are_cached_with_etags(make_client: Callable[..., TestClient]) -> None:
    """Pages of immutable scenarios carry an ETag and public Cache-Control; a revalidation with
    If-None-Match is a 304 without a body; the gzipped body decodes to the same page."""
    client = make_client()
    url = "/explainers/skb/presets/rx-frame?step=2"
    first = client.get(url)
    assert first.status_code == 200 and first.headers["cache-control"].startswith("public")
    etag = first.headers["etag"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert client.get(url).text == first.text
    frames = client.get("/explainers/skb/frames?preset=rx-frame&start=0&count=2")
    assert frames.status_code == 200 and "etag" in frames.headers
    svg = client.get("/export/svg?explainer=skb&preset=rx-frame&step=1")
    assert (
        client.get(
            "/export/svg?explainer=skb&preset=rx-frame&step=1",
            headers={"If-None-Match": svg.headers["etag"]},
        ).status_code
        == 304
    )


def test_png_queue_is_bounded(make_client: Callable[..., TestClient]) -> None:
    """PNG drawing waits in a bounded queue of its own: past it, 503 with Retry-After."""
    client = make_client()
    client.app.state.pngs.max_waiting = 0  # type: ignore[attr-defined]
    r = client.get("/export/png?explainer=skb&preset=panic&step=0")
    assert r.status_code == 503 and "retry-after" in r.headers


def test_editor_refuses_forms_sent_by_other_sites(make_client: Callable[..., TestClient]) -> None:
    """A form POST another site's page makes a browser send (Sec-Fetch-Site: cross-site, or a
    foreign Origin) is refused with 403 before anything runs; our own pages' posts work."""
    client = make_client()
    form = {"json": json.dumps(SMALL), "action": "run"}
    url = "/explainers/skb/edit"
    assert client.post(url, data=form, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert (
        client.post(url, data=form, headers={"Origin": "https://evil.example"}).status_code == 403
    )
    ok = client.post(
        url,
        data=form,
        headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert ok.status_code == 303


@pure_python  # needs a run that takes seconds: the pure modules' pace
def test_every_worker_answers_for_a_job_another_one_runs(
    make_client: Callable[..., TestClient],
) -> None:
    """With several app workers a client's polls reach any of them: a worker that does not run
    the job answers its state and progress from the shared store, and those polls count as
    interest, so the running worker does not cancel it as abandoned; the result is then served
    by the worker that was asked."""
    idle = 2.0
    a = make_client(job_threshold_s=0.0, job_idle_s=idle)
    b = make_client(job_threshold_s=0.0, job_idle_s=idle)
    longest = {**cwnd(13, rate=1000, seed=11), "flows": [{"cc": "bbr"}]}  # 2.4 M events
    started = time.monotonic()
    r = a.post("/api/v1/explainers/cwnd/run", json=longest)
    assert r.status_code == 202
    url = r.headers["location"]
    first = b.get(url)
    assert first.status_code == 200, first.text
    assert first.json()["state"] == "running" and first.json()["explainer"] == "cwnd"
    seen: list[float] = []

    def ended() -> bool:
        body = b.get(url).json()
        seen.append(body["progress"])
        time.sleep(0.1)
        return body["state"] != "running"

    # The run itself may end before a's idle limit on a fast machine (1.9 s here): it is held
    # for twice that limit, so the job outlives it whatever the machine's pace.
    with runs_held(a, url):
        held = time.monotonic() + 2 * idle
        while time.monotonic() < held:
            assert not ended()  # polled only through b
    wait_for(ended, 120)  # polled only through b
    assert b.get(url).json()["state"] == "done"  # not cancelled as abandoned by a
    assert time.monotonic() - started > 2 * idle
    assert max(seen[:-1], default=0.0) > 0.0 and seen == sorted(seen)
    result = b.get(url + "/result")
    assert result.status_code == 200 and result.json()["sim_version"].startswith("cwnd-")


@pure_python  # needs a run that takes seconds: the pure modules' pace
def test_a_shared_job_is_not_cancelled_while_the_store_cannot_say_who_asked(
    make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polls of a shared job may reach other workers, which record them in the store: while
    the running worker cannot read the store it does not take the silence for abandonment;
    once it reads it again, a job nobody asked about is cancelled."""
    client = make_client(job_threshold_s=0.0, job_idle_s=0.4)
    runs = client.app.state.site.runs  # type: ignore[attr-defined]
    real = runs_module.repo.report_jobs

    def busy(**_: Any) -> Any:
        raise OperationalError("UPDATE shared_job", None, Exception("database is locked"))

    monkeypatch.setattr(runs_module.repo, "report_jobs", busy)
    r = client.post("/api/v1/explainers/cwnd/run", json=cwnd(160, rate=100, seed=13))
    key = r.json()["job"]
    job = runs.peek(key)
    assert job.shared
    with runs_held(client, r.headers["location"]):
        time.sleep(1.5)  # nearly four idle limits without news
        assert runs.peek(key).state == "running" and not runs._cancel[job.slot]
        monkeypatch.setattr(runs_module.repo, "report_jobs", real)
        wait_for(lambda: runs._cancel[job.slot] == 1, 20)  # nobody asked: cancelled
    wait_for(lambda: runs.peek(key).state != "running", 20)
    assert runs.peek(key).state == "cancelled"


@pure_python  # a run of seconds: the pure modules' pace (held still while the cancel travels)
def test_a_job_can_be_cancelled_through_another_worker(
    make_client: Callable[..., TestClient],
) -> None:
    """DELETE on a worker that does not run the job passes the cancel on: the running worker
    stops it and every worker then reports it cancelled (its result is 410 Gone)."""
    a = make_client(job_threshold_s=0.0)
    b = make_client(job_threshold_s=0.0)
    r = a.post("/api/v1/explainers/cwnd/run", json=cwnd(16, rate=1000, seed=12))
    assert r.status_code == 202
    url = r.headers["location"]
    job = a.app.state.site.runs.peek(r.json()["job"])  # type: ignore[attr-defined]
    with runs_held(a, url):  # however fast the run, it is still under way when the cancel comes
        assert b.delete(url).status_code == 204
        wait_for(lambda: a.app.state.site.runs._cancel[job.slot] == 1, 30)  # type: ignore[attr-defined]
    wait_for(lambda: b.get(url).json()["state"] == "cancelled", 30)
    assert a.get(url).json()["state"] == "cancelled"
    assert b.get(url + "/result").status_code == 410
