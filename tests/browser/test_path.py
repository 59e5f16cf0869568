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
    """At 390×844 the page never scrolls sideways; the picture scrolls inside its own box (at
    most 72% of the screen high) with the lit function in view."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        pg = context.new_page()
        pg.goto(f"{live_server.url}/explainers/path/presets/receive-segment?step=44")
        pg.wait_for_selector("#path-svg")
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
