"""The packet-path picture: a swimlane of layers with the path so far and the netfilter hooks,
the call stack and execution context beside it, NAPI accounting, and the packet's sk_buff drawn
by the sk_buff explainer's own picture code.

Sized so one step fits one 1440×900 screen beside its narration (tests/browser/test_path.py):
20-unit lanes, a call stack folded to its entry and its innermost calls, and under the sk_buff
explainer's head buffers a summary of the page frags (runs of alike frags counted in one chip,
the frag this step added or changed drawn on its own and lit) and of the frag_list (each chained
skb one chip), then a one-row colour key. The lane names are one column (``#lane-heads``) drawn
over the lanes' left ends; on a phone, where the picture scrolls sideways inside the stage,
static/explainers/path/lanes.js moves that column with the scroll so the names stay in view.

One root ``<svg id="path-svg">`` (so the SVG/PNG exports size it from its viewBox); the sk_buff
picture is nested inside it at scale 1. Element ids are stable between frames (``lane-<lane>``,
``lanehead-<lane>``, ``path-current``, ``hook-<n>``, ``stack-<row>``, ``fragsum-<skb>``,
``frag-<skb>-<first>``, ``fraglistsum-<skb>``, ``held-<n>``, the skb picture's
``ptr-<skb>-<ptr>``) and positions live in attributes or inline style so the player's morphing
swap animates moves.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from html import escape
from typing import Any

from app.sim.core import Frame, Message, Trace, msg
from app.sim.path.engine import NapiView, PathState
from app.sim.path.skb import SkbView
from app.sim.skbuff.model import SHINFO
from app.web import i18n
from app.web.explainers.path.replay import Rebuild, Replay, ops_for, replay, snapshot
from app.web.explainers.skb.layout import Axis, text_width
from app.web.explainers.skb.picture import X0 as SKB_X0
from app.web.explainers.skb.picture import legend_items, legend_swatch
from app.web.explainers.skb.picture import picture as skb_picture
from app.web.memo import Memo
from app.web.sources import encode_params

WIDTH = 1000
LABEL_W = 96  # lane name column (sticky: static/explainers/path/lanes.js keeps it in view)
PLOT_X0 = 104
PLOT_X1 = 598
HOOK_ROWS_Y = (12, 28, 44)  # baselines of three rows of hook labels above the lanes
LANE_Y0 = 48
LANE_H = 20
LANES_BOTTOM = LANE_Y0 + 8 * LANE_H
RIGHT_X = 612
STACK_Y0 = 57  # top of the first call-stack line
STACK_LINE = 16
STACK_MAX = 9  # stack lines shown; deeper stacks fold their middle
STACK_HEAD = 2  # outermost calls kept when folding (the entry: syscall, softirq, IRQ)
GAP = 6  # vertical gap between the picture's bands
STATUS_ROW = 20
HDR_STRIP = 26  # one row of header-offset labels with leaders down to the skb
SUMMARY_ROW = 24  # one row of the frags / frag_list summary
LEGEND_ROW = 22

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
.path-svg .lane-head .head-under { fill: var(--bg); }
.path-svg .lane-head.lit .lane-bg { fill: var(--orange); fill-opacity: 0.28; stroke: var(--orange); stroke-width: 2; }
.path-svg .lane-head.lit .lane-name { font-weight: 700; }
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
.path-svg .stack-line text { font-family: var(--mono); font-size: 12.5px; }
.path-svg .stack-line.top rect { fill: var(--orange); fill-opacity: 0.28; stroke: var(--orange); }
.path-svg .stack-line.top text { font-weight: 700; }
.path-svg .stack-line rect { fill: none; }
.path-svg .panel { fill: var(--panel); stroke: var(--line); }
.path-svg .napi-on text.v { font-weight: 700; }
.path-svg .held rect { fill: var(--green); fill-opacity: 0.25; stroke: var(--green); }
.path-svg .held.lit rect { stroke: #F0E442; stroke-width: 3; }
.path-svg .held.lit text { font-weight: 700; }
.path-svg .changed-val { fill: var(--fg); font-weight: 700; }
.path-svg a text { fill: var(--link); text-decoration: underline; }
.path-svg a:focus text, .path-svg a:hover text { font-weight: 700; }
.path-svg .hdr line, .path-svg .hdr polyline { stroke-width: 2; fill: none; }
.path-svg .hdr-mac line, .path-svg .hdr-mac polyline { stroke: var(--blue); }
.path-svg .hdr-network line, .path-svg .hdr-network polyline { stroke: var(--vermillion); }
.path-svg .hdr-transport line, .path-svg .hdr-transport polyline { stroke: var(--purple); }
.path-svg .sum-chip rect.chip-bg { fill: var(--panel); stroke: var(--line); }
.path-svg .sum-chip.lit rect.chip-bg { stroke: #F0E442; stroke-width: 3; }
.path-svg .sum-chip.lit text { font-weight: 700; }
.path-svg .hdr text { font-family: var(--mono); font-size: 12.5px; paint-order: stroke; stroke: var(--bg); stroke-width: 3px; }
.path-svg .drop text { fill: var(--vermillion); font-weight: 700; }
.stage svg.path-svg svg.skb-svg { min-width: 0; }
@media (max-width: 700px) {
  .stage svg.path-svg { min-width: 1000px; }
  .stage:has(> svg.path-svg) { max-height: 60vh; overflow: auto; }
}
@media (prefers-reduced-motion: reduce) { .path-svg .cur-dot { transition: none; } }
"""


