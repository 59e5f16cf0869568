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

The pieces, each its own module: geometry (bands, lanes, words), lanes (swimlane, hooks, path),
stack (context and call stack), status (NAPI strip, links, drop), skb_beside (the sk_buff part),
frags (its frags / frag_list summary), legend, layout (what is cached per walk) and style.
"""

from __future__ import annotations

from html import escape

from app.sim.core import Frame, msg
from app.sim.path.engine import PathState
from app.sim.path.explainer import PathTrace
from app.sim.path.params import PathParams
from app.web.explainers.path.geometry import (
    GAP,
    HDR_STRIP,
    LANES_BOTTOM,
    LAYER_NAMES,
    STATUS_ROW,
    WIDTH,
    attr,
    lane_of,
)
from app.web.explainers.path.lanes import hook_marks, lane_heads, lanes, trail
from app.web.explainers.path.layout import LAYOUTS, layout
from app.web.explainers.path.skb_beside import header_offsets
from app.web.explainers.path.stack import CONTEXT_LABEL, call_stack, context_badge
from app.web.explainers.path.status import links_row, napi_strip
from app.web.explainers.path.style import STYLE


def picture(trace: PathTrace, frame: Frame[PathState]) -> str:
    """The whole picture of one step (the player swaps it each step)."""
    lay = layout(trace)
    state = frame.state
    parts = [lanes(state), hook_marks(lay, frame.index), trail(lay, frame.index, state)]
    parts.append(lane_heads(state))
    packets = trace.params.packets if isinstance(trace.params, PathParams) else 1
    parts.append(context_badge(state, packets))
    parts.append(call_stack(state))
    y = float(LANES_BOTTOM + GAP)
    if lay.napi:
        before = trace.frames[frame.index - 1].state["napi"] if frame.index else None
        parts.append(napi_strip(state["napi"], state, y, before))
        y += 42 + GAP
    parts.append(links_row(lay, frame, y))
    y += STATUS_ROW + 2
    view = state["skb"]
    part = lay.part(frame.index)
    if view is not None and part is not None:
        if part.axis is not None:
            parts.append(header_offsets(view, part.axis, y))
        y += HDR_STRIP
        parts.append(
            part.svg(frame.index, frame.op).replace(
                "<svg ",
                f'<svg x="0" y="{y}" width="{WIDTH}" height="{part.height:g}" '
                f'style="width: {WIDTH}px; height: {part.height:g}px; min-width: 0" ',
                1,
            )
        )
        skb_attrs = (
            f' data-skb="{attr(view["name"])}" data-skb-data="{view["data"]}" '
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
    layer = LAYER_NAMES.get(state["layer"])
    context = CONTEXT_LABEL.get(state["context"])
    title = msg(
        "{n}: {function} ({layer}, {context})",
        n=frame.index,
        function=state["function"],
        layer=layer if layer else state["layer"],
        context=context if context else state["context"],
    )
    return (
        f'<svg id="path-svg" class="path-svg" viewBox="0 0 {WIDTH} {total:g}" role="group" '
        f'aria-label="{attr(str(title))}" xmlns="http://www.w3.org/2000/svg" data-step="{frame.index}" '
        f'data-function="{attr(state["function"])}" data-lane="{attr(lane_of(state))}" '
        f'data-layer="{attr(state["layer"])}" data-context="{attr(state["context"])}" '
        f'data-hook="{attr(hook or "")}" data-fits-screen=""{skb_attrs}>'
        f"<style>{STYLE}</style>" + "".join(parts) + "</svg>"
    )


__all__ = ["LAYOUTS", "picture"]  # LAYOUTS: the per-walk cache (tests clear it)
