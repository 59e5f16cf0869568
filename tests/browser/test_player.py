"""The player as a user drives it: keyboard stepping, pointer positions read off the SVG, the URL."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser


def ptr(page, skb: str, name: str) -> int:
    return int(page.get_attribute(f"#stage #ptr-{skb}-{name}", "data-offset"))


def step_no(page) -> int:
    return int(page.inner_text("#step-no"))


def test_keyboard_steps_move_pointers(live_server, page) -> None:
    """→ steps forward, ← back; data/tail pointers on the SVG follow the kernel's arithmetic."""
    ops = '{"ops":[{"op":"alloc_skb","size":1500},{"op":"skb_reserve","len":64},{"op":"skb_put","len":100},{"op":"skb_push","len":20}]}'
    import base64

    token = base64.urlsafe_b64encode(ops.encode()).decode().rstrip("=")
    page.goto(f"{live_server.url}/explainers/skb/custom?p={token}")
    page.wait_for_selector("#stage svg")
    assert (ptr(page, "skb", "data"), ptr(page, "skb", "tail"), ptr(page, "skb", "end")) == (
        0,
        0,
        1728,
    )
    page.keyboard.press("ArrowRight")
    assert step_no(page) == 1
    assert (ptr(page, "skb", "data"), ptr(page, "skb", "tail")) == (64, 64)
    page.keyboard.press("ArrowRight")
    assert ptr(page, "skb", "tail") == 164
    page.keyboard.press("ArrowRight")
    assert ptr(page, "skb", "data") == 44
    assert re.search(r"[?&]step=3\b", page.url)
    page.keyboard.press("ArrowLeft")
    assert ptr(page, "skb", "data") == 64 and step_no(page) == 2
    # the pointer element is the same node, moved by CSS transform (it glides, not re-created)
    style = page.get_attribute("#stage #ptr-skb-tail", "style")
    assert "translate(" in style


def test_home_end_space_and_reload(live_server, page) -> None:
    """End jumps to the last step, Home to the first; reload and back keep the step from the URL."""
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame")
    count = int(page.get_attribute("#player", "data-count"))
    page.keyboard.press("End")
    assert step_no(page) == count - 1
    page.reload()
    assert step_no(page) == count - 1
    page.keyboard.press("Home")
    assert step_no(page) == 0
    page.go_back()
    page.wait_for_function(f"document.getElementById('step-no').textContent == '{count - 1}'")
    page.keyboard.press("Home")
    page.keyboard.press(" ")  # play
    page.wait_for_function(
        "Number(document.getElementById('step-no').textContent) >= 1", timeout=5000
    )
    page.keyboard.press(" ")  # pause
    assert page.get_attribute("#btn-play", "aria-label") == "Play"


def test_changed_fields_are_highlighted_and_narration_updates(live_server, page) -> None:
    """The field table marks what the step changed; the narration names the op."""
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame?step=1")
    changed = page.eval_on_selector_all(
        "#fields td.changed", "els => els.map(e => e.dataset.field)"
    )
    assert changed, "a step that changes the skb highlights fields"
    side = page.inner_text("#side")
    assert "Linux 6.4" in side


def test_panic_preset_ends_with_the_bug(live_server, page) -> None:
    """The panic walkthrough's last step shows the BUG banner and the BUG name."""
    page.goto(f"{live_server.url}/explainers/skb/presets/panic")
    page.keyboard.press("End")
    assert page.is_visible("#stage #panic-banner")
    assert "skb_over_panic" in page.inner_text("#side")


def test_editor_builds_and_runs_a_scenario(live_server, page) -> None:
    """In the editor a user adds an op, sees a field error, fixes it and runs the scenario."""
    page.goto(f"{live_server.url}/explainers/skb/edit?preset=panic")
    rows_before = page.locator(".op-row").count()
    page.click("text=Add an op")
    page.wait_for_function(f"document.querySelectorAll('.op-row').length == {rows_before + 1}")
    last = rows_before
    page.fill(f"input[name='ops.{last}.len']", "-3")
    page.locator(f"input[name='ops.{last}.len']").dispatch_event("change")
    page.wait_for_selector(f"#err-ops-{last}-len")
    page.fill(f"input[name='ops.{last}.len']", "3")
    page.locator(f"input[name='ops.{last}.len']").dispatch_event("change")
    # wait for the answer to this change (the fixed field), not the previous error's message:
    # a Run clicked while that request is in flight would be dropped by htmx
    page.wait_for_selector(".ok-msg")
    page.click("#run-btn")
    page.wait_for_url(re.compile(r"/explainers/skb/custom\?p="))
    assert int(page.get_attribute("#player", "data-count")) >= 1


