"""Accessibility: axe-core (from npm) finds no serious or critical violation on any page type,
in both languages (run in Debian chromium through Playwright)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
]


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("url", PAGES)
def test_no_serious_or_critical_axe_violations(live_server, page, url: str, lang: str) -> None:
    """axe-core's WCAG 2 A/AA rules report nothing serious or critical on this page."""
    sep = "&" if "?" in url else "?"
    page.goto(f"{live_server.url}{url}{sep}lang={lang}")
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
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        """async (rules) => {
            const r = await axe.run(document, {runOnly: {type: 'rule', values: rules}});
            return r.violations.map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
        }""",
        STRUCTURE_RULES,
    )
    assert result == [], "\n".join(result)
