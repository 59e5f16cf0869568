"""Where everything goes in the sk_buff picture, before any SVG is written.

Per trace (:func:`geometry`, cached): each head buffer's byte axis, zoomed where pointers make
small moves, and the header spans found in the whole trace. Per frame (:func:`layout`): for
each buffer, the lanes of the skbs that use it (pointer labels, arrows for pointers that
moved, ghosts at their old offsets) and the bar (written regions cut at every live skb's
data..tail, labels inside or below, axis ticks), every label placed by a
:class:`~app.web.explainers.skb.layout.Placer` so none overlaps. :mod:`.picture` draws it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.sim.core import Frame, msg
from app.sim.core.i18n import reader_gettext
from app.sim.skbuff.skb import SHINFO
from app.sim.skbuff.state import RegionView, SkbSnapshot, SkbState, SkbTrace
from app.web.explainers.skb.headers import Piece, Span, header_spans, pieces, shown
from app.web.explainers.skb.layout import (
    ASCENT,
    Axis,
    Box,
    Placer,
    Stem,
    make_axis,
    text_box,
    text_width,
)
from app.web.memo import Memo

WIDTH = 1000
X0 = 160  # left edge of the byte axis; the left column holds the skb and buffer names
X1 = 985
FS = 13  # every label's font size (px); the skb names are 14 px bold
ROW = 19  # one row of labels
BAR_H = 40
POINTERS: tuple[Literal["head", "data", "tail", "end"], ...] = ("head", "data", "tail", "end")
HEADER_OFFSETS: tuple[
    tuple[Literal["mac_header", "network_header", "transport_header"], str], ...
] = (
    ("mac_header", "mac"),
    ("network_header", "network"),
    ("transport_header", "transport"),
)
MAX_ROWS = 8  # rows a placer tries before falling back to the first row free of text


# --------------------------------------------------------------------------- trace geometry


@dataclass(slots=True)
class Geometry:
    """What is fixed for a whole trace: each buffer's axis, header spans, and how many label
    rows each lane needs at most (so lanes keep their height from step to step). Finding the
    rows lays out every frame: those layouts are kept for drawing (``scenes``, by index)."""

    axes: dict[str, Axis]
    spans: dict[str, list[Span]]
    rows: dict[tuple[str, str], int] = field(default_factory=dict)
    scenes: dict[int, tuple[Frame[SkbState], Scene]] = field(default_factory=dict)
    reader: Callable[[str], str] | None = None  # the language the scenes' labels are in

    def scene(self, trace: SkbTrace, frame: Frame[SkbState]) -> Scene:
        """``frame``'s layout: the one found while building this geometry if it is that frame
        and the reader's language is the same (labels are words: their widths place them)."""
        hit = self.scenes.get(frame.index)
        if hit is not None and hit[0] is frame and reader_gettext.get() == self.reader:
            return hit[1]
        return layout(trace, frame, self)


# by trace and language: the label rows are found with the reader's words' widths
_CACHE: OrderedDict[tuple[int, object], tuple[SkbTrace, Geometry]] = OrderedDict()
_LOCK = threading.Lock()


# Layouts shared by the pictures of many small traces made from one long one (the packet
# path's: a step, the step before and the widest step), by what a layout reads: the states
# of the frame, of the step before it and of the one before that (by identity: the caller
# gives equal states as one object and keeps them alive), the reader's language, and the
# axes and header spans of the buffers their skbs use. Each entry keeps the states it names.
SceneMemo = dict[tuple[object, ...], tuple["Scene", tuple[object, ...]]]


def geometry(trace: SkbTrace, scenes: SceneMemo | None = None) -> Geometry:
    """The trace's geometry (cached per trace; with ``scenes``, a trace made for one picture:
    not cached, its layouts shared through ``scenes``)."""
    if scenes is not None:
        return _build_geometry(trace, scenes)
    key = (id(trace), reader_gettext.get())
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is trace:
            _CACHE.move_to_end(key)
            return hit[1]
    geo = _build_geometry(trace)
    with _LOCK:
        _CACHE[key] = (trace, geo)
        while len(_CACHE) > 8:
            _CACHE.popitem(last=False)
    return geo


