"""The sk_buff picture: head buffers drawn to scale, with each skb's head/data/tail/end pointers.

Element ids are stable across frames (``ptr-<skb>-<pointer>``, ``bar-<buffer>``, ``lane-<skb>``)
and geometry lives in inline CSS (``transform``, ``x``, ``width``) so that a morphing swap lets
CSS transitions glide pointers and regions to their new places between steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from app.sim.core import Frame, Trace
from app.sim.skbuff.ops import SHINFO

WIDTH = 1000
X0 = 150  # left edge of the byte axis; the left margin holds lane labels
X1 = 975
LANE_H = 84
ROW = 18  # vertical spacing of the four pointer labels (room for the projector's larger type)
BAR_H = 40
PAGE = 4096
PAGE_W = 150  # width of one 4 KiB page box in the frags row
POINTERS = ("head", "data", "tail", "end")
PTR_COLOUR = {"head": "#0072B2", "data": "#009E73", "tail": "#E69F00", "end": "#CC79A7"}


def _scale(trace: Trace[Any, Any]) -> float:
    biggest = 1
    for frame in trace.frames:
        for skb in frame.state.get("skbs", ()):
            biggest = max(biggest, int(skb.get("end", 0)) + SHINFO)
    return (X1 - X0) / biggest


def _x(offset: float, sx: float) -> float:
    return round(X0 + offset * sx, 2)


def _attr(value: Any) -> str:
    return escape(str(value), quote=True)


def _buffers_in_order(skbs: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: list[str] = []
    for skb in skbs:
        buf = skb.get("buffer")
        if buf and buf not in seen:
            seen.append(buf)
    return seen


def picture(trace: Trace[Any, Any], frame: Frame[Any]) -> str:
    state = frame.state
    skbs: list[Mapping[str, Any]] = list(state.get("skbs", ()))
    buffers: Mapping[str, Mapping[str, Any]] = state.get("buffers", {})
    primary = state.get("primary")
    sx = _scale(trace)
    out: list[str] = []
    y = 8
    if frame.mark == "panic":
        out.append(
            f'<g id="panic-banner" class="panic-banner"><rect x="0" y="{y}" width="{WIDTH}" height="30" '
            f'rx="4"/><text x="{WIDTH / 2}" y="{y + 20}" text-anchor="middle">BUG: {_attr(frame.result)}'
            " — the kernel stops here</text></g>"
        )
        y += 40
    for buf in _buffers_in_order(skbs):
        owners = [s for s in skbs if s.get("buffer") == buf]
        info = buffers.get(buf, {})
        end = int(info.get("end", owners[0].get("end", 0)))
        freed = bool(info.get("freed"))
        for skb in owners:
            out.append(_lane(skb, y, sx, is_primary=skb.get("name") == primary))
            y += LANE_H
        out.append(_bar(buf, info, owners, end, freed, y, sx))
        y += BAR_H + 26
        for skb in owners:
            if skb.get("frags") or skb.get("frag_list"):
                row, height = _frags(skb, y)
                out.append(row)
                y += height
        y += 10
    y = max(y, 60)
    out.append(_legend(y))
    y += 30
    title = escape(f"sk_buff step {frame.index}: {frame.op}")
    return (
        f'<svg id="skb-svg" class="skb-svg" viewBox="0 0 {WIDTH} {y}" role="img" '
        f'aria-label="{title}" data-scale="{sx:.6f}" data-x0="{X0}" xmlns="http://www.w3.org/2000/svg">'
        '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eeeeee"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#bbbbbb" stroke-width="2"/></pattern></defs>'
        + "".join(out)
        + "</svg>"
    )


def _lane(skb: Mapping[str, Any], y: float, sx: float, *, is_primary: bool) -> str:
    name = str(skb.get("name"))
    status = str(skb.get("status", "live"))
    cls = "lane glide" + (" primary" if is_primary else "") + ("" if status == "live" else " gone")
    users = skb.get("users", 1)
    label = f"{name}" if status == "live" else f"{name} ({status})"
    parts = [
        f'<g id="lane-{_attr(name)}" class="{cls}" style="transform: translate(0px, {y}px)" '
        f'data-skb="{_attr(name)}" data-status="{_attr(status)}">',
        f'<rect class="skb-struct" x="4" y="4" width="{X0 - 14}" height="{LANE_H - 10}" rx="4"/>',
        f'<text class="skb-name" x="12" y="24">{escape(label)}</text>',
        f'<text class="skb-meta" x="12" y="42">users {_attr(users)}</text>',
        f'<text class="skb-meta" x="12" y="57">fclone {_attr(skb.get("fclone", "none"))}</text>',
    ]
    for row, ptr in enumerate(POINTERS):
        off = int(skb.get(ptr, 0))
        x = _x(off, sx)
        near_right = x > WIDTH - 100  # keep the label inside the picture
        # the player keeps the acting skb's data pointer in view on a narrow screen
        focus = ' data-focus="1"' if is_primary and ptr == "data" else ""
        parts.append(
            f'<g id="ptr-{_attr(name)}-{ptr}" class="ptr glide ptr-{ptr}" data-ptr="{ptr}" '
            f'data-skb="{_attr(name)}" data-offset="{off}" style="transform: translate({x}px, 0px)"{focus}>'
            f'<line x1="0" y1="{4 + row * ROW}" x2="0" y2="{LANE_H}" stroke="{PTR_COLOUR[ptr]}"/>'
            f'<path d="M -4 {LANE_H - 6} L 4 {LANE_H - 6} L 0 {LANE_H} Z" fill="{PTR_COLOUR[ptr]}"/>'
            f'<text class="ptr-label" x="{-4 if near_right else 4}" y="{15 + row * ROW}" '
            f'text-anchor="{"end" if near_right else "start"}" fill="{PTR_COLOUR[ptr]}">{ptr} {off}</text></g>'
        )
    parts.append("</g>")
    return "".join(parts)


def _bar(
    buf: str,
    info: Mapping[str, Any],
    owners: list[Mapping[str, Any]],
    end: int,
    freed: bool,
    y: float,
    sx: float,
) -> str:
    live = [s for s in owners if s.get("status", "live") == "live"] or owners
    first = live[0]
    tail = int(first.get("tail", 0))
    size = info.get("size", end + SHINFO)
    dataref = info.get("dataref", first.get("dataref", 1))
    cls = "bar glide" + (" freed" if freed else "")
    parts = [
        f'<g id="bar-{_attr(buf)}" class="{cls}" style="transform: translate(0px, {y}px)" '
        f'data-buffer="{_attr(buf)}" data-end="{end}">',
        f'<rect class="seg free" style="x: {_x(0, sx)}px; width: {round(end * sx, 2)}px" y="0" height="{BAR_H}"/>',
        f'<rect id="bar-{_attr(buf)}-tailroom" class="seg tailroom" '
        f'style="x: {_x(tail, sx)}px; width: {round(max(end - tail, 0) * sx, 2)}px" y="0" height="{BAR_H}"/>',
    ]
    # Bytes written through any skb on this buffer; bright where some live skb still covers
    # them with its data..tail, dim where they only linger in head- or tailroom.
    windows = [(int(o.get("data", 0)), int(o.get("tail", 0))) for o in live]
    regions: list[Mapping[str, Any]] = []
    for owner in owners:
        for reg in owner.get("regions", ()):
            if all(
                (r["start"], r["end"], r.get("label"))
                != (reg["start"], reg["end"], reg.get("label"))
                for r in regions
            ):
                regions.append(reg)
    for i, reg in enumerate(regions):
        start, stop = int(reg["start"]), int(reg["end"])
        inside = any(start < t and stop > d for d, t in windows)
        kind = "header" if reg.get("kind") == "header" else "payload"
        parts.append(
            f'<rect id="bar-{_attr(buf)}-reg{i}" class="seg {kind}{"" if inside else " stale"}" '
            f'style="x: {_x(start, sx)}px; width: {round(max(stop - start, 0) * sx, 2)}px" y="0" '
            f'height="{BAR_H}"><title>{escape(str(reg.get("label", "")))} bytes {start}–{stop}</title></rect>'
        )
        if (stop - start) * sx > 26:
            parts.append(
                f'<text class="seg-label" x="{(_x(start, sx) + _x(stop, sx)) / 2}" y="{BAR_H / 2 + 4}" '
                f'text-anchor="middle">{escape(str(reg.get("label", "")))}</text>'
            )
    parts.append(
        f'<rect class="seg shinfo" style="x: {_x(end, sx)}px; width: {round(SHINFO * sx, 2)}px" y="0" '
        f'height="{BAR_H}"><title>struct skb_shared_info, 320 bytes</title></rect>'
    )
    if SHINFO * sx > 40:
        parts.append(
            f'<text class="seg-label light" x="{_x(end + SHINFO / 2, sx)}" y="{BAR_H / 2 + 4}" '
            'text-anchor="middle">shinfo</text>'
        )
    alloc = first.get("alloc", "")
    caption = f"{buf} · {alloc} · {size} B · dataref {dataref}" + (" · freed" if freed else "")
    parts.append(f'<text class="bar-caption" x="{X0}" y="{BAR_H + 16}">{escape(caption)}</text>')
    parts.append(
        f'<text class="bar-axis" x="{X0 - 6}" y="{BAR_H / 2 + 4}" text-anchor="end">0</text>'
    )
    parts.append("</g>")
    return "".join(parts)


def _frags(skb: Mapping[str, Any], y: float) -> tuple[str, int]:
    name = _attr(skb.get("name"))
    frags = list(skb.get("frags", ()))
    per_row = 5
    rows = (len(frags) + per_row - 1) // per_row if frags else 0
    parts = [f'<g id="frags-{name}" class="frags glide" style="transform: translate(0px, {y}px)">']
    parts.append(f'<text class="frags-caption" x="12" y="16">{name} frags[{len(frags)}]</text>')
    for i, frag in enumerate(frags):
        col, row = i % per_row, i // per_row
        fx, fy = X0 + col * (PAGE_W + 14), row * 40
        off, size = int(frag.get("offset", 0)), int(frag.get("size", 0))
        scale = PAGE_W / PAGE
        refs = f" · refs {frag['refs']}" if frag.get("refs") else ""
        parts.append(
            f'<g id="frag-{name}-{i}" class="frag" data-size="{size}">'
            f'<rect class="page" x="{fx}" y="{fy}" width="{PAGE_W}" height="26"/>'
            f'<rect class="seg payload" x="{fx + off * scale:.2f}" y="{fy}" '
            f'width="{max(min(size, PAGE - off), 0) * scale:.2f}" height="26"/>'
            f'<text class="frag-label" x="{fx + 4}" y="{fy + 38}">{_attr(frag.get("page", "page"))} '
            f"+{off}, {size} B{refs}</text></g>"
        )
    height = max(rows * 44, 0) + 8
    flist = list(skb.get("frag_list", ()))
    if flist:
        fy = height
        parts.append(f'<text class="frags-caption" x="12" y="{fy + 18}">frag_list</text>')
        for i, other in enumerate(flist):
            fx = X0 + i * 130
            parts.append(
                f'<g class="fraglist-item"><rect class="skb-struct" x="{fx}" y="{fy + 2}" width="110" height="24" rx="4"/>'
                f'<text x="{fx + 8}" y="{fy + 19}">→ {_attr(other)}</text></g>'
            )
        height += 34
    parts.append("</g>")
    return "".join(parts), height + 6


def _legend(y: float) -> str:
    items = [
        ("free", "headroom / free"),
        ("header", "headers"),
        ("payload", "payload"),
        ("tailroom", "tailroom"),
        ("shinfo", "skb_shared_info"),
        ("stale", "bytes outside data..tail"),
    ]
    parts = [f'<g class="legend" transform="translate({X0} {y})">']
    x = 0
    for cls, label in items:
        parts.append(
            f'<rect class="seg {cls if cls != "stale" else "payload stale"}" x="{x}" y="2" width="14" height="14"/>'
            f'<text x="{x + 19}" y="14">{label}</text>'
        )
        x += 34 + round(len(label) * 8.6)  # room for the projector theme's larger type
    parts.append("</g>")
    return "".join(parts)
