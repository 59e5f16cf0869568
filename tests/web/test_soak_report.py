"""bench/soak.py's figures from the server's run log (APP_RUN_LOG): every run's CPU time and
wall time against its prediction, counted right; and its flatness verdict on memory."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("soak_under_test", ROOT / "bench" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def rec(name: str, expected: float, cpu: float | None, wall: float, **more: Any) -> dict[str, Any]:
    return {
        "explainer": name,
        "key": f"{name}{expected}{cpu}{wall}",
        "lane": "long",
        "state": "done" if cpu is not None else "cancelled",
        "expected_s": expected,
        "cpu_s": cpu,
        "run_s": cpu,
        "wall_s": wall,
        "queued_s": more.pop("queued", 0.0),
        "private_mb": more.pop("mb", None if cpu is None else 40.0),
        "pid": more.pop("pid", None if cpu is None else 7),
        "time": more.pop("time", 1000.0),
    }


def test_runs_over_twice_their_prediction_are_counted_on_cpu_and_on_wall(
    soak: ModuleType,
) -> None:
    records = [
        rec("cwnd", 4.0, 3.0, 30.0, queued=20.0, pid=7),  # CPU within, wall over
        rec("cwnd", 4.0, 8.5, 9.0, pid=8),  # over on both
        rec("cwnd", 4.0, None, 2.0),  # cancelled before a process took it: no CPU time
        rec("scheduler", 0.001, 0.09, 0.09, mb=300.0, pid=8),  # under 50 ms counts as 50 ms
        rec("scheduler", 0.001, 0.11, 0.11, pid=9),  # 0.11 > 2 × 0.05: over
    ]
    lines = soak.run_log_lines(records)
    cwnd = next(line for line in lines if line.strip().startswith("cwnd"))
    assert "n    3" in cwnd and "'cancelled': 1" in cwnd and "'done': 2" in cwnd
    assert "CPU/predicted p50 0.75, max 2.12 (8.50 s for 4 s), over 2×: 1" in cwnd
    # no eta_s in these records: the eta is the prediction
    assert "wall/eta p50 2.25, min 2.25, max 7.50, outside 2×: 2" in cwnd
    assert "wall/predicted p50 2.25, max 7.50" in cwnd
    assert "waited for a process p50 0.00, max 20.00 s" in cwnd
    sched = next(line for line in lines if line.strip().startswith("scheduler"))
    assert "CPU/predicted p50 1.80, max 2.20" in sched and "over 2×: 1;" in sched
    total = next(line for line in lines if "their predicted work" in line)
    assert "CPU time is over 2× their predicted work: 2 of 4" in total
    assert "whose wall time is outside 2× of the eta they were given: 3" in total
    assert "40-300 MB of their own" in lines[-1] and "3 processes" in lines[-1]


def test_the_eta_misses_are_told_by_lane_and_way(soak: ModuleType) -> None:
    records = [
        rec("cwnd", 4.0, 3.0, 30.0),  # long lane: slower than told
        rec("cwnd", 4.0, 3.0, 1.0),  # faster than half of it
        rec("cwnd", 4.0, 3.0, 5.0),  # within
        {**rec("skb", 0.2, 0.1, 1.0), "lane": "quick"},
        rec("cwnd", 4.0, None, 1.0),  # never ran: not counted
    ]
    assert soak.eta_misses_line(records) == (
        "wall time outside 2× of the eta, by lane: long 1 slower, 1 faster, of 3; "
        "quick 1 slower, 0 faster, of 1"
    )


def test_no_run_over_is_met(soak: ModuleType) -> None:
    lines = soak.run_log_lines([rec("skb", 0.2, 0.3, 5.0), rec("skb", 0.2, None, 0.1)])
    assert "CPU time is over 2× their predicted work: 0 of 1;" in lines[-2]


def test_the_log_is_read_from_the_soaks_start(soak: ModuleType, tmp_path: Path) -> None:
    """Presets run at start-up are not the soak's; a line cut off as the server stopped is
    skipped."""
    log = tmp_path / "runs.jsonl"
    lines = [json.dumps(rec("path", 1.0, 1.0, 1.0, time=t)) for t in (10.0, 20.0, 30.0)]
    log.write_text("\n".join(lines) + '\n{"explainer": "pa')
    assert [r["time"] for r in soak.read_run_log(log, since=20.0)] == [20.0, 30.0]
    assert soak.read_run_log(tmp_path / "missing.jsonl", since=0.0) == []


def test_flatness_is_judged_after_the_first_minute(soak: ModuleType) -> None:
    points = [(0.0, 100.0), (30.0, 900.0), (60.0, 1000.0), (300.0, 1150.0), (600.0, 1100.0)]
    assert soak.flatness(points, 60.0) == "1000-1150 MB, within 15 % (flat; target 20 %)"
    points.append((610.0, 1300.0))
    assert soak.flatness(points, 60.0).endswith("within 30 % (NOT flat; target 20 %)")
    assert "not judged" in soak.flatness(points[:2], 60.0)


def test_each_minutes_floor(soak: ModuleType) -> None:
    """The lowest figure of each minute after the first: a large run's peak does not hide it."""
    points = [(60.0, 900.0), (70.0, 2400.0), (119.0, 950.0), (120.0, 1000.0), (150.0, 980.0)]
    assert soak.floors(points, 60.0) == "60-120 s 900, 120-180 s 980"


