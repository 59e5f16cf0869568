"""Recordings in chromium (issue 23): a capture uploaded through the /recordings form as a user
would, stepped with the keyboard on /r/{id}; a truncated capture's error in the page in both
languages; a cwnd recording's chart and machine-vs-model table; each kind's embed (960×600,
keyboard) and projector theme, measured as walkthroughs' are (test_embed_projector). Every
theme and the phone: tests/browser/test_layout.py."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.browser.recs import upload
from tests.browser.test_embed_projector import CHART_PROBE, EMBED, FLOOR, TYPE_PROBE
from tests.recordings.pcaps import handshake_data_close, pcap

pytestmark = pytest.mark.browser

CAPTURE = pcap(handshake_data_close())
# the global header, one record header and part of its frame: the file stops mid-packet
TRUNCATED = CAPTURE[: 24 + 16 + 30]
SHOWN = """() => {
  const svg = document.querySelector('#stage svg.tcp-recorded');
  const states = [...svg.querySelectorAll('text[data-state]')].map(t => t.dataset.state);
  const cur = svg.querySelector('g.rec-seg.current');
  return {label: svg.getAttribute('aria-label'), states,
          segment: cur ? [...cur.querySelectorAll('text')].map(t => t.textContent).join(' ') : ''};
}"""


def _choose_file(page, name: str, body: bytes) -> None:
    page.set_input_files(
        "#upload-form input[type=file]",
        files=[{"name": name, "mimeType": "application/vnd.tcpdump.pcap", "buffer": body}],
    )
    page.click("#upload-form button[type=submit]")


def _later(state: str, seq: list[str], before: str) -> bool:
    """``state`` comes at or after ``before`` in the endpoint's recorded states."""
    return before == "—" or (state in seq and seq.index(state) >= seq.index(before))


def test_uploaded_capture_steps_through_its_ladder(live_server, page) -> None:
    """The form takes the capture and lands on /r/{id}; → and End step through one segment at
    a time, each step drawing its segment's flags and each endpoint's state from the capture's
    recorded sequence (never going back), ending in TIME_WAIT and CLOSED."""
    page.goto(f"{live_server.url}/recordings?lang=en")
    _choose_file(page, "conn.pcap", CAPTURE)
    page.wait_for_url(re.compile(r"/r/[\w-]+$"))
    rid = page.url.rsplit("/", 1)[1]
    parsed = httpx.get(f"{live_server.url}/api/v1/recordings/{rid}").json()
    segments, states = parsed["segments"], list(parsed["states"].values())
    page.wait_for_selector("#stage svg.tcp-recorded")
    assert int(page.evaluate("window.Stepscope.count")) == len(segments)
    shown = page.evaluate(SHOWN)
    assert shown["states"][0] == "SYN_SENT" and segments[0]["flags"] in shown["segment"]
    for n in range(1, 4):
        before = shown["states"]
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.getElementById('step-no').textContent.trim() === '{n}'")
        shown = page.evaluate(SHOWN)
        assert shown["label"].endswith(f"step {n}")
        assert f"{segments[n]['flags']} seq {segments[n]['seq']}" in shown["segment"]
        assert all(_later(s, q, b) for s, q, b in zip(shown["states"], states, before, strict=True))
    page.keyboard.press("End")
    last = len(segments) - 1
    page.wait_for_function(f"document.getElementById('step-no').textContent.trim() === '{last}'")
    assert page.evaluate(SHOWN)["states"] == ["TIME_WAIT", "CLOSED"]
    # the form's page lists it as this browser's
    page.goto(f"{live_server.url}/recordings")
    assert page.locator(f"#my-recording-list li[data-recording='{rid}']").count() == 1


