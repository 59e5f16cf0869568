"""Pages: home, the player at a step, custom links, and errors that help instead of crashing."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.web.player import FRAME_WINDOW, PICTURE_BUDGET
from app.web.sources import decode_params, encode_params

SIMS = {p.name: p.sim for p in builtin()}

PRESETS = [(e.name, p.slug) for e in SIMS.values() for p in e.presets]


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests only read pages: one app for the module (tests/conftest.py)."""
    return shared_client


def test_home_lists_explainers_and_walkthroughs(client: TestClient) -> None:
    """The home page links every explainer and every preset walkthrough."""
    html = client.get("/").text
    for name, slug in PRESETS:
        assert f"/explainers/{name}/presets/{slug}" in html


@pytest.mark.parametrize(("name", "slug"), PRESETS)
def test_every_preset_page_embeds_its_frames(client: TestClient, name: str, slug: str) -> None:
    """Each walkthrough page embeds its frames (a window of long ones) and shows step 0."""
    r = client.get(f"/explainers/{name}/presets/{slug}")
    assert r.status_code == 200
    count = int(re.search(r'data-count="(\d+)"', r.text).group(1))
    assert count >= 1
    embedded = len(re.findall(r'<template id="frame-\d+"', r.text))
    assert 1 <= embedded <= min(count, FRAME_WINDOW)
    if embedded < min(count, FRAME_WINDOW):  # only when the window's pictures are too big
        templates = re.findall(r'<template id="frame-\d+"[^>]*>(.*?)</template>', r.text, re.S)
        assert sum(map(len, templates)) > PICTURE_BUDGET * 0.8
    assert 'data-step="0"' in r.text
    if count > embedded:  # the rest come from the frames endpoint
        rest = client.get(f"/explainers/{name}/frames?preset={slug}&start={embedded}&count=5").text
        assert f'<template id="frame-{embedded}"' in rest


def test_step_query_selects_the_shown_frame(client: TestClient) -> None:
    """?step=N renders frame N server-side, so reload and copied links land on the same step."""
    html = client.get("/explainers/skb/presets/rx-frame?step=2").text
    assert 'data-step="2"' in html
    assert 'id="step-no">2<' in html


def test_step_beyond_the_end_is_clamped(client: TestClient) -> None:
    """A step past the last frame shows the last frame rather than failing."""
    html = client.get("/explainers/skb/presets/panic?step=9999").text
    count = int(re.search(r'data-count="(\d+)"', html).group(1))
    assert f'data-step="{count - 1}"' in html


def test_frames_name_the_kernel_function_with_elixir_link(client: TestClient) -> None:
    """Every frame links its modelled function to the Linux 6.4 source on elixir.bootlin.com."""
    html = client.get("/explainers/skb/presets/tcp-transmit").text
    assert "https://elixir.bootlin.com/linux/v6.4/source/" in html


def test_custom_link_round_trip(client: TestClient) -> None:
    """A custom scenario is a plain link: params travel in ?p= and render the same frames."""
    raw = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}
    token = encode_params(raw)
    assert decode_params(token) == raw
    r = client.get(f"/explainers/skb/custom?p={token}&step=1")
    assert r.status_code == 200
    assert 'data-count="2"' in r.text and 'data-step="1"' in r.text


def test_invalid_custom_link_is_a_helpful_422(client: TestClient) -> None:
    """A custom link with bad params answers a 422 page naming the op and reason."""
    token = encode_params({"ops": [{"op": "alloc_skb", "size": -1}]})
    r = client.get(f"/explainers/skb/custom?p={token}")
    assert r.status_code == 422
    assert "ops.0.size" in r.text
    r = client.get("/explainers/skb/custom?p=%%%garbage")
    assert r.status_code == 422


def test_unknown_pages_are_helpful_404s(client: TestClient) -> None:
    """Unknown explainers and presets answer a 404 page with a way back."""
    for url in ("/explainers/nope", "/explainers/skb/presets/nope", "/no/such/page"):
        r = client.get(url)
        assert r.status_code == 404
        assert 'href="/"' in r.text


def test_bad_step_is_422_not_500(client: TestClient) -> None:
    """?step=abc or a negative step is rejected with 422."""
    assert client.get("/explainers/skb?step=abc").status_code == 422
    assert client.get("/explainers/skb?step=-3").status_code == 422


