"""The per-step picture: the token budget as it was spent, the KV cache's blocks, the queues.

One SVG, 960 units wide (one unit ≈ one pixel beside the narration at 1440×900; a phone
scrolls it sideways in the stage). Element ids are stable between frames (``seg-<n>``,
``blk-<n>``, ``row-<id>``) so the player's morphing swap glides what moved. The root carries
what the step did as data attributes (budget used, KV blocks used, preempted, finished, lit
blocks) for tests and scripts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.sim.core import Frame, Trace, msg
from app.web.explainers.scheduler import derive as dv
from app.web.explainers.scheduler import style as st
from app.web.explainers.scheduler.style import attr

W = 960
PAD = 10
INNER = W - 2 * PAD
MAX_SEGMENTS = 240  # budget segments drawn one by one; beyond, same-kind neighbours merge
MAX_CELLS = 1024  # KV blocks drawn; the rest are summed up in a line
MAX_ROWS = 18  # request-table rows (changed rows are always kept)
MAX_FREE_SHOWN = 24
ROW_H = 24

KIND_FILL = {
    "prefill": "url(#sp-hatch)",
    "decode": st.DECODE,
    "recompute": "url(#sp-cross)",
}
KIND_LABEL = {
    "prefill": str(msg("prefill chunk")),
    "decode": str(msg("decode")),
    "recompute": str(msg("recompute")),
}
PHASE_LABEL = {
    "waiting": str(msg("waiting")),
    "preempted": str(msg("preempted")),
    "prefill": str(msg("prefill chunk")),
    "decode": str(msg("decode")),
    "finished": str(msg("finished")),
}
QUEUE_LABEL = {
    "running": str(msg("running")),
    "waiting": str(msg("waiting")),
    "finished": str(msg("finished")),
}


def _index_of(trace: Trace[Any, Any]) -> dict[str, int]:
    series = trace.series or {}
    return {rid: i for i, rid in enumerate(series.get("request_ids", ()))}


def _text(x: float, y: float, body: str, cls: str = "", anchor: str = "start", **extra: Any) -> str:
    more = "".join(f' {k.replace("_", "-")}="{attr(v)}"' for k, v in extra.items())
    c = f' class="{cls}"' if cls else ""
    a = f' text-anchor="{anchor}"' if anchor != "start" else ""
    return f'<text x="{x:.1f}" y="{y:.1f}"{c}{a}{more}>{attr(body)}</text>'


def _segments(spend: Mapping[str, Any]) -> list[tuple[str, int, str, int]]:
    """(ids label, tokens, kind, count) per drawn segment, merging runs when there are many."""
    ids: Sequence[str] = spend.get("ids", ())
    toks: Sequence[int] = spend.get("tokens", ())
    kinds: Sequence[str] = spend.get("kinds", ())
    segs = [(rid, n, k, 1) for rid, n, k in zip(ids, toks, kinds, strict=False)]
    if len(segs) <= MAX_SEGMENTS:
        return segs
    merged: list[tuple[str, int, str, int]] = []
    for rid, n, k, c in segs:
        if merged and merged[-1][2] == k:
            first, n0, _, c0 = merged[-1]
            merged[-1] = (first, n0 + n, k, c0 + c)
        else:
            merged.append((rid, n, k, c))
    return merged


def _budget(state: Mapping[str, Any], y: float) -> tuple[str, float]:
    budget = max(int(state.get("token_budget", 1)), 1)
    used = int(state.get("budget_used", 0))
    spend = state.get("spend", {})
    out = [
        f'<g id="budget" data-budget="{budget}" data-used="{used}">',
        _text(PAD, y + 15, str(msg("Token budget")), "title"),
        _text(
            PAD + 112,
            y + 15,
            str(
                msg(
                    "{used} of {budget} tokens spent this step, in the order schedule() gave "
                    "them · {left} left",
                    used=used,
                    budget=budget,
                    left=budget - used,
                )
            ),
            "muted",
        ),
    ]
    top = y + 24
    h = 34
    out.append(
        f'<rect id="budget-frame" class="left" x="{PAD}" y="{top}" width="{INNER}" height="{h}" rx="3"/>'
    )
    x = float(PAD)
    segs = _segments(spend)
    for n, (rid, tokens, kind, count) in enumerate(segs):
        w = INNER * tokens / budget
        label = rid if count == 1 else f"{rid} +{count - 1}"
        title = str(
            msg(
                "{id}: {tokens} token(s), {kind}",
                id=rid,
                tokens=tokens,
                kind=KIND_LABEL.get(kind, kind),
            )
            if count == 1
            else msg(
                "{count} requests from {id}: {tokens} tokens, {kind}",
                count=count,
                id=rid,
                tokens=tokens,
                kind=KIND_LABEL.get(kind, kind),
            )
        )
        out.append(
            f'<rect id="seg-{n}" class="seg seg-{attr(kind)}" x="{x:.2f}" y="{top}" '
            f'width="{max(w, 0.5):.2f}" height="{h}" fill="{KIND_FILL.get(kind, st.WAITING)}" '
            f'data-req="{attr(rid)}" data-tokens="{tokens}" data-kind="{attr(kind)}">'
            f"<title>{attr(title)}</title></rect>"
        )
        text = f"{label} {tokens}"
        if w >= 7.5 * len(text) + 8:
            fg = "#ffffff" if kind == "prefill" else "#000000"
            out.append(
                f'<text x="{x + w / 2:.1f}" y="{top + 22}" text-anchor="middle" '
                f'style="fill:{fg};font-weight:700" class="mono">{attr(text)}</text>'
            )
        elif w >= 14 and count == 1 and len(rid) <= 2:
            fg = "#ffffff" if kind == "prefill" else "#000000"
            out.append(
                f'<text x="{x + w / 2:.1f}" y="{top + 22}" text-anchor="middle" '
                f'style="fill:{fg};font-weight:700" class="mono">{attr(rid)}</text>'
            )
        x += w
    small = [
        f"{rid} {tokens}"
        for rid, tokens, _, count in segs
        if count == 1 and INNER * tokens / budget < 7.5 * (len(rid) + len(str(tokens)) + 1) + 8
    ]
    left = budget - used
    if small and len(small) == len(segs):
        line = str(msg("in order: {list}", list=" → ".join(small)))
        if len(line) > 90:
            line = line[:88].rsplit(" → ", 1)[0] + " → …"
        out.append(_text(x + 8, top + 22, line, "mono"))
    elif left > 0 and INNER * left / budget >= 70:
        out.append(
            _text(
                x + INNER * left / budget / 2,
                top + 22,
                str(msg("{left} left", left=left)),
                "muted",
                "middle",
            )
        )
    out.append(
        f'<line id="budget-end" x1="{x:.2f}" x2="{x:.2f}" y1="{top - 3}" '
        f'y2="{top + h + 3}" style="stroke:var(--fg);stroke-width:2"/>'
    )
    # legend
    ly = top + h + 18
    lx = float(PAD)
    for kind, fill in (
        ("prefill", KIND_FILL["prefill"]),
        ("decode", st.DECODE),
        ("recompute", KIND_FILL["recompute"]),
    ):
        out.append(f'<rect x="{lx}" y="{ly - 11}" width="18" height="13" fill="{fill}"/>')
        out.append(_text(lx + 23, ly, KIND_LABEL[kind]))
        lx += 36 + 7.2 * len(KIND_LABEL[kind])
    out.append(f'<rect class="left" x="{lx}" y="{ly - 11}" width="18" height="13"/>')
    out.append(_text(lx + 23, ly, str(msg("unspent"))))
    lx += 100
    blocked = _blocked_head(state)
    if blocked is not None and state.get("waiting_stop") == "head_of_line":
        rid, need = blocked
        gw = min(INNER * need / budget, W - 2 - x)
        tip = attr(
            str(msg("{id} needs {need} tokens; {left} are left", id=rid, need=need, left=left))
        )
        out.append(
            f'<rect id="budget-blocked" class="blocked" x="{x:.2f}" y="{top - 4}" width="{gw:.2f}" '
            f'height="{h + 8}" data-req="{attr(rid)}" data-tokens="{need}">'
            f"<title>{tip}</title></rect>"
        )
        out.append(
            _text(
                lx,
                ly,
                str(
                    msg(
                        "{id} needs {need} tokens, {left} left: blocked",
                        id=rid,
                        need=need,
                        left=left,
                    )
                ),
                style="font-weight:700",
            )
        )
    elif small and len(small) < len(segs):
        order = " → ".join(f"{rid} {tokens}" for rid, tokens, _, count in segs if count == 1)
        room = int((W - PAD - lx) / 7.6) - 7
        line = str(msg("order: {list}", list=order))
        if len(line) > room:
            line = line[:room].rsplit(" → ", 1)[0] + " → …"
        out.append(_text(lx, ly, line, "mono"))
    out.append("</g>")
    return "".join(out), ly + 14


def _blocked_head(state: Mapping[str, Any]) -> tuple[str, int] | None:
    """The head of the waiting queue (not admitted this step) and the tokens it needs."""
    admitted = set(state.get("admitted", ()))
    for v in state.get("requests", ()):
        if v.get("phase") in ("waiting", "preempted") and v.get("id") not in admitted:
            return str(v.get("id")), int(v.get("num_tokens", 0)) - int(v.get("computed", 0))
    return None


STOP_WORDS = {
    "head_of_line": str(msg("blocked (head of line)")),
    "kv_full_sequence": str(msg("waits: KV blocks")),
    "kv_chunk": str(msg("waits: KV blocks")),
    "max_num_seqs": str(msg("waits: max_num_seqs")),
    "budget": str(msg("waits: budget spent")),
    "static_batch_running": str(msg("waits: batch running")),
    "preempted_this_step": str(msg("waits: preemption")),
}


def _grid_shape(n: int) -> tuple[int, float, float]:
    shown = min(n, MAX_CELLS)
    if shown <= 24:
        cols = shown
    elif shown <= 256:
        cols = 32
    else:
        cols = 64
    cw = INNER / cols
    ch = min(44.0, max(14.0, cw * 0.8)) if shown <= 24 else (24.0 if cols == 32 else 14.0)
    return cols, cw, ch


def _hit_blocks(state: Mapping[str, Any]) -> set[int]:
    """Blocks that prefix-cache hits handed to requests admitted this step."""
    hits: Mapping[str, int] = state.get("prefix_hits", {})
    bs = max(int(state.get("kv", {}).get("block_size", 1)), 1)
    lit: set[int] = set()
    for view in state.get("requests", ()):
        hit = int(hits.get(view.get("id"), 0))
        if hit > 0:
            lit.update(view.get("blocks", ())[: hit // bs])
    return lit


def _freed_blocks(trace: Trace[Any, Any], frame: Frame[Any]) -> set[int]:
    """Blocks the step's preemption victims held in the previous step (when that step is the
    previous frame)."""
    victims = set(frame.state.get("preempted", ()))
    if not victims or frame.index == 0:
        return set()
    prev = trace.frames[frame.index - 1].state
    series = trace.series or {}
    steps = series.get("step", [])
    s = dv.series_index(series, int(frame.state.get("step", 0)))
    if not steps or steps[s] != frame.state.get("step") or s == 0:
        return set()
    if steps[s - 1] != prev.get("step"):
        return set()
    freed: set[int] = set()
    for view in prev.get("requests", ()):
        if view.get("id") in victims:
            freed.update(view.get("blocks", ()))
    return freed


def _kv(trace: Trace[Any, Any], frame: Frame[Any], y: float) -> tuple[str, float, list[int]]:
    state = frame.state
    kv = state.get("kv", {})
    ids: Sequence[str] = (trace.series or {}).get("request_ids", ())
    n = int(kv.get("num_blocks", 0))
    owner: Sequence[int] = kv.get("owner", ())
    ref: Sequence[int] = kv.get("ref_cnt", ())
    hashed: Sequence[int] = kv.get("hashed", ())
    used = int(kv.get("used", 0))
    usable = max(n - 1, 1)
    lit = _hit_blocks(state)
    freed = _freed_blocks(trace, frame)
    out = [
        f'<g id="kv" data-used="{used}" data-blocks="{n}">',
        _text(PAD, y + 15, str(msg("KV cache")), "title"),
        _text(
            PAD + 76,
            y + 15,
            str(
                msg(
                    "{used} of {usable} usable blocks in use ({pct}%) · {bs} tokens per block · "
                    "{cached} hashed (prefix cache) · {free} in the free queue",
                    used=used,
                    usable=usable,
                    pct=round(100 * used / usable),
                    bs=int(kv.get("block_size", 0)),
                    cached=int(kv.get("cached_blocks", 0)),
                    free=int(kv.get("free", 0)),
                )
            ),
            "muted",
        ),
    ]
    cols, cw, ch = _grid_shape(n)
    top = y + 26
    shown = min(n, MAX_CELLS)
    compact = cols == 64
    if compact:  # small cells: draw runs of alike neighbouring blocks as one rect, no labels
        out.extend(_compact_cells(kv, ids, shown, cols, cw, ch, top, lit, freed))
    for b in range(0 if not compact else shown, shown):
        cx = PAD + (b % cols) * cw
        cy = top + (b // cols) * (ch + 3)
        o = owner[b] if b < len(owner) else -1
        r = ref[b] if b < len(ref) else 0
        hs = hashed[b] if b < len(hashed) else 0
        who = ids[o] if 0 <= o < len(ids) else ""
        if b == 0:
            cls, fill, fg = "cell null", "", "var(--bg)"
            desc = str(msg("block 0: the null block (never allocated)"))
        elif r > 0:
            fill, fg = st.owner_colour(o if o >= 0 else 0)
            cls = "cell used"
            desc = str(
                msg("block {n}: {id}, ref_cnt {ref}, hashed", n=b, id=who, ref=r)
                if hs
                else msg("block {n}: {id}, ref_cnt {ref}, not hashed yet", n=b, id=who, ref=r)
            )
        elif hs:
            cls, fill, fg = "cell cached", "url(#sp-cached)", "var(--fg)"
            desc = str(
                msg("block {n}: free, still hashed (a prefix-cache hit can take it back)", n=b)
            )
        else:
            cls, fill, fg = "cell free", "", "var(--fg)"
            desc = str(msg("block {n}: free", n=b))
        flags = []
        if b in lit:
            flags.append("lit")
            desc += str(msg("; prefix-cache hit this step"))
        if b in freed:
            flags.append("freed")
            desc += str(msg("; freed by the preemption this step"))
        if b in lit:
            out.append(
                f'<rect class="halo" x="{cx - 1:.1f}" y="{cy - 2:.1f}" width="{cw + 1:.1f}" height="{ch + 4:.1f}" rx="3"/>'
            )
        fill_attr = f' fill="{fill}"' if fill else ""
        state_name = "null" if b == 0 else ("used" if r > 0 else ("cached" if hs else "free"))
        out.append(
            f'<rect id="blk-{b}" class="{cls}{" lit" if b in lit else ""}" x="{cx + 1:.1f}" y="{cy:.1f}" '
            f'width="{cw - 2:.1f}" height="{ch:.1f}" rx="2"{fill_attr} data-owner="{attr(who)}" '
            f'data-ref="{r}" data-state="{state_name}" data-hashed="{hs}"'
            f"{' data-lit=' + chr(34) + '1' + chr(34) if b in lit else ''}>"
            f"<title>{attr(desc)}</title></rect>"
        )
        if b in freed:
            out.append(
                f'<rect class="freed" x="{cx + 2.5:.1f}" y="{cy + 1.5:.1f}" width="{cw - 5:.1f}" height="{ch - 3:.1f}" data-block="{b}"/>'
            )
        if cw >= 26 and ch >= 18:
            if b == 0:
                label = "null" if cw >= 40 else "∅"
                out.append(
                    f'<text x="{cx + cw / 2:.1f}" y="{cy + ch / 2 + 5:.1f}" text-anchor="middle" class="nulltext">{label}</text>'
                )
            elif r > 0 and who:
                label = who if r == 1 else f"{who}×{r}"
                if 7.5 * len(label) > cw - 10 and r > 1:
                    label = f"×{r}"
                if 7.5 * len(label) <= cw - 10:
                    out.append(
                        f'<text x="{cx + cw / 2:.1f}" y="{cy + ch / 2 + 5:.1f}" text-anchor="middle" '
                        f'style="fill:{fg};font-weight:700">{attr(label)}</text>'
                    )
            if hs and b > 0:
                out.append(
                    f'<path d="M{cx + cw - 10:.1f} {cy:.1f} h9 v9 z" style="fill:var(--fg)"><title>hashed</title></path>'
                )
        elif r > 1:
            out.append(
                f'<circle cx="{cx + cw / 2:.1f}" cy="{cy + ch / 2:.1f}" r="2.5" style="fill:#000000"/>'
            )
    rows = (shown + cols - 1) // cols
    yy = top + rows * (ch + 3) + 4
    if n > shown:
        rest_used = sum(1 for b in range(shown, n) if b < len(ref) and ref[b] > 0)
        out.append(
            _text(
                PAD,
                yy + 13,
                str(
                    msg(
                        "Blocks {first}–{last} not drawn: {used} of them in use.",
                        first=shown,
                        last=n - 1,
                        used=rest_used,
                    )
                ),
                "muted",
            )
        )
        yy += 18
    # free queue
    fq: Sequence[int] = kv.get("free_queue", ())
    yy += 4
    out.append(
        _text(PAD, yy + 15, str(msg("Free queue, head first (reused and evicted first):")), "muted")
    )
    fx = PAD + 352
    shown_fq = min(len(fq), MAX_FREE_SHOWN)
    for k, b in enumerate(fq[:MAX_FREE_SHOWN]):
        bw = max(22, 8 * len(str(b)) + 6)
        hs = hashed[b] if b < len(hashed) else 0
        fill = "url(#sp-cached)" if hs else "var(--bg)"
        out.append(
            f'<rect id="fq-{k}" x="{fx:.1f}" y="{yy + 1}" width="{bw}" height="19" rx="2" '
            f'style="fill:{fill};stroke:var(--line)" data-block="{b}"/>'
        )
        out.append(
            f'<text x="{fx + bw / 2:.1f}" y="{yy + 15}" text-anchor="middle" class="mono" style="font-size:12px">{b}</text>'
        )
        fx += bw + 2
        if fx > W - 120:
            shown_fq = k + 1
            break
    extra = max(int(kv.get("free", 0)) - shown_fq, 0)
    if extra:
        out.append(_text(fx + 4, yy + 15, str(msg("+{count} more", count=extra)), "muted"))
    yy += 26
    # legend
    ly = yy + 12
    lx = float(PAD)
    items = (
        ("var(--bg)", str(msg("free"))),
        ("url(#sp-cached)", str(msg("free, hashed (cached)"))),
        (st.OWNER[0][0], str(msg("in use")) if compact else str(msg("in use (colour = request)"))),
    )
    for fill, label in items:
        out.append(
            f'<rect x="{lx}" y="{ly - 11}" width="18" height="13" style="fill:{fill};stroke:var(--line)"/>'
        )
        out.append(_text(lx + 23, ly, label))
        lx += 34 + 7.2 * len(label)
    if compact:  # small cells: shared blocks get their own colour, hashed marks are left out
        out.append(
            f'<rect x="{lx}" y="{ly - 11}" width="18" height="13" style="fill:{st.PURPLE}"/>'
        )
        out.append(_text(lx + 23, ly, str(msg("shared (ref_cnt > 1)"))))
        lx += 34 + 7.2 * 20
    else:
        out.append(f'<path d="M{lx + 8} {ly - 11} h9 v9 z" style="fill:var(--fg)"/>')
        out.append(_text(lx + 22, ly, str(msg("hashed"))))
        lx += 80
    out.append(f'<rect class="halo" x="{lx}" y="{ly - 12}" width="20" height="15" rx="2"/>')
    out.append(_text(lx + 25, ly, str(msg("prefix hit now"))))
    lx += 128
    out.append(f'<rect class="freed" x="{lx}" y="{ly - 11}" width="18" height="13"/>')
    out.append(_text(lx + 23, ly, str(msg("freed by preemption"))))
    out.append("</g>")
    return "".join(out), ly + 12, sorted(lit)


def _compact_cells(
    kv: Mapping[str, Any],
    ids: Sequence[str],
    shown: int,
    cols: int,
    cw: float,
    ch: float,
    top: float,
    lit: set[int],
    freed: set[int],
) -> list[str]:
    ref: Sequence[int] = kv.get("ref_cnt", ())
    hashed: Sequence[int] = kv.get("hashed", ())

    # Owners are not told apart by colour here (a few pixels per block, many requests): a run
    # is blocks alike in state, sharing, hit and freed; its tooltip names the owners.
    def key(b: int) -> tuple[str, int, bool, bool, bool]:
        r = ref[b] if b < len(ref) else 0
        hs = bool(hashed[b]) if b < len(hashed) else False
        state = "null" if b == 0 else ("used" if r > 0 else ("cached" if hs else "free"))
        return state, 0, r > 1, b in lit, b in freed

    out: list[str] = []
    b = 0
    while b < shown:
        k = key(b)
        e = b + 1
        while e < shown and e % cols != 0 and key(e) == k:
            e += 1
        state, _, shared, is_lit, is_freed = k
        cx = PAD + (b % cols) * cw
        cy = top + (b // cols) * (ch + 3)
        w = (e - b) * cw
        # fills come from the classes (cu in use, cs shared, cc cached, cf free)
        fill = ""
        cls = {"null": "cell null", "used": "cell cs" if shared else "cell cu"}.get(
            state, "cell cc" if state == "cached" else "cell cf"
        )
        if is_lit:
            out.append(
                f'<rect class="halo" x="{cx - 1:.1f}" y="{cy - 2:.1f}" width="{w + 1:.1f}" '
                f'height="{ch + 4:.1f}" rx="3"/>'
            )
        # no tooltip per run: a fragmented cache has hundreds of runs per frame
        out.append(
            f'<rect id="blk-{b}" class="{cls}{" lit" if is_lit else ""}" x="{cx + 1:.1f}" '
            f'y="{cy:.1f}" width="{w - 2:.1f}" height="{ch:.1f}"{fill} data-n="{e - b}"'
            f"{' data-lit=' + chr(34) + '1' + chr(34) if is_lit else ''}/>"
        )
        if is_freed:
            out.append(
                f'<rect class="freed" x="{cx + 2.5:.1f}" y="{cy + 1.5:.1f}" width="{w - 5:.1f}" '
                f'height="{ch - 3:.1f}"/>'
            )
        b = e
    return out


def _table_rows(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    views: list[Mapping[str, Any]] = list(state.get("requests", ()))
    changed = (
        set(state.get("preempted", ()))
        | set(state.get("finished", ()))
        | set(state.get("admitted", ()))
    )
    if len(views) <= MAX_ROWS:
        return views
    keep = [v for v in views if v.get("id") in changed]
    room = MAX_ROWS - len(keep)
    others = [v for v in views if v.get("id") not in changed][: max(room, 0)]
    picked = {id(v) for v in keep + others}
    return [v for v in views if id(v) in picked]


COLS = (
    (msg("request"), 10),
    (msg("queue"), 112),
    (msg("phase"), 196),
    (msg("computed / to compute"), 384),
    (msg("outputs"), 616),
    (msg("this step"), 700),
    (msg("blocks"), 778),
    (msg("prio · preempt."), 846),
)


def _table(trace: Trace[Any, Any], state: Mapping[str, Any], y: float) -> tuple[str, float, bool]:
    index = _index_of(trace)
    preempted = set(state.get("preempted", ()))
    finished = set(state.get("finished", ()))
    admitted = set(state.get("admitted", ()))
    arrived = set(state.get("arrived", ()))
    views = _table_rows(state)
    running_n = int(state.get("num_running", 0))
    waiting_n = int(state.get("num_waiting", 0))
    out = [
        '<g id="requests">',
        _text(PAD, y + 15, str(msg("Requests")), "title"),
        _text(
            PAD + 80,
            y + 15,
            str(
                msg(
                    "{running} running · {waiting} waiting · {finished} finished",
                    running=running_n,
                    waiting=waiting_n,
                    finished=int(state.get("num_finished", 0)),
                )
            ),
            "muted",
        ),
    ]
    hy = y + 40
    for label, x in COLS:
        out.append(_text(x, hy, str(label), "muted"))
    out.append(f'<line class="gridline" x1="{PAD}" x2="{W - PAD}" y1="{hy + 6}" y2="{hy + 6}"/>')
    ry = hy + 10
    running_ids = {
        v.get("id") for v in state.get("requests", ()) if v.get("phase") in ("prefill", "decode")
    }
    listed = set()
    head = _blocked_head(state)
    stop = str(state.get("waiting_stop", ""))
    kinds = dict(
        zip(
            state.get("spend", {}).get("ids", ()),
            state.get("spend", {}).get("kinds", ()),
            strict=False,
        )
    )
    focused = False
    for v in views:
        rid = str(v.get("id", ""))
        listed.add(rid)
        phase = str(v.get("phase", ""))
        if rid in finished:
            queue = "finished"
        elif rid in running_ids:
            queue = "running"
        else:
            queue = "waiting"
        row_cls = ""
        tag = ""
        if rid in preempted:
            row_cls, tag = "row-preempted", "preempted"
        elif rid in finished:
            row_cls, tag = "row-finished", "finished"
        elif rid in admitted:
            row_cls, tag = "row-admitted", ""
        elif head is not None and rid == head[0] and stop in STOP_WORDS:
            row_cls, tag = ("row-blocked", "blocked") if stop == "head_of_line" else ("", "")
        out.append(
            f'<g id="row-{attr(rid)}" class="req{" changed" if row_cls else ""}" data-req="{attr(rid)}" '
            f'data-phase="{attr(phase)}" data-queue="{queue}"'
            f"{' data-change=' + chr(34) + tag + chr(34) if tag else ''}>"
        )
        if row_cls:
            out.append(
                f'<rect class="{row_cls}" x="{PAD - 4}" y="{ry}" width="{INNER + 8}" height="{ROW_H - 2}" rx="3"/>'
            )
        fill, _ = st.owner_colour(index.get(rid, 0))
        out.append(f'<rect x="{PAD}" y="{ry + 5}" width="12" height="12" fill="{fill}"/>')
        out.append(_text(PAD + 18, ry + 16, rid[:12], "mono", style="font-weight:700"))
        if tag and not focused:
            out.append(
                f'<rect x="{PAD}" y="{ry}" width="2" height="2" fill="none" data-focus="1"/>'
            )
            focused = True
        out.append(_text(112, ry + 16, QUEUE_LABEL[queue]))
        # what the request did this step (its tokens' kind), else where it stands
        shown_phase = (
            KIND_LABEL.get(kinds[rid], phase) if rid in kinds else PHASE_LABEL.get(phase, phase)
        )
        if tag == "preempted":
            shown_phase = str(msg("preempted now"))
        elif tag == "finished":
            shown_phase = str(msg("finished now"))
        elif rid in admitted:
            shown_phase = str(msg("admitted · {phase}", phase=shown_phase))
        elif head is not None and rid == head[0] and stop in STOP_WORDS:
            shown_phase = STOP_WORDS[stop]
        if rid in arrived and rid not in admitted and not tag:
            shown_phase = str(msg("arrived · {phase}", phase=shown_phase))
        weight = "font-weight:700" if tag else ""
        out.append(
            _text(196, ry + 16, shown_phase, style=weight)
            if weight
            else _text(196, ry + 16, shown_phase)
        )
        prompt = int(v.get("prompt_tokens", 0))
        total = int(v.get("num_tokens", 0))
        computed = int(v.get("computed", 0))
        bw = 120
        out.append(f'<rect class="bar-bg" x="384" y="{ry + 5}" width="{bw}" height="12"/>')
        if total > 0:
            pw = bw * min(prompt, total) / total
            cw = bw * min(computed, total) / total
            out.append(
                f'<rect id="prog-{attr(rid)}" x="384" y="{ry + 5}" width="{cw:.1f}" height="12" '
                f'fill="{st.PREFILL if computed < prompt else st.DECODE}"/>'
            )
            out.append(
                f'<line x1="{384 + pw:.1f}" x2="{384 + pw:.1f}" y1="{ry + 2}" y2="{ry + 20}" '
                'style="stroke:var(--fg);stroke-width:1.5"><title>'
                + attr(str(msg("end of the prompt")))
                + "</title></line>"
            )
        out.append(_text(510, ry + 16, f"{computed}/{total}", "mono"))
        out.append(
            _text(616, ry + 16, f"{v.get('output_tokens', 0)}/{v.get('max_tokens', 0)}", "mono")
        )
        sched = int(v.get("scheduled", 0))
        out.append(_text(700, ry + 16, str(sched) if sched else "–", "mono"))
        out.append(_text(778, ry + 16, str(len(v.get("blocks", ()))), "mono"))
        out.append(
            _text(846, ry + 16, f"{v.get('priority', 0)} · {v.get('num_preemptions', 0)}", "mono")
        )
        out.append("</g>")
        ry += ROW_H
    for rid in sorted(preempted - listed):  # a victim deep in a long waiting queue
        out.append(
            f'<g id="row-{attr(rid)}" class="req changed" data-req="{attr(rid)}" '
            'data-phase="preempted" data-queue="waiting" data-change="preempted">'
            f'<rect class="row-preempted" x="{PAD - 4}" y="{ry}" width="{INNER + 8}" height="{ROW_H - 2}" rx="3"/>'
            + _text(PAD + 18, ry + 16, rid[:12], "mono")
            + _text(112, ry + 16, QUEUE_LABEL["waiting"])
            + _text(196, ry + 16, str(msg("preempted now")), style="font-weight:700")
            + "</g>"
        )
        ry += ROW_H
    hidden = len(state.get("requests", ())) - len(views)
    more = running_n + waiting_n - len([v for v in views if v.get("id") not in finished])
    if hidden > 0 or more > 0:
        out.append(
            _text(
                PAD,
                ry + 14,
                str(
                    msg(
                        "{count} more requests in the queues are not listed.",
                        count=max(more, hidden),
                    )
                ),
                "muted",
            )
        )
        ry += 20
    out.append("</g>")
    return "".join(out), ry + 4, focused


def picture(trace: Trace[Any, Any], frame: Frame[Any]) -> str:
    state = frame.state
    budget, y = _budget(state, 4)
    kv, y2, lit = _kv(trace, frame, y + 8)
    table, y3, focused = _table(trace, state, y2 + 8)
    if not focused:  # no row changed: keep the left edge (ids, the budget's start) in view
        budget = budget.replace('id="budget-frame"', 'id="budget-frame" data-focus="1"', 1)
    h = int(y3 + 6)
    preempted = ",".join(state.get("preempted", ()))
    finished = ",".join(state.get("finished", ()))
    aria = attr(
        msg("Step {step}: token budget, KV cache and requests", step=int(state.get("step", 0)))
    )
    svg: str = (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="sched-picture" class="sched-svg" '
        f'viewBox="0 0 {W} {h}" width="{W}" height="{h}" style="min-width:{W}px" role="img" '
        f'aria-label="{aria}" '
        f'data-step="{attr(state.get("step", ""))}" data-budget-used="{attr(state.get("budget_used", 0))}" '
        f'data-kv-used="{attr(state.get("kv", {}).get("used", 0))}" data-preempted="{attr(preempted)}" '
        f'data-finished="{attr(finished)}" data-lit="{",".join(map(str, lit))}">'
        + st.style()
        + st.defs("sp")
        + budget
        + kv
        + table
        + "</svg>"
    )
    return svg
