"""The packet's sk_buff beside the path: the sk_buff explainer's own picture of the head
buffers (from the replay's snapshot, or the frame's fields when there is none), with the
frags summary and a one-row key under it and the header offsets above it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from html import escape
from typing import Any

from app.sim.core import Frame, Message, msg
from app.sim.path.engine import PathState
from app.sim.path.skb import SkbView
from app.sim.skbuff.skb import SHINFO
from app.sim.skbuff.state import RegionView, SkbSnapshot, SkbState, SkbTrace
from app.web.explainers.path.frags import frag_list_members, frags_summary
from app.web.explainers.path.geometry import HDR_STRIP, LEGEND_ROW, WIDTH
from app.web.explainers.path.legend import legend_row
from app.web.explainers.path.replay import Replay, snapshot
from app.web.explainers.skb.layout import Axis, text_width
from app.web.explainers.skb.picture import drawing, svg_open
from app.web.explainers.skb.picture import title as skb_title
from app.web.explainers.skb.scene import SceneMemo

# The labels the path walk gives the bytes it writes (app.sim.path), in the reader's language;
# protocol names (eth, IP, TCP, UDP, vxlan) stay as they are.
REGION_LABELS: dict[str, Message] = {"frame": msg("frame"), "headers": msg("headers")}


def _region(region: RegionView) -> RegionView:
    label = REGION_LABELS.get(str(region.get("label")))
    return region if label is None else {**region, "label": str(label)}


# The states below are the sk_buff explainer's (SkbState) but partial: a replay's snapshot keeps
# only the frame's skb and its kin, a frame without one only its own fields. They stay mappings
# read with .get() until layout.skb_frames hands them to the sk_buff picture as SkbState.
def drawn_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """What the sk_buff picture draws for a frame: the head buffers and their skbs, without the
    frags and the frag_list (the summary rows show those) and without skbs that only sit on a
    frag_list (the summary names them), unless the step follows one of those. Region labels are
    words of the reader's language (the layout holding these is kept per language)."""
    primary = state.get("primary")
    members = frag_list_members(state)
    skbs = [
        {**s, "frags": [], "frag_list": [], "regions": [_region(r) for r in s.get("regions", ())]}
        for s in state.get("skbs", ())
        if s.get("name") not in members or s.get("name") == primary
    ]
    bufs = {s.get("buffer") for s in skbs}
    return {
        **state,
        "skbs": skbs,
        "buffers": {b: v for b, v in state.get("buffers", {}).items() if b in bufs},
    }


@dataclasses.dataclass(frozen=True, slots=True)
class SkbPart:
    """The nested <svg> (without position), legend and summary included, but for its title,
    which names the step: steps that draw the same share one part."""

    head: str  # the start tag up to the title
    rest: str  # after the title
    height: float
    axis: Axis | None

    def svg(self, index: int, op: str) -> str:
        """The part as step ``index`` (running ``op``) shows it."""
        return self.head + skb_title(index, op) + self.rest


def skb_part(
    lay_trace: SkbTrace,
    widest: Frame[SkbState],
    index: int,
    full: SkbTrace,
    old: Mapping[str, SkbSnapshot],
    *,
    draw: bool = True,
    scenes: SceneMemo | None = None,
) -> SkbPart:
    """The sk_buff explainer's picture of frame ``index`` (drawn state), its own legend swapped
    for a one-row one, with the frags / frag_list summary under the buffers. With ``draw``
    false only its height (and no SVG): the same steps, the strings left unwritten."""
    sf = lay_trace.frames[index]
    # the step before is in the trace so the picture draws this step's moves and lights what
    # changed; the widest frame keeps one scale for the whole walk
    frames = sorted(
        {f.index: f for f in (widest, *lay_trace.frames[max(index - 1, 0) : index + 1])}.values(),
        key=lambda f: f.index,
    )
    d = drawing(dataclasses.replace(lay_trace, frames=tuple(frames)), sf, draw=draw, scenes=scenes)
    knots = [(float(o), float(x)) for o, x in (pair.split(":") for pair in d.knots.split())]
    axis = Axis(knots=tuple(knots)) if len(knots) >= 2 else None
    y = float(f"{d.legend_y:.1f}") - 8  # where the picture's own legend was
    summary, h = frags_summary(full.frames[index].state, old, y)
    y += h + 4
    legend = f'<g transform="translate(0 {y:g})">{legend_row()}</g>' if draw else ""
    y += LEGEND_ROW + 2
    head, rest = svg_open(d, "\0", WIDTH, f"{y:g}").split("\0")
    return SkbPart(head=head, rest=rest + d.body + summary + legend + "</svg>", height=y, axis=axis)


def summary_key(state: SkbState) -> str | None:
    """What of ``state`` the frags summary reads (None: no frags or frag_list, no summary)."""
    skbs = state.get("skbs", ())
    if not any(s.get("frags") or s.get("frag_list") for s in skbs):
        return None
    return repr(
        [tuple(s.get(k) for k in ("name", "buffer", "data", "frags", "frag_list")) for s in skbs]
    )


def old_key(state: SkbState, old: Mapping[str, SkbSnapshot]) -> tuple[object, ...]:
    """What of ``old`` (each skb as the walk last showed it) the frags summary of ``state``
    reads: the frags and frag_list of the skbs that have either, as they were."""
    out: list[object] = []
    for name in summary_names(state):
        before = old.get(name)
        out.append(
            (repr(before.get("frags", ())), repr(before.get("frag_list", ()))) if before else None
        )
    return tuple(out)


def summary_names(state: SkbState) -> list[str]:
    """The skbs whose earlier frags or frag_list the frags summary of ``state`` reads."""
    return [
        str(s.get("name")) for s in state.get("skbs", ()) if s.get("frags") or s.get("frag_list")
    ]


def fallback_skb_state(view: SkbView) -> dict[str, Any]:
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


def skb_state(rep: Replay | None, frame: Frame[PathState]) -> dict[str, Any]:
    view = frame.state["skb"]
    if view is None:
        return {"primary": None, "skbs": [], "buffers": {}}
    snap = snapshot(rep, frame.index, view) if rep is not None else None
    return snap if snap is not None else fallback_skb_state(view)


def header_offsets(view: SkbView, axis: Axis, y: float) -> str:
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