def _sample(t: float, workers: float, sims: float, browser: float = 0.0) -> Any:
    roles = {
        "supervisor": 20.0,
        "app workers": workers,
        "simulation processes": sims,
        "export browser": browser,
    }
    return (t, sum(roles.values()), roles)


def test_memory_is_judged_by_floors_and_by_every_sample(soak: ModuleType) -> None:
    """Two verdicts: a PNG's browser for a few seconds raises no minute's floor (growth: met)
    but is a spike (every 10-s sample: not met); the samples of the first minute and after the
    clients' end count for neither, and PSS is reported beside the summed RSS."""
    rss = [_sample(t, 400.0, 600.0) for t in range(0, 200)]
    rss[5] = _sample(5.0, 400.0, 3000.0)  # the first minute: not judged
    rss[100] = _sample(100.0, 400.0, 600.0, browser=900.0)  # a PNG
    rss[190] = _sample(190.0, 400.0, 600.0, browser=900.0)  # after the end (180 s)
    pss = [_sample(t, 300.0, 200.0, browser=350.0 if t == 100 else 0.0) for t in range(0, 200, 5)]
    lines, verdicts = soak.memory_judgement(rss, pss, 180.0)
    (crit_a, fig_a, met_a), (crit_b, fig_b, met_b) = verdicts
    assert "floor" in crit_a and met_a is True
    assert fig_a == (
        "floors of the summed RSS 1020 → 1020 MB (highest +0 % over the first minute's), "
        "of PSS 520 → 520 MB (+0 %)"
    )
    assert "10-s sample" in crit_b and met_b is False
    assert fig_b.startswith("summed RSS 1020-1920 MB (+88 %), PSS 520-870 MB (+67 %)")
    assert "without the export browser (0-900 MB) RSS +0 %, PSS +0 %" in fig_b
    assert any("export browser 0 → 0" in line for line in lines)  # its floors
    assert any("export browser 0-900" in line for line in lines)  # its spike
    assert any("1920 MB at 100 s" in line for line in lines)


def test_growth_raises_the_floors(soak: ModuleType) -> None:
    rss = [_sample(t, 400.0 + 2 * t, 600.0) for t in range(0, 241)]
    _, ((_, fig, met), _) = soak.memory_judgement(rss, [], 240.0)
    assert met is False and "1140 → 1260 → 1380 MB (highest +21 % over" in fig
    _, ((_, why, met), _) = soak.memory_judgement(rss[:50], [], 240.0)
    assert met is None and "not judged" in why


def test_a_floor_below_the_first_is_no_growth(soak: ModuleType) -> None:
    """A worker replaced for its memory lowers a minute's floor (it and its processes gone a
    moment): growth is the highest floor over the first minute's, not the range."""
    rss = [_sample(t, 400.0 if not 150 <= t < 160 else 150.0, 600.0) for t in range(0, 240)]
    rss += [_sample(t, 440.0, 600.0) for t in range(240, 300)]
    _, ((_, fig, met), _) = soak.memory_judgement(rss, [], 299.0)
    assert met is True and "1020 → 770 → 1020 → 1060 MB (highest +4 % over" in fig
