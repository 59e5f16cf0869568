"""The packet-path picture: a swimlane of layers with the path so far and the netfilter hooks,
the call stack and execution context beside it, NAPI accounting, and the packet's sk_buff drawn
by the sk_buff explainer's own picture code.

One root ``<svg id="path-svg">`` (so the SVG/PNG exports size it from its viewBox); the sk_buff
picture is nested inside it at scale 1. Element ids are stable between frames (``lane-<lane>``,
``path-current``, ``hook-<n>``, ``stack-<depth>``, the skb picture's ``ptr-<skb>-<ptr>``) and
positions live in attributes or inline style so the player's morphing swap animates moves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from html import escape
from typing import Any

from app.sim.core import Frame, Message, Trace, msg
from app.sim.path.engine import NapiView, PathState
from app.sim.path.skb import SkbView
from app.sim.skbuff.model import SHINFO
from app.web.explainers.path.lru import Lru
from app.web.explainers.path.replay import Rebuild, Replay, ops_for, replay, snapshot
from app.web.explainers.skb.layout import Axis
from app.web.explainers.skb.picture import picture as skb_picture
from app.web.sources import encode_params

WIDTH = 1000
LABEL_W = 96  # lane label column
PLOT_X0 = 104
PLOT_X1 = 598
HOOK_ROWS_Y = (12, 25, 38)  # three rows of hook labels above the lanes
LANE_Y0 = 46
LANE_H = 28
RIGHT_X = 612
STACK_MAX = 13  # stack lines shown; deeper stacks fold their middle
STACK_LINE = 15

LANES: tuple[tuple[str, Message], ...] = (  # rendered per request, in the reader's language
    ("user", msg("user space")),
    ("socket", msg("socket")),
    ("tcp", msg("TCP")),
    ("ip", msg("IP")),
    ("netfilter", msg("netfilter")),
    ("core", msg("core")),
    ("driver", msg("driver")),
    ("hardware", msg("hardware")),
)
LANE_INDEX = {key: i for i, (key, _) in enumerate(LANES)}
# The simulation's finer layers, grouped into the eight lanes of issue #13.
LAYER_LANE: dict[str, str] = {
    "user": "user",
    "socket": "socket",
    "tcp": "tcp",
    "ip": "ip",
    "route": "ip",
    "neigh": "ip",
    "netfilter": "netfilter",
    "bridge": "core",
    "core": "core",
    "dev": "core",
    "qdisc": "core",
    "napi": "core",
    "gro": "core",
    "softirq": "core",
    "link": "core",
    "driver": "driver",
    "vxlan": "driver",
    "irq": "driver",
    "hardware": "hardware",
}
CONTEXT_LABEL = {
    "process": str(msg("process context")),
    "softirq": str(msg("softirq (NET_RX / NET_TX)")),
    "hardirq": str(msg("hard IRQ")),
}
# Where hooks crowd together their labels shrink to these (the full name is in a tooltip and
# in the current function's label when the step is at the hook).
HOOK_SHORT = {
    "PRE_ROUTING": "PRE",
    "LOCAL_IN": "IN",
    "FORWARD": "FWD",
    "LOCAL_OUT": "OUT",
    "POST_ROUTING": "POST",
    "BR_PRE_ROUTING": "br PRE",
    "BR_LOCAL_IN": "br IN",
}
CHAR_W = 7.7  # width of one 12.5 px monospace character
TCP_LAYERS = frozenset({"tcp", "socket"})

STYLE = """
.path-svg { font-family: var(--font); }
.path-svg text { fill: var(--fg); font-size: 13px; }
.path-svg .mono, .path-svg .mono text { font-family: var(--mono); }
.path-svg .muted { fill: var(--muted); }
.path-svg .small { font-size: 12.5px; }
.path-svg .lane-bg { fill: var(--panel); stroke: var(--line); stroke-width: 1; }
.path-svg .lane.lit .lane-bg { fill: var(--orange); fill-opacity: 0.28; stroke: var(--orange); stroke-width: 2; }
.path-svg .lane.lit .lane-name { font-weight: 700; }
.path-svg .trail { fill: none; stroke: var(--muted); stroke-width: 2; stroke-opacity: 0.55; stroke-linejoin: round; }
.path-svg .trail-dot { fill: var(--muted); fill-opacity: 0.55; }
.path-svg .cur-dot { fill: var(--orange); stroke: var(--fg); stroke-width: 1.5; transition: transform var(--glide) ease; }
.path-svg .cur-box { fill: var(--bg); stroke: var(--orange); stroke-width: 2; }
.path-svg .cur-text { font-family: var(--mono); font-weight: 700; }
.path-svg .hook .hook-mark { fill: var(--bg); stroke: var(--purple); stroke-width: 2; }
.path-svg .hook.passed .hook-mark { fill: var(--purple); }
.path-svg .hook.lit .hook-mark { fill: var(--vermillion); stroke: var(--fg); }
.path-svg .hook .hook-line { stroke: var(--purple); stroke-dasharray: 3 3; stroke-width: 1; }
.path-svg .hook.future text { fill: var(--muted); }
.path-svg .hook.lit text { font-weight: 700; }
.path-svg .hook.lit .hook-tag { fill: var(--vermillion); fill-opacity: 0.2; stroke: var(--vermillion); }
.path-svg .hook .hook-tag { fill: none; stroke: none; }
.path-svg .ctx rect { stroke: var(--fg); stroke-width: 1; }
.path-svg .ctx-process rect { fill: #0072B2; }
.path-svg .ctx-process text { fill: #ffffff; }
.path-svg .ctx-softirq rect { fill: #009E73; }
.path-svg .ctx-softirq text { fill: #000000; }
.path-svg .ctx-hardirq rect { fill: #E69F00; }
.path-svg .ctx-hardirq text { fill: #000000; }
.path-svg .ctx text { font-weight: 700; }
.path-svg .stack-line text { font-family: var(--mono); font-size: 13px; }
.path-svg .stack-line.top rect { fill: var(--orange); fill-opacity: 0.28; stroke: var(--orange); }
.path-svg .stack-line.top text { font-weight: 700; }
.path-svg .stack-line rect { fill: none; }
.path-svg .panel { fill: var(--panel); stroke: var(--line); }
.path-svg .napi-on text.v { font-weight: 700; }
.path-svg .held rect { fill: var(--green); fill-opacity: 0.25; stroke: var(--green); }
.path-svg .changed-val { fill: var(--fg); font-weight: 700; }
.path-svg a text { fill: var(--link); text-decoration: underline; }
.path-svg a:focus text, .path-svg a:hover text { font-weight: 700; }
.path-svg .hdr line { stroke-width: 2; }
.path-svg .hdr-mac line { stroke: var(--blue); }
.path-svg .hdr-network line { stroke: var(--vermillion); }
.path-svg .hdr-transport line { stroke: var(--purple); }
.path-svg .hdr text { font-family: var(--mono); font-size: 12.5px; paint-order: stroke; stroke: var(--bg); stroke-width: 3px; }
.path-svg .drop text { fill: var(--vermillion); font-weight: 700; }
.stage svg.path-svg svg.skb-svg { min-width: 0; }
@media (max-width: 700px) {
  .stage svg.path-svg { min-width: 1000px; }
  .stage:has(> svg.path-svg) { max-height: 72vh; overflow: auto; }
}
@media (prefers-reduced-motion: reduce) { .path-svg .cur-dot { transition: none; } }
"""


def _a(value: Any) -> str:
    return escape(str(value), quote=True)


# --- per-trace layout, cached ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    points: list[tuple[float, float]]  # one per frame
    hooks: list[tuple[int, int, str]]  # (first frame, last frame, hook) of each run of frames
    hook_rows: list[int]
    hook_labels: list[str]
    napi: bool  # some frame is inside NAPI: the strip has room for GRO's held packets
    skb_trace: Trace[Any, None]
    skb_height: float
    widest: Frame[Any]
    rep: Replay | None


LAYOUTS: Lru[tuple[str, str, int], Layout] = Lru(16)


def lane_of(state: Mapping[str, Any]) -> str:
    return LAYER_LANE.get(str(state.get("layer")), "core")


def _lane_y(lane: str) -> float:
    return LANE_Y0 + LANE_INDEX[lane] * LANE_H + LANE_H / 2


def _fallback_skb_state(view: SkbView) -> dict[str, Any]:
    """The sk_buff picture's state from the frame's own fields (no frags detail)."""
    buf = f"{view['name']}-head"
    skb = {
        **view,
        "buffer": buf,
        "status": "live",
        "fclone": "none",
        "frags": [],
        "frag_list": [],
    }
    return {
        "primary": view["name"],
        "skbs": [skb],
        "buffers": {buf: {"end": view["end"], "size": view["end"] + SHINFO, "freed": False}},
    }


def _skb_state(rep: Replay | None, frame: Frame[PathState]) -> dict[str, Any]:
    view = frame.state["skb"]
    if view is None:
        return {"primary": None, "skbs": [], "buffers": {}}
    snap = snapshot(rep, frame.index, view) if rep is not None else None
    return snap if snap is not None else _fallback_skb_state(view)


def _svg_height(svg: str) -> float:
    head = svg[: svg.find(">")]
    vb = head.split('viewBox="', 1)[1].split('"', 1)[0].split()
    return float(vb[3])


def layout(trace: Trace[PathState, None]) -> Layout:
    key = (trace.sim_version, repr(trace.params), len(trace.frames))
    hit = LAYOUTS.get(key)
    if hit is not None:
        return hit
    n = len(trace.frames)
    span = PLOT_X1 - PLOT_X0 - 16
    step = span / max(n - 1, 1)
    points = [
        (round(PLOT_X0 + 8 + i * step, 2), _lane_y(lane_of(f.state)))
        for i, f in enumerate(trace.frames)
    ]
    hooks: list[tuple[int, int, str]] = []
    for f in trace.frames:
        h = f.state["hook"]
        if h is None:
            continue
        if hooks and hooks[-1][2] == h and hooks[-1][1] == f.index - 1:
            hooks[-1] = (hooks[-1][0], f.index, h)
        else:
            hooks.append((f.index, f.index, h))
    rows: list[int] = []
    labels: list[str] = []
    ends = [-1e9] * len(HOOK_ROWS_Y)
    for first, _, h in hooks:
        x = points[first][0]
        for label in (h, HOOK_SHORT.get(h, h)):
            half = (len(label) * CHAR_W + 8) / 2
            free = [r for r in range(len(ends)) if x - half > ends[r]]
            if free:
                row = free[0]
                break
        else:
            row = min(range(len(ends)), key=lambda r: ends[r])
        ends[row] = x + half
        rows.append(row)
        labels.append(label)
    rep = replay(trace)
    skb_frames: tuple[Frame[Any], ...] = tuple(
        Frame(
            index=f.index,
            op=f.op,
            result=f.result,
            narration=f.narration,
            source=f.source,
            state=_skb_state(rep, f),
        )
        for f in trace.frames
    )
    skb_trace: Trace[Any, None] = Trace(
        explainer="skb", sim_version=trace.sim_version, params=None, frames=skb_frames, series=None
    )
    # The picture's height depends on its shape only (skbs per buffer, frags, frag_list), not
    # on its scale: draw one frame of each shape alone to measure it.
    heights: dict[tuple[Any, ...], float] = {}
    for sf in skb_frames:
        if not sf.state["skbs"]:
            continue
        order: list[Any] = []
        for s in sf.state["skbs"]:
            if s.get("buffer") not in order:
                order.append(s.get("buffer"))
        shape = tuple(
            (order.index(s.get("buffer")), len(s.get("frags", ())), len(s.get("frag_list", ())))
            for s in sf.state["skbs"]
        )
        if shape not in heights:
            one = dataclasses.replace(skb_trace, frames=(sf,))
            heights[shape] = _svg_height(skb_picture(one, sf))
    height = max(heights.values(), default=0.0)
    # the frame whose head buffer is largest sets the scale of every frame
    widest = max(
        skb_frames,
        key=lambda f: max((int(s.get("end", 0)) for s in f.state["skbs"]), default=0),
    )
    out = Layout(
        points=points,
        hooks=hooks,
        hook_rows=rows,
        hook_labels=labels,
        napi=any(f.state["napi"] is not None for f in trace.frames),
        skb_trace=skb_trace,
        skb_height=height,
        widest=widest,
        rep=rep,
    )
    LAYOUTS.put(key, out)
    return out


# --- pieces -------------------------------------------------------------------------------------


def _lanes(state: PathState) -> str:
    lit = lane_of(state)
    out = []
    for i, (key, label) in enumerate(LANES):
        y = LANE_Y0 + i * LANE_H
        on = key == lit
        flag = ' data-lit="1"' if on else ""
        out.append(
            f'<g id="lane-{key}" class="lane{" lit" if on else ""}" data-lane="{key}"{flag}>'
            f'<rect class="lane-bg" x="0" y="{y + 1}" width="{PLOT_X1}" height="{LANE_H - 2}" rx="4"/>'
            f'<text class="lane-name" x="8" y="{y + LANE_H / 2 + 5}">{escape(str(label))}</text></g>'
        )
    c = state["counters"]
    out.append(
        f'<text id="lane-note-user" class="small muted" x="{PLOT_X1 - 8}" '
        f'y="{_lane_y("user") + 4}" text-anchor="end">'
        + escape(
            str(
                msg(
                    "readable by the application: {bytes} bytes",
                    bytes=c["delivered_bytes"],
                )
            )
        )
        + "</text>"
    )
    dev = state["dev"]
    hw = str(msg("device {dev}", dev=dev)) if dev else ""
    napi = state["napi"]
    if napi is not None:
        hw += (" · " if hw else "") + str(msg("{n} frames in the RX ring", n=napi["ring"]))
    out.append(
        f'<text id="lane-note-hw" class="small muted" x="{PLOT_X1 - 8}" '
        f'y="{_lane_y("hardware") + 4}" text-anchor="end">{escape(hw)}</text>'
    )
    return "".join(out)


def _hooks(lay: Layout, index: int) -> str:
    out = []
    rows = zip(lay.hooks, lay.hook_rows, lay.hook_labels, strict=True)
    for n, ((first, last, hook), row, label) in enumerate(rows):
        x, y = lay.points[first]
        if first <= index <= last:
            cls = "lit"
        elif last < index:
            cls = "passed"
        else:
            cls = "future"
        ly = HOOK_ROWS_Y[row]
        w = len(label) * CHAR_W + 8
        lit = ' data-lit="1"' if cls == "lit" else ""
        out.append(
            f'<g id="hook-{n}" class="hook {cls}" data-hook="{_a(hook)}" data-first="{first}"{lit}>'
            f"<title>{escape(hook)}</title>"
            f'<line class="hook-line" x1="{x}" y1="{ly + 3}" x2="{x}" y2="{y - 8}"/>'
            f'<rect class="hook-tag" x="{x - w / 2}" y="{ly - 11}" width="{w}" height="15" rx="3"/>'
            f'<text class="small mono" x="{x}" y="{ly}" text-anchor="middle">{escape(label)}</text>'
            f'<path class="hook-mark" d="M {x} {y - 8} L {x + 8} {y} L {x} {y + 8} L {x - 8} {y} Z"/>'
            "</g>"
        )
    return "".join(out)


def _trail(lay: Layout, index: int, state: PathState) -> str:
    pts = lay.points[: index + 1]
    poly = " ".join(f"{x},{y}" for x, y in pts)
    x, y = lay.points[index]
    fn = state["function"]
    label = f"{fn}()"
    sub = str(state["layer"]) + (f" · {state['hook']}" if state["hook"] else "")
    w = len(label) * 8.2 + len(sub) * 7.7 + 22
    box_y = y - 13
    if x + 12 + w <= PLOT_X1:
        bx = x + 12
    elif x - 12 - w >= PLOT_X0:
        bx = x - 12 - w
    else:
        # no room on either side in the lane: clamp into the plot and move to the lane above
        # (below, for the top lane) so the dot stays visible
        bx = min(max(PLOT_X0, x - w / 2), PLOT_X1 - w)
        box_y += -LANE_H if y - LANE_H > LANE_Y0 else LANE_H
    return (
        f'<polyline id="path-trail" class="trail" points="{poly}"/>'
        f'<g id="path-current" class="current" data-focus="1" data-function="{_a(fn)}" '
        f'data-lane="{_a(lane_of(state))}" data-layer="{_a(state["layer"])}" data-step="{index}">'
        f'<circle id="path-dot" class="cur-dot" cx="0" cy="0" r="7" '
        f'style="transform: translate({x}px, {y}px)"/>'
        f'<rect class="cur-box" x="{bx}" y="{box_y}" width="{w}" height="26" rx="4"/>'
        f'<text class="cur-text" x="{bx + 7}" y="{box_y + 18}">{escape(label)}'
        f'<tspan class="small muted" font-weight="400"> {escape(sub)}</tspan></text></g>'
    )


def _context(state: PathState, packets: int) -> str:
    ctx = state["context"]
    label = CONTEXT_LABEL.get(ctx, ctx)
    w = WIDTH - RIGHT_X
    where = str(msg("namespace {ns}", ns=state["ns"]))
    if state["packet"] is not None and packets > 1:
        where += " · " + str(msg("packet {n} of {total}", n=state["packet"] + 1, total=packets))
    return (
        f'<g id="ctx" class="ctx ctx-{_a(ctx)}" data-context="{_a(ctx)}">'
        f'<rect x="{RIGHT_X}" y="2" width="{w}" height="26" rx="13"/>'
        f'<text x="{RIGHT_X + w / 2}" y="20" text-anchor="middle">{escape(label)}</text></g>'
        f'<text id="ctx-where" class="small muted" x="{RIGHT_X}" y="46">{escape(where)}</text>'
    )


def _stack(state: PathState) -> str:
    stack = list(state["stack"]) or [state["function"]]
    shown: list[tuple[int, str] | None] = list(enumerate(stack))
    if len(stack) > STACK_MAX:
        head, tail = 3, STACK_MAX - 4
        shown = [*shown[:head], None, *shown[-tail:]]
    y0 = 50
    title = str(msg("call stack, outermost first ({n} deep)", n=len(stack)))
    out = [
        f'<g id="stack" class="stack" data-depth="{len(stack)}">'
        f'<text class="small muted" x="{RIGHT_X}" y="{y0 + 10}">{escape(title)}</text>'
    ]
    for row, item in enumerate(shown):
        y = y0 + 16 + row * STACK_LINE
        if item is None:
            hidden = len(stack) - (len(shown) - 1)
            text = str(msg("⋮ {n} more calls", n=hidden))
            out.append(
                f'<g id="stack-fold" class="stack-line fold"><text class="muted" '
                f'x="{RIGHT_X + 8}" y="{y + 12}">{escape(text)}</text></g>'
            )
            continue
        depth, fn = item
        top = depth == len(stack) - 1
        indent = min(depth, 12) * 4
        out.append(
            f'<g id="stack-{row}" class="stack-line{" top" if top else ""}" data-depth="{depth}" '
            f'data-function="{_a(fn)}"><rect x="{RIGHT_X}" y="{y}" width="{WIDTH - RIGHT_X}" '
            f'height="{STACK_LINE}" rx="3"/><text x="{RIGHT_X + 6 + indent}" y="{y + 12}">'
            f"{escape(fn)}</text></g>"
        )
    out.append("</g>")
    return "".join(out)


def _napi(napi: NapiView | None, state: PathState, y: float, tall: bool) -> str:
    c = state["counters"]
    parts = [f'<g id="napi" class="{"napi-on" if napi else "napi-off"}">']
    parts.append(
        f'<rect class="panel" x="0" y="{y}" width="{WIDTH}" height="{44 if tall else 26}" rx="6"/>'
    )
    if napi is not None:
        irq = str(msg("on")) if napi["irq_enabled"] else str(msg("off"))
        items = [
            (str(msg("NAPI budget left")), f"{napi['budget']}"),
            (str(msg("weight")), str(napi["weight"])),
            (str(msg("work this poll")), f"{napi['work']}/{napi['weight']}"),
            (str(msg("polls")), str(napi["polls"])),
            (str(msg("rx_list")), str(napi["rx_count"])),
            (str(msg("ring")), str(napi["ring"])),
            (str(msg("device IRQ")), irq),
        ]
    else:
        items = [(str(msg("NAPI")), str(msg("not polling in this step")))]
    x = 10.0
    for label, value in items:
        parts.append(
            f'<text class="small" x="{x}" y="{y + 18}"><tspan class="muted">{escape(label)}</tspan>'
            f' <tspan class="v">{escape(value)}</tspan></text>'
        )
        x += (len(label) + len(value) + 2) * 7.3 + 10
    held = napi["held"] if napi is not None else []
    hx = 10.0
    hy = y + 24 if tall else y + 4
    label = str(msg("GRO holds {n}:", n=len(held))) if napi is not None else ""
    if napi is not None:
        parts.append(f'<text class="small muted" x="{hx}" y="{hy + 13}">{escape(label)}</text>')
        hx += len(label) * 7.3 + 8
    for i, h in enumerate(held[:6]):
        text = str(
            msg(
                "bucket {b} · flow {f} · {s} segs · {n} B",
                b=h["bucket"],
                f=h["flow"],
                s=h["segs"],
                n=h["len"],
            )
        )
        w = len(text) * 7.3 + 12
        parts.append(
            f'<g id="held-{i}" class="held"><rect x="{hx}" y="{hy}" width="{w}" height="17" rx="3"/>'
            f'<text class="small" x="{hx + 5}" y="{hy + 13}">{escape(text)}</text></g>'
        )
        hx += w + 6
    if len(held) > 6:
        parts.append(f'<text class="small muted" x="{hx}" y="{hy + 13}">+{len(held) - 6}</text>')
    counters = str(
        msg(
            "backlog {b} · qdisc {q} · receive queue {r} · dropped {d}",
            b=c["backlog"],
            q=c["qdisc"],
            r=c["receive_queue"],
            d=c["dropped"],
        )
    )
    parts.append(
        f'<text class="small muted" x="{WIDTH - 10}" y="{hy + 13}" text-anchor="end">'
        f"{escape(counters)}</text>"
    )
    parts.append("</g>")
    return "".join(parts)


def skb_link(lay: Layout, frame: Frame[PathState]) -> tuple[str, Rebuild | None]:
    """The sk_buff explainer URL that rebuilds this frame's skb, and how faithfully."""
    view = frame.state["skb"]
    if view is None:
        return "", None
    if lay.rep is not None:
        rb = ops_for(lay.rep, frame.index, view)
        if rb.ops and rb.exact or rb.ops and "frag_list" in rb.why:
            return f"/explainers/skb/custom?p={encode_params({'ops': rb.ops})}", rb
    closest = "rx-headers" if frame.state["context"] != "process" else "tcp-transmit"
    return f"/explainers/skb/presets/{closest}", None


def _links(lay: Layout, frame: Frame[PathState], y: float) -> str:
    state = frame.state
    out = [f'<g id="links" class="links" transform="translate(0 {y})">']
    x = 0.0
    href, rb = skb_link(lay, frame)
    if href:
        if rb is not None and rb.exact:
            text = str(msg("Open {skb} in the sk_buff explainer ↗", skb=state["skb"]["name"]))  # type: ignore[index]
            note = ""
        elif rb is not None:
            text = str(msg("Open {skb} in the sk_buff explainer ↗", skb=state["skb"]["name"]))  # type: ignore[index]
            note = str(msg("(close: {why})", why=rb.why))
        else:
            text = str(msg("Open the closest sk_buff walkthrough ↗"))
            note = str(msg("(this step's skb cannot be rebuilt there)"))
        out.append(
            f'<a id="skb-link" href="{_a(href)}" data-exact="{"1" if rb and rb.exact else "0"}">'
            f'<text x="{x}" y="12">{escape(text)}</text></a>'
        )
        x += len(text) * 7.4 + 12
        if note:
            out.append(f'<text class="small muted" x="{x}" y="12">{escape(note)}</text>')
            x += len(note) * 6.9 + 12
    if state["layer"] in TCP_LAYERS:
        for key, href2, label in (
            ("tcp", "/explainers/tcp", str(msg("TCP state machine ↗"))),
            ("cwnd", "/explainers/cwnd", str(msg("congestion control ↗"))),
        ):
            out.append(
                f'<a id="link-{key}" class="tcp-link" href="{href2}">'
                f'<text x="{x}" y="12">{escape(label)}</text></a>'
            )
            x += len(label) * 7.4 + 14
    out.append("</g>")
    return "".join(out)


def _headers(view: SkbView, axis: Axis, y: float) -> str:
    out = [f'<g id="hdrs" class="hdrs" transform="translate(0 {y})">']
    caption = escape(str(msg("header offsets")))
    out.append(
        f'<text class="small muted" x="{axis.knots[0][1] - 8}" y="14" text-anchor="end">'
        f"{caption}</text>"
    )
    for row, which in enumerate(("mac", "network", "transport")):
        at = view[f"{which}_header"]  # type: ignore[literal-required]
        if at is None:
            continue
        hx = axis.x(at)
        out.append(
            f'<g id="hdr-{which}" class="hdr hdr-{which}" data-offset="{at}" '
            f'style="transform: translate({hx}px, 0px)">'
            f'<line x1="0" y1="{2 + row * 14}" x2="0" y2="46"/>'
            f'<text x="4" y="{12 + row * 14}">{which}_header {at}</text></g>'
        )
    out.append("</g>")
    return "".join(out)


def _nested_skb(lay: Layout, frame: Frame[PathState], y: float) -> tuple[str, Axis | None]:
    """The sk_buff explainer's picture of this frame, nested at scale 1, and its byte axis."""
    sf = lay.skb_trace.frames[frame.index]
    svg = skb_picture(dataclasses.replace(lay.skb_trace, frames=(lay.widest, sf)), sf)
    h = _svg_height(svg)
    head, rest = svg.split(">", 1)
    knots = [
        (float(o), float(x))
        for o, x in (
            pair.split(":") for pair in head.split('data-axis="', 1)[1].split('"', 1)[0].split()
        )
    ]
    axis = Axis(knots=tuple(knots)) if len(knots) >= 2 else None
    head = head.replace(
        "<svg ",
        f'<svg x="0" y="{y}" width="{WIDTH}" height="{h}" '
        f'style="width: {WIDTH}px; height: {h}px; min-width: 0" ',
        1,
    )
    return head + ">" + rest, axis


def picture(trace: Trace[Any, Any], frame: Frame[Any]) -> str:
    lay = layout(trace)
    state: PathState = frame.state
    lanes_bottom = LANE_Y0 + len(LANES) * LANE_H
    parts = [_lanes(state), _hooks(lay, frame.index), _trail(lay, frame.index, state)]
    parts.append(_context(state, int(getattr(trace.params, "packets", 1))))
    parts.append(_stack(state))
    y = max(lanes_bottom, 50 + 16 + (STACK_MAX + 1) * STACK_LINE) + 6
    parts.append(_napi(state["napi"], state, y, lay.napi))
    y += 52 if lay.napi else 34
    parts.append(_links(lay, frame, y))
    drop = state["drop_reason"]
    if drop:
        dropped = escape(str(msg("dropped: {reason}", reason=drop)))
        parts.append(
            f'<g id="drop" class="drop" data-reason="{_a(drop)}"><text x="{WIDTH}" y="{y + 12}" '
            f'text-anchor="end">{dropped}</text></g>'
        )
    y += 22
    view = state["skb"]
    skb_h = lay.skb_height
    if view is not None:
        nested, axis = _nested_skb(lay, frame, y + 50)
        if axis is not None:
            parts.append(_headers(view, axis, y))
        parts.append(nested)
        skb_attrs = (
            f' data-skb="{_a(view["name"])}" data-skb-data="{view["data"]}" '
            f'data-skb-len="{view["len"]}"'
        )
    else:
        text = str(msg("no sk_buff in this step"))
        parts.append(
            f'<text id="no-skb" class="muted" x="{WIDTH / 2}" y="{y + 40}" '
            f'text-anchor="middle">{escape(text)}</text>'
        )
        skb_attrs = ""
    total = y + 50 + max(skb_h, 60)
    hook = state["hook"]
    title = f"{frame.index}: {state['function']} ({state['layer']}, {state['context']})"
    return (
        f'<svg id="path-svg" class="path-svg" viewBox="0 0 {WIDTH} {total:g}" role="group" '
        f'aria-label="{_a(title)}" xmlns="http://www.w3.org/2000/svg" data-step="{frame.index}" '
        f'data-function="{_a(state["function"])}" data-lane="{_a(lane_of(state))}" '
        f'data-layer="{_a(state["layer"])}" data-context="{_a(state["context"])}" '
        f'data-hook="{_a(hook or "")}"{skb_attrs}>'
        f"<style>{STYLE}</style>" + "".join(parts) + "</svg>"
    )
