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

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from app.sim.core import Frame, Trace, msg
from app.sim.tcp.state import EndpointState, SegmentState, TcpState, TransitionState

WIDTH = 960
ENDPOINTS = ("client", "server")
COLOUR = {"client": "#0072B2", "server": "#E69F00"}  # Okabe–Ito blue / orange (app.css)
INK = {"client": "#ffffff", "server": "#1b1f24"}  # text on a filled badge of that colour
LETTER = {"client": "C", "server": "S"}
ERR_FILL = "#b3261e"  # white text on it: 6.5:1

# --- the state diagram ---------------------------------------------------------------------

NODE_W = 132
NODE_H = 34
NODES: dict[str, tuple[float, float]] = {
    "CLOSED": (220, 24),
    "LISTEN": (220, 78),
    "SYN_RECEIVED": (76, 134),
    "SYN_SENT": (364, 134),
    "ESTABLISHED": (220, 190),
    "FIN_WAIT_1": (76, 246),
    "CLOSE_WAIT": (364, 246),
    "FIN_WAIT_2": (76, 302),
    "CLOSING": (220, 302),
    "LAST_ACK": (364, 302),
    "TIME_WAIT": (220, 358),
}
# the two Linux-only objects, drawn in the Linux view only
LINUX_NODES: dict[str, tuple[float, float]] = {"REQ": (76, 78), "TW": (76, 358)}
KERNEL = {
    "CLOSED": "TCP_CLOSE",
    "LISTEN": "TCP_LISTEN",
    "SYN_RECEIVED": "TCP_SYN_RECV",
    "SYN_SENT": "TCP_SYN_SENT",
    "ESTABLISHED": "TCP_ESTABLISHED",
    "FIN_WAIT_1": "TCP_FIN_WAIT1",
    "CLOSE_WAIT": "TCP_CLOSE_WAIT",
    "FIN_WAIT_2": "TCP_FIN_WAIT2",
    "CLOSING": "TCP_CLOSING",
    "LAST_ACK": "TCP_LAST_ACK",
    "TIME_WAIT": "TCP_TIME_WAIT",
}
BY_KERNEL = {v: k for k, v in KERNEL.items()}
# RFC 9293 figure 5's transitions, drawn faintly under the one just taken
EDGES = (
    ("CLOSED", "LISTEN"),
    ("CLOSED", "SYN_SENT"),
    ("LISTEN", "SYN_RECEIVED"),
    ("LISTEN", "SYN_SENT"),
    ("SYN_SENT", "SYN_RECEIVED"),
    ("SYN_RECEIVED", "ESTABLISHED"),
    ("SYN_SENT", "ESTABLISHED"),
    ("SYN_RECEIVED", "FIN_WAIT_1"),
    ("ESTABLISHED", "FIN_WAIT_1"),
    ("ESTABLISHED", "CLOSE_WAIT"),
    ("FIN_WAIT_1", "FIN_WAIT_2"),
    ("FIN_WAIT_1", "CLOSING"),
    ("FIN_WAIT_2", "TIME_WAIT"),
    ("CLOSING", "TIME_WAIT"),
    ("CLOSE_WAIT", "LAST_ACK"),
    ("LAST_ACK", "CLOSED"),
    ("TIME_WAIT", "CLOSED"),
)
DIAGRAM_H = 384

# --- the ladder ----------------------------------------------------------------------------

LAD_X0 = 452
LANE = {"client": 540.0, "server": 860.0}
LAD_TOP = 46
ROW = 46
WINDOW = 6

PANEL_Y = 444


def _a(value: object) -> str:
    return escape(str(value), quote=True)


def _t(value: object) -> str:
    return escape(str(value), quote=False)


def _ms(t: float) -> str:
    if t >= 10_000:
        return f"{t / 1000:.3g} s" if t < 100_000 else f"{t / 1000:.0f} s"
    return f"{t:g} ms"


def _dash(name: str) -> str:
    return name.replace("_", "-")


# --- what the frame state lacks, derived once per trace ------------------------------------


@dataclass(slots=True)
class _Index:
    sent_at: dict[int, int]  # segment id -> frame index it was sent in
    delivered_at: dict[int, int]  # segment id -> frame index it arrived in
    segs: dict[int, SegmentState]
    order: list[int]  # segment ids in sending order
    armed_at: list[dict[tuple[str, int, str], int]]  # per frame: (ep, obj, timer) -> frame


_LOCK = threading.Lock()
_LAST: list[tuple[Trace[Any, Any], _Index]] = []


def _index(trace: Trace[Any, Any]) -> _Index:
    with _LOCK:
        for t, idx in _LAST:
            if t is trace:
                return idx
    sent_at: dict[int, int] = {}
    delivered_at: dict[int, int] = {}
    segs: dict[int, SegmentState] = {}
    order: list[int] = []
    armed_at: list[dict[tuple[str, int, str], int]] = []
    prev: dict[tuple[str, int, str], tuple[float, int]] = {}
    for fr in trace.frames:
        st: TcpState = fr.state
        seg = st["segment"]
        if seg is not None and seg["id"] not in sent_at:
            sent_at[seg["id"]] = fr.index
            segs[seg["id"]] = seg
            order.append(seg["id"])
        dlv = st["delivered"]
        if dlv is not None:
            delivered_at.setdefault(dlv["id"], fr.index)
        now: dict[tuple[str, int, str], tuple[float, int]] = {}
        for ep, e in st["endpoints"].items():
            for obj in e["linux"]:
                for tm in obj["timers"]:
                    key = (ep, obj["id"], tm["name"])
                    old = prev.get(key)
                    start = old[1] if old is not None and old[0] == tm["deadline_ms"] else fr.index
                    now[key] = (tm["deadline_ms"], start)
        armed_at.append({k: v[1] for k, v in now.items()})
        prev = now
    idx = _Index(sent_at, delivered_at, segs, order, armed_at)
    with _LOCK:
        _LAST[:] = [(trace, idx)]
    return idx


