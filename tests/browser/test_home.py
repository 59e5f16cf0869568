"""The home page's thumbnails in chromium: every explainer's card shows its key step's picture,
scaled into the card at phone and desktop widths in every theme, inert, named by the step's
narration in the reader's language, and a click opens that walkthrough at that step."""

from __future__ import annotations

import re

import pytest

from app.explainers import builtin

NAMES = [p.name for p in builtin()]

GEOMETRY = """() => [...document.querySelectorAll('.card')].map((card) => {
  const view = card.querySelector('.thumb-view');
  if (!view) return {id: card.id, missing: true};
  const inner = view.querySelector('.thumb-inner');
  const c = card.getBoundingClientRect(), v = view.getBoundingClientRect();
  const i = inner.getBoundingClientRect();
  const drawn = [...inner.querySelectorAll('svg, div, table')].filter((e) => {
    const r = e.getBoundingClientRect(); return r.width > 4 && r.height > 4;
  }).length;
  return {
    id: card.id, card: [c.left, c.right], view: [v.left, v.right, v.width, v.height],
    inner: [i.left, i.width], drawn, bg: getComputedStyle(view).backgroundColor,
  };
})"""


@pytest.mark.parametrize("theme", ["light", "dark", "projector"])
@pytest.mark.parametrize("width", [390, 1440])
def test_every_card_shows_its_thumbnail_scaled_into_the_card(
    live_server, browser, width: int, theme: str
) -> None:
    """Each card holds a drawn thumbnail whose picture is zoomed to the card's width (not cut off
    at the side, not overflowing the page), on a phone and on a desktop, in every theme."""
    ctx = browser.new_context(viewport={"width": width, "height": 844})
    ctx.add_init_script(f"localStorage.setItem('stepscope-theme', '{theme}')")
    page = ctx.new_page()
    try:
        page.goto(f"{live_server.url}/")
        assert page.evaluate("document.documentElement.dataset.theme") == theme
        cards = page.evaluate(GEOMETRY)
        assert [c["id"] for c in cards] == [f"explainer-{n}" for n in NAMES]
        for c in cards:
            assert not c.get("missing"), c["id"]
            left, right, vw, vh = c["view"]
            assert c["card"][0] <= left and right <= c["card"][1] + 0.5, c
            assert vh >= vw / 2 - 1 and vw > 250, c  # a 2:1 window, wide enough to see
            assert abs(c["inner"][0] - left) < 2 and abs(c["inner"][1] - vw) < 3, c  # zoomed to fit
            assert c["drawn"] > 0, c
            if theme == "dark":
                r, g, b = map(int, re.findall(r"\d+", c["bg"])[:3])
                assert r + g + b < 150, c  # drawn on the dark background, not a white box
        # the cards stay inside the window (the site header is the layout's business)
        right = page.evaluate(
            "Math.max(...[...document.querySelectorAll('.card')]"
            ".map((c) => c.getBoundingClientRect().right))"
        )
        assert right <= width
    finally:
        ctx.close()


def test_thumbnail_is_inert_named_by_narration_and_opens_that_step(live_server, page) -> None:
    """The picture takes no focus and holds no link; its text alternative is the step's
    narration (Chinese on the Chinese page); a click on it opens the walkthrough at that step."""
    page.goto(f"{live_server.url}/?lang=zh-CN")
    for name in NAMES:
        view = page.locator(f"#explainer-{name} .thumb-view")
        label = view.get_attribute("aria-label") or ""
        assert view.get_attribute("role") == "img"
        assert re.search(r"[\u4e00-\u9fff]", label), (name, label)
        assert page.evaluate(
            """(name) => {
                const inner = document.querySelector(`#explainer-${name} .thumb-inner`);
                return inner.inert && !inner.querySelector('a, button, [tabindex], input, select');
            }""",
            name,
        )
    # Tab from the card's heading link goes to the thumbnail's link, never into the picture.
    page.focus("#explainer-tcp h2 a")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "thumb-tcp"
    href = page.get_attribute("#thumb-tcp", "href") or ""
    step = int(href.rsplit("step=", 1)[1])
    box = page.locator("#explainer-tcp .thumb-view").bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # on the picture
    page.wait_for_url(re.compile(r"/explainers/tcp/presets/.*step="))
    assert page.get_attribute("#player", "data-step") == str(step)


def test_home_page_suggests_a_course_and_a_first_walkthrough(live_server, page) -> None:
    """ "Start here": the explainers in the course order their plugins declare (sk_buff, packet
    paths, TCP, congestion control, scheduler, deployment), each linked to the walkthrough its plugin names
    first, which its card marks too; the links open those walkthroughs."""
    plugins = sorted(builtin(), key=lambda p: p.course_order)
    assert [p.name for p in plugins] == ["skb", "path", "tcp", "cwnd", "scheduler", "deploy"]
    page.goto(f"{live_server.url}/")
    items = page.eval_on_selector_all(
        "#course-list li",
        "ls => ls.map(l => [l.dataset.explainer, l.querySelector('a').getAttribute('href')])",
    )
    assert items == [[p.name, f"/explainers/{p.name}/presets/{p.start_preset}"] for p in plugins], (
        items
    )
    for p in plugins:
        marked = page.locator(f"#explainer-{p.name} li:has(.start-here) a").get_attribute("href")
        assert marked == f"/explainers/{p.name}/presets/{p.start_preset}"
    page.click("#course-list li:first-child a")
    page.wait_for_selector("#player")
    assert page.url.endswith(f"/presets/{plugins[0].start_preset}")
