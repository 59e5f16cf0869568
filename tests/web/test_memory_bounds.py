"""What keeps the server's memory bounded under a long load: simulation processes that start
small whatever their app worker holds, large blocks handed back as they are freed."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from app.web import memory, simworker
from app.web.runs import RunService
from app.web.simworker import InheritedFd
from tests.web.test_robust_processes import HOG, HogParams, sim_pids, wait_for


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _anon_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon")


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


@pytest.mark.skipif(not memory.fix_mmap_threshold(), reason="not glibc")
def test_large_blocks_go_back_to_the_system_when_freed_without_a_trim() -> None:
    """After one large block was freed, glibc would serve the next blocks of megabytes from
    its heap and keep them resident when freed below a live block; with the threshold fixed
    they are mapped on their own and their memory goes back as each is freed."""
    big = bytes(40 << 20)  # freed below: glibc alone would raise its threshold to 40 MB
    del big
    base = _anon_mb()
    blocks, pins = [], []
    for i in range(40):
        blocks.append(bytes([i % 250 + 1]) * (2 << 20))  # 2 MB each, written
        pins.append(bytes([i % 250 + 1]) * 100_000)  # a live block after each (not mapped)
    held = _anon_mb()
    del blocks
    freed = _anon_mb()
    assert held - base > 60
    assert freed - base < 20, (base, held, freed)
    del pins
