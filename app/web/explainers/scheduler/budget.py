"""The token budget as ``schedule()`` spent it: one segment per scheduled request, in order,
its width the tokens it got; the unspent rest; the head-of-line request that did not fit."""

from __future__ import annotations

from app.sim.core import msg
from app.sim.serving.narrate import Spend, StepState
from app.web.explainers.scheduler import labels as lb
from app.web.explainers.scheduler import style as st
from app.web.explainers.scheduler.style import PAD, W, fit, text, text_width
from app.web.svgtext import attr

INNER = W - 2 * PAD
MAX_SEGMENTS = 240  # budget segments drawn one by one; beyond, same-kind neighbours merge
BAR_H = 34

KIND_FILL = {
    "prefill": "url(#sp-hatch)",
    "decode": st.DECODE,
    "recompute": "url(#sp-cross)",
}

Segment = tuple[str, int, str, int]  # (first request id, tokens, kind, requests merged)


def segments(spend: Spend) -> list[Segment]:
    """(ids label, tokens, kind, count) per drawn segment, merging runs when there are many."""
    segs = [
        (rid, n, k, 1)
        for rid, n, k in zip(spend["ids"], spend["tokens"], spend["kinds"], strict=False)
    ]
    if len(segs) <= MAX_SEGMENTS:
        return segs
    merged: list[Segment] = []
    for rid, n, k, c in segs:
        if merged and merged[-1][2] == k:
            first, n0, _, c0 = merged[-1]
            merged[-1] = (first, n0 + n, k, c0 + c)
        else:
            merged.append((rid, n, k, c))
    return merged


def blocked_head(state: StepState) -> tuple[str, int] | None:
    """The head of the waiting queue (not admitted this step) and the tokens it needs."""
    admitted = set(state["admitted"])
    for v in state["requests"]:
        if v["phase"] in ("waiting", "preempted") and v["id"] not in admitted:
            return v["id"], v["num_tokens"] - v["computed"]
    return None


def heading(title: str, detail: str, y: float) -> tuple[list[str], float]:
    """A section's bold title and its muted detail on the same line when it fits, else on the
    next; returns the markup and the baseline of the last line."""
    x = PAD + text_width(title, 14.0) * 1.08 + 10
    if x + text_width(detail) <= W - PAD:
        return [text(PAD, y, title, "title"), text(x, y, detail, "muted")], y
    return [
        text(PAD, y, title, "title"),
        text(PAD, y + 18, fit(detail, INNER), "muted"),
    ], y + 18


def _segment(n: int, seg: Segment, x: float, w: float, top: float) -> list[str]:
    rid, tokens, kind, count = seg
    kind_word = lb.word(lb.KIND, kind)
    title = (
        msg("{id}: {tokens} token(s), {kind}", id=rid, tokens=tokens, kind=kind_word)
        if count == 1
        else msg(
            "{count} requests from {id}: {tokens} tokens, {kind}",
            count=count,
            id=rid,
            tokens=tokens,
            kind=kind_word,
        )
    )
    out = [
        f'<rect id="seg-{n}" class="seg seg-{attr(kind)}" x="{x:.2f}" y="{top}" '
        f'width="{max(w, 0.5):.2f}" height="{BAR_H}" fill="{KIND_FILL.get(kind, st.WAITING)}" '
        f'data-req="{attr(rid)}" data-tokens="{tokens}" data-kind="{attr(kind)}">'
        f"<title>{attr(title)}</title></rect>"
    ]
    label = rid if count == 1 else f"{rid} +{count - 1}"
    body = f"{label} {tokens}"
    if w < 7.5 * len(body) + 8:
        body = rid if w >= 14 and count == 1 and len(rid) <= 2 else ""
    if body:
        fg = "#ffffff" if kind == "prefill" else "#000000"
        out.append(
            f'<text x="{x + w / 2:.1f}" y="{top + 22}" text-anchor="middle" '
            f'style="fill:{fg};font-weight:700" class="mono">{attr(body)}</text>'
        )
    return out


def _too_small(seg: Segment, budget: int) -> bool:
    rid, tokens, _, count = seg
    return count == 1 and INNER * tokens / budget < 7.5 * (len(rid) + len(str(tokens)) + 1) + 8


