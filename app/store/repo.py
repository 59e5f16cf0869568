"""Reads and writes of the store, as keyword-only functions over a SQLModel ``Session``.

Routes call these; nothing here knows about HTTP or about simulations. Saved scenarios are
immutable: there is a create and a get, never an update.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Engine, Table, case, delete, exists, func, text, update
from sqlalchemy import select as sa_select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.store.models import (
    Progress,
    RateLimit,
    Recording,
    Scenario,
    SharedJob,
    StoredTrace,
    VisitorSession,
    utcnow,
)

# 12 bytes of randomness → 16 URL-safe characters (96 bits): short enough to read aloud,
# far too many to guess.
SCENARIO_ID_BYTES = 12
SESSION_ID_BYTES = 24
SCENARIO_ID_RE = re.compile(r"^[A-Za-z0-9_-]{10,32}$")
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9_-]{20,64}$")
TITLE_MAX = 200


def session_for(engine: Engine) -> Session:
    """A unit of work; ``expire_on_commit=False`` so returned rows stay readable after commit."""
    return Session(engine, expire_on_commit=False)


def new_scenario_id() -> str:
    return secrets.token_urlsafe(SCENARIO_ID_BYTES)


def new_session_id() -> str:
    return secrets.token_urlsafe(SESSION_ID_BYTES)


def is_scenario_id(value: str) -> bool:
    return bool(SCENARIO_ID_RE.fullmatch(value))


def is_session_id(value: str) -> bool:
    return bool(SESSION_ID_RE.fullmatch(value))


# --- saved scenarios -------------------------------------------------------------------------


def create_scenario(
    *,
    db: Session,
    explainer: str,
    params: Any,
    sim_version: str,
    title: str | None = None,
    forked_from: str | None = None,
    owner: str | None = None,
) -> Scenario:
    """Save a scenario under a fresh id. ``params`` must already be canonical (parse → dump)."""
    if title is not None and len(title) > TITLE_MAX:
        raise ValueError(f"title is at most {TITLE_MAX} characters")
    params_json = json.dumps(params, sort_keys=True, separators=(",", ":"))
    for _ in range(5):  # a collision at 96 bits is practically impossible, but never overwrite
        scenario_id = new_scenario_id()
        if db.get(Scenario, scenario_id) is None:
            break
    else:  # pragma: no cover
        raise RuntimeError("could not draw an unused scenario id")
    row = Scenario(
        id=scenario_id,
        explainer=explainer,
        params_json=params_json,
        sim_version=sim_version,
        title=title,
        forked_from=forked_from,
        session_id=owner,
    )
    db.add(row)
    db.commit()
    return row


def get_scenario(*, db: Session, scenario_id: str) -> Scenario | None:
    if not is_scenario_id(scenario_id):
        return None
    return db.get(Scenario, scenario_id)


def scenarios_of(*, db: Session, session_id: str, limit: int = 100) -> list[Scenario]:
    """The scenarios one visitor saved, newest first."""
    stmt = (
        select(Scenario)
        .where(Scenario.session_id == session_id)
        .order_by(col(Scenario.created_at).desc(), col(Scenario.id))
        .limit(limit)
    )
    return list(db.exec(stmt))


# --- visitor sessions ------------------------------------------------------------------------


def create_visitor(*, db: Session) -> VisitorSession:
    row = VisitorSession(id=new_session_id())
    db.add(row)
    db.commit()
    return row


def get_visitor(*, db: Session, session_id: str) -> VisitorSession | None:
    if not is_session_id(session_id):
        return None
    return db.get(VisitorSession, session_id)


def touch_visitor(
    *, db: Session, visitor: VisitorSession, every: timedelta = timedelta(hours=1)
) -> None:
    """Record that the visitor came back; at most one write per ``every`` to keep reads cheap."""
    now = utcnow()
    if now - visitor.last_seen >= every:
        visitor.last_seen = now
        db.add(visitor)
        db.commit()


# --- progress ("continue where you left off") ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProgressRow:
    session_id: str
    walkthrough: str
    step: int
    count: int
    title: str = ""
    url: str = ""


def save_progress_rows(*, engine: Engine, rows: Sequence[ProgressRow]) -> None:
    """Record many visitors' steps in one transaction: one upsert per row (SQLite and
    PostgreSQL alike), no read first. Of two rows for the same visitor and walkthrough the
    later wins (PostgreSQL refuses to upsert one row twice in a statement)."""
    latest = {(r.session_id, r.walkthrough): r for r in rows}
    if not latest:
        return
    now = utcnow()
    values = [
        {
            "session_id": r.session_id,
            "walkthrough": r.walkthrough,
            "step": r.step,
            "count": r.count,
            "title": r.title[:TITLE_MAX],
            "url": r.url[:400],
            "updated_at": now,
        }
        for r in latest.values()
    ]
    table = cast(Table, getattr(Progress, "__table__"))  # noqa: B009 (SQLModel hides it from mypy)
    insert = pg_insert if engine.dialect.name == "postgresql" else sqlite_insert
    stmt = insert(table)
    stmt = stmt.on_conflict_do_update(
        index_elements=["session_id", "walkthrough"],
        set_={c: stmt.excluded[c] for c in ("step", "count", "title", "url", "updated_at")},
    )
    with engine.begin() as conn:
        conn.execute(stmt, values)


def get_progress(*, db: Session, session_id: str, walkthrough: str) -> Progress | None:
    return db.get(Progress, (session_id, walkthrough))


def recent_progress(*, db: Session, session_id: str, limit: int = 20) -> list[Progress]:
    stmt = (
        select(Progress)
        .where(Progress.session_id == session_id)
        .order_by(col(Progress.updated_at).desc())
        .limit(limit)
    )
    return list(db.exec(stmt))


# --- the trace store -------------------------------------------------------------------------


def get_trace_data(*, db: Session, key: str) -> bytes | None:
    row = db.get(StoredTrace, key)
    return row.data if row is not None else None


def stored_trace_count(*, db: Session, keys: Sequence[str]) -> int:
    """How many of ``keys`` have a stored trace (nothing is read but the keys)."""
    if not keys:
        return 0
    stmt = select(StoredTrace.key).where(col(StoredTrace.key).in_(list(keys)))
    return len(set(db.exec(stmt)))


def delete_trace(*, db: Session, key: str) -> None:
    """Forget a stored trace (one that no longer decodes: it is run again and stored anew)."""
    db.execute(delete(StoredTrace).where(col(StoredTrace.key) == key))
    db.commit()


def put_trace_data(*, db: Session, key: str, explainer: str, sim_version: str, data: bytes) -> None:
    """Store a trace once; a concurrent writer of the same key (same content) is not an error."""
    if db.get(StoredTrace, key) is not None:
        return
    db.add(
        StoredTrace(
            key=key, explainer=explainer, sim_version=sim_version, size=len(data), data=data
        )
    )
    try:
        db.commit()
    except IntegrityError:
        db.rollback()


def evict_traces(
    *, db: Session, stored_before: datetime | None, max_bytes: int | None, keep: Collection[str]
) -> tuple[int, int]:
    """Delete the traces stored before ``stored_before``, then the oldest until the rest take
    at most ``max_bytes`` (compressed, as stored); never the ``keep`` keys (they count in the
    total). Answers (traces deleted, bytes left). Cheap when there is nothing to do: one
    DELETE on ``created_at`` and one SUM."""
    kept = list(keep)
    gone = 0
    if stored_before is not None:
        old = delete(StoredTrace).where(col(StoredTrace.created_at) < stored_before)
        if kept:
            old = old.where(col(StoredTrace.key).not_in(kept))
        gone += int(getattr(db.execute(old), "rowcount", 0) or 0)
        db.commit()
    total = int(db.exec(select(func.coalesce(func.sum(StoredTrace.size), 0))).one())
    if max_bytes is None or total <= max_bytes:
        return gone, total
    newest_first = select(StoredTrace.key, StoredTrace.size).order_by(
        col(StoredTrace.created_at).desc(), col(StoredTrace.key)
    )
    rows = [(key, size) for key, size in db.exec(newest_first)]
    keep_set = set(kept)
    budget = max_bytes - sum(size for key, size in rows if key in keep_set)
    victims: list[str] = []
    for key, size in rows:  # the newest that fit stay; from the first that does not, all go
        if key in keep_set:
            continue
        if victims or size > budget:
            victims.append(key)
            total -= size
        else:
            budget -= size
    for start in range(0, len(victims), 500):
        db.execute(
            delete(StoredTrace).where(col(StoredTrace.key).in_(victims[start : start + 500]))
        )
    db.commit()
    return gone + len(victims), total


# --- recordings (a user's own kernel recordings and captures) ----------------------------------


def create_recording(
    *, db: Session, kind: str, title: str, original: bytes, parsed: bytes, owner: str | None
) -> Recording:
    """Store an upload under a fresh unguessable id (``original`` and ``parsed`` compressed)."""
    for _ in range(5):
        recording_id = new_scenario_id()
        if db.get(Recording, recording_id) is None:
            break
    else:  # pragma: no cover
        raise RuntimeError("could not draw an unused recording id")
    row = Recording(
        id=recording_id,
        kind=kind,
        title=title[:TITLE_MAX],
        session_id=owner,
        size=len(original) + len(parsed),
        original=original,
        parsed=parsed,
    )
    db.add(row)
    db.commit()
    return row


def get_recording(*, db: Session, recording_id: str) -> Recording | None:
    if not is_scenario_id(recording_id):
        return None
    return db.get(Recording, recording_id)


@dataclass(frozen=True, slots=True)
class RecordingItem:
    id: str
    kind: str
    title: str
    size: int
    created_at: datetime


def recordings_of(*, db: Session, session_id: str, limit: int = 100) -> list[RecordingItem]:
    """One visitor's recordings, newest first (their bytes are not read)."""
    columns = [col(Recording.id), col(Recording.kind), col(Recording.title), col(Recording.size)]
    stmt = (
        sa_select(*columns, col(Recording.created_at))
        .where(col(Recording.session_id) == session_id)
        .order_by(col(Recording.created_at).desc(), col(Recording.id))
        .limit(limit)
    )
    return [RecordingItem(*row) for row in db.execute(stmt)]


