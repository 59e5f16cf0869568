"""The cwnd player in chromium: stepping moves the shared time cursor on the Plotly chart."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_stepping_moves_the_chart_cursor(live_server, page) -> None:
    """→ jumps to the next event and the chart's cursor line moves to that event's time."""
    page.goto(f"{live_server.url}/explainers/cwnd/presets/reno-sawtooth")
    page.wait_for_function("window.Plotly && document.getElementById('cwnd-chart').layout")
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
