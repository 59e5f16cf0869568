"""Embeds as a lecturer uses them: framed by a page on another origin, driven by postMessage
and a presenter's clicker (PageDown/PageUp), and inside the reveal.js example deck."""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.explainers import builtin

SIMS = {p.name: p.sim for p in builtin()}

pytestmark = pytest.mark.browser

EMBED = "/embed/skb/presets/rx-frame?controls=min"

HOST_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Host deck</title>
<script>
  window.log = [];
  window.addEventListener("message", (e) => {{
    if (e.origin !== "{origin}") return;
    window.log.push(e.data);
  }});
  window.send = (msg) => document.getElementById("f").contentWindow.postMessage(msg, "{origin}");
</script></head>
<body>
<h1>A slide on another origin</h1>
<iframe id="f" src="{embed}" width="960" height="600"
        onload="send({{type: 'stepscope:hello'}})"></iframe>
</body></html>
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def host(live_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A second, unrelated web server on another loopback address and port: another origin."""
    root = tmp_path_factory.mktemp("host")
    (root / "index.html").write_text(
        HOST_PAGE.format(embed=live_server.url + EMBED, origin=live_server.url), encoding="utf-8"
    )
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.2:{server.server_address[1]}/index.html"
    server.shutdown()
    server.server_close()


def last_step(page) -> dict:
    return page.evaluate("window.log.filter(m => m.type === 'stepscope:step').slice(-1)[0] || null")


def wait_step(page, n: int) -> None:
    page.wait_for_function(
        f"(() => {{ const s = window.log.filter(m => m.type === 'stepscope:step'); "
        f"return s.length && s[s.length - 1].step === {n}; }})()",
        timeout=5000,
    )


def test_cross_origin_host_drives_the_embed(live_server, host, page) -> None:
    """A page on another origin frames the embed, steps it by postMessage and reads the steps."""
    page.goto(host)
    assert page.evaluate("location.origin") != live_server.url
    page.wait_for_function("window.log.some(m => m.type === 'stepscope:step')", timeout=10000)
    first = last_step(page)
    history_before = page.evaluate("history.length")
    assert first["step"] == 0 and first["count"] >= 5
    count = first["count"]
    page.evaluate("send({type: 'stepscope:goto', step: 2})")
    wait_step(page, 2)
    frame = page.frame_locator("#f")
    assert frame.locator("#step-no").inner_text() == "2"
    page.evaluate("send({type: 'stepscope:next'})")
    wait_step(page, 3)
    page.evaluate("send({type: 'stepscope:prev'})")
    wait_step(page, 2)
    page.evaluate("send({type: 'stepscope:goto', step: 999})")
    wait_step(page, count - 1)
    page.evaluate(
        "send({type: 'stepscope:goto', step: 'x'}); send({type: 'other'}); send('slide:start')"
    )
    page.evaluate("send({type: 'stepscope:goto', step: 0})")
    wait_step(page, 0)
    # the host's own history is untouched by stepping inside the iframe
    assert page.evaluate("history.length") == history_before


def test_clicker_keys_step_then_hand_off_to_the_host(live_server, host, page) -> None:
    """PageDown steps the embed to its end, then is handed back; PageUp likewise at step 0."""
    page.goto(host)
    page.wait_for_function("window.log.some(m => m.type === 'stepscope:step')", timeout=10000)
    count = last_step(page)["count"]
    page.frame_locator("#f").locator("#stage").click()  # the presenter clicked into the slide
    seen = []
    for n in range(1, count):
        page.keyboard.press("PageDown")
        wait_step(page, n)
        seen.append(last_step(page)["step"])
    assert seen == list(range(1, count))
    page.keyboard.press("PageDown")
    page.wait_for_function("window.log.some(m => m.type === 'stepscope:handoff')", timeout=5000)
    handoff = page.evaluate("window.log.filter(m => m.type === 'stepscope:handoff')[0]")
    assert handoff == {
        "type": "stepscope:handoff",
        "key": "PageDown",
        "direction": "next",
        "step": count - 1,
        "count": count,
    }
    assert last_step(page)["step"] == count - 1
    page.keyboard.press("ArrowLeft")
    wait_step(page, count - 2)
    page.keyboard.press("Home")
    wait_step(page, 0)
    page.keyboard.press("PageUp")
    page.wait_for_function(
        "window.log.some(m => m.type === 'stepscope:handoff' && m.direction === 'prev')",
        timeout=5000,
    )


def test_reveal_deck_clicker_steps_each_animation_before_the_next_slide(live_server, page) -> None:
    """In /examples/slides one clicker steps the embedded animation, then moves to the next slide."""
    page.goto(f"{live_server.url}/examples/slides")
    page.wait_for_function(
        "window.Reveal && window.Reveal.isReady() && window.stepscopeDeck.state('embed-1')"
        " && window.stepscopeDeck.state('embed-2')",
        timeout=15000,
    )
    slide = lambda: page.evaluate("Reveal.getIndices().h")  # noqa: E731
    assert slide() == 0
    page.keyboard.press("PageDown")
    page.wait_for_function("Reveal.getIndices().h === 1")
    count = page.evaluate("stepscopeDeck.state('embed-1').count")
    for n in range(1, count):
        page.keyboard.press("PageDown")
        page.wait_for_function(f"stepscopeDeck.state('embed-1').step === {n}", timeout=5000)
        assert slide() == 1
    page.keyboard.press("PageDown")
    page.wait_for_function("Reveal.getIndices().h === 2")
    page.keyboard.press("PageUp")  # back on slide 2's embed at step 0: the deck goes back a slide
    page.wait_for_function("Reveal.getIndices().h === 1")
    page.keyboard.press("PageUp")  # slide 1's embed is at its end: step back inside it
    page.wait_for_function(f"stepscopeDeck.state('embed-1').step === {count - 2}")
    assert slide() == 1
    # with focus inside an embed, its own hand-off at the end moves the deck on
    page.keyboard.press("PageDown")
    page.wait_for_function(f"stepscopeDeck.state('embed-1').step === {count - 1}")
    page.frame_locator("#embed-1").locator("#stage").click()
    page.keyboard.press("PageDown")
    page.wait_for_function("Reveal.getIndices().h === 2", timeout=5000)
    handoffs = page.evaluate("stepscopeDeck.log.filter(m => m.type === 'stepscope:handoff').length")
    assert handoffs == 1


def test_share_button_saves_copies_and_the_link_reopens(live_server, browser) -> None:
    """Share saves the scenario, shows and copies /s/{id}?step=N, and the link opens that step."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = ctx.new_page()
    try:
        page.goto(f"{live_server.url}/explainers/skb/presets/rx-frame")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.click("#share-menu summary")
        page.fill("#share-title", "Pulled by students")
        page.click("#share-create")
        page.wait_for_function("document.getElementById('share-url').value.includes('/s/')")
        link = page.input_value("#share-url")
        assert link.startswith(live_server.url + "/s/") and link.endswith("?step=2")
        page.wait_for_function(
            "document.getElementById('share-status').textContent.includes('copied')"
        )
        assert page.evaluate("navigator.clipboard.readText()") == link
        embed_code = page.input_value("#embed-code")
        assert "/embed/s/" in embed_code and "<iframe" in embed_code
        page.goto(link)
        assert page.inner_text("#step-no") == "2"
        assert "Pulled by students" in page.inner_text("h1")
    finally:
        ctx.close()


def test_progress_is_remembered_for_continue(live_server, browser) -> None:
    """Stepping a walkthrough is remembered: reopening it offers "Continue at step N"."""
    ctx = browser.new_context(bypass_csp=True)
    page = ctx.new_page()
    try:
        url = f"{live_server.url}/explainers/skb/presets/clone-retransmit"
        page.goto(url)
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "document.getElementById('player').dataset.progressSaved === '3'", timeout=5000
        )
        page.goto(url)
        assert page.inner_text("#resume-link") == "Continue at step 3"
        page.click("#resume-link")
        page.wait_for_function("document.getElementById('step-no').textContent === '3'")
    finally:
        ctx.close()