def _a(value: Any) -> str:
    return escape(str(value), quote=True)


# --- the sk_buff part: the sk_buff explainer's picture of the head buffers, then a compact
# summary of the page frags and the frag_list (a 17-frag GRO skb is one row, not six)


def _frag_list_members(state: Mapping[str, Any]) -> set[str]:
    return {str(m) for s in state.get("skbs", ()) for m in s.get("frag_list", ())}


def _drawn_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """What the sk_buff picture draws for a frame: the head buffers and their skbs, without the
    frags and the frag_list (the summary rows show those) and without skbs that only sit on a
    frag_list (the summary names them), unless the step follows one of those."""
    primary = state.get("primary")
    members = _frag_list_members(state)
    skbs = [
        {**s, "frags": [], "frag_list": []}
        for s in state.get("skbs", ())
        if s.get("name") not in members or s.get("name") == primary
    ]
    bufs = {s.get("buffer") for s in skbs}
    return {
        **state,
        "skbs": skbs,
        "buffers": {b: v for b, v in state.get("buffers", {}).items() if b in bufs},
    }


def _frag_text(frag: Mapping[str, Any]) -> str:
    refs = f" · refs {frag['refs']}" if frag.get("refs") else ""
    return f"{frag.get('page', 'page')} +{int(frag.get('offset', 0))} · {int(frag.get('size', 0))} B{refs}"


def _frag_key(frag: Mapping[str, Any]) -> tuple[int, int, int]:
    return (int(frag.get("offset", 0)), int(frag.get("size", 0)), int(frag.get("refs", 0)))


Chip = tuple[str, str, bool, dict[str, str]]  # (id, text, lit, data attributes)


def _frag_chips(name: str, frags: list[Mapping[str, Any]], before: list[Any] | None) -> list[Chip]:
    """Runs of alike frags as one counted chip; frags this step added or changed form their
    own runs, lit. ``before`` is the same skb's frags when the walk last showed it (None: not
    shown before, nothing is lit)."""
    changed = [
        before is not None and (i >= len(before) or dict(before[i]) != dict(f))
        for i, f in enumerate(frags)
    ]
    chips: list[Chip] = []
    i = 0
    while i < len(frags):
        j = i + 1
        while (
            j < len(frags)
            and changed[j] == changed[i]
            and _frag_key(frags[j]) == _frag_key(frags[i])
        ):
            j += 1
        if j - i == 1:
            text = f"[{i}] {_frag_text(frags[i])}"
        else:
            refs = f" · refs {frags[i]['refs']}" if frags[i].get("refs") else ""
            text = (
                f"[{i}..{j - 1}] {j - i} × {int(frags[i].get('size', 0))} B"
                f" · +{int(frags[i].get('offset', 0))}{refs}"
                f" · {frags[i].get('page', 'page')}..{frags[j - 1].get('page', 'page')}"
            )
        chips.append((f"frag-{name}-{i}", text, changed[i], {"first": str(i), "count": str(j - i)}))
        i = j
    return chips


