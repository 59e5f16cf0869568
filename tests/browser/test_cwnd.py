"""The cwnd player in chromium: the charts draw, stepping moves the shared time cursor, and the
charts follow the colour theme."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_stepping_moves_the_chart_cursor(live_server, page) -> None:
    """→ jumps to the next event and the chart's cursor line moves to that event's time."""
    page.goto(f"{live_server.url}/explainers/cwnd/presets/reno-sawtooth")
    page.wait_for_function(
        "window.Plotly && document.getElementById('cwnd-chart').layout"
        " && !document.querySelector('.plotly-drawing')"  # drawn in passes: wait for the last
    )
    # drawn: SVG lines in the plot and a legend, the loading placeholder gone
    assert page.locator("#cwnd-chart .main-svg .scatterlayer path.js-line").count() >= 3
    assert page.locator("#cwnd-chart .legend .traces").count() >= 4
    assert page.locator("#cwnd-chart .chart-loading").count() == 0
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expected = float(page.get_attribute("#frame-2", "data-time"))
    page.wait_for_function(
        f"Math.abs(Number(document.querySelector('#cwnd-chart .cursor-line')?.dataset.t) - {expected}) < 1e-6"
    )
    # the line sits where the x-axis puts that time
    placed = page.evaluate(
        f"""() => {{ const el = document.getElementById('cwnd-chart'); const xa = el._fullLayout.xaxis;
             return [parseFloat(el.querySelector('.cursor-line').style.left), xa._offset + xa.l2p({expected})]; }}"""
    )
    assert abs(placed[0] - placed[1]) < 1
    assert page.inner_text("#step-no") == "2"
    assert page.is_visible("#stage .cwnd-moment .pill.on")


def test_compare_cursor_drives_every_chart(live_server, page) -> None:
    """In compare mode one time slider moves the cursor on each algorithm's chart."""
    page.goto(f"{live_server.url}/explainers/cwnd/compare?algos=reno,cubic&duration_s=5")
    page.wait_for_function("window.Plotly && document.getElementById('compare-1').layout")
    page.fill("#time-cursor", "2.5")
    page.dispatch_event("#time-cursor", "input")
    for div in ("compare-0", "compare-1"):
        page.wait_for_function(f"document.querySelector('#{div} .cursor-line')?.dataset.t == '2.5'")
    # one y-range for every panel's rows
    ranges = page.evaluate(
        "() => [0, 1].map((i) => { const l = document.getElementById('compare-' + i)._fullLayout;"
        " return [l.yaxis.range, l.yaxis4.range].join(); })"
    )
    assert ranges[0] == ranges[1]


def test_dark_theme_recolours_the_charts(live_server, page) -> None:
    """Choosing the dark theme repaints the chart background and text from the page's colours."""
    page.goto(f"{live_server.url}/explainers/cwnd/presets/cubic-vs-reno")
    page.wait_for_function("document.getElementById('fairness-chart')?._fullLayout")
    bg = "() => document.getElementById('cwnd-chart')._fullLayout.paper_bgcolor"
    light = page.evaluate(bg)
    page.select_option("#theme-picker", "dark")
    page.wait_for_function(f"({bg})() !== {light!r}")
    colours = page.evaluate(
        """() => { const s = getComputedStyle(document.documentElement);
             const f = document.getElementById('cwnd-chart')._fullLayout;
             const b = document.getElementById('fairness-chart')._fullLayout;
             return [f.paper_bgcolor, f.font.color, b.paper_bgcolor,
                     s.getPropertyValue('--bg').trim(), s.getPropertyValue('--fg').trim(),
                     getComputedStyle(document.querySelector('#cwnd-chart .main-svg')).backgroundColor]; }"""
    )
    assert colours[0].lower() == colours[2].lower() == colours[3].lower()  # --bg of the dark theme
    assert colours[1].lower() == colours[4].lower()
    assert colours[5] not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)")
    page.select_option("#theme-picker", "light")
    page.wait_for_function(f"({bg})() === {light!r}")


def test_card_reads_the_steps_numbers_and_bunched_steps_zoom(live_server, page) -> None:
    """BBR's walkthrough: the card reads the step's cwnd (as its fields say), the chart zooms to
    the first second where 16 of its 20 steps are, and to 10 s for the PROBE_RTT pair."""
    page.goto(f"{live_server.url}/explainers/cwnd/presets/bbr-cycle?step=8")
    page.wait_for_function(
        "window.Plotly && document.getElementById('cwnd-chart')._fullLayout"
        " && !document.querySelector('.plotly-drawing')"
    )
    head = page.get_attribute("#stage .moment-head", "data-cwnd")
    assert head == "203" and "cwnd 203 segments" in page.inner_text("#stage .moment-head")
    x_range = "() => document.getElementById('cwnd-chart')._fullLayout.xaxis.range.slice()"
    page.wait_for_function(f"({x_range})()[1] < 1")
    page.keyboard.press("End")  # step 19, PROBE_RTT → PROBE_BW at 20.5 s
    page.wait_for_function(f"({x_range})()[0] > 19 && ({x_range})()[1] < 21.5")
    placed = page.evaluate(
        """() => { const el = document.getElementById('cwnd-chart');
             const line = el.querySelector('.cursor-line'); return line.style.display; }"""
    )
    assert placed == "block"
