"""Part 3 of the TCP picture: a panel per endpoint (state, sequence variables, queues, timers;
changed values marked) and the segment on the wire decoded, with links to the explainers that go
deeper."""

from __future__ import annotations

from html import escape

from app.sim.core import Message, msg
from app.sim.tcp.state import EndpointState, TcpState
from app.web.explainers.tcp.common import (
    COLOUR,
    KERNEL,
    LINE,
    PANEL_Y,
    WIDTH,
    dash,
    fit,
    fmt_ms,
    kind_word,
    text_w,
    timer_rfc,
    who,
    window_text,
)
from app.web.svgtext import attr, esc

# The RFC 9293 variables and the ss(8) columns keep their own names; the rest are words.
_VARS: tuple[tuple[str, str | Message], ...] = (
    ("iss", "ISS"),
    ("irs", "IRS"),
    ("snd_una", "SND.UNA"),
    ("snd_nxt", "SND.NXT"),
    ("rcv_nxt", "RCV.NXT"),
    ("snd_wnd", "SND.WND"),
    ("rcv_wnd", "RCV.WND"),
    ("cwnd", "cwnd"),
    ("send_queue", "Send-Q"),
    ("unsent", msg("unsent")),
    ("recv_queue", "Recv-Q"),
    ("rto_ms", "RTO ms"),
)


_LISTEN_VARS: tuple[tuple[str, str | Message], ...] = (
    ("accept_queue", msg("accept q")),
    ("syn_queue", msg("SYN q")),
)


PANEL_W = 300


def _vars_for(e: EndpointState) -> list[tuple[str, str | Message]]:
    out = list(_VARS)
    if e["accept_queue"] or e["syn_queue"] or any(o["object"] == "listener" for o in e["linux"]):
        out += _LISTEN_VARS
    return out


def _timers(e: EndpointState, rfc: bool) -> list[str]:
    return [
        str(
            msg(
                "{timer} at {t}",
                timer=timer_rfc(tm["name"]) if rfc else tm["name"],
                t=fmt_ms(tm["deadline_ms"]),
            )
        )
        for o in e["linux"]
        for tm in o["timers"]
    ]


def draw_panel(
    ep: str, e: EndpointState, pe: EndpointState, st: TcpState, i: int
) -> tuple[str, float]:
    x0 = i * (PANEL_W + 10)
    out = [
        f'<g id="tcp-panel-{ep}" class="ep-panel" style="transform: translate({x0}px, '
        f'{PANEL_Y}px)">',
        "",  # the boxes (one per view), once their heights are known
        f'<circle cx="14" cy="16" r="6" style="fill: {COLOUR[ep]}"/>',
        f'<text class="title" x="26" y="21">{esc(who(ep))}</text>',
    ]
    sx = 32 + text_w(who(ep), 8.2, 15.0)
    changed = e["rfc"] != pe["rfc"]
    out.append(_value(sx, 21, dash(e["rfc"]), changed, "tcp-rfc-only", bold=True))
    kern = KERNEL.get(e["rfc"], "")
    out.append(_value(sx + len(dash(e["rfc"])) * 8.4 + 10, 21, kern, False, "tcp-rfc-only mono"))
    lin_states = " ".join(o["state"] for o in e["linux"]) or "—"
    pl = " ".join(o["state"] for o in pe["linux"]) or "—"
    out.append(_value(sx, 21, fit(lin_states, 31), lin_states != pl, "tcp-linux-only mono"))
    y = 42
    for n, (key, label) in enumerate(_vars_for(e)):
        col = n % 2
        xx = 10 + col * 148
        val: object = e[key]  # type: ignore[literal-required]
        old: object = pe[key]  # type: ignore[literal-required]
        shown = "—" if val is None else (f"{val:g}" if isinstance(val, float) else str(val))
        out.append(f'<text class="muted" x="{xx}" y="{y}">{esc(str(label))}</text>')
        out.append(_value(xx + 62, y, shown, val != old, "mono"))
        if col == 1:
            y += LINE
    if len(_vars_for(e)) % 2:
        y += LINE
    y += 4
    status = []
    if e["blocked"]:
        status.append(str(msg("blocked in {call}()", call=e["blocked"])))
    if e["error"]:
        status.append(str(msg("pending error {errno}", errno=e["error"])))
    call = st["call"]
    errno = ""
    if call is not None and call["endpoint"] == ep:
        if call["errno"]:
            errno = f"{call['call']} → {call['errno']}"
        elif call["result"] != "blocked":
            status.append(
                str(msg("{call}() returned {result}", call=call["call"], result=call["result"]))
            )
    boxes: list[str] = []
    heights: list[float] = []
    for view, rfc in (("tcp-rfc-only", True), ("tcp-linux-only", False)):
        yy = y
        part = [f'<g class="{view}">']
        timers = _timers(e, rfc)
        tline = (
            str(msg("timers: {list}", list=", ".join(timers)))
            if timers
            else str(msg("timers: none"))
        )
        part.append(f'<text x="10" y="{yy}">{esc(fit(tline, 44))}</text>')
        yy += LINE
        if errno:
            w = len(errno) * 8.6 + 12
            part.append(
                f'<g class="err errno"><rect x="10" y="{yy - 13}" width="{w:.1f}" height="18" '
                f'rx="4"/><text x="16" y="{yy}">{esc(errno)}</text></g>'
            )
            yy += LINE + 4
        if status:
            text = fit("; ".join(status), 46)
            part.append(f'<text class="muted" x="10" y="{yy}">{esc(text)}</text>')
            yy += LINE
        if not rfc:
            for o in e["linux"]:
                text = f"{o['object']} #{o['id']} {o['state']}"
                text += " · fd" if o["held_by_app"] else ""
                part.append(f'<text class="mono" x="10" y="{yy}">{esc(fit(text, 39))}</text>')
                yy += LINE
                if o["tw_substate"]:
                    sub = f"tw_substate {o['tw_substate']}"
                    part.append(f'<text class="mono" x="26" y="{yy}">{esc(sub)}</text>')
                    yy += LINE
            if not e["linux"]:
                none = escape(str(msg("no kernel objects")))
                part.append(f'<text class="muted" x="10" y="{yy}">{none}</text>')
                yy += LINE
        part.append("</g>")
        out += part
        h = yy - 6
        heights.append(h)
        boxes.append(
            f'<rect class="panel {view}" x="0" y="0" width="{PANEL_W}" height="{h}" rx="8"/>'
        )
    out[1] = "".join(boxes)
    out.append("</g>")
    return "".join(out), max(heights)