def _shared_layout(
    trace: SkbTrace, frame: Frame[SkbState], geo: Geometry, scenes: SceneMemo
) -> Scene:
    prev = previous_frame(trace, frame)
    earlier = previous_frame(trace, prev) if prev is not None else None
    states = tuple(f.state if f is not None else None for f in (frame, prev, earlier))
    bufs = sorted(
        {str(s.get("buffer")) for st in states[:2] if st is not None for s in st.get("skbs", ())}
    )
    key = (
        *(id(st) for st in states),
        reader_gettext.get(),
        tuple((b, geo.axes.get(b), tuple(geo.spans.get(b, ()))) for b in bufs),
    )
    hit = scenes.get(key)
    if hit is None:
        hit = scenes[key] = (layout(trace, frame, geo), states)
    return hit[0]


def _build_geometry(trace: SkbTrace, scenes: SceneMemo | None = None) -> Geometry:
    ops = tuple(getattr(trace.params, "ops", ()))
    spans = header_spans(trace.frames, ops)
    totals: dict[str, int] = {}
    points: dict[str, set[int]] = {}
    for frame in trace.frames:
        for name, info in frame.state.get("buffers", {}).items():
            totals[name] = max(totals.get(name, 0), int(info.get("end", 0)) + SHINFO)
        for skb in frame.state.get("skbs", ()):
            buf = str(skb.get("buffer"))
            totals[buf] = max(totals.get(buf, 0), int(skb.get("end", 0)) + SHINFO)
            pts = points.setdefault(buf, set())
            pts.update((int(skb["data"]), int(skb["tail"])))
            for key, _ in HEADER_OFFSETS:
                off = skb.get(key)
                if off:
                    pts.add(int(off))
            for reg in skb.get("regions", ()):
                if reg.get("kind") == "header":
                    pts.update((int(reg["start"]), int(reg["end"])))
    for buf, found in spans.items():
        for s in found:
            points.setdefault(buf, set()).update((s.start, s.end))
    biggest = max(totals.values(), default=1)
    full = X1 - X0
    axes = {
        buf: make_axis(total, points.get(buf, set()), X0, round(full * max(0.5, total / biggest)))
        for buf, total in totals.items()
    }
    geo = Geometry(axes=axes, spans=spans, reader=reader_gettext.get())
    rows: dict[tuple[str, str], int] = {}
    for frame in trace.frames:
        # a layout reads the axes and spans, not the rows
        scene = (
            layout(trace, frame, geo)
            if scenes is None
            else _shared_layout(trace, frame, geo, scenes)
        )
        geo.scenes[frame.index] = (frame, scene)
        for lane_key, n in scene.rows.items():
            rows[lane_key] = max(rows.get(lane_key, 0), n)
    geo.rows = rows
    return geo


# --------------------------------------------------------------------------- one frame's layout


@dataclass(slots=True)
class Label:
    text: str
    x: float
    row: int
    anchor: str
    cls: str = ""


@dataclass(slots=True)
class Move:
    skb: str
    pointers: tuple[str, ...]
    old: int
    new: int
    x_old: float
    x_new: float
    row: int
    label: Label


@dataclass(slots=True)
class LaneLayout:
    skb: SkbSnapshot
    pointer_labels: dict[str, Label]
    moves: list[Move]
    ghosts: list[tuple[str, float]]  # (pointer, old x)


@dataclass(slots=True)
class BarLayout:
    buf: str
    axis: Axis
    pieces: list[tuple[Piece, bool, bool]]  # (piece, inside some live data..tail, lit)
    inside_labels: list[tuple[Piece, str, float, bool]]  # (piece, text, centre x, on a bright fill)
    below: list[tuple[Label, float | None]]  # (label, leader anchor x)
    ticks: list[tuple[float, int]]  # (x, offset)
    shinfo_label: bool


@dataclass(slots=True)
class Scene:
    groups: list[tuple[str, list[LaneLayout], BarLayout]]
    rows: dict[tuple[str, str], int]


def row_y(row: int) -> float:
    """Baseline of label row ``row`` measured from the top of its band."""
    return 4 + ASCENT * FS + row * ROW


