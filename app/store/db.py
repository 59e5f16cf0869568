"""Engine construction and schema upgrades (Alembic, run programmatically)."""

from __future__ import annotations

import fcntl
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.pool import StaticPool
from sqlmodel import create_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
BUSY_TIMEOUT_MS = 5000  # a writer waits this long for another worker's write to finish
# pg_advisory_lock key serialising schema upgrades across processes and machines ("stepscop")
PG_MIGRATE_LOCK = 0x73746570_73636F70 & 0x7FFFFFFFFFFFFFFF


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    """Each new SQLite connection: write-ahead log (readers never wait for the writer) and a
    busy timeout, so several workers share the file without "database is locked" errors."""
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # Switching a fresh file to WAL needs a moment alone with it, and SQLite answers "database
    # is locked" at once (no busy wait) when another process is switching it too: retry.
    for attempt in range(BUSY_TIMEOUT_MS // 50):
        try:
            cur.execute("PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == BUSY_TIMEOUT_MS // 50 - 1:
                raise
            time.sleep(0.05)
    cur.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; commits skip an fsync
    cur.close()


def sqlite_path(engine: Engine) -> Path | None:
    """The file of a file-backed SQLite engine, else None (memory databases, PostgreSQL)."""
    if engine.dialect.name != "sqlite":
        return None
    db = engine.url.database
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return Path(db)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; it touches nothing until first used (see :func:`init_db`)."""
    if url.startswith("sqlite"):
        kwargs: dict[str, object] = {"connect_args": {"check_same_thread": False}}
        if url in ("sqlite://", "sqlite:///:memory:"):
            kwargs["poolclass"] = StaticPool
        engine = create_engine(url, **kwargs)
        if sqlite_path(engine) is not None:
            event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return cfg


def current_revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg).get_current_head()


@contextmanager
def migration_lock(engine: Engine) -> Iterator[None]:
    """Only one process at a time upgrades the schema: a file lock beside a SQLite database,
    an advisory lock on PostgreSQL. Others wait, then find the work done."""
    path = sqlite_path(engine)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{path}.migrate-lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    elif engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": PG_MIGRATE_LOCK})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": PG_MIGRATE_LOCK})
                conn.commit()
    else:
        yield


def init_db(engine: Engine, revision: str = "head") -> None:
    """Bring the schema up to ``revision``; saved data is kept across upgrades.

    Idempotent and safe when several workers start at once on a fresh database: a schema that
    is already at head is only read, and upgrades run one process at a time.
    """
    path = sqlite_path(engine)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    if revision == "head":
        with engine.connect() as conn:
            if current_revision(conn) == head_revision():
                return  # migrated already (e.g. by ``python -m app.store.migrate``)
    with migration_lock(engine):
        cfg = alembic_config(engine)
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
