"""What keeps the server's memory bounded under a long load: simulation processes that start
small whatever their app worker holds, large blocks handed back as they are freed."""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import pytest

from app.settings import Settings
from app.web import memory, simworker
from app.web import runs as runs_module
from app.web.eta import LaneClock
from app.web.exporting import PngRenderer
from app.web.pngbrowser import BrowserBusy, Recycle, ServerLock
from app.web.runs import Job, RunService
from app.web.simworker import InheritedFd
from app.web.tracecache import TraceCache
from tests.probes import probe_output
from tests.web.test_robust_processes import HOG, HogParams, sim_pids, wait_for


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(
    simworker.sim_context().get_start_method() != "forkserver", reason="no forkserver"
)
def test_a_replaced_process_does_not_start_with_the_workers_grown_heap(
    make_runs: Callable[..., RunService],
) -> None:
    """The app worker holds 300 MB more than when its processes started; a process that
    replaces one after its run (APP_SIM_RECYCLE_RUNS) starts from the fork server, not as a
    copy of the worker: its resident size is far below what the worker holds."""
    grown = bytearray(b"\x01" * (300 << 20))  # written: resident in this process
    try:
        runs = make_runs(sim_recycle_runs=1)
        first = sim_pids(runs)
        assert len(runs.trace(HOG, HogParams(tag=1)).frames) == 1  # then it is replaced
        wait_for(lambda: sim_pids(runs) not in ([], first), 60)
        (pid,) = sim_pids(runs)
        assert runs._pools["long"].recycled >= 1
        assert _rss_mb(os.getpid()) > 300
        assert _rss_mb(pid) < 200, _rss_mb(pid)  # a fork of this process would hold > 300
    finally:
        del grown


def test_an_inherited_fd_is_the_same_number_when_not_pickled() -> None:
    """Forked, a process knows the worker's descriptor by its number; started by the fork
    server it gets its own copy (pickled with multiprocessing's fd passing), found by the
    worker's number."""
    fd = InheritedFd(7)
    assert (fd.fd, fd.local) == (7, 7)
    simworker._fds.clear()
    simworker._fds[7] = 12
    try:
        assert simworker.local_fd(7) == 12 and simworker.local_fd(8) == 8
    finally:
        simworker._fds.clear()


# Run in a fresh interpreter: the measure is this process's anonymous memory, which a test
# worker's other threads and earlier tests (their heaps, their malloc settings) disturb.
LARGE_BLOCKS_PROBE = """
import sys
from app.web import memory

def anon_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024

if not memory.fix_mmap_threshold():
    print("not-glibc")
    sys.exit(0)
big = bytes(40 << 20)  # freed below: glibc alone would raise its threshold to 40 MB
del big
base = anon_mb()
blocks, pins = [], []
for i in range(40):
    blocks.append(bytes([i % 250 + 1]) * (2 << 20))  # 2 MB each, written
    pins.append(bytes([i % 250 + 1]) * 100_000)  # a live block after each (not mapped)
held = anon_mb()
del blocks
print(base, held, anon_mb())
"""


@pytest.mark.skipif(memory._LIBC is None, reason="not glibc")
def test_large_blocks_go_back_to_the_system_when_freed_without_a_trim() -> None:
    """After one large block was freed, glibc would serve the next blocks of megabytes from
    its heap and keep them resident when freed below a live block; with the threshold fixed
    they are mapped on their own and their memory goes back as each is freed."""
    out = probe_output(LARGE_BLOCKS_PROBE, APP_NATIVE="0")
    base, held, freed = map(float, out.split())
    assert held - base > 60
    assert freed - base < 20, (base, held, freed)


# --- one export browser in the server ----------------------------------------------------------


