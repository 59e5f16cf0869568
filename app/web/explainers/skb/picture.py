"""The sk_buff picture: each head buffer on a byte axis, with every skb's head/data/tail/end.

What it shows, per step:
- header bytes (Ethernet, IP, TCP, ...) in the header colour, labelled; payload in green;
- bytes before ``data`` or after ``tail`` of every live skb dimmed and hatched, still visible;
- a pointer that moved this step: a dashed ghost at its old offset, an arrow and "+14 bytes";
- a byte axis that zooms (with break marks and labelled offsets) where pointers make small
  moves, so a 14-byte pull is tens of pixels next to a 2 KiB buffer;
- labels placed by :class:`~app.web.explainers.skb.layout.Placer`, so no two overlap.

Element ids are stable across frames (``ptr-<skb>-<pointer>``, ``bar-<buffer>``,
``lane-<skb>``) and geometry lives in inline CSS (``transform``, ``x``, ``width``) so that a
morphing swap lets CSS transitions glide pointers and regions to their new places.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from app.sim.core import Frame, Message, msg
from app.sim.core.i18n import reader_gettext
from app.sim.skbuff.skb import SHINFO
from app.sim.skbuff.state import BufferView, SkbSnapshot, SkbState, SkbTrace
from app.web.explainers.skb.headers import shown
from app.web.explainers.skb.layout import ASCENT, Axis, text_box, text_width
from app.web.explainers.skb.scene import (
    BAR_H,
    FS,
    POINTERS,
    ROW,
    WIDTH,
    X0,
    X1,
    BarLayout,
    LaneLayout,
    SceneMemo,
    geometry,
    row_y,
)
from app.web.explainers.skb.style import css
from app.web.memo import Memo
from app.web.svgtext import attr

# X0 is the byte axis's left edge, which the path explainer lines its own picture up with.
__all__ = [
    "X0",
    "Drawing",
    "alloc_name",
    "drawing",
    "legend_items",
    "legend_swatch",
    "picture",
    "svg_open",
    "title",
]

LEFT_W = X0 - 18  # width of the skb box in the left column
FS_NAME = 14
PAGE = 4096
PAGE_W = 150


def _text(
    x: float,
    y: float,
    text: str,
    *,
    cls: str = "",
    anchor: str = "start",
    fs: int = FS,
    extra: str = "",
) -> str:
    c = f' class="{cls}"' if cls else ""
    return (
        f'<text{c} x="{x:.1f}" y="{y:.1f}" font-size="{fs}" text-anchor="{anchor}"{extra}>'
        f"{escape(text)}</text>"
    )


def _fit(text: str, width: float, fs: int) -> str:
    """``text`` cut with an ellipsis to fit ``width`` px."""
    if text_width(text, fs) <= width:
        return text
    while text and text_width(text + "…", fs) > width:
        text = text[:-1]
    return text + "…"


# --------------------------------------------------------------------------- drawing


@dataclass(frozen=True, slots=True)
class Drawing:
    """The picture of one step, in the pieces a picture that holds it (the packet path's)
    reassembles: everything but the root element's title, which names the step."""

    height: float  # the viewBox's height, before rounding
    knots: str  # the primary skb's byte axis, "offset:x offset:x ..."
    body: str  # the style, the defs and everything drawn above the legend
    legend_y: float  # where the legend starts
    legend: str


def title(index: int, op: str) -> str:
    """The root element's label (escaped for the attribute)."""
    return escape(str(msg("sk_buff step {n}: {op}", n=index, op=op)), quote=True)


def picture(trace: SkbTrace, frame: Frame[SkbState]) -> str:
    d = drawing(trace, frame)
    return svg_open(d, title(frame.index, frame.op)) + d.body + d.legend + "</svg>"


def svg_open(d: Drawing, label: str, width: float = WIDTH, height: str | None = None) -> str:
    """The root element's start tag (its viewBox ``width`` wide and ``height`` high: the
    drawing's own by default)."""
    return (
        f'<svg id="skb-svg" class="skb-svg" '
        f'viewBox="0 0 {width} {f"{d.height:.0f}" if height is None else height}" role="img" '
        f'aria-label="{label}" data-x0="{X0}" data-axis="{d.knots}" '
        'xmlns="http://www.w3.org/2000/svg">'
    )


def drawing(
    trace: SkbTrace, frame: Frame[SkbState], *, draw: bool = True, scenes: SceneMemo | None = None
) -> Drawing:
    """Everything of ``frame``'s picture but its title; with ``draw`` false only where things
    go (the lanes, bars and captions are not written: ``body`` lacks them). ``scenes``: see
    :func:`~app.web.explainers.skb.scene.geometry`."""
    geo = geometry(trace, scenes)
    scene = geo.scene(trace, frame)
    state = frame.state
    primary = state.get("primary")
    buffers: Mapping[str, BufferView] = state.get("buffers", {})
    out: list[str] = []
    y = 8.0
    if frame.mark == "panic":
        text = str(msg("BUG: {result} — the kernel stops here", result=frame.result))
        out.append(
            f'<g id="panic-banner" class="panic-banner"><rect x="0" y="{y}" width="{WIDTH}" '
            f'height="30" rx="4"/>'
            + _text(WIDTH / 2, y + 20, text, cls="bold", anchor="middle", fs=14)
            + "</g>"
        )
        y += 40
    names = {str(s.get("name")) for s in state.get("skbs", ())}
    segments: list[SkbSnapshot] = []
    for buf, lanes, bar in scene.groups:
        if all(_is_segment(str(lane.skb.get("name")), names) for lane in lanes):
            segments += [lane.skb for lane in lanes]
            continue
        for lane in lanes:
            name = str(lane.skb.get("name"))
            ptr_rows = max(geo.rows.get(("ptr", name), 1), 1)
            move_rows = geo.rows.get(("move", name), 0)
            h = _lane_height(ptr_rows, move_rows, len(_meta(lane.skb)))
            if draw:
                out.append(_lane(lane, y, h, ptr_rows, bar.axis, is_primary=name == primary))
            y += h
        info = buffers.get(buf)
        if draw:
            out.append(_bar(bar, info, lanes, y))
        below_rows = max(geo.rows.get(("below", buf), 1), 1)
        y += BAR_H + 4 + below_rows * ROW + 2
        if draw:
            out.append(_caption(buf, info, lanes, y))
        y += ROW + 6
        for lane in lanes:
            if lane.skb.get("frags") or lane.skb.get("frag_list"):
                row, height = _frags(lane.skb, y)
                out.append(row)
                y += height
        y += 8
    if segments:
        seg_rows, seg_h = _segments(segments, y)
        out.append(seg_rows)
        y += seg_h
    sock_rows, sock_h = _socket(state, y)
    out.append(sock_rows)
    y += sock_h
    y = max(y, 60)
    legend_y = y
    legend, legend_h = _legend(y)
    y += legend_h + 6
    # The primary skb's byte axis (offset:x knots), for pictures that draw over this one.
    axis = next(
        (
            bar.axis
            for _, lanes, bar in scene.groups
            if any(str(lane.skb.get("name")) == primary for lane in lanes)
        ),
        scene.groups[0][2].axis if scene.groups else None,
    )
    knots = " ".join(f"{o:g}:{x:g}" for o, x in axis.knots) if axis else ""
    if not draw:
        return Drawing(height=y, knots=knots, body="", legend_y=legend_y, legend="")
    body = (
        f"<style>{css()}</style>"
        '<defs><pattern id="skb-hatch" width="7" height="7" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line class="hatch-line" x1="0" y1="0" x2="0" y2="7"/>'
        "</pattern></defs>" + "".join(out)
    )
    return Drawing(height=y, knots=knots, body=body, legend_y=legend_y, legend=legend)


def _is_segment(name: str, names: set[str]) -> bool:
    """skb_segment names its new skbs ``<gso skb>_s<k>``."""
    m = re.fullmatch(r"(.+)_s\d+", name)
    return m is not None and m.group(1) in names


def _segments(skbs: Sequence[SkbSnapshot], y: float) -> tuple[str, float]:
    """The skbs skb_segment made, one line each (their heads are alike: a copy of the headers
    and one frag into the GSO skb's page), so that many segments keep the picture readable."""
    parts = [f'<g id="segments" transform="translate(0 {y:.1f})">']
    parts.append(_text(12, 14, str(msg("Segments made by skb_segment:")), cls="bold", fs=FS_NAME))
    for i, skb in enumerate(skbs):
        frags = list(skb.get("frags") or ())
        frag = frags[0] if frags else None
        line = msg(
            "{name}: head {buffer} with {headlen} header bytes, users {users}; frag page {page} +{offset}, {size} bytes (a page reference, not a copy)",
            name=str(skb.get("name")),
            buffer=str(skb.get("buffer")),
            headlen=int(skb.get("headlen", 0)),
            users=int(skb.get("users", 0)),
            page=str(frag.get("page")) if frag else "-",
            offset=int(frag.get("offset", 0)) if frag else 0,
            size=int(frag.get("size", 0)) if frag else 0,
        )
        name = attr(str(skb.get("name")))
        parts.append(
            f'<g id="lane-{name}" class="seg-line">'
            + _text(12, 14 + (i + 1) * ROW, _fit(str(line), WIDTH - 20, FS))
            + "</g>"
        )
    parts.append("</g>")
    return "".join(parts), (len(skbs) + 1) * ROW + 12


def _socket(state: SkbState, y: float) -> tuple[str, float]:
    """What the sending socket holds outside any skb: each MSG_ZEROCOPY ubuf_info with its
    reference count, and the completions queued on sk_error_queue."""
    lines = [
        str(
            msg(
                "{uarg}: MSG_ZEROCOPY ids {lo}..{hi}, refcnt {refcnt}",
                uarg=u["name"],
                lo=u["id"],
                hi=u["id"] + u["len"] - 1,
                refcnt=u["refcnt"],
            )
        )
        for u in state.get("uargs", ())
    ]
    queued = list(state.get("errqueue", ()))
    if queued:
        lines.append(str(msg("sk_error_queue: {items}", items=", ".join(queued))))
    if not lines:
        return "", 0
    parts = [f'<g id="socket" transform="translate(0 {y:.1f})">']
    for i, line in enumerate(lines):
        parts.append(_text(X0, 14 + i * ROW, _fit(line, X1 - X0, FS), cls="sock-line"))
    parts.append("</g>")
    return "".join(parts), len(lines) * ROW + 10


def _lane_height(ptr_rows: int, move_rows: int, meta_lines: int = 3) -> float:
    return max(8 + ptr_rows * ROW + move_rows * ROW + 12, 80, 38 + 16 * meta_lines)


def _lane(
    lane: LaneLayout, y: float, h: float, ptr_rows: int, axis: Axis, *, is_primary: bool
) -> str:
    skb = lane.skb
    name = str(skb.get("name"))
    status = str(skb.get("status", "live"))
    gone = status != "live"
    cls = "lane glide" + (" primary" if is_primary else "") + (" gone" if gone else "")
    lines = _meta(skb)
    parts = [
        f'<g id="lane-{attr(name)}" class="{cls}" style="transform: translate(0px, {y:.1f}px)" '
        f'data-skb="{attr(name)}" data-status="{attr(status)}">',
        f'<rect class="skb-struct" x="4" y="4" width="{LEFT_W}" height="{h - 6:.0f}" rx="4"/>',
        _text(12, 21, _fit(name, LEFT_W - 14, FS_NAME), cls="skb-name bold", fs=FS_NAME),
    ]
    for i, line in enumerate(lines):
        parts.append(_text(12, 38 + i * 16, _fit(line, LEFT_W - 14, FS), cls="skb-meta"))
    band_top = 8 + ptr_rows * ROW  # the move band sits under the pointer label rows
    for ptr, gx in lane.ghosts:
        parts.append(
            f'<line id="ghost-{attr(name)}-{ptr}" class="ghost ghost-{ptr}" x1="{gx}" y1="6" '
            f'x2="{gx}" y2="{h}"/>'
        )
    for k, mv in enumerate(lane.moves):
        my = band_top + row_y(mv.row)
        tip = 1 if mv.x_new > mv.x_old else -1
        parts.append(
            f'<g id="move-{attr(name)}-{k}" class="move" data-from="{mv.old}" data-to="{mv.new}" '
            f'data-pointers="{" ".join(mv.pointers)}">'
            f'<line x1="{mv.x_old}" y1="{my - 4:.1f}" x2="{mv.x_new - tip * 6:.2f}" y2="{my - 4:.1f}"/>'
            f'<path d="M {mv.x_new} {my - 4:.1f} L {mv.x_new - tip * 7:.2f} {my - 8.5:.1f} '
            f'L {mv.x_new - tip * 7:.2f} {my + 0.5:.1f} Z"/>'
            + _text(mv.label.x, my, mv.label.text, cls="move-label halo", anchor=mv.label.anchor)
            + "</g>"
        )
    moved = {p for mv in lane.moves for p in mv.pointers}
    for ptr in POINTERS:
        off = int(skb.get(ptr, 0))
        x = axis.x(off)
        label = lane.pointer_labels[ptr]
        ly = row_y(label.row) + 4
        focus = ' data-focus="1"' if is_primary and ptr == "data" else ""
        rel = label.x - x
        chip = ""
        if ptr in moved:
            box = text_box(rel, ly, label.text, FS, label.anchor)
            chip = (
                f'<rect class="chip" x="{box.x0 - 2:.1f}" y="{box.y0 - 1:.1f}" '
                f'width="{box.x1 - box.x0 + 4:.1f}" height="{box.y1 - box.y0 + 2:.1f}" rx="3"/>'
            )
        parts.append(
            f'<g id="ptr-{attr(name)}-{ptr}" class="ptr glide ptr-{ptr}'
            f'{" moved" if ptr in moved else ""}" data-ptr="{ptr}" data-skb="{attr(name)}" '
            f'data-offset="{off}" style="transform: translate({x}px, 0px)"{focus}>'
            f'<line x1="0" y1="{ly - ASCENT * FS:.1f}" x2="0" y2="{h}"/>'
            f'<path d="M -4.5 {h - 7} L 4.5 {h - 7} L 0 {h} Z"/>'
            + chip
            + _text(
                rel,
                ly,
                label.text,
                cls="ptr-label bold" + ("" if chip else " halo"),
                anchor=label.anchor,
            )
            + "</g>"
        )
    parts.append("</g>")
    return "".join(parts)


def _meta(skb: SkbSnapshot) -> list[str]:
    """The lines under an skb's name: its status when gone, users, fclone, the ubuf_info its
    data points to and its dst reference."""
    status = str(skb.get("status", "live"))
    lines = [
        str(msg("users {n}", n=skb.get("users", 1))),
        str(msg("fclone {kind}", kind=_fclone(skb.get("fclone")))),
    ]
    if status != "live":
        word = STATUS_WORD.get(status)
        lines.insert(0, f"({word if word else status})")
    uarg = skb.get("uarg")
    if uarg:
        lines.append(f"uarg {uarg['name']}")
    if skb.get("pp_recycle"):
        lines.append("pp_recycle")
    dst = skb.get("dst")
    if dst:
        lines.append(str(msg("dst {kind}", kind=dst)))
    return lines


def _bar(bar: BarLayout, info: BufferView | None, lanes: Sequence[LaneLayout], y: float) -> str:
    buf, axis = bar.buf, bar.axis
    total = int(axis.knots[-1][0])
    end = total - SHINFO
    freed = bool(info and info.get("freed"))
    cls = "bar glide" + (" freed" if freed else "")
    x_end, x_total = axis.x(end), axis.x(total)
    parts = [
        f'<g id="bar-{attr(buf)}" class="{cls}" style="transform: translate(0px, {y:.1f}px)" '
        f'data-buffer="{attr(buf)}" data-end="{end}">',
        _text(12, 18, _fit(buf, LEFT_W - 14, FS_NAME), cls="bold", fs=FS_NAME),
        _text(12, 35, _fit(str(msg("{n} bytes", n=total)), LEFT_W - 14, FS)),
    ]
    for lo, hi in axis.zooms:
        parts.append(
            f'<rect class="zoom-band" x="{axis.x(lo)}" y="{BAR_H}" width="{axis.x(hi) - axis.x(lo):.2f}" '
            f'height="6"/>'
        )
    parts.append(
        f'<rect id="bar-{attr(buf)}-free" class="seg free" style="x: {axis.x(0)}px; '
        f'width: {x_end - axis.x(0):.2f}px" y="0" height="{BAR_H}"/>'
    )
    for p, inside, lit in bar.pieces:
        x0, x1 = axis.x(p.start), axis.x(p.end)
        pid = f"bar-{attr(buf)}-r{p.start}"
        state = "in" if inside else "out"
        hint = msg("{label}: bytes {start}–{end}", label=shown(p.label), start=p.start, end=p.end)
        parts.append(
            f'<rect id="{pid}" class="seg {p.kind} {state}{" lit" if lit else ""}" '
            f'data-start="{p.start}" data-end="{p.end}" data-label="{attr(p.label)}" '
            f'style="x: {x0}px; width: {x1 - x0:.2f}px" y="0" height="{BAR_H}">'
            f"<title>{escape(str(hint))}</title></rect>"
        )
        if not inside:
            parts.append(
                f'<rect id="{pid}-hatch" class="seg hatch" style="x: {x0}px; width: {x1 - x0:.2f}px" '
                f'y="0" height="{BAR_H}"/>'
            )
    shinfo = msg("struct skb_shared_info, {n} bytes", n=SHINFO)
    parts.append(
        f'<rect id="bar-{attr(buf)}-shinfo" class="seg shinfo" style="x: {x_end}px; '
        f'width: {x_total - x_end:.2f}px" y="0" height="{BAR_H}">'
        f"<title>{escape(str(shinfo))}</title></rect>"
    )
    if bar.shinfo_label:
        parts.append(
            _text(
                (x_end + x_total) / 2,
                BAR_H / 2 + 4.5,
                "shinfo",
                cls="ink seg-label",
                anchor="middle",
            )
        )
    for p, text, cx, bright in bar.inside_labels:
        cls_t = "seg-label " + ("ink" if bright and not freed else "halo")
        parts.append(
            _text(
                cx,
                BAR_H / 2 + 4.5,
                text,
                cls=cls_t,
                anchor="middle",
                extra=f' data-kind="{p.kind}"',
            )
        )
    # the axis: offsets at the zoom edges, break marks where the scale changes
    top = BAR_H + 4
    parts.append(f'<line class="axis" x1="{axis.x(0)}" y1="{BAR_H}" x2="{x_total}" y2="{BAR_H}"/>')
    for x, off in bar.ticks:
        parts.append(
            f'<line class="tick" data-offset="{off}" x1="{x}" y1="{BAR_H}" x2="{x}" y2="{BAR_H + 5}"/>'
        )
    for off in axis.breaks:
        x = axis.x(off)
        parts.append(
            f'<g class="axis-break" data-offset="{off}">'
            f'<line class="break-gap" x1="{x - 3}" y1="{BAR_H + 8}" x2="{x + 3}" y2="{BAR_H - 8}"/>'
            f'<path class="break" d="M {x - 6} {BAR_H + 8} L {x} {BAR_H - 8} M {x} {BAR_H + 8} '
            f'L {x + 6} {BAR_H - 8}"/></g>'
        )
    for label, anchor_x in bar.below:
        ly = top + row_y(label.row)
        if anchor_x is not None:
            cls_l = "offmark" if label.cls == "off-label" else "leader"
            parts.append(
                f'<line class="{cls_l}" x1="{anchor_x}" y1="{BAR_H + 1}" x2="{anchor_x}" '
                f'y2="{ly - ASCENT * FS - 1:.1f}"/>'
            )
        parts.append(_text(label.x, ly, label.text, cls=f"{label.cls} halo", anchor=label.anchor))
    parts.append("</g>")
    return "".join(parts)


def _caption(buf: str, info: BufferView | None, lanes: Sequence[LaneLayout], y: float) -> str:
    live = [ln.skb for ln in lanes if ln.skb.get("status", "live") == "live"] or [
        ln.skb for ln in lanes
    ]
    first = live[0]
    size = int(first.get("end", 0)) + SHINFO
    total = info.get("size", size) if info else size
    dataref = info.get("dataref", first.get("dataref", 1)) if info else first.get("dataref", 1)
    text = str(
        msg(
            "{buffer} · {alloc} · {size} B · dataref {dataref}",
            buffer=buf,
            alloc=alloc_name(str(first.get("alloc", ""))),
            size=int(total),
            dataref=int(dataref),
        )
    )
    if info and info.get("freed"):
        text += " · " + str(msg("freed"))
    return _text(X0, y + 12, _fit(text, X1 - X0, FS), cls="bar-caption")


def _frags(skb: SkbSnapshot, y: float) -> tuple[str, int]:
    name = attr(skb.get("name"))
    frags = list(skb.get("frags", ()))
    parts = [
        f'<g id="frags-{name}" class="frags glide" style="transform: translate(0px, {y:.1f}px)">'
    ]
    if frags:
        caption = _fit(f"{skb.get('name')} frags[{len(frags)}]", LEFT_W, FS)
        parts.append(_text(12, 18, caption, cls="frags-caption"))
    fx, fy, height = float(X0), 0.0, 0.0
    for i, frag in enumerate(frags):
        off, size = int(frag.get("offset", 0)), int(frag.get("size", 0))
        refs = f" · refs {frag['refs']}" if frag.get("refs") else ""
        text = f"{frag.get('page', 'page')} +{off} · {size} B{refs}"
        cell = max(PAGE_W, text_width(text, FS) + 4) + 18
        if fx > X0 and fx + cell > X1:
            fx, fy = float(X0), fy + 50
        scale = PAGE_W / PAGE
        parts.append(
            f'<g id="frag-{name}-{i}" class="frag" data-size="{size}">'
            f'<rect class="page" x="{fx}" y="{fy + 2}" width="{PAGE_W}" height="24"/>'
            f'<rect class="seg payload in" x="{fx + off * scale:.2f}" y="{fy + 2}" '
            f'width="{max(min(size, PAGE - off), 0) * scale:.2f}" height="24"/>'
            + _text(fx, fy + 43, text, cls="frag-label")
            + "</g>"
        )
        fx += cell
        height = fy + 50
    flist = list(skb.get("frag_list", ()))
    if flist:
        fy = height
        caption = _fit(f"{skb.get('name')} frag_list", LEFT_W, FS)
        parts.append(_text(12, fy + 21, caption, cls="frags-caption"))
        fx = float(X0)
        for other in flist:
            text = f"→ {other}"
            w = text_width(text, FS) + 16
            if fx > X0 and fx + w > X1:
                fx, fy = float(X0), fy + 32
            parts.append(
                f'<g class="fraglist-item"><rect class="skb-struct" x="{fx}" y="{fy + 4}" '
                f'width="{w:.1f}" height="24" rx="4"/>' + _text(fx + 8, fy + 21, text) + "</g>"
            )
            fx += w + 14
        height = fy + 34
    parts.append("</g>")
    return "".join(parts), int(height) + 8


def legend_items() -> list[tuple[str, str]]:
    """The colour key of an sk_buff picture: (CSS class of the swatch, label)."""
    return [
        ("seg free", str(msg("unwritten"))),
        ("seg header in", str(msg("header"))),
        ("seg payload in", str(msg("payload"))),
        ("seg shinfo", "skb_shared_info"),
        ("seg payload out", str(msg("outside data..tail"))),
        ("ghost", str(msg("old position"))),
        ("break", str(msg("axis break: zoomed bytes"))),
    ]


def legend_swatch(cls: str, x: float, ty: float) -> str:
    """The 14-px swatch of one legend item whose row starts at ``ty``."""
    if cls == "ghost":
        return f'<line class="ghost ghost-data" x1="{x + 7}" y1="{ty + 2}" x2="{x + 7}" y2="{ty + 16}"/>'
    if cls == "break":
        return (
            f'<path class="break" d="M {x + 1} {ty + 16} L {x + 7} {ty + 2} M {x + 7} {ty + 16} '
            f'L {x + 13} {ty + 2}"/>'
        )
    box = f'<rect class="{cls}" x="{x}" y="{ty + 2}" width="14" height="14"/>'
    if cls.endswith(" out"):
        box += f'<rect class="seg hatch" x="{x}" y="{ty + 2}" width="14" height="14"/>'
    return box


def _fclone(kind: object) -> str | Message:
    """The fclone kind as the simulation names it (orig, clone, unavailable); "none" in words."""
    return msg("none") if kind in (None, "", "none") else str(kind)


# How an sk_buff that is gone says so under its name.
STATUS_WORD = {
    "freed": msg("freed"),
    "consumed": msg("consumed"),
    "dropped": msg("dropped"),
    "in_frag_list": msg("in frag_list"),
}


_LEGENDS: Memo[tuple[float, object], tuple[str, float]] = Memo(64)


def _legend(y: float) -> tuple[str, float]:
    """The colour key at ``y`` and its height (remembered per y and language)."""
    key = (y, reader_gettext.get())
    hit = _LEGENDS.get(key)
    if hit is None:
        hit = _draw_legend(y)
        _LEGENDS.put(key, hit)
    return hit


def _draw_legend(y: float) -> tuple[str, float]:
    parts = [f'<g class="legend" style="transform: translate(0px, {y:.1f}px)">']
    x, row = float(X0), 0
    for cls, label in legend_items():
        w = 22 + text_width(label, FS) + 22
        if x > X0 and x + w > X1:
            x, row = float(X0), row + 1
        ty = row * ROW
        parts.append(legend_swatch(cls, x, ty))
        parts.append(_text(x + 20, ty + 14, label))
        x += w
    parts.append("</g>")
    return "".join(parts), (row + 1) * ROW


# Where a data buffer came from, in the reader's words; cache names (skbuff_small_head,
# kmalloc-2k, page_frag) are identifiers and stay as they are.
_ALLOC_WORDS = {
    "napi 1K frag": msg("napi 1K frag"),
    "driver page frag": msg("driver page frag"),
    "igb rx page (half, 2048 bytes)": msg("igb rx page (half, 2048 bytes)"),
}
_PAGES = re.compile(r"pages order (\d+)")


def alloc_name(where: str) -> str:
    """The allocator a buffer came from, translated where it is a description."""
    if where in _ALLOC_WORDS:
        return str(_ALLOC_WORDS[where])
    m = _PAGES.fullmatch(where)
    return str(msg("pages order {order}", order=int(m.group(1)))) if m else where
