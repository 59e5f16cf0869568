"""The editor's form as a user drives it: rows added and removed from the keyboard, a row's kind
switching its fields, a checkbox, the advanced JSON, axe on the richest forms, then Run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"


def posted(page, act) -> None:
    """Do ``act`` and wait until the form's POST is answered and swapped in."""
    with page.expect_response(lambda r: "/edit" in r.url and r.request.method == "POST"):
        act()
    page.wait_for_function("!document.querySelector('.htmx-request')")


def test_network_events_by_keyboard_then_run(live_server, page) -> None:
    """syn-timeout opens as a form with its drop as a row; Tab to "Add a network event" and
    Enter adds a row and puts focus in it; switching it to delay shows "extra delay" instead of
    "segments in a row"; the row's ✕ (Enter) removes it; Run opens the walkthrough."""
    page.goto(f"{live_server.url}/explainers/tcp/edit?preset=syn-timeout&lang=en")
    assert page.locator("select[name='network.0.kind']").input_value() == "drop"
    assert page.locator("input[name='network.0.count']").input_value() == "7"
    add = page.get_by_role("button", name="Add a network event")
    add.focus()
    posted(page, lambda: page.keyboard.press("Enter"))
    page.wait_for_selector("#network-row-1")
    focused = page.evaluate("document.activeElement.name")
    assert focused == "network.1.kind"
    posted(page, lambda: page.select_option("select[name='network.1.kind']", "delay"))
    page.wait_for_selector("input[name='network.1.ms']")
    assert page.locator("input[name='network.1.count']").count() == 0
    assert page.get_by_label("extra delay").count() == 1
    page.get_by_role("button", name="Remove network event 1").focus()
    posted(page, lambda: page.keyboard.press("Enter"))
    page.wait_for_selector("#network-row-1", state="detached")
    page.click("#run-btn")
    page.wait_for_url("**/explainers/tcp/custom?p=*")
    page.wait_for_selector("#player")


def test_checkbox_and_advanced_json(live_server, page) -> None:
    """A checkbox posts its state (scheduler head-of-line: chunked prefill off stays off after
    an unrelated change); JSON edited under the form redraws the form from it."""
    page.goto(f"{live_server.url}/explainers/scheduler/edit?preset=head-of-line&lang=en")
    box = page.get_by_role("checkbox", name="enable_chunked_prefill")
    assert not box.is_checked()
    posted(page, box.check)
    assert page.get_by_role("checkbox", name="enable_chunked_prefill").is_checked()
    posted(page, page.get_by_role("checkbox", name="enable_chunked_prefill").uncheck)
    assert not page.get_by_role("checkbox", name="enable_chunked_prefill").is_checked()
    page.click("details.json-advanced summary")
    area = page.locator("textarea[name='json']")
    params = json.loads(area.input_value())
    assert params["config"]["enable_chunked_prefill"] is False
    params["requests"][0]["max_tokens"] = 31
    area.fill(json.dumps(params))
    posted(page, page.get_by_role("button", name="Apply JSON").click)
    assert page.locator("input[name='requests.0.max_tokens']").input_value() == "31"
    assert page.locator(".field-error").count() == 0
    area = page.locator("textarea[name='json']")
    area.fill('{"config": {,}')
    posted(page, page.get_by_role("button", name="Apply JSON").click)
    text = page.inner_text("#editor")
    assert text.count("That is not valid JSON") == 1 and "Expecting" not in text


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize(
    "url",
    [
        "/explainers/tcp/edit?preset=keepalive",
        "/explainers/scheduler/edit?preset=prefix-caching",
        "/explainers/path/edit?preset=gro-burst",
    ],
)
def test_editor_forms_are_axe_clean(live_server, page, url: str, lang: str) -> None:
    """Every input of the richest forms is labelled; axe finds nothing serious or critical."""
    page.goto(f"{live_server.url}{url}&lang={lang}")
    page.wait_for_load_state("networkidle")
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        """async () => {
            const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}});
            return r.violations
              .filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
        }"""
    )
    assert result == [], "\n".join(result)
