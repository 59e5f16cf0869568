"""The TCP explainer over HTTP: the run API, 422s naming the script entry, the player pages, the
picture's lit states and the RFC/Linux views, the errno badge and the editor's form/JSON choice."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.sim.tcp import TcpExplainer
from app.web.editor import form_to_raw
from app.web.explainers.tcp import EDITOR
from app.web.explainers.tcp.picture import picture

SVG_NS = "{http://www.w3.org/2000/svg}"

# the request body of the issue's JSON API section
ISSUE_EXAMPLE: dict[str, Any] = {
    "script": [
        {"t_ms": 0, "endpoint": "server", "call": "listen"},
        {"t_ms": 0, "endpoint": "client", "call": "connect"},
        {"t_ms": 10, "endpoint": "client", "call": "send", "bytes": 1000},
        {"t_ms": 20, "endpoint": "client", "call": "shutdown", "how": "SHUT_WR"},
    ],
    "network": [{"drop": {"from": "client", "nth": 2}}],
    "until_ms": 200000,
}


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests read pages and run scenarios: one app for the module (tests/conftest.py)."""
    return shared_client


def _c(t: float, ep: str, call: str, **kw: Any) -> dict[str, Any]:
    return {"t_ms": t, "endpoint": ep, "call": call, **kw}


def test_run_returns_frames_with_states_segments_and_errors(client: TestClient) -> None:
    """POST /api/v1/explainers/tcp/run with the issue's body returns frames carrying index, t_ms,
    event, states, linux_states, segment and errors; both sides reach ESTABLISHED and the dropped
    segment (the client's 2nd, the handshake's ACK) shows as lost."""
    r = client.post("/api/v1/explainers/tcp/run", json=ISSUE_EXAMPLE)
    assert r.status_code == 200, r.text
    frames = r.json()["frames"]
    assert frames
    for i, f in enumerate(frames):
        assert {"index", "t_ms", "event", "states", "linux_states", "segment", "errors"} <= set(f)
        assert f["index"] == i
        assert set(f["states"]) == {"client", "server"}
    for ep in ("client", "server"):
        assert any(f["states"][ep] == "ESTABLISHED" for f in frames), ep
    client_segs = [
        f["segment"] for f in frames if f["segment"] and f["segment"]["from"] == "client"
    ]
    assert client_segs[1]["lost"] is True
    assert not any(s["lost"] for s in client_segs[:1])
    times = [f["t_ms"] for f in frames]
    assert times == sorted(times)


@pytest.mark.parametrize(
    ("call", "errno"),
    [
        # tcp_sendmsg_locked -> sk_stream_wait_connect: -EPIPE on a socket not connecting
        (_c(0, "client", "send", bytes=10), "EPIPE"),
        # tcp_recvmsg_locked: -ENOTCONN in TCP_CLOSE before any connection
        (_c(0, "client", "recv"), "ENOTCONN"),
    ],
)
def test_impossible_call_is_an_errno_in_a_frame_not_a_422(
    client: TestClient, call: dict[str, Any], errno: str
) -> None:
    """A call on an unconnected socket runs: the API answers 200 and the frame lists the errno
    the socket call returns (send: EPIPE, recv: ENOTCONN)."""
    r = client.post("/api/v1/explainers/tcp/run", json={"script": [call], "until_ms": 100})
    assert r.status_code == 200, r.text
    errors = [e for f in r.json()["frames"] for e in f["errors"]]
    assert errors == [{"endpoint": "client", "call": call["call"], "errno": errno}]


@pytest.mark.parametrize(
    ("script_or_body", "loc"),
    [
        ([_c(0, "server", "listen"), _c(5, "client", "sendfile")], ["body", "script", 1, "call"]),
        ([_c(0, "router", "listen")], ["body", "script", 0, "endpoint"]),
        ([_c(0, "server", "listen"), _c(-1, "client", "connect")], ["body", "script", 1, "t_ms"]),
        ([_c(i, "client", "recv") for i in range(1001)], ["body", "script"]),
        ({"script": [_c(0, "server", "listen")], "until_ms": 3_600_001}, ["body", "until_ms"]),
    ],
)
def test_bad_scripts_are_422_naming_the_entry(
    client: TestClient, script_or_body: Any, loc: list[Any]
) -> None:
    """Unknown call, unknown endpoint, negative time, more than 1000 events and until_ms over an
    hour each answer 422 with a loc naming the entry (its index in the script)."""
    body = script_or_body if isinstance(script_or_body, dict) else {"script": script_or_body}
    r = client.post("/api/v1/explainers/tcp/run", json=body)
    assert r.status_code == 422, r.text
    assert any(d["loc"] == loc for d in r.json()["detail"]), r.json()


