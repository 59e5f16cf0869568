"""What tells what grows in an app worker: its memory log (app.web.memory.MemoryLog) and the
soak's summary of it (bench/soak.py)."""

from __future__ import annotations

import json
import os
import re
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sqlalchemy import create_engine

from app.web.classes.hub import Hub
from app.web.memo import Memo
from app.web.memory import MemoryLog
from app.web.recordings import TRACES
from bench.soak import memory_log_lines, report_snapshots


def test_a_memory_log_line_has_the_process_figures_and_each_probe(tmp_path: Path) -> None:
    held = [1.0]
    log = MemoryLog(tmp_path / "m.jsonl", 0.05, {"cache_mb": lambda: held[0], "bad": lambda: 1 / 0})
    line = log.sample()
    assert line["rss_mb"] > 0 and line["py_blocks"] > 0 and line["cache_mb"] == 1.0
    assert "bad" not in line  # a probe that fails is left out
    log.start()
    try:
        for _ in range(200):
            if (tmp_path / "m.jsonl").exists() and (tmp_path / "m.jsonl").read_text().count(
                "\n"
            ) >= 2:
                break
            held[0] += 1
            time.sleep(0.02)
    finally:
        log.stop()
    recs = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert len(recs) >= 2 and all(r["pid"] == recs[0]["pid"] for r in recs)


def test_snapshots_beside_the_log_tell_what_grew(tmp_path: Path, capsys: Any) -> None:
    """With snapshot_s set, the log starts tracing at its first interval and then writes a
    tracemalloc snapshot beside itself each interval; the soak names the sites that grew."""
    path = tmp_path / "m.jsonl"
    log = MemoryLog(path, 0.05, {}, snapshot_s=0.05)
    kept: list[bytes] = []
    log.start()
    try:
        for _ in range(400):
            kept.append(b"x" * 100_000)  # what grows between two snapshots
            if len(list(tmp_path.glob("m.jsonl.*.tracemalloc"))) >= 2:
                break
            time.sleep(0.01)
    finally:
        log.stop()
        tracemalloc.stop()
    snaps = sorted(tmp_path.glob("m.jsonl.*.tracemalloc"))
    assert len(snaps) >= 2 and all(s.name.split(".")[-3] == str(os.getpid()) for s in snaps)
    report_snapshots(path, top=3)
    out = capsys.readouterr().out
    assert f"worker {os.getpid()}" in out and "test_memory_flat.py" in out
    assert re.search(r"\+\s*\d+\.\d\d MB", out)


def test_the_soak_names_what_grew_per_worker() -> None:
    recs = [
        {"pid": 7, "time": 100.0 + t, "rss_mb": 300.0 + t, "page_cache_mb": t / 10}
        for t in range(0, 300, 10)
    ]
    line, trend = memory_log_lines(recs, t0=100.0)
    assert "app worker 7" in line
    assert "rss_mb 360 → 590" in line and "page_cache_mb 6 → 29" in line
    # each minute's last sample: 0-59 s ends at 350, 60-119 at 410, ... 240-299 at 590
    assert trend.rstrip().endswith("350/0 → 410/0 → 470/0 → 530/0 → 590/0")


def test_recordings_traces_are_bounded_by_their_frames_not_only_their_count() -> None:
    memo: Memo[str, Any] = Memo(TRACES.size, weigh=TRACES._weigh, budget=TRACES._budget)
    memo.put("big", SimpleNamespace(frames=[0] * 15_000))
    memo.put("other", SimpleNamespace(frames=[0] * 10_000))  # together over the budget
    assert memo.get("big") is None and memo.get("other") is not None
    for i in range(20):
        memo.put(f"small{i}", SimpleNamespace(frames=[0] * 10))
    assert len(memo) <= TRACES.size


def test_a_class_hub_keeps_at_most_its_budget_of_encoded_events() -> None:
    hub = Hub(create_engine("sqlite://"))
    for i in range(64):
        hub.encoded.put(("c", i, "en"), b"x" * (256 << 10))  # 16 MB in all
    assert hub.encoded.weight <= 4 << 20 and len(hub.encoded) < 64