@pytest.mark.parametrize(
    ("lang", "heading"), [("en", "This file cannot be read"), ("zh-CN", "无法读取这个文件")]
)
def test_truncated_capture_error_is_shown_in_the_page(
    live_server, page, lang: str, heading: str
) -> None:
    """A capture that stops mid-packet: the form page again (not a JSON body), with the error
    naming the byte where it stops, in the page's language."""
    page.goto(f"{live_server.url}/recordings?lang={lang}")
    _choose_file(page, "cut.pcap", TRUNCATED)
    page.wait_for_selector("#upload-errors")
    assert page.url.endswith("/recordings")
    assert page.evaluate("document.documentElement.lang") == lang
    assert page.is_visible("#upload-form")
    errors = page.inner_text("#upload-errors")
    assert heading in errors
    assert re.search(r"byte \d+", errors), errors
    if lang == "zh-CN":
        issue = page.inner_text("#upload-errors .issues")
        assert re.search(r"[\u4e00-\u9fff]", issue), issue


CHART_DONE = (
    "() => document.querySelector('#cwnd-chart .main-svg')"
    " && !document.querySelector('.plotly-pending, .plotly-drawing, [aria-busy=\"true\"]')"
)
NOW = """() => Object.fromEntries([...document.querySelectorAll('#cwnd-moment td[data-side]')]
  .map(td => [td.dataset.side + ':' + td.dataset.key, td.textContent.trim()]))"""


def test_cwnd_recording_draws_machine_and_model(live_server, page) -> None:
    """A cwnd recording: the chart draws both sides (legend groups for the machine and the
    model), the comparison tables have machine and model columns, and stepping to the end
    moves the moment's time and fills both cwnd cells with numbers."""
    path = upload(live_server.url, "cwnd")
    page.goto(f"{live_server.url}{path}?lang=en")
    page.wait_for_function(CHART_DONE, timeout=30_000)
    legend = page.evaluate("document.querySelector('#cwnd-chart .legend').textContent")
    assert "machine" in legend and "model" in legend
    traces = page.locator("#cwnd-chart .scatterlayer .trace").count()
    assert traces >= 4
    heads = page.locator("table.summary-table thead th").all_inner_texts()
    assert "machine" in heads and "model" in heads
    now = page.evaluate(NOW)
    assert now["machine:cwnd"] == now["model:cwnd"] == "10"
    page.keyboard.press("End")
    page.wait_for_function("document.querySelector('#cwnd-moment').dataset.time !== '0.000000'")
    now = page.evaluate(NOW)
    assert int(now["machine:cwnd"]) > 10 and int(now["model:cwnd"]) > 10


# --- every frame and theme: the embed, the projector --------------------------------------------

KINDS = ["capture", "tcp", "cwnd", "path"]
STEP = "document.getElementById('player').dataset.step"


# The path recording's picture is HTML (stacks as lists): its text's size on screen is its
# font size times the zoom the player draws it at; the rest as TYPE_PROBE measures.
HTML_PROBE = """(() => {
  const st = document.getElementById('stage');
  const wrap = st.closest('.stage-wrap');
  let min = Infinity, n = 0, worst = '';
  for (const el of st.querySelectorAll('*')) {
    const own = [...el.childNodes].some(c => c.nodeType === 3 && c.textContent.trim());
    if (!own || !el.checkVisibility()) continue;
    let zoom = 1;
    for (let p = el; p && p !== st; p = p.parentElement) zoom *= parseFloat(getComputedStyle(p).zoom) || 1;
    const px = parseFloat(getComputedStyle(el).fontSize) * zoom;
    n++;
    if (px < min) { min = px; worst = el.textContent.trim().slice(0, 30); }
  }
  const cs = getComputedStyle(wrap);
  return {min, n, worst, focusSeen: null,
          scrolls: (wrap.scrollHeight <= wrap.clientHeight + 1 || cs.overflowY === 'auto' || cs.overflowY === 'scroll'),
          pageWide: document.documentElement.scrollWidth - document.documentElement.clientWidth,
          fieldsOpen: document.getElementById('fields-fold').open};
})()"""