def test_every_preset_page_renders_its_picture(client: TestClient) -> None:
    """Each walkthrough's player page answers 200 with the TCP picture in the stage."""
    for p in TcpExplainer.presets:
        r = client.get(f"/explainers/tcp/presets/{p.slug}")
        assert r.status_code == 200, p.slug
        assert 'id="tcp-svg"' in r.text, p.slug


def _frames(slug: str) -> tuple[Any, Any]:
    ex = TcpExplainer()
    preset = next(p for p in ex.presets if p.slug == slug)
    return ex, ex.run(ex.parse(dict(preset.params)))


def _svg(trace: Any, n: int) -> ET.Element:
    return ET.fromstring(picture(trace, trace.frames[n]))


def _lit(svg: ET.Element, ep: str) -> list[str]:
    """The RFC-view nodes lit for ``ep``."""
    rfc = next(g for g in svg.iter(f"{SVG_NS}g") if g.get("class") == "tcp-rfc-only")
    return [
        str(g.get("data-state"))
        for g in rfc.iter(f"{SVG_NS}g")
        if f"lit-{ep}" in (g.get("class") or "").split()
    ]


def _text(el: ET.Element, skip: str) -> str:
    """All text under ``el`` except inside elements of class ``skip``."""
    if skip in (el.get("class") or "").split():
        return ""
    return (el.text or "") + "".join(_text(c, skip) + (c.tail or "") for c in el)


def test_final_ack_of_the_handshake_lights_established_for_both() -> None:
    """RFC 9293 §3.5: the server leaves SYN-RECEIVED for ESTABLISHED when the client's ACK of
    its SYN arrives; the picture lights ESTABLISHED for both and traces the server's arrow
    SYN-RECEIVED → ESTABLISHED labelled with tcp_rcv_state_process()."""
    _, trace = _frames("handshake")
    n = next(
        f.index
        for f in trace.frames
        if f.state["delivered"] is not None
        and f.state["delivered"]["src"] == "client"
        and f.state["delivered"]["flags"] == ["ACK"]
    )
    svg = _svg(trace, n)
    assert _lit(svg, "client") == ["ESTABLISHED"]
    assert _lit(svg, "server") == ["ESTABLISHED"]
    assert svg.get("data-server-state") == "ESTABLISHED"
    arrows = [
        p for p in svg.iter(f"{SVG_NS}path") if "taken-server" in (p.get("class") or "").split()
    ]
    assert ("SYN_RECEIVED", "ESTABLISHED") in [
        (a.get("data-from"), a.get("data-to")) for a in arrows
    ]
    assert "tcp_rcv_state_process()" in picture(trace, trace.frames[n])
    # one step earlier the server was still SYN-RECEIVED
    assert _lit(_svg(trace, n - 1), "server") == ["SYN_RECEIVED"]


def test_rfc_view_shows_no_linux_object_and_the_linux_view_does() -> None:
    """While the server holds a request sock, its TCP_NEW_SYN_RECV appears only in the Linux
    view's elements; the RFC view's text never names it nor the timewait sock."""
    _, trace = _frames("handshake")
    n = next(
        f.index
        for f in trace.frames
        if any(o["object"] == "request_sock" for o in f.state["endpoints"]["server"]["linux"])
    )
    svg = _svg(trace, n)
    rfc_text = _text(svg, skip="tcp-linux-only")
    linux_parts = [g for g in svg.iter() if "tcp-linux-only" in (g.get("class") or "").split()]
    linux_text = "".join(_text(g, skip="tcp-rfc-only") for g in linux_parts)
    assert "TCP_NEW_SYN_RECV" not in rfc_text
    assert "request_sock" not in rfc_text and "request sock" not in rfc_text
    assert "TCP_NEW_SYN_RECV" in linux_text
    # the timewait mini-socket, in the client-close walkthrough
    _, trace = _frames("client-close")
    n = next(
        f.index
        for f in trace.frames
        if any(o["object"] == "timewait_sock" for o in f.state["endpoints"]["client"]["linux"])
    )
    svg = _svg(trace, n)
    assert "timewait" not in _text(svg, skip="tcp-linux-only")
    assert "timewait_sock" in "".join(
        _text(g, "tcp-rfc-only")
        for g in svg.iter()
        if "tcp-linux-only" in (g.get("class") or "").split()
    )


def test_errno_shows_as_a_red_badge(client: TestClient) -> None:
    """connect() twice: the second returns EISCONN (__inet_stream_connect) and the picture
    shows a badge 'connect → EISCONN' rather than failing."""
    body = {
        "script": [
            _c(0, "server", "listen"),
            _c(0, "server", "accept"),
            _c(0, "client", "connect"),
            _c(100, "client", "connect"),
        ],
        "until_ms": 500,
    }
    ex = TcpExplainer()
    trace = ex.run(ex.parse(body))
    hits = [f for f in trace.frames if f.state["call"] and f.state["call"]["errno"]]
    assert [f.state["call"]["errno"] for f in hits] == ["EISCONN"]
    svg = picture(trace, hits[0])
    assert 'class="err errno"' in svg
    assert "connect → EISCONN" in svg
    r = client.post("/api/v1/explainers/tcp/run", json=body)
    assert r.status_code == 200


