"""Exports: this step as SVG and PNG (drawn server-side), the trace as JSON, an offline HTML file."""

from __future__ import annotations

import html as htmllib
import json
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.main import create_app
from app.settings import Settings
from app.web.exporting import FRAME_PAD
from app.web.sources import encode_params

SIMS = {p.name: p.sim for p in builtin()}

EXPLAINERS = list(SIMS)
RAW = {
    "ops": [
        {"op": "alloc_skb", "size": 1500},
        {"op": "skb_reserve", "len": 64},
        {"op": "skb_put", "len": 100},
    ]
}
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def _export_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for the module: each app starts its own Chromium on its first PNG, and runs
    every trace it shows again (the cwnd default alone takes seconds), which cost more than
    the tests. The client's quota of long runs (6 a minute; the module draws some 30 PNGs) is
    raised: :func:`test_exports_count_against_the_clients_long_run_quota` tests it on an app
    of its own."""
    db = tmp_path_factory.mktemp("export") / "test.db"
    settings = Settings(database_url=f"sqlite:///{db}", expensive_runs_per_minute=1000)
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def client(_export_app: TestClient) -> TestClient:
    """The module's app as a new visitor (no cookies) with nothing drawn or kept yet: no PNG
    and no page or export kept from an earlier test (tests count what is drawn, and one asks
    for a file its limit refuses). Only the stored traces carry over."""
    _export_app.cookies.clear()
    app: Any = _export_app.app
    app.state.pngs._cache.clear()
    pages = app.state.site.pages
    with pages._lock:
        pages._items.clear()
        pages.used = 0
    return _export_app


def page_stage(client: TestClient, url: str, step: int) -> str:
    """The stage markup of frame ``step`` exactly as the player page holds it."""
    html = client.get(url).text
    tpl = re.search(
        rf'<template id="frame-{step}"[^>]*>\s*<div data-part="stage">(.*?)</div>\s*<div data-part="fields">',
        html,
        re.S,
    )
    assert tpl, "the page has that frame"
    return tpl.group(1)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def png_pixels(data: bytes, limit: int | None = None) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG into rows of pixel bytes (enough for Chromium's output);
    ``limit``: only the first that many rows (the decoder is pure Python, a row costs)."""
    w, h = png_size(data)
    pos, idat, colour = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            assert chunk[8] == 8
            colour = chunk[9]
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    bpp = {2: 3, 6: 4}[colour]
    raw = zlib.decompress(idat)
    rows, prev, stride = [], bytearray(w * bpp), w * bpp
    for y in range(h if limit is None else min(h, limit)):
        f, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, bpp, rows


@pytest.mark.parametrize("name", EXPLAINERS)
def test_svg_export_is_the_pages_frame_picture(client: TestClient, name: str) -> None:
    """The SVG file parses as XML and holds the page's picture of that step verbatim, styled."""
    ex = SIMS.get(name)
    step = 1
    r = client.get(f"/export/svg?explainer={name}&preset={ex.default_preset}&step={step}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml")
    assert r.headers["content-disposition"].startswith('attachment; filename="stepscope-')
    root = ET.fromstring(r.content)
    assert root.tag == f"{SVG}svg" and root.get("data-theme") == "light"
    assert root.find(f"{SVG}style") is not None and "--blue" in root.find(f"{SVG}style").text
    picture = page_stage(client, f"/explainers/{name}/presets/{ex.default_preset}", step)
    assert picture.strip() and picture.strip() in r.text


def test_svg_export_of_a_shared_and_a_custom_scenario(client: TestClient) -> None:
    """Shared and custom scenarios export the same picture for the same params and step."""
    sid = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW}).json()["id"]
    shared = client.get(f"/export/svg?scenario={sid}&step=2")
    custom = client.get(f"/export/svg?explainer=skb&p={encode_params(RAW)}&step=2")
    assert shared.status_code == custom.status_code == 200
    assert shared.text == custom.text
    assert page_stage(client, f"/s/{sid}", 2).strip() in shared.text
    # width and height come from the picture's own viewBox
    root = ET.fromstring(shared.content)
    inner = root.find(f"{SVG}svg")
    vb = inner.get("viewBox").split()
    assert (root.get("width"), root.get("height")) == (vb[2], vb[3])
    dark = client.get(f"/export/svg?scenario={sid}&step=2&theme=dark")
    assert ET.fromstring(dark.content).get("data-theme") == "dark"


def test_step_past_the_end_exports_the_last_frame(client: TestClient) -> None:
    """Like the page, a step past the end is the last frame."""
    last = client.get("/export/svg?explainer=skb&preset=rx-frame&step=999")
    count = client.get("/export/json?explainer=skb&preset=rx-frame").json()["count"]
    assert last.status_code == 200
    assert f"step{count - 1}.svg" in last.headers["content-disposition"]


