"""Colours, patterns, the scoped stylesheet and the text layout shared by the scheduler's
picture and timeline.

Colours are the Okabe–Ito palette of static/css/app.css; every fill that carries text has a
text colour chosen for ≥ 4.5:1 contrast, so the pictures read the same in light and dark themes.
Text is laid out by its estimated width (:func:`text_width`), which counts a CJK character as a
full em: a legend or a heading in Chinese takes the room it needs, never the English width.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.web.svgtext import advance, attr

W = 960  # the picture's width in SVG units (one unit ≈ one pixel beside the narration at 1440×900)
PAD = 10

# Request colours (KV-cache owners, table swatches): (fill, text on it).
OWNER = (
    ("#0072B2", "#ffffff"),
    ("#E69F00", "#000000"),
    ("#CC79A7", "#000000"),
    ("#56B4E9", "#000000"),
    ("#F0E442", "#000000"),
    ("#009E73", "#000000"),
    ("#999999", "#000000"),
    ("#D55E00", "#000000"),
)
PREFILL = "#0072B2"
DECODE = "#009E73"
RECOMPUTE = "#E69F00"
PREEMPTED = "#D55E00"
WAITING = "#999999"
PURPLE = "#CC79A7"


def owner_colour(i: int) -> tuple[str, str]:
    return OWNER[i % len(OWNER)]


# Average advance of a Latin character of the sans-serif UI font, in ems (a little generous:
# an estimate that errs wide leaves a gap, one that errs narrow overlaps).
LATIN_EM = 0.58
MONO_EM = 0.61


def text_width(s: str, size: float = 13.0, *, mono: bool = False) -> float:
    """The rendered width of ``s`` at ``size`` px, estimated: wide and full-width characters
    (CJK, full-width punctuation) take one em, others ``LATIN_EM`` (``MONO_EM`` when mono)."""
    narrow = MONO_EM if mono else LATIN_EM
    return size * advance(s, narrow, 1.0)


def fit(s: str, room: float, size: float = 13.0, *, mono: bool = False) -> str:
    """``s`` cut (with "…") so that it fits in ``room`` px."""
    if text_width(s, size, mono=mono) <= room:
        return s
    while s and text_width(s + "…", size, mono=mono) > room:
        s = s[:-1]
    return s.rstrip() + "…"


def text(
    x: float, y: float, body: str, cls: str = "", anchor: str = "start", **extra: object
) -> str:
    """An SVG ``<text>``; ``extra`` keyword names become attributes (``_`` → ``-``)."""
    more = "".join(f' {k.replace("_", "-")}="{attr(v)}"' for k, v in extra.items())
    c = f' class="{cls}"' if cls else ""
    a = f' text-anchor="{anchor}"' if anchor != "start" else ""
    return f'<text x="{x:.1f}" y="{y:.1f}"{c}{a}{more}>{attr(body)}</text>'


Swatch = Callable[[float, float], str]  # draws a legend key at (x, baseline y)


def legend(
    items: Sequence[tuple[Swatch, str]],
    x0: float,
    y: float,
    right: float,
    *,
    key_w: float = 23.0,
    gap: float = 14.0,
    line_h: float = 18.0,
    cls: str = "",
) -> tuple[list[str], float, float]:
    """Legend items (key, label) left to right from ``x0``, wrapping to a new line (back at
    ``x0``) before one would pass ``right``. Returns the markup, the last line's baseline and
    the x where the next item would start."""
    out: list[str] = []
    x = x0
    for swatch, label in items:
        w = key_w + text_width(label)
        if x > x0 and x + w > right:
            x = x0
            y += line_h
        # one group per item: a browser test measures that no two items overlap
        out.append(f'<g class="legend-item">{swatch(x, y)}{text(x + key_w, y, label, cls)}</g>')
        x += w + gap
    return out, y, x


# Patterns: prefill hatched, recompute cross-hatched, cached-free blocks dotted. Each picture
# gets its own ids (prefix) so two SVGs on one page never share a definition by accident.
def defs(prefix: str) -> str:
    return (
        "<defs>"
        f'<pattern id="{prefix}-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)">'
        f'<rect width="6" height="6" fill="{PREFILL}"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2" stroke-opacity="0.55"/>'
        "</pattern>"
        f'<pattern id="{prefix}-cross" width="7" height="7" patternUnits="userSpaceOnUse">'
        f'<rect width="7" height="7" fill="{RECOMPUTE}"/>'
        '<path d="M0 0 L7 7 M7 0 L0 7" stroke="#000000" stroke-width="1" stroke-opacity="0.45"/>'
        "</pattern>"
        f'<pattern id="{prefix}-cached" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)">'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#999999" stroke-width="2"/>'
        "</pattern>"
        f'<pattern id="{prefix}-pwait" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(-45)">'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#D55E00" stroke-width="2.5"/>'
        "</pattern>"
        "</defs>"
    )


# Scoped to the root class; theme colours come from app.css's variables.
CSS = """
.sched-svg{font-family:var(--font);font-size:13px;fill:var(--fg)}
.sched-svg text{fill:var(--fg)}
.sched-svg .muted{fill:var(--muted)}
.sched-svg .title{font-weight:700;font-size:14px}
.sched-svg .mono{font-family:var(--mono)}
.sched-svg .cell{stroke:var(--bg);stroke-width:1}
.sched-svg .cell.free,.sched-svg .cell.cached{fill:var(--bg);stroke:var(--muted);stroke-width:1}
.sched-svg .cell.cached,.sched-svg .cell.cc{fill:url(#sp-cached)}
.sched-svg .cell.cu{fill:#0072B2}
.sched-svg .cell.cs{fill:#CC79A7}
.sched-svg .cell.cf{fill:var(--bg);stroke:var(--muted)}
.sched-svg .null{fill:var(--fg);opacity:0.75}
.sched-svg .nulltext{fill:var(--bg);font-weight:700}
.sched-svg .lit{stroke:var(--fg);stroke-width:3}
.sched-svg .halo{fill:var(--changed)}
.sched-svg .freed{fill:none;stroke:#D55E00;stroke-width:3;stroke-dasharray:4 3}
.sched-svg .seg{stroke:var(--bg);stroke-width:1}
.sched-svg .left{fill:var(--panel);stroke:var(--line)}
.sched-svg .row-preempted{fill:#D55E00;fill-opacity:0.22;stroke:#D55E00;stroke-width:2}
.sched-svg .row-finished{fill:#009E73;fill-opacity:0.20;stroke:#009E73;stroke-width:2}
.sched-svg .row-admitted{fill:#56B4E9;fill-opacity:0.18;stroke:#0072B2;stroke-width:1.5}
.sched-svg .row-blocked{fill:#E69F00;fill-opacity:0.18;stroke:#E69F00;stroke-width:2;stroke-dasharray:5 3}
.sched-svg .blocked{fill:none;stroke:#D55E00;stroke-width:2.5;stroke-dasharray:6 4}
.sched-svg .bar-bg{fill:var(--panel);stroke:var(--line)}
.sched-svg .cursor-col{fill:var(--changed);fill-opacity:0.45;stroke:var(--fg);stroke-width:1.5;transition:x var(--glide)}
.sched-svg .gridline{stroke:var(--line);stroke-width:1}
.sched-svg .line-a{fill:none;stroke:#0072B2;stroke-width:1.8}
.sched-svg .line-b{fill:none;stroke:#E69F00;stroke-width:1.8;stroke-dasharray:5 3}
.sched-svg .band-a{fill:#0072B2;fill-opacity:0.18}
.sched-svg .band-b{fill:#E69F00;fill-opacity:0.18}
.sched-svg rect,.sched-svg line{transition:x var(--glide),width var(--glide)}
"""


def style() -> str:
    return f"<style>{CSS}</style>"
