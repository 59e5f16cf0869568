"""Accessibility: axe-core (from npm) finds no serious or critical violation on any page type,
in both languages (run in Debian chromium through Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.recs import upload

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"

PAGES = [
    "/",
    "/explainers/skb/presets/rx-frame?step=3",
    "/explainers/cwnd/presets/slow-start?step=2",
    "/explainers/tcp/presets/handshake?step=5",
    "/explainers/path",
    "/explainers/scheduler",
    "/explainers/skb/edit?preset=panic",
    "/explainers/cwnd/edit",
    "/explainers/cwnd/compare?algos=reno,cubic&duration_s=5",
    "/embed/skb/presets/rx-frame?controls=min",
    "/notes/skb-kernel-check",
    "/my-scenarios",
    "/examples/slides",
    "/recordings",
]


@pytest.fixture(scope="module")
def _tab(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def page(_tab: Any) -> Any:
    """The pages checked here only load and are read: one tab for the module (a new context and
    page per test cost more CPU than axe), each test a new visitor (no cookies, so no language
    or session from the test before; these pages write no storage)."""
    _tab.context.clear_cookies()
    return _tab


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("url", PAGES)
def test_no_serious_or_critical_axe_violations(live_server, page, url: str, lang: str) -> None:
    """axe-core's WCAG 2 A/AA rules report nothing serious or critical on this page."""
    sep = "&" if "?" in url else "?"
    page.goto(f"{live_server.url}{url}{sep}lang={lang}")
    page.wait_for_load_state("networkidle")
    result = serious_violations(page)
    assert result == [], "\n".join(result)


def serious_violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found: list[str] = page.evaluate(
        """async () => {
            const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}});
            return r.violations
              .filter(v => v.impact === 'serious' || v.impact === 'critical')
              .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
        }"""
    )
    return found


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("kind", ["capture", "cwnd", "path"])
def test_recording_pages_have_no_serious_axe_violations(
    live_server, page, kind: str, lang: str
) -> None:
    """A recording's page (/r/{id}) of each kind, uploaded through the API: axe-core's WCAG 2
    A/AA rules report nothing serious or critical, nor any structure fault."""
    path = upload(live_server.url, kind)
    page.goto(f"{live_server.url}{path}?lang={lang}")
    page.wait_for_load_state("networkidle")
    result = serious_violations(page) + structure_violations(page)
    assert result == [], "\n".join(result)


# A live class is read on phones and shown on a projector (its theme): the join page (the
# student's view), the same with a question open, the presenter's view with the answers
# filling in, and a slide deck's embed joining the class.
SCREENS = {
    "phone": ({"width": 390, "height": 844}, "light"),
    "projector": ({"width": 1920, "height": 1080}, "projector"),
}


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("screen", list(SCREENS))
def test_class_pages_have_no_serious_axe_violations(
    live_server, browser, screen: str, lang: str
) -> None:
    """The class pages pass axe-core's WCAG 2 A/AA rules on a phone and on a projector."""
    viewport, theme = SCREENS[screen]
    made = httpx.post(
        f"{live_server.url}/api/v1/classes", json={"scenario": "cwnd/reno-sawtooth", "step": 3}
    ).json()
    ctx = browser.new_context(viewport=viewport, bypass_csp=True)
    page = ctx.new_page()
    page.goto(f"{live_server.url}/?lang={lang}")
    page.evaluate(
        "([id, token, theme]) => { localStorage.setItem('stepscope.class.lecturer.' + id, token);"
        " localStorage.setItem('stepscope-theme', theme); }",
        [made["id"], made["lecturer_token"], theme],
    )
    join = f"{made['join_url']}?lang={lang}"
    present = f"{live_server.url}{made['presenter_url']}?lang={lang}"
    embed = f"{live_server.url}/embed/c/{made['code']}?theme={theme}&lang={lang}"
    found: dict[str, list[str]] = {}

    def check(name: str, url: str, ready: str) -> None:
        page.goto(url)
        page.wait_for_selector(ready)
        assert page.evaluate("document.documentElement.dataset.theme") == theme
        assert page.evaluate("document.documentElement.lang") == lang
        found[name] = serious_violations(page) + structure_violations(page)

    check("join", join, "#class-status")
    check("presenter", present, ".class-qr svg")
    asked = httpx.post(
        f"{live_server.url}/api/v1/classes/{made['id']}/questions",
        json={"step": 4},
        headers={"Authorization": f"Bearer {made['lecturer_token']}"},
    )
    assert asked.status_code == 201, asked.text
    check("join, question open", join, "#class-question .class-choice")
    check("presenter, question open", present, "#class-counts li")
    check("embed", embed, "#class-status")
    ctx.close()
    bad = {name: v for name, v in found.items() if v}
    assert bad == {}, bad


STRUCTURE_RULES = ["heading-order", "page-has-heading-one", "empty-table-header", "landmark-unique"]
STRUCTURE_PAGES = [
    "/explainers/skb/presets/rx-frame?step=3",
    "/explainers/cwnd/presets/slow-start?step=2",
    "/explainers/scheduler",
    "/explainers/scheduler/compare",
    "/embed/skb/presets/rx-frame?controls=min",
    "/embed/cwnd/presets/slow-start",
    "/explainers/tcp/presets/handshake/handout",
]


@pytest.mark.parametrize("url", STRUCTURE_PAGES)
def test_headings_tables_and_regions_are_well_formed(live_server, page, url: str) -> None:
    """axe's structure rules: headings go down one level at a time from one h1 (embeds too),
    no table header is empty, and no two regions share a label (the Compare page's two
    timelines name their configuration)."""
    page.goto(f"{live_server.url}{url}")
    page.wait_for_load_state("networkidle")
    result = structure_violations(page)
    assert result == [], "\n".join(result)


def structure_violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found: list[str] = page.evaluate(
        """async (rules) => {
            const r = await axe.run(document, {runOnly: {type: 'rule', values: rules}});
            return r.violations.map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
        }""",
        STRUCTURE_RULES,
    )
    return found
