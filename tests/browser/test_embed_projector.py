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


# The congestion-control chart is Plotly's SVG (no viewBox scaling: its font size is its screen
# size, times the screen CTM) beside an HTML card of the step's numbers.
CHART_PROBE = """(() => {
  const chart = document.getElementById('cwnd-chart');
  const wrap = chart.closest('.stage-wrap');
  let min = Infinity, worst = '', n = 0;
  for (const t of chart.querySelectorAll('svg text')) {
    if (!t.textContent.trim() || !t.checkVisibility()) continue;
    const r = t.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const m = t.getScreenCTM();
    const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
    n++;
    if (px < min) { min = px; worst = t.textContent.trim().slice(0, 30); }
  }
  let card = Infinity, cardWorst = '';
  for (const el of document.querySelectorAll('#cwnd-moment *')) {
    const own = [...el.childNodes].some(c => c.nodeType === 3 && c.textContent.trim());
    if (!own || !el.checkVisibility() || el.closest('[aria-hidden="true"]')) continue;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < card) { card = px; cardWorst = el.textContent.trim().slice(0, 30); }
  }
  const content = chart.querySelector('.legend .scrollbox');
  const shown = chart.querySelector('.legend .bg');
  const legendHidden = content && shown ? content.getBBox().height - shown.getBBox().height : null;
  const legend = chart.querySelector('.legend').getBoundingClientRect();
  const box = wrap.getBoundingClientRect();
  const cs = getComputedStyle(wrap);
  return {min, worst, n, card, cardWorst, legendHidden,
          legendInside: legend.left >= box.left - 1 && legend.right <= box.right + 1,
          scrolls: wrap.scrollHeight <= wrap.clientHeight + 1 || cs.overflowY === 'auto' || cs.overflowY === 'scroll',
          pageWide: document.documentElement.scrollWidth - document.documentElement.clientWidth};
})()"""
CHART_DONE = (
    "() => document.querySelector('#cwnd-chart .main-svg')"
    " && !document.querySelector('.plotly-pending, .plotly-drawing, [aria-busy=\"true\"]')"
)


@pytest.mark.parametrize(
    "slug", ["reno-sawtooth", "cubic-lfn", "bbr-cycle", "cubic-vs-reno", "bbr-vs-cubic"]
)
def test_cwnd_embed_chart_and_card_are_readable_and_uncut(
    live_server: Any, browser: Any, slug: str
) -> None:
    """The congestion-control embed in the projector theme: every chart label (ticks, row
    title, legend) and the step card's words render at 16 px or more at 960×600, and the legend
    shows every entry (no scroll bar hiding some) inside the picture box, two flows with every
    event kind (cubic-vs-reno, bbr-vs-cubic) included: their legend goes in rows under the plot."""
    ctx = browser.new_context(viewport=EMBED, reduced_motion="reduce", bypass_csp=True)
    page = ctx.new_page()
    page.goto(f"{live_server.url}/embed/cwnd/presets/{slug}?theme=projector")
    page.wait_for_function(CHART_DONE, timeout=60_000)
    faults = []
    for n in _steps(page):
        page.evaluate(f"window.Stepscope.goto({n})")
        page.wait_for_function(CHART_DONE, timeout=30_000)
        got = page.evaluate(CHART_PROBE)
        assert got["n"] > 5, (n, got)
        if got["min"] < FLOOR - 0.1:
            faults.append(f"step {n}: chart text '{got['worst']}' at {got['min']:.1f} px")
        if got["card"] < FLOOR - 0.1:
            faults.append(f"step {n}: card text '{got['cardWorst']}' at {got['card']:.1f} px")
        if got["legendHidden"] is None or got["legendHidden"] > 1:
            faults.append(f"step {n}: {got['legendHidden']} px of the legend scrolled away")
        if not got["legendInside"] or got["pageWide"] > 1 or not got["scrolls"]:
            faults.append(f"step {n}: the chart is cut off: {got}")
    ctx.close()
    assert not faults, faults


def test_cwnd_player_in_the_projector_theme_draws_big_chart_text(
    live_server: Any, browser: Any
) -> None:
    """Switching the player to the projector theme redraws the step chart with 16 px text (and
    back): the theme, not only the embed, makes the chart the thing."""
    ctx = browser.new_context(viewport=EMBED, reduced_motion="reduce", bypass_csp=True)
    page = ctx.new_page()
    page.goto(f"{live_server.url}/explainers/cwnd/presets/reno-sawtooth?step=3")
    page.wait_for_function(CHART_DONE, timeout=60_000)
    light = page.evaluate(CHART_PROBE)
    page.evaluate("document.documentElement.dataset.theme = 'projector'")
    page.wait_for_function(
        "() => document.getElementById('cwnd-chart')._fullLayout.font.size >= 16", timeout=30_000
    )
    page.wait_for_function(CHART_DONE, timeout=30_000)
    big = page.evaluate(CHART_PROBE)
    ctx.close()
    assert light["min"] < FLOOR, light  # the light theme keeps the chart's own 12-13 px
    assert big["min"] >= FLOOR - 0.1, big
    assert big["card"] >= FLOOR - 0.1, big
    assert big["legendHidden"] is not None and big["legendHidden"] <= 1, big