def _bar(state: StepState, top: float) -> tuple[list[str], float, list[Segment]]:
    """The segments and what is left; returns the markup, the x where the spend ends and the
    segments."""
    budget = max(state["token_budget"], 1)
    left = budget - state["budget_used"]
    out = [
        f'<rect id="budget-frame" class="left" x="{PAD}" y="{top}" width="{INNER}" '
        f'height="{BAR_H}" rx="3"/>'
    ]
    x = float(PAD)
    segs = segments(state["spend"])
    for n, seg in enumerate(segs):
        w = INNER * seg[1] / budget
        out.extend(_segment(n, seg, x, w, top))
        x += w
    small = [f"{s[0]} {s[1]}" for s in segs if _too_small(s, budget)]
    if small and len(small) == len(segs):
        line = str(msg("in order: {list}", list=" → ".join(small)))
        if len(line) > 90:
            line = line[:88].rsplit(" → ", 1)[0] + " → …"
        out.append(text(x + 8, top + 22, line, "mono"))
    elif left > 0 and INNER * left / budget >= 70:
        out.append(
            text(
                x + INNER * left / budget / 2,
                top + 22,
                str(msg("{left} left", left=left)),
                "muted",
                "middle",
            )
        )
    out.append(
        f'<line id="budget-end" x1="{x:.2f}" x2="{x:.2f}" y1="{top - 3}" '
        f'y2="{top + BAR_H + 3}" style="stroke:var(--fg);stroke-width:2"/>'
    )
    return out, x, segs


def _key(fill: str, cls: str = "") -> st.Swatch:
    c = f' class="{cls}"' if cls else ""
    f = f' fill="{fill}"' if fill else ""
    return lambda x, y: f'<rect{c} x="{x:.1f}" y="{y - 11:.1f}" width="18" height="13"{f}/>'


def draw(state: StepState, y: float) -> tuple[str, float]:
    """The budget section from ``y``; returns its markup and the y below it."""
    budget = max(state["token_budget"], 1)
    used = state["budget_used"]
    left = budget - used
    head, base = heading(
        str(msg("Token budget")),
        str(
            msg(
                "{used} of {budget} tokens spent this step, in the order schedule() gave "
                "them · {left} left",
                used=used,
                budget=budget,
                left=left,
            )
        ),
        y + 15,
    )
    out = [f'<g id="budget" data-budget="{budget}" data-used="{used}">', *head]
    top = base + 9
    bar, x, segs = _bar(state, top)
    out.extend(bar)
    items = [(_key(KIND_FILL[k]), lb.word(lb.KIND, k)) for k in ("prefill", "decode", "recompute")]
    items.append((_key("", "left"), str(msg("unspent"))))
    keys, ly, lx = st.legend(items, float(PAD), top + BAR_H + 18, W - PAD)
    out.extend(keys)
    blocked = blocked_head(state)
    if blocked is not None and state["waiting_stop"] == "head_of_line":
        rid, need = blocked
        gw = min(INNER * need / budget, W - 2 - x)
        tip = msg("{id} needs {need} tokens; {left} are left", id=rid, need=need, left=left)
        out.append(
            f'<rect id="budget-blocked" class="blocked" x="{x:.2f}" y="{top - 4}" width="{gw:.2f}" '
            f'height="{BAR_H + 8}" data-req="{attr(rid)}" data-tokens="{need}">'
            f"<title>{attr(tip)}</title></rect>"
        )
        note = str(
            msg("{id} needs {need} tokens, {left} left: blocked", id=rid, need=need, left=left)
        )
        lx, ly = _room(note, lx, ly, mono=False)
        out.append(text(lx, ly, fit(note, W - PAD - lx), style="font-weight:700"))
    elif any(_too_small(s, budget) for s in segs) and not all(_too_small(s, budget) for s in segs):
        order = " → ".join(f"{rid} {tokens}" for rid, tokens, _, count in segs if count == 1)
        line = str(msg("order: {list}", list=order))
        lx, ly = _room(line[:40], lx, ly, mono=True)
        room = W - PAD - lx
        if text_width(line, mono=True) > room:
            line = fit(line, room - text_width(" → …", mono=True), mono=True)
            line = line.rstrip("…").rsplit(" → ", 1)[0] + " → …"
        out.append(text(lx, ly, line, "mono"))
    out.append("</g>")
    return "".join(out), ly + 14


def _room(first: str, x: float, y: float, *, mono: bool) -> tuple[float, float]:
    """Where a note after the legend starts: on the legend's line when its start fits, else
    on a new line."""
    if x + text_width(first, mono=mono) > W - PAD:
        return float(PAD), y + 18
    return x, y