# --- the picture ---------------------------------------------------------------------------


def picture(trace: Trace[Any, Any], frame: Frame[Any]) -> str:
    st: TcpState = frame.state
    idx = _index(trace)
    prev: TcpState = trace.frames[frame.index - 1].state if frame.index > 0 else st
    eps = st["endpoints"]
    focus = _acting(st)
    body = [
        _style(),
        _defs(),
        _diagram(st, prev, focus),
        _ladder(trace, frame, st, idx),
    ]
    heights = []
    for i, ep in enumerate(ENDPOINTS):
        svg, h = _panel(ep, eps[ep], prev["endpoints"][ep], st, i)
        body.append(svg)
        heights.append(h)
    wire, wire_h = _wire(trace, st, idx)
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
        f'aria-label="{_a(str(label))}" xmlns="http://www.w3.org/2000/svg" '
        f'data-step="{frame.index}" data-client-state="{_a(eps["client"]["rfc"])}" '
        f'data-server-state="{_a(eps["server"]["rfc"])}" data-client-linux="{_a(lin["client"])}" '
        f'data-server-linux="{_a(lin["server"])}" data-errno="{_a(errno)}" '
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


# --- 1. state diagram ----------------------------------------------------------------------


def _clip(cx: float, cy: float, tx: float, ty: float, pad: float = 2) -> tuple[float, float]:
    """The point where the line from the node centre (cx, cy) towards (tx, ty) leaves the box."""
    dx, dy = tx - cx, ty - cy
    if dx == 0 and dy == 0:
        return cx, cy
    hw, hh = NODE_W / 2 + pad, NODE_H / 2 + pad
    s = min(hw / abs(dx) if dx else math.inf, hh / abs(dy) if dy else math.inf)
    return cx + dx * s, cy + dy * s


def _pos(key: str) -> tuple[float, float]:
    return NODES.get(key) or LINUX_NODES[key]


def _route(a: str, b: str) -> tuple[str, tuple[float, float]]:
    """An SVG path from node a to node b and a point to hang its label on."""
    ax, ay = _pos(a)
    bx, by = _pos(b)
    if a == b:  # a change inside one state (Linux objects): a loop on the right
        x, y = ax + NODE_W / 2, ay
        return (
            f"M{x:.1f} {y - 8:.1f} C{x + 30:.1f} {y - 26:.1f} {x + 30:.1f} {y + 26:.1f} "
            f"{x:.1f} {y + 8:.1f}",
            (x + 28, y),
        )
    if b == "CLOSED" and ay > 100:
        # back up to CLOSED along the left or right margin
        left = ax < 220
        lane = 4.0 if left else 436.0
        sx = ax - NODE_W / 2 if left else ax + NODE_W / 2
        ex = bx - NODE_W / 2 if left else bx + NODE_W / 2
        if ax == 220 and not left:
            sx, lane = ax + NODE_W / 2, 436.0
        path = f"M{sx:.1f} {ay:.1f} L{lane:.1f} {ay:.1f} L{lane:.1f} {by:.1f} L{ex:.1f} {by:.1f}"
        return path, (lane, (ay + by) / 2)
    if a == "CLOSED" and by > 100 and b != "LISTEN":
        left = bx < 220
        lane = 12.0 if left else 428.0
        sx = ax - NODE_W / 2 if left else ax + NODE_W / 2
        ex = bx - NODE_W / 2 if left else bx + NODE_W / 2
        if abs(bx - lane) < NODE_W / 2 + 2:  # the node sits on the lane: come in from above
            path = f"M{sx:.1f} {ay:.1f} L{bx:.1f} {ay:.1f} L{bx:.1f} {by - NODE_H / 2 - 2:.1f}"
            return path, (bx, (ay + by) / 2)
        path = f"M{sx:.1f} {ay:.1f} L{lane:.1f} {ay:.1f} L{lane:.1f} {by:.1f} L{ex:.1f} {by:.1f}"
        return path, (lane, (ay + by) / 2)
    # a gentle curve, bent to the right of its direction so opposite edges do not overlap
    mx, my = (ax + bx) / 2, (ay + by) / 2
    dx, dy = bx - ax, by - ay
    n = math.hypot(dx, dy) or 1
    off = 10
    cx, cy = mx + dy / n * off, my - dx / n * off
    sx, sy = _clip(ax, ay, cx, cy)
    ex, ey = _clip(bx, by, cx, cy, pad=3)
    return f"M{sx:.1f} {sy:.1f} Q{cx:.1f} {cy:.1f} {ex:.1f} {ey:.1f}", (cx, cy)