def test_editor_hears_a_change_made_right_after_a_swap(live_server, page) -> None:
    """A change made the moment the editor re-renders (a quick Tab after an edit) still reaches
    the server: the swapped-in form listens at once, not after htmx's settle delay."""
    page.goto(f"{live_server.url}/explainers/skb/edit?preset=panic")
    page.fill("input[name='ops.1.len']", "-3")
    # when the error answer lands, fix the field and fire its change in the same turn
    page.evaluate(
        """() => new MutationObserver((_, obs) => {
            const f = document.querySelector("input[name='ops.1.len']");
            if (!document.getElementById('err-ops-1-len')) return;
            obs.disconnect();
            f.value = '3';
            f.dispatchEvent(new Event('change', {bubbles: true}));
        }).observe(document.body, {childList: true, subtree: true})"""
    )
    page.locator("input[name='ops.1.len']").dispatch_event("change")
    page.wait_for_selector(".ok-msg", timeout=10_000)
    assert page.input_value("input[name='ops.1.len']") == "3"


def test_phone_layout_has_no_horizontal_scroll(live_server, browser) -> None:
    """On a phone-sized screen the page fits its width (the side panel folds under the picture)."""
    ctx = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, bypass_csp=True
    )
    pg = ctx.new_page()
    widths = {}
    for url in (
        "/",
        "/explainers/skb/presets/tcp-transmit",
        "/explainers/cwnd/presets/cubic-vs-reno",
        "/explainers/skb/edit",
        "/notes/cwnd-kernel-check",
    ):
        pg.goto(f"{live_server.url}{url}")
        widths[url] = pg.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
    ctx.close()
    assert all(v <= 1 for v in widths.values()), widths


def test_long_scenario_fetches_frames_beyond_the_page(live_server, page) -> None:
    """End on a 300-step scenario loads the last frames on demand and shows them; frames come
    in chunks on a fixed 40-frame grid, each asked for once however fast the reader steps."""
    import base64
    import json
    from urllib.parse import parse_qs, urlparse

    ops = [{"op": "alloc_skb", "size": 1500}] + [{"op": "skb_reserve", "len": 1}] * 299
    token = base64.urlsafe_b64encode(json.dumps({"ops": ops}).encode()).decode().rstrip("=")
    asked: list[tuple[int, int]] = []

    def note(request) -> None:
        if "/frames?" in request.url:
            q = parse_qs(urlparse(request.url).query)
            asked.append((int(q["start"][0]), int(q["count"][0])))

    page.on("request", note)
    page.goto(f"{live_server.url}/explainers/skb/custom?p={token}")
    assert page.locator(".frame-store template").count() < 300
    page.keyboard.press("End")
    page.wait_for_function(
        "document.querySelector('#stage #ptr-skb-data')?.dataset.offset == '299'"
    )
    assert step_no(page) == 299
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "document.querySelector('#stage #ptr-skb-data')?.dataset.offset == '298'"
    )
    # hold ← from the end: every step asks for frames 15 behind it
    page.evaluate("async () => { for (let i = 0; i < 60; i++) window.Stepscope.prev(); }")
    page.wait_for_function("window.Stepscope.step === 238")
    page.wait_for_function(
        "document.querySelector('#stage #ptr-skb-data')?.dataset.offset == '238'"
    )
    assert asked and all(start % 40 == 0 and count == 40 for start, count in asked), asked
    assert len(asked) == len(set(asked)), asked
    assert (280, 40) in asked and (200, 40) in asked


