"""The mini-sockets of ``net/ipv4/tcp_minisocks.c``: the request sock meeting the handshake's
last segment (``tcp_check_req``) and the child it becomes (``tcp_create_openreq_child``, via
``tcp_v4_syn_recv_sock``; a SYN cookie's child, ``cookie_v4_check`` in ``syncookies.c``), and
the timewait sock (``tcp_time_wait``, ``tcp_timewait_state_process``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import calls, tcp_input, tcp_ipv4
from app.sim.tcp.sock import (
    RFC_NAME,
    TIMEWAIT_LEN,
    TW_ISN_GAP,
    Endpoint,
    Listener,
    OutSeg,
    Req,
    Seg,
    Sock,
    TimeWait,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def time_wait(sim: Sim, sk: Sock, substate: str, tmo: float) -> None:
    """tcp_time_wait: a timewait mini-socket takes the full socket's place in the hash."""
    tw = TimeWait(sim, sk.ep, sk, substate)
    rto35 = sk.rto * 3.5
    if tmo < rto35:
        tmo = rto35
    if substate == "TIME_WAIT":
        tmo = TIMEWAIT_LEN
    tw.arm("timewait", sim.now + tmo)
    sim.transitions.append(
        {
            "endpoint": sk.ep.name,
            "object": "timewait_sock",
            "object_id": tw.id,
            "from_state": "TCP_" + sk.state,
            "to_state": "TCP_TIME_WAIT",
            "rfc_from": RFC_NAME[sk.state],
            "rfc_to": RFC_NAME[substate],
            "event": "tcp_time_wait",
            "function": "tcp_time_wait",
        }
    )
    sim.note(
        msg(
            "tcp_time_wait: a timewait mini-socket (tw_substate {sub}) replaces the socket "
            "for {s} s; the full socket closes.",
            sub="TCP_" + substate,
            s=round(tmo / 1000, 3),
        ),
        "tcp_time_wait",
    )
    calls.done(sim, sk, "tcp_time_wait", "tcp_time_wait")
    sk.ep.ehash = tw


def rcv_req(sim: Sim, ep: Endpoint, req: Req, seg: Seg) -> None:
    """tcp_check_req: the third segment of the handshake meets the request sock."""
    lsn = req.listener
    if ep.listener is not lsn:
        drop_req(sim, req, "tcp_v4_rcv")
        tcp_ipv4.receive(sim, ep, seg)
        return
    if seg.syn and not seg.has_ack and not seg.rst and seg.seq == req.irs:
        if not req.oow_limited(sim.now):
            sim.note(
                msg("A retransmitted SYN: the request sock resends its SYN+ACK."),
                "tcp_check_req",
            )
            tcp_ipv4.send_synack(sim, req, retrans=True)
        return
    if seg.has_ack and seg.ack != req.iss + 1:
        sim.note(
            msg("The ACK does not acknowledge our SYN+ACK: the listener resets it."),
            "tcp_check_req",
        )
        tcp_ipv4.reply_reset(sim, ep, seg, msg("Bad ACK for the request sock: RST."))
        return
    in_win = req.rcv_nxt <= seg.seq <= req.rcv_nxt + sim.p.rcvbuf or seg.end_seq == req.rcv_nxt
    if not in_win:
        if not seg.rst and not req.oow_limited(sim.now):
            sim.xmit(
                ep,
                ("ACK",),
                req.iss + 1,
                req.rcv_nxt,
                0,
                sim.p.rcvbuf,
                "ack",
                "tcp_check_req",
                msg("{ep} ACKs an out-of-window segment.", ep=ep.label),
            )
        return
    if seg.rst or seg.syn:
        sim.note(
            msg("RST or SYN in window: the request sock is dropped (embryonic reset)."),
            "tcp_check_req",
        )
        if not seg.rst:
            tcp_ipv4.reply_reset(sim, ep, seg, msg("The request sock answers with a RST."))
        drop_req(sim, req)
        return
    if not seg.has_ack:
        return
    if lsn.acceptq_full():
        req.acked = True
        if sim.p.sysctl.tcp_abort_on_overflow:
            sim.note(
                msg("The accept queue is full and tcp_abort_on_overflow is set: RST."),
                "tcp_check_req",
            )
            tcp_ipv4.reply_reset(sim, ep, seg, msg("Listen overflow: RST."))
            drop_req(sim, req)
        else:
            sim.note(
                msg(
                    "The accept queue is full: the final ACK is ignored (req->acked); the "
                    "SYN+ACK timer keeps running."
                ),
                "tcp_check_req",
            )
        return
    child = make_child(sim, ep, lsn, req.iss, req.irs, req.snd_wnd, req.born_ms)
    if req.num_timeout:  # Karn: a retransmitted SYN-ACK gives no RTT sample
        child.rtx[0].retrans = req.num_timeout
        child.syn_retrans = req.num_timeout
    sim.transitions.append(
        {
            "endpoint": ep.name,
            "object": "request_sock",
            "object_id": req.id,
            # the request sock is unhashed and freed (inet_csk_complete_hashdance, reqsk_put);
            # only the child it was cloned into is in TCP_SYN_RECV
            "from_state": "TCP_NEW_SYN_RECV",
            "to_state": "TCP_CLOSE",
            "rfc_from": "SYN_RECEIVED",
            "rfc_to": "SYN_RECEIVED",
            "event": "ACK",
            "function": "inet_csk_complete_hashdance",
        }
    )
    sim.note(
        msg(
            "The ACK is valid: tcp_v4_syn_recv_sock clones the listener into a child socket "
            "in TCP_SYN_RECV, which replaces the request sock and joins the accept queue."
        ),
        "tcp_v4_syn_recv_sock",
    )
    req.stop_all()
    lsn.reqs.remove(req)
    tcp_input.rcv_sync(sim, child, seg)