def test_png_export_is_drawn_server_side_at_the_pictures_size(client: TestClient) -> None:
    """The PNG is a real image the size of the picture (plus a margin of FRAME_PAD px of
    background all round) times the scale, in the chosen theme."""
    svg = client.get("/export/svg?explainer=skb&preset=rx-frame&step=2")
    root = ET.fromstring(svg.content)
    w, h = float(root.get("width")), float(root.get("height"))
    one = client.get("/export/png?explainer=skb&preset=rx-frame&step=2&scale=1")
    assert one.status_code == 200 and one.headers["content-type"] == "image/png"
    pw, ph = png_size(one.content)
    assert pw == round(w) + 2 * FRAME_PAD and abs(ph - (h + 2 * FRAME_PAD)) <= 1
    two = client.get("/export/png?explainer=skb&preset=rx-frame&step=2&scale=2")
    assert png_size(two.content)[0] == 2 * pw
    # the page's palette: payload green (#009E73) is on the picture; theme colours the background
    width, bpp, rows = png_pixels(one.content)
    colours = {row[i : i + 3] for row in rows[::4] for i in range(0, width * bpp, bpp * 4)}
    assert bytes.fromhex("009E73") in colours
    assert rows[0][:3] == bytes.fromhex("ffffff")
    dark = client.get("/export/png?explainer=skb&preset=rx-frame&step=2&scale=1&theme=dark")
    assert png_pixels(dark.content, limit=1)[2][0][:3] == bytes.fromhex("14171b")


def test_png_steps_differ(client: TestClient) -> None:
    """Different steps make different pictures."""
    a = client.get("/export/png?explainer=skb&preset=rx-frame&step=0&scale=1").content
    b = client.get("/export/png?explainer=skb&preset=rx-frame&step=3&scale=1").content
    assert a != b


@pytest.mark.parametrize("name", EXPLAINERS)
def test_json_export_is_the_whole_trace(client: TestClient, name: str) -> None:
    """The JSON holds every frame of the page, the canonical params and the sim_version, and
    the run API's full answer."""
    ex = SIMS.get(name)
    preset = ex.preset(ex.default_preset)
    r = client.get(f"/export/json?explainer={name}&preset={preset.slug}")
    assert r.status_code == 200
    body = json.loads(r.content)
    page = client.get(f"/explainers/{name}/presets/{preset.slug}").text
    assert body["count"] == int(re.search(r'data-count="(\d+)"', page).group(1))
    assert body["explainer"] == name and body["sim_version"] == ex.sim_version
    assert body["params"] == ex.dump(ex.parse(dict(preset.params)))
    # the export is the full answer (docs/api.md), as the API's ``?form=full`` gives it
    run = client.post(f"/api/v1/explainers/{name}/run?form=full", json=dict(preset.params)).json()
    assert {k: v for k, v in body.items() if k in run} == run


@pytest.mark.parametrize("name", EXPLAINERS)
def test_offline_html_is_self_contained_with_every_frame(client: TestClient, name: str) -> None:
    """The offline file inlines CSS and scripts, refers to no server file, and has every frame."""
    ex = SIMS.get(name)
    r = client.get(f"/export/html?explainer={name}&preset={ex.default_preset}")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    html = r.text
    page = client.get(f"/explainers/{name}/presets/{ex.default_preset}").text
    frames = lambda h: re.findall(r'<template id="frame-\d+".*?</template>', h, re.S)  # noqa: E731
    count = int(re.search(r'data-count="(\d+)"', page).group(1))
    # every frame, where the page embeds those around step 0 that fit its picture budget
    assert len(frames(html)) == count and frames(page)
    assert frames(html)[: len(frames(page))] == frames(page)
    assert not re.search(r'(src|href)="/(static|vendor)/', html)
    assert "<link" not in html
    assert "window.Stepscope" in html and "Idiomorph" in html  # player.js and idiomorph inlined
    assert "--blue" in html  # the stylesheet inlined
    assert html.count("<script>") >= 2


def test_export_bad_input_is_422_naming_the_field(client: TestClient) -> None:
    """Every wrong combination or value is a 422 naming the field; unknown scenarios are 404."""
    sid = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW}).json()["id"]
    cases = [
        ("/export/svg", "explainer"),
        ("/export/svg?explainer=nope", "explainer"),
        ("/export/svg?explainer=skb&preset=nope", "preset"),
        (f"/export/svg?scenario={sid}&explainer=skb", "scenario"),
        ("/export/svg?explainer=skb&preset=rx-frame&p=abc", "p"),
        ("/export/svg?explainer=skb&p=%25%25garbage", "p"),
        (
            f"/export/svg?explainer=skb&p={encode_params({'ops': [{'op': 'alloc_skb', 'size': -5}]})}",
            "ops",
        ),
        ("/export/svg?explainer=skb&step=-2", "step"),
        ("/export/png?explainer=skb&scale=9", "scale"),
        ("/export/html?explainer=skb&theme=neon", "theme"),
        ("/export/json?explainer=" + "x" * 100, "explainer"),
    ]
    for url, field in cases:
        r = client.get(url, headers={"accept": "application/json"})
        assert r.status_code == 422, url
        locs = [d["loc"] for d in r.json()["detail"]]
        assert any(field in [str(p) for p in loc] for loc in locs), (url, locs)
        page = client.get(url)
        assert page.status_code == 422 and field in htmllib.unescape(page.text)
    for fmt in ("svg", "png", "json", "html"):
        assert client.get(f"/export/{fmt}?scenario=AAAAAAAAAAAAAAAA").status_code == 404


