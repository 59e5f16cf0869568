"""The IPv4 entry points of ``net/ipv4/tcp_ipv4.c``: ``tcp_v4_rcv`` finds the object a
segment belongs to (established hash first, as ``__inet_lookup_skb`` does, then the listener);
``tcp_v4_send_reset``, ``tcp_v4_send_synack`` and ``tcp_v4_timewait_ack`` answer for objects
that are not full sockets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import Message, msg
from app.sim.tcp import tcp_input, tcp_minisocks, wire
from app.sim.tcp.sock import (
    Endpoint,
    Req,
    Seg,
    Sock,
    TimeWait,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def reply_reset(sim: Sim, ep: Endpoint, seg: Seg, why: Message) -> None:
    """tcp_v4_send_reset: answer a segment no socket wants (never a RST)."""
    if seg.rst:
        return
    if seg.has_ack:
        flags: tuple[str, ...] = ("RST",)
        seq, ack = seg.ack, 0
    else:
        flags = ("RST", "ACK")
        seq, ack = 0, seg.end_seq
    sim.note(why, "tcp_v4_send_reset")
    sim.xmit(
        ep,
        flags,
        seq,
        ack,
        0,
        0,
        "rst",
        "tcp_v4_send_reset",
        msg("{ep} answers with a RST.", ep=ep.label),
    )


def receive(sim: Sim, ep: Endpoint, seg: Seg) -> None:
    o = ep.ehash
    if isinstance(o, TimeWait):
        tcp_minisocks.rcv_timewait(sim, ep, o, seg)
    elif isinstance(o, Req):
        tcp_minisocks.rcv_req(sim, ep, o, seg)
    elif isinstance(o, Sock):
        if o.state == "SYN_SENT":
            tcp_input.rcv_synsent(sim, o, seg)
        else:
            tcp_input.rcv_sync(sim, o, seg)
    elif ep.listener is not None:
        tcp_input.rcv_listen(sim, ep, ep.listener, seg)
    else:
        sim.note(msg("{ep} has no socket for this segment.", ep=ep.label), "tcp_v4_rcv")
        reply_reset(sim, ep, seg, msg("No socket matches: the kernel answers with a RST."))


def send_synack(sim: Sim, req: Req, retrans: bool) -> None:
    """tcp_v4_send_synack (tcp_make_synack): tcp_synack_options, and the window unscaled,
    min(rsk_rcv_wnd, 65535). A retransmission (tcp_rtx_synack, through inet_rtx_syn_ack)
    counts in num_retrans."""
    if retrans:
        req.num_retrans += 1
    flags: tuple[str, ...] = ("SYN", "ECE", "ACK") if req.ecn_ok else ("SYN", "ACK")
    text = (
        msg("{ep} retransmits its SYN+ACK (timeout {n}).", ep=req.ep.label, n=req.num_timeout)
        if retrans
        else msg(
            "{ep} sends SYN+ACK seq={seq} ack={ack}.",
            ep=req.ep.label,
            seq=req.iss,
            ack=req.rcv_nxt,
        )
    )
    sim.xmit(
        req.ep,
        flags,
        req.iss,
        req.rcv_nxt,
        0,
        min(req.rcv_wnd, wire.U16_MAX),
        "retransmit" if retrans else "synack",
        "tcp_rtx_synack" if retrans else "tcp_v4_send_synack",
        text,
        wire.synack_options(sim, req),
    )


def tw_ack(sim: Sim, ep: Endpoint, tw: TimeWait, seg: Seg) -> None:
    if (seg.seq == seg.end_seq or seg.syn) and tw.oow_limited(sim.now):
        return
    timewait_ack(
        sim,
        ep,
        tw,
        msg("{ep} answers from TIME_WAIT with ACK ack={ack}.", ep=ep.label, ack=tw.rcv_nxt),
    )


def timewait_ack(sim: Sim, ep: Endpoint, tw: TimeWait, text: Message) -> None:
    """tcp_v4_timewait_ack → tcp_v4_send_ack: tw_rcv_wnd >> tw_rcv_wscale, and the
    timestamp option (nop,nop,TS) when the connection used timestamps."""
    win = tw.rcv_wnd >> tw.rcv_wscale
    opts = wire.write_options(ts=(wire.ts_now(sim, tw.ts_off), tw.ts_recent)) if tw.ts_ok else ()
    sim.xmit(
        ep,
        ("ACK",),
        tw.snd_nxt,
        tw.rcv_nxt,
        0,
        win,
        "ack",
        "tcp_v4_timewait_ack",
        text,
        opts,
        win << tw.rcv_wscale,
    )


def reqsk_send_ack(sim: Sim, ep: Endpoint, req: Req) -> None:
    """tcp_v4_reqsk_send_ack: a request sock ACKs an out-of-window segment with its own
    window (rsk_rcv_wnd >> rcv_wscale) and timestamps."""
    win = req.rcv_wnd >> req.rcv_wscale
    opts = wire.write_options(ts=(wire.ts_now(sim, req.ts_off), req.ts_recent)) if req.ts_ok else ()
    sim.xmit(
        ep,
        ("ACK",),
        req.iss + 1,
        req.rcv_nxt,
        0,
        win,
        "ack",
        "tcp_check_req",
        msg("{ep} ACKs an out-of-window segment.", ep=ep.label),
        opts,
        win << req.rcv_wscale,
    )