def test_leaving_right_after_a_step_still_saves_it(live_server, browser) -> None:
    """The progress save waits 400 ms for more steps; leaving the page before then sends it
    at once (pagehide), so reopening offers the step the reader left at."""
    ctx = browser.new_context(bypass_csp=True)
    page = ctx.new_page()
    try:
        url = f"{live_server.url}/explainers/skb/presets/clone-retransmit"
        page.goto(url)
        for _ in range(2):
            page.keyboard.press("ArrowRight")
        page.goto(url)  # at once: the debounced save has not gone yet
        text = ""
        for _ in range(20):  # the keepalive save may land just after this page's request
            if page.locator("#resume-link").count():
                text = page.inner_text("#resume-link")
                if text == "Continue at step 2":
                    break
            page.wait_for_timeout(250)
            page.goto(url)
        assert text == "Continue at step 2"
    finally:
        ctx.close()


def test_a_step_link_visit_is_remembered_for_continue(live_server, browser) -> None:
    """Opening a walkthrough at ``?step=N`` (no stepping) counts as reaching step N: the home
    page's "continue where you left off" lists it."""
    ctx = browser.new_context(bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto(f"{live_server.url}/explainers/tcp/presets/time-wait?step=4")
        page.wait_for_function(
            "document.getElementById('player').dataset.progressSaved === '4'", timeout=5000
        )
        page.goto(f"{live_server.url}/")
        link = page.locator(".continue a", has_text="")
        hrefs = link.evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert "/explainers/tcp/presets/time-wait?step=4" in hrefs, hrefs
    finally:
        ctx.close()


@pytest.mark.parametrize("name", list(SIMS))
def test_offline_export_runs_from_file_with_the_keyboard(
    live_server, page, tmp_path: Path, name: str
) -> None:
    """The offline HTML opened from file:// (no server) steps with the keyboard through every frame."""
    r = page.request.get(f"{live_server.url}/export/html?explainer={name}")
    path = tmp_path / "walkthrough.html"
    path.write_bytes(r.body())
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    count = int(page.get_attribute("#player", "data-count"))
    assert page.inner_text("#step-no") == "0"
    first = stage_markup(page)
    page.keyboard.press("ArrowRight")
    assert page.inner_text("#step-no") == "1"
    assert stage_markup(page) != first
    page.keyboard.press("End")
    assert page.inner_text("#step-no") == str(count - 1)
    page.keyboard.press("Home")
    assert stage_markup(page) == first
    assert errors == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests


def test_png_export_matches_the_svg_export_pixel_for_pixel(live_server, page) -> None:
    """The server's PNG of a step looks like the SVG of that step drawn by the browser: the
    same picture, framed by an even margin of plain background on every side."""
    q = "explainer=skb&preset=tcp-transmit&step=5"
    page.goto(f"{live_server.url}/static/css/app.css")  # same origin, so canvases stay readable
    diff = page.evaluate(
        """async (q) => {
          const load = (src) => new Promise((ok, bad) => { const i = new Image(); i.onload = () => ok(i); i.onerror = bad; i.src = src; });
          const png = await load('/export/png?scale=1&' + q);
          const svg = await load('/export/svg?' + q);
          const w = svg.naturalWidth, h = svg.naturalHeight;
          const mx = (png.naturalWidth - w) / 2, my = (png.naturalHeight - h) / 2;
          const pixels = (img, x, y, iw, ih) => { const c = document.createElement('canvas'); c.width = w; c.height = h;
            const g = c.getContext('2d'); g.drawImage(img, x, y, iw, ih); return g.getImageData(0, 0, w, h).data; };
          const a = pixels(png, -mx, -my, png.naturalWidth, png.naturalHeight), b = pixels(svg, 0, 0, w, h);
          let off = 0;
          for (let i = 0; i < a.length; i += 4) {
            if (Math.abs(a[i] - b[i]) + Math.abs(a[i+1] - b[i+1]) + Math.abs(a[i+2] - b[i+2]) > 96) off++;
          }
          return {off, total: a.length / 4, mx, my};
        }""",
        q,
    )
    assert diff["mx"] == diff["my"] and 0 <= diff["mx"] <= 16, diff
    assert diff["off"] / diff["total"] < 0.02, diff


def test_fork_edit_and_share_makes_a_new_linked_scenario(live_server, page) -> None:
    """Fork opens the scenario in the editor; running and sharing the copy makes a new id that
    records where it was forked from."""
    raw = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}
    made = page.request.post(
        f"{live_server.url}/api/v1/scenarios", data={"explainer": "skb", "params": raw}
    )
    parent = made.json()["id"]
    page.goto(f"{live_server.url}/s/{parent}")
    page.click("#fork-link")
    page.wait_for_url(re.compile(r"/explainers/skb/edit\?p="))
    page.click("#run-btn")
    page.wait_for_url(re.compile(r"/explainers/skb/custom\?p="))
    page.click("#share-menu summary")
    page.click("#share-create")
    page.wait_for_function("document.getElementById('share-url').value.includes('/s/')")
    child = re.search(r"/s/([A-Za-z0-9_-]+)", page.input_value("#share-url")).group(1)
    assert child != parent
    record = page.request.get(f"{live_server.url}/api/v1/scenarios/{child}").json()
    assert record["forked_from"] == parent and record["params"] == raw


def stage_markup(page) -> str:  # type: ignore[no-untyped-def]
    """The picture's markup with each element's attributes in name order: the morphing swap
    may reorder attributes, which changes nothing a reader sees."""
    return str(
        page.evaluate(
            """() => {
                const walk = (el) => {
                    const attrs = [...el.attributes].map(a => a.name + '=' + a.value).sort();
                    return '<' + el.tagName + ' ' + attrs.join(' ') + '>'
                        + [...el.childNodes].map(n => n.nodeType === 1 ? walk(n)
                            : (n.nodeType === 3 ? n.textContent : '')).join('') + '</>';
                };
                return walk(document.getElementById('stage'));
            }"""
        )
    )