def _windows(owners: Iterable[SkbSnapshot]) -> list[tuple[int, int]]:
    return [
        (int(o["data"]), int(o["tail"]))
        for o in owners
        if o.get("status", "live") == "live" and int(o["tail"]) > int(o["data"])
    ]


def _split(p: Piece, windows: Sequence[tuple[int, int]]) -> list[tuple[Piece, bool]]:
    """``p`` cut where it enters or leaves the live skbs' data..tail windows."""
    cuts = {p.start, p.end}
    for d, t in windows:
        cuts.update(c for c in (d, t) if p.start < c < p.end)
    edges = sorted(cuts)
    out = []
    for a, b in zip(edges, edges[1:], strict=False):
        inside = any(d <= a and b <= t for d, t in windows)
        out.append((Piece(a, b, p.label, p.kind), inside))
    return out


def _bar_pieces(
    owners: Sequence[SkbSnapshot], spans: Sequence[Span]
) -> tuple[list[Piece], list[tuple[Piece, bool]]]:
    regions: list[RegionView] = []
    for o in owners:
        regions.extend(o.get("regions", ()))
    whole = pieces(regions, spans)
    windows = _windows(owners)
    return whole, [sp for p in whole for sp in _split(p, windows)]


Candidate = tuple[str, float]  # (text-anchor, x)


def _choose(
    placer: Placer,
    text: str,
    candidates: Sequence[Candidate],
    rows: range,
    *,
    cls: str = "",
    stem_x: float | None = None,
    stem_down: bool = True,
) -> Label:
    """The first row (and candidate) where ``text`` fits: clear of every label, crossing no
    line, its own line (``stem_x``, down to the lane's end or up to the bar) crossing no label.
    If no row of ``rows`` has room, the first row below them where the text, moved inside the
    picture, overlaps no other text (lines may cross it there)."""

    def stem(box: Box) -> Stem | None:
        if stem_x is None:
            return None
        return Stem(stem_x, box.y0, 10_000) if stem_down else Stem(stem_x, -10, box.y0)

    for row in rows:
        for anchor, tx in candidates:
            box = text_box(tx, row_y(row), text, FS, anchor)
            if placer.fits(box, stem(box)):
                placer.add(box, stem(box))
                return Label(text, tx, row, anchor, cls)
    row = rows.start
    anchor, tx = candidates[0]
    while True:  # ends: below the lowest placed box every row is clear
        box = text_box(tx, row_y(row), text, FS, anchor)
        dx = placer.nudge(box)
        box = Box(box.x0 + dx, box.y0, box.x1 + dx, box.y1)
        if placer.clear(box):
            placer.add(box)
            return Label(text, tx + dx, row, anchor, cls)
        row += 1


# Placing labels is most of a layout's cost, and a long trace (a packet-path walk of 2,000
# steps) places the same few again and again: each placement below is remembered by what it
# reads (the offsets, the axis and, for labels that are words, the reader's language).
PointerLabels = tuple[dict[str, Label], int]
Moves = tuple[list[Move], list[tuple[str, float]], int]
Below = tuple[list[tuple[Label, float | None]], list[tuple[float, int]], int]
_POINTER_LABELS: Memo[tuple[object, ...], PointerLabels] = Memo(4096)
_MOVES: Memo[tuple[object, ...], Moves] = Memo(4096)
_BELOW: Memo[tuple[object, ...], Below] = Memo(4096)
PLACEMENTS = (_POINTER_LABELS, _MOVES, _BELOW)  # (benchmarks empty them)


def _offsets(skb: SkbSnapshot) -> tuple[int, ...]:
    return tuple(int(skb.get(ptr, 0)) for ptr in POINTERS)


def _pointer_labels(lane: SkbSnapshot, axis: Axis) -> PointerLabels:
    key = (_offsets(lane), axis)
    hit = _POINTER_LABELS.get(key)
    if hit is None:
        hit = _place_pointer_labels(lane, axis)
        _POINTER_LABELS.put(key, hit)
    return hit


