"""Embeds: chrome-free players any origin may frame, with step/controls/theme/autoplay options."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin

SIMS = {p.name: p.sim for p in builtin()}

EXPLAINERS = list(SIMS)
PRESETS = [(e.name, p.slug) for e in SIMS.values() for p in e.presets]
RAW = {
    "ops": [
        {"op": "alloc_skb", "size": 1500},
        {"op": "skb_reserve", "len": 64},
        {"op": "skb_put", "len": 100},
    ]
}


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests only read pages: one app for the module (tests/conftest.py)."""
    return shared_client


def assert_frameable(r: object) -> None:
    assert r.headers["content-security-policy"].endswith("; frame-ancestors *")
    assert "x-frame-options" not in r.headers
    assert "set-cookie" not in r.headers


@pytest.mark.parametrize("name", EXPLAINERS)
def test_every_explainer_embeds_chrome_free_and_frameable(client: TestClient, name: str) -> None:
    """/embed/{explainer} is the default walkthrough without site chrome, frameable, cookie-free."""
    r = client.get(f"/embed/{name}")
    assert r.status_code == 200
    assert_frameable(r)
    html = r.text
    assert 'class="site-header"' not in html and 'id="share-menu"' not in html
    assert 'data-embed="1"' in html and "/static/js/embed.js" in html
    assert re.search(r'<body class="embed', html)
    assert int(re.search(r'data-count="(\d+)"', html).group(1)) >= 1


@pytest.mark.parametrize(("name", "slug"), PRESETS)
def test_every_preset_embeds(client: TestClient, name: str, slug: str) -> None:
    """Each preset has an embed with the same frames as its page."""
    embed = client.get(f"/embed/{name}/presets/{slug}?step=1")
    page = client.get(f"/explainers/{name}/presets/{slug}?step=1")
    assert embed.status_code == 200
    frames = lambda html: re.findall(r'<template id="frame-\d+"', html)  # noqa: E731
    assert frames(embed.text) == frames(page.text)


def test_shared_scenario_embeds_at_a_step(client: TestClient) -> None:
    """/embed/s/{id}?step=N shows the saved scenario at step N."""
    sid = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW}).json()["id"]
    r = client.get(f"/embed/s/{sid}?step=2")
    assert r.status_code == 200
    assert_frameable(r)
    assert 'data-step="2"' in r.text and 'data-count="3"' in r.text
    assert f"/s/{sid}" in r.text  # the "open in Stepscope" link goes to the full page


def test_options_controls_theme_autoplay(client: TestClient) -> None:
    """controls=full/min/none, theme=light/dark/projector and autoplay shape the embed."""
    full = client.get("/embed/skb?controls=full").text
    assert 'id="btn-play"' in full and 'data-controls="full"' in full
    minimal = client.get("/embed/skb?controls=min").text
    assert "controls-min" in minimal and 'id="btn-next"' in minimal
    none = client.get("/embed/skb?controls=none").text
    assert 'id="btn-play"' not in none and 'class="controls' not in none
    assert 'data-theme="light"' in client.get("/embed/skb").text
    for theme in ("light", "dark", "projector"):
        assert (
            f'<html lang="en" data-theme="{theme}">' in client.get(f"/embed/skb?theme={theme}").text
        )
    assert 'data-autoplay="1"' in client.get("/embed/skb?autoplay=true").text
    assert 'data-autoplay="1"' in client.get("/embed/skb?autoplay=1").text
    assert 'data-autoplay=""' in client.get("/embed/skb?autoplay=false").text


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("controls=huge", "controls"),
        ("theme=neon", "theme"),
        ("autoplay=maybe", "autoplay"),
        ("step=-1", "step"),
        ("step=abc", "step"),
    ],
)
def test_bad_options_are_422_naming_the_field(client: TestClient, query: str, field: str) -> None:
    """A bad option value answers 422 naming it (HTML page and JSON alike), still frameable."""
    r = client.get(f"/embed/skb/presets/rx-frame?{query}")
    assert r.status_code == 422
    assert f"query.{field}" in r.text
    assert r.headers["content-security-policy"].endswith("; frame-ancestors *")
    j = client.get(f"/embed/skb?{query}", headers={"accept": "application/json"})
    assert j.status_code == 422 and j.json()["detail"][0]["loc"] == ["query", field]


def test_unknown_embeds_are_404_and_frameable(client: TestClient) -> None:
    """Unknown explainer, preset or scenario: a 404 that can still show inside the iframe."""
    for url in ("/embed/nope", "/embed/skb/presets/nope", "/embed/s/AAAAAAAAAAAAAAAA"):
        r = client.get(url)
        assert r.status_code == 404, url
        assert r.headers["content-security-policy"].endswith("; frame-ancestors *")
    assert 'class="site-header"' not in client.get("/embed/s/AAAAAAAAAAAAAAAA").text


def test_embed_needs_no_cookie_and_ignores_one(client: TestClient) -> None:
    """With or without a session cookie the embed is the same and sets none."""
    plain = client.get("/embed/skb?step=1").text
    client.get("/")  # start a session
    with_cookie = client.get("/embed/skb?step=1")
    assert_frameable(with_cookie)
    assert with_cookie.text == plain


def test_example_deck_embeds_three_scenarios(client: TestClient) -> None:
    """/examples/slides is a reveal.js deck (from npm) with three embedded walkthroughs."""
    r = client.get("/examples/slides")
    assert r.status_code == 200
    assert "/vendor/reveal.js/dist/reveal.js" in r.text and "/static/js/slides.js" in r.text
    srcs = re.findall(r'<iframe class="stepscope"[^>]*src="([^"]+)"', r.text)
    assert len(srcs) == 3
    for src in srcs:
        assert client.get(src.replace("&amp;", "&")).status_code == 200
    for asset in (
        "/vendor/reveal.js/dist/reveal.js",
        "/vendor/reveal.js/dist/reveal.css",
        "/vendor/reveal.js/dist/theme/white.css",
        "/static/js/slides.js",
        "/static/js/embed.js",
    ):
        assert client.get(asset).status_code == 200, asset
