"""A lecture hall's worth of visitors: no session rows for browsing, share quotas, expiry."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func
from sqlmodel import select

from app.main import create_app
from app.settings import Settings
from app.store import migrate, repo
from app.store.models import VisitorSession, utcnow
from app.web.sessions import COOKIE, PROBE_COOKIE

RAW = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}
PRESET = "/explainers/skb/presets/rx-frame"


def rows(client: TestClient) -> int:
    with repo.session_for(client.app.state.engine) as db:
        return int(db.exec(select(func.count()).select_from(VisitorSession)).one())


def share(client: TestClient) -> object:
    return client.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW})


def test_fifty_cookieless_gets_insert_no_session(client: TestClient) -> None:
    """50 page views without cookies (a lecture hall opening a link) store no session row; nor
    do views by a browser that keeps cookies but saves nothing."""
    sid = share(client).json()["id"]
    client.cookies.clear()
    urls = ["/", PRESET, f"/s/{sid}", f"/s/{sid}?step=1", "/my-scenarios"]
    for i in range(50):
        client.cookies.clear()
        assert client.get(urls[i % len(urls)]).status_code == 200
    assert rows(client) == 0
    client.get("/")
    assert client.cookies.get(PROBE_COOKIE) == "1"
    for _ in range(10):
        client.get(PRESET)
        client.post("/api/v1/progress", json={"walkthrough": PRESET, "step": 0})
    assert rows(client) == 0 and COOKIE not in client.cookies


def test_progress_past_step_zero_stores_one_session(client: TestClient) -> None:
    """The first step past 0 stores exactly one session; later steps reuse it."""
    client.get("/")
    for step in range(1, 6):
        r = client.post("/api/v1/progress", json={"walkthrough": PRESET, "step": step})
        assert r.json()["saved"] is True
    assert rows(client) == 1


def test_share_quota_per_session_is_429_with_retry_after(tmp_path: object) -> None:
    """Past share_quota_per_session shares in an hour one browser gets 429 with Retry-After
    (seconds to the end of the hour); another browser from the same address still shares."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/q.db",
        share_quota_per_session=3,
        share_quota_per_client=100,
    )
    app = create_app(settings)
    with TestClient(app) as me, TestClient(app) as other:
        me.get("/")
        codes = [share(me).status_code for _ in range(4)]
        assert codes == [201, 201, 201, 429]
        refused = share(me)
        assert refused.status_code == 429
        retry = int(refused.headers["retry-after"])
        assert 0 < retry <= 3600
        assert abs(retry - (3600 - int(time.time()) % 3600)) <= 5
        assert "3 scenarios" in refused.json()["detail"]
        other.get("/")
        assert share(other).status_code == 201


def test_share_quota_per_client_address_holds_across_workers(tmp_path: object) -> None:
    """Cookie-less clients from one address share at most share_quota_per_client per hour, even
    spread over two app instances (workers) on one database."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/ip.db",
        share_quota_per_session=100,
        share_quota_per_client=5,
    )
    with TestClient(create_app(settings)) as a, TestClient(create_app(settings)) as b:
        codes = [share(a if i % 2 else b).status_code for i in range(7)]
        assert codes == [201] * 5 + [429, 429]
        assert int(b.post("/api/v1/scenarios", json={}).status_code) == 422  # checked first
        assert "retry-after" in share(a).headers


def test_idle_sessions_expire_at_start_up(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m app.store.migrate`` (run by scripts/serve at start-up) expires sessions idle
    for more than session_idle_days that saved nothing."""
    url = f"sqlite:///{tmp_path}/m.db"
    settings = Settings(database_url=url)
    with TestClient(create_app(settings)) as c:
        c.get("/")
        c.post("/api/v1/progress", json={"walkthrough": PRESET, "step": 2})
        assert rows(c) == 1
        with repo.session_for(c.app.state.engine) as db:
            v = db.exec(select(VisitorSession)).one()
            v.last_seen = utcnow() - timedelta(days=settings.session_idle_days + 1)
            db.add(v)
            db.commit()
        monkeypatch.setenv("APP_DATABASE_URL", url)
        migrate.main()
        assert "1 idle sessions expired" in capsys.readouterr().out
        assert rows(c) == 0
