"""What tells what grows in an app worker: its memory log (app.web.memory.MemoryLog) and the
soak's summary of it (bench/soak.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from app.web.memory import MemoryLog
from bench.soak import memory_log_lines


def test_a_memory_log_line_has_the_process_figures_and_each_probe(tmp_path: Path) -> None:
    held = [1.0]
    log = MemoryLog(tmp_path / "m.jsonl", 0.05, {"cache_mb": lambda: held[0], "bad": lambda: 1 / 0})
    line = log.sample()
    assert line["rss_mb"] > 0 and line["py_blocks"] > 0 and line["cache_mb"] == 1.0
    assert "bad" not in line  # a probe that fails is left out
    log.start()
    try:
        for _ in range(200):
            if (tmp_path / "m.jsonl").exists() and (tmp_path / "m.jsonl").read_text().count("\n") >= 2:
                break
            held[0] += 1
            time.sleep(0.02)
    finally:
        log.stop()
    recs = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert len(recs) >= 2 and all(r["pid"] == recs[0]["pid"] for r in recs)


def test_the_soak_names_what_grew_per_worker() -> None:
    recs = [
        {"pid": 7, "time": 100.0 + t, "rss_mb": 300.0 + t, "page_cache_mb": t / 10}
        for t in range(0, 300, 10)
    ]
    (line,) = memory_log_lines(recs, t0=100.0)
    assert "app worker 7" in line
    assert "rss_mb 360 → 590" in line and "page_cache_mb 6 → 29" in line
