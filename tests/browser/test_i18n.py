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


# --- Chinese legends take the room they need ------------------------------------------------

OVERLAPS = """() => {
  const out = [];
  const box = (e) => e.getBoundingClientRect();
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5
                        && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  for (const svg of document.querySelectorAll('svg')) {
    if (!svg.getClientRects().length) continue;
    const items = Array.from(svg.querySelectorAll('.legend-item')).map(box);
    const titles = Array.from(svg.querySelectorAll('text.title')).map(box);
    const frame = box(svg);
    items.forEach((a, i) => {
      if (a.right > frame.right + 0.5 || a.left < frame.left - 0.5)
        out.push(`${svg.id || svg.getAttribute('aria-label')}: item ${i} outside the picture`);
      items.slice(i + 1).forEach((b, j) => {
        if (hit(a, b)) out.push(`${svg.id || svg.getAttribute('aria-label')}: items ${i} and ${i + j + 1}`);
      });
      titles.forEach((t) => {
        if (hit(a, t)) out.push(`${svg.id || svg.getAttribute('aria-label')}: item ${i} on the title`);
      });
    });
  }
  return out;
}"""
COUNT = "() => document.querySelectorAll('svg .legend-item').length"


@pytest.mark.parametrize(
    "url",
    [
        "/explainers/scheduler/presets/continuous-batching?step=3",
        "/explainers/scheduler/presets/preemption-fcfs?step=34",
        "/explainers/scheduler/presets/prefix-caching?step=2",
        "/explainers/scheduler/presets/chunked-prefill?step=5",
        "/explainers/scheduler/compare?preset=continuous-batching&vary=batching",
        "/explainers/scheduler/compare?preset=preemption-fcfs&vary=policy",
    ],
)
@pytest.mark.parametrize("lang", ["zh-CN", "en"])
def test_legend_items_never_overlap(live_server, page, url: str, lang: str) -> None:
    """The scheduler picture's legends (KV cache, token budget, timeline) and the Compare page's
    chart legends, in Chinese and English: no legend item overlaps another or its chart's title,
    and none runs past the picture's edge."""
    page.goto(f"{live_server.url}{url}&lang={lang}")
    page.wait_for_selector("svg .legend-item")
    page.evaluate("document.fonts.ready")
    assert page.evaluate(COUNT) >= 4
    assert page.evaluate(OVERLAPS) == []
