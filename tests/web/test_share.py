"""Shareable scenario links: POST /api/v1/scenarios, GET the record, /s/{id}, fork, 404s."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.main import create_app
from app.settings import Settings
from app.store import repo
from app.web.sources import decode_params

SIMS = {p.name: p.sim for p in builtin()}

RAW = {
    "ops": [
        {"op": "alloc_skb", "size": 1500},
        {"op": "skb_reserve", "len": 64},
        {"op": "skb_put", "len": 100},
    ]
}
EXPLAINERS = list(SIMS)


@pytest.fixture
def settings(db_url: str) -> Settings:
    """Every share test runs on SQLite and on PostgreSQL (``db_url`` in tests/conftest.py)."""
    return Settings(database_url=db_url)


@pytest.fixture
def client(module_db_client: TestClient) -> TestClient:
    """One app per database for the module (tests/conftest.py), each test a new visitor: an
    app and a database per test cost more than these tests. Links made by one test stay in the
    database, as other visitors' links do; none of these tests counts the stored ones."""
    module_db_client.cookies.clear()
    return module_db_client


def share(client: TestClient, body: dict) -> object:
    return client.post("/api/v1/scenarios", json=body)


def shared_id(client: TestClient, params: object = RAW, **extra: object) -> str:
    r = share(client, {"explainer": "skb", "params": params, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def count_of(html: str) -> int:
    return int(re.search(r'data-count="(\d+)"', html).group(1))


def test_create_returns_201_with_short_unguessable_id_and_link(client: TestClient) -> None:
    """POST answers 201 {id, url}: id ≥ 10 URL-safe characters, url /s/{id}, Location set."""
    r = share(client, {"explainer": "skb", "params": RAW, "title": "Reserve then put"})
    assert r.status_code == 201
    body = r.json()
    assert re.fullmatch(r"[A-Za-z0-9_-]{10,}", body["id"])
    assert body["url"] == f"/s/{body['id']}"
    assert r.headers["location"] == body["url"]
    other = shared_id(client)
    assert other != body["id"]


def test_record_holds_canonical_params_version_title_and_time(client: TestClient) -> None:
    """The stored record has explainer, params as parse→dump made them, sim_version, title, time."""
    ex = SIMS.get("skb")
    verbose = {
        "ops": [{"op": "alloc_skb", "size": 1500, "skb": "skb"}, {"op": "skb_reserve", "len": 64}]
    }
    sid = shared_id(client, verbose, title="Verbose")
    rec = client.get(f"/api/v1/scenarios/{sid}").json()
    assert rec["params"] == ex.dump(ex.parse(verbose))
    assert rec["params"] != verbose  # the redundant default "skb" is not stored
    assert rec["explainer"] == "skb" and rec["sim_version"] == ex.sim_version
    assert rec["title"] == "Verbose" and rec["forked_from"] is None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rec["created_at"])
    assert "session_id" not in rec


def test_invalid_params_are_422_exactly_like_a_run(client: TestClient) -> None:
    """Bad params answer 422 with the run's own messages, located under body.params."""
    bad = {"ops": [{"op": "alloc_skb", "size": -1}, {"op": "skb_put"}]}
    run = client.post("/api/v1/explainers/skb/run", json=bad)
    saved = share(client, {"explainer": "skb", "params": bad})
    assert run.status_code == saved.status_code == 422
    run_issues = [(d["loc"][1:], d["msg"]) for d in run.json()["detail"]]
    saved_issues = [(d["loc"][2:], d["msg"]) for d in saved.json()["detail"]]
    assert saved_issues == run_issues
    for d in saved.json()["detail"]:
        assert d["loc"][:2] == ["body", "params"]
    assert ["body", "params", "ops", 0, "size"] in [d["loc"] for d in saved.json()["detail"]]


@pytest.mark.parametrize("params", [None, 7, "ops", [], {"ops": "nope"}])
def test_malformed_params_are_422_naming_params(client: TestClient, params: object) -> None:
    """Params of the wrong shape are a 422 naming params, never a 500."""
    r = share(client, {"explainer": "skb", "params": params})
    assert r.status_code == 422
    assert all(d["loc"][:2] == ["body", "params"] for d in r.json()["detail"])


def test_unknown_explainer_missing_fields_and_extras_are_422(client: TestClient) -> None:
    """Unknown explainer names 'explainer'; missing params names 'params'; unknown keys are named."""
    r = share(client, {"explainer": "nope", "params": RAW})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "explainer"]
    assert "skb" in r.json()["detail"][0]["msg"]
    r = share(client, {"explainer": "skb"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "params"]
    r = share(client, {"explainer": "skb", "params": RAW, "colour": "red"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "colour"]
    r = client.post(
        "/api/v1/scenarios", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422


def test_title_limit_is_200_characters(client: TestClient) -> None:
    """A 200-character title is kept; 201 characters is a 422 naming title."""
    assert share(client, {"explainer": "skb", "params": RAW, "title": "t" * 200}).status_code == 201
    r = share(client, {"explainer": "skb", "params": RAW, "title": "t" * 201})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "title"]
    r = share(client, {"explainer": "skb", "params": RAW, "title": 5})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "title"]


def test_title_is_stored_verbatim_and_shown_escaped(client: TestClient) -> None:
    """Markup in a title is data: the API returns it as typed, the page shows it escaped."""
    title = '<script>alert("x")</script> & <b>bold</b>'
    sid = shared_id(client, title=title)
    assert client.get(f"/api/v1/scenarios/{sid}").json()["title"] == title
    html = client.get(f"/s/{sid}").text
    assert "<script>alert(" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(" in html and "&lt;b&gt;bold&lt;/b&gt;" in html


def test_shared_page_shows_that_scenario_at_that_step(client: TestClient) -> None:
    """/s/{id}?step=N renders the saved scenario's frame N; past the end shows the last frame."""
    sid = shared_id(client, title="Three ops")
    html = client.get(f"/s/{sid}?step=2").text
    assert count_of(html) == 3 and 'data-step="2"' in html and "Three ops" in html
    assert 'id="step-no">2<' in html
    assert f'data-walkthrough="/s/{sid}"' in html
    assert 'data-step="2"' in client.get(f"/s/{sid}?step=99").text
    assert client.get(f"/s/{sid}?step=-1").status_code == 422
    assert client.get(f"/s/{sid}?step=two").status_code == 422


def test_share_survives_a_server_restart(settings: Settings) -> None:
    """A link made by one server process opens on a new one with the same database."""
    with TestClient(create_app(settings)) as first:
        sid = shared_id(first, title="Before restart")
        before = first.get(f"/s/{sid}?step=1").text
    with TestClient(create_app(settings)) as second:
        after = second.get(f"/s/{sid}?step=1")
        assert after.status_code == 200
        assert "Before restart" in after.text
        frames = lambda html: re.findall(r'<template id="frame-\d+".*?</template>', html, re.S)  # noqa: E731
        assert frames(after.text) == frames(before)
        assert second.get(f"/api/v1/scenarios/{sid}").json()["params"] == RAW


def test_unknown_ids_answer_a_helpful_404(client: TestClient) -> None:
    """Unknown ids: the API answers JSON 404; the page explains ids and links home."""
    r = client.get("/api/v1/scenarios/AAAAAAAAAAAAAAAA")
    assert r.status_code == 404 and "AAAAAAAAAAAAAAAA" in r.json()["detail"]
    page = client.get("/s/AAAAAAAAAAAAAAAA")
    assert page.status_code == 404
    assert 'href="/"' in page.text and "case-sensitive" in page.text
    cut = client.get("/s/abc")
    assert cut.status_code == 404 and "16 characters" in cut.text
    assert client.get("/s/abc/fork").status_code == 404
    assert client.get("/api/v1/scenarios/" + "x" * 300).status_code == 404


def test_older_sim_version_still_opens_with_a_note(client: TestClient) -> None:
    """A scenario saved under an older sim_version is re-run and says the simulation changed."""
    engine = client.app.state.engine
    with repo.session_for(engine) as db:
        old = repo.create_scenario(db=db, explainer="skb", params=RAW, sim_version="skb-0")
    html = client.get(f"/s/{old.id}").text
    assert 'id="sim-changed"' in html and "skb-0" in html and count_of(html) == 3
    current = shared_id(client)
    assert 'id="sim-changed"' not in client.get(f"/s/{current}").text


def test_saved_params_the_simulation_now_refuses_answer_422(client: TestClient) -> None:
    """If today's simulation rejects saved params, the page is a 422 naming them, not a 500."""
    with repo.session_for(client.app.state.engine) as db:
        row = repo.create_scenario(
            db=db, explainer="skb", params={"ops": [{"op": "gone_op"}]}, sim_version="skb-0"
        )
    r = client.get(f"/s/{row.id}")
    assert r.status_code == 422 and "params.ops.0" in r.text


def test_fork_opens_the_editor_and_saving_makes_a_new_id(client: TestClient) -> None:
    """Fork redirects to the editor with the params; saving the copy records forked_from."""
    sid = shared_id(client, title="Original")
    r = client.get(f"/s/{sid}/fork", follow_redirects=False)
    assert r.status_code == 303
    target = r.headers["location"]
    assert target.startswith("/explainers/skb/edit?p=")
    token = re.search(r"p=([^&]+)", target).group(1)
    assert decode_params(token) == RAW
    assert client.get(target).status_code == 200
    child = shared_id(client, {"ops": RAW["ops"][:2]}, forked_from=sid, title="Fork")
    assert child != sid
    assert client.get(f"/api/v1/scenarios/{child}").json()["forked_from"] == sid
    assert f'href="/s/{sid}"' in client.get(f"/s/{child}").text
    r = share(client, {"explainer": "skb", "params": RAW, "forked_from": "AAAAAAAAAAAAAAAA"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "forked_from"]


@pytest.mark.parametrize("name", EXPLAINERS)
def test_every_explainer_can_be_shared_and_reopened(client: TestClient, name: str) -> None:
    """Each registered explainer's default walkthrough round-trips through a share link."""
    ex = SIMS.get(name)
    preset = ex.preset(ex.default_preset)
    r = share(
        client, {"explainer": name, "params": dict(preset.params), "title": str(preset.title)}
    )
    assert r.status_code == 201
    page = client.get(r.json()["url"])
    expected = client.get(f"/explainers/{name}/presets/{preset.slug}")
    assert page.status_code == 200
    assert count_of(page.text) == count_of(expected.text)


def test_player_pages_offer_share_embed_and_export(client: TestClient) -> None:
    """Preset, custom and shared players carry Share, Embed and Export for their scenario."""
    html = client.get("/explainers/skb/presets/rx-frame?step=2").text
    assert 'id="share-form"' in html and 'id="embed-menu"' in html
    assert "/export/svg?explainer=skb&amp;preset=rx-frame&amp;step=2" in html
    assert 'data-path="/embed/skb/presets/rx-frame"' in html
    sid = shared_id(client)
    shared = client.get(f"/s/{sid}").text
    assert f"/export/png?scenario={sid}" in shared and f'data-path="/embed/s/{sid}"' in shared
    assert 'id="share-url"' in shared and 'id="fork-link"' in shared


def test_shared_walkthrough_keeps_its_lesson_and_notes(client: TestClient) -> None:
    """A walkthrough shared unchanged keeps its lesson intro and "what to notice" notes; a
    changed one does not pretend to be the walkthrough."""
    preset = SIMS["skb"].preset("rx-frame")
    r = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": dict(preset.params)})
    assert 'class="lesson-intro"' in client.get(r.json()["url"] + "?step=0").text
    notes = [
        n for n in range(12) if 'class="notice"' in client.get(f"{r.json()['url']}?step={n}").text
    ]
    assert notes, "no step of the shared walkthrough shows its lesson's notes"
    changed = {"ops": [*preset.params["ops"], {"op": "skb_put", "len": 1}]}
    r2 = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": changed})
    assert 'class="lesson-intro"' not in client.get(r2.json()["url"]).text