def _summary_rows(
    state: Mapping[str, Any], old: Mapping[str, Mapping[str, Any]]
) -> list[tuple[str, str, list[Chip]]]:
    """(row id, caption, chips) for each frags array and frag_list of the frame's skbs; ``old``
    is each skb as the walk last showed it before this step (what changed since is lit). Clones
    share one skb_shared_info, so equal frags on one buffer are one row, its last chip naming
    the sharers."""
    skbs = list(state.get("skbs", ()))
    members = _frag_list_members(state)
    by_name = {str(s.get("name")): s for s in skbs}
    rows: list[tuple[str, str, list[Chip]]] = []
    done: set[str] = set()
    for s in skbs:
        name = str(s.get("name"))
        if name in done or name in members:
            continue
        frags = list(s.get("frags", ()))
        if frags:
            sharing = [
                str(o.get("name"))
                for o in skbs
                if o.get("buffer") == s.get("buffer")
                and str(o.get("name")) not in members
                and list(o.get("frags", ())) == frags
            ]
            done.update(sharing)
            before = old.get(name)
            chips = _frag_chips(name, frags, list(before.get("frags", ())) if before else None)
            caption = f"{name} frags[{len(frags)}]"
            if len(sharing) > 1:
                caption = f"frags[{len(frags)}]"
                text = str(
                    msg(
                        "shared by {skbs}: one skb_shared_info",
                        skbs=" + ".join(sharing),
                    )
                )
                chips.append((f"fragshare-{name}", text, False, {"note": "1"}))
            rows.append((f"fragsum-{name}", caption, chips))
    for s in skbs:
        name = str(s.get("name"))
        flist = [str(m) for m in s.get("frag_list", ())]
        if not flist:
            continue
        before = old.get(name)
        had = {str(m) for m in before.get("frag_list", ())} if before else None
        chips = []
        for k, m in enumerate(flist):
            other = by_name.get(m)
            text = f"→ {m}"
            if other is not None:
                text += str(
                    msg(
                        " · own head buffer {buffer} · data at {data}",
                        buffer=other.get("buffer"),
                        data=other.get("data"),
                    )
                )
            lit = had is not None and m not in had
            chips.append((f"fraglist-{name}-{k}", text, lit, {"skb": m}))
        rows.append((f"fraglistsum-{name}", f"{name} frag_list", chips))
    return rows


def _summary(
    state: Mapping[str, Any], old: Mapping[str, Mapping[str, Any]], y: float
) -> tuple[str, float]:
    """The frags / frag_list rows at ``y`` (in the sk_buff picture's coordinates), and their
    height. Chips wrap onto a further row when the width runs out."""
    out: list[str] = []
    h = 0.0
    for row_id, caption, chips in _summary_rows(state, old):
        ry = y + h
        out.append(f'<g id="{_a(row_id)}" class="summary">')
        out.append(
            f'<text class="frags-caption" x="12" y="{ry + 16}">'
            f"{escape(_fit_text(caption, SKB_X0 - 20))}</text>"
        )
        x = float(SKB_X0)
        for cid, text, lit, data in chips:
            w = text_width(text, 13) + 12
            if x > SKB_X0 and x + w > WIDTH - 4:
                x, ry, h = float(SKB_X0), ry + SUMMARY_ROW, h + SUMMARY_ROW
            if data.get("note"):
                out.append(
                    f'<text id="{_a(cid)}" class="muted" x="{x:.1f}" y="{ry + 16}">'
                    f"{escape(text)}</text>"
                )
                x += w
                continue
            attrs = "".join(f' data-{k}="{_a(v)}"' for k, v in data.items())
            flag = ' data-lit="1"' if lit else ""
            out.append(
                f'<g id="{_a(cid)}" class="sum-chip{" lit" if lit else ""}"{attrs}{flag}>'
                f'<rect class="chip-bg" x="{x:.1f}" y="{ry + 2}" width="{w:.1f}" height="19" rx="4"/>'
                f'<text x="{x + 6:.1f}" y="{ry + 16}">{escape(text)}</text></g>'
            )
            x += w + 8
        out.append("</g>")
        h += SUMMARY_ROW
    return "".join(out), h