def _moves(name: str, lane: SkbSnapshot, old: SkbSnapshot, axis: Axis) -> Moves:
    key = (name, _offsets(lane), _offsets(old), axis, reader_gettext.get())
    hit = _MOVES.get(key)
    if hit is None:
        hit = _place_moves(name, lane, old, axis)
        _MOVES.put(key, hit)
    return hit


def _below(
    whole: Sequence[Piece], owners: Sequence[SkbSnapshot], axis: Axis, inside: set[tuple[int, int]]
) -> Below:
    seen = tuple(
        (
            o.get("status", "live"),
            str(o.get("name")),
            *(o.get(key) for key, _ in HEADER_OFFSETS),
        )
        for o in owners
    )
    key = (tuple(whole), seen, axis, frozenset(inside), reader_gettext.get())
    hit = _BELOW.get(key)
    if hit is None:
        hit = _place_below(whole, owners, axis, inside)
        _BELOW.put(key, hit)
    return hit


def _place_pointer_labels(lane: SkbSnapshot, axis: Axis) -> PointerLabels:
    """Pointer labels in rows above the bar: each sits by its pointer's line, which runs from
    the label down to the bar, so a label may cross no other pointer's line."""
    placer = Placer(left=X0 - 6, right=WIDTH - 4)
    items = []
    for ptr in POINTERS:
        off = int(lane.get(ptr, 0))
        x = axis.x(off)
        text = f"{ptr} {off}"
        right = x + 5 + text_width(text, FS) <= placer.right
        items.append((ptr, x, text, right))
    # right-going labels left to right, then left-going ones right to left: a staircase in
    # which no label crosses a line (see Placer)
    order = sorted((i for i in items if i[3]), key=lambda i: i[1]) + sorted(
        (i for i in items if not i[3]), key=lambda i: -i[1]
    )
    out: dict[str, Label] = {}
    for ptr, x, text, right in order:
        sides: list[Candidate] = [("start", x + 5), ("end", x - 5)]
        out[ptr] = _choose(placer, text, sides if right else sides[::-1], range(MAX_ROWS), stem_x=x)
    return out, max(label.row for label in out.values()) + 1


def _place_moves(
    name: str, lane: SkbSnapshot, old: SkbSnapshot, axis: Axis
) -> tuple[list[Move], list[tuple[str, float]], int]:
    """An arrow from each moved pointer's old offset to its new one, with the distance, in a
    band of rows under the pointer labels (pointers that moved together share one arrow)."""
    spans: dict[tuple[int, int], list[str]] = {}
    ghosts: list[tuple[str, float]] = []
    for ptr in POINTERS:
        a, b = int(old.get(ptr, 0)), int(lane.get(ptr, 0))
        if a != b:
            spans.setdefault((a, b), []).append(ptr)
            ghosts.append((ptr, axis.x(a)))
    placer = Placer(left=X0 - 6, right=WIDTH - 4)
    for ptr in POINTERS:
        placer.stems.append(Stem(axis.x(int(lane.get(ptr, 0))), -10_000, 10_000))
    moves: list[Move] = []
    used = 0
    for (a, b), ptrs in sorted(spans.items(), key=lambda kv: axis.x(kv[0][0])):
        xa, xb = axis.x(a), axis.x(b)
        delta = b - a
        text = str(msg("{sign}{n} bytes", sign="+" if delta > 0 else "−", n=abs(delta)))
        lo, hi = min(xa, xb), max(xa, xb)
        ahead: Candidate = ("start", xb + 6) if delta > 0 else ("end", xb - 6)
        behind: Candidate = ("end", xa - 6) if delta > 0 else ("start", xa + 6)
        chosen: Label | None = None
        step = 0
        while chosen is None:  # ends: below the lowest placed box every row is clear
            # first MAX_ROWS rows where nothing crosses; then from row 0 again, lines allowed
            loose = step >= MAX_ROWS
            row = step - MAX_ROWS if loose else step
            y = row_y(row)
            arrow = Box(lo, y - 6, hi, y - 2)
            if placer.clear(arrow):
                for anchor, tx in (ahead, behind):
                    box = text_box(tx, y, text, FS, anchor)
                    if loose:
                        tx += placer.nudge(box)
                        box = text_box(tx, y, text, FS, anchor)
                    if (
                        placer.clear(box)
                        if loose
                        else placer.fits(box) and not box.overlaps(arrow, 0)
                    ):
                        chosen = Label(text, tx, row, anchor)
                        placer.add(box)
                        placer.add(arrow)
                        break
            step += 1
        used = max(used, chosen.row + 1)
        moves.append(Move(name, tuple(ptrs), a, b, xa, xb, chosen.row, chosen))
    return moves, ghosts, used


