"""The store's keyword-only functions: immutable scenarios, visitor sessions, progress."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from sqlmodel import Session

from app.store import repo
from app.store.db import init_db, make_engine
from app.store.models import Scenario


@pytest.fixture
def db(db_url: str) -> Iterator[Session]:
    """A session on a fresh database: SQLite and PostgreSQL (see tests/conftest.py)."""
    engine = make_engine(db_url)
    init_db(engine)
    with repo.session_for(engine) as session:
        yield session
    engine.dispose()


def test_scenario_ids_are_short_url_safe_and_unguessable() -> None:
    """Ids are ≥ 10 URL-safe characters drawn from secrets (1000 draws never repeat)."""
    ids = {repo.new_scenario_id() for _ in range(1000)}
    assert len(ids) == 1000
    for sid in ids:
        assert re.fullmatch(r"[A-Za-z0-9_-]{10,32}", sid)
        assert repo.is_scenario_id(sid)


def test_create_and_get_scenario_round_trip(db: Session) -> None:
    """A saved scenario keeps explainer, params, sim_version, title, forked-from and a created time."""
    parent = repo.create_scenario(db=db, explainer="skb", params={"ops": []}, sim_version="skb-1")
    row = repo.create_scenario(
        db=db,
        explainer="skb",
        params={"ops": [{"op": "alloc_skb", "size": 9}]},
        sim_version="skb-1",
        title="Tiny",
        forked_from=parent.id,
        owner=None,
    )
    got = repo.get_scenario(db=db, scenario_id=row.id)
    assert got is not None
    assert json.loads(got.params_json) == {"ops": [{"op": "alloc_skb", "size": 9}]}
    assert (got.explainer, got.sim_version, got.title, got.forked_from) == (
        "skb",
        "skb-1",
        "Tiny",
        parent.id,
    )
    assert got.created_at is not None


def test_get_scenario_rejects_malformed_ids(db: Session) -> None:
    """Malformed or unknown ids find nothing (and never reach SQL as odd strings)."""
    for bad in ("", "short", "x" * 200, "../../etc", "abc def ghi jk"):
        assert repo.get_scenario(db=db, scenario_id=bad) is None
    assert repo.get_scenario(db=db, scenario_id="A" * 16) is None


def test_title_longer_than_200_is_refused(db: Session) -> None:
    """The store itself refuses a title over 200 characters."""
    with pytest.raises(ValueError, match="200"):
        repo.create_scenario(db=db, explainer="skb", params={}, sim_version="v", title="x" * 201)


def test_visitor_scenarios_and_progress(db: Session) -> None:
    """Each visitor sees only their own scenarios; progress is upserted per walkthrough."""
    a = repo.create_visitor(db=db)
    b = repo.create_visitor(db=db)
    assert repo.is_session_id(a.id) and a.id != b.id
    mine = repo.create_scenario(db=db, explainer="skb", params={}, sim_version="v", owner=a.id)
    repo.create_scenario(db=db, explainer="skb", params={}, sim_version="v", owner=b.id)
    assert [s.id for s in repo.scenarios_of(db=db, session_id=a.id)] == [mine.id]
    engine = db.get_bind()
    for step in (2, 4):
        row = repo.ProgressRow(a.id, "/s/x", step, 5, "T", "/s/x")
        repo.save_progress_rows(engine=engine, rows=[row])  # type: ignore[arg-type]
    db.expire_all()
    got = repo.get_progress(db=db, session_id=a.id, walkthrough="/s/x")
    assert got is not None and got.step == 4
    assert [p.step for p in repo.recent_progress(db=db, session_id=a.id)] == [4]
    assert repo.get_progress(db=db, session_id=b.id, walkthrough="/s/x") is None
    assert repo.get_visitor(db=db, session_id=a.id) is not None
    assert repo.get_visitor(db=db, session_id="not a session") is None


def test_scenarios_are_never_overwritten(db: Session) -> None:
    """Two saves of the same params make two records with different ids."""
    one = repo.create_scenario(db=db, explainer="skb", params={"ops": []}, sim_version="v")
    two = repo.create_scenario(db=db, explainer="skb", params={"ops": []}, sim_version="v")
    assert one.id != two.id
    assert db.get(Scenario, one.id) is not None and db.get(Scenario, two.id) is not None


def test_shared_jobs_carry_progress_interest_cancel_and_end(db: Session) -> None:
    """A job shared by the worker running it: other workers read its progress, record their
    interest (seen_at only grows) and a cancel request, which the running worker's report
    hands back; its end is recorded; old jobs are pruned by their last interest."""
    repo.share_job(db=db, key="k1", explainer="cwnd", expected_s=4.0, now=100.0)
    assert repo.report_jobs(db=db, progress={"k1": 0.25, "gone": 0.5}) == {"k1": (100.0, False)}
    row = repo.look_at_job(db=db, key="k1", now=103.0)
    assert row is not None and row.progress == 0.25 and row.state == "running"
    assert repo.look_at_job(db=db, key="k1", now=101.0).seen_at == 103.0
    repo.look_at_job(db=db, key="k1", now=104.0, cancel=True)
    assert repo.report_jobs(db=db, progress={"k1": 0.5}) == {"k1": (104.0, True)}
    repo.end_job(db=db, key="k1", state="cancelled")
    ended = repo.look_at_job(db=db, key="k1", now=105.0, cancel=True)
    assert ended.state == "cancelled" and ended.progress == 0.5
    repo.share_job(db=db, key="k1", explainer="cwnd", expected_s=4.0, now=200.0)  # run again
    again = repo.look_at_job(db=db, key="k1", now=200.0)
    assert again.state == "running" and again.progress == 0.0 and not again.cancel
    repo.end_job(db=db, key="k1", state="done")
    assert repo.look_at_job(db=db, key="k1", now=201.0).progress == 1.0
    repo.share_job(db=db, key="k2", explainer="tcp", expected_s=2.0, now=150.0)
    assert repo.prune_jobs(db=db, before=180.0) == 1
    assert repo.look_at_job(db=db, key="k2", now=300.0) is None
    assert repo.look_at_job(db=db, key="k1", now=300.0) is not None


def test_progress_rows_of_many_visitors_are_saved_in_one_upsert(db: Session) -> None:
    """save_progress_rows: new rows are inserted, existing ones updated, and of two rows for
    the same visitor and walkthrough in one batch the later wins (on PostgreSQL too, which
    refuses to upsert a row twice in one statement)."""
    a = repo.create_visitor(db=db)
    b = repo.create_visitor(db=db)
    engine = db.get_bind()
    first = [repo.ProgressRow(a.id, "/s/x", 1, 9)]
    repo.save_progress_rows(engine=engine, rows=first)  # type: ignore[arg-type]
    rows = [
        repo.ProgressRow(a.id, "/s/x", 3, 9, "X", "/s/x"),
        repo.ProgressRow(b.id, "/s/x", 2, 9, "X", "/s/x"),
        repo.ProgressRow(a.id, "/s/y", 5, 6, "Y" * 300, "/s/y"),
        repo.ProgressRow(a.id, "/s/x", 4, 9, "X", "/s/x"),
    ]
    repo.save_progress_rows(engine=engine, rows=rows)  # type: ignore[arg-type]
    repo.save_progress_rows(engine=engine, rows=[])  # type: ignore[arg-type]
    db.expire_all()
    got = {
        (p.session_id, p.walkthrough): p
        for sid in (a.id, b.id)
        for p in repo.recent_progress(db=db, session_id=sid)
    }
    assert {k: p.step for k, p in got.items()} == {
        (a.id, "/s/x"): 4,
        (b.id, "/s/x"): 2,
        (a.id, "/s/y"): 5,
    }
    assert len(got[(a.id, "/s/y")].title) == repo.TITLE_MAX
    assert got[(a.id, "/s/x")].count == 9 and got[(a.id, "/s/x")].url == "/s/x"
