"""The mini-sockets of ``net/ipv4/tcp_minisocks.c``: the request sock meeting the handshake's
last segment (``tcp_check_req``) and the child it becomes (``tcp_create_openreq_child``, via
``tcp_v4_syn_recv_sock``; a SYN cookie's child, ``cookie_v4_check`` in ``syncookies.c``), and
the timewait sock (``tcp_time_wait``, ``tcp_timewait_state_process``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import calls, tcp_ack, tcp_input, tcp_ipv4, tcp_output, wire
from app.sim.tcp.sock import (
    RFC_NAME,
    RTO_INIT,
    RTO_MAX,
    TIMEWAIT_LEN,
    TW_ISN_GAP,
    Endpoint,
    Listener,
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
                msg(
                    "A retransmitted SYN: the request sock resends its SYN+ACK and restarts its "
                    "timer; a retransmitted SYN+ACK gives no RTT sample from its send time."
                ),
                "tcp_check_req",
            )
            tcp_ipv4.send_synack(sim, req, retrans=True)
            # mod_timer_pending(&req->rsk_timer, jiffies + reqsk_timeout(req, TCP_RTO_MAX))
            if req.timer("synack").armed:
                req.arm("synack", sim.now + min(RTO_INIT * 2**req.num_timeout, RTO_MAX))
        return
    if seg.has_ack and seg.ack != req.iss + 1:
        sim.note(
            msg("The ACK does not acknowledge our SYN+ACK: the listener resets it."),
            "tcp_check_req",
        )
        tcp_ipv4.reply_reset(sim, ep, seg, msg("Bad ACK for the request sock: RST."))
        return
    # tcp_in_window(seq, end_seq, rcv_nxt, rcv_nxt + rsk_rcv_wnd)
    in_win = req.rcv_nxt <= seg.seq <= req.rcv_nxt + req.rcv_wnd or seg.end_seq == req.rcv_nxt
    if not in_win:
        if not seg.rst and not req.oow_limited(sim.now):
            tcp_ipv4.reqsk_send_ack(sim, ep, req)
        return
    if req.ts_ok and seg.tsval is not None and seg.seq <= req.rcv_nxt:
        req.ts_recent = seg.tsval
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
    child = make_child(sim, ep, lsn, req, seg)
    synack_rtt_meas(sim, child, req)
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


def synack_rtt_meas(sim: Sim, child: Sock, req: Req) -> None:
    """tcp_synack_rtt_meas(child, req): the first RTT sample from the SYN-ACK's send time,
    only if no SYN-ACK was retransmitted (num_retrans, Karn). With timestamps the child gets
    one from the ACK's TSecr instead, when it reaches SYN_RECV's ACK processing."""
    if req.num_retrans:
        return
    m = max(1, int(round((sim.now - req.snt_synack) * 1000)))
    tcp_ack.rtt_sample(child, m)


def make_child(sim: Sim, ep: Endpoint, lsn: Listener, req: Req, seg: Seg) -> Sock:
    """tcp_create_openreq_child (via tcp_v4_syn_recv_sock): the child takes the request's
    sequence numbers and negotiated options; its SND.UNA is past the SYN-ACK."""
    child = Sock(sim, ep)
    child.held = False
    child.listener = lsn
    iss, irs = req.iss, req.irs
    child.iss = iss
    child.irs = irs
    child.snd_una = iss + 1
    child.snd_nxt = iss + 1
    child.write_seq = child.pushed_seq = iss + 1
    child.rcv_nxt = irs + 1
    child.rcv_wup = irs + 1
    child.snd_wl1 = irs
    child.ts_ok, child.sack_ok, child.ecn_ok = req.ts_ok, req.sack_ok, req.ecn_ok
    child.window_clamp = req.window_clamp
    child.rcv_ssthresh = child.rcv_wnd = req.rcv_wnd
    child.wscale_ok = req.wscale_ok
    if req.wscale_ok:
        child.snd_wscale, child.rcv_wscale = req.snd_wscale, req.rcv_wscale
    else:
        child.window_clamp = min(child.window_clamp, 65535)
    child.snd_wnd = seg.window << child.snd_wscale
    child.ts_recent = req.ts_recent
    child.ts_off = req.ts_off
    child.mss_clamp = req.mss_clamp
    child.advmss = req.advmss
    child.syn_retrans = req.num_retrans if req.num_timeout else 0  # total_retrans, undo_marker
    tcp_output.sync_mss(child)
    child.rcv_mss = max(
        min(child.advmss, child.mss_cache, child.rcv_wnd // 2, wire.TCP_MSS_DEFAULT), 88
    )
    child.state = "LISTEN"
    sim.set_state(child, "SYN_RECV", "clone", "inet_csk_clone_lock")
    ep.ehash = child
    lsn.accept_q.append(child)
    return child


def cookie_child(sim: Sim, ep: Endpoint, lsn: Listener, seg: Seg) -> None:
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
    syn = lsn.cookies.pop(iss)
    req = tcp_input.new_req(sim, ep, lsn, iss, syn, cookie=True)
    req.num_retrans = 1  # cookie_v4_check: snt_synack = 0, no RTT sample from its send time
    child = make_child(sim, ep, lsn, req, seg)
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
        if tw.ts_ok and seg.tsval is not None:
            tw.ts_recent = seg.tsval
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
        tcp_ipv4.timewait_ack(
            sim, ep, tw, msg("{ep} ACKs the FIN from its timewait sock.", ep=ep.label)
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
            if tw.ts_ok and seg.tsval is not None:
                tw.ts_recent = seg.tsval
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