def recording_count(*, db: Session) -> int:
    return int(db.exec(select(func.count()).select_from(Recording)).one())


def evict_recordings(
    *, db: Session, stored_before: datetime | None, max_bytes: int | None, keep: Collection[str]
) -> tuple[int, int]:
    """Delete the recordings stored before ``stored_before``, then the oldest until the rest
    take at most ``max_bytes``; answers (recordings deleted, bytes left). ``keep`` is unused:
    every recording may go (the signature is :func:`evict_traces`'s)."""
    del keep
    gone = 0
    if stored_before is not None:
        old = delete(Recording).where(col(Recording.created_at) < stored_before)
        gone += int(getattr(db.execute(old), "rowcount", 0) or 0)
        db.commit()
    total = int(db.exec(select(func.coalesce(func.sum(Recording.size), 0))).one())
    if max_bytes is None or total <= max_bytes:
        return gone, total
    newest_first = select(Recording.id, Recording.size).order_by(
        col(Recording.created_at).desc(), col(Recording.id)
    )
    budget = max_bytes
    victims: list[str] = []
    for rid, size in db.exec(newest_first):
        if victims or size > budget:
            victims.append(rid)
            total -= size
        else:
            budget -= size
    for start in range(0, len(victims), 500):
        db.execute(delete(Recording).where(col(Recording.id).in_(victims[start : start + 500])))
    db.commit()
    return gone + len(victims), total


