"""What one run may take, and what keeps a worker's requests quick while runs and exports go
on: the memory one run may add to its process (APP_SIM_RUN_MB), the wait a client is told
(eta_s, app.web.eta), Chromium's lowered priority, the garbage collector's tuning and the
event loop watch (app.web.gctune, app.web.loopwatch)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web import gctune
from app.web import runs as web_runs
from app.web.eta import LaneClock
from app.web.exporting import PngRenderer, lower_thread_priority
from app.web.loopwatch import LoopWatch
from app.web.plugin import Plugin
from app.web.runs import RunService
from app.web.simproc import SimLimitExceeded
from tests.contract.toy import VIEW
from tests.web.test_robust_processes import HogExplainer, HogParams, LongHog

HOG = HogExplainer()


class ApiHog(HogExplainer):
    """The hog behind the API: the toy's presets (other fields) run it with nothing to do."""

    def parse(self, raw: Any) -> HogParams:  # type: ignore[override]
        known = {f.name for f in fields(HogParams)}
        return super().parse({k: v for k, v in dict(raw).items() if k in known})


class ApiLongHog(ApiHog, LongHog):
    name = "longhog"  # type: ignore[misc]


# --- the memory one run may add ------------------------------------------------------------------


def test_a_run_that_would_grow_its_process_past_its_allowance_fails_alone(
    make_runs: Callable[..., RunService],
) -> None:
    """With APP_SIM_RUN_MB, a run that asks for more memory than that on top of what its
    process has fails with that limit named; the allowance is per run (two runs that each keep
    less than it both run, together more), and the same process goes on."""
    runs = make_runs(sim_run_mb=64, sim_recycle_mb=0)
    pids = runs._pools["long"].pids()
    with pytest.raises(SimLimitExceeded) as failed:
        runs.trace(HOG, HogParams(mb=512))
    assert failed.value.limit == "memory" and failed.value.per_run
    assert failed.value.amount == 64
    assert "APP_SIM_RUN_MB" in failed.value.message.render(lambda s: s)
    for tag in (1, 2):  # each within the allowance of its own run, together over it
        assert len(runs.trace(HOG, HogParams(keep_mb=40, tag=tag)).frames) == 1
    assert runs._pools["long"].pids() == pids


def test_over_the_run_allowance_the_api_answers_422_and_goes_on(tmp_path: Path) -> None:
    """Through the API the run over its memory allowance is a 422 naming APP_SIM_RUN_MB, not a
    500 and not a dead worker; the server answers the next requests, runs included."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'api.db'}", sim_run_mb=64, job_threshold_s=1000
    )
    app = create_app(settings, [Plugin(sim=ApiHog(), web=VIEW)])
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.post("/api/v1/explainers/hog/run", json={"mb": 1024})
        assert r.status_code == 422, r.text
        detail = r.json()["detail"][0]
        assert detail["type"] == "sim_limit.memory" and "APP_SIM_RUN_MB" in detail["msg"]
        assert client.get("/api/v1/health").status_code == 200
        ok = client.post("/api/v1/explainers/hog/run", json={"mb": 8})
        assert ok.status_code == 200, ok.text


def test_a_run_logs_the_memory_it_added(make_runs: Callable[..., RunService], tmp_path: Path) -> None:
    """The run log says how far a run raised its process's resident memory at its peak."""
    log = tmp_path / "runs.jsonl"
    runs = make_runs(run_log=log)
    runs.trace(HOG, HogParams(keep_mb=48, tag=1))
    runs.trace(HOG, HogParams(tag=2))
    deadline = time.monotonic() + 30
    while len(_lines(log)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    kept, small = _lines(log)
    assert kept["grew_mb"] >= 45 and small["grew_mb"] < 20


def _lines(log: Path) -> list[dict[str, Any]]:
    import json

    text = log.read_text() if log.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]


# --- the wait a client is told -------------------------------------------------------------------