def _fit_text(text: str, width: float) -> str:
    if text_width(text, 13) <= width:
        return text
    while text and text_width(text + "…", 13) > width:
        text = text[:-1]
    return text + "…"


def _legend() -> str:
    """The sk_buff picture's colour key on one row (its own wraps onto two)."""
    parts = ['<g class="legend path-legend">']
    x, ty = 12.0, 2.0
    for cls, label in legend_items():
        w = 20 + text_width(label, 13) + 14
        if x > 12 and x + w > WIDTH:
            x, ty = 12.0, ty + LEGEND_ROW
        parts.append(legend_swatch(cls, x, ty))
        parts.append(f'<text x="{x + 20}" y="{ty + 14}">{escape(label)}</text>')
        x += w
    parts.append("</g>")
    return "".join(parts)


_LEGEND_AT = re.compile(r'<g class="legend" style="transform: translate\(0px, ([\d.]+)px\)">')


@dataclasses.dataclass(frozen=True, slots=True)
class SkbPart:
    svg: str  # the nested <svg> (without position), legend and summary included
    height: float
    axis: Axis | None


def _skb_part(
    lay_trace: Trace[Any, None],
    widest: Frame[Any],
    index: int,
    full: Trace[Any, None],
    old: Mapping[str, Mapping[str, Any]],
) -> SkbPart:
    """The sk_buff explainer's picture of frame ``index`` (drawn state), its own legend swapped
    for a one-row one, with the frags / frag_list summary under the buffers."""
    sf = lay_trace.frames[index]
    # the step before is in the trace so the picture draws this step's moves and lights what
    # changed; the widest frame keeps one scale for the whole walk
    frames = sorted(
        {f.index: f for f in (widest, *lay_trace.frames[max(index - 1, 0) : index + 1])}.values(),
        key=lambda f: f.index,
    )
    svg = skb_picture(dataclasses.replace(lay_trace, frames=tuple(frames)), sf)
    head, rest = svg.split(">", 1)
    knots = [
        (float(o), float(x))
        for o, x in (
            pair.split(":") for pair in head.split('data-axis="', 1)[1].split('"', 1)[0].split()
        )
    ]
    axis = Axis(knots=tuple(knots)) if len(knots) >= 2 else None
    m = _LEGEND_AT.search(rest)
    body = rest[: m.start()] if m else rest[: rest.rfind("</svg>")]
    y = float(m.group(1)) - 8 if m else _svg_height(svg)
    summary, h = _summary(full.frames[index].state, old, y)
    y += h + 4
    legend = f'<g transform="translate(0 {y:g})">{_legend()}</g>'
    y += LEGEND_ROW + 2
    head = re.sub(r'viewBox="[^"]*"', f'viewBox="0 0 {WIDTH} {y:g}"', head, count=1)
    return SkbPart(svg=head + ">" + body + summary + legend + "</svg>", height=y, axis=axis)


# --- per-trace layout, cached ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    points: list[tuple[float, float]]  # one per frame
    hooks: list[tuple[int, int, str]]  # (first frame, last frame, hook) of each run of frames
    hook_rows: list[int]
    hook_labels: list[str]
    napi: bool  # some frame is inside NAPI: the strip has room for GRO's held packets
    skb_trace: Trace[Any, None]  # the sk_buff explainer's full state per frame
    drawn_trace: Trace[Any, None]  # what its picture draws (see _drawn_state)
    skb_height: float
    parts: dict[int, SkbPart]  # each frame's sk_buff part, by frame index
    widest: Frame[Any]
    rep: Replay | None