# --- expiry of anonymous sessions ------------------------------------------------------------


def expire_sessions(*, db: Session, idle: timedelta, now: datetime | None = None) -> int:
    """Delete sessions unseen for ``idle`` that saved no scenario (with their progress), and
    quota counters older than a day. Answers how many sessions went."""
    now = now or utcnow()
    owns = exists().where(col(Scenario.session_id) == col(VisitorSession.id))
    idle_ids = select(VisitorSession.id).where(col(VisitorSession.last_seen) < now - idle, ~owns)
    gone = list(db.exec(idle_ids))
    for start in range(0, len(gone), 500):
        batch = gone[start : start + 500]
        db.exec(delete(Progress).where(col(Progress.session_id).in_(batch)))
        db.exec(delete(VisitorSession).where(col(VisitorSession.id).in_(batch)))
    day_ago = int(now.timestamp()) - 24 * 3600
    db.exec(delete(RateLimit).where(col(RateLimit.window_start) < day_ago))
    db.commit()
    return len(gone)


# --- quotas ----------------------------------------------------------------------------------

_HIT = text(
    "INSERT INTO rate_limit (key, window_start, hits) VALUES (:key, :window, 1) "
    "ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limit.hits + 1 "
    "RETURNING hits"
)


# The same upsert, refused (no row returned, nothing counted) once the window holds ``cap``.
_HIT_BELOW = text(
    "INSERT INTO rate_limit (key, window_start, hits) VALUES (:key, :window, 1) "
    "ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limit.hits + 1 "
    "WHERE rate_limit.hits < :cap RETURNING hits"
)
_HITS = text("SELECT hits FROM rate_limit WHERE key = :key AND window_start = :window")


def count_hit(*, db: Session, key: str, window_start: int) -> int:
    """Count one hit of ``key`` in the window starting at ``window_start`` (atomically, across
    workers and replicas: one upsert on SQLite and PostgreSQL alike); answers the hits so far."""
    hits = db.connection().execute(_HIT, {"key": key[:80], "window": window_start}).scalar_one()
    db.commit()
    return int(hits)


def hits_since(*, db: Session, key: str, since: int) -> int:
    """Hits of ``key`` counted in windows starting at ``since`` or later."""
    total = db.exec(
        select(func.coalesce(func.sum(RateLimit.hits), 0)).where(
            col(RateLimit.key) == key[:80], col(RateLimit.window_start) >= since
        )
    ).one()
    return int(total)


