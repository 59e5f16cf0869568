"""The scheduler player in chromium: stepping swaps the picture (budget bar, KV grid) to each
frame's and moves the timeline's cursor to that step's column."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.browser


def _frame_attrs(page, n: int) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    return page.evaluate(
        """(n) => { const t = document.getElementById('frame-' + n);
             const svg = t.content.querySelector('#sched-picture');
             return {used: svg.getAttribute('data-budget-used'), kv: svg.getAttribute('data-kv-used'),
                     pre: svg.getAttribute('data-preempted'), step: svg.getAttribute('data-step')}; }""",
        n,
    )


def _shown(page) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    return page.evaluate(
        """() => { const svg = document.querySelector('#stage #sched-picture');
             return {used: svg.getAttribute('data-budget-used'), kv: svg.getAttribute('data-kv-used'),
                     pre: svg.getAttribute('data-preempted'), step: svg.getAttribute('data-step')}; }"""
    )


def test_arrow_keys_step_the_picture_and_the_gantt_cursor(live_server, page) -> None:  # type: ignore[no-untyped-def]
    """→ from step 32 to 34 of the FCFS preemption walkthrough: the budget bar and KV grid show
    each frame's numbers, C's row turns "preempted now" at 34, and the cursor follows."""
    page.goto(f"{live_server.url}/explainers/scheduler/presets/preemption-fcfs?step=32")
    page.wait_for_selector("#stage #sched-picture")
    cols = json.loads(page.get_attribute(".sched-static", "data-frame-cols") or "[]")
    cursor_x0 = float(page.get_attribute("#gantt-cursor", "data-x0") or 0)
    colw = float(page.get_attribute("#gantt-cursor", "data-colw") or 0)
    seen_kv = set()
    for n in (33, 34):
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.getElementById('step-no').textContent === '{n}'")
        want = _frame_attrs(page, n)
        page.wait_for_function(
            f"document.querySelector('#stage #sched-picture').getAttribute('data-step') === '{want['step']}'"
        )
        assert _shown(page) == want
        seen_kv.add(want["kv"])
        # segments in the bar add up to the budget the frame says was used
        total = page.evaluate(
            "() => Array.from(document.querySelectorAll('#stage [id^=seg-]'))"
            ".reduce((a, e) => a + Number(e.dataset.tokens), 0)"
        )
        assert str(total) == want["used"]
        kv_cells = page.evaluate(
            "() => document.querySelectorAll('#stage [id^=blk-][data-state=used]').length"
        )
        assert str(kv_cells) == want["kv"]
        x = float(page.get_attribute("#gantt-cursor", "x") or -1)
        assert abs(x - (cursor_x0 + cols[n] * colw)) < 0.01
    assert _shown(page)["pre"] == "C"
    assert page.get_attribute("#stage #row-C", "data-change") == "preempted"
    assert page.is_visible("#stage #row-C")
    # back one step: the mark goes, the cursor goes back a column
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("document.getElementById('step-no').textContent === '33'")
    page.wait_for_function(
        "document.querySelector('#stage #sched-picture').getAttribute('data-preempted') === ''"
    )
    x = float(page.get_attribute("#gantt-cursor", "x") or -1)
    assert abs(x - (cursor_x0 + cols[33] * colw)) < 0.01
    assert page.get_attribute("#stage #row-C", "data-change") is None


def test_compare_button_carries_the_preset(live_server, page) -> None:  # type: ignore[no-untyped-def]
    """The Compare action opens the compare page for the walkthrough being played."""
    page.goto(f"{live_server.url}/explainers/scheduler/presets/chunked-prefill")
    page.wait_for_selector("#stage #sched-picture")
    page.wait_for_function(
        "document.getElementById('action-compare').getAttribute('href').includes('preset=chunked-prefill')"
    )
    page.click("#action-compare")
    page.wait_for_selector("#compare-summary")
    assert page.is_visible("#cmp0-gantt") and page.is_visible("#cmp1-gantt")