def test_editor_keeps_focus_and_caret_across_updates(live_server, page) -> None:
    """Typing in a field that the editor re-renders (htmx swap after a change) keeps the focus
    and the caret in that field, so the next keys land in it, not in the page body."""
    page.goto(f"{live_server.url}/explainers/skb/edit?preset=panic")
    field = page.locator("input[name='ops.0.size']")
    field.click()
    field.press("End")
    field.type("0")
    # wait for the swap itself (a message from the first render may already be on the page)
    page.evaluate(
        "window.__settled = false;"
        " document.addEventListener('htmx:afterSettle', () => { window.__settled = true; })"
    )
    field.dispatch_event("change")
    page.wait_for_function(
        "window.__settled && document.activeElement && document.activeElement.name === 'ops.0.size'"
    )
    page.keyboard.type("1")
    value = page.input_value("input[name='ops.0.size']")
    assert value.endswith("01"), value


def test_step_list_follows_the_player_and_jumps(live_server, page) -> None:
    """The step list marks the current step as the reader steps, a click on a line jumps to
    that step, and the kind filter hides the other kinds."""
    page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector('#transcript li[data-step="1"][aria-current="step"]')
    page.click('#transcript li[data-step="3"] a')
    page.wait_for_function("document.getElementById('step-no').textContent === '3'")
    assert "step=3" in page.url
    kinds = page.eval_on_selector_all("#transcript-filter option", "os => os.map(o => o.value)")
    kind = next(k for k in kinds if k)
    page.select_option("#transcript-filter", kind)
    shown = page.eval_on_selector_all(
        "#transcript li", "ls => ls.filter(l => !l.hidden).map(l => l.dataset.kind)"
    )
    assert shown and set(shown) == {kind}


PLAY_BOX = (
    "(() => { const b = document.getElementById('btn-play').getBoundingClientRect();"
    " return [Math.round(b.left), Math.round(b.top)]; })()"
)


@pytest.mark.parametrize(
    ("explainer", "slug"),
    [
        ("tcp", "handshake"),
        ("skb", "tcp-transmit"),
        ("scheduler", "chunked-prefill"),
        ("path", "forward"),
        ("cwnd", "slow-start"),
    ],
)
def test_controls_stay_put_from_step_to_step(live_server, browser, explainer, slug) -> None:
    """On a laptop and on a phone ▶ is at the same place on every step, however long the step's
    narration or tall its picture, so repeated clicks land on it."""
    for viewport in ({"width": 1440, "height": 900}, {"width": 390, "height": 844}):
        ctx = browser.new_context(viewport=viewport, reduced_motion="reduce", bypass_csp=True)
        pg = ctx.new_page()
        pg.goto(f"{live_server.url}/explainers/{explainer}/presets/{slug}")
        count = int(pg.evaluate("window.Stepscope.count"))
        spots = {}
        for n in range(count):
            pg.evaluate(f"window.Stepscope.goto({n})")
            spots.setdefault(tuple(pg.evaluate(PLAY_BOX)), []).append(n)
        ctx.close()
        assert len(spots) == 1, (viewport, spots)


PHONE_PROBE = """(() => {
  const box = (el) => { const b = el.getBoundingClientRect(); return {t: b.top, b: b.bottom, l: b.left, r: b.right}; };
  const st = document.getElementById('stage');
  const words = document.querySelector('#side .narration');
  return {stage: box(st), over: st.scrollWidth - st.clientWidth, controls: box(document.querySelector('.controls')),
          words: box(words), wordsEnd: words.getBoundingClientRect().top + Math.min(words.scrollHeight, 120),
          page: document.documentElement.scrollWidth - document.documentElement.clientWidth};
})()"""