def _node(
    key: str, label: str, sub: str, lit: Sequence[str], extra: str = "", kernel: bool = False
) -> str:
    x, y = _pos(key)
    x0, y0 = x - NODE_W / 2, y - NODE_H / 2
    cls = "node" + (" lit" if lit else "") + "".join(f" lit-{ep}" for ep in lit)
    prefix = "tcp-lnode" if kernel else "tcp-node"
    parts = [
        f'<g id="{prefix}-{key}" class="{cls}" data-state="{key}"'
        + (' data-focus="1"' if extra == "focus" else "")
        + ">",
        f'<rect class="box" x="{x0}" y="{y0}" width="{NODE_W}" height="{NODE_H}" rx="6"/>',
    ]
    if "client" in lit:
        parts.append(
            f'<rect class="ring-client" x="{x0 - 3}" y="{y0 - 3}" width="{NODE_W + 6}" '
            f'height="{NODE_H + 6}" rx="8"/>'
        )
    if "server" in lit:
        inset = 3 if "client" in lit else -3
        parts.append(
            f'<rect class="ring-server" x="{x0 + inset}" y="{y0 + inset}" '
            f'width="{NODE_W - 2 * inset}" height="{NODE_H - 2 * inset}" rx="6"/>'
        )
    name_cls = "name mono" if kernel else "name"
    parts.append(
        f'<text class="{name_cls}" x="{x}" y="{y - 3}" text-anchor="middle">{_t(label)}</text>'
    )
    parts.append(
        f'<text class="mono muted" x="{x}" y="{y + 12}" text-anchor="middle">{_t(sub)}</text>'
    )
    for ep in lit:
        bx = x0 if ep == "client" else x0 + NODE_W
        parts.append(
            f'<g class="badge-{ep}"><circle cx="{bx}" cy="{y}" r="9" '
            f'style="fill: {COLOUR[ep]}; stroke: var(--bg); stroke-width: 1.5"/>'
            f'<text x="{bx}" y="{y + 4.5}" text-anchor="middle" '
            f'style="fill: {INK[ep]}; font-weight: 700">{LETTER[ep]}</text></g>'
        )
    parts.append("</g>")
    return "".join(parts)


def _rfc_chain(ep: str, st: TcpState, prev: TcpState) -> list[TransitionState]:
    """The transitions that carry ``ep`` from its previous RFC state to its new one; when the
    frame's changes do not form such a chain (a connection ends while a listener stays), every
    change of a full socket or listener."""
    mine = [t for t in st["transitions"] if t["endpoint"] == ep and t["rfc_from"] != t["rfc_to"]]
    start, end = prev["endpoints"][ep]["rfc"], st["endpoints"][ep]["rfc"]
    chain: list[TransitionState] = []
    target = end
    for t in reversed(mine):
        if target == start and chain:
            break
        if t["rfc_to"] == target:
            chain.insert(0, t)
            target = t["rfc_from"]
    if chain and target == start:
        return chain
    return [t for t in mine if t["object"] in ("sock", "listener", "request_sock")]


def _rfc_ends(t: TransitionState) -> tuple[str, str]:
    """The RFC states an arrow joins: a connection whose kernel object closes goes to CLOSED
    even when the endpoint as a whole is still LISTEN (its listener stays)."""
    return t["rfc_from"], "CLOSED" if t["to_state"] == "TCP_CLOSE" else t["rfc_to"]


def _linux_key(t: TransitionState, which: str) -> str:
    state = t["from_state"] if which == "from" else t["to_state"]
    if state == "TCP_NEW_SYN_RECV":
        return "REQ"
    if t["object"] == "timewait_sock" and state == "TCP_TIME_WAIT":
        return "TW"
    return BY_KERNEL.get(state, "CLOSED")


Box = tuple[float, float, float, float]


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place(
    lx: float, ly: float, w: float, h: float, avoid: list[Box]
) -> tuple[float, float, float]:
    """A spot near (lx, ly) for a w×h label covering as little of the nodes and other labels
    as can be, and how much it still covers (0: clear)."""
    best, least, covered = (lx, ly), math.inf, math.inf
    for dy in range(-132, 133, 11):
        for dx in range(-200, 201, 25):
            x = min(max(lx + dx, w / 2 + 2), 438 - w / 2)
            y = min(max(ly + dy, h / 2 + 30), DIAGRAM_H - h / 2)
            box = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
            cover = sum(
                max(0.0, min(box[2], o[2]) - max(box[0], o[0]))
                * max(0.0, min(box[3], o[3]) - max(box[1], o[1]))
                for o in avoid
            )
            # any overlap costs more than the longest move: a clear spot always wins
            cost = cover * 8 + (abs(dx) + abs(dy)) * 0.5
            if cost < least:
                best, least, covered = (x, y), cost, cover
    return best[0], best[1], covered


# The RFC/Linux switch and the client/server legend in the top-left corner: labels keep off.
CORNER: Box = (0.0, 0.0, 160.0, 52.0)


def _node_boxes(linux: bool) -> list[Box]:
    nodes = {**NODES, **(LINUX_NODES if linux else {})}
    return [
        (x - NODE_W / 2 - 10, y - NODE_H / 2 - 4, x + NODE_W / 2 + 10, y + NODE_H / 2 + 4)
        for x, y in nodes.values()
    ] + [CORNER]