def test_the_eta_counts_the_runs_ahead_and_the_recent_pace() -> None:
    clock = LaneClock(workers=1)
    assert clock.eta(2.0) == pytest.approx(2.0)  # idle CPUs, a free process
    clock.record(expected_s=1.0, run_s=3.0, store_s=0.0)  # runs lately took 3× their work
    assert clock.slowdown > 1.0
    alone = clock.eta(2.0)
    assert alone == pytest.approx(2.0 * clock.slowdown)
    behind = clock.eta(2.0, running=[(4.0, 1.0)], ahead=[1.0])
    assert behind == pytest.approx(alone + 4.0 * clock.slowdown - 1.0 + 1.0 * clock.slowdown)
    two = LaneClock(workers=2)  # a second process: a run starts at once beside one running
    assert two.eta(2.0, running=[(4.0, 0.0)]) == pytest.approx(2.0)


def test_a_job_is_told_the_wait_of_the_runs_ahead_of_it(
    make_runs: Callable[..., RunService], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long run submitted behind another in the only process is given an eta_s that counts
    the one ahead, and the run log records it."""
    # no run measured yet: the pace is the machine's load per CPU, here as on idle CPUs
    monkeypatch.setattr(web_runs, "machine_load", lambda: 1.0)
    runs = make_runs()
    first = runs.submit(LongHog(), HogParams(sleep_s=1.0, tag=1), "a")
    second = runs.submit(LongHog(), HogParams(sleep_s=1.0, tag=2), "b")
    assert first.eta_s == pytest.approx(5.0)
    assert second.eta_s >= first.eta_s + 4.0
    for job in (first, second):
        job.future.result(timeout=60)


def test_the_202_of_a_job_carries_its_eta(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'api.db'}", job_threshold_s=0.5)
    app = create_app(settings, [Plugin(sim=ApiLongHog(), web=VIEW)])
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.post("/api/v1/explainers/longhog/run", json={"sleep_s": 0.2})
        assert r.status_code == 202, r.text
        body = r.json()
        assert body["expected_s"] == 5.0 and body["eta_s"] >= 5.0


# --- Chromium below the app workers --------------------------------------------------------------


def _nice_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def test_a_thread_with_lowered_priority_starts_processes_at_it() -> None:
    """Playwright's driver and Chromium are started from the PNG thread: lowering that thread
    lowers them, not the app worker's other threads."""

    def spawn() -> int:
        lower_thread_priority(7)
        child = subprocess.Popen(["sleep", "5"])
        try:
            return _nice_of(child.pid)
        finally:
            child.kill()
            child.wait()

    base = os.getpriority(os.PRIO_PROCESS, 0)
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(spawn).result() == min(19, base + 7)
    assert os.getpriority(os.PRIO_PROCESS, 0) == base


def test_pngs_are_drawn_on_a_thread_at_the_export_priority(settings: Settings) -> None:
    renderer = PngRenderer(settings.chromium, nice=5)
    seen: list[int] = []

    def render(html: str, *, scale: int, width: float, ready: str | None = None) -> bytes:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return b"png"

    renderer.render = render  # type: ignore[method-assign]
    try:
        with ThreadPoolExecutor(1) as pool:  # an event loop of its own, as a worker's
            done = pool.submit(asyncio.run, renderer.render_async("x", scale=1, width=10))
            assert done.result() == b"png"
    finally:
        renderer.close()
    assert seen == [min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)]


def test_a_png_that_waits_too_long_is_answered_busy(settings: Settings) -> None:
    """A request waits for its PNG at most ``wait_s`` (then Busy: 503 with Retry-After)."""
    from app.web.runs import Busy

    renderer = PngRenderer(settings.chromium, wait_s=0.2)
    release = threading.Event()

    def render(html: str, *, scale: int, width: float, ready: str | None = None) -> bytes:
        release.wait(30)
        return b"png"

    renderer.render = render  # type: ignore[method-assign]
    try:
        with ThreadPoolExecutor(1) as pool:
            done = pool.submit(asyncio.run, renderer.render_async("x", scale=1, width=10))
            with pytest.raises(Busy):
                done.result(timeout=30)
    finally:
        release.set()
        renderer.close()


