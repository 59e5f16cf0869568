"""Anonymous sessions: the cookie, progress ("continue where you left off"), "my scenarios"."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import select

from app.main import create_app
from app.settings import Settings
from app.store import repo
from app.store.models import VisitorSession
from app.web.sessions import COOKIE, PROBE_COOKIE

PRESET = "/explainers/skb/presets/rx-frame"
RAW = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}


def visitors(client: TestClient) -> list[str]:
    with repo.session_for(client.app.state.engine) as db:
        return [v.id for v in db.exec(select(VisitorSession))]


def progress(client: TestClient, walkthrough: str, step: int) -> object:
    return client.post("/api/v1/progress", json={"walkthrough": walkthrough, "step": step})


def test_first_visit_stores_nothing_until_progress_worth_keeping(client: TestClient) -> None:
    """A first page sets only the probe cookie (no row); the first step past 0 stores a session
    and sets its HttpOnly, SameSite=Lax cookie (not Secure over http)."""
    r = client.get("/")
    assert r.headers["set-cookie"].startswith(f"{PROBE_COOKIE}=1")
    assert visitors(client) == []
    assert progress(client, PRESET, 0).json()["saved"] is False  # step 0 is not worth a row
    assert visitors(client) == []
    r = progress(client, PRESET, 2)
    assert r.json()["saved"] is True
    header = r.headers["set-cookie"]
    assert header.startswith(f"{COOKIE}=")
    lowered = header.lower()
    assert "httponly" in lowered and "samesite=lax" in lowered and "path=/" in lowered
    assert "secure" not in lowered
    sid = client.cookies[COOKIE]
    assert visitors(client) == [sid]
    again = client.get(PRESET)
    assert "set-cookie" not in again.headers
    assert visitors(client) == [sid]


def test_cookie_is_secure_over_https(settings: Settings) -> None:
    """Served over HTTPS, the session cookie carries Secure."""
    with TestClient(create_app(settings), base_url="https://testserver") as c:
        assert "secure" in c.get("/").headers["set-cookie"].lower()


def test_api_embed_export_and_static_never_set_cookies(client: TestClient) -> None:
    """Only pages start a session; the API, embeds, exports, assets and errors don't."""
    for url in (
        "/api/v1/explainers",
        "/embed/skb",
        "/export/json?explainer=skb",
        "/static/css/app.css",
        "/no/such/page",
    ):
        assert "set-cookie" not in client.get(url).headers, url
    assert visitors(client) == []


def test_unknown_or_forged_cookie_gets_a_fresh_session(client: TestClient) -> None:
    """A cookie naming no stored session is replaced by a new one, never adopted."""
    client.cookies.set(COOKIE, "forged-session-id-that-is-long-enough")
    client.get("/")
    r = progress(client, PRESET, 1)
    new = r.headers["set-cookie"].split(";")[0].split("=", 1)[1]
    assert new != "forged-session-id-that-is-long-enough"
    assert visitors(client) == [new]


def test_progress_offers_continue_where_you_left_off(client: TestClient) -> None:
    """After reaching step 4, the walkthrough offers "Continue at step 4" (not when ?step is given)."""
    client.get("/")
    r = progress(client, PRESET, 4)
    assert r.status_code == 200 and r.json()["saved"] is True and r.json()["count"] >= 5
    html = client.get(PRESET).text
    assert 'id="resume-link"' in html and "Continue at step 4" in html and 'href="?step=4"' in html
    assert 'id="resume-link"' not in client.get(PRESET + "?step=1").text
    progress(client, PRESET, 0)
    assert 'id="resume-link"' not in client.get(PRESET).text


