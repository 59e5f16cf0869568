"""The packet-path explainer's web half: run API shape, 422s, pages, and what the picture lights
(issue #13 "Views")."""

from __future__ import annotations

import html
import importlib
import re
import xml.etree.ElementTree as ET
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from fastapi.testclient import TestClient

from app.sim.core.i18n import reader_gettext
from app.sim.path.explainer import EXPLAINER, PathTrace
from app.sim.skbuff import SkbExplainer
from app.web import i18n
from app.web.explainers.path import EDITOR, VIEW
from app.web.explainers.path.geometry import LANES, LAYER_NAMES
from app.web.explainers.path.skb_beside import REGION_LABELS
from app.web.explainers.path.stack import CONTEXT_LABEL
from app.web.sources import decode_params, encode_params

NS = {"s": "http://www.w3.org/2000/svg"}
RX = {"path": "rx", "device": "nic", "packets": 1, "payload_bytes": 1000}
# The sk_buff explainer's API fields for one skb (tests/web/test_api.py), plus the header
# offsets the packet path adds.
SKB_FIELDS = {
    "head",
    "data",
    "tail",
    "end",
    "len",
    "data_len",
    "truesize",
    "headroom",
    "tailroom",
    "users",
    "dataref",
    "nr_frags",
}


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests read pages and run scenarios: one app for the module (tests/conftest.py)."""
    return shared_client


def _svg(trace: PathTrace, index: int) -> ET.Element:
    return ET.fromstring(VIEW.picture(trace, trace.frames[index]))


def _by_id(root: ET.Element, ident: str) -> ET.Element:
    found = root.find(f".//*[@id='{ident}']")
    assert found is not None, ident
    return found


def _rx_trace() -> PathTrace:
    return EXPLAINER.run(EXPLAINER.parse(RX))


def test_run_api_frames_name_function_source_layer_context_hook_stack_and_skb(
    client: TestClient,
) -> None:
    """POST .../path/run with the issue's rx input: every frame has function, path, line,
    layer, context, hook, stack and an skb with the sk_buff explainer's fields."""
    r = client.post("/api/v1/explainers/path/run", json=RX)
    assert r.status_code == 200, r.text
    frames = r.json()["frames"]
    assert len(frames) > 10
    for f in frames:
        for key in ("function", "path", "line", "layer", "context", "hook", "stack", "skb"):
            assert key in f, key
        assert f["context"] in ("process", "softirq", "hardirq")
        assert isinstance(f["line"], int) and f["line"] > 0
        assert f["path"].endswith((".c", ".h"))
        assert f["stack"] and f["stack"][-1] == f["function"]
        if f["skb"] is not None:
            assert SKB_FIELDS <= set(f["skb"])
            assert {"mac_header", "network_header", "transport_header"} <= set(f["skb"])
    # a receive passes both IPv4 input hooks, in order (NF_INET_PRE_ROUTING, then LOCAL_IN)
    hooks = [f["hook"] for f in frames if f["hook"]]
    assert hooks.index("PRE_ROUTING") < hooks.index("LOCAL_IN")
    # the frame comes in with a hard IRQ and is processed in softirq context
    contexts = [f["context"] for f in frames]
    assert "hardirq" in contexts and "softirq" in contexts


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**RX, "path": "sideways"}, "path"),
        ({**RX, "device": "wifi"}, "device"),
        ({**RX, "packets": 0}, "packets"),
        ({**RX, "payload_bytes": "lots"}, "payload_bytes"),
        ({**RX, "drop": "netfilter", "hook": "FORWARD"}, "hook"),
    ],
)
def test_bad_input_is_422_naming_the_field(client: TestClient, body: Any, field: str) -> None:
    """Invalid params answer 422 with loc ["body", <field>]."""
    r = client.post("/api/v1/explainers/path/run", json=body)
    assert r.status_code == 422
    locs = [d["loc"] for d in r.json()["detail"]]
    assert ["body", field] in locs, locs


@pytest.mark.parametrize("slug", [p.slug for p in EXPLAINER.presets])
def test_every_preset_page_renders_the_picture(client: TestClient, slug: str) -> None:
    """Each walkthrough's player page renders the swimlane picture and the cited source."""
    r = client.get(f"/explainers/path/presets/{slug}?step=3")
    assert r.status_code == 200
    assert 'id="path-svg"' in r.text
    assert "elixir.bootlin.com/linux/" in r.text


