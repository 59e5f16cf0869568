"""The recording table: unguessable ids, one visitor's list, eviction by age and by size."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlmodel import Session

from app.store import repo
from app.store.db import init_db, make_engine
from app.store.eviction import TraceEviction
from app.store.models import Recording, utcnow


@pytest.fixture
def db(db_url: str) -> Iterator[Session]:
    engine = make_engine(db_url)
    init_db(engine)
    with repo.session_for(engine) as session:
        yield session
    engine.dispose()


def add(db: Session, owner: str | None = None, size: int = 10) -> Recording:
    return repo.create_recording(
        db=db, kind="capture", title="t", original=b"o" * size, parsed=b"p" * size, owner=owner
    )


def test_create_get_and_list(db: Session) -> None:
    mine = [add(db, owner="visitor_aaaaaaaaaaaaaaaaaaaa") for _ in range(3)]
    add(db, owner=None)
    assert len({r.id for r in mine}) == 3 and all(repo.is_scenario_id(r.id) for r in mine)
    got = repo.get_recording(db=db, recording_id=mine[0].id)
    assert got is not None and got.original == b"o" * 10 and got.size == 20
    listed = repo.recordings_of(db=db, session_id="visitor_aaaaaaaaaaaaaaaaaaaa")
    assert {r.id for r in listed} == {r.id for r in mine}
    assert repo.get_recording(db=db, recording_id="../etc") is None
    assert repo.recording_count(db=db) == 4


def test_eviction_by_age_then_size(db: Session) -> None:
    old = add(db)
    old.created_at = utcnow() - timedelta(days=40)
    db.add(old)
    db.commit()
    rows = [add(db, size=300_000) for _ in range(4)]  # 600,000 bytes each as stored
    gone, left = repo.evict_recordings(
        db=db, stored_before=utcnow() - timedelta(days=30), max_bytes=1_300_000, keep=()
    )
    assert gone == 3 and left == 1_200_000
    kept = [r.id for r in rows if repo.get_recording(db=db, recording_id=r.id) is not None]
    assert kept == [r.id for r in rows[-2:]] or len(kept) == 2  # the newest stay
    assert repo.get_recording(db=db, recording_id=old.id) is None


def test_the_eviction_object_runs_on_recordings(db: Session) -> None:
    for _ in range(3):
        add(db, size=400_000)
    eviction = TraceEviction(
        db.get_bind(),  # type: ignore[arg-type]
        max_mb=1,
        max_days=0,
        evict=repo.evict_recordings,
        what="recordings",
        first_after_s=0,
    )
    gone, left = eviction.run()
    assert gone == 2 and left <= 1024 * 1024 and repo.recording_count(db=db) == 1