def _arrow(
    i: int,
    ep: str,
    a: str,
    b: str,
    event: str,
    function: str,
    avoid: list[Box],
    extra: str = "",
) -> tuple[str, str]:
    """The traced arrow and (separately, drawn on top of every arrow) its label."""
    path, (lx, ly) = _route(a, b)
    arrow = (
        f'<path id="tcp-taken-{i}" class="taken taken-{ep}" d="{path}" '
        f'marker-end="url(#tcp-head-{ep})" data-from="{a}" data-to="{b}" data-endpoint="{ep}"/>'
    )
    text1 = f"{event}" + (f" {extra}" if extra else "")
    text2 = f"{function}()"
    w = max(len(text1), len(text2)) * 7.0 + 12
    x, y, cover = _place(lx, ly, w, 32, avoid)
    if cover > 0:
        # no clear spot for two lines: the event alone (the caption names the function too)
        w1 = len(text1) * 7.0 + 12
        x1, y1, cover1 = _place(lx, ly, w1, 18, avoid)
        if cover1 < cover:
            avoid.append((x1 - w1 / 2 - 4, y1 - 12, x1 + w1 / 2 + 4, y1 + 12))
            label = (
                f'<g class="taken-label"><rect class="tag" x="{x1 - w1 / 2:.1f}" '
                f'y="{y1 - 9:.1f}" width="{w1:.1f}" height="18" rx="4" '
                f'style="stroke: {COLOUR[ep]}"/><text x="{x1:.1f}" y="{y1 + 4:.1f}" '
                f'text-anchor="middle"><title>{_t(text2)}</title>{_t(text1)}</text></g>'
            )
            return arrow, label
    avoid.append((x - w / 2 - 4, y - 20, x + w / 2 + 4, y + 20))
    label = (
        f'<g class="taken-label"><rect class="tag" x="{x - w / 2:.1f}" y="{y - 16:.1f}" '
        f'width="{w:.1f}" height="32" rx="4" style="stroke: {COLOUR[ep]}"/>'
        f'<text x="{x:.1f}" y="{y - 3:.1f}" text-anchor="middle">{_t(text1)}</text>'
        f'<text class="mono" x="{x:.1f}" y="{y + 11:.1f}" text-anchor="middle">'
        f"{_t(text2)}</text></g>"
    )
    return arrow, label


def _diagram(st: TcpState, prev: TcpState, focus: str | None) -> str:
    eps = st["endpoints"]
    out = ['<g id="tcp-diagram" class="diagram">', _switch()]
    for a, b in EDGES:
        path, _ = _route(a, b)
        out.append(f'<path class="edge" d="{path}" marker-end="url(#tcp-head)"/>')
    # RFC view: one lit node per endpoint
    out.append('<g class="tcp-rfc-only">')
    for key in NODES:
        lit = [ep for ep in ENDPOINTS if eps[ep]["rfc"] == key]
        extra = "focus" if focus is not None and focus in lit else ""
        out.append(_node(key, _dash(key), KERNEL[key], lit, extra))
    arrows: list[str] = []
    labels: list[str] = []
    n = 0
    avoid = _node_boxes(linux=False)
    for ep in ENDPOINTS:
        for t in _rfc_chain(ep, st, prev):
            a, b = _arrow(n, ep, *_rfc_ends(t), t["event"], t["function"], avoid)
            arrows.append(a)
            labels.append(b)
            n += 1
    out += arrows + labels
    out.append("</g>")
    # Linux view: one lit node per kernel object, plus the request and timewait socks
    out.append('<g class="tcp-linux-only">')
    objs: dict[str, list[str]] = {}
    for ep in ENDPOINTS:
        for o in eps[ep]["linux"]:
            if o["object"] == "request_sock":
                key = "REQ"
            elif o["object"] == "timewait_sock":
                key = "TW"
            else:
                key = BY_KERNEL.get(o["state"], "CLOSED")
            if ep not in objs.setdefault(key, []):
                objs[key].append(ep)
    for key in NODES:
        out.append(_node(key, KERNEL[key], _dash(key), objs.get(key, []), kernel=True))
    tw_sub = "timewait sock"
    for ep in ENDPOINTS:
        for o in eps[ep]["linux"]:
            if o["object"] == "timewait_sock" and o["tw_substate"]:
                tw_sub = "tw_sub " + o["tw_substate"].removeprefix("TCP_")
    out.append(_node("REQ", "TCP_NEW_SYN_RECV", "request sock", objs.get("REQ", []), kernel=True))
    out.append(_node("TW", "TCP_TIME_WAIT", tw_sub, objs.get("TW", []), kernel=True))
    arrows, labels = [], []
    avoid = _node_boxes(linux=True)
    for i, t in enumerate(st["transitions"]):
        a, b = _linux_key(t, "from"), _linux_key(t, "to")
        if a == b and a not in ("TW", "REQ"):
            continue
        arrow, label = _arrow(100 + i, t["endpoint"], a, b, t["event"], t["function"], avoid)
        arrows.append(arrow)
        labels.append(label)
    out += arrows + labels
    out.append("</g>")
    out.append(_legend())
    out.append(_caption(st, prev))
    out.append("</g>")
    return "".join(out)


def _switch() -> str:
    """The RFC / Linux switch (view.js handles the clicks and remembers the choice)."""
    out = ['<g id="tcp-view-switch" class="view-switch">']
    for i, (view, text, label) in enumerate(
        (
            ("rfc", "RFC 9293", msg("Show the RFC 9293 states")),
            ("linux", "Linux", msg("Show the Linux kernel objects")),
        )
    ):
        x = 2 + i * 74
        out.append(
            f'<a href="#" class="vbtn vbtn-{view}" data-tcp-view="{view}" role="button" '
            f'aria-label="{_a(str(label))}"><rect x="{x}" y="2" width="70" height="22" rx="5"/>'
            f'<text x="{x + 35}" y="17" text-anchor="middle">{text}</text></a>'
        )
    out.append("</g>")
    return "".join(out)


