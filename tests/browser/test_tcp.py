"""The TCP player in chromium: stepping moves the lit states with the frames, and the RFC/Linux
switch shows one vocabulary at a time and is remembered."""

from __future__ import annotations

import pytest

from app.sim.tcp import TcpExplainer

pytestmark = pytest.mark.browser


def _expected_states() -> list[dict[str, str]]:
    ex = TcpExplainer()
    preset = next(p for p in ex.presets if p.slug == "handshake")
    trace = ex.run(ex.parse(dict(preset.params)))
    return [{ep: e["rfc"] for ep, e in f.state["endpoints"].items()} for f in trace.frames]


LIT = """(ep) => Array.from(document.querySelectorAll('#stage .tcp-rfc-only .node.lit-' + ep))
  .map((g) => g.dataset.state)"""


def test_stepping_moves_the_lit_states(live_server, page) -> None:
    """→ steps through the handshake; after each step the nodes lit for client and server are
    the frame's RFC states (also on the SVG's data attributes), ending with both ESTABLISHED."""
    expected = _expected_states()
    page.goto(f"{live_server.url}/explainers/tcp/presets/handshake")
    page.wait_for_selector("#stage svg.tcp-svg")
    seen_established = False
    for n in range(1, 12):
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"document.querySelector('#tcp-svg')?.dataset.step === '{n}'")
        svg = page.locator("#tcp-svg")
        for ep in ("client", "server"):
            assert svg.get_attribute(f"data-{ep}-state") == expected[n][ep]
            assert page.evaluate(LIT, ep) == [expected[n][ep]], (n, ep)
            # the lit node is the visible one (RFC view by default)
            assert page.is_visible(f"#stage .tcp-rfc-only .node.lit-{ep}")
        seen_established |= expected[n] == {"client": "ESTABLISHED", "server": "ESTABLISHED"}
    assert seen_established
    assert page.inner_text("#step-no") == "11"


def test_rfc_linux_switch(live_server, page) -> None:
    """The Linux button shows the kernel objects (the request sock's TCP_NEW_SYN_RECV) and hides
    the RFC view; the choice survives a reload; the RFC button brings the RFC view back."""
    expected = _expected_states()
    n = next(i for i, s in enumerate(expected) if s["server"] == "SYN_RECEIVED")
    page.goto(f"{live_server.url}/explainers/tcp/presets/handshake?step={n}")
    page.wait_for_selector("#stage svg.tcp-svg")
    assert page.is_visible("#tcp-node-SYN_RECEIVED.lit-server")
    assert not page.is_visible("#tcp-lnode-REQ")
    page.click("#stage .vbtn-linux")
    page.wait_for_function("document.documentElement.dataset.tcpView === 'linux'")
    assert page.is_visible("#tcp-lnode-REQ.lit-server")
    assert "TCP_NEW_SYN_RECV" in page.text_content("#tcp-lnode-REQ")
    assert not page.is_visible("#stage .tcp-rfc-only .node.lit-server")
    page.reload()
    page.wait_for_selector("#stage svg.tcp-svg")
    assert page.evaluate("document.documentElement.dataset.tcpView") == "linux"
    assert page.is_visible("#tcp-lnode-REQ.lit-server")
    # stepping keeps the Linux view
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"document.querySelector('#tcp-svg')?.dataset.step === '{n + 1}'")
    assert page.is_visible("#stage .tcp-linux-only")
    page.click("#stage .vbtn-rfc")
    page.wait_for_function("document.documentElement.dataset.tcpView === 'rfc'")
    assert not page.is_visible("#tcp-lnode-REQ")
    assert page.get_attribute("#stage .vbtn-rfc", "aria-pressed") == "true"


FLIGHT = r"""() => {
  const st = document.getElementById('stage');
  const said = [...st.querySelectorAll('#tcp-wire text')].map(t => t.textContent)
    .map(s => /(\d+) segments in flight/.exec(s)).filter(Boolean).map(m => Number(m[1]));
  const drawn = st.querySelectorAll('g.seg.flight').length;
  return {said, drawn};
}"""


def test_segments_in_flight_readout_equals_the_arrows_drawn(live_server, page) -> None:
    """Simultaneous open: whenever the wire panel says "N segments in flight", the ladder draws
    N segment arrows still in flight, ``g.seg.flight`` (the review found "2 segments in
    flight" beside one arrow)."""
    page.goto(f"{live_server.url}/explainers/tcp/presets/simultaneous-open?lang=en")
    count = int(page.evaluate("window.Stepscope.count"))
    checked = 0
    for n in range(count):
        page.evaluate(f"window.Stepscope.goto({n})")
        got = page.evaluate(FLIGHT)
        if got["said"]:
            checked += 1
            assert got["said"] == [got["drawn"]], (n, got)
    assert checked > 0
