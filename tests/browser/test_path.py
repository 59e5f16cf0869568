"""The packet-path player in chromium: stepping with → moves the lit function and the skb's
data pointer along the simulation's frames."""

from __future__ import annotations

import pytest

from app.sim.path.explainer import EXPLAINER

pytestmark = pytest.mark.browser


def test_stepping_follows_the_frames(live_server, page) -> None:
    """From the step before eth_type_trans, → lights each next function in its lane and the
    data pointer moves as the frames say (eth_type_trans pulls the 14-byte Ethernet header)."""
    preset = EXPLAINER.preset("receive-segment")
    assert preset is not None
    trace = EXPLAINER.run(EXPLAINER.parse(preset.params))
    start = next(f.index for f in trace.frames if f.op == "eth_type_trans") - 2
    page.goto(f"{live_server.url}/explainers/path/presets/receive-segment?step={start}")
    page.wait_for_selector("#path-svg")
    seen = []
    for i in range(start, start + 6):
        if i > start:
            page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.querySelector('#path-svg')?.dataset.step === '{i}'")
        state = trace.frames[i].state
        svg = page.locator("#path-svg")
        assert svg.get_attribute("data-function") == state["function"]
        lit = page.locator("#stage [id^='lane-'][data-lit='1']")
        assert lit.count() == 1
        assert lit.get_attribute("data-lane") == svg.get_attribute("data-lane")
        assert page.get_attribute("#path-current", "data-function") == state["function"]
        skb = state["skb"]
        assert skb is not None
        ptr = page.locator(f"#ptr-{skb['name']}-data")
        assert ptr.get_attribute("data-offset") == str(skb["data"])
        seen.append(int(ptr.get_attribute("data-offset") or -1))
        assert page.inner_text("#step-no") == str(i)
    # the pointer really moved forward by ETH_HLEN during these steps
    assert max(seen) - min(seen) == 14


def test_hook_lights_when_the_step_reaches_it(live_server, page) -> None:
    """Stepping onto NF_HOOK(LOCAL_IN) lights that hook's marker on the path."""
    preset = EXPLAINER.preset("receive-segment")
    assert preset is not None
    trace = EXPLAINER.run(EXPLAINER.parse(preset.params))
    at = next(f.index for f in trace.frames if f.state["hook"] == "LOCAL_IN")
    page.goto(f"{live_server.url}/explainers/path/presets/receive-segment?step={at - 1}")
    page.wait_for_selector("#path-svg")
    assert page.locator("#stage [data-hook='LOCAL_IN'][data-lit='1']").count() == 0
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"document.querySelector('#path-svg')?.dataset.step === '{at}'")
    assert page.locator("#stage g[data-hook='LOCAL_IN'][data-lit='1']").count() == 1


