"""The player's picture exports follow the reader's colour theme: a reader on the dark or the
projector theme who saves "This step as SVG/PNG" gets the picture as they see it (the links said
nothing of the theme, so every export came out light)."""

from __future__ import annotations

import httpx


def test_export_links_carry_the_theme_the_reader_sees(live_server, page) -> None:
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame?step=2")
    svg = page.locator("#export-svg")
    png = page.locator("#export-png")
    assert "theme=light" in (svg.get_attribute("href") or "")
    page.select_option("#theme-picker", "dark")
    page.wait_for_function(
        "document.querySelector('#export-svg').getAttribute('href').includes('theme=dark')"
    )
    assert "theme=dark" in (png.get_attribute("href") or "")
    href = svg.get_attribute("href") or ""
    answer = httpx.get(live_server.url + href, timeout=60)
    assert answer.status_code == 200
    assert 'data-theme="dark"' in answer.text
    # the choice is remembered: a new page on the projector theme starts with it in its links
    page.select_option("#theme-picker", "projector")
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame?step=1")
    href = page.locator("#export-png").get_attribute("href") or ""
    assert "theme=projector" in href and "step=1" in href