@pytest.mark.parametrize(
    ("explainer", "slug", "wide"),
    [
        ("tcp", "handshake", True),
        ("skb", "tcp-transmit", True),
        ("path", "forward", True),
        ("scheduler", "chunked-prefill", False),
        ("cwnd", "bbr-vs-cubic", False),
    ],
)
def test_phone_shows_a_step_on_one_screen(live_server, browser, explainer, slug, wide) -> None:
    """At 390×844 (page unscrolled) the picture is drawn to the screen's width (nothing cropped
    sideways), the controls come right under it and the narration right under them, all within
    the screen; a picture wider than the screen (``wide``) gets the zoom button, which draws it
    at full size (the box scrolls) and back."""
    ctx = browser.new_context(
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        reduced_motion="reduce",
        bypass_csp=True,
    )
    pg = ctx.new_page()
    pg.goto(f"{live_server.url}/explainers/{explainer}/presets/{slug}?step=3")
    got = pg.evaluate(PHONE_PROBE)
    assert got["page"] <= 1, got
    assert got["over"] <= 2, got
    assert got["stage"]["t"] < got["controls"]["t"] < got["words"]["t"], got
    assert got["stage"]["r"] <= 390 and got["stage"]["l"] >= 0, got
    assert got["controls"]["b"] <= 844 and got["wordsEnd"] <= 844, got
    zoom = pg.locator("#btn-zoom")
    assert zoom.is_visible() == wide
    if not wide:
        ctx.close()
        return
    zoom.click()
    assert zoom.get_attribute("aria-pressed") == "true"
    assert pg.evaluate(PHONE_PROBE)["over"] > 100  # full size: the picture box scrolls sideways
    zoom.click()
    assert pg.evaluate(PHONE_PROBE)["over"] <= 2
    ctx.close()


def test_glossary_definition_stays_on_a_phone_screen(live_server, browser) -> None:
    """A term near the right edge shows its definition (on focus or tap) inside the screen."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto(f"{live_server.url}/explainers/cwnd/presets/slow-start?step=3")
    terms = pg.locator("#side abbr.term")
    assert terms.count() > 0
    rightmost = max(range(terms.count()), key=lambda i: terms.nth(i).bounding_box()["x"])
    terms.nth(rightmost).focus()
    tip = pg.evaluate(
        """(() => { const t = document.activeElement; const b = t.getBoundingClientRect();
        const cs = getComputedStyle(t, '::after');
        const left = b.left + parseFloat(cs.left); return [left, left + parseFloat(cs.width)]; })()"""
    )
    ctx.close()
    assert tip[0] >= 0 and tip[1] <= 390, tip


def test_plotly_mode_bar_leaves_chart_titles_alone_on_a_phone(live_server, browser) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto(f"{live_server.url}/explainers/cwnd/presets/slow-start")
    pg.wait_for_selector(".js-plotly-plot .modebar-container", state="attached")
    pg.hover(".js-plotly-plot")
    shown = pg.eval_on_selector_all(
        ".js-plotly-plot .modebar-container", "els => els.filter(e => e.checkVisibility()).length"
    )
    ctx.close()
    assert shown == 0


def test_arrow_on_the_walkthrough_picker_steps_instead_of_switching(live_server, page) -> None:
    """After the walkthrough drop-down was used (it keeps the focus), → and a clicker's PageDown
    step the walkthrough; they do not pick the next walkthrough."""
    page.goto(f"{live_server.url}/explainers/tcp/presets/handshake")
    page.focus("select[data-navigate]")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("PageDown")
    page.wait_for_function("document.getElementById('step-no').textContent === '2'")
    assert "/presets/handshake" in page.url
    assert page.input_value("select[data-navigate]").endswith("/presets/handshake")


@pytest.mark.parametrize("explainer", ["skb", "tcp", "cwnd", "scheduler", "path"])
def test_lesson_intro_is_open_at_step_zero_and_steps_count_alike(
    live_server, browser, explainer
) -> None:
    """At step 0 on a laptop the lesson's "About this walkthrough" is open (it folds once the
    reader steps on), and the step list is numbered like the counter: "step 0 / N" beside
    "All steps (0–N)"."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
    pg = ctx.new_page()
    pg.goto(f"{live_server.url}/explainers/{explainer}")
    assert pg.evaluate("document.querySelector('.lesson-intro').open") is True
    last = pg.inner_text("#counter").split("/")[-1].strip()
    assert pg.inner_text("#transcript-box > summary") == f"All steps (0–{last})"
    pg.keyboard.press("ArrowRight")
    pg.wait_for_function("!document.querySelector('.lesson-intro').open")
    ctx.close()
