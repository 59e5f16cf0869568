"""The sk_buff picture's colour key on one row, under the packet-path picture's sk_buff."""

from __future__ import annotations

from html import escape

from app.web.explainers.path.geometry import LEGEND_ROW, WIDTH
from app.web.explainers.skb.layout import text_width
from app.web.explainers.skb.picture import legend_items, legend_swatch


def legend_row() -> str:
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
