"""Shared fixtures: an app on a temporary SQLite file (or a fresh PostgreSQL database); never
./data."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.pool import NullPool

from app.main import create_app
from app.settings import Settings
from tests.native import pytest_collection_finish  # noqa: F401 - its hook: the selected tests


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(database_url=f"sqlite:///{tmp_path / 'test.db'}")


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture(scope="module")  # torn down with its module, not at the session's end
def _session_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("app") / "test.db"
    # One app for every module of a pytest worker that opts in, all from one client address:
    # the per-client quotas (new sessions an hour, long runs a minute; tested on apps of their
    # own) would otherwise refuse a test for what other modules' tests did before it.
    settings = Settings(
        database_url=f"sqlite:///{db}", expensive_runs_per_minute=1000, sessions_per_client=100_000
    )
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def shared_client(_session_app: TestClient) -> TestClient:
    """One app (default settings but the per-client quotas, on a temporary SQLite file) for
    every test module of a pytest worker that opts in, for tests that only do what any visitor
    may (read pages, run and save scenarios): starting an app, running every preset's trace and
    rendering its pages again per test, or per module, cost more than most tests. A module opts
    in by defining ``client`` as this. Each test starts as a new visitor (no cookies); the app's
    stored runs and kept pages carry over, as they do between visitors."""
    _session_app.cookies.clear()
    return _session_app


# --- one database per test, on SQLite and on PostgreSQL -----------------------------------
# scripts/test starts a throw-away PostgreSQL and exports APP_TEST_POSTGRES_URL (and
# APP_TEST_POSTGRES_REQUIRED=1); tests taking ``db_url`` run on both databases. Outside
# scripts/test the PostgreSQL case is skipped, except under CI=true, where it fails.


def _postgres_admin_url() -> str | None:
    url = os.environ.get("APP_TEST_POSTGRES_URL")
    if url:
        return url
    if os.environ.get("APP_TEST_POSTGRES_REQUIRED") == "1" or os.environ.get("CI") == "true":
        pytest.fail("APP_TEST_POSTGRES_URL is not set: run the tests with scripts/test")
    pytest.skip("no PostgreSQL (scripts/test starts one and sets APP_TEST_POSTGRES_URL)")


@contextmanager
def _fresh_database(kind: str, directory: Path) -> Iterator[str]:
    """A fresh, empty database URL of ``kind``: a SQLite file in ``directory``, or a new
    database on the test PostgreSQL (dropped after)."""
    if kind == "sqlite":
        yield f"sqlite:///{directory / 'test.db'}"
        return
    admin_url = make_url(_postgres_admin_url() or "")
    name = f"t_{secrets.token_hex(6)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin_url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL: a SQLite file, or a new database on the test PostgreSQL."""
    with _fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``db_url`` for a whole test module: one fresh database of each kind, its tests grouped
    by kind (the ``[sqlite]`` / ``[postgresql]`` ids are the same)."""
    with _fresh_database(request.param, tmp_path_factory.mktemp("db")) as url:
        yield url


@pytest.fixture(scope="module")
def module_db_client(module_db_url: str) -> Iterator[TestClient]:
    """One app (default settings) on ``module_db_url`` for the whole module; a test takes it
    through a ``client`` fixture of its module that clears the cookies (a new visitor)."""
    with TestClient(
        create_app(Settings(database_url=module_db_url)), raise_server_exceptions=False
    ) as c:
        yield c
