"""Fixtures shared by the web tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from app.store.db import init_db, make_engine
from app.web.runs import RunService


@pytest.fixture
def make_runs(tmp_path: Path) -> Iterator[Callable[..., RunService]]:
    """Start run services on one temporary SQLite file, stopped after the test: no quick-run
    processes (every run goes to the "long" pool), no runs turned into jobs by their expected
    time and no recycling for memory, unless ``overrides`` (Settings fields) say otherwise."""
    started: list[RunService] = []

    def make(**overrides: Any) -> RunService:
        settings = Settings(
            database_url=f"sqlite:///{tmp_path / 'runs.db'}",
            **{"sim_quick_workers": 0, "job_threshold_s": 1000, "sim_recycle_mb": 0, **overrides},
        )
        engine = make_engine(settings.database_url)
        init_db(engine)
        runs = RunService(settings, engine)
        runs.start()
        started.append(runs)
        return runs

    yield make
    for runs in started:
        runs.stop()
