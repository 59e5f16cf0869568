"""The TCP picture: one SVG per step with three parts.

1. The RFC 9293 state diagram: every state, each endpoint's current state lit (client blue,
   server orange), and the transition just taken traced as an arrow labelled with the event and
   the Linux function that made it.
2. A time-sequence (ladder) diagram of the most recent segments: lost ones drawn broken, the
   step's segment highlighted, armed timers as bars beside the timelines.
3. A panel per endpoint (state, sequence variables, queues, timers; changed values marked) and
   the segment on the wire decoded, with links to the explainers that go deeper.

Both vocabularies are drawn: elements of class ``tcp-rfc-only`` and ``tcp-linux-only`` are
switched by ``static/explainers/tcp/view.js`` (RFC by default, also without the script). The
RFC variant never shows a Linux-only object (request sock, timewait mini-socket).

Everything the frame state lacks is derived here from the whole trace (``_index``): the frame a
segment was sent and delivered in, and the frame a timer was armed in.
"""

from __future__ import annotations

from app.sim.core import Frame, Trace, msg
from app.sim.tcp.state import TcpState
from app.web.explainers.tcp.common import COLOUR, ENDPOINTS, PANEL_Y, WIDTH
from app.web.explainers.tcp.diagram import draw_diagram
from app.web.explainers.tcp.ladder import draw_ladder, index_trace
from app.web.explainers.tcp.variables import draw_panel, draw_wire
from app.web.svgtext import attr


def picture(trace: Trace[TcpState, None], frame: Frame[TcpState]) -> str:
    st: TcpState = frame.state
    idx = index_trace(trace)
    prev: TcpState = trace.frames[frame.index - 1].state if frame.index > 0 else st
    eps = st["endpoints"]
    focus = _acting(st)
    body = [
        _style(),
        _defs(),
        draw_diagram(st, prev, focus),
        draw_ladder(trace, frame, st, idx),
    ]
    heights = []
    for i, ep in enumerate(ENDPOINTS):
        svg, h = draw_panel(ep, eps[ep], prev["endpoints"][ep], st, i)
        body.append(svg)
        heights.append(h)
    # a segment queued this step is in flight for the simulation but drawn (and counted here)
    # from the step that sends it, so the readout equals the arrows on the ladder
    sent = sum(1 for sid in st["in_flight"] if idx.sent_at.get(sid, frame.index + 1) <= frame.index)
    wire, wire_h = draw_wire(st, sent)
    body.append(wire)
    height = round(PANEL_Y + max(wire_h, *heights) + 6)
    label = msg(
        "TCP step {step}: client {client}, server {server}",
        step=frame.index,
        client=eps["client"]["rfc"],
        server=eps["server"]["rfc"],
    )
    lin = {ep: " ".join(o["state"] for o in eps[ep]["linux"]) for ep in ENDPOINTS}
    call = st["call"]
    errno = f"{call['call']} {call['errno']}" if call and call["errno"] else ""
    return (
        f'<svg id="tcp-svg" class="tcp-svg" viewBox="0 0 {WIDTH} {height}" role="group" '
        f'aria-label="{attr(str(label))}" xmlns="http://www.w3.org/2000/svg" '
        f'data-step="{frame.index}" data-client-state="{attr(eps["client"]["rfc"])}" '
        f'data-server-state="{attr(eps["server"]["rfc"])}" data-client-linux="{attr(lin["client"])}" '
        f'data-server-linux="{attr(lin["server"])}" data-errno="{attr(errno)}" '
        f'style="--tcp-h: {height}px">' + "".join(body) + "</svg>"
    )


def _acting(st: TcpState) -> str | None:
    """The endpoint whose state changed in this step (its lit node is the phone's focus; in
    other steps the step's segment is)."""
    if st["transitions"]:
        return st["transitions"][-1]["endpoint"]
    call = st["call"]
    if st["segment"] is None and st["delivered"] is None and call is not None:
        return None if call["errno"] else call["endpoint"]  # an errno badge is the focus
    return None