def test_data_and_retransmission_steps_link_to_other_explainers() -> None:
    """A data segment's step links to the packet-paths and sk_buff explainers; a retransmission
    links to congestion control."""
    _, trace = _frames("handshake")
    data = next(f for f in trace.frames if (f.state["segment"] or {}).get("kind") == "data")
    svg = picture(trace, data)
    assert 'href="/explainers/path"' in svg and 'href="/explainers/skb"' in svg
    _, trace = _frames("lost-fin")
    rtx = next(f for f in trace.frames if (f.state["segment"] or {}).get("kind") == "retransmit")
    assert 'href="/explainers/cwnd"' in picture(trace, rtx)


def test_lost_segment_is_drawn_broken() -> None:
    """A dropped segment is drawn as a broken arrow (class lost, with a cross)."""
    _, trace = _frames("lost-fin")
    n = next(f.index for f in trace.frames if f.state["segment"] and f.state["segment"]["lost"])
    svg = _svg(trace, n)
    lost = [g for g in svg.iter(f"{SVG_NS}g") if "lost" in (g.get("class") or "").split()]
    assert len(lost) == 1
    assert any("cross" in (p.get("class") or "") for p in lost[0].iter(f"{SVG_NS}path"))


def test_editor_form_or_json_for_every_preset(client: TestClient) -> None:
    """Every preset opens the form (network events are rows, the flags checkboxes); params the
    form cannot carry (a list where a number goes) open the JSON editor instead."""
    for p in TcpExplainer.presets:
        raw = dict(p.params)
        assert EDITOR.fits(raw), p.slug
        dumped = TcpExplainer().dump(TcpExplainer().parse(raw))
        assert EDITOR.fits(dumped), p.slug
    odd = {"script": [{"t_ms": [0], "endpoint": "client", "call": "connect"}]}
    assert not EDITOR.fits(odd)
    r = client.get("/explainers/tcp/edit")
    assert r.status_code == 200
    assert re.search(r'name="script\.0\.call"', r.text)


def test_form_round_trip_keeps_every_preset() -> None:
    """For each preset, posting its fields back rebuilds the same params (nothing the script
    or the network events need is dropped by the form)."""
    ex = TcpExplainer()
    for p in ex.presets:
        raw = ex.dump(ex.parse(dict(p.params)))
        assert EDITOR.fits(raw), p.slug
        form: dict[str, str] = {"script.count": str(len(raw["script"]))}
        for i, item in enumerate(raw["script"]):
            for k, v in item.items():
                form[f"script.{i}.{k}"] = str(v).lower() if isinstance(v, bool) else str(v)
        form["network.count"] = str(len(raw["network"]))
        for i, event in enumerate(raw["network"]):
            ((kind, body),) = event.items()
            form[f"network.{i}.kind"] = kind
            for k, v in body.items():
                form[f"network.{i}.{k}"] = str(v)
        for k in ("until_ms", "rtt_ms", "mss", "rcvbuf", "client_iss", "server_iss"):
            if k in raw:
                form[k] = str(raw[k])
        for k, v in raw.get("sysctl", {}).items():
            form[f"sysctl.{k}"] = str(v).lower() if isinstance(v, bool) else str(v)
        rebuilt, problems = form_to_raw(EDITOR, form, "")
        assert problems == []
        assert ex.parse(rebuilt) == ex.parse(raw), p.slug


def test_tcp_kernel_check_note_renders(client: TestClient) -> None:
    """content/tcp-kernel-check.md (issue 25): the handshake checked on a real kernel, in both
    languages, with the windows the model draws."""
    r = client.get("/notes/tcp-kernel-check")
    assert r.status_code == 200 and "64240" in r.text and "wscale 7" in r.text
    zh = client.get("/notes/tcp-kernel-check", headers={"Accept-Language": "zh-CN"})
    assert zh.status_code == 200 and "核对" in zh.text


def test_segment_options_drawn_on_the_ladder(client: TestClient) -> None:
    """Each segment's window (wire value and scaled bytes) and options, compactly, above its
    arrow; the wire panel lists them in wire order."""
    from app.sim.tcp import TcpExplainer
    from app.web.explainers.tcp.picture import picture

    ex = TcpExplainer()
    p = ex.preset("handshake")
    assert p is not None
    tr = ex.run(ex.parse(dict(p.params)))
    svg = picture(tr, tr.frames[8])
    assert "win 64240 · MSS 1460 · SACK · TS · WS 7" in svg
    assert "win 502 ×128 = 64256 · TS" in svg
    assert "nop,nop,TS" in svg