def test_phone_scrolls_the_picture_not_the_page(live_server, browser) -> None:
    """At 390×844 the page never scrolls sideways; zoomed to full size (the zoom button), the
    picture scrolls inside its own box (at most 72% of the screen high) with the lit function
    in view."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True)
    try:
        pg = context.new_page()
        pg.goto(f"{live_server.url}/explainers/path/presets/receive-segment?step=44")
        pg.wait_for_selector("#path-svg")
        pg.click("#btn-zoom")
        pg.keyboard.press("ArrowRight")
        pg.wait_for_function("document.querySelector('#path-svg')?.dataset.step === '45'")
        pg.wait_for_timeout(400)
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        stage = pg.evaluate(
            "(() => { const s = document.getElementById('stage');"
            " return [s.scrollWidth, s.clientWidth, s.scrollHeight, s.clientHeight]; })()"
        )
        assert stage[0] > stage[1]  # sideways scroll inside the stage
        assert stage[3] <= 0.72 * 844 + 1  # and never taller than most of the screen
        box = pg.evaluate(
            "(() => { const r = document.getElementById('path-current').getBoundingClientRect();"
            " return [r.left, r.right]; })()"
        )
        assert box[1] > 0 and box[0] < 390
    finally:
        context.close()


PRESETS = [
    (p.slug, len(EXPLAINER.run(EXPLAINER.parse(p.params)).frames)) for p in EXPLAINER.presets
]


def _open_at_step_0(page, url: str) -> None:
    page.emulate_media(reduced_motion="reduce")  # no glide: geometry is final right away
    page.goto(url)
    page.wait_for_selector("#path-svg")
    # the lesson's introduction opens on step 0; the reader folds it to step through
    page.evaluate("document.querySelector('.lesson-intro')?.removeAttribute('open')")


# That every step fits one 1440×900 screen (the picture says so with data-fits-screen), with
# no overlapping labels and no type under 12 px, is tests/browser/test_layout.py's full walk.


# After the stage is scrolled so the step's focus (the current function) is in view: each lane
# name's box is inside the stage's visible box and is what the screen shows at its centre.
LANE_NAMES_JS = """
() => {
  const stage = document.getElementById('stage');
  const focus = stage.querySelector('[data-focus]').getBoundingClientRect();
  const s0 = stage.getBoundingClientRect();
  if (focus.left < s0.left + 100 || focus.right > s0.right) {
    stage.scrollLeft += focus.left - s0.left - stage.clientWidth / 3;
  }
  window.scrollTo(0, window.scrollY + stage.getBoundingClientRect().top);
  const s = stage.getBoundingClientRect();
  const f = stage.querySelector('[data-focus]').getBoundingClientRect();
  return {scrollLeft: stage.scrollLeft, focus: [f.left, f.right], stage: [s.left, s.right],
          names: [...document.querySelectorAll('#lane-heads .lane-name')].map((t) => {
    const b = t.getBoundingClientRect();
    const hit = document.elementFromPoint((b.left + b.right) / 2, (b.top + b.bottom) / 2);
    return {text: t.textContent, left: b.left, right: b.right,
            shown: !!(hit && hit.closest('#lane-heads'))};
  })};
}
"""


# Every step in one round trip: show step n with the player's own API (what → calls), wait for
# its picture, scroll to the focus, wait a frame (the scroll events run before the frame's
# callbacks, and lanes.js moves the names on each), then measure.
LANE_WALK_JS = f"""
async (count) => {{
  const lanes = {LANE_NAMES_JS};
  const out = [];
  for (let n = 0; n < count; n++) {{
    if (n) window.Stepscope.goto(n);
    for (let i = 0; document.getElementById('path-svg')?.dataset.step !== String(n); i++) {{
      if (i > 500) throw new Error('step ' + n + ' never showed');
      await new Promise((r) => setTimeout(r, 10));
    }}
    lanes();
    await new Promise((r) => requestAnimationFrame(() => r(null)));
    out.push(lanes());
  }}
  return out;
}}
"""


@pytest.mark.parametrize(("slug", "count"), PRESETS)
def test_lane_names_stay_in_view_when_the_swimlane_scrolls_on_a_phone(
    live_server, browser, slug: str, count: int
) -> None:
    """At 390×844, zoomed to full size, the swimlane scrolls sideways inside the stage; on
    every step, once it is scrolled to the current function, all eight lane names are still on
    screen, inside the stage and not covered (lanes.js moves the name column with the scroll)."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True)
    try:
        page = context.new_page()
        _open_at_step_0(page, f"{live_server.url}/explainers/path/presets/{slug}?step=0")
        page.click("#btn-zoom")
        scrolled = 0
        for n, at in enumerate(page.evaluate(LANE_WALK_JS, count)):
            assert at["focus"][1] > at["stage"][0] and at["focus"][0] < at["stage"][1], (n, at)
            scrolled = max(scrolled, at["scrollLeft"])
            assert len(at["names"]) == 8
            for name in at["names"]:
                assert name["left"] >= at["stage"][0] - 0.5, (slug, n, name, at["scrollLeft"])
                assert name["right"] <= at["stage"][1] + 0.5, (slug, n, name)
                assert name["shown"], (slug, n, name)
        # the walk really took the swimlane sideways (gro-burst: 187 px since napi_skb_finish is
        # drawn one level up, a sibling of dev_gro_receive, as in net/core/gro.c)
        assert scrolled > 150
    finally:
        context.close()