@pytest.mark.parametrize("name", EXPLAINERS)
def test_every_explainer_exports_a_png_of_its_picture_area(client: TestClient, name: str) -> None:
    """Each explainer's step exports as a PNG at least as wide as its picture plus the margin
    (charts included, if any; wider when what is drawn is wider)."""
    ex = SIMS.get(name)
    svg = ET.fromstring(client.get(f"/export/svg?explainer={name}&step=1").content)
    r = client.get(f"/export/png?explainer={name}&preset={ex.default_preset}&step=1&scale=1")
    assert r.status_code == 200
    w, h = png_size(r.content)
    assert w >= round(float(svg.get("width"))) + 2 * FRAME_PAD and h > 20


def test_png_without_chromium_is_a_503_not_a_500(settings: Settings) -> None:
    """A server without Chromium answers PNG requests with 503 and what to install."""
    missing = settings.model_copy(update={"chromium": Path("/nonexistent/chromium")})
    with TestClient(create_app(missing)) as client:
        r = client.get("/export/png?explainer=skb&preset=panic&step=0")
    assert r.status_code == 503 and "chromium" in r.json()["detail"].lower()


def test_query_errors_are_located_in_the_query(client: TestClient) -> None:
    """A bad export query names the query field (loc starts with "query", not "body")."""
    r = client.get("/export/json?explainer=nope", headers={"accept": "application/json"})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "explainer"]


# --- bounded exports (issue 24) and the view's own "export ready" condition (issue 20) ---------


