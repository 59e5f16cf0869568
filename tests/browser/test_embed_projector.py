"""A walkthrough on a projector and in a slide's embed (960×600): the picture is the thing. Its
text is drawn at 16 px or more on screen, measured from the rendered boxes
(``getBoundingClientRect`` against the text's own SVG box), the picture box scrolls to the step's
focus, the fields table folds, nothing is cut off without a way to scroll to it, and the
projector theme does not draw the player's picture smaller than the light theme does."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser

EMBED = {"width": 960, "height": 600}
FLOOR = 16  # px on screen

# Smallest on-screen size of the visible picture text: the SVG font size times the ratio of the
# text's rendered height (getBoundingClientRect) to its height in SVG units (getBBox).
TYPE_PROBE = """(() => {
  const st = document.getElementById('stage');
  const wrap = st.closest('.stage-wrap');
  const view = wrap.getBoundingClientRect();
  let min = Infinity, n = 0, worst = '';
  for (const t of st.querySelectorAll('svg text')) {
    if (!t.textContent.trim()) continue;
    const r = t.getBoundingClientRect();
    if (!r.width || !r.height || !t.checkVisibility()) continue;
    const user = t.getBBox().height;
    if (!user) continue;
    const px = parseFloat(getComputedStyle(t).fontSize) * (r.height / user);
    n++;
    if (px < min) { min = px; worst = t.textContent.trim().slice(0, 30); }
  }
  const focus = st.querySelector('[data-focus]');
  let focusSeen = null;
  if (focus) {
    const f = focus.getBoundingClientRect();
    const cx = (f.left + f.right) / 2, cy = (f.top + f.bottom) / 2;
    focusSeen = cx >= view.left && cx <= view.right && cy >= view.top && cy <= view.bottom;
  }
  const cs = getComputedStyle(wrap);
  return {min, n, worst, focusSeen,
          scrolls: (wrap.scrollWidth <= wrap.clientWidth + 1 || cs.overflowX === 'auto' || cs.overflowX === 'scroll')
                && (wrap.scrollHeight <= wrap.clientHeight + 1 || cs.overflowY === 'auto' || cs.overflowY === 'scroll'),
          pageWide: document.documentElement.scrollWidth - document.documentElement.clientWidth,
          fieldsOpen: document.getElementById('fields-fold').open};
})()"""

CASES = [
    ("tcp", "handshake"),
    ("skb", "tcp-transmit"),
    ("path", "forward"),
    ("scheduler", "chunked-prefill"),
]


def _steps(page: Any) -> list[int]:
    count = int(page.evaluate("window.Stepscope.count"))
    return sorted({0, 1, count // 2, count - 1})


@pytest.mark.parametrize(("explainer", "slug"), CASES, ids=[f"{e}-{s}" for e, s in CASES])
def test_embed_picture_text_is_readable_from_the_back_row(
    live_server: Any, browser: Any, explainer: str, slug: str
) -> None:
    ctx = browser.new_context(viewport=EMBED, reduced_motion="reduce", bypass_csp=True)
    page = ctx.new_page()
    page.goto(f"{live_server.url}/embed/{explainer}/presets/{slug}?theme=projector")
    faults = []
    for n in _steps(page):
        page.evaluate(f"window.Stepscope.goto({n})")
        got = page.evaluate(TYPE_PROBE)
        assert got["n"] > 0, (n, got)
        if got["min"] < FLOOR - 0.1:
            faults.append(f"step {n}: '{got['worst']}' at {got['min']:.1f} px")
        if got["focusSeen"] is False:
            faults.append(f"step {n}: the step's focus is scrolled out of view")
        if not got["scrolls"] or got["pageWide"] > 1:
            faults.append(f"step {n}: the picture is cut off: {got}")
        if got["fieldsOpen"]:
            faults.append(f"step {n}: the fields table takes the picture's room")
    ctx.close()
    assert not faults, faults


def test_projector_theme_does_not_shrink_the_player_picture(live_server: Any, browser: Any) -> None:
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    page.goto(f"{live_server.url}/explainers/scheduler/presets/chunked-prefill?step=3")
    widths = {}
    for theme in ("light", "projector"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        page.wait_for_timeout(100)
        widths[theme] = page.evaluate("document.querySelector('.stage-wrap').clientWidth")
    big = page.evaluate(TYPE_PROBE)
    ctx.close()
    assert widths["projector"] >= widths["light"] - 1, widths
    assert big["min"] >= FLOOR - 0.1, big
    assert not big["fieldsOpen"]
