"""Beside the lanes: the execution context (process, softirq or hard IRQ), the namespace and
packet, and the call stack folded to its entry and its innermost calls."""

from __future__ import annotations

from html import escape

from app.sim.core import Message, msg
from app.sim.path.engine import PathState
from app.web.explainers.path.geometry import (
    RIGHT_X,
    STACK_HEAD,
    STACK_LINE,
    STACK_MAX,
    STACK_Y0,
    WIDTH,
    attr,
)

CONTEXT_LABEL: dict[str, Message] = {  # rendered per request, in the reader's language
    "process": msg("process context"),
    "softirq": msg("softirq (NET_RX / NET_TX)"),
    "hardirq": msg("hard IRQ"),
}


def context_badge(state: PathState, packets: int) -> str:
    """The context badge, then the namespace (and which packet, when there are several)."""
    ctx = state["context"]
    label = str(CONTEXT_LABEL.get(ctx, ctx))
    w = WIDTH - RIGHT_X
    where = str(msg("namespace {ns}", ns=state["ns"]))
    if state["packet"] is not None and packets > 1:
        where += " · " + str(msg("packet {n} of {total}", n=state["packet"] + 1, total=packets))
    return (
        f'<g id="ctx" class="ctx ctx-{attr(ctx)}" data-context="{attr(ctx)}">'
        f'<rect x="{RIGHT_X}" y="2" width="{w}" height="22" rx="11"/>'
        f'<text x="{RIGHT_X + w / 2}" y="18" text-anchor="middle">{escape(label)}</text></g>'
        f'<text id="ctx-where" class="small muted" x="{RIGHT_X}" y="38">{escape(where)}</text>'
    )


def call_stack(state: PathState) -> str:
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
            f'data-function="{attr(fn)}"><rect x="{RIGHT_X}" y="{y}" width="{WIDTH - RIGHT_X}" '
            f'height="{STACK_LINE}" rx="3"/><text x="{RIGHT_X + 6 + indent}" y="{y + 12}">'
            f"{escape(fn)}</text></g>"
        )
    out.append("</g>")
    return "".join(out)