def drop_req(sim: Sim, req: Req, function: str = "tcp_check_req") -> None:
    """inet_csk_reqsk_queue_drop, from the function that decided it."""
    req.stop_all()
    if req in req.listener.reqs:
        req.listener.reqs.remove(req)
    if req.ep.ehash is req:
        req.ep.ehash = None
    sim.transitions.append(
        {
            "endpoint": req.ep.name,
            "object": "request_sock",
            "object_id": req.id,
            "from_state": "TCP_NEW_SYN_RECV",
            "to_state": "TCP_CLOSE",
            "rfc_from": "SYN_RECEIVED",
            "rfc_to": "LISTEN" if req.ep.listener else "CLOSED",
            "event": "drop",
            "function": function,
        }
    )


def make_child(
    sim: Sim, ep: Endpoint, lsn: Listener, iss: int, irs: int, wnd: int, synack_ms: float
) -> Sock:
    child = Sock(sim, ep)
    child.held = False
    child.listener = lsn
    child.iss = iss
    child.irs = irs
    child.snd_una = iss
    child.snd_nxt = iss + 1
    child.write_seq = iss + 1
    child.rcv_nxt = irs + 1
    child.rcv_wup = irs + 1
    child.snd_wnd = wnd
    child.snd_wl1 = irs
    child.rtx = [OutSeg(iss, 0, True, False, synack_ms)]  # the SYN-ACK, acked below
    child.state = "LISTEN"
    sim.set_state(child, "SYN_RECV", "clone", "inet_csk_clone_lock")
    ep.ehash = child
    lsn.accept_q.append(child)
    return child


def cookie_child(sim: Sim, ep: Endpoint, lsn: Listener, seg: Seg, peer_iss: int) -> None:
    iss = seg.ack - 1
    sim.note(
        msg(
            "cookie_v4_check: the ACK carries a valid SYN cookie; the connection is "
            "rebuilt from it with no request sock."
        ),
        "cookie_v4_check",
    )
    if lsn.acceptq_full():
        sim.note(
            msg("The accept queue is full: the cookie ACK is dropped."), "tcp_v4_syn_recv_sock"
        )
        return
    del lsn.cookies[iss]
    child = make_child(sim, ep, lsn, iss, peer_iss, seg.window, sim.now - sim.p.rtt_ms)
    tcp_input.rcv_sync(sim, child, seg)


