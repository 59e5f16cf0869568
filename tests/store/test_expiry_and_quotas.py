"""Idle anonymous sessions expire; quota counters count atomically; concurrent start-up on a
fresh database; SQLite runs in WAL mode with a busy timeout."""

from __future__ import annotations

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

from sqlalchemy import inspect, text
from sqlmodel import select

from app.store import repo
from app.store.db import BUSY_TIMEOUT_MS, head_revision, init_db, make_engine
from app.store.models import Progress, VisitorSession, utcnow


def test_idle_sessions_without_saved_scenarios_expire(db_url: str) -> None:
    """Sessions unseen for more than 90 days go with their progress, unless they saved a
    scenario; recent sessions stay; old quota counters go too."""
    engine = make_engine(db_url)
    init_db(engine)
    now = utcnow()
    with repo.session_for(engine) as db:
        old, old_owner, recent = (repo.create_visitor(db=db) for _ in range(3))
        for v, age in ((old, 91), (old_owner, 200), (recent, 89)):
            v.last_seen = now - timedelta(days=age)
            db.add(v)
        db.commit()
        repo.save_progress_rows(engine=engine, rows=[repo.ProgressRow(old.id, "/s/x", 3, 9)])
        repo.create_scenario(db=db, explainer="skb", params={}, sim_version="v", owner=old_owner.id)
        stale = int(now.timestamp()) - 2 * 24 * 3600
        repo.count_hit(db=db, key="ip:old", window_start=stale)
        repo.count_hit(db=db, key="ip:new", window_start=int(now.timestamp()))
        gone = repo.expire_sessions(db=db, idle=timedelta(days=90), now=now)
        assert gone == 1
        left = {v.id for v in db.exec(select(VisitorSession))}
        assert left == {old_owner.id, recent.id}
        assert list(db.exec(select(Progress))) == []
        keys = {k for (k,) in db.connection().execute(text("SELECT key FROM rate_limit"))}
        assert keys == {"ip:new"}
        assert repo.expire_sessions(db=db, idle=timedelta(days=90), now=now) == 0
    engine.dispose()


def test_quota_counter_counts_every_hit_under_concurrency(db_url: str) -> None:
    """40 hits from 8 threads (own connections) count to exactly 40: the upsert is atomic."""
    engine = make_engine(db_url)
    init_db(engine)

    def hit(_: int) -> int:
        with repo.session_for(engine) as db:
            return repo.count_hit(db=db, key="session:abc", window_start=3600)

    with ThreadPoolExecutor(8) as pool:
        seen = sorted(pool.map(hit, range(40)))
    assert seen == list(range(1, 41))
    with repo.session_for(engine) as db:
        assert repo.count_hit(db=db, key="session:abc", window_start=7200) == 1
    engine.dispose()


STARTER = """
import sys, time
from app.store.db import init_db, make_engine
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
init_db(make_engine(sys.argv[1]))
"""


def test_workers_starting_together_on_a_fresh_database_do_not_race(db_url: str) -> None:
    """Four processes upgrading the same fresh database at the same instant all succeed (one
    migrates, under a lock; the others find the schema at head)."""
    start = time.time() + 3.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", STARTER, db_url, str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err[-2000:]
    engine = make_engine(db_url)
    assert {"scenario", "visitor_session", "progress", "rate_limit"} <= set(
        inspect(engine).get_table_names()
    )
    with engine.connect() as conn:
        versions = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    assert versions == [(head_revision(),)]
    engine.dispose()


def test_sqlite_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    """A file-backed SQLite engine opens connections in WAL mode with a 5 s busy timeout."""
    engine = make_engine(f"sqlite:///{tmp_path / 'wal.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
        assert conn.execute(text("PRAGMA busy_timeout")).scalar_one() == BUSY_TIMEOUT_MS == 5000
    engine.dispose()


def test_sliding_window_quota_has_no_burst_at_a_window_edge(db_url: str) -> None:
    """take_hit allows ``limit`` hits in any window-long stretch, not ``limit`` on each side of a
    fixed window's edge; a refused hit is not counted, and its Retry-After is exact: one second
    earlier is still refused, at that time a hit is allowed."""
    engine = make_engine(db_url)
    init_db(engine)

    def take(now: float) -> int:
        with repo.session_for(engine) as db:
            return repo.take_hit(db=db, key="runs:x", limit=4, window_s=60, now=now)

    t0 = 6000.0  # a window starts here
    assert [take(t0 + 50 + i) for i in range(4)] == [0, 0, 0, 0]
    assert take(t0 + 55) == 6  # the last 60 s hold 4 hits until t0 + 61
    # Past the edge the previous window's 4 hits weigh 4 × (1 − f): at f = 0 nothing fits, then
    # one (a fixed window would let 4 more in at once).
    assert take(t0 + 60) == 1
    assert take(t0 + 61) == 0
    assert take(t0 + 62) == 14  # 4 × (1 − f) + 1 < 4 once f > 1/4, i.e. after t0 + 75
    assert take(t0 + 75) == 1  # exact: one second early is still refused ...
    assert take(t0 + 76) == 0  # ... and then it fits
    with repo.session_for(engine) as db:  # the refused hits were not counted
        assert repo.count_hit(db=db, key="runs:x", window_start=int(t0) + 60) == 3
    engine.dispose()