def test_static_and_vendor_assets_are_served(client: TestClient) -> None:
    """The player script, stylesheet and npm packages (htmx, idiomorph) are served."""
    for url in (
        "/static/js/player.js",
        "/static/css/app.css",
        "/vendor/htmx.org/dist/htmx.min.js",
        "/vendor/idiomorph/dist/idiomorph.min.js",
    ):
        assert client.get(url).status_code == 200, url


def test_notes_are_listed_and_rendered(client: TestClient) -> None:
    """Notes without a preset (the real-kernel check) are linked from home and render as pages."""
    assert "/notes/cwnd-kernel-check" in client.get("/").text
    r = client.get("/notes/cwnd-kernel-check")
    assert r.status_code == 200 and "tbf" in r.text
    assert client.get("/notes/nope").status_code == 404
    assert client.get("/notes/..%2Fpyproject").status_code == 404


def test_theme_picker_is_on_every_page(client: TestClient) -> None:
    """Pages offer light, dark and projector themes."""
    html = client.get("/").text
    assert 'id="theme-picker"' in html and 'value="projector"' in html


def test_head_requests_answer_like_get(client: TestClient) -> None:
    """HEAD (link checkers, curl -I) answers 200 where GET does, not 405."""
    assert client.head("/explainers/skb").status_code == 200
    assert client.head("/vendor/plotly.js-basic-dist-min/plotly-basic.min.js").status_code == 200


def test_long_scenarios_embed_a_window_and_serve_the_rest(client: TestClient) -> None:
    """A 500-op scenario with 16 skbs embeds a window around the step (at most FRAME_WINDOW
    frames, fewer when their pictures pass PICTURE_BUDGET), not all 500."""
    ops = [{"op": "alloc_skb", "size": 100}] + [{"op": "skb_clone"}] * 15
    ops += [{"op": "skb_headroom"}] * (500 - len(ops))
    token = encode_params({"ops": ops})
    r = client.get(f"/explainers/skb/custom?p={token}&step=400")
    ids = [int(i) for i in re.findall(r'<template id="frame-(\d+)"', r.text)]
    assert 1 < len(ids) <= FRAME_WINDOW and 400 in ids
    assert ids == list(range(ids[0], ids[-1] + 1))
    assert len(r.content) < 2 * PICTURE_BUDGET
    chunk = client.get(f"/explainers/skb/frames?p={token}&start=0&count=10").text
    assert re.findall(r'<template id="frame-(\d+)"', chunk) == [str(i) for i in range(10)]


def test_frames_endpoint_rejects_bad_queries(client: TestClient) -> None:
    """The frames endpoint answers 422 for a missing source, both sources, or a huge count."""
    assert client.get("/explainers/skb/frames?start=0").status_code == 422
    assert client.get("/explainers/skb/frames?start=0&preset=panic&p=x").status_code == 422
    assert client.get("/explainers/skb/frames?start=0&preset=nope").status_code == 422
    assert client.get("/explainers/skb/frames?start=0&count=100000&preset=panic").status_code == 422
    assert client.get("/explainers/skb/frames?start=999&preset=panic").status_code == 200


def test_dense_scrubber_marks_are_grouped() -> None:
    """A run with hundreds of marked steps shows at most MAX_MARKS ticks, each at a marked
    step, and a grouped tick says how many marks it stands for."""
    from app.sim.core import Frame, msg
    from app.web.player import MAX_MARKS, scrubber_marks

    frames = tuple(
        Frame(
            index=i,
            op="loss",
            result="ok",
            narration=msg("x"),
            source=None,
            state={},
            mark="loss" if i % 2 else None,
        )
        for i in range(1000)
    )
    marks = scrubber_marks(frames, len(frames))
    assert 0 < len(marks) <= MAX_MARKS
    assert all(frames[m["index"]].mark for m in marks)
    assert any("more" in m["op"] for m in marks)
    from app.web import i18n

    token = i18n.use("zh-CN")
    try:
        zh = scrubber_marks(frames, len(frames))
    finally:
        i18n.reset(token)
    grouped = [m["op"] for m in zh if m["op"] != "loss"]  # a lone mark's op is the frame's own
    assert grouped and all("more" not in op and "另有" in op for op in grouped), grouped[:2]
    few = scrubber_marks(frames[:20], 20)
    assert [m["index"] for m in few] == [i for i in range(20) if i % 2]
