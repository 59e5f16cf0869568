"""The KV cache: block 0 (null), each block's owner, ref_cnt and hash, the step's prefix hits
and the blocks a preemption freed, then the head of the free queue.

Up to ``MAX_CELLS`` blocks are drawn; the rest are summed up in a line. With small cells (a
64-column grid) runs of alike neighbouring blocks are drawn as one rect, without labels.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from app.sim.core import Frame, msg
from app.sim.serving.explainer import SchedulerTrace
from app.sim.serving.narrate import KVView, StepState
from app.web.explainers.scheduler import derive as dv
from app.web.explainers.scheduler import style as st
from app.web.explainers.scheduler.budget import heading
from app.web.explainers.scheduler.style import PAD, W, text
from app.web.svgtext import attr

INNER = W - 2 * PAD
MAX_CELLS = 1024  # KV blocks drawn; the rest are summed up in a line
MAX_FREE_SHOWN = 24


class Blocks:
    """Per-block reads of a frame's sparse KV view (owner index, ref_cnt, hashed): a block not
    listed is free and unhashed."""

    def __init__(self, kv: KVView) -> None:
        self._at = {b: i for i, b in enumerate(kv["blocks"])}
        self._owner = kv["owner"]
        self._ref = kv["ref_cnt"]
        self._hashed = kv["hashed"]
        self._listed = kv["blocks"]

    def owner(self, b: int) -> int:
        i = self._at.get(b)
        return -1 if i is None else self._owner[i]

    def ref(self, b: int) -> int:
        i = self._at.get(b)
        return 0 if i is None else self._ref[i]

    def hashed(self, b: int) -> bool:
        i = self._at.get(b)
        return i is not None and bool(self._hashed[i])

    def used_from(self, first: int, end: int) -> int:
        """How many of blocks ``first``..``end - 1`` are in use."""
        lo = bisect_left(self._listed, first)
        hi = bisect_left(self._listed, end)
        return sum(1 for r in self._ref[lo:hi] if r > 0)


def state_of(blocks: Blocks, b: int) -> str:
    if b == 0:
        return "null"
    if blocks.ref(b) > 0:
        return "used"
    return "cached" if blocks.hashed(b) else "free"


def hit_blocks(state: StepState) -> set[int]:
    """Blocks that prefix-cache hits handed to requests admitted this step."""
    hits = state["prefix_hits"]
    bs = max(state["kv"]["block_size"], 1)
    lit: set[int] = set()
    for view in state["requests"]:
        hit = hits.get(view["id"], 0)
        if hit > 0:
            lit.update(view["blocks"][: hit // bs])
    return lit


def freed_blocks(trace: SchedulerTrace, frame: Frame[StepState]) -> set[int]:
    """Blocks the step's preemption victims held in the previous step (when that step is the
    previous frame)."""
    victims = set(frame.state["preempted"])
    if not victims or frame.index == 0:
        return set()
    prev = trace.frames[frame.index - 1].state
    steps = trace.series["step"]
    s = dv.series_index(trace.series, frame.state["step"])
    if not steps or steps[s] != frame.state["step"] or s == 0 or steps[s - 1] != prev["step"]:
        return set()
    freed: set[int] = set()
    for view in prev["requests"]:
        if view["id"] in victims:
            freed.update(view["blocks"])
    return freed


def grid_shape(n: int) -> tuple[int, float, float]:
    """Columns, cell width and cell height of a grid of ``n`` blocks (at most ``MAX_CELLS``)."""
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


class Grid:
    """Where block ``b`` is drawn."""

    def __init__(self, n: int, top: float) -> None:
        self.cols, self.cw, self.ch = grid_shape(n)
        self.top = top
        self.shown = min(n, MAX_CELLS)

    def at(self, b: int) -> tuple[float, float]:
        return PAD + (b % self.cols) * self.cw, self.top + (b // self.cols) * (self.ch + 3)

    def bottom(self) -> float:
        rows = (self.shown + self.cols - 1) // self.cols
        return self.top + rows * (self.ch + 3) + 4


def _describe(blocks: Blocks, b: int, who: str) -> str:
    r = blocks.ref(b)
    if b == 0:
        return str(msg("block 0: the null block (never allocated)"))
    if r > 0:
        if blocks.hashed(b):
            return str(msg("block {n}: {id}, ref_cnt {ref}, hashed", n=b, id=who, ref=r))
        return str(msg("block {n}: {id}, ref_cnt {ref}, not hashed yet", n=b, id=who, ref=r))
    if blocks.hashed(b):
        return str(msg("block {n}: free, still hashed (a prefix-cache hit can take it back)", n=b))
    return str(msg("block {n}: free", n=b))


def _cell_label(g: Grid, b: int, r: int, who: str, fg: str) -> str:
    """The text inside a large cell: "null", or the owner (with ×ref_cnt when shared)."""
    cx, cy = g.at(b)
    cw, ch = g.cw, g.ch
    if cw < 26 or ch < 18:
        return ""
    y = cy + ch / 2 + 5
    if b == 0:
        label = "null" if cw >= 40 else "∅"
        return f'<text x="{cx + cw / 2:.1f}" y="{y:.1f}" text-anchor="middle" class="nulltext">{label}</text>'
    if r <= 0 or not who:
        return ""
    label = who if r == 1 else f"{who}×{r}"
    if 7.5 * len(label) > cw - 10 and r > 1:
        label = f"×{r}"
    if 7.5 * len(label) > cw - 10:
        return ""
    return (
        f'<text x="{cx + cw / 2:.1f}" y="{y:.1f}" text-anchor="middle" '
        f'style="fill:{fg};font-weight:700">{attr(label)}</text>'
    )


def _cell(
    g: Grid, blocks: Blocks, ids: Sequence[str], b: int, lit: set[int], freed: set[int]
) -> list[str]:
    """One block of a grid of large cells, with its tooltip, owner label and marks."""
    cx, cy = g.at(b)
    cw, ch = g.cw, g.ch
    o = blocks.owner(b)
    r = blocks.ref(b)
    hs = blocks.hashed(b)
    who = ids[o] if 0 <= o < len(ids) else ""
    state = state_of(blocks, b)
    fill, fg = {
        "null": ("", "var(--bg)"),
        "cached": ("url(#sp-cached)", "var(--fg)"),
        "free": ("", "var(--fg)"),
    }.get(state) or st.owner_colour(o if o >= 0 else 0)
    desc = _describe(blocks, b, who)
    out: list[str] = []
    if b in lit:
        desc += str(msg("; prefix-cache hit this step"))
        out.append(
            f'<rect class="halo" x="{cx - 1:.1f}" y="{cy - 2:.1f}" width="{cw + 1:.1f}" '
            f'height="{ch + 4:.1f}" rx="3"/>'
        )
    if b in freed:
        desc += str(msg("; freed by the preemption this step"))
    fill_attr = f' fill="{fill}"' if fill else ""
    out.append(
        f'<rect id="blk-{b}" class="cell {state}{" lit" if b in lit else ""}" x="{cx + 1:.1f}" '
        f'y="{cy:.1f}" width="{cw - 2:.1f}" height="{ch:.1f}" rx="2"{fill_attr} '
        f'data-owner="{attr(who)}" data-ref="{r}" data-state="{state}" data-hashed="{int(hs)}"'
        f"{' data-lit=' + chr(34) + '1' + chr(34) if b in lit else ''}>"
        f"<title>{attr(desc)}</title></rect>"
    )
    if b in freed:
        out.append(
            f'<rect class="freed" x="{cx + 2.5:.1f}" y="{cy + 1.5:.1f}" width="{cw - 5:.1f}" '
            f'height="{ch - 3:.1f}" data-block="{b}"/>'
        )
    big = cw >= 26 and ch >= 18
    label = _cell_label(g, b, r, who, fg)
    if label:
        out.append(label)
    if big and hs and b > 0:
        hashed = attr(msg("hashed"))
        out.append(
            f'<path d="M{cx + cw - 10:.1f} {cy:.1f} h9 v9 z" style="fill:var(--fg)">'
            f"<title>{hashed}</title></path>"
        )
    elif not big and r > 1:
        out.append(
            f'<circle cx="{cx + cw / 2:.1f}" cy="{cy + ch / 2:.1f}" r="2.5" style="fill:#000000"/>'
        )
    return out


def _compact_cells(g: Grid, blocks: Blocks, lit: set[int], freed: set[int]) -> list[str]:
    """Small cells: a run of blocks alike in state, sharing, hit and freed is one rect (owners
    are not told apart by colour: a few pixels per block, many requests)."""

    def key(b: int) -> tuple[str, bool, bool, bool]:
        return state_of(blocks, b), blocks.ref(b) > 1, b in lit, b in freed

    # fills come from the classes (cu in use, cs shared, cc cached, cf free)
    classes = {"null": "cell null", "cached": "cell cc", "free": "cell cf"}
    out: list[str] = []
    b = 0
    while b < g.shown:
        k = key(b)
        e = b + 1
        while e < g.shown and e % g.cols != 0 and key(e) == k:
            e += 1
        state, shared, is_lit, is_freed = k
        cx, cy = g.at(b)
        w = (e - b) * g.cw
        cls = classes.get(state) or ("cell cs" if shared else "cell cu")
        if is_lit:
            out.append(
                f'<rect class="halo" x="{cx - 1:.1f}" y="{cy - 2:.1f}" width="{w + 1:.1f}" '
                f'height="{g.ch + 4:.1f}" rx="3"/>'
            )
        # no tooltip per run: a fragmented cache has hundreds of runs per frame
        out.append(
            f'<rect id="blk-{b}" class="{cls}{" lit" if is_lit else ""}" x="{cx + 1:.1f}" '
            f'y="{cy:.1f}" width="{w - 2:.1f}" height="{g.ch:.1f}" data-n="{e - b}"'
            f"{' data-lit=' + chr(34) + '1' + chr(34) if is_lit else ''}/>"
        )
        if is_freed:
            out.append(
                f'<rect class="freed" x="{cx + 2.5:.1f}" y="{cy + 1.5:.1f}" width="{w - 5:.1f}" '
                f'height="{g.ch - 3:.1f}"/>'
            )
        b = e
    return out


def _free_queue(kv: KVView, blocks: Blocks, yy: float) -> tuple[list[str], float]:
    """The head of the free queue (reused and evicted first), one box per block."""
    label = str(msg("Free queue, head first (reused and evicted first):"))
    out = [text(PAD, yy + 15, label, "muted")]
    fx = PAD + max(352.0, st.text_width(label) + 12)
    if fx > W - 160:  # no room beside the words: the boxes go on the next line
        fx = float(PAD)
        yy += 22
    fq = kv["free_queue"]
    shown = min(len(fq), MAX_FREE_SHOWN)
    for k, b in enumerate(fq[:MAX_FREE_SHOWN]):
        bw = max(22, 8 * len(str(b)) + 6)
        fill = "url(#sp-cached)" if blocks.hashed(b) else "var(--bg)"
        out.append(
            f'<rect id="fq-{k}" x="{fx:.1f}" y="{yy + 1}" width="{bw}" height="19" rx="2" '
            f'style="fill:{fill};stroke:var(--line)" data-block="{b}"/>'
        )
        out.append(
            f'<text x="{fx + bw / 2:.1f}" y="{yy + 15}" text-anchor="middle" class="mono" '
            f'style="font-size:12px">{b}</text>'
        )
        fx += bw + 2
        if fx > W - 120:
            shown = k + 1
            break
    extra = max(kv["free"] - shown, 0)
    if extra:
        out.append(text(fx + 4, yy + 15, str(msg("+{count} more", count=extra)), "muted"))
    return out, yy + 26


def _legend(compact: bool, yy: float) -> tuple[list[str], float]:
    def box(fill: str) -> st.Swatch:
        return lambda x, y: (
            f'<rect x="{x:.1f}" y="{y - 11:.1f}" width="18" height="13" '
            f'style="fill:{fill};stroke:var(--line)"/>'
        )

    items: list[tuple[st.Swatch, str]] = [
        (box("var(--bg)"), str(msg("free"))),
        (box("url(#sp-cached)"), str(msg("free, hashed (cached)"))),
        (box(st.OWNER[0][0]), str(msg("in use") if compact else msg("in use (colour = request)"))),
    ]
    if compact:  # small cells: shared blocks get their own colour, hashed marks are left out
        items.append((box(st.PURPLE), str(msg("shared (ref_cnt > 1)"))))
    else:
        items.append(
            (
                lambda x, y: (
                    f'<path d="M{x + 8:.1f} {y - 11:.1f} h9 v9 z" style="fill:var(--fg)"/>'
                ),
                str(msg("hashed")),
            )
        )
    items.append(
        (
            lambda x, y: (
                f'<rect class="halo" x="{x:.1f}" y="{y - 12:.1f}" width="20" height="15" rx="2"/>'
            ),
            str(msg("prefix hit now")),
        )
    )
    items.append(
        (
            lambda x, y: (
                f'<rect class="freed" x="{x:.1f}" y="{y - 11:.1f}" width="18" height="13"/>'
            ),
            str(msg("freed by preemption")),
        )
    )
    out, ly, _ = st.legend(items, float(PAD), yy + 12, W - PAD)
    return out, ly


def draw(trace: SchedulerTrace, frame: Frame[StepState], y: float) -> tuple[str, float, list[int]]:
    """The KV section from ``y``; returns its markup, the y below it and the lit blocks."""
    state = frame.state
    kv = state["kv"]
    ids = trace.series["request_ids"]
    n = kv["num_blocks"]
    used = kv["used"]
    usable = max(n - 1, 1)
    blocks = Blocks(kv)
    lit = hit_blocks(state)
    freed = freed_blocks(trace, frame)
    detail = msg(
        "{used} of {usable} usable blocks in use ({pct}%) · {bs} tokens per block · "
        "{cached} hashed (prefix cache) · {free} in the free queue",
        used=used,
        usable=usable,
        pct=round(100 * used / usable),
        bs=kv["block_size"],
        cached=kv["cached_blocks"],
        free=kv["free"],
    )
    head, base = heading(str(msg("KV cache")), str(detail), y + 15)
    out = [f'<g id="kv" data-used="{used}" data-blocks="{n}">', *head]
    g = Grid(n, base + 11)
    compact = g.cols == 64
    if compact:
        out.extend(_compact_cells(g, blocks, lit, freed))
    else:
        for b in range(g.shown):
            out.extend(_cell(g, blocks, ids, b, lit, freed))
    yy = g.bottom()
    if n > g.shown:
        rest = msg(
            "Blocks {first}–{last} not drawn: {used} of them in use.",
            first=g.shown,
            last=n - 1,
            used=blocks.used_from(g.shown, n),
        )
        out.append(text(PAD, yy + 13, str(rest), "muted"))
        yy += 18
    queue, yy = _free_queue(kv, blocks, yy + 4)
    out.extend(queue)
    keys, ly = _legend(compact, yy)
    out.extend(keys)
    out.append("</g>")
    return "".join(out), ly + 12, sorted(lit)