def _place_below(
    whole: Sequence[Piece],
    owners: Sequence[SkbSnapshot],
    axis: Axis,
    inside: set[tuple[int, int]],
) -> tuple[list[tuple[Label, float | None]], list[tuple[float, int]], int]:
    """Labels under the bar: regions too narrow for their name and header offsets (rows 1 and
    down, each with a leader line up to the bar), then axis offsets in row 0 where they fit."""
    placer = Placer(left=X0 - 12, right=WIDTH - 4)
    items: list[tuple[float, str, str]] = []  # (anchor x, text, class)
    for p in whole:
        if (p.start, p.end) in inside:
            continue
        text = str(msg("{label} {n} B", label=shown(p.label), n=p.end - p.start))
        items.append(((axis.x(p.start) + axis.x(p.end)) / 2, text, "region-label"))
    offsets: dict[tuple[str, int], list[str]] = {}
    live = [o for o in owners if o.get("status", "live") == "live"]
    for o in live:
        for key, short in HEADER_OFFSETS:
            off = o.get(key)
            if off is None or (key == "network_header" and not off):
                continue
            offsets.setdefault((short, int(off)), []).append(str(o.get("name")))
    for (short, off), names in offsets.items():
        who = "" if len(names) == len(live) else f"{','.join(names)} "
        items.append((axis.x(off), f"{who}{short} {off}", "off-label"))
    items.sort(key=lambda i: i[0])
    out: list[tuple[Label, float | None]] = []
    for x, text, cls in items:
        cands: list[Candidate] = [("middle", x), ("start", x - 8), ("end", x + 8)]
        label = _choose(
            placer, text, cands, range(1, MAX_ROWS + 2), cls=cls, stem_x=x, stem_down=False
        )
        out.append((label, x))
    used = max((label.row for label, _ in out), default=0) + 1
    ticks: list[tuple[float, int]] = []
    total = int(axis.knots[-1][0])
    end = total - SHINFO
    for off in sorted({0, end, total, *(o for z in axis.zooms for o in z)}):
        x = axis.x(off)
        for anchor, tx in (("middle", x), ("start", x + 2), ("end", x - 2)):
            box = text_box(tx, row_y(0), str(off), FS, anchor)
            if placer.fits(box):
                placer.add(box)
                out.append((Label(str(off), tx, 0, anchor, "tick-label"), None))
                ticks.append((x, off))
                break
    return out, ticks, used


# An skb in one of these states no longer exists as an sk_buff (kfree_skbmem has run, or GRO
# freed it in napi_skb_finish); "in_frag_list" is alive, owned by the skb whose frag_list holds it.
GONE = frozenset({"consumed", "dropped", "freed"})


def drawn_skbs(state: SkbState, prev: SkbState | None) -> list[SkbSnapshot]:
    """The skbs a frame draws: every skb except those already gone before this step. The step
    that frees an skb still draws it (marked gone); a later step draws it only when it is that
    step's subject (a use-after-free names the freed skb)."""
    before = {str(s.get("name")): s for s in (prev.get("skbs", ()) if prev else ())}
    primary = state.get("primary")
    out = []
    for s in state.get("skbs", ()):
        name = str(s.get("name"))
        old = before.get(name)
        if old is not None and old.get("status") in GONE and name != primary:
            continue
        out.append(s)
    return out