def address_key(host: str) -> str:
    """The quota key of a client address, hashed (the store keeps no visitor's address)."""
    return "ip:" + hashlib.sha256(host.encode()).hexdigest()[:40]


def take_hit(*, db: Session, key: str, limit: int, window_s: int, now: float) -> int:
    """Count one hit of ``key`` if fewer than ``limit`` fell in the last ``window_s`` seconds;
    answers 0 when counted, else the seconds until one more would be (nothing is counted).

    A sliding window over two fixed ones: the previous window's hits count in proportion to
    how much of it the last ``window_s`` seconds still cover, so no burst at a window's edge
    gets twice the limit (a fixed window lets ``limit`` in just before its end and ``limit``
    again just after). The count is one atomic, conditional upsert, like :func:`count_hit`'s."""
    k = key[:80]
    clock = int(now)
    window = clock - clock % window_s
    used = (clock - window) / window_s  # of the current window
    conn = db.connection()
    prev = conn.execute(_HITS, {"key": k, "window": window - window_s}).scalar_one_or_none() or 0
    cap = limit - int(prev * (1 - used))
    counted = cap > 0 and (
        conn.execute(_HIT_BELOW, {"key": k, "window": window, "cap": cap}).scalar() is not None
    )
    cur = 0 if counted else conn.execute(_HITS, {"key": k, "window": window}).scalar() or 0
    db.commit()
    if counted:
        return 0
    # When prev·(1 − f) + cur falls below the limit, f the part of a window gone by.
    if cur < limit and prev > 0:
        at = window + window_s * (1 - (limit - cur) / prev)
    else:  # this window is full on its own: in the next one it weighs as ``prev`` does now
        at = window + window_s + window_s * (1 - limit / max(cur, limit))
    return max(1, math.floor(at - now) + 1)


# --- jobs shared by the app workers ---------------------------------------------------------


def _job_update(db: Session, key: str, **values: Any) -> int:
    """One UPDATE of a job row. A write that begins as a write: on SQLite in WAL a transaction
    that read first and then writes fails at once ("database is locked", no busy wait) when
    another worker wrote in between; a lone UPDATE waits for the lock instead."""
    result = db.execute(update(SharedJob).where(col(SharedJob.key) == key).values(**values))
    return int(getattr(result, "rowcount", 0) or 0)


def share_job(*, db: Session, key: str, explainer: str, expected_s: float, now: float) -> None:
    """Record a running job (again, if an earlier run of the same key ended)."""
    fresh: dict[str, Any] = {
        "explainer": explainer,
        "state": "running",
        "progress": 0.0,
        "expected_s": expected_s,
        "cancel": False,
        "error": "",
        "started_at": now,
        "seen_at": now,
    }
    if _job_update(db, key, **fresh):
        db.commit()
        return
    db.add(SharedJob(key=key, **fresh))
    try:
        db.commit()
    except IntegrityError:  # another worker shared it at the same moment: theirs stands
        db.rollback()


def report_jobs(*, db: Session, progress: dict[str, float]) -> dict[str, tuple[float, bool]]:
    """The running worker's report: progress of its jobs; answers each job's last interest
    (``seen_at``) and whether a cancel was asked for, as other workers recorded them."""
    out: dict[str, tuple[float, bool]] = {}
    for key, done in progress.items():
        if not _job_update(db, key, progress=done):
            continue
        row = db.exec(select(SharedJob).where(col(SharedJob.key) == key)).first()
        if row is not None:
            out[key] = (row.seen_at, row.cancel)
    db.commit()
    return out


def end_job(*, db: Session, key: str, state: str, error: str = "") -> None:
    values: dict[str, Any] = {"state": state, "error": error[:300]}
    if state == "done":
        values["progress"] = 1.0
    _job_update(db, key, **values)
    db.commit()


def look_at_job(*, db: Session, key: str, now: float, cancel: bool = False) -> SharedJob | None:
    """A job as the workers share it; records the interest (and a cancel request)."""
    values: dict[str, Any] = {
        "seen_at": case((col(SharedJob.seen_at) < now, now), else_=col(SharedJob.seen_at))
    }
    if cancel:
        values["cancel"] = case(
            (col(SharedJob.state) == "running", True), else_=col(SharedJob.cancel)
        )
    if not _job_update(db, key, **values):
        db.rollback()
        return None
    db.commit()
    row = db.exec(select(SharedJob).where(col(SharedJob.key) == key)).first()
    if row is not None:
        db.refresh(row)
    return row


def prune_jobs(*, db: Session, before: float) -> int:
    """Forget jobs nobody asked about since ``before``."""
    result = db.execute(delete(SharedJob).where(col(SharedJob.seen_at) < before))
    db.commit()
    return int(getattr(result, "rowcount", 0) or 0)