def _style() -> str:
    c, s = COLOUR["client"], COLOUR["server"]
    return (
        "<style>"
        ".tcp-svg { font-family: var(--font); font-size: 12px; }"
        ".tcp-svg text { fill: var(--fg); }"
        ".tcp-svg .mono { font-family: var(--mono); }"
        ".tcp-svg .muted { fill: var(--muted); }"
        ".tcp-svg .title { font-weight: 700; font-size: 13px; }"
        ".tcp-svg .node rect.box { fill: var(--panel); stroke: var(--line); stroke-width: 1.5; }"
        ".tcp-svg .node .name { font-weight: 700; font-size: 12.5px; }"
        ".tcp-svg .node .name.mono { font-weight: 600; font-size: 12px; }"
        f".tcp-svg .ring-client {{ fill: none; stroke: {c}; stroke-width: 4; }}"
        f".tcp-svg .ring-server {{ fill: none; stroke: {s}; stroke-width: 4; }}"
        ".tcp-svg .node.lit rect.box { fill: var(--bg); }"
        ".tcp-svg .edge { fill: none; stroke: var(--line); stroke-width: 1.5; }"
        f".tcp-svg .taken-client {{ fill: none; stroke: {c}; stroke-width: 3.5; }}"
        f".tcp-svg .taken-server {{ fill: none; stroke: {s}; stroke-width: 3.5; }}"
        ".tcp-svg .tag { fill: var(--bg); stroke-width: 1.5; }"
        ".tcp-svg .timeline { stroke: var(--muted); stroke-width: 2; }"
        ".tcp-svg .seg line, .tcp-svg .seg path { stroke: var(--muted); stroke-width: 1.5; "
        "fill: none; }"
        ".tcp-svg .seg.lost line { stroke-dasharray: 6 4; }"
        ".tcp-svg .seg.flight .rest { stroke-dasharray: 2 4; }"
        ".tcp-svg .seg.now line { stroke-width: 3.5; }"
        f".tcp-svg .seg.now.from-client line {{ stroke: {c}; }}"
        f".tcp-svg .seg.now.from-server line {{ stroke: {s}; }}"
        ".tcp-svg .seg.now text.lbl { font-weight: 700; }"
        ".tcp-svg .seg .cross { stroke: #b3261e; stroke-width: 3; }"
        ".tcp-svg .lbl-bg { fill: var(--bg); opacity: 0.85; }"
        ".tcp-svg .glide { transition: transform var(--glide) ease; }"
        ".tcp-svg .panel { fill: var(--panel); stroke: var(--line); }"
        ".tcp-svg .changed rect { fill: var(--changed); }"
        ".tcp-svg .changed text { fill: #1b1f24; font-weight: 700; }"
        ".tcp-svg .err rect { fill: #b3261e; }"
        ".tcp-svg .err text { fill: #ffffff; font-weight: 700; }"
        ".tcp-svg a.xlink text { fill: var(--link); text-decoration: underline; }"
        ".tcp-svg .vbtn rect { fill: var(--panel); stroke: var(--line); }"
        ".tcp-svg .vbtn { cursor: pointer; }"
        ".tcp-svg .vbtn text { font-weight: 600; }"
        ".tcp-svg .vbtn-rfc rect { fill: #0072B2; stroke: #0072B2; }"
        ".tcp-svg .vbtn-rfc text { fill: #ffffff; }"
        "html[data-tcp-view='linux'] .tcp-svg .vbtn-rfc rect { fill: var(--panel); "
        "stroke: var(--line); }"
        "html[data-tcp-view='linux'] .tcp-svg .vbtn-rfc text { fill: var(--fg); }"
        "html[data-tcp-view='linux'] .tcp-svg .vbtn-linux rect { fill: #0072B2; "
        "stroke: #0072B2; }"
        "html[data-tcp-view='linux'] .tcp-svg .vbtn-linux text { fill: #ffffff; }"
        ".tcp-svg .vbtn:focus-visible rect { outline: 2px solid var(--fg); }"
        ".tcp-svg .tcp-linux-only { display: none; }"
        "html[data-tcp-view='linux'] .tcp-svg .tcp-linux-only { display: inline; }"
        "html[data-tcp-view='linux'] .tcp-svg .tcp-rfc-only { display: none; }"
        "@media (max-width: 700px) { #stage svg.tcp-svg { min-width: 960px; } }"
        "@media (prefers-reduced-motion: reduce) { .tcp-svg .glide { transition: none; } }"
        "</style>"
    )


def _defs() -> str:
    heads = []
    for name, fill in (
        ("tcp-head", "var(--line)"),
        ("tcp-head-muted", "var(--muted)"),
        ("tcp-head-client", COLOUR["client"]),
        ("tcp-head-server", COLOUR["server"]),
    ):
        heads.append(
            f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="10" '
            'markerHeight="10" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 Z" '
            f'style="fill: {fill}"/></marker>'
        )
    return "<defs>" + "".join(heads) + "</defs>"