LAYOUTS: Memo[tuple[str, str, str, int], Layout] = Memo(32)


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


def _hook_placement(
    hooks: list[tuple[int, int, str]], points: list[tuple[float, float]]
) -> tuple[list[int], list[str]]:
    rows: list[int] = []
    labels: list[str] = []
    ends = [-1e9] * len(HOOK_ROWS_Y)
    for first, _, h in hooks:
        x = points[first][0]
        row = -1
        for label in (h, HOOK_SHORT.get(h, h)):
            half = (text_width(label, 12.5) + 8) / 2
            free = [r for r in range(len(ends)) if x - half > ends[r]]
            if free:
                row = free[0]
                break
        if row < 0:
            row = min(range(len(ends)), key=lambda r: ends[r])
        ends[row] = x + half
        rows.append(row)
        labels.append(label)
    return rows, labels


def layout(trace: Trace[PathState, None]) -> Layout:
    # The sk_buff parts are drawn with their labels in the reader's language: kept per language.
    key = (i18n.current(), trace.sim_version, repr(trace.params), len(trace.frames))
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
    rows, labels = _hook_placement(hooks, points)
    rep = replay(trace)

    def skb_frames(states: list[dict[str, Any]]) -> tuple[Frame[Any], ...]:
        return tuple(
            Frame(
                index=f.index,
                op=f.op,
                result=f.result,
                narration=f.narration,
                source=f.source,
                state=st,
            )
            for f, st in zip(trace.frames, states, strict=True)
        )

    full_states = [_skb_state(rep, f) for f in trace.frames]
    skb_trace: Trace[Any, None] = Trace(
        explainer="skb",
        sim_version=trace.sim_version,
        params=None,
        frames=skb_frames(full_states),
        series=None,
    )
    drawn_trace = dataclasses.replace(
        skb_trace, frames=skb_frames([_drawn_state(st) for st in full_states])
    )
    # the frame whose head buffer is largest sets the scale of every frame
    widest = max(
        drawn_trace.frames,
        key=lambda f: max((int(s.get("end", 0)) for s in f.state["skbs"]), default=0),
    )
    # Every frame of one walk has the same height (the picture never jumps while stepping):
    # the tallest sk_buff part. Each frame's part is drawn here once and kept.
    parts: dict[int, SkbPart] = {}
    seen: dict[str, Mapping[str, Any]] = {}  # each skb as the walk last showed it
    for sf in skb_trace.frames:
        if sf.state["skbs"]:
            parts[sf.index] = _skb_part(drawn_trace, widest, sf.index, skb_trace, dict(seen))
        seen.update((str(s.get("name")), s) for s in sf.state["skbs"])
    out = Layout(
        points=points,
        hooks=hooks,
        hook_rows=rows,
        hook_labels=labels,
        napi=any(f.state["napi"] is not None for f in trace.frames),
        skb_trace=skb_trace,
        drawn_trace=drawn_trace,
        skb_height=max((p.height for p in parts.values()), default=0.0),
        parts=parts,
        widest=widest,
        rep=rep,
    )
    LAYOUTS.put(key, out)
    return out


# --- pieces -------------------------------------------------------------------------------------


def _lanes(state: PathState) -> str:
    """The lane rows (names are drawn by _lane_heads, on top, so they can stay in view)."""
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
        f'y="{_lane_y("user") + 4.5}" text-anchor="end">{escape(note)}</text>'
    )
    dev = state["dev"]
    hw = str(msg("device {dev}", dev=dev)) if dev else ""
    napi = state["napi"]
    if napi is not None:
        hw += (" · " if hw else "") + str(msg("{n} frames in the RX ring", n=napi["ring"]))
    out.append(
        f'<text id="lane-note-hw" class="small muted" x="{PLOT_X1 - 8}" '
        f'y="{_lane_y("hardware") + 4.5}" text-anchor="end">{escape(hw)}</text>'
    )
    return "".join(out)