def test_player_cites_the_frame_function_path_and_line(client: TestClient) -> None:
    """The side panel links the step's function to its Linux 6.4 file and line on elixir."""
    trace = _rx_trace()
    i = next(f.index for f in trace.frames if f.op == "ip_rcv_core")
    src = trace.frames[i].source
    assert src is not None
    html = client.get(f"/explainers/path/presets/receive-segment?step={i}").text
    assert f"{src.path}#L{src.line}" in html
    assert f"{src.path}:{src.line}" in html


def test_picture_lights_the_current_lane_only() -> None:
    """The lane of the step's function is lit (ip_rcv_core in IP, NF_HOOK in netfilter,
    tcp_v4_rcv in TCP, igb_poll and the igb IRQ handler in the driver, net_rx_action in the
    core) and no other lane is."""
    trace = _rx_trace()
    want = {
        "ip_rcv_core": "ip",
        "NF_HOOK": "netfilter",
        "tcp_v4_rcv": "tcp",
        "igb_poll": "driver",
        "igb_msix_ring": "driver",
        "net_rx_action": "core",
        "sock_def_readable": "socket",
    }
    for fn, lane in want.items():
        i = next(f.index for f in trace.frames if f.op == fn)
        root = _svg(trace, i)
        lit = [
            g.get("data-lane")
            for g in root.iter()
            if g.get("data-lit") == "1" and g.get("id", "").startswith("lane-")
        ]
        assert lit == [lane], (fn, lit)
        assert _by_id(root, "path-current").get("data-function") == fn
        top = root.find(".//*[@class='stack-line top']")
        assert top is not None and top.get("data-function") == fn


def test_picture_lights_the_hook_the_step_is_at() -> None:
    """At NF_HOOK(LOCAL_IN) the LOCAL_IN marker is lit, PRE_ROUTING is drawn as passed."""
    trace = _rx_trace()
    i = next(f.index for f in trace.frames if f.state["hook"] == "LOCAL_IN")
    root = _svg(trace, i)
    hooks = {
        g.get("data-hook"): g
        for g in root.iter()
        if g.get("data-hook") and g.get("id", "").startswith("hook-")
    }
    assert set(hooks) == {"PRE_ROUTING", "LOCAL_IN"}
    assert hooks["LOCAL_IN"].get("data-lit") == "1"
    assert "passed" in (hooks["PRE_ROUTING"].get("class") or "")
    assert hooks["PRE_ROUTING"].get("data-lit") is None
    assert root.get("data-hook") == "LOCAL_IN"
    # before any hook fires, no marker is lit
    first = _svg(trace, 0)
    assert not [g for g in first.iter() if g.get("data-hook") and g.get("data-lit") == "1"]


def test_context_badge_names_the_context() -> None:
    """The context badge says hard IRQ in the IRQ handler and softirq in net_rx_action."""
    trace = _rx_trace()
    irq = next(f.index for f in trace.frames if f.state["context"] == "hardirq")
    soft = next(f.index for f in trace.frames if f.op == "net_rx_action")
    badge = _by_id(_svg(trace, irq), "ctx")
    assert badge.get("data-context") == "hardirq"
    assert "hard IRQ" in "".join(badge.itertext())
    assert "softirq" in "".join(_by_id(_svg(trace, soft), "ctx").itertext())


def test_picture_draws_the_skb_with_its_data_pointer_and_header_offsets() -> None:
    """The nested sk_buff picture's data pointer and the mac/network/transport marks carry
    the frame's offsets; eth_type_trans pulls 14 bytes (ETH_HLEN) so data moves by 14."""
    trace = _rx_trace()
    i = next(f.index for f in trace.frames if f.op == "eth_type_trans")
    before, after = trace.frames[i - 1].state["skb"], trace.frames[i].state["skb"]
    assert before is not None and after is not None
    assert after["data"] - before["data"] == 14
    for j, view in ((i - 1, before), (i, after)):
        root = _svg(trace, j)
        ptr = _by_id(root, f"ptr-{view['name']}-data")
        assert int(ptr.get("data-offset") or -1) == view["data"]
        assert root.get("data-skb-data") == str(view["data"])
    hdr = _by_id(_svg(trace, i), "hdr-mac")
    assert hdr.get("data-offset") == str(after["mac_header"])


