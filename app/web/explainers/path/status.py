"""The status rows: NAPI accounting (the poll's numbers, GRO's held packets, the queue
counters), then the cross-links (the sk_buff explainer rebuilding this skb; TCP and congestion
control on TCP steps) and the drop reason."""

from __future__ import annotations

from html import escape

from app.sim.core import Frame, msg
from app.sim.path.engine import NapiView, PathState
from app.web.explainers.path.geometry import TCP_LAYERS, WIDTH, attr
from app.web.explainers.path.layout import Layout
from app.web.explainers.path.replay import Rebuild, ops_for
from app.web.explainers.skb.layout import text_width
from app.web.sources import encode_params


def counters_text(state: PathState) -> str:
    c = state["counters"]
    return str(
        msg(
            "backlog {b} · qdisc {q} · receive queue {r} · dropped {d}",
            b=c["backlog"],
            q=c["qdisc"],
            r=c["receive_queue"],
            d=c["dropped"],
        )
    )


def napi_strip(napi: NapiView | None, state: PathState, y: float, before: NapiView | None) -> str:
    """NAPI accounting (two rows: the poll's numbers, then GRO's held packets and the queue
    counters), for walks where NAPI polls. A held packet this step added or grew is lit."""
    parts = [f'<g id="napi" class="{"napi-on" if napi else "napi-off"}">']
    parts.append(f'<rect class="panel" x="0" y="{y}" width="{WIDTH}" height="42" rx="6"/>')
    if napi is not None:
        irq = str(msg("on")) if napi["irq_enabled"] else str(msg("off"))
        items = [
            (str(msg("NAPI budget left")), f"{napi['budget']}"),
            (str(msg("weight")), str(napi["weight"])),
            (str(msg("work this poll")), f"{napi['work']}/{napi['weight']}"),
            (str(msg("polls")), str(napi["polls"])),
            (str(msg("rx_list")), str(napi["rx_count"])),
            (str(msg("ring")), str(napi["ring"])),
            (str(msg("device IRQ")), irq),
        ]
    else:
        items = [(str(msg("NAPI")), str(msg("not polling in this step")))]
    x = 10.0
    for label, value in items:
        parts.append(
            f'<text class="small" x="{x:.1f}" y="{y + 16}"><tspan class="muted">'
            f'{escape(label)}</tspan> <tspan class="v">{escape(value)}</tspan></text>'
        )
        x += text_width(f"{label} {value}", 12.5) + 14
    held = napi["held"] if napi is not None else []
    hx = 10.0
    hy = y + 22
    if napi is not None:
        label = str(msg("GRO holds {n}:", n=len(held)))
        parts.append(f'<text class="small muted" x="{hx}" y="{hy + 13}">{escape(label)}</text>')
        hx += text_width(label, 12.5) + 8
    old = {(o["bucket"], o["flow"]): o for o in (before["held"] if before else [])}
    counters = counters_text(state)
    room = WIDTH - 10 - text_width(counters, 12.5) - 12 - text_width("+99", 12.5)
    shown = 0
    for i, h in enumerate(held):
        was = old.get((h["bucket"], h["flow"]))
        grew = was is None or was["segs"] != h["segs"] or was["len"] != h["len"]
        cls, flag = ("held lit", ' data-lit="1"') if grew else ("held", "")
        text = str(
            msg(
                "bucket {b} · flow {f} · {s} segs · {n} B",
                b=h["bucket"],
                f=h["flow"],
                s=h["segs"],
                n=h["len"],
            )
        )
        w = text_width(text, 12.5) + 10
        if hx + w > room:
            break
        shown += 1
        parts.append(
            f'<g id="held-{i}" class="{cls}"{flag}><rect x="{hx:.1f}" y="{hy}" width="{w:.1f}" '
            f'height="17" rx="3"/><text class="small" x="{hx + 5:.1f}" y="{hy + 13}">'
            f"{escape(text)}</text></g>"
        )
        hx += w + 6
    if len(held) > shown:
        parts.append(
            f'<text id="held-more" class="small muted" x="{hx:.1f}" y="{hy + 13}">'
            f"+{len(held) - shown}</text>"
        )
    parts.append(
        f'<text id="counters" class="small muted" x="{WIDTH - 10}" y="{hy + 13}" '
        f'text-anchor="end">{escape(counters)}</text>'
    )
    parts.append("</g>")
    return "".join(parts)


def skb_link(lay: Layout, frame: Frame[PathState]) -> tuple[str, Rebuild | None]:
    """The sk_buff explainer URL that rebuilds this frame's skb, and how faithfully."""
    view = frame.state["skb"]
    if view is None:
        return "", None
    if lay.rep is not None:
        rb = ops_for(lay.rep, frame.index, view)
        if rb.ops and rb.exact or rb.ops and "frag_list" in rb.why:
            return f"/explainers/skb/custom?p={encode_params({'ops': rb.ops})}", rb
    closest = "rx-headers" if frame.state["context"] != "process" else "tcp-transmit"
    return f"/explainers/skb/presets/{closest}", None


def links_row(lay: Layout, frame: Frame[PathState], y: float) -> str:
    """One row: the cross-links on the left; on the right the drop reason and, for walks
    without NAPI, the queue counters."""
    state = frame.state
    out = [f'<g id="links" class="links" transform="translate(0 {y})">']
    x = 0.0
    href, rb = skb_link(lay, frame)
    if href:
        if rb is not None and rb.exact:
            text = str(msg("Open {skb} in the sk_buff explainer ↗", skb=state["skb"]["name"]))  # type: ignore[index]
            note = ""
        elif rb is not None:
            text = str(msg("Open {skb} in the sk_buff explainer ↗", skb=state["skb"]["name"]))  # type: ignore[index]
            note = str(msg("(close: {why})", why=rb.why))
        else:
            text = str(msg("Open the closest sk_buff walkthrough ↗"))
            note = str(msg("(this step's skb cannot be rebuilt there)"))
        out.append(
            f'<a id="skb-link" href="{attr(href)}" data-exact="{"1" if rb and rb.exact else "0"}">'
            f'<text x="{x}" y="13">{escape(text)}</text></a>'
        )
        x += text_width(text, 13) * 0.95 + 12
        if note:
            out.append(f'<text class="small muted" x="{x:.1f}" y="13">{escape(note)}</text>')
            x += text_width(note, 12.5) * 0.95 + 12
    if state["layer"] in TCP_LAYERS:
        for key, href2, label in (
            ("tcp", "/explainers/tcp", str(msg("TCP state machine ↗"))),
            ("cwnd", "/explainers/cwnd", str(msg("congestion control ↗"))),
        ):
            out.append(
                f'<a id="link-{key}" class="tcp-link" href="{href2}">'
                f'<text x="{x:.1f}" y="13">{escape(label)}</text></a>'
            )
            x += text_width(label, 13) * 0.95 + 14
    right = float(WIDTH)
    drop = state["drop_reason"]
    if drop:
        dropped = str(msg("dropped: {reason}", reason=drop))
        out.append(
            f'<g id="drop" class="drop" data-reason="{attr(drop)}"><text x="{right}" y="13" '
            f'text-anchor="end">{escape(dropped)}</text></g>'
        )
        right -= text_width(dropped, 13) + 16
    if not lay.napi:
        out.append(
            f'<text id="counters" class="small muted" x="{right:.1f}" y="13" text-anchor="end">'
            f"{escape(counters_text(state))}</text>"
        )
    out.append("</g>")
    return "".join(out)
