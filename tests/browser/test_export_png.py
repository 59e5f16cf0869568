"""PNG export in chromium: the PNG frames the whole picture area (charts with their titles and
legends, the step's picture, wide timelines) for every explainer, and the player's "This step as
PNG" shows progress while the server draws it, then saves it."""

from __future__ import annotations

import base64
import struct

import httpx
import pytest

from app.explainers import builtin
from app.web.exporting import FRAME_PAD, picture_size, png_css
from app.web.sources import encode_params

PLUGINS = builtin()

# Where everything drawn in the picture area ends, measured in the export's own document
# laid out as the PNG renderer lays it out: the area's scroll size, and the far edges of every
# SVG (pictures, Plotly charts) and every chart title and legend.
EXTENT = """() => {
  const wrap = document.querySelector('.stage-wrap');
  const w = wrap.getBoundingClientRect();
  let right = wrap.scrollWidth, bottom = wrap.scrollHeight, n = 0;
  for (const el of wrap.querySelectorAll('svg, .gtitle, .legend, .g-xtitle, .g-ytitle')) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || (el.tagName === 'svg' && el.parentElement.closest('svg'))) continue;
    right = Math.max(right, r.right - w.left);
    bottom = Math.max(bottom, r.bottom - w.top);
    n += 1;
  }
  return {right, bottom, n, titles: wrap.querySelectorAll('.gtitle, .g-ytitle').length};
}"""


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk (the first chunk, RFC 2083 section 4.1.1)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


# The PNG's border, decoded by the browser: the first and last ``edge`` rows and the ``edge``
# pixels at both ends of every row must all be the colour of the top-left pixel. Answers the
# first few places that are not.
EDGES = """async ([b64, edge]) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + b64;
  await img.decode();
  const w = img.naturalWidth, h = img.naturalHeight;
  const c = document.createElement('canvas');
  c.width = w; c.height = h;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, w, h).data;
  const bg = [d[0], d[1], d[2]];
  const bad = [];
  const plain = (x, y) => {
    const i = (y * w + x) * 4;
    return d[i] === bg[0] && d[i + 1] === bg[1] && d[i + 2] === bg[2];
  };
  for (let y = 0; y < h && bad.length < 5; y++) {
    const edgeRow = y < edge || y >= h - edge;
    for (let x = 0; x < w; x++) {
      if (!edgeRow && x === edge) x = w - edge;
      if (!plain(x, y)) { bad.push([x, y]); break; }
    }
  }
  return {size: [w, h], bad};
}"""


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_png_frames_the_whole_picture_area(live_server, browser, plugin) -> None:
    """The PNG (scale 2) is at least as large as everything drawn in the picture area, charts'
    titles and legends included: nothing is cut off at the right or the bottom."""
    slug = plugin.sim.default_preset
    step = 2
    query = f"explainer={plugin.name}&preset={slug}&step={step}"
    r = httpx.get(f"{live_server.url}/export/png?{query}&scale=2", timeout=120)
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    width, height = png_size(r.content)

    preset = plugin.sim.preset(slug)
    trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)))
    picture = plugin.web.picture(trace, trace.frames[step])
    ctx = browser.new_context(viewport={"width": int(picture_size(picture)[0]) + 40, "height": 800})
    try:
        page = ctx.new_page()
        html = httpx.get(f"{live_server.url}/export/html?{query}", timeout=120).text
        # the PNG renderer's layout: the offline document with the picture-area-only style
        html = html.replace("</head>", f"<style>{png_css(picture)}</style></head>", 1)
        page.set_content(html, wait_until="load")  # self-contained: scripts and styles inside
        if plugin.web.export_ready:  # the view's own condition (its charts drawn)
            page.wait_for_function(plugin.web.export_ready, timeout=30_000)
        page.wait_for_timeout(200)
        extent = page.evaluate(EXTENT)
        blank = ctx.new_page()
        border = blank.evaluate(EDGES, [base64.b64encode(r.content).decode(), 4])  # 4 px at ×2
    finally:
        ctx.close()
    assert extent["n"] > 0
    assert width >= 2 * extent["right"] - 1, (width, extent)
    assert height >= 2 * extent["bottom"] - 1, (height, extent)
    # and nothing touches the PNG's edge: a margin of plain background all round (a picture cut
    # at the edge, even by a pixel, leaves its border or text there)
    assert border["size"] == [width, height]
    assert not border["bad"], f"not plain background at (x, y) {border['bad']}"


def test_png_link_shows_progress_then_saves_the_file(live_server, page) -> None:
    """A click on "This step as PNG" shows a busy bar and a status line at once, then saves the
    PNG of the step on screen and says so; the link itself still points at the PNG."""
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame?step=3")
    page.click("#export-menu summary")
    link = page.locator("#export-png")
    href = link.get_attribute("href") or ""
    assert href.startswith("/export/png?") and "step=3" in href
    assert link.get_attribute("download") is not None  # works as a plain link without JS
    with page.expect_download(timeout=120_000) as dl:
        link.click()
        page.wait_for_selector("#export-progress:not([hidden])", timeout=5_000)
        assert link.get_attribute("aria-busy") == "true"
        assert "step 3" in (page.text_content("#export-status") or "")
    download = dl.value
    assert download.suggested_filename.endswith("-step3.png")
    data = open(download.path(), "rb").read()  # noqa: SIM115 - a temp file Playwright owns
    assert png_size(data)[0] > 100
    page.wait_for_function("document.querySelector('#export-progress').hidden")
    assert link.get_attribute("aria-busy") is None
    assert "ready" in (page.text_content("#export-status") or "")


def test_png_of_one_step_of_a_long_walk(live_server) -> None:
    """A step of a 2,240-step walk (32 packets over veth) is drawn from a page of that one step:
    the answer is that step's picture, at its size (the whole player took 302 s of CPU and 503)."""
    raw = {"path": "rx", "device": "veth", "packets": 32}
    plugin = next(p for p in PLUGINS if p.name == "path")
    trace = plugin.sim.run(plugin.sim.parse(raw))
    step = 1500
    assert len(trace.frames) > step
    query = f"explainer=path&p={encode_params(raw)}&step={step}&scale=1"
    r = httpx.get(f"{live_server.url}/export/png?{query}", timeout=120)
    assert r.status_code == 200 and r.headers["content-type"] == "image/png", r.text[:300]
    assert f"-step{step}.png" in r.headers["content-disposition"]
    w, h = picture_size(plugin.web.picture(trace, trace.frames[step]))
    width, height = png_size(r.content)
    assert width >= round(w) + 2 * FRAME_PAD and height >= round(h) + 2 * FRAME_PAD - 1