# --- the garbage collector and the event loop ----------------------------------------------------


def test_gc_tuning_sets_the_threshold_and_freezes_what_is_alive() -> None:
    before = gc.get_threshold()
    try:
        assert not gctune.configure(0) and gc.get_threshold() == before
        assert gctune.configure(12_345) and gc.get_threshold()[0] == 12_345
        kept = [object() for _ in range(10)]  # alive now: out of later collections
        gctune.freeze()
        assert gc.get_freeze_count() > 0 and kept
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def _hold_the_loop(seconds: float) -> None:
    time.sleep(seconds)


def test_the_loop_watch_names_what_held_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    """A callback that holds the event loop past the threshold is logged once, with where it
    was held (a busy machine may delay a waiting loop too: such lines name no callback)."""
    watch = LoopWatch(0.2)

    async def main() -> None:
        watch.start()
        await asyncio.sleep(0.3)  # waiting: the loop runs
        _hold_the_loop(1.0)
        await asyncio.sleep(0.3)
        watch.stop()

    with caplog.at_level(logging.WARNING, logger="stepscope"):
        with ThreadPoolExecutor(1) as pool:  # a loop of its own (browser tests may hold one)
            pool.submit(asyncio.run, main()).result(timeout=30)
    lines = [r.getMessage() for r in caplog.records if "event loop held" in r.getMessage()]
    (line,) = [text for text in lines if "_hold_the_loop" in text]
    assert "tests/web/test_robust_limits.py" in line and watch.stalls == len(lines) >= 1


class SizedHog(HogExplainer):
    """A hog whose expected work is its tag in tenths of a second."""

    name = "sizedhog"  # type: ignore[misc]

    def expected_seconds(self, params: HogParams) -> float:  # type: ignore[override]
        return params.tag / 10


def test_a_waiting_run_is_not_passed_by_every_shorter_one_after_it(
    make_runs: Callable[..., RunService],
) -> None:
    """Waiting runs start shortest first, but the time a run has waited counts against its
    length: a run submitted later that is only a little shorter waits behind it (so the wait
    it was told holds), one much shorter still goes first."""
    runs = make_runs()
    sized = SizedHog()

    def submit(params: HogParams) -> str:
        key = runs.key(sized, params)
        runs.submit(sized, params, key)
        return key

    busy = submit(HogParams(sleep_s=2.0, tag=20))  # holds the only process
    longer = submit(HogParams(tag=50))
    time.sleep(0.3)
    slightly_shorter = submit(HogParams(tag=49))  # due 0.2 s after the longer one
    much_shorter = submit(HogParams(tag=1))
    order = [entry[2].key for entry in sorted(runs._pending["long"])]
    assert order == [much_shorter, longer, slightly_shorter]
    behind = runs.peek(slightly_shorter)
    assert behind is not None and behind.eta_s >= 5.0 + 4.9
    assert busy


def test_a_png_not_ready_in_time_is_answered_503_and_the_worker_goes_on(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole PNG (its run, its step's picture, Chromium) is bounded by the renderer's
    wait: a step whose picture takes longer is a 503 with Retry-After, not a request the
    client gives up on; other requests are answered meanwhile."""
    from app.web.routes import export

    real = export.frame_picture

    def slow(*args: Any, **kw: Any) -> Any:
        time.sleep(1.5)
        return real(*args, **kw)

    monkeypatch.setattr(export, "frame_picture", slow)
    monkeypatch.setattr(client.app.state.pngs, "wait_s", 0.3)  # type: ignore[attr-defined]
    r = client.get("/export/png?explainer=skb&preset=rx-frame&step=1&scale=1")
    assert r.status_code == 503 and int(r.headers["retry-after"]) > 0
    assert client.get("/api/v1/health").status_code == 200
    assert client.get("/export/svg?explainer=skb&preset=rx-frame&step=1").status_code == 200