def _lane_heads(state: PathState) -> str:
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
        w = text_width(label, 12.5) + 8
        lit = ' data-lit="1"' if cls == "lit" else ""
        out.append(
            f'<g id="hook-{n}" class="hook {cls}" data-hook="{_a(hook)}" data-first="{first}"{lit}>'
            f"<title>{escape(hook)}</title>"
            f'<line class="hook-line" x1="{x}" y1="{ly + 3}" x2="{x}" y2="{y - 7}"/>'
            f'<rect class="hook-tag" x="{x - w / 2:.1f}" y="{ly - 11}" width="{w:.1f}" height="14" '
            'rx="3"/>'
            f'<text class="small mono" x="{x}" y="{ly}" text-anchor="middle">{escape(label)}</text>'
            f'<path class="hook-mark" d="M {x} {y - 7} L {x + 7} {y} L {x} {y + 7} L {x - 7} {y} Z"/>'
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
        f'<g id="path-current" class="current" data-focus="1" data-function="{_a(fn)}" '
        f'data-lane="{_a(lane_of(state))}" data-layer="{_a(state["layer"])}" data-step="{index}">'
        f'<circle id="path-dot" class="cur-dot" cx="0" cy="0" r="6" '
        f'style="transform: translate({x}px, {y}px)"/>'
        f'<rect class="cur-box" x="{bx:.1f}" y="{box_y}" width="{w:.1f}" height="{box_h}" rx="4"/>'
        f'<text class="cur-text" x="{bx + 7:.1f}" y="{box_y + box_h / 2 + 4.5}">{escape(label)}'
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
        f'<rect x="{RIGHT_X}" y="2" width="{w}" height="22" rx="11"/>'
        f'<text x="{RIGHT_X + w / 2}" y="18" text-anchor="middle">{escape(label)}</text></g>'
        f'<text id="ctx-where" class="small muted" x="{RIGHT_X}" y="38">{escape(where)}</text>'
    )


