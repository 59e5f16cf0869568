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