def test_napi_strip_shows_budget_and_gro_held_packets() -> None:
    """In a GRO burst the strip shows NAPI's budget/weight and the packets GRO holds."""
    trace = EXPLAINER.run(EXPLAINER.parse(EXPLAINER.preset("gro-burst").params))  # type: ignore[union-attr]
    i = next(f.index for f in trace.frames if f.state["napi"] and f.state["napi"]["held"])
    napi = trace.frames[i].state["napi"]
    assert napi is not None
    text = "".join(_by_id(_svg(trace, i), "napi").itertext())
    assert f"weight {napi['weight']}" in text
    assert f"{napi['held'][0]['segs']} segs" in text


def test_skb_link_rebuilds_the_same_skb_in_the_sk_buff_explainer(client: TestClient) -> None:
    """The link's op list, run by the sk_buff explainer itself, ends with the same pointers,
    lengths and header offsets as this step's skb."""
    trace = _rx_trace()
    skb = SkbExplainer()
    checked = 0
    for f in trace.frames:
        view = f.state["skb"]
        if view is None:
            continue
        link = _by_id(_svg(trace, f.index), "skb-link")
        url = urlparse(link.get("href") or "")
        assert url.path == "/explainers/skb/custom"
        raw = decode_params(parse_qs(url.query)["p"][0])
        last = skb.run(skb.parse(raw)).frames[-1].state
        got = next(s for s in last["skbs"] if s["name"] == view["name"])
        for k in ("data", "tail", "end", "len", "data_len", "truesize", "nr_frags"):
            assert got[k] == view[k], (f.op, k)
        for k in ("mac_header", "network_header", "transport_header"):
            if view[k] is not None:  # type: ignore[literal-required]
                assert got[k] == view[k], (f.op, k)  # type: ignore[literal-required]
        checked += 1
    assert checked > 20
    # and the last link opens the sk_buff explainer's player
    assert client.get(link.get("href") or "").status_code == 200


def test_tcp_steps_link_to_tcp_and_congestion_control(client: TestClient) -> None:
    """TCP-layer steps link to /explainers/tcp and /explainers/cwnd; driver steps do not."""
    trace = _rx_trace()
    tcp = next(f.index for f in trace.frames if f.op == "tcp_v4_rcv")
    drv = next(f.index for f in trace.frames if f.op == "igb_poll")
    hrefs = {a.get("href") for a in _svg(trace, tcp).iter("{http://www.w3.org/2000/svg}a")}
    assert {"/explainers/tcp", "/explainers/cwnd"} <= hrefs
    hrefs = {a.get("href") for a in _svg(trace, drv).iter("{http://www.w3.org/2000/svg}a")}
    assert "/explainers/tcp" not in hrefs


def test_every_preset_fits_the_form_and_booleans_are_checkboxes(client: TestClient) -> None:
    """Preset params all fit the editor's form; a boolean is a checkbox (tso off: unchecked);
    a boolean given as text opens the JSON editor."""
    for p in EXPLAINER.presets:
        assert EDITOR.fits(dict(p.params)), p.slug
        assert client.get(f"/explainers/path/edit?preset={p.slug}").status_code == 200
    raw = {"path": "tx", "device": "nic", "packets": 1, "payload_bytes": 3000, "tso": False}
    assert EDITOR.fits(raw)
    page = client.get(f"/explainers/path/edit?p={encode_params(raw)}").text
    box = re.search(r'<input type="checkbox" name="tso"[^>]*>', page)
    assert box and "checked" not in box.group(0)
    assert not EDITOR.fits({**raw, "tso": "no"})
    page = client.get(f"/explainers/path/edit?p={encode_params({**raw, 'tso': 'no'})}").text
    assert 'name="_form"' not in page and '"tso": "no"' in html.unescape(page)