def _legend() -> str:
    parts = ['<g id="tcp-legend" class="legend">']
    for i, ep in enumerate(ENDPOINTS):
        x = 10 + i * 66
        parts.append(
            f'<circle cx="{x}" cy="38" r="8" style="fill: {COLOUR[ep]}"/>'
            f'<text x="{x}" y="42" text-anchor="middle" '
            f'style="fill: {INK[ep]}; font-weight: 700">{LETTER[ep]}</text>'
            f'<text x="{x + 12}" y="42">{ep}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _caption(st: TcpState, prev: TcpState) -> str:
    """One line per transition under the diagram, in both vocabularies."""
    rfc: list[str] = []
    lin: list[str] = []
    for ep in ENDPOINTS:
        for t in _rfc_chain(ep, st, prev):
            rfc.append(
                str(
                    msg(
                        "{endpoint}: {old} → {new} on {event}, by {function}()",
                        endpoint=ep,
                        old=_dash(_rfc_ends(t)[0]),
                        new=_dash(_rfc_ends(t)[1]),
                        event=t["event"],
                        function=t["function"],
                    )
                )
            )
    for t in st["transitions"]:
        lin.append(
            str(
                msg(
                    "{endpoint} {object}: {old} → {new} on {event}, by {function}()",
                    endpoint=t["endpoint"],
                    object=t["object"],
                    old=t["from_state"],
                    new=t["to_state"],
                    event=t["event"],
                    function=t["function"],
                )
            )
        )
    y = DIAGRAM_H + 16
    out = ['<g id="tcp-caption">']
    for cls, lines in (("tcp-rfc-only", rfc), ("tcp-linux-only", lin)):
        out.append(f'<g class="{cls}">')
        for i, line in enumerate(lines[:3]):
            out.append(f'<text x="4" y="{y + i * 14}">{_t(line)}</text>')
        if len(lines) > 3:
            more = msg("and {count} more", count=len(lines) - 3)
            out.append(f'<text class="muted" x="300" y="{y + 28}">{_t(str(more))}</text>')
        out.append("</g>")
    out.append("</g>")
    return "".join(out)


# --- 2. ladder -----------------------------------------------------------------------------


def _seg_label(seg: SegmentState) -> str:
    flags = "+".join(seg["flags"]) or "-"
    text = f"{flags} seq={seg['seq']}"
    if "ACK" in seg["flags"]:
        text += f" ack={seg['ack']}"
    if seg["len"]:
        text += f" len={seg['len']}"
    return text


def _ladder(trace: Trace[Any, Any], frame: Frame[Any], st: TcpState, idx: _Index) -> str:
    now_i = frame.index
    shown_ids = [s for s in idx.order if idx.sent_at[s] <= now_i]
    current = {s["id"] for s in (st["segment"], st["delivered"]) if s is not None}
    window = shown_ids[-WINDOW:]
    older = [s for s in current if s in shown_ids and s not in window]
    if older:  # keep the step's segment in view even when newer ones were sent since
        first = shown_ids.index(min(older))
        window = shown_ids[first : first + WINDOW]
    out = ['<g id="tcp-ladder" class="ladder">']
    for ep in ENDPOINTS:
        x = LANE[ep]
        out.append(
            f'<circle cx="{x - 30}" cy="16" r="6" style="fill: {COLOUR[ep]}"/>'
            f'<text class="title" x="{x - 20}" y="21">{ep}</text>'
            f'<line class="timeline" x1="{x}" y1="{LAD_TOP - 14}" x2="{x}" '
            f'y2="{LAD_TOP + WINDOW * ROW + 40}"/>'
        )
    if len(shown_ids) > len(window) and window and shown_ids[0] != window[0]:
        hidden = shown_ids.index(window[0])
        earlier = _t(str(msg("↑ {count} earlier", count=hidden)))
        out.append(
            f'<text class="muted" x="{(LANE["client"] + LANE["server"]) / 2}" y="{LAD_TOP - 14}" '
            f'text-anchor="middle">{earlier}</text>'
        )
    last_row = -1
    for row, sid in enumerate(window):
        seg = idx.segs[sid]
        out.append(_seg(seg, row, st, idx, now_i, sid in current))
        last_row = row
    now_y = LAD_TOP + (last_row + 1) * ROW + 6
    out.append(
        f'<g id="tcp-now" class="glide" style="transform: translate(0px, {now_y}px)">'
        f'<line x1="{LAD_X0}" y1="0" x2="{WIDTH}" y2="0" style="stroke: var(--line); '
        'stroke-dasharray: 3 3"/>'
        f'<text class="muted" x="{LANE["client"] - 8}" y="14" text-anchor="end">'
        f"now {_t(_ms(st['t_ms']))}</text>"
    )
    for ep in ENDPOINTS:
        out.append(_now_box(ep, st))
    out.append("</g>")
    out.append(_timer_bars(st, idx, window, now_i, now_y))
    out.append("</g>")
    return "".join(out)


def _row_y(row: int) -> float:
    return LAD_TOP + row * ROW


def _seg(seg: SegmentState, row: int, st: TcpState, idx: _Index, now_i: int, now: bool) -> str:
    sid = seg["id"]
    src, dst = seg["src"], seg["dst"]
    x1, x2 = LANE[src], LANE[dst]
    dy = 26.0
    delivered = idx.delivered_at.get(sid)
    state = (
        "lost"
        if seg["lost"]
        else ("arrived" if delivered is not None and delivered <= now_i else "flight")
    )
    cls = f"seg {state} from-{src}" + (" now" if now else "")
    head = f"url(#tcp-head-{src})" if now else "url(#tcp-head-muted)"
    parts = [
        f'<g id="tcp-seg-{sid}" class="{cls} glide" style="transform: translate(0px, '
        f'{_row_y(row)}px)" data-seg="{sid}" data-kind="{_a(seg["kind"])}"'
        + (' data-focus="1"' if now and not st["transitions"] else "")
        + ">"
    ]
    if state == "lost":
        f = 0.55
        xm, ym = x1 + (x2 - x1) * f, dy * f
        parts.append(f'<line x1="{x1}" y1="0" x2="{xm:.1f}" y2="{ym:.1f}"/>')
        parts.append(
            f'<path class="cross" d="M{xm - 7:.1f} {ym - 7:.1f} L{xm + 7:.1f} {ym + 7:.1f} '
            f'M{xm - 7:.1f} {ym + 7:.1f} L{xm + 7:.1f} {ym - 7:.1f}"/>'
        )
    elif state == "flight":
        sent, arrive = seg["sent_ms"], seg["arrive_ms"] or seg["sent_ms"]
        span = max(arrive - sent, 1e-9)
        f = min(max((st["t_ms"] - sent) / span, 0.2), 0.8)
        xm, ym = x1 + (x2 - x1) * f, dy * f
        parts.append(f'<line x1="{x1}" y1="0" x2="{xm:.1f}" y2="{ym:.1f}" marker-end="{head}"/>')
        parts.append(f'<line class="rest" x1="{xm:.1f}" y1="{ym:.1f}" x2="{x2}" y2="{dy}"/>')
    else:
        parts.append(f'<line x1="{x1}" y1="0" x2="{x2}" y2="{dy}" marker-end="{head}"/>')
    label = _seg_label(seg)
    lx = (x1 + x2) / 2
    w = len(label) * 7.2 + 8
    parts.append(
        f'<rect class="lbl-bg" x="{lx - w / 2:.1f}" y="-2" width="{w:.1f}" height="15"/>'
        f'<text class="lbl mono" x="{lx:.1f}" y="9" text-anchor="middle">{_t(label)}</text>'
    )
    note = {"lost": str(msg("lost")), "flight": str(msg("in flight"))}.get(state, "")
    kind = seg["kind"].replace("_", " ")
    side = f"{_ms(seg['sent_ms'])}"
    parts.append(
        f'<text class="muted" x="{x1 + (-8 if src == "client" else 8)}" y="4" '
        f'text-anchor="{"end" if src == "client" else "start"}">{_t(side)}</text>'
    )
    plain = seg["kind"] in ("syn", "synack", "ack", "fin", "data", "rst")
    tag = " · ".join(t for t in ("" if plain else kind, note) if t)
    if tag:  # under the start of the arrow, clear of its label and of the next row
        tx, anchor = (x1 + 10, "start") if src == "client" else (x1 - 10, "end")
        parts.append(
            f'<text class="muted" x="{tx:.1f}" y="{dy}" text-anchor="{anchor}">{_t(tag)}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _now_box(ep: str, st: TcpState) -> str:
    e = st["endpoints"][ep]
    x = LANE[ep]
    parts = []
    rfc = _dash(e["rfc"])
    kern = " ".join(o["state"] for o in e["linux"]) or "—"
    w_r = len(rfc) * 7.6 + 12
    w_l = min(len(kern) * 7.2 + 12, 300)
    anchor_x = x - 8 if ep == "client" else x + 8
    for cls, text, w in (("tcp-rfc-only", rfc, w_r), ("tcp-linux-only", kern, w_l)):
        bx = min(anchor_x, WIDTH - w - 2) if ep == "server" else anchor_x - w
        if ep == "client":
            bx = max(bx, LAD_X0)
        parts.append(
            f'<g class="{cls}"><rect x="{bx:.1f}" y="20" width="{w:.1f}" height="18" rx="4" '
            f'style="fill: var(--bg); stroke: {COLOUR[ep]}; stroke-width: 2"/>'
            f'<text class="mono" x="{bx + 6:.1f}" y="33">{_t(text)}</text></g>'
        )
    call = st["call"]
    if call is not None and call["endpoint"] == ep and call["errno"]:
        text = f"{call['call']} → {call['errno']}"
        w = len(text) * 8.6 + 12
        focus = ' data-focus="1"' if not st["transitions"] else ""
        bx = anchor_x if ep == "server" else max(anchor_x - w, LAD_X0)
        if ep == "server":
            bx = min(bx, WIDTH - w - 2)
        parts.append(
            f'<g id="tcp-errno-{ep}" class="err errno"{focus}><rect x="{bx:.1f}" y="42" width="{w:.1f}" '
            f'height="20" rx="4"/><text x="{bx + 6:.1f}" y="56">{_t(text)}</text></g>'
        )
    elif call is not None and call["endpoint"] == ep and call["result"] == "blocked":
        text = f"{call['call']}() blocks"
        bx = anchor_x if ep == "server" else anchor_x - len(text) * 7
        parts.append(f'<text class="muted" x="{bx:.1f}" y="56">{_t(text)}</text>')
    return "".join(parts)


def _timer_bars(st: TcpState, idx: _Index, window: list[int], now_i: int, now_y: float) -> str:
    """Armed timers as bars beside each timeline, from the row they were armed in to now."""
    out = []
    armed = idx.armed_at[now_i] if now_i < len(idx.armed_at) else {}
    for ep in ENDPOINTS:
        k = 0
        for o in st["endpoints"][ep]["linux"]:
            for tm in o["timers"]:
                start = armed.get((ep, o["id"], tm["name"]), now_i)
                rows = [r for r, sid in enumerate(window) if idx.sent_at[sid] <= start]
                y0 = _row_y(rows[-1]) if rows else LAD_TOP - 10
                if not window or (window and idx.sent_at[window[0]] > start):
                    y0 = LAD_TOP - 10
                x = LANE[ep] + (-10 - 7 * k if ep == "client" else 10 + 7 * k)
                h = max(now_y - y0, 6)
                out.append(
                    f'<rect id="tcp-timer-{ep}-{o["id"]}-{_a(tm["name"])}" class="timer" '
                    f'x="{x - 2.5:.1f}" y="{y0:.1f}" width="5" height="{h:.1f}" rx="2" '
                    f'style="fill: {COLOUR[ep]}; opacity: 0.75"><title>'
                    f"{_t(TIMER_RFC.get(tm['name'], tm['name']))} timer fires at "
                    f"{_t(_ms(tm['deadline_ms']))}</title></rect>"
                )
                k += 1
    return "".join(out)


# --- 3. panels -----------------------------------------------------------------------------

_VARS: tuple[tuple[str, str], ...] = (
    ("iss", "ISS"),
    ("irs", "IRS"),
    ("snd_una", "SND.UNA"),
    ("snd_nxt", "SND.NXT"),
    ("rcv_nxt", "RCV.NXT"),
    ("snd_wnd", "SND.WND"),
    ("rcv_wnd", "RCV.WND"),
    ("cwnd", "cwnd"),
    ("send_queue", "Send-Q"),
    ("unsent", "unsent"),
    ("recv_queue", "Recv-Q"),
    ("rto_ms", "RTO ms"),
)
_LISTEN_VARS: tuple[tuple[str, str], ...] = (("accept_queue", "accept q"), ("syn_queue", "SYN q"))
PANEL_W = 300
LINE = 15


def _vars_for(e: EndpointState) -> list[tuple[str, str]]:
    out = list(_VARS)
    if e["accept_queue"] or e["syn_queue"] or any(o["object"] == "listener" for o in e["linux"]):
        out += _LISTEN_VARS
    return out


# RFC words for the kernel's timers (the RFC view never names a Linux object)
TIMER_RFC = {
    "retransmit": "retransmission",
    "synack": "SYN-ACK retransmission",
    "probe0": "persist",
    "delack": "delayed ACK",
    "keepalive": "keepalive",
    "fin_wait2": "FIN-WAIT-2",
    "timewait": "2MSL",
}


def _timers(e: EndpointState, rfc: bool) -> list[str]:
    return [
        f"{TIMER_RFC.get(tm['name'], tm['name']) if rfc else tm['name']} at "
        f"{_ms(tm['deadline_ms'])}"
        for o in e["linux"]
        for tm in o["timers"]
    ]


def _panel(ep: str, e: EndpointState, pe: EndpointState, st: TcpState, i: int) -> tuple[str, float]:
    x0 = i * (PANEL_W + 10)
    out = [
        f'<g id="tcp-panel-{ep}" class="ep-panel" style="transform: translate({x0}px, '
        f'{PANEL_Y}px)">',
        "",  # the boxes (one per view), once their heights are known
        f'<circle cx="14" cy="16" r="6" style="fill: {COLOUR[ep]}"/>',
        f'<text class="title" x="26" y="21">{ep}</text>',
    ]
    sx = 32 + len(ep) * 8.2
    changed = e["rfc"] != pe["rfc"]
    out.append(_value(sx, 21, _dash(e["rfc"]), changed, "tcp-rfc-only", bold=True))
    kern = KERNEL.get(e["rfc"], "")
    out.append(_value(sx + len(_dash(e["rfc"])) * 8.4 + 10, 21, kern, False, "tcp-rfc-only mono"))
    lin_states = " ".join(o["state"] for o in e["linux"]) or "—"
    pl = " ".join(o["state"] for o in pe["linux"]) or "—"
    out.append(_value(sx, 21, _fit(lin_states, 31), lin_states != pl, "tcp-linux-only mono"))
    y = 42
    for n, (key, label) in enumerate(_vars_for(e)):
        col = n % 2
        xx = 10 + col * 148
        val: Any = e[key]  # type: ignore[literal-required]
        old: Any = pe[key]  # type: ignore[literal-required]
        shown = "—" if val is None else (f"{val:g}" if isinstance(val, float) else str(val))
        out.append(f'<text class="muted" x="{xx}" y="{y}">{_t(label)}</text>')
        out.append(_value(xx + 62, y, shown, val != old, "mono"))
        if col == 1:
            y += LINE
    if len(_vars_for(e)) % 2:
        y += LINE
    y += 4
    status = []
    if e["blocked"]:
        status.append(str(msg("blocked in {call}()", call=e["blocked"])))
    if e["error"]:
        status.append(str(msg("pending error {errno}", errno=e["error"])))
    call = st["call"]
    errno = ""
    if call is not None and call["endpoint"] == ep:
        if call["errno"]:
            errno = f"{call['call']} → {call['errno']}"
        elif call["result"] != "blocked":
            status.append(f"{call['call']}() returned {call['result']}")
    boxes: list[str] = []
    heights: list[float] = []
    for view, rfc in (("tcp-rfc-only", True), ("tcp-linux-only", False)):
        yy = y
        part = [f'<g class="{view}">']
        timers = _timers(e, rfc)
        tline = (
            str(msg("timers: {list}", list=", ".join(timers)))
            if timers
            else str(msg("timers: none"))
        )
        part.append(f'<text x="10" y="{yy}">{_t(_fit(tline, 44))}</text>')
        yy += LINE
        if errno:
            w = len(errno) * 8.6 + 12
            part.append(
                f'<g class="err errno"><rect x="10" y="{yy - 13}" width="{w:.1f}" height="18" '
                f'rx="4"/><text x="16" y="{yy}">{_t(errno)}</text></g>'
            )
            yy += LINE + 4
        if status:
            text = _fit("; ".join(status), 46)
            part.append(f'<text class="muted" x="10" y="{yy}">{_t(text)}</text>')
            yy += LINE
        if not rfc:
            for o in e["linux"]:
                text = f"{o['object']} #{o['id']} {o['state']}"
                text += " · fd" if o["held_by_app"] else ""
                part.append(f'<text class="mono" x="10" y="{yy}">{_t(_fit(text, 39))}</text>')
                yy += LINE
                if o["tw_substate"]:
                    sub = f"tw_substate {o['tw_substate']}"
                    part.append(f'<text class="mono" x="26" y="{yy}">{_t(sub)}</text>')
                    yy += LINE
            if not e["linux"]:
                none = escape(str(msg("no kernel objects")))
                part.append(f'<text class="muted" x="10" y="{yy}">{none}</text>')
                yy += LINE
        part.append("</g>")
        out += part
        h = yy - 6
        heights.append(h)
        boxes.append(
            f'<rect class="panel {view}" x="0" y="0" width="{PANEL_W}" height="{h}" rx="8"/>'
        )
    out[1] = "".join(boxes)
    out.append("</g>")
    return "".join(out), max(heights)


def _fit(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _value(x: float, y: float, text: str, changed: bool, cls: str, bold: bool = False) -> str:
    w = len(text) * 7.4 + 8
    style = ' style="font-weight: 700"' if bold else ""
    inner = cls.replace("tcp-rfc-only", "").replace("tcp-linux-only", "").strip()
    outer = " ".join(c for c in ("tcp-rfc-only", "tcp-linux-only") if c in cls)
    g_cls = " ".join(c for c in (outer, "changed" if changed else "") if c)
    return (
        f'<g class="{g_cls}">'
        + (
            f'<rect x="{x - 4:.1f}" y="{y - 12}" width="{w:.1f}" height="16" rx="3"/>'
            if changed
            else ""
        )
        + f'<text class="{inner}" x="{x:.1f}" y="{y}"{style}>{_t(text)}</text></g>'
    )


def _wire(trace: Trace[Any, Any], st: TcpState, idx: _Index) -> tuple[str, int]:
    x0 = 2 * (PANEL_W + 10)
    w = WIDTH - x0 - 2
    seg = st["segment"] or st["delivered"]
    out = [f'<g id="tcp-wire" style="transform: translate({x0}px, {PANEL_Y}px)">']
    lines: list[tuple[str, str]] = []
    links: list[tuple[str, str]] = []
    if seg is None:
        title = str(msg("No segment this step"))
        n = len(st["in_flight"])
        if n:
            lines.append(("", str(msg("{count} segments in flight", count=n))))
    else:
        arrived = st["delivered"] is not None and st["segment"] is None
        title = (
            str(msg("Arrived at {dst}", dst=seg["dst"]))
            if arrived
            else str(msg("{src} sends", src=seg["src"]))
        )
        lines += [
            ("segment", f"#{seg['nth']} from {seg['src']} → {seg['dst']}"),
            ("flags", " ".join(seg["flags"]) or "none"),
            ("seq", str(seg["seq"])),
            ("ack", str(seg["ack"]) if "ACK" in seg["flags"] else f"{seg['ack']} (no ACK flag)"),
            ("len", f"{seg['len']} bytes"),
            ("window", str(seg["window"])),
            ("kind", seg["kind"].replace("_", " ")),
        ]
        if seg["lost"]:
            lines.append(("fate", str(msg("lost in the network"))))
        elif seg["arrive_ms"] is not None:
            lines.append(("arrives", _ms(seg["arrive_ms"])))
        if seg["kind"] == "data" or (seg["len"] and seg["kind"] not in ("retransmit",)):
            links.append(("/explainers/path", str(msg("How it travels the stack →"))))
            links.append(("/explainers/skb", str(msg("Its sk_buff →"))))
        if seg["kind"] == "retransmit":
            links.append(("/explainers/cwnd", str(msg("Loss and congestion control →"))))
    h = 30 + len(lines) * LINE + len(links) * LINE + 10
    out.append(f'<rect class="panel" x="0" y="0" width="{w}" height="{h}" rx="8"/>')
    out.append(f'<text class="title" x="10" y="20">{_t(title)}</text>')
    y = 40
    for k, v in lines:
        if k:
            out.append(f'<text class="muted" x="10" y="{y}">{_t(k)}</text>')
        out.append(f'<text class="mono" x="{84 if k else 10}" y="{y}">{_t(_fit(v, 34))}</text>')
        y += LINE
    for href, text in links:
        out.append(f'<a href="{_a(href)}" class="xlink"><text x="10" y="{y}">{_t(text)}</text></a>')
        y += LINE
    out.append("</g>")
    return "".join(out), h