def test_a_worker_waiting_for_the_browser_lock_is_seen_and_gets_it(tmp_path: Path) -> None:
    """One worker's browser holds the server's lock; another that waits is seen by the holder
    (which then closes its browser) and gets the lock once it is released; one that waits
    longer than its drawing may take gives up (BrowserBusy, a "could not start")."""
    path = tmp_path / "png.lock"
    holder, other = ServerLock(path), ServerLock(path)
    try:
        holder.acquire(1.0)
        assert holder.held and not holder.wanted()
        with pytest.raises(BrowserBusy):
            other.acquire(0.2)
        assert not other.held and not holder.wanted()  # it no longer waits
        got = threading.Event()
        waiter = threading.Thread(target=lambda: (other.acquire(60.0), got.set()), daemon=True)
        waiter.start()
        deadline = time.monotonic() + 60
        while not holder.wanted():
            assert time.monotonic() < deadline, "the holder never saw the waiter"
            time.sleep(0.02)
        assert not got.is_set()
        holder.release()
        waiter.join(60)
        assert got.is_set() and other.held
    finally:
        holder.close()
        other.close()


def test_two_workers_never_hold_a_browser_at_once(settings: Settings, tmp_path: Path) -> None:
    """Two renderers (two app workers) sharing the server's lock: the second one's PNG is drawn
    once the first one's browser, kept otherwise (no idle limit), has closed for it."""
    lock = tmp_path / "png.lock"
    keep = Recycle(pngs=0, rss_mb=0, idle_s=0)
    first = PngRenderer(settings.chromium, recycle=keep, lock=lock)
    second = PngRenderer(settings.chromium, recycle=keep, lock=lock)
    page = "<body style='margin:0'><div class='stage-wrap'><p>one</p></div></body>"
    try:
        assert first.render(page, scale=1, width=200)[:4] == b"\x89PNG"
        assert first.pids()[1] is not None
        assert second.render(page, scale=1, width=200)[:4] == b"\x89PNG"
        assert second.pids()[1] is not None and first.pids() == (None, None)
        assert first.render(page, scale=1, width=200)[:4] == b"\x89PNG"
        assert first.pids()[1] is not None and second.pids() == (None, None)
    finally:
        first.close()
        second.close()


# --- the eta: each explainer at its own measured pace -------------------------------------------


def test_each_explainer_goes_at_its_own_measured_pace() -> None:
    """Two explainers share a lane: one uses 0.5 CPU s per predicted second, the other 1.0,
    and the lane's processes get half a CPU (2 wall s per CPU s). Each run is told its own
    explainer's pace, not the lane's mixed one; one never measured gets the lane's."""
    clock = LaneClock(workers=1)
    for _ in range(30):
        clock.record(expected_s=2.0, run_s=2.0, store_s=0.0, cpu_s=1.0, explainer="light")
        clock.record(expected_s=2.0, run_s=4.0, store_s=0.0, cpu_s=2.0, explainer="heavy")
    assert clock.eta(2.0, explainer="light") == pytest.approx(2.0, rel=0.01)
    assert clock.eta(2.0, explainer="heavy") == pytest.approx(4.0, rel=0.01)
    mixed = clock.eta(2.0, explainer="new")
    assert 2.0 < mixed < 4.0  # the lane's pace: between the two
    # queued work counts at each one's pace too: a heavy run ahead waits 4 s, a light one 2 s
    assert clock.eta(2.0, ahead=[(2.0, "heavy")], explainer="light") == pytest.approx(6.0, rel=0.01)
    assert clock.eta(2.0, ahead=[(2.0, "light")], explainer="light") == pytest.approx(4.0, rel=0.01)


def test_a_running_run_tells_the_slowdown_now() -> None:
    """A run under way that has gone at 4 wall s per CPU s (its explainer's bias known) makes
    the next run's estimate slower than the lane's past slowdown alone (1.0)."""
    clock = LaneClock(workers=2)
    for _ in range(30):
        clock.record(expected_s=1.0, run_s=1.0, store_s=0.0, cpu_s=1.0, explainer="x")
    calm = clock.eta(1.0, explainer="x")
    # predicted 4 s, a quarter done after 4 s: 4 wall s per predicted (= CPU) second
    busy = clock.eta(1.0, running=[(4.0, 4.0, 0.25, "x")], explainer="x")
    assert calm == pytest.approx(1.0, rel=0.01)
    assert busy == pytest.approx(1.0 * (1.0 + 4.0) / 2, rel=0.01)


