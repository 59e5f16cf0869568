"""Switching language mid-walkthrough in a real browser lands on the same step."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser


def step_no(page) -> int:
    return int(page.inner_text("#step-no"))


def test_switch_language_mid_walkthrough_keeps_the_step(live_server, page) -> None:
    """Step forward with the keyboard (the URL changes without a reload), press 中文 in the
    header: the page comes back in Chinese on the same step, and English again the same way."""
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame?lang=en")
    page.wait_for_selector("#stage svg")
    assert page.get_attribute("html", "lang") == "en"
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert step_no(page) == 3 and re.search(r"[?&]step=3\b", page.url)
    english = page.inner_text("#side .narration")

    page.click("a[data-lang-switch='zh-CN']")
    page.wait_for_load_state("load")
    assert page.get_attribute("html", "lang") == "zh-CN"
    assert step_no(page) == 3 and re.search(r"[?&]step=3\b", page.url)
    chinese = page.inner_text("#side .narration")
    assert re.search(r"[\u4e00-\u9fff]", chinese) and chinese != english
    assert sorted(re.findall(r"\d+", chinese)) == sorted(re.findall(r"\d+", english))
    assert page.get_attribute("#btn-next", "aria-label") == "下一步"

    # the choice is remembered: a page opened without ?lang= stays Chinese
    page.goto(f"{live_server.url}/")
    assert page.get_attribute("html", "lang") == "zh-CN"

    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame?step=3")
    page.keyboard.press("ArrowRight")
    assert step_no(page) == 4
    page.click("a[data-lang-switch='en']")
    page.wait_for_load_state("load")
    assert page.get_attribute("html", "lang") == "en" and step_no(page) == 4
    assert page.get_attribute("#btn-next", "aria-label") == "Next step"


def test_play_button_words_follow_the_language(live_server, page) -> None:
    """The play button's label comes from the page's language (data attributes), not the script."""
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame?lang=zh-CN")
    page.click("#btn-play")
    assert page.get_attribute("#btn-play", "aria-label") == "暂停"
    page.click("#btn-play")
    assert page.get_attribute("#btn-play", "aria-label") == "播放"
