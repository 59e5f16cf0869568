"""The deployment walkthrough in chromium (issue 26): stepping fills one GPU's stacked memory bar
segment by segment and writes the block arithmetic line by line, each step's figures the
frame's; the hand-off link opens the scheduler's editor with this run's num_gpu_blocks."""

from __future__ import annotations

import httpx
import pytest

from app.sim.deploy.narrate import STEPS

pytestmark = pytest.mark.browser

SEGMENTS = ("weights", "activation", "reserve", "kv_budget")
SHOWN_AT = {
    "weights": "weights",
    "activation": "activation",
    "reserve": "reserve",
    "kv_budget": "budget",
}
LINES = {
    "budget": "kv_cache_bytes",
    "page": "page_size_bytes",
    "block": "bytes_per_block",
    "blocks": "num_gpu_blocks",
}


def _widths(page) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return page.evaluate(
        """(keys) => Object.fromEntries(keys.map(k => [k,
             parseFloat(document.querySelector('#stage #dep-seg-' + k).getAttribute('width'))]))""",
        list(SEGMENTS),
    )


def test_step_through_the_memory_bar_and_hand_off_to_the_scheduler(live_server, page) -> None:  # type: ignore[no-untyped-def]
    run = httpx.post(
        f"{live_server.url}/api/v1/explainers/deploy/run",
        json={"model": "llama-3.1-8b", "gpu": "h100-80gb", "max_model_len": 8192},
        timeout=30,
    ).json()
    blocks = run["kv"]["num_gpu_blocks"]
    page.goto(f"{live_server.url}/explainers/deploy/presets/8b-one-h100")
    page.wait_for_selector("#stage #dep-picture")
    page.focus("#stage")
    frame = page.evaluate("() => document.querySelector('.dep-frame').getAttribute('width')")
    for n, step in enumerate(STEPS):
        if n:
            page.keyboard.press("ArrowRight")
        page.wait_for_function(
            f"document.querySelector('#stage #dep-picture').dataset.step === '{step}'"
        )
        widths = _widths(page)
        for key in SEGMENTS:  # a segment appears at its step and stays
            assert (widths[key] > 0) == (n >= STEPS.index(SHOWN_AT[key])), (step, key, widths)
        assert sum(widths.values()) <= float(frame) + 0.5
        text = page.eval_on_selector("#stage #dep-picture", "svg => svg.textContent")
        for at, name in LINES.items():  # the arithmetic, one more line per step
            assert (name + " =" in text) == (n >= STEPS.index(at)), (step, name)
        if step == "blocks":
            assert f"= {blocks:,}" in text
            assert page.get_attribute("#stage #dep-picture", "data-blocks") == str(blocks)
    page.click("#dep-scheduler-link")
    page.wait_for_url("**/explainers/scheduler/edit**")
    field = page.locator('input[name$="num_gpu_blocks"]')
    assert field.input_value() == str(blocks)
