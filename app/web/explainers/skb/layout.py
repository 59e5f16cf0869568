"""Geometry helpers of the sk_buff picture: text boxes, a label placer that never overlaps,
and a monotonic piecewise-linear byte axis that zooms where pointers make small moves.

Text boxes are estimated, not measured: the picture's type is monospace (DejaVu Sans Mono in
Debian's Chromium, 0.602 em per glyph, ascent 0.93 em, descent 0.24 em), so a label of ``n``
narrow characters at ``fs`` px is ``0.62 * fs * n`` wide (wide East-Asian glyphs count 1.02 em)
and reaches from ``0.95 * fs`` above its baseline to ``0.27 * fs`` below it. The margins keep
the estimate on the safe side of the real glyph boxes (the browser test checks ``getBBox``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.web.svgtext import advance

GLYPH = 0.62  # em per narrow monospace glyph (DejaVu Sans Mono: 0.602)
WIDE_GLYPH = 1.02
ASCENT = 0.95
DESCENT = 0.27
GAP = 3.0  # px kept free between two labels


def text_width(text: str, fs: float) -> float:
    """Estimated advance width of ``text`` at ``fs`` px in the picture's monospace font."""
    return advance(text, GLYPH, WIDE_GLYPH) * fs


@dataclass(frozen=True, slots=True)
class Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box, gap: float = GAP) -> bool:
        return (
            self.x0 < other.x1 + gap
            and other.x0 < self.x1 + gap
            and self.y0 < other.y1
            and other.y0 < self.y1
        )


def text_box(x: float, y: float, text: str, fs: float, anchor: str = "start") -> Box:
    """The box a text element covers: ``x``/``y`` as in SVG (baseline), ``anchor`` its text-anchor."""
    w = text_width(text, fs)
    left = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
    return Box(left, y - ASCENT * fs, left + w, y + DESCENT * fs)


@dataclass(frozen=True, slots=True)
class Stem:
    """A vertical line (pointer or leader line) that labels other than its own must not cross."""

    x: float
    y0: float
    y1: float

    def crosses(self, box: Box) -> bool:
        return box.x0 - 1 < self.x < box.x1 + 1 and box.y0 < self.y1 and self.y0 < box.y1


@dataclass(slots=True)
class Placer:
    """Keeps the boxes and stems placed so far; a candidate fits if it overlaps no box, crosses
    no stem, stays within ``left``..``right`` and its own stem crosses no placed box."""

    left: float
    right: float
    boxes: list[Box] = field(default_factory=list)
    stems: list[Stem] = field(default_factory=list)

    def text_free(self, box: Box) -> bool:
        return (
            box.x0 >= self.left
            and box.x1 <= self.right
            and not any(box.overlaps(b) for b in self.boxes)
        )

    def fits(self, box: Box, stem: Stem | None = None) -> bool:
        if not self.text_free(box) or any(s.crosses(box) for s in self.stems):
            return False
        return stem is None or not any(stem.crosses(b) for b in self.boxes)

    def clear(self, box: Box) -> bool:
        """No placed box overlaps ``box`` (bounds and stems not considered)."""
        return not any(box.overlaps(b) for b in self.boxes)

    def nudge(self, box: Box) -> float:
        """How far to move ``box`` sideways to bring it within the bounds (left edge first)."""
        if box.x0 < self.left:
            return self.left - box.x0
        return min(0.0, self.right - box.x1)

    def add(self, box: Box, stem: Stem | None = None) -> None:
        self.boxes.append(box)
        if stem is not None:
            self.stems.append(stem)


@dataclass(frozen=True, slots=True)
class Axis:
    """Byte offset → x for one buffer: piecewise linear through ``knots`` (offset, x), strictly
    increasing in both, so the order of offsets is kept; ``zooms`` are the magnified windows."""

    knots: tuple[tuple[float, float], ...]
    zooms: tuple[tuple[int, int], ...] = ()
    rates: tuple[float, float] = (1.0, 1.0)  # px per byte: (outside, inside) the zoom windows
    # x by offset, as found so far (a picture asks for the same few offsets many times)
    found: dict[float, float] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def x(self, offset: float) -> float:
        """The x of ``offset``; offsets outside the buffer sit at its nearer edge."""
        hit = self.found.get(offset)
        if hit is None:
            hit = self.found[offset] = self._x(offset)
        return hit

    def _x(self, offset: float) -> float:
        k = self.knots
        offset = min(max(offset, k[0][0]), k[-1][0])
        if offset <= k[0][0]:
            (o0, x0), (o1, x1) = k[0], k[1]
        elif offset >= k[-1][0]:
            (o0, x0), (o1, x1) = k[-2], k[-1]
        else:
            i = next(i for i in range(1, len(k)) if offset <= k[i][0])
            (o0, x0), (o1, x1) = k[i - 1], k[i]
        return round(x0 + (offset - o0) * (x1 - x0) / (o1 - o0), 2)

    @property
    def breaks(self) -> tuple[int, ...]:
        """Offsets inside the buffer where the scale changes (drawn as axis-break marks)."""
        lo, hi = self.knots[0][0], self.knots[-1][0]
        return tuple(sorted({o for z in self.zooms for o in z if lo < o < hi}))


ZOOM_RATE = 3.0  # px per byte inside a zoom window: a 14-byte move is 42 px
ZOOM_SHARE = 0.5  # zoom windows take at most this share of the bar
CLUSTER_GAP = 64  # points closer than this (bytes) belong to one zoom window
CLUSTER_MAX = 400  # a cluster wider than this is not zoomed (it is big enough already)
PAD = 8  # bytes of context on each side of a zoom window


def make_axis(total: int, points: set[int], x0: float, width: float) -> Axis:
    """The byte axis of a buffer of ``total`` bytes drawn ``width`` px wide from ``x0``.

    ``points`` are the offsets where pointers stop or headers begin and end over the whole
    trace; clusters of two or more of them within ``CLUSTER_GAP`` bytes are where small moves
    happen, and get ``ZOOM_RATE`` px per byte (less if they would take over half the bar)."""
    total = max(total, 1)
    linear = Axis(knots=((0, x0), (total, x0 + width)), rates=(width / total, width / total))
    pts = sorted(p for p in points if 0 <= p <= total)
    clusters: list[list[int]] = []
    for p in pts:
        if clusters and p - clusters[-1][-1] <= CLUSTER_GAP:
            clusters[-1].append(p)
        else:
            clusters.append([p])
    windows: list[tuple[int, int]] = []
    for c in clusters:
        if len(c) < 2 or c[-1] - c[0] > CLUSTER_MAX:
            continue
        lo, hi = max(0, c[0] - PAD), min(total, c[-1] + PAD)
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], hi)
        else:
            windows.append((lo, hi))
    zoomed = sum(hi - lo for lo, hi in windows)
    if not windows or zoomed >= total:
        return linear
    rate = min(ZOOM_RATE, ZOOM_SHARE * width / zoomed)
    coarse = (width - rate * zoomed) / (total - zoomed)
    if rate < 1.5 * coarse:
        return linear
    knots: list[tuple[float, float]] = [(0, x0)]
    x, at = x0, 0
    for lo, hi in windows:
        if lo > at:
            x += (lo - at) * coarse
            knots.append((lo, x))
        x += (hi - lo) * rate
        knots.append((hi, x))
        at = hi
    if at < total:
        knots.append((total, x0 + width))
    else:
        knots[-1] = (total, x0 + width)
    return Axis(knots=tuple(knots), zooms=tuple(windows), rates=(coarse, rate))