def _stack(state: PathState) -> str:
    """The call stack, outermost first. A deep stack keeps its entry (the outermost calls) and
    the calls nearest the current function, and folds the middle into one counted line."""
    stack = list(state["stack"]) or [state["function"]]
    shown: list[tuple[int, str] | None] = list(enumerate(stack))
    if len(stack) > STACK_MAX:
        tail = STACK_MAX - STACK_HEAD - 1
        shown = [*shown[:STACK_HEAD], None, *shown[-tail:]]
    title = str(msg("call stack, outermost first ({n} deep)", n=len(stack)))
    out = [
        f'<g id="stack" class="stack" data-depth="{len(stack)}">'
        f'<text class="small muted" x="{RIGHT_X}" y="{STACK_Y0 - 3}">{escape(title)}</text>'
    ]
    for row, item in enumerate(shown):
        y = STACK_Y0 + row * STACK_LINE
        if item is None:
            hidden = len(stack) - (len(shown) - 1)
            text = str(msg("⋮ {n} more calls", n=hidden))
            out.append(
                f'<g id="stack-fold" class="stack-line fold" data-hidden="{hidden}">'
                f"<title>{escape(' → '.join(stack[STACK_HEAD : STACK_HEAD + hidden]))}</title>"
                f'<text class="muted" x="{RIGHT_X + 8}" y="{y + 12}">{escape(text)}</text></g>'
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


def _counters(state: PathState) -> str:
    c = state["counters"]
    return str(
        msg(
            "backlog {b} · qdisc {q} · receive queue {r} · dropped {d}",
            b=c["backlog"],
            q=c["qdisc"],
            r=c["receive_queue"],
            d=c["dropped"],
        )
    )


def _napi(napi: NapiView | None, state: PathState, y: float, before: NapiView | None) -> str:
    """NAPI accounting (two rows: the poll's numbers, then GRO's held packets and the queue
    counters), for walks where NAPI polls. A held packet this step added or grew is lit."""
    parts = [f'<g id="napi" class="{"napi-on" if napi else "napi-off"}">']
    parts.append(f'<rect class="panel" x="0" y="{y}" width="{WIDTH}" height="42" rx="6"/>')
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
            f'<text class="small" x="{x:.1f}" y="{y + 16}"><tspan class="muted">'
            f'{escape(label)}</tspan> <tspan class="v">{escape(value)}</tspan></text>'
        )
        x += text_width(f"{label} {value}", 12.5) + 14
    held = napi["held"] if napi is not None else []
    hx = 10.0
    hy = y + 22
    if napi is not None:
        label = str(msg("GRO holds {n}:", n=len(held)))
        parts.append(f'<text class="small muted" x="{hx}" y="{hy + 13}">{escape(label)}</text>')
        hx += text_width(label, 12.5) + 8
    old = {(o["bucket"], o["flow"]): o for o in (before["held"] if before else [])}
    counters = _counters(state)
    room = WIDTH - 10 - text_width(counters, 12.5) - 12 - text_width("+99", 12.5)
    shown = 0
    for i, h in enumerate(held):
        was = old.get((h["bucket"], h["flow"]))
        grew = was is None or was["segs"] != h["segs"] or was["len"] != h["len"]
        cls, flag = ("held lit", ' data-lit="1"') if grew else ("held", "")
        text = str(
            msg(
                "bucket {b} · flow {f} · {s} segs · {n} B",
                b=h["bucket"],
                f=h["flow"],
                s=h["segs"],
                n=h["len"],
            )
        )
        w = text_width(text, 12.5) + 10
        if hx + w > room:
            break
        shown += 1
        parts.append(
            f'<g id="held-{i}" class="{cls}"{flag}><rect x="{hx:.1f}" y="{hy}" width="{w:.1f}" '
            f'height="17" rx="3"/><text class="small" x="{hx + 5:.1f}" y="{hy + 13}">'
            f"{escape(text)}</text></g>"
        )
        hx += w + 6
    if len(held) > shown:
        parts.append(
            f'<text id="held-more" class="small muted" x="{hx:.1f}" y="{hy + 13}">'
            f"+{len(held) - shown}</text>"
        )
    parts.append(
        f'<text id="counters" class="small muted" x="{WIDTH - 10}" y="{hy + 13}" '
        f'text-anchor="end">{escape(counters)}</text>'
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
    """One row: the cross-links on the left; on the right the drop reason and, for walks
    without NAPI, the queue counters."""
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
            f'<text x="{x}" y="13">{escape(text)}</text></a>'
        )
        x += text_width(text, 13) * 0.95 + 12
        if note:
            out.append(f'<text class="small muted" x="{x:.1f}" y="13">{escape(note)}</text>')
            x += text_width(note, 12.5) * 0.95 + 12
    if state["layer"] in TCP_LAYERS:
        for key, href2, label in (
            ("tcp", "/explainers/tcp", str(msg("TCP state machine ↗"))),
            ("cwnd", "/explainers/cwnd", str(msg("congestion control ↗"))),
        ):
            out.append(
                f'<a id="link-{key}" class="tcp-link" href="{href2}">'
                f'<text x="{x:.1f}" y="13">{escape(label)}</text></a>'
            )
            x += text_width(label, 13) * 0.95 + 14
    right = float(WIDTH)
    drop = state["drop_reason"]
    if drop:
        dropped = str(msg("dropped: {reason}", reason=drop))
        out.append(
            f'<g id="drop" class="drop" data-reason="{_a(drop)}"><text x="{right}" y="13" '
            f'text-anchor="end">{escape(dropped)}</text></g>'
        )
        right -= text_width(dropped, 13) + 16
    if not lay.napi:
        out.append(
            f'<text id="counters" class="small muted" x="{right:.1f}" y="13" text-anchor="end">'
            f"{escape(_counters(state))}</text>"
        )
    out.append("</g>")
    return "".join(out)