def rcv_timewait(sim: Sim, ep: Endpoint, tw: TimeWait, seg: Seg) -> None:
    """tcp_timewait_state_process."""
    sim.note(
        msg("The timewait sock (substate {sub}) gets the segment.", sub="TCP_" + tw.substate),
        "tcp_timewait_state_process",
    )
    if tw.substate == "FIN_WAIT2":
        in_win = (
            seg.seq == tw.rcv_nxt
            or (seg.end_seq > tw.rcv_nxt and seg.seq < tw.rcv_nxt + tw.rcv_wnd)
            or (seg.seq == tw.rcv_nxt + tw.rcv_wnd and seg.seq == seg.end_seq)
        )
        if not in_win:
            tcp_ipv4.tw_ack(sim, ep, tw, seg)
            return
        if seg.rst:
            kill_tw(sim, ep, tw, "RST")
            return
        if seg.syn and seg.seq >= tw.rcv_nxt:
            tcp_ipv4.reply_reset(sim, ep, seg, msg("A SYN to a FIN_WAIT2 timewait sock: RST."))
            return
        if not seg.has_ack or seg.end_seq <= tw.rcv_nxt or seg.end_seq == seg.seq:
            return
        if not seg.fin or seg.end_seq != tw.rcv_nxt + 1:
            tcp_ipv4.reply_reset(sim, ep, seg, msg("Data after the half-duplex close: RST."))
            return
        tw.substate = "TIME_WAIT"
        tw.rcv_nxt = seg.end_seq
        tw.arm("timewait", sim.now + TIMEWAIT_LEN)
        sim.transitions.append(
            {
                "endpoint": ep.name,
                "object": "timewait_sock",
                "object_id": tw.id,
                "from_state": "TCP_TIME_WAIT",
                "to_state": "TCP_TIME_WAIT",
                "rfc_from": "FIN_WAIT_2",
                "rfc_to": "TIME_WAIT",
                "event": "FIN",
                "function": "tcp_timewait_state_process",
            }
        )
        sim.note(
            msg("The FIN arrives: tw_substate becomes TCP_TIME_WAIT for 60 s."),
            "tcp_timewait_state_process",
        )
        sim.xmit(
            ep,
            ("ACK",),
            tw.snd_nxt,
            tw.rcv_nxt,
            0,
            tw.rcv_wnd,
            "ack",
            "tcp_v4_timewait_ack",
            msg("{ep} ACKs the FIN from its timewait sock.", ep=ep.label),
        )
        return
    if seg.seq == tw.rcv_nxt and (seg.seq == seg.end_seq or seg.rst):
        if seg.rst:
            sim.note(
                msg(
                    "A RST in TIME_WAIT kills the timewait sock (TIME_WAIT "
                    "assassination; tcp_rfc1337 is 0)."
                ),
                "tcp_timewait_state_process",
            )
            kill_tw(sim, ep, tw, "RST")
        else:
            tw.arm("timewait", sim.now + TIMEWAIT_LEN)
        return
    if seg.syn and not seg.rst and not seg.has_ack and seg.seq > tw.rcv_nxt:
        isn = tw.snd_nxt + TW_ISN_GAP
        lsn = ep.listener
        sim.note(
            msg(
                "A new SYN with a higher sequence number reaches the TIME_WAIT tuple: the "
                "timewait sock gives way and the connection reopens with ISN {isn} "
                "(tw_snd_nxt + 65537).",
                isn=isn,
            ),
            "tcp_timewait_state_process",
        )
        if lsn is not None:
            kill_tw(sim, ep, tw, "SYN")
            tcp_input.rcv_listen(sim, ep, lsn, seg, tw_isn=isn)
            return
    if not seg.rst:
        if seg.has_ack:
            tw.arm("timewait", sim.now + TIMEWAIT_LEN)
            sim.note(
                msg("TIME_WAIT restarts its 60 s timer and ACKs the segment."),
                "tcp_timewait_state_process",
            )
        tcp_ipv4.tw_ack(sim, ep, tw, seg)


# who frees a timewait sock, by the reason kill_tw is given (else tcp_timewait_state_process)
_TW_END_FUNCTION = {"timer": "tw_timer_handler", "connect()": "tcp_v4_connect"}


def kill_tw(sim: Sim, ep: Endpoint, tw: TimeWait, why: str) -> None:
    tw.stop_all()
    if ep.ehash is tw:
        ep.ehash = None
    sim.transitions.append(
        {
            "endpoint": ep.name,
            "object": "timewait_sock",
            "object_id": tw.id,
            "from_state": "TCP_TIME_WAIT",
            "to_state": "TCP_CLOSE",
            "rfc_from": RFC_NAME[tw.substate],
            "rfc_to": "LISTEN" if ep.listener else "CLOSED",
            "event": why,
            "function": _TW_END_FUNCTION.get(why, "tcp_timewait_state_process"),
        }
    )
