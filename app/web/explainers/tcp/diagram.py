"""Part 1 of the TCP picture: the RFC 9293 state diagram (figure 5). Every state, each endpoint's
current state lit (client blue, server orange), and the transition just taken traced as an arrow
labelled with the event and the Linux function that made it. The Linux view lights kernel
objects instead, with the request sock (``TCP_NEW_SYN_RECV``) and the timewait sock beside the
RFC states."""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.sim.core import msg
from app.sim.tcp.state import TcpState, TransitionState
from app.web.explainers.tcp.common import (
    COLOUR,
    ENDPOINTS,
    INK,
    KERNEL,
    LETTER,
    dash,
    event_word,
    text_w,
    who,
)
from app.web.svgtext import attr, esc

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
        f'<text class="{name_cls}" x="{x}" y="{y - 3}" text-anchor="middle">{esc(label)}</text>'
    )
    parts.append(
        f'<text class="mono muted" x="{x}" y="{y + 12}" text-anchor="middle">{esc(sub)}</text>'
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
    text1 = event_word(event) + (f" {extra}" if extra else "")
    text2 = f"{function}()"
    w = max(text_w(text1, 7.0), text_w(text2, 7.0)) + 12
    x, y, cover = _place(lx, ly, w, 32, avoid)
    if cover > 0:
        # no clear spot for two lines: the event alone (the caption names the function too)
        w1 = text_w(text1, 7.0) + 12
        x1, y1, cover1 = _place(lx, ly, w1, 18, avoid)
        if cover1 < cover:
            avoid.append((x1 - w1 / 2 - 4, y1 - 12, x1 + w1 / 2 + 4, y1 + 12))
            label = (
                f'<g class="taken-label"><rect class="tag" x="{x1 - w1 / 2:.1f}" '
                f'y="{y1 - 9:.1f}" width="{w1:.1f}" height="18" rx="4" '
                f'style="stroke: {COLOUR[ep]}"/><text x="{x1:.1f}" y="{y1 + 4:.1f}" '
                f'text-anchor="middle"><title>{esc(text2)}</title>{esc(text1)}</text></g>'
            )
            return arrow, label
    avoid.append((x - w / 2 - 4, y - 20, x + w / 2 + 4, y + 20))
    label = (
        f'<g class="taken-label"><rect class="tag" x="{x - w / 2:.1f}" y="{y - 16:.1f}" '
        f'width="{w:.1f}" height="32" rx="4" style="stroke: {COLOUR[ep]}"/>'
        f'<text x="{x:.1f}" y="{y - 3:.1f}" text-anchor="middle">{esc(text1)}</text>'
        f'<text class="mono" x="{x:.1f}" y="{y + 11:.1f}" text-anchor="middle">'
        f"{esc(text2)}</text></g>"
    )
    return arrow, label


def draw_diagram(st: TcpState, prev: TcpState, focus: str | None) -> str:
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
        out.append(_node(key, dash(key), KERNEL[key], lit, extra))
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
        out.append(_node(key, KERNEL[key], dash(key), objs.get(key, []), kernel=True))
    tw_sub = "timewait_sock"
    for ep in ENDPOINTS:
        for o in eps[ep]["linux"]:
            if o["object"] == "timewait_sock" and o["tw_substate"]:
                tw_sub = "tw_sub " + o["tw_substate"].removeprefix("TCP_")
    out.append(_node("REQ", "TCP_NEW_SYN_RECV", "request_sock", objs.get("REQ", []), kernel=True))
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
            f'aria-label="{attr(str(label))}"><rect x="{x}" y="2" width="70" height="22" rx="5"/>'
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
            f'<text x="{x + 12}" y="42">{esc(who(ep))}</text>'
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
                        endpoint=who(ep),
                        old=dash(_rfc_ends(t)[0]),
                        new=dash(_rfc_ends(t)[1]),
                        event=event_word(t["event"]),
                        function=t["function"],
                    )
                )
            )
    for t in st["transitions"]:
        lin.append(
            str(
                msg(
                    "{endpoint} {object}: {old} → {new} on {event}, by {function}()",
                    endpoint=who(t["endpoint"]),
                    object=t["object"],
                    old=t["from_state"],
                    new=t["to_state"],
                    event=event_word(t["event"]),
                    function=t["function"],
                )
            )
        )
    y = DIAGRAM_H + 16
    out = ['<g id="tcp-caption">']
    for cls, lines in (("tcp-rfc-only", rfc), ("tcp-linux-only", lin)):
        out.append(f'<g class="{cls}">')
        for i, line in enumerate(lines[:3]):
            out.append(f'<text x="4" y="{y + i * 14}">{esc(line)}</text>')
        if len(lines) > 3:
            more = msg("and {count} more", count=len(lines) - 3)
            out.append(f'<text class="muted" x="300" y="{y + 28}">{esc(str(more))}</text>')
        out.append("</g>")
    out.append("</g>")
    return "".join(out)
