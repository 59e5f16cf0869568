"""The wait a client is told (app.web.eta): the measured pace per predicted second, the work
left of the running runs, and only the share of queued work the lane has lately done."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings
from app.store.db import make_engine
from app.web import eta
from app.web.eta import LaneClock
from app.web.runs import RunService


def test_the_pace_is_wall_time_per_predicted_second() -> None:
    clock = LaneClock(workers=1)
    for _ in range(30):  # runs predicted at 4 s took 2 s of wall time each
        clock.record(expected_s=4.0, run_s=2.0, store_s=0.0)
    assert clock.pace == pytest.approx(0.5, rel=0.01)
    assert clock.eta(4.0) == pytest.approx(2.0, rel=0.01)


def test_before_any_run_the_pace_is_the_machines_load() -> None:
    """A lane that has measured nothing goes at the machine's load per CPU; the first run it
    measures sets the pace, and from then on the measured pace rules."""
    load = [7.5]
    clock = LaneClock(workers=1, load=lambda: load[0])
    assert clock.eta(2.0) == pytest.approx(15.0)
    assert clock.eta(2.0, ahead=[2.0, 2.0]) == pytest.approx(45.0)
    clock.record(expected_s=2.0, run_s=6.0, store_s=0.0)  # pace 3 measured
    assert clock.pace == pytest.approx(3.0)
    load[0] = 100.0  # no longer asked
    assert clock.eta(2.0) == pytest.approx(2.0 * clock.pace)
    assert LaneClock(workers=1).eta(2.0) == pytest.approx(2.0)  # no load given: 1.0


def test_the_machines_load_is_per_cpu_and_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eta.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(eta.os, "getloadavg", lambda: (15.0, 9.0, 4.0))
    assert eta.machine_load() == pytest.approx(7.5)
    monkeypatch.setattr(eta.os, "getloadavg", lambda: (0.3, 0.2, 0.1))
    assert eta.machine_load() == 1.0


def test_queued_work_counts_as_much_as_the_lane_has_lately_done() -> None:
    full, abandoned = LaneClock(workers=1), LaneClock(workers=1)
    for _ in range(30):
        abandoned.ended(0.0)  # queued jobs whose clients left before they ran
    ahead = [4.0] * 5
    assert full.eta(4.0, ahead=ahead) == pytest.approx(24.0)
    assert abandoned.eta(4.0, ahead=ahead) < 6.0
    abandoned.ended(1.0)
    assert abandoned.kept > 0.0


def test_a_running_run_counts_what_is_left_of_it_at_its_own_pace() -> None:
    clock = LaneClock(workers=1)
    # predicted 4 s, half done after 4 s: it goes at 2 wall seconds per predicted second
    got = clock.eta(1.0, running=[(4.0, 4.0, 0.5)])
    pace = (1.0 + 2.0) / 2  # the recent runs' pace (none yet: 1.0) and the run's own
    assert got == pytest.approx(0.5 * 4.0 * pace + 1.0 * pace)
    # too early to tell: its own pace is not taken
    assert clock.eta(1.0, running=[(4.0, 0.1, 0.01)]) == pytest.approx(0.99 * 4.0 + 1.0)


def test_a_free_process_means_no_wait() -> None:
    two = LaneClock(workers=2)
    assert two.eta(2.0, running=[(4.0, 0.0, 0.0)]) == pytest.approx(2.0)
    assert two.eta(2.0, running=[(4.0, 0.0, 0.0)], ahead=[3.0]) > 2.0


def test_a_run_its_client_waits_for_goes_before_queued_jobs(tmp_path: Path) -> None:
    """A run short enough to be answered in its request (its client's connection held) waits
    ahead of the jobs submitted in the half minute before it, not of one that has waited
    longer (a stream of such runs would hold it back for good); among each, shortest first."""
    engine = make_engine(f"sqlite:///{tmp_path / 'due.db'}")
    runs = RunService(Settings(database_url=str(engine.url), job_threshold_s=1.5), engine)
    held_later = runs._due(now=25.0, expected=1.0)
    job_earlier = runs._due(now=0.0, expected=2.0)
    assert held_later < job_earlier
    assert runs._due(now=40.0, expected=1.0) > job_earlier  # that job has waited 40 s
    assert runs._due(0.0, 0.5) < runs._due(0.0, 1.0)  # held: shortest first
    assert runs._due(0.0, 2.0) < runs._due(0.0, 3.0)  # jobs: shortest first
    assert runs._due(0.0, 3.0) < runs._due(2.0, 2.0)  # a job's wait counts against its length


def test_runs_that_will_pass_a_waiting_one_stretch_its_wait() -> None:
    """Runs of a lower rank submitted lately will keep starting before a waiting run: its wait
    is stretched by their share of the lane's time (a priority queue's), and runs of a higher
    rank, which start after it, change nothing."""
    clock = LaneClock(workers=1, born=0.0)
    busy = [(4.0, 0.0, 0.0)]  # one process, busy with 4 s of work
    base = clock.eta(1.0, running=busy, rank=5.0, now=1000.0)
    assert base == pytest.approx(5.0)  # no arrivals yet: the work left, then its own
    for i in range(20):  # 20 s of work submitted in 60 s, each ranked before it: a third
        clock.arrived(rank=1.0, expected_s=1.0, now=940.0 + 3 * i)
    got = clock.eta(1.0, running=busy, rank=5.0, now=1000.0)
    assert got == pytest.approx(4.0 / (1 - 1 / 3) + 1.0)
    assert clock.eta(1.0, running=busy, rank=0.5, now=1000.0) == pytest.approx(base)
    for _ in range(200):  # more than the lane can take: capped at twice the wait
        clock.arrived(rank=1.0, expected_s=5.0, now=999.0)
    assert clock.eta(1.0, running=busy, rank=5.0, now=1000.0) == pytest.approx(4.0 * 2 + 1.0)
    # a free process: no wait to stretch; a minute later the arrivals are forgotten
    assert clock.eta(1.0, rank=5.0, now=1000.0) == pytest.approx(1.0)
    assert clock.eta(1.0, running=busy, rank=5.0, now=1100.0) == pytest.approx(base)