def layout(trace: SkbTrace, frame: Frame[SkbState], geo: Geometry) -> Scene:
    state = frame.state
    prev_frame = previous_frame(trace, frame)
    skbs = drawn_skbs(state, prev_frame.state if prev_frame else None)
    prev = {str(s.get("name")): s for s in (prev_frame.state.get("skbs", ()) if prev_frame else ())}
    prev_pieces: dict[str, set[tuple[int, int, str, bool]]] = {}
    if prev_frame is not None:
        earlier = previous_frame(trace, prev_frame)
        pskbs = drawn_skbs(prev_frame.state, earlier.state if earlier else None)
        for buf in _buffers_in_order(pskbs):
            owners = [s for s in pskbs if s.get("buffer") == buf]
            _, split = _bar_pieces(owners, geo.spans.get(buf, ()))
            prev_pieces[buf] = {(p.start, p.end, p.label, i) for p, i in split}
    groups: list[tuple[str, list[LaneLayout], BarLayout]] = []
    rows: dict[tuple[str, str], int] = {}
    for buf in _buffers_in_order(skbs):
        owners = [s for s in skbs if s.get("buffer") == buf]
        axis = geo.axes.get(buf) or make_axis(
            int(owners[0].get("end", 0)) + SHINFO, set(), X0, X1 - X0
        )
        lanes: list[LaneLayout] = []
        for skb in owners:
            name = str(skb.get("name"))
            labels, n = _pointer_labels(skb, axis)
            rows[("ptr", name)] = max(rows.get(("ptr", name), 0), n)
            old = prev.get(name)
            moves: list[Move] = []
            ghosts: list[tuple[str, float]] = []
            if old is not None and old.get("buffer") == buf:
                moves, ghosts, m = _moves(name, skb, old, axis)
                rows[("move", name)] = max(rows.get(("move", name), 0), m)
            lanes.append(LaneLayout(skb, labels, moves, ghosts))
        whole, split = _bar_pieces(owners, geo.spans.get(buf, ()))
        before = prev_pieces.get(buf)
        drawn = [
            (p, i, before is not None and (p.start, p.end, p.label, i) not in before)
            for p, i in split
        ]
        inside_labels: list[tuple[Piece, str, float, bool]] = []
        inside: set[tuple[int, int]] = set()
        in_bar = Placer(left=X0, right=WIDTH)
        total = int(axis.knots[-1][0])
        x_end, x_total = axis.x(total - SHINFO), axis.x(total)
        shinfo_label = text_width("shinfo", FS) + 10 <= x_total - x_end
        if shinfo_label:
            in_bar.add(text_box((x_end + x_total) / 2, BAR_H / 2 + 4.5, "shinfo", FS, "middle"))
        for p in whole:
            x0, x1 = axis.x(p.start), axis.x(p.end)
            bright = all(i for q, i in split if p.start <= q.start and q.end <= p.end)
            name = shown(p.label)
            for text in (str(msg("{label} {n} B", label=name, n=p.end - p.start)), name):
                box = text_box((x0 + x1) / 2, BAR_H / 2 + 4.5, text, FS, "middle")
                if text_width(text, FS) + 10 <= x1 - x0 and in_bar.clear(box):
                    in_bar.add(box)
                    inside_labels.append((p, text, (x0 + x1) / 2, bright))
                    inside.add((p.start, p.end))
                    break
        below, ticks, used = _below(whole, owners, axis, inside)
        rows[("below", buf)] = max(rows.get(("below", buf), 0), used)
        groups.append(
            (buf, lanes, BarLayout(buf, axis, drawn, inside_labels, below, ticks, shinfo_label))
        )
    return Scene(groups=groups, rows=rows)


def _buffers_in_order(skbs: Iterable[SkbSnapshot]) -> list[str]:
    seen: list[str] = []
    for skb in skbs:
        buf = skb.get("buffer")
        if buf and buf not in seen:
            seen.append(str(buf))
    return seen


def previous_frame(trace: SkbTrace, frame: Frame[SkbState]) -> Frame[SkbState] | None:
    """The step before ``frame`` in ``trace``, if the trace holds it (a trace assembled by
    another explainer may hold only some steps)."""
    i = frame.index - 1
    if 0 <= i < len(trace.frames) and trace.frames[i].index == i:
        return trace.frames[i]
    return next((f for f in trace.frames if f.index == i), None)
