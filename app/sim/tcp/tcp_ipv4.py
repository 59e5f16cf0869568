"""The IPv4 entry points of ``net/ipv4/tcp_ipv4.c``: ``tcp_v4_rcv`` finds the object a
segment belongs to (established hash first, as ``__inet_lookup_skb`` does, then the listener);
``tcp_v4_send_reset``, ``tcp_v4_send_synack`` and ``tcp_v4_timewait_ack`` answer for objects
that are not full sockets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import Message, msg
from app.sim.tcp import tcp_input, tcp_minisocks
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
        ("SYN", "ACK"),
        req.iss,
        req.rcv_nxt,
        0,
        sim.p.rcvbuf,
        "retransmit" if retrans else "synack",
        "tcp_rtx_synack" if retrans else "tcp_v4_send_synack",
        text,
    )


def tw_ack(sim: Sim, ep: Endpoint, tw: TimeWait, seg: Seg) -> None:
    if (seg.seq == seg.end_seq or seg.syn) and tw.oow_limited(sim.now):
        return
    sim.xmit(
        ep,
        ("ACK",),
        tw.snd_nxt,
        tw.rcv_nxt,
        0,
        tw.rcv_wnd,
        "ack",
        "tcp_v4_timewait_ack",
        msg("{ep} answers from TIME_WAIT with ACK ack={ack}.", ep=ep.label, ack=tw.rcv_nxt),
    )