def test_progress_on_a_shared_scenario_and_my_scenarios(client: TestClient) -> None:
    """Shared scenarios record progress under /s/{id}; "my scenarios" lists them and the progress."""
    client.get("/")
    sid = client.post(
        "/api/v1/scenarios", json={"explainer": "skb", "params": RAW, "title": "Mine"}
    ).json()["id"]
    assert progress(client, f"/s/{sid}", 1).json()["saved"] is True
    assert "Continue at step 1" in client.get(f"/s/{sid}").text
    page = client.get("/my-scenarios").text
    assert f'href="/s/{sid}"' in page and "Mine" in page
    assert f'href="/s/{sid}?step=1"' in page


def test_my_scenarios_are_per_browser(settings: Settings) -> None:
    """Another browser (another cookie) doesn't see my scenarios, but can open the link."""
    app = create_app(settings)
    with TestClient(app) as me, TestClient(app) as other:
        me.get("/")
        other.get("/")
        sid = me.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW}).json()["id"]
        assert f"/s/{sid}" in me.get("/my-scenarios").text
        assert f"/s/{sid}" not in other.get("/my-scenarios").text
        assert other.get(f"/s/{sid}").status_code == 200


def test_nothing_breaks_with_cookies_disabled(client: TestClient) -> None:
    """A browser that drops cookies can view, share and step; progress is simply not kept."""

    def fresh(url: str, method: str = "get", **kw: object) -> object:
        client.cookies.clear()
        return getattr(client, method)(url, **kw)

    assert fresh("/").status_code == 200
    assert fresh(PRESET).status_code == 200
    r = fresh("/api/v1/progress", "post", json={"walkthrough": PRESET, "step": 3})
    assert r.status_code == 200 and r.json()["saved"] is False
    created = fresh("/api/v1/scenarios", "post", json={"explainer": "skb", "params": RAW})
    assert created.status_code == 201
    assert fresh(created.json()["url"]).status_code == 200
    mine = fresh("/my-scenarios")
    assert mine.status_code == 200 and "does not keep cookies" in mine.text
    assert 'id="resume-link"' not in fresh(PRESET).text


def test_progress_bad_input_is_422_naming_the_field(client: TestClient) -> None:
    """Unknown walkthroughs, steps past the end and missing fields are 422s naming the field."""
    client.get("/")
    cases = [
        ({"walkthrough": "/explainers/skb/presets/nope", "step": 1}, ["body", "walkthrough"]),
        ({"walkthrough": "https://evil.example/", "step": 1}, ["body", "walkthrough"]),
        ({"walkthrough": "/s/AAAAAAAAAAAAAAAA", "step": 1}, ["body", "walkthrough"]),
        ({"walkthrough": PRESET, "step": 9999}, ["body", "step"]),
        ({"walkthrough": PRESET, "step": -1}, ["body", "step"]),
        ({"walkthrough": PRESET, "step": "x"}, ["body", "step"]),
        ({"step": 1}, ["body", "walkthrough"]),
        ({"walkthrough": PRESET, "step": 1, "url": "javascript:alert(1)"}, ["body", "url"]),
    ]
    for body, loc in cases:
        r = client.post("/api/v1/progress", json=body)
        assert r.status_code == 422, body
        assert r.json()["detail"][0]["loc"] == loc, body


def test_sessions_survive_a_restart(tmp_path: Path) -> None:
    """The session cookie still finds its progress after the server restarts."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 's.db'}")
    with TestClient(create_app(settings)) as c:
        c.get("/")
        progress(c, PRESET, 2)
        cookie = c.cookies[COOKIE]
    with TestClient(create_app(settings)) as c:
        c.cookies.set(COOKIE, cookie)
        r = c.get(PRESET)
        assert "set-cookie" not in r.headers and "Continue at step 2" in r.text


def test_home_lists_walkthroughs_to_continue(client: TestClient) -> None:
    """The home page offers to continue a walkthrough at the step this browser reached."""
    client.get("/")
    assert 'id="continue-0"' not in client.get("/").text
    progress(client, PRESET, 3)
    html = client.get("/").text
    assert 'id="continue-0"' in html and f'href="{PRESET}?step=3"' in html