def _value(x: float, y: float, text: str, changed: bool, cls: str, bold: bool = False) -> str:
    w = len(text) * 7.4 + 8
    style = ' style="font-weight: 700"' if bold else ""
    inner = cls.replace("tcp-rfc-only", "").replace("tcp-linux-only", "").strip()
    outer = " ".join(c for c in ("tcp-rfc-only", "tcp-linux-only") if c in cls)
    g_cls = " ".join(c for c in (outer, "changed" if changed else "") if c)
    return (
        f'<g class="{g_cls}">'
        + (
            f'<rect x="{x - 4:.1f}" y="{y - 12}" width="{w:.1f}" height="16" rx="3"/>'
            if changed
            else ""
        )
        + f'<text class="{inner}" x="{x:.1f}" y="{y}"{style}>{esc(text)}</text></g>'
    )


def draw_wire(st: TcpState, in_flight: int | None = None) -> tuple[str, int]:
    """The wire panel: this step's segment, or how many are in flight (``in_flight``: those the
    ladder draws, i.e. already sent by this step; default: every one the state lists)."""
    x0 = 2 * (PANEL_W + 10)
    w = WIDTH - x0 - 2
    seg = st["segment"] or st["delivered"]
    out = [f'<g id="tcp-wire" style="transform: translate({x0}px, {PANEL_Y}px)">']
    lines: list[tuple[str, str]] = []
    links: list[tuple[str, str]] = []
    if seg is None:
        title = str(msg("No segment this step"))
        n = len(st["in_flight"]) if in_flight is None else in_flight
        if n:
            lines.append(("", str(msg("{count} segments in flight", count=n))))
    else:
        arrived = st["delivered"] is not None and st["segment"] is None
        title = (
            str(msg("Arrived at {dst}", dst=who(seg["dst"])))
            if arrived
            else str(msg("{src} sends", src=who(seg["src"])))
        )
        src, dst = who(seg["src"]), who(seg["dst"])
        route = msg("#{nth} from {src} → {dst}", nth=seg["nth"], src=src, dst=dst)
        no_ack = msg("{ack} (no ACK flag)", ack=seg["ack"])
        lines += [
            (str(msg("segment")), str(route)),
            (str(msg("flags")), " ".join(seg["flags"]) or str(msg("none"))),
            ("seq", str(seg["seq"])),
            ("ack", str(seg["ack"]) if "ACK" in seg["flags"] else str(no_ack)),
            ("len", str(msg("{n} bytes", n=seg["len"]))),
            (str(msg("window")), window_text(seg["window"], seg["window_scaled"])),
            (str(msg("kind")), kind_word(seg["kind"])),
        ]
        # the options in wire order, packetdrill's spelling, NOPs included; the timestamp's
        # values on a line of their own
        opts = seg["options"]
        if opts:
            order = ",".join("TS" if o.startswith("TS ") else o for o in opts)
            lines.append((str(msg("options")), order))
            lines += [("", o) for o in opts if o.startswith("TS ")]
        if seg["lost"]:
            lines.append((str(msg("fate")), str(msg("lost in the network"))))
        elif seg["arrive_ms"] is not None:
            lines.append((str(msg("arrives")), fmt_ms(seg["arrive_ms"])))
        if seg["kind"] == "data" or (seg["len"] and seg["kind"] not in ("retransmit",)):
            links.append(("/explainers/path", str(msg("How it travels the stack →"))))
            links.append(("/explainers/skb", str(msg("Its sk_buff →"))))
        if seg["kind"] == "retransmit":
            links.append(("/explainers/cwnd", str(msg("Loss and congestion control →"))))
    h = 30 + len(lines) * LINE + len(links) * LINE + 10
    out.append(f'<rect class="panel" x="0" y="0" width="{w}" height="{h}" rx="8"/>')
    out.append(f'<text class="title" x="10" y="20">{esc(title)}</text>')
    y = 40
    for k, v in lines:
        if k:
            out.append(f'<text class="muted" x="10" y="{y}">{esc(k)}</text>')
        out.append(f'<text class="mono" x="{84 if k else 10}" y="{y}">{esc(fit(v, 34))}</text>')
        y += LINE
    for href, text in links:
        out.append(
            f'<a href="{attr(href)}" class="xlink"><text x="10" y="{y}">{esc(text)}</text></a>'
        )
        y += LINE
    out.append("</g>")
    return "".join(out), h