def _capture_pngs(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Stand in for Chromium: record each document (and the ready condition) a PNG would draw."""
    seen: list[tuple[str, str]] = []

    async def render_async(html: str, *, scale: int, width: float, ready: str | None) -> bytes:
        seen.append((html, ready or ""))
        return b"\x89PNG\r\n\x1a\n" + len(seen).to_bytes(4, "big")

    monkeypatch.setattr(client.app.state.pngs, "render_async", render_async)  # type: ignore[attr-defined]
    return seen


@pytest.mark.parametrize("name", EXPLAINERS)
def test_png_draws_only_the_requested_step(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The document Chromium gets for a PNG holds that one step's picture, not the player's
    every frame (a 32-packet path PNG loaded all 2,240 and took 302 s of CPU)."""
    seen = _capture_pngs(client, monkeypatch)
    preset = SIMS[name].default_preset
    count = client.get(f"/export/json?explainer={name}&preset={preset}").json()["count"]
    step = min(3, count - 1)
    r = client.get(f"/export/png?explainer={name}&preset={preset}&step={step}&scale=1")
    assert r.status_code == 200, r.text
    html, _ = seen[-1]
    assert re.findall(r'<template id="frame-(\d+)"', html) == [str(step)]
    assert page_stage(client, f"/explainers/{name}?preset={preset}&step={step}", step) in html


def test_a_kept_png_is_kept_per_language(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step's PNG drawn for an English reader is not the one a Chinese reader gets: each
    language's is drawn in its own words, then kept for that language."""
    seen = _capture_pngs(client, monkeypatch)
    url = "/export/png?explainer=skb&preset=panic&step=1&scale=1"
    english = client.get(url).content
    chinese = client.get(url + "&lang=zh-CN").content
    assert len(seen) == 2 and english != chinese
    assert 'lang="zh-CN"' in seen[1][0] or "zh-CN" in seen[1][0]
    again = client.get(url + "&lang=en").content  # (the lang query is remembered: say it)
    assert again == english and len(seen) == 2  # kept, not drawn again


def test_png_waits_for_the_shown_views_own_ready_condition(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Export waits for what the view declares (WebView.export_ready), and generic export code
    names no chart library."""
    seen = _capture_pngs(client, monkeypatch)
    views = {p.name: p.web for p in builtin()}
    for name in EXPLAINERS:
        preset = SIMS[name].default_preset
        assert client.get(f"/export/png?explainer={name}&preset={preset}&step=0").status_code == 200
        assert seen[-1][1] == (views[name].export_ready or "")
    assert any(v.export_ready for v in views.values()), "a charting view declares its condition"
    generic = (Path(__file__).parents[2] / "app" / "web" / "exporting.py").read_text().lower()
    assert "plotly" not in generic


def test_offline_html_over_its_limit_is_refused_naming_the_limit(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An offline file predicted over the limit is refused (413) before every step is drawn;
    one that turns out over it is refused too (the hard cap)."""
    from app.web import exporting, player

    monkeypatch.setattr(exporting, "MAX_OFFLINE_BYTES", 1_000_000)
    drawn_all: list[bool] = []
    real = player.player_context

    def spy(*args: object, **kw: object) -> object:
        drawn_all.append(bool(kw.get("all_frames")))
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(exporting, "player_context", spy)
    r = client.get(
        "/export/html?explainer=skb&preset=rx-frame", headers={"accept": "application/json"}
    )
    assert r.status_code == 413 and "1 MB" in r.json()["detail"]
    assert drawn_all == [], "refused on the estimate, before drawing every step"
    monkeypatch.setattr(exporting, "offline_bytes", lambda *a, **k: 0)
    monkeypatch.setattr(exporting, "MAX_OFFLINE_BYTES", 20_000)
    r = client.get(
        "/export/html?explainer=skb&preset=tcp-transmit", headers={"accept": "application/json"}
    )
    assert r.status_code == 413 and "the limit is 0.02 MB" in r.json()["detail"]
    monkeypatch.setattr(exporting, "MAX_OFFLINE_BYTES", 50_000_000)
    assert client.get("/export/html?explainer=skb&preset=panic").status_code == 200


def test_exports_count_against_the_clients_long_run_quota(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each drawn PNG and each offline file that takes over a second to build counts as one long
    run of the client's quota (APP_EXPENSIVE_RUNS_PER_MINUTE): past it, 429 with Retry-After; a
    PNG already drawn is free, and so is a small offline file."""
    from app.web import exporting

    limited = settings.model_copy(update={"expensive_runs_per_minute": 3})
    with TestClient(create_app(limited)) as client:
        _capture_pngs(client, monkeypatch)
        base = "/export/png?explainer=skb&preset=rx-frame&scale=1&step="
        assert [client.get(base + str(s)).status_code for s in (0, 1)] == [200, 200]
        assert client.get(base + "0").status_code == 200  # drawn already: not charged
        small = "/export/html?explainer=skb&preset=panic&step="
        assert [client.get(small + str(s)).status_code for s in (0, 1, 2, 3)] == [200] * 4
        monkeypatch.setattr(exporting, "OFFLINE_BYTES_PER_SECOND", 1000)  # every file is long
        assert client.get(small + "4").status_code == 200
        over = client.get(base + "2")
        assert over.status_code == 429 and int(over.headers["retry-after"]) > 0
        assert client.get("/export/html?explainer=skb&preset=rx-frame").status_code == 429


def test_a_chromium_past_its_timeout_is_killed_and_answered_503(settings: Settings) -> None:
    """A page that never finishes loading (a script that never returns) does not hold the PNG
    queue: Chromium is killed after the renderer's timeout, and nothing of it is left."""
    from app.web.exporting import PngRenderer, PngUnavailable, browser_pids

    renderer = PngRenderer(settings.chromium, timeout_s=3)
    before = browser_pids()
    with pytest.raises(PngUnavailable) as caught:
        _on_a_thread(renderer.render, "<body><script>for (;;) {}</script></body>", 1, 200)
    assert "3 s" in str(caught.value)
    assert browser_pids() - before == set()
    # and the renderer still draws afterwards (given time: the machine may be busy)
    renderer.timeout_s = 60
    assert _on_a_thread(renderer.render, "<body>ok</body>", 1, 200)[:4] == b"\x89PNG"


def _on_a_thread(render: Any, html: str, scale: int, width: float, ready: str | None = None) -> Any:
    """``render`` on a thread of its own, as the app draws PNGs (app.web.exporting's png
    thread): Playwright's sync API refuses a thread where another Playwright (the browser
    tests' session, in the same pytest worker) already runs its loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(render, html, scale=scale, width=width, ready=ready).result()


def test_the_png_is_taken_once_the_ready_condition_holds(client: TestClient) -> None:
    """What a view's scripts draw after load is in the PNG when it declares it as ready (drawn
    by the app's own renderer, whose Chromium the module's PNGs started already)."""
    html = (
        "<body style='margin:0;background:#fff'><script>setTimeout(() => {"
        " document.body.style.background = '#0000ff'; window.drawn = true; }, 400)</script></body>"
    )
    renderer = client.app.state.pngs  # type: ignore[attr-defined]
    data = _on_a_thread(renderer.render, html, 1, 50, ready="() => window.drawn === true")
    assert png_pixels(data, limit=1)[2][0][:3] == bytes.fromhex("0000ff")
