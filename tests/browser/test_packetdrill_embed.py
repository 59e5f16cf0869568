"""The embed of a packetdrill run (issue 25): a script pasted on the packetdrill page gives an
embed code; its player, in a 960×600 frame, steps line by line with the keyboard (the picture's
highlighted script line follows, the failing line shows ✗ and the verdict), fits the frame in
every theme by test_layout's probe, and speaks Chinese when the page did."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest

from tests.browser.test_layout import EMBED, _open, _theme, _walk

pytestmark = pytest.mark.browser

SCRIPT_LATE = ("+.3 > .", "+.31 > .")  # one expected packet 10 ms late: a mismatch


def _embed_src(live_server: Any, page: Any, lang: str = "en") -> str:
    page.goto(f"{live_server.url}/explainers/tcp/packetdrill?example=zero-window&lang={lang}")
    script = page.input_value("#pd-script").replace(*SCRIPT_LATE)
    page.fill("#pd-script", script)
    page.click(".pd-form button[type=submit]")
    page.wait_for_selector("#pd-embed-code")
    code = unescape(page.input_value("#pd-embed-code"))
    m = re.search(r'<iframe src="([^"]+)" width="960" height="600"', code)
    assert m is not None, code
    assert "/embed/tcp/packetdrill?s=" in m.group(1)
    return m.group(1)


def _line(page: Any) -> int:
    """The script line the picture highlights."""
    got = page.evaluate(
        "(() => { const r = document.querySelector('#stage .now-row');"
        " return r ? Number(r.nextElementSibling.textContent) : -1; })()"
    )
    return int(got)


def test_the_embed_of_a_shared_script_steps_with_the_keys(
    live_server: Any, page: Any, browser: Any
) -> None:
    src = _embed_src(live_server, page)
    context = browser.new_context(viewport=EMBED, reduced_motion="reduce", bypass_csp=True)
    frame = _open(context.new_page(), src, EMBED)
    try:
        count = int(frame.evaluate("window.Stepscope.count"))
        assert count > 10
        frame.click("#stage")
        lines = [_line(frame)]
        for _ in range(3):
            frame.keyboard.press("ArrowRight")
            lines.append(_line(frame))
        assert lines == sorted(lines) and len(set(lines)) == 4, lines
        assert int(frame.evaluate("window.Stepscope.step")) == 3
        frame.keyboard.press("ArrowLeft")
        assert _line(frame) == lines[2]
        # the late packet's step: ✗ in the picture, its time field marked, the verdict red
        for _ in range(count):
            if frame.locator("#stage [data-status=mismatch]").count():
                break
            frame.keyboard.press("ArrowRight")
        assert frame.locator("#stage [data-status=mismatch]").count() == 1
        assert "Fails at line" in frame.inner_text("#stage")
        assert frame.locator("#fields td.changed").count() >= 1
        problems: list[str] = []
        steps = sorted({0, count // 2, count - 1})
        for theme in ("projector", "light", "dark"):
            _theme(frame, theme)
            problems += _walk(frame, steps, "fit", f"packetdrill embed 960x600 {theme}")[0]
        assert not problems, problems
    finally:
        context.close()


def test_the_embed_speaks_the_pages_language(live_server: Any, page: Any, browser: Any) -> None:
    src = _embed_src(live_server, page, lang="zh-CN")
    assert "lang=zh-CN" in src
    context = browser.new_context(viewport=EMBED, reduced_motion="reduce", bypass_csp=True)
    frame = _open(context.new_page(), src, EMBED)
    try:
        assert frame.get_attribute("html", "lang") == "zh-CN"
        assert frame.get_attribute("html", "data-theme") == "projector"
        text = frame.inner_text("#side")
        assert re.search(r"[\u4e00-\u9fff]", text), text
        problems = _walk(frame, [0], "fit", "packetdrill embed zh-CN")[0]
        assert not problems, problems
    finally:
        context.close()
