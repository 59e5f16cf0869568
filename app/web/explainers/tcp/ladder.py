"""Part 2 of the TCP picture: a time-sequence (ladder) diagram of the most recent segments: lost
ones drawn broken, the step's segment highlighted, armed timers as bars beside the timelines.

What the frame state lacks is derived here once per trace (``index_trace``): the frame a segment
was sent and delivered in, and the frame a timer was armed in."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from app.sim.core import Frame, Trace, msg
from app.sim.tcp.state import SegmentState, TcpState
from app.web.explainers.tcp.common import (
    COLOUR,
    ENDPOINTS,
    WIDTH,
    dash,
    fmt_ms,
    kind_word,
    options_short,
    text_w,
    timer_rfc,
    who,
    window_text,
)
from app.web.svgtext import attr, esc

LAD_X0 = 452


LANE = {"client": 540.0, "server": 860.0}


LAD_TOP = 46


ROW = 46


WINDOW = 6


@dataclass(slots=True)
class TraceIndex:
    sent_at: dict[int, int]  # segment id -> frame index it was sent in
    delivered_at: dict[int, int]  # segment id -> frame index it arrived in
    segs: dict[int, SegmentState]
    order: list[int]  # segment ids in sending order
    armed_at: list[dict[tuple[str, int, str], int]]  # per frame: (ep, obj, timer) -> frame


_LOCK = threading.Lock()


_LAST: list[tuple[Trace[TcpState, None], TraceIndex]] = []


def index_trace(trace: Trace[TcpState, None]) -> TraceIndex:
    with _LOCK:
        for t, idx in _LAST:
            if t is trace:
                return idx
    sent_at: dict[int, int] = {}
    delivered_at: dict[int, int] = {}
    segs: dict[int, SegmentState] = {}
    order: list[int] = []
    armed_at: list[dict[tuple[str, int, str], int]] = []
    prev: dict[tuple[str, int, str], tuple[float, int]] = {}
    for fr in trace.frames:
        st: TcpState = fr.state
        seg = st["segment"]
        if seg is not None and seg["id"] not in sent_at:
            sent_at[seg["id"]] = fr.index
            segs[seg["id"]] = seg
            order.append(seg["id"])
        dlv = st["delivered"]
        if dlv is not None:
            delivered_at.setdefault(dlv["id"], fr.index)
        now: dict[tuple[str, int, str], tuple[float, int]] = {}
        for ep, e in st["endpoints"].items():
            for obj in e["linux"]:
                for tm in obj["timers"]:
                    key = (ep, obj["id"], tm["name"])
                    old = prev.get(key)
                    start = old[1] if old is not None and old[0] == tm["deadline_ms"] else fr.index
                    now[key] = (tm["deadline_ms"], start)
        armed_at.append({k: v[1] for k, v in now.items()})
        prev = now
    idx = TraceIndex(sent_at, delivered_at, segs, order, armed_at)
    with _LOCK:
        _LAST[:] = [(trace, idx)]
    return idx


def _seg_label(seg: SegmentState) -> str:
    flags = "+".join(seg["flags"]) or "-"
    text = f"{flags} seq={seg['seq']}"
    if "ACK" in seg["flags"]:
        text += f" ack={seg['ack']}"
    if seg["len"]:
        text += f" len={seg['len']}"
    return text


def draw_ladder(
    trace: Trace[TcpState, None], frame: Frame[TcpState], st: TcpState, idx: TraceIndex
) -> str:
    now_i = frame.index
    shown_ids = [s for s in idx.order if idx.sent_at[s] <= now_i]
    current = {s["id"] for s in (st["segment"], st["delivered"]) if s is not None}
    window = shown_ids[-WINDOW:]
    older = [s for s in current if s in shown_ids and s not in window]
    if older:  # keep the step's segment in view even when newer ones were sent since
        first = shown_ids.index(min(older))
        window = shown_ids[first : first + WINDOW]
    out = ['<g id="tcp-ladder" class="ladder">']
    for ep in ENDPOINTS:
        x = LANE[ep]
        out.append(
            f'<circle cx="{x - 30}" cy="16" r="6" style="fill: {COLOUR[ep]}"/>'
            f'<text class="title" x="{x - 20}" y="21">{esc(who(ep))}</text>'
            f'<line class="timeline" x1="{x}" y1="{LAD_TOP - 14}" x2="{x}" '
            f'y2="{LAD_TOP + WINDOW * ROW + 40}"/>'
        )
    if len(shown_ids) > len(window) and window and shown_ids[0] != window[0]:
        hidden = shown_ids.index(window[0])
        earlier = esc(str(msg("↑ {count} earlier", count=hidden)))
        # level with the endpoints' names: the first row's window and options are below it
        out.append(
            f'<text class="muted" x="{(LANE["client"] + LANE["server"]) / 2}" y="{LAD_TOP - 26}" '
            f'text-anchor="middle">{earlier}</text>'
        )
    last_row = -1
    for row, sid in enumerate(window):
        seg = idx.segs[sid]
        out.append(_seg(seg, row, st, idx, now_i, sid in current))
        last_row = row
    now_y = LAD_TOP + (last_row + 1) * ROW + 6
    now = str(msg("now {t}", t=fmt_ms(st["t_ms"])))
    out.append(
        f'<g id="tcp-now" class="glide" style="transform: translate(0px, {now_y}px)">'
        f'<line x1="{LAD_X0}" y1="0" x2="{WIDTH}" y2="0" style="stroke: var(--line); '
        'stroke-dasharray: 3 3"/>'
        f'<text class="muted" x="{LANE["client"] - 8}" y="14" text-anchor="end">'
        f"{esc(now)}</text>"
    )
    for ep in ENDPOINTS:
        out.append(_now_box(ep, st))
    out.append("</g>")
    out.append(_timer_bars(st, idx, window, now_i, now_y))
    out.append("</g>")
    return "".join(out)


def _row_y(row: int) -> float:
    return LAD_TOP + row * ROW


def _seg(seg: SegmentState, row: int, st: TcpState, idx: TraceIndex, now_i: int, now: bool) -> str:
    sid = seg["id"]
    src, dst = seg["src"], seg["dst"]
    x1, x2 = LANE[src], LANE[dst]
    dy = 26.0
    delivered = idx.delivered_at.get(sid)
    state = (
        "lost"
        if seg["lost"]
        else ("arrived" if delivered is not None and delivered <= now_i else "flight")
    )
    cls = f"seg {state} from-{src}" + (" now" if now else "")
    head = f"url(#tcp-head-{src})" if now else "url(#tcp-head-muted)"
    parts = [
        f'<g id="tcp-seg-{sid}" class="{cls} glide" style="transform: translate(0px, '
        f'{_row_y(row)}px)" data-seg="{sid}" data-kind="{attr(seg["kind"])}"'
        + (' data-focus="1"' if now and not st["transitions"] else "")
        + ">"
    ]
    if state == "lost":
        f = 0.55
        xm, ym = x1 + (x2 - x1) * f, dy * f
        parts.append(f'<line x1="{x1}" y1="0" x2="{xm:.1f}" y2="{ym:.1f}"/>')
        parts.append(
            f'<path class="cross" d="M{xm - 7:.1f} {ym - 7:.1f} L{xm + 7:.1f} {ym + 7:.1f} '
            f'M{xm - 7:.1f} {ym + 7:.1f} L{xm + 7:.1f} {ym - 7:.1f}"/>'
        )
    elif state == "flight":
        sent, arrive = seg["sent_ms"], seg["arrive_ms"] or seg["sent_ms"]
        span = max(arrive - sent, 1e-9)
        f = min(max((st["t_ms"] - sent) / span, 0.2), 0.8)
        xm, ym = x1 + (x2 - x1) * f, dy * f
        parts.append(f'<line x1="{x1}" y1="0" x2="{xm:.1f}" y2="{ym:.1f}" marker-end="{head}"/>')
        parts.append(f'<line class="rest" x1="{xm:.1f}" y1="{ym:.1f}" x2="{x2}" y2="{dy}"/>')
    else:
        parts.append(f'<line x1="{x1}" y1="0" x2="{x2}" y2="{dy}" marker-end="{head}"/>')
    label = _seg_label(seg)
    lx = (x1 + x2) / 2
    w = text_w(label) + 8
    parts.append(
        f'<rect class="lbl-bg" x="{lx - w / 2:.1f}" y="-2" width="{w:.1f}" height="15"/>'
        f'<text class="lbl mono" x="{lx:.1f}" y="9" text-anchor="middle">{esc(label)}</text>'
    )
    # above it, between this arrow and the one before: the window as the wire carries it
    # (and the bytes it means once scaled) and the options, compactly
    win = "win " + window_text(seg["window"], seg["window_scaled"])
    sub = " · ".join(t for t in (win, options_short(seg["options"], seg["ack"])) if t)
    sw = text_w(sub) + 8
    parts.append(
        f'<rect class="lbl-bg" x="{lx - sw / 2:.1f}" y="-17" width="{sw:.1f}" height="15"/>'
        f'<text class="muted mono opts" x="{lx:.1f}" y="-6" text-anchor="middle">{esc(sub)}</text>'
    )
    note = {"lost": str(msg("lost")), "flight": str(msg("in flight"))}.get(state, "")
    kind = kind_word(seg["kind"])
    side = f"{fmt_ms(seg['sent_ms'])}"
    parts.append(
        f'<text class="muted" x="{x1 + (-8 if src == "client" else 8)}" y="4" '
        f'text-anchor="{"end" if src == "client" else "start"}">{esc(side)}</text>'
    )
    plain = seg["kind"] in ("syn", "synack", "ack", "fin", "data", "rst")
    tag = " · ".join(t for t in ("" if plain else kind, note) if t)
    if tag:  # under the start of the arrow, clear of its label and of the next row
        tx, anchor = (x1 + 10, "start") if src == "client" else (x1 - 10, "end")
        parts.append(
            f'<text class="muted" x="{tx:.1f}" y="{dy}" text-anchor="{anchor}">{esc(tag)}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _now_box(ep: str, st: TcpState) -> str:
    e = st["endpoints"][ep]
    x = LANE[ep]
    parts = []
    rfc = dash(e["rfc"])
    kern = " ".join(o["state"] for o in e["linux"]) or "—"
    w_r = len(rfc) * 7.6 + 12
    w_l = min(len(kern) * 7.2 + 12, 300)
    anchor_x = x - 8 if ep == "client" else x + 8
    for cls, text, w in (("tcp-rfc-only", rfc, w_r), ("tcp-linux-only", kern, w_l)):
        bx = min(anchor_x, WIDTH - w - 2) if ep == "server" else anchor_x - w
        if ep == "client":
            bx = max(bx, LAD_X0)
        parts.append(
            f'<g class="{cls}"><rect x="{bx:.1f}" y="20" width="{w:.1f}" height="18" rx="4" '
            f'style="fill: var(--bg); stroke: {COLOUR[ep]}; stroke-width: 2"/>'
            f'<text class="mono" x="{bx + 6:.1f}" y="33">{esc(text)}</text></g>'
        )
    call = st["call"]
    if call is not None and call["endpoint"] == ep and call["errno"]:
        text = f"{call['call']} → {call['errno']}"
        w = len(text) * 8.6 + 12
        focus = ' data-focus="1"' if not st["transitions"] else ""
        bx = anchor_x if ep == "server" else max(anchor_x - w, LAD_X0)
        if ep == "server":
            bx = min(bx, WIDTH - w - 2)
        parts.append(
            f'<g id="tcp-errno-{ep}" class="err errno"{focus}><rect x="{bx:.1f}" y="42" width="{w:.1f}" '
            f'height="20" rx="4"/><text x="{bx + 6:.1f}" y="56">{esc(text)}</text></g>'
        )
    elif call is not None and call["endpoint"] == ep and call["result"] == "blocked":
        text = str(msg("{call}() blocks", call=call["call"]))
        bx = anchor_x if ep == "server" else anchor_x - text_w(text, 7.0)
        parts.append(f'<text class="muted" x="{bx:.1f}" y="56">{esc(text)}</text>')
    return "".join(parts)


def _timer_bars(st: TcpState, idx: TraceIndex, window: list[int], now_i: int, now_y: float) -> str:
    """Armed timers as bars beside each timeline, from the row they were armed in to now."""
    out = []
    armed = idx.armed_at[now_i] if now_i < len(idx.armed_at) else {}
    for ep in ENDPOINTS:
        k = 0
        for o in st["endpoints"][ep]["linux"]:
            for tm in o["timers"]:
                start = armed.get((ep, o["id"], tm["name"]), now_i)
                rows = [r for r, sid in enumerate(window) if idx.sent_at[sid] <= start]
                y0 = _row_y(rows[-1]) if rows else LAD_TOP - 10
                if not window or (window and idx.sent_at[window[0]] > start):
                    y0 = LAD_TOP - 10
                x = LANE[ep] + (-10 - 7 * k if ep == "client" else 10 + 7 * k)
                h = max(now_y - y0, 6)
                out.append(
                    f'<rect id="tcp-timer-{ep}-{o["id"]}-{attr(tm["name"])}" class="timer" '
                    f'x="{x - 2.5:.1f}" y="{y0:.1f}" width="5" height="{h:.1f}" rx="2" '
                    f'style="fill: {COLOUR[ep]}; opacity: 0.75"><title>'
                    + esc(
                        str(
                            msg(
                                "{timer} timer fires at {t}",
                                timer=timer_rfc(tm["name"]),
                                t=fmt_ms(tm["deadline_ms"]),
                            )
                        )
                    )
                    + "</title></rect>"
                )
                k += 1
    return "".join(out)