def _headers(view: SkbView, axis: Axis, y: float) -> str:
    """mac/network/transport_header offsets on one row above the skb: each label sits as near
    its offset as the labels before it allow, with a leader down to the offset."""
    out = [f'<g id="hdrs" class="hdrs" transform="translate(0 {y})">']
    caption = escape(str(msg("header offsets")))
    out.append(
        f'<text class="small muted" x="{axis.knots[0][1] - 8}" y="12" text-anchor="end">'
        f"{caption}</text>"
    )
    found = []
    for which in ("mac", "network", "transport"):
        at = view[f"{which}_header"]  # type: ignore[literal-required]
        if at is not None:
            found.append((which, int(at), axis.x(at), f"{which}_header {at}"))
    found.sort(key=lambda t: (t[2], t[0] != "mac"))
    xs: list[float] = []
    end = -1e9
    for _, _, hx, text in found:
        tx = max(hx + 4, end + 10)
        xs.append(tx)
        end = tx + text_width(text, 12.5)
    right = WIDTH - 2.0
    for k in range(len(found) - 1, -1, -1):  # pull back what runs past the right edge
        w = text_width(found[k][3], 12.5)
        if xs[k] + w > right:
            xs[k] = right - w
        right = xs[k] - 10
    for (which, at, hx, text), tx in zip(found, xs, strict=True):
        rel = tx - hx
        # straight down from under the label's start when it sits at its offset, else a
        # slanted leader below the label row (leaders keep the labels' order, so never cross)
        lead = "0,2 " if abs(rel - 4) < 0.5 else f"{rel + 2:.1f},15 0,22 "
        out.append(
            f'<g id="hdr-{which}" class="hdr hdr-{which}" data-offset="{at}" '
            f'style="transform: translate({hx}px, 0px)">'
            f'<polyline points="{lead}0,{HDR_STRIP + 4}"/>'
            f'<text x="{rel:.1f}" y="11">{escape(text)}</text></g>'
        )
    out.append("</g>")
    return "".join(out)


def picture(trace: Trace[Any, Any], frame: Frame[Any]) -> str:
    lay = layout(trace)
    state: PathState = frame.state
    parts = [_lanes(state), _hooks(lay, frame.index), _trail(lay, frame.index, state)]
    parts.append(_lane_heads(state))
    parts.append(_context(state, int(getattr(trace.params, "packets", 1))))
    parts.append(_stack(state))
    y = float(LANES_BOTTOM + GAP)
    if lay.napi:
        before = trace.frames[frame.index - 1].state["napi"] if frame.index else None
        parts.append(_napi(state["napi"], state, y, before))
        y += 42 + GAP
    parts.append(_links(lay, frame, y))
    y += STATUS_ROW + 2
    view = state["skb"]
    part = lay.parts.get(frame.index)
    if view is not None and part is not None:
        if part.axis is not None:
            parts.append(_headers(view, part.axis, y))
        y += HDR_STRIP
        parts.append(
            part.svg.replace(
                "<svg ",
                f'<svg x="0" y="{y}" width="{WIDTH}" height="{part.height:g}" '
                f'style="width: {WIDTH}px; height: {part.height:g}px; min-width: 0" ',
                1,
            )
        )
        skb_attrs = (
            f' data-skb="{_a(view["name"])}" data-skb-data="{view["data"]}" '
            f'data-skb-len="{view["len"]}"'
        )
    else:
        y += HDR_STRIP
        text = str(msg("no sk_buff in this step"))
        parts.append(
            f'<text id="no-skb" class="muted" x="{WIDTH / 2}" y="{y + 30}" '
            f'text-anchor="middle">{escape(text)}</text>'
        )
        skb_attrs = ""
    total = y + max(lay.skb_height, 50)
    hook = state["hook"]
    title = f"{frame.index}: {state['function']} ({state['layer']}, {state['context']})"
    return (
        f'<svg id="path-svg" class="path-svg" viewBox="0 0 {WIDTH} {total:g}" role="group" '
        f'aria-label="{_a(title)}" xmlns="http://www.w3.org/2000/svg" data-step="{frame.index}" '
        f'data-function="{_a(state["function"])}" data-lane="{_a(lane_of(state))}" '
        f'data-layer="{_a(state["layer"])}" data-context="{_a(state["context"])}" '
        f'data-hook="{_a(hook or "")}" data-fits-screen=""{skb_attrs}>'
        f"<style>{STYLE}</style>" + "".join(parts) + "</svg>"
    )
