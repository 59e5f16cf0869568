"""Whether the store can be reached, and which errors mean it cannot (for now).

An error of the *store* — SQLite's "database is locked" after its busy timeout, "database or
disk is full", an I/O error; PostgreSQL down, restarting, or out of connections — says nothing
about the request: the web layer answers it with 503 and ``Retry-After`` (app.web.failures),
never 500. These are the DB-API's ``OperationalError`` family, as SQLAlchemy wraps them (or
raw, when raised where SQLAlchemy does not wrap them, e.g. a connect hook), and a pool that
has no connection to give.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import Engine, text
from sqlalchemy import exc as sa_exc


def _store_errors() -> tuple[type[Exception], ...]:
    found: list[type[Exception]] = [
        sa_exc.OperationalError,  # locked, disk full, I/O error, server gone, refused
        sa_exc.InterfaceError,  # a connection closed under us
        sa_exc.TimeoutError,  # the pool has no connection to give in time
        sa_exc.DisconnectionError,
        sqlite3.OperationalError,
    ]
    try:
        import psycopg

        found.append(psycopg.OperationalError)
    except ImportError:  # pragma: no cover - SQLite-only installs
        pass
    return tuple(found)


STORE_ERRORS = _store_errors()
RETRY_AFTER_S = 5


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the store is unavailable (rather than that a query is wrong)."""
    if isinstance(exc, STORE_ERRORS):
        return True
    return isinstance(exc, sa_exc.DBAPIError) and bool(exc.connection_invalidated)


def check(engine: Engine) -> bool:
    """Whether the store answers a query now."""
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001 - any failure is "unavailable"; the cause is logged
        if not is_unavailable(exc):
            import logging

            logging.getLogger("stepscope").warning("store check failed: %r", exc)
        return False
    return True
