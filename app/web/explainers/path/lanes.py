"""The swimlane: the eight lane rows with their notes, the lane names (one column that
static/explainers/path/lanes.js keeps in view on a phone), the netfilter hooks above them and
the path so far with the current function on it."""

from __future__ import annotations

from html import escape

from app.sim.core import msg
from app.sim.path.engine import PathState
from app.web.explainers.path.geometry import (
    HOOK_ROWS_Y,
    LABEL_W,
    LANE_H,
    LANE_Y0,
    LANES,
    LAYER_NAMES,
    PLOT_X0,
    PLOT_X1,
    attr,
    lane_of,
    lane_y,
)
from app.web.explainers.path.layout import Layout
from app.web.explainers.skb.layout import text_width


def lanes(state: PathState) -> str:
    """The lane rows (names are drawn by lane_heads, on top, so they can stay in view)."""
    lit = lane_of(state)
    out = []
    for i, (key, _) in enumerate(LANES):
        y = LANE_Y0 + i * LANE_H
        on = key == lit
        flag = ' data-lit="1"' if on else ""
        out.append(
            f'<g id="lane-{key}" class="lane{" lit" if on else ""}" data-lane="{key}"{flag}>'
            f'<rect class="lane-bg" x="0" y="{y + 1}" width="{PLOT_X1}" height="{LANE_H - 2}" '
            'rx="4"/></g>'
        )
    c = state["counters"]
    note = str(msg("readable by the application: {bytes} bytes", bytes=c["delivered_bytes"]))
    out.append(
        f'<text id="lane-note-user" class="small muted" x="{PLOT_X1 - 8}" '
        f'y="{lane_y("user") + 4.5}" text-anchor="end">{escape(note)}</text>'
    )
    dev = state["dev"]
    hw = str(msg("device {dev}", dev=dev)) if dev else ""
    napi = state["napi"]
    if napi is not None:
        hw += (" · " if hw else "") + str(msg("{n} frames in the RX ring", n=napi["ring"]))
    out.append(
        f'<text id="lane-note-hw" class="small muted" x="{PLOT_X1 - 8}" '
        f'y="{lane_y("hardware") + 4.5}" text-anchor="end">{escape(hw)}</text>'
    )
    return "".join(out)


def lane_heads(state: PathState) -> str:
    """The lane names in one column over the lanes' left ends. On a phone the swimlane scrolls
    sideways; static/explainers/path/lanes.js moves this group with the scroll so the names
    stay in view (an SVG element cannot be position: sticky)."""
    lit = lane_of(state)
    out = ['<g id="lane-heads" class="lane-heads">']
    for i, (key, label) in enumerate(LANES):
        y = LANE_Y0 + i * LANE_H
        on = key == lit
        out.append(
            f'<g id="lanehead-{key}" class="lane-head{" lit" if on else ""}" data-lane="{key}">'
            f'<rect class="head-under" x="0" y="{y}" width="{LABEL_W}" height="{LANE_H}"/>'
            f'<rect class="lane-bg" x="0" y="{y + 1}" width="{LABEL_W}" height="{LANE_H - 2}" '
            f'rx="4"/><text class="lane-name" x="8" y="{y + LANE_H / 2 + 4.5}">'
            f"{escape(str(label))}</text></g>"
        )
    out.append("</g>")
    return "".join(out)


def hook_marks(lay: Layout, index: int) -> str:
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
        w = text_width(label, 12.5) + 8
        lit = ' data-lit="1"' if cls == "lit" else ""
        out.append(
            f'<g id="hook-{n}" class="hook {cls}" data-hook="{attr(hook)}" data-first="{first}"{lit}>'
            f"<title>{escape(hook)}</title>"
            f'<line class="hook-line" x1="{x}" y1="{ly + 3}" x2="{x}" y2="{y - 7}"/>'
            f'<rect class="hook-tag" x="{x - w / 2:.1f}" y="{ly - 11}" width="{w:.1f}" height="14" '
            'rx="3"/>'
            f'<text class="small mono" x="{x}" y="{ly}" text-anchor="middle">{escape(label)}</text>'
            f'<path class="hook-mark" d="M {x} {y - 7} L {x + 7} {y} L {x} {y + 7} L {x - 7} {y} Z"/>'
            "</g>"
        )
    return "".join(out)


def trail(lay: Layout, index: int, state: PathState) -> str:
    pts = lay.points[: index + 1]
    poly = " ".join(f"{x},{y}" for x, y in pts)
    x, y = lay.points[index]
    fn = state["function"]
    label = f"{fn}()"
    layer = LAYER_NAMES.get(state["layer"])
    sub = (str(layer) if layer else state["layer"]) + (
        f" · {state['hook']}" if state["hook"] else ""
    )
    w = text_width(label, 13) + text_width(" " + sub, 12.5) + 14
    box_h = LANE_H - 2
    box_y = y - box_h / 2
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
        f'<g id="path-current" class="current" data-focus="1" data-function="{attr(fn)}" '
        f'data-lane="{attr(lane_of(state))}" data-layer="{attr(state["layer"])}" data-step="{index}">'
        f'<circle id="path-dot" class="cur-dot" cx="0" cy="0" r="6" '
        f'style="transform: translate({x}px, {y}px)"/>'
        f'<rect class="cur-box" x="{bx:.1f}" y="{box_y}" width="{w:.1f}" height="{box_h}" rx="4"/>'
        f'<text class="cur-text" x="{bx + 7:.1f}" y="{box_y + box_h / 2 + 4.5}">{escape(label)}'
        f'<tspan class="small muted" font-weight="400"> {escape(sub)}</tspan></text></g>'
    )
