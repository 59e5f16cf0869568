"""The sk_buff picture in Debian's chromium: real glyph boxes never overlap on any preset step,
type is ≥ 12 px on a 1440×900 screen, pointer labels keep 4.5:1 contrast in light and dark, and
on a phone the picture scrolls inside its own box instead of the page."""

from __future__ import annotations

from typing import Any

import pytest

from app.sim.skbuff import SkbExplainer

pytestmark = pytest.mark.browser

PRESETS = [
    (p.slug, len(SkbExplainer().run(SkbExplainer().parse(dict(p.params))).frames))
    for p in SkbExplainer().presets
]

# Boxes of every text element of the picture in the root SVG's user units: getBBox() (the
# font's real glyph cells) mapped through the element's transform relative to the root.
BOXES_JS = """
() => {
  const svg = document.querySelector('#stage svg');
  const root = svg.getScreenCTM().inverse();
  return [...svg.querySelectorAll('text')].map((t) => {
    const b = t.getBBox();
    const m = root.multiply(t.getScreenCTM());
    const p = (x, y) => new DOMPoint(x, y).matrixTransform(m);
    const a = p(b.x, b.y), c = p(b.x + b.width, b.y + b.height);
    return {text: t.textContent, x0: a.x, y0: a.y, x1: c.x, y1: c.y,
            fs: parseFloat(getComputedStyle(t).fontSize)};
  });
}
"""


def _go(page: Any, url: str) -> None:
    page.emulate_media(reduced_motion="reduce")  # no glide: geometry is final right away
    page.goto(url)
    page.wait_for_selector("#stage svg.skb-svg")


def _step(page: Any) -> int:
    return int(page.inner_text("#step-no"))


@pytest.mark.parametrize(("slug", "count"), PRESETS)
def test_real_text_boxes_never_overlap_and_type_is_12px(
    live_server: Any, page: Any, slug: str, count: int
) -> None:
    """Stepping through a preset with →, no two text boxes (getBBox) of the picture intersect
    and every label is ≥ 12 px both as computed and as drawn at a 1440×900 viewport."""
    page.set_viewport_size({"width": 1440, "height": 900})
    _go(page, f"{live_server.url}/explainers/skb/presets/{slug}")
    for n in range(count):
        if n:
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"document.getElementById('step-no').textContent == '{n}'")
        boxes = page.evaluate(BOXES_JS)
        assert len(boxes) > 10
        scale = page.evaluate(
            "() => { const s = document.querySelector('#stage svg');"
            " return s.getBoundingClientRect().width / s.viewBox.baseVal.width; }"
        )
        assert scale >= 0.95, scale
        for b in boxes:
            assert b["fs"] >= 12 and b["fs"] * scale >= 12, (n, b)
        clashes = [
            (a["text"], b["text"])
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
            if a["x0"] < b["x1"] - 0.5
            and b["x0"] < a["x1"] - 0.5
            and a["y0"] < b["y1"] - 0.5
            and b["y0"] < a["y1"] - 0.5
        ]
        assert not clashes, f"{slug} step {n}: {clashes}"


def _lum(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])

    def f(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_pointer_labels_keep_4_5_to_1_in_each_theme(
    live_server: Any, page: Any, theme: str
) -> None:
    """WCAG 1.4.3 with the browser's computed colours: each pointer label's fill against the
    page background, in the light and the dark theme (the old tail label was 2.25:1)."""
    page.add_init_script(f"localStorage.setItem('stepscope-theme', '{theme}')")
    _go(page, f"{live_server.url}/explainers/skb/presets/rx-frame?step=6")  # no pointer moves
    assert page.evaluate("document.documentElement.dataset.theme") == theme
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    fills = page.evaluate(
        "() => [...document.querySelectorAll('#stage .ptr:not(.moved) .ptr-label')]"
        ".map((t) => [t.textContent, getComputedStyle(t).fill])"
    )
    assert len(fills) == 4
    for text, fill in fills:
        hi, lo = sorted((_lum(fill), _lum(bg)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, (theme, text, fill, bg)


def test_on_a_phone_the_picture_scrolls_in_its_box_and_keeps_data_in_view(
    live_server: Any, page: Any
) -> None:
    """At 390×844 the page never scrolls sideways. The picture first fits the width; the zoom
    button draws it at full size (readable type), it then scrolls inside the stage, and the
    acting skb's data pointer stays in view as it moves."""
    page.set_viewport_size({"width": 390, "height": 844})
    _go(page, f"{live_server.url}/explainers/skb/presets/rx-frame?step=2")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    fitted = page.evaluate(
        "() => document.querySelector('#stage svg').getBoundingClientRect().width"
    )
    assert fitted <= 390
    page.click("#btn-zoom")
    assert page.evaluate(
        "() => { const s = document.getElementById('stage'); return s.scrollWidth > s.clientWidth; }"
    )
    assert (
        page.evaluate("() => document.querySelector('#stage svg').getBoundingClientRect().width")
        >= 960 * 0.99
    )
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.getElementById('step-no').textContent == '3'")
    left = page.evaluate(
        "() => { const s = document.getElementById('stage').getBoundingClientRect();"
        " const p = document.querySelector('#stage [data-focus]').getBoundingClientRect();"
        " return [p.left - s.left, s.width]; }"
    )
    assert 0 <= left[0] <= left[1]