def test_form_post_of_a_preset_validates(client: TestClient) -> None:
    """Posting the form filled with the gro-burst preset's values passes the sim's parse."""
    form = {"path": "rx", "device": "nic", "packets": "20", "payload_bytes": "1448"}
    form |= {"scenario": "gro_burst", "psh": "last", "drop": "", "hook": "", "action": "validate"}
    r = client.post("/explainers/path/edit", data=form)
    assert r.status_code == 200
    assert "err-msg" not in r.text
    form["packets"] = "0"
    r = client.post("/explainers/path/edit", data=form)
    assert "must be between 1 and 1000" in r.text


def test_phone_focus_is_the_current_function() -> None:
    """The first element marked data-focus (the one a phone keeps in view) is the lit function."""
    trace = _rx_trace()
    root = _svg(trace, 12)
    focus = next(el for el in root.iter() if el.get("data-focus") == "1")
    assert focus.get("id") == "path-current"


def test_picture_without_a_replay_draws_the_frame_skb(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the walk cannot be replayed, the sk_buff is drawn from the frame's own fields and the
    link falls back to the closest sk_buff walkthrough."""
    lay = importlib.import_module("app.web.explainers.path.layout")
    monkeypatch.setattr(lay, "replay", lambda trace: None)
    lay.LAYOUTS.clear()
    try:
        trace = _rx_trace()
        i = next(f.index for f in trace.frames if f.op == "eth_type_trans")
        view = trace.frames[i].state["skb"]
        assert view is not None
        root = _svg(trace, i)
        ptr = _by_id(root, f"ptr-{view['name']}-data")
        assert ptr.get("data-offset") == str(view["data"])
        link = _by_id(root, "skb-link")
        assert (link.get("href") or "").startswith("/explainers/skb/presets/")
        assert link.get("data-exact") == "0"
    finally:
        lay.LAYOUTS.clear()


def _gro_trace() -> PathTrace:
    return EXPLAINER.run(EXPLAINER.parse(EXPLAINER.preset("gro-burst").params))  # type: ignore[union-attr]


def _chips(root: ET.Element, row: str) -> list[ET.Element]:
    return [
        g for g in _by_id(root, row).iter(f"{{{NS['s']}}}g") if "sum-chip" in g.get("class", "")
    ]


def test_seventeen_frags_are_one_counted_chip_and_the_new_frag_lit() -> None:
    """At the merge that fills frags[] (skb_gro_receive, MAX_SKB_FRAGS = 17), the held skb's
    frags are one row: frags[0..15] counted in one chip and frags[16], the one this step added,
    drawn on its own and lit; the next step lights none of them."""
    trace = _gro_trace()
    i = next(
        f.index
        for f in trace.frames
        if f.op == "skb_gro_receive" and f.state["skb"] and f.state["skb"]["nr_frags"] == 17
    )
    view = trace.frames[i].state["skb"]
    assert view is not None
    name = view["name"]
    chips = _chips(_svg(trace, i), f"fragsum-{name}")
    assert [(c.get("data-first"), c.get("data-count"), c.get("data-lit")) for c in chips] == [
        ("0", "16", None),
        ("16", "1", "1"),
    ]
    assert "16 × 1448 B" in "".join(chips[0].itertext())
    later = _chips(_svg(trace, i + 1), f"fragsum-{name}")
    assert [(c.get("data-count"), c.get("data-lit")) for c in later] == [("17", None)]


def test_the_frag_list_chip_lights_when_the_segment_is_chained() -> None:
    """When frags[] is full skb_gro_receive chains the segment on frag_list (gro.c merge:):
    that step lights the frag_list chip naming the chained skb; the skb itself is summarised
    there, not drawn as a second buffer."""
    trace = _gro_trace()
    i = next(
        f.index
        for f in trace.frames
        if f.op == "skb_gro_receive" and f.state["skb"] and f.state["skb"]["frag_list"] == 1
    )
    view = trace.frames[i].state["skb"]
    assert view is not None
    name = view["name"]
    root = _svg(trace, i)
    (chip,) = _chips(root, f"fraglistsum-{name}")
    assert chip.get("data-lit") == "1"
    chained = chip.get("data-skb")
    assert chained and chained != name
    lanes = {g.get("data-skb") for g in root.iter() if g.get("id", "").startswith("lane-rx")}
    assert lanes == {name}


def test_a_clone_shares_one_frags_row_with_its_original() -> None:
    """After __tcp_transmit_skb clones the skb, the clone and the original share one
    skb_shared_info: their frags are one row, which names both."""
    trace = EXPLAINER.run(EXPLAINER.parse(EXPLAINER.preset("send-segment").params))  # type: ignore[union-attr]
    i = next(f.index for f in trace.frames if f.state["skb"] and f.state["skb"]["name"] == "clone2")
    root = _svg(trace, i)
    rows = [g.get("id") for g in root.iter() if g.get("class") == "summary"]
    assert len(rows) == 1
    text = "".join(_by_id(root, str(rows[0])).itertext())
    assert "clone2 + skb1" in text and "page1 +0 · 1000 B" in text


def test_a_deep_stack_keeps_its_entry_and_top_and_folds_the_middle() -> None:
    """A 20+-deep stack shows its two outermost calls, a fold counting the hidden ones, and the
    innermost calls down to the current function; every call is shown or counted."""
    trace = EXPLAINER.run(EXPLAINER.parse(EXPLAINER.preset("container").params))  # type: ignore[union-attr]
    f = max(trace.frames, key=lambda f: len(f.state["stack"]))
    stack = f.state["stack"]
    root = _svg(trace, f.index)
    shown = [
        g.get("data-function")
        for g in root.iter()
        if g.get("id", "").startswith("stack-") and g.get("data-function")
    ]
    fold = _by_id(root, "stack-fold")
    hidden = int(fold.get("data-hidden") or 0)
    assert len(shown) + 1 <= 9
    assert shown[:2] == stack[:2] and shown[-1] == stack[-1] == f.state["function"]
    assert shown[2:] == stack[len(stack) - len(shown) + 2 :]
    assert len(shown) + hidden == len(stack)


def test_a_held_gro_packet_that_grew_is_lit() -> None:
    """The NAPI strip lights a held packet on the step skb_gro_receive merged into it and not
    on the step after (its segs and bytes unchanged)."""
    trace = _gro_trace()
    i = next(f.index for f in trace.frames if f.op == "skb_gro_receive")
    assert _by_id(_svg(trace, i), "held-0").get("data-lit") == "1"
    assert _by_id(_svg(trace, i + 1), "held-0").get("data-lit") is None


def test_frags_that_change_together_stay_one_chip() -> None:
    """When the reader consumes the GRO skb its 17 page frags are released in one step: the
    summary keeps them one counted chip, lit, not 17 rows."""
    trace = _gro_trace()
    i = max(f.index for f in trace.frames if f.op == "tcp_recvmsg_locked")
    view = trace.frames[i].state["skb"]
    assert view is not None
    name = view["name"]
    chips = _chips(_svg(trace, i), f"fragsum-{name}")
    assert [(c.get("data-first"), c.get("data-count"), c.get("data-lit")) for c in chips] == [
        ("0", "17", "1")
    ]


def test_chinese_picture_has_no_english_path_words() -> None:
    """On a zh-CN page every word the path picture draws itself (lane and layer names, the
    execution context, the labels the walk gives the bytes it writes) is rendered per request
    in Chinese: none of their English texts is left in any step of any preset."""
    words = [
        *(m for _, m in LANES),
        *LAYER_NAMES.values(),
        *CONTEXT_LABEL.values(),
        *REGION_LABELS.values(),
    ]
    zh = i18n.gettext_for("zh-CN")
    english = {m.render() for m in words if m.render(zh) != m.render()}
    assert {"process context", "hard IRQ", "routing", "frame"} <= english
    token, reader = i18n.use("zh-CN"), reader_gettext.set(zh)
    try:
        for preset in EXPLAINER.presets:
            trace = EXPLAINER.run(EXPLAINER.parse(dict(preset.params)))
            for i in range(0, len(trace.frames), max(1, len(trace.frames) // 15)):
                root = _svg(trace, i)
                texts = {
                    part.strip()
                    for el in root.iter()
                    if not el.tag.endswith("style")
                    for part in (el.text, el.tail)
                    if part and part.strip()
                }
                # a word alone, after its layer/hook separator, or before a byte count
                left = {
                    t
                    for t in texts
                    for w in english
                    if t == w or t.startswith((f"{w} · ", f"{w}: ")) or re.match(rf"{w} \d+ B$", t)
                }
                assert not left, (preset.slug, i, left)
    finally:
        reader_gettext.reset(reader)
        i18n.reset(token)
