"""PNG export in chromium: the PNG frames the whole picture area (charts with their titles and
legends, the step's picture, wide timelines) for every explainer, and the player's "This step as
PNG" shows progress while the server draws it, then saves it."""

from __future__ import annotations

import struct
import zlib

import httpx
import pytest

from app.explainers import builtin
from app.web.exporting import picture_size, png_css

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


def png_rows(data: bytes) -> list[bytes]:
    """The pixel rows of an 8-bit, non-interlaced RGB/RGBA PNG, unfiltered (RFC 2083 sections
    4.1.1, 4.1.3 and 6: filter types None, Sub, Up, Average and Paeth)."""
    width, height = png_size(data)
    depth, colour, _, _, interlace = data[24:29]
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    idat, pos = b"", 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        if data[pos + 4 : pos + 8] == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return [bytes(r[i] for i in range(len(r)) if i % bpp < 3) for r in rows]  # RGB only


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
        page.wait_for_function(
            "() => !document.querySelector('.plotly-pending, .plotly-drawing') &&"
            " [...document.querySelectorAll('.js-plotly-plot')]"
            ".every(el => el.querySelector('.main-svg'))",
            timeout=30_000,
        )
        page.wait_for_timeout(200)
        extent = page.evaluate(EXTENT)
    finally:
        ctx.close()
    assert extent["n"] > 0
    assert width >= 2 * extent["right"] - 1, (width, extent)
    assert height >= 2 * extent["bottom"] - 1, (height, extent)
    # and nothing touches the PNG's edge: a margin of plain background all round (a picture cut
    # at the edge, even by a pixel, leaves its border or text there)
    rows = png_rows(r.content)
    bg = rows[0][:3]
    edge = 4  # pixels at scale 2
    for y in [*range(edge), *range(height - edge, height)]:
        assert rows[y] == bg * width, f"row {y} is not plain background"
    for y in range(height):
        row = rows[y]
        assert row[: 3 * edge] == bg * edge and row[-3 * edge :] == bg * edge, f"edge at row {y}"


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