def _probe(page, kind: str) -> dict:
    """The projector probe an ordinary walkthrough of the same picture gets: the chart's for
    the cwnd overlay, the SVG picture's for the ladder (tests/browser/test_embed_projector),
    the HTML text's for the path recording's stacks."""
    if kind == "cwnd":
        page.wait_for_function(CHART_DONE, timeout=30_000)
        return page.evaluate(CHART_PROBE)
    return page.evaluate(HTML_PROBE if kind == "path" else TYPE_PROBE)


def _faults(kind: str, n: int, got: dict) -> list[str]:
    out = []
    if got["min"] < FLOOR - 0.1:
        out.append(f"step {n}: text '{got['worst']}' at {got['min']:.1f} px")
    if got.get("card", FLOOR) < FLOOR - 0.1:
        out.append(f"step {n}: card text '{got['cardWorst']}' at {got['card']:.1f} px")
    if not got["scrolls"] or got["pageWide"] > 1:
        out.append(f"step {n}: the picture is cut off: {got}")
    if kind == "cwnd" and (got["legendHidden"] is None or got["legendHidden"] > 1):
        out.append(f"step {n}: {got['legendHidden']} px of the legend scrolled away")
    if kind != "cwnd" and (got["focusSeen"] is False or got["fieldsOpen"]):
        out.append(f"step {n}: focus out of view or the fields table open: {got}")
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_recording_embed_steps_by_keyboard_and_reads_from_the_back_row(
    live_server, browser, kind: str
) -> None:
    """/embed/r/{id} at a slide's 960×600 in the projector theme (the Embed menu's default),
    as a deck shows it: → ← End Home step it; at the first, second, middle and last steps every
    picture text is drawn at 16 px or more on screen and nothing is cut off."""
    path = upload(live_server.url, kind)
    ctx = browser.new_context(viewport=EMBED, reduced_motion="reduce", bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto(f"{live_server.url}/embed{path}?theme=projector&controls=min&lang=en")
        assert page.evaluate("document.documentElement.dataset.theme") == "projector"
        count = int(page.evaluate("window.Stepscope.count"))
        assert count > 3
        page.locator("#stage").click()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => {STEP} === '2'")
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(f"() => {STEP} === '1'")
        page.keyboard.press("End")
        page.wait_for_function(f"() => {STEP} === '{count - 1}'")
        page.keyboard.press("Home")
        page.wait_for_function(f"() => {STEP} === '0'")
        faults = []
        for n in sorted({0, 1, count // 2, count - 1}):
            page.evaluate(f"window.Stepscope.goto({n})")
            page.wait_for_function(f"() => {STEP} === '{n}'")
            got = _probe(page, kind)
            assert got["n"] > 0, (n, got)
            faults += _faults(kind, n, got)
    finally:
        ctx.close()
    assert not faults, faults


@pytest.mark.parametrize("kind", KINDS)
def test_recording_page_in_the_projector_theme_draws_big_text(
    live_server, browser, kind: str
) -> None:
    """The recording's own page switched to the projector theme at 1440×900 (as the theme
    picker does): the picture's text at 16 px or more, nothing cut off, the picture no
    narrower than in the light theme."""
    path = upload(live_server.url, kind)
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    try:
        page.goto(f"{live_server.url}{path}?step=2&lang=en")
        if kind == "cwnd":
            page.wait_for_function(CHART_DONE, timeout=30_000)
        widths = {}
        for theme in ("light", "projector"):
            page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
            page.wait_for_timeout(150)
            widths[theme] = page.evaluate("document.querySelector('.stage-wrap').clientWidth")
        if kind == "cwnd":
            page.wait_for_function(
                "() => document.getElementById('cwnd-chart')._fullLayout.font.size >= 16",
                timeout=30_000,
            )
        got = _probe(page, kind)
    finally:
        ctx.close()
    assert got["n"] > 0, got
    assert widths["projector"] >= widths["light"] - 1, widths
    assert not _faults(kind, 2, got), got
