"""Fixtures shared by the web tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
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


@pytest.fixture(scope="module")
def _module_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("app") / "test.db"
    with TestClient(
        create_app(Settings(database_url=f"sqlite:///{db}")), raise_server_exceptions=False
    ) as c:
        yield c


@pytest.fixture
def shared_client(_module_app: TestClient) -> TestClient:
    """One app (the default settings on a temporary SQLite file) for a whole test module, for
    tests that only read what any visitor sees (pages, embeds): starting an app and rendering
    its first pages per test cost more than the tests. Each test starts as a new visitor (no
    cookies); the app's stored runs and kept pages carry over, as they do between visitors."""
    _module_app.cookies.clear()
    return _module_app