# --- the soak's figures ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "bench"))
    spec = importlib.util.spec_from_file_location("soak_bounds", root / "bench" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _run(expected: float, eta: float, wall: float) -> dict[str, Any]:
    return {
        "explainer": "skb",
        "key": f"{expected}{eta}{wall}",
        "lane": "quick",
        "state": "done",
        "expected_s": expected,
        "eta_s": eta,
        "cpu_s": wall / 2,
        "run_s": wall / 2,
        "wall_s": wall,
        "queued_s": 0.0,
        "private_mb": 20.0,
        "pid": 7,
        "time": 1000.0,
    }


def test_tiny_runs_are_held_to_their_eta_with_the_same_floor_on_both_sides(
    soak: ModuleType,
) -> None:
    """A run told 9 ms that took 6 ms is within 2× of its eta (both count as 50 ms); one told
    9 ms that took 150 ms, or told 1 s that took 0.3 s, is not."""
    lines = soak.run_log_lines(
        [_run(0.001, 0.009, 0.006), _run(0.001, 0.009, 0.15), _run(0.5, 1.0, 0.3)]
    )
    total = next(line for line in lines if "their predicted work" in line)
    assert "whose wall time is outside 2× of the eta they were given: 2;" in total


# --- the trace cache: presets pinned, the others in a small share ----------------------------


def test_pinned_traces_stay_and_the_others_keep_to_their_share() -> None:
    """Presets (pinned) are never pushed out by other runs' results, which take at most their
    share (and what the pinned ones leave), least recently used first out."""
    mb = 1 << 20
    cache = TraceCache(64 * mb, others_bytes=16 * mb)
    trace = cast(Any, object())
    for i in range(6):
        cache.put(f"preset{i}", trace, 7 * mb, pinned=True)
    for i in range(20):
        cache.put(f"run{i}", trace, 4 * mb)
    assert all(cache.get(f"preset{i}") is trace for i in range(6))
    assert cache.pinned_used == 42 * mb
    assert cache.used - cache.pinned_used <= 16 * mb
    assert [cache.get(f"run{i}") is not None for i in (15, 16, 17, 18, 19)] == [False] + [True] * 4
    # pinned ones past the whole bound are kept as others (and pushed out like them)
    small = TraceCache(8 * mb, others_bytes=2 * mb)
    small.put("a", trace, 1 * mb, pinned=True)
    for i in range(10):
        small.put(f"p{i}", trace, 1 * mb, pinned=True)
    assert small.pinned_used == 8 * mb and small.used <= 8 * mb


def test_queued_jobs_count_as_their_clients_follow_them() -> None:
    """A job ahead whose client left (never asked about it after its 202) adds nothing to the
    wait of a run behind it (it will be cancelled unrun); one someone follows adds all of its
    work, whatever share the lane has lately done; one too new to tell, that share."""
    clock = LaneClock(workers=1)
    for _ in range(30):
        clock.ended(0.0)  # lately, queued jobs were abandoned
    assert clock.eta(1.0, ahead=[(4.0, "", 0.0)]) == pytest.approx(1.0)
    assert clock.eta(1.0, ahead=[(4.0, "", 1.0)]) == pytest.approx(5.0)
    assert clock.eta(1.0, ahead=[(4.0, "", None)]) < 1.1

    def job(started: float, seen: float, waiters: int = 0) -> Job:
        return Job(
            key="k", explainer="x", slot=0, expected_s=4.0, future=Future(), started=started,
            seen=seen, waiters=waiters,
        )  # fmt: skip

    assert runs_module._followed(job(100.0, 100.0), now=110.0) == 0.0  # left after its 202
    assert runs_module._followed(job(100.0, 105.0), now=110.0) == 1.0  # polled since
    assert runs_module._followed(job(100.0, 100.0, waiters=1), now=110.0) == 1.0
    assert runs_module._followed(job(100.0, 100.0), now=101.0) is None  # too new to tell
