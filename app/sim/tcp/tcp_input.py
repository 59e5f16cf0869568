"""Segment processing after ``net/ipv4/tcp_input.c``: a SYN at the listener
(``tcp_conn_request``), ``tcp_rcv_synsent_state_process``, and ``tcp_rcv_state_process`` for the
synchronized states: ``tcp_validate_incoming`` (RFC 5961), ``tcp_ack`` (in app.sim.tcp.tcp_ack,
with the loss recovery of tcp_sack, tcp_recovery and tcp_input_loss), ``tcp_data_queue``,
``tcp_fin``, ``tcp_reset`` and the ACK decision (``__tcp_ack_snd_check``,
``tcp_event_data_recv``, quick-ACK mode).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from app.sim.core.i18n import Message, msg
from app.sim.tcp import calls, sndbuf, tcp_ipv4, tcp_minisocks, tcp_output, wire
from app.sim.tcp.sock import (
    ACK_PUSHED,
    ACK_PUSHED2,
    ATO_MIN,
    DELACK_MAX,
    MAX_QUICKACKS,
    RTO_FALLBACK,
    RTO_INIT,
    TCP_HEADER,
    TIMEOUT_MIN,
    TS_OFFSET,
    Endpoint,
    Listener,
    Req,
    Seg,
    Sock,
)
from app.sim.tcp.tcp_ack import clean_rtx, rcv_ack, ts_rtt_sample
from app.sim.tcp.tcp_sack_rcv import dsack_set, ofo_dsack, sack_new_ofo, sack_remove

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def tcp_reset(sim: Sim, sk: Sock, seg: Seg, data_after_close: bool = False) -> None:
    """tcp_reset: the error the program sees, then tcp_done. Called for a RST, and by the
    kernel itself when new data arrives after the receive side was shut (close() or
    shutdown(SHUT_RD)) in FIN_WAIT1/2: there no RST arrived, tcp_rcv_state_process calls
    tcp_reset and returns 1 so that tcp_v4_do_rcv answers with a RST."""
    err = {"SYN_SENT": "ECONNREFUSED", "CLOSE_WAIT": "EPIPE"}.get(sk.state, "ECONNRESET")
    if sk.state == "CLOSE":
        return
    if not sk.dead:
        sk.err = err
    if data_after_close:
        sim.note(
            msg(
                "New data after the receive side was shut: the kernel calls tcp_reset() "
                "itself; {st} becomes TCP_CLOSE and a RST answers the segment.",
                st="TCP_" + sk.state,
            ),
            "tcp_reset",
        )
    else:
        sim.note(
            msg(
                "{ep} accepts the RST: {st} becomes TCP_CLOSE; pending error {err}.",
                ep=sk.ep.label,
                st="TCP_" + sk.state,
                err=err,
            ),
            "tcp_reset",
        )
    event = "data after close" if data_after_close else "RST received"
    sim.set_state(sk, "CLOSE", event, "tcp_reset")
    calls.done(sim, sk, event, "tcp_reset", already=True)


def rcv_listen(sim: Sim, ep: Endpoint, lsn: Listener, seg: Seg, tw_isn: int = 0) -> None:
    if seg.rst:
        sim.note(msg("The listener ignores a RST."), "tcp_rcv_state_process")
        return
    if seg.has_ack and not seg.syn:
        syn = lsn.cookies.get(seg.ack - 1)
        if syn is not None and seg.seq == syn.seq + 1:
            tcp_minisocks.cookie_child(sim, ep, lsn, seg)
            return
        sim.note(
            msg("An ACK reaches the listener without a request: RST."), "tcp_rcv_state_process"
        )
        tcp_ipv4.reply_reset(
            sim, ep, seg, msg("The listener answers an unexpected ACK with a RST.")
        )
        return
    if seg.has_ack:
        tcp_ipv4.reply_reset(sim, ep, seg, msg("The listener answers a SYN+ACK with a RST."))
        return
    if not seg.syn:
        return
    sim.note(
        msg(
            "A SYN reaches the listener.",
        ),
        "tcp_conn_request",
    )
    want_cookie = False
    sc = sim.p.sysctl.tcp_syncookies
    if (sc == 2 or lsn.reqsk_queue_full()) and not tw_isn:
        if sc == 0:
            sim.note(
                msg(
                    "The SYN queue is full ({q} of {b}) and syncookies are off: the SYN is "
                    "dropped.",
                    q=lsn.qlen,
                    b=lsn.backlog,
                ),
                "tcp_syn_flood_action",
            )
            return
        want_cookie = True
        sim.note(
            msg(
                "The SYN queue is full ({q} of {b}): possible SYN flooding, sending a SYN "
                "cookie instead of keeping a request sock.",
                q=lsn.qlen,
                b=lsn.backlog,
            ),
            "tcp_syn_flood_action",
        )
    if lsn.acceptq_full():
        sim.note(
            msg(
                "The accept queue is full ({n} waiting, backlog {b}): the SYN is dropped "
                "(ListenOverflows); the client will retransmit it.",
                n=lsn.ack_backlog,
                b=lsn.backlog,
            ),
            "tcp_conn_request",
        )
        return
    if want_cookie:
        iss = ep.next_iss() + 777
        lsn.cookies[iss] = seg
        creq = new_req(sim, ep, lsn, iss, seg, cookie=True)
        sim.xmit(
            ep,
            ("SYN", "ACK"),
            iss,
            seg.seq + 1,
            0,
            min(creq.rcv_wnd, wire.U16_MAX),
            "synack_cookie",
            "tcp_v4_send_synack",
            msg(
                "{ep} sends SYN+ACK with a cookie as its ISN ({iss}); it keeps no state.",
                ep=ep.label,
                iss=iss,
            ),
            wire.synack_options(sim, creq),
        )
        return
    iss = tw_isn or ep.next_iss()
    req = new_req(sim, ep, lsn, iss, seg)
    lsn.reqs.append(req)
    ep.ehash = req
    sim.transitions.append(
        {
            "endpoint": ep.name,
            "object": "request_sock",
            "object_id": req.id,
            "from_state": "TCP_LISTEN",
            "to_state": "TCP_NEW_SYN_RECV",
            "rfc_from": "LISTEN",
            "rfc_to": "SYN_RECEIVED",
            "event": "SYN",
            "function": "tcp_conn_request",
        }
    )
    sim.note(
        msg(
            "A request sock (TCP_NEW_SYN_RECV) with ISS {iss} is hashed; the listener "
            "itself stays in LISTEN.",
            iss=iss,
        ),
        "inet_csk_reqsk_queue_hash_add",
    )
    req.arm("synack", sim.now + RTO_INIT)
    tcp_ipv4.send_synack(sim, req, retrans=False)


# syncookies.c msstab: the MSS values a cookie can encode
MSSTAB = (536, 1300, 1440, 1460)


def new_req(sim: Sim, ep: Endpoint, lsn: Listener, iss: int, syn: Seg, cookie: bool = False) -> Req:
    """tcp_conn_request: a request sock with what the SYN's options and this side's sysctls
    agree on (tcp_parse_options, tcp_openreq_init), its TSval offset, and its window
    (tcp_openreq_init_rwin). A SYN cookie keeps the MSS as one of msstab's four values, and
    without timestamps it cannot carry window scaling or SACK (tcp_clear_options). With
    timestamps 6.4 hides those options in the low 6 bits of the cookie SYN-ACK's TSval
    (cookie_init_timestamp); the model sends the plain clock value and keeps them aside."""
    s = sim.p.sysctl
    req = Req(sim, ep, lsn, iss, syn.seq, syn.window)
    o_mss, o_ws = syn.opt("mss"), syn.opt("wscale")
    req.mss_clamp = o_mss.values[0] if o_mss is not None else wire.TCP_MSS_DEFAULT
    req.ts_ok = syn.tsval is not None and bool(s.tcp_timestamps)
    req.sack_ok = syn.opt("sackOK") is not None and bool(s.tcp_sack)
    req.wscale_ok = o_ws is not None and bool(s.tcp_window_scaling)
    req.snd_wscale = min(o_ws.values[0], wire.TCP_MAX_WSCALE) if o_ws is not None else 0
    if cookie:
        req.mss_clamp = max([m for m in MSSTAB if m <= req.mss_clamp] or [MSSTAB[0]])
        if not req.ts_ok:
            req.sack_ok = req.wscale_ok = False
    if not req.wscale_ok:
        req.snd_wscale = 0
    req.ts_recent = (syn.tsval or 0) if req.ts_ok else 0
    req.ts_off = TS_OFFSET[ep.name] if req.ts_ok else 0
    req.ecn_ok = "ECE" in syn.flags and "CWR" in syn.flags and s.tcp_ecn != 0
    req.advmss = sim.p.mss
    full_space = lsn.full_space
    clamp = full_space if lsn.rcv_locked else 0
    ts_hdr = wire.TCPOLEN_TSTAMP_ALIGNED if req.ts_ok else 0
    req.rcv_wnd, req.window_clamp, req.rcv_wscale = wire.select_initial_window(
        full_space, req.advmss - ts_hdr, clamp, req.wscale_ok, s.tcp_rmem[2]
    )
    return req


def rcv_synsent(sim: Sim, sk: Sock, seg: Seg) -> None:
    """tcp_rcv_synsent_state_process."""
    if seg.has_ack:
        if seg.ack <= sk.iss or seg.ack > sk.snd_nxt:
            if sk.retransmits == 0:
                # "Previous FIN/ACK or RST/ACK might be ignored": resend the SYN at once.
                sk.arm("retransmit", sim.now + TIMEOUT_MIN)
                sk.rtx_after = TIMEOUT_MIN
                sim.note(
                    msg(
                        "No retransmission yet: the retransmission timer is re-armed to "
                        "TCP_TIMEOUT_MIN ({t} ms), so the SYN goes again right after this.",
                        t=TIMEOUT_MIN,
                    ),
                    "tcp_rcv_synsent_state_process",
                )
            if not seg.rst:
                sim.note(
                    msg("The ACK does not cover our SYN: answer with a RST."),
                    "tcp_rcv_synsent_state_process",
                )
                tcp_ipv4.reply_reset(sim, sk.ep, seg, msg("SYN_SENT resets an unacceptable ACK."))
            return
        if seg.rst:
            tcp_reset(sim, sk, seg)
            return
        if not seg.syn:
            return
        sk.irs = seg.seq
        sk.rcv_nxt = seg.seq + 1
        sk.rcv_wup = sk.rcv_nxt
        sk.snd_wl1 = seg.seq
        take_syn_options(sim, sk, seg)
        if sk.ecn_ok and not ("ECE" in seg.flags and "CWR" not in seg.flags):
            sk.ecn_ok = False  # tcp_ecn_rcv_synack: the peer did not agree
        clean_rtx(sim, sk, seg.ack, seg)
        tcp_output.update_pacing_rate(sk)  # tcp_ack's tcp_cong_control: the SYN was out
        sk.lsndtime = sim.now  # tcp_finish_connect (v6.4 line 6083)
        sk.snd_wnd = seg.window  # a SYN's window is never scaled
        sk.ever_connected = True
        sim.set_state(sk, "ESTABLISHED", "SYN+ACK", "tcp_finish_connect")
        init_transfer(sim, sk)
        sim.note(
            msg(
                "{ep} gets SYN+ACK: IRS {irs}; the connection is ESTABLISHED.",
                ep=sk.ep.label,
                irs=seg.seq,
            ),
            "tcp_finish_connect",
        )
        sk.rcv_tstamp = sim.now
        calls.arm_keepalive(sim, sk)
        tcp_output.send_ack(sim, sk, "ack", "tcp_send_ack")
        tcp_output.push(sim, sk)
        return
    if seg.rst:
        return
    if seg.syn:
        sk.irs = seg.seq
        sk.rcv_nxt = seg.seq + 1
        sk.rcv_wup = sk.rcv_nxt
        sk.snd_wnd = seg.window
        sk.snd_wl1 = seg.seq
        take_syn_options(sim, sk, seg)
        sim.set_state(sk, "SYN_RECV", "SYN (simultaneous open)", "tcp_rcv_synsent_state_process")
        sim.note(
            msg(
                "Crossed SYNs (simultaneous open): {ep} moves to SYN_RECV and answers with "
                "SYN+ACK.",
                ep=sk.ep.label,
            ),
            "tcp_rcv_synsent_state_process",
        )
        sim.xmit(
            sk.ep,
            ("SYN", "ACK"),
            sk.iss,
            sk.rcv_nxt,
            0,
            min(sk.rcv_wnd, wire.U16_MAX),
            "synack",
            "tcp_send_synack",
            msg(
                "{ep} sends SYN+ACK seq={seq} ack={ack}.",
                ep=sk.ep.label,
                seq=sk.iss,
                ack=sk.rcv_nxt,
            ),
            wire.syn_options(sim, sk),
        )
        tcp_output.ack_sent(sim, sk)


def take_syn_options(sim: Sim, sk: Sock, seg: Seg) -> None:
    """tcp_rcv_synsent_state_process with the options tcp_parse_options took from the
    peer's SYN (or SYN-ACK): each only if this side's sysctl allows it; without window
    scaling both shifts are 0 and the clamp 65535; then tcp_sync_mss and
    tcp_initialize_rcv_mss."""
    s = sim.p.sysctl
    o_mss, o_ws = seg.opt("mss"), seg.opt("wscale")
    if o_mss is not None and o_mss.values[0]:
        sk.mss_clamp = o_mss.values[0]
    sk.sack_ok = seg.opt("sackOK") is not None and bool(s.tcp_sack)
    sk.wscale_ok = o_ws is not None and bool(s.tcp_window_scaling)
    if sk.wscale_ok and o_ws is not None:
        sk.snd_wscale = min(o_ws.values[0], wire.TCP_MAX_WSCALE)
    else:
        sk.snd_wscale = sk.rcv_wscale = 0
        sk.window_clamp = min(sk.window_clamp, 65535)
    sk.ts_ok = seg.tsval is not None and bool(s.tcp_timestamps)
    if sk.ts_ok and seg.tsval is not None:
        sk.ts_recent = seg.tsval
    tcp_output.sync_mss(sk)
    sk.rcv_mss = max(min(sk.advmss, sk.mss_cache, sk.rcv_wnd // 2, wire.TCP_MSS_DEFAULT), 88)


def replace_ts_recent(sk: Sock, seg: Seg) -> None:
    """tcp_replace_ts_recent: keep the peer's TSval to echo when the segment starts at or
    before the last ACK sent (RCV.WUP, RFC 7323's Last.ACK.sent) and is not older."""
    tsval = seg.tsval
    if not sk.ts_ok or tsval is None or seg.seq > sk.rcv_wup:
        return
    if (tsval - sk.ts_recent) % 2**32 < 2**31:
        sk.ts_recent = tsval


def rcv_sync(sim: Sim, sk: Sock, seg: Seg) -> None:
    """tcp_rcv_state_process / tcp_rcv_established for the synchronized states: validate the
    segment, take its ACK (and the state change that ACK completes), then its text."""
    if not seg.has_ack and not seg.rst and not seg.syn:
        return
    if not validate_incoming(sim, sk, seg):
        return
    replace_ts_recent(sk, seg)
    # step 5: the ACK field
    if not rcv_ack(sim, sk, seg):
        if sk.state == "SYN_RECV":
            sim.note(msg("SYN_RECV gets an unacceptable ACK: one RST."), "tcp_rcv_state_process")
            tcp_ipv4.reply_reset(sim, sk.ep, seg, msg("SYN_RECV resets an unacceptable ACK."))
        elif sk.state != "ESTABLISHED":
            challenge_ack(sim, sk, msg("An old or future ACK: challenge ACK."))
        return
    if not ack_state_change(sim, sk, seg):
        return
    # step 7: the segment text
    if not rcv_text(sim, sk, seg):
        return
    if sk.state != "CLOSE" and sk.ep.ehash is sk:
        tcp_output.push(sim, sk)  # tcp_data_snd_check (line 5508)
        sndbuf.check_space(sim, sk)
        ack_snd_check(sim, sk)


def _new_data(sk: Sock, seg: Seg) -> bool:
    """The segment carries data beyond RCV.NXT."""
    return seg.end_seq != seg.seq and seg.end_seq - (1 if seg.fin else 0) > sk.rcv_nxt


def _reset_check(sk: Sock, seg: Seg) -> bool:
    """tcp_reset_check: after the peer's FIN, a RST at RCV.NXT - 1 is accepted too."""
    return sk.state in ("CLOSE_WAIT", "LAST_ACK", "CLOSING") and seg.seq == sk.rcv_nxt - 1


def validate_incoming(sim: Sim, sk: Sock, seg: Seg) -> bool:
    """tcp_validate_incoming (RFC 5961): the sequence check, then RST and SYN. False when the
    segment stops here (answered, if at all, by a duplicate or challenge ACK, or a reset)."""
    rwin = sk.receive_window()
    if not (seg.end_seq >= sk.rcv_wup and seg.seq <= sk.rcv_nxt + rwin):
        if not seg.rst:
            if seg.syn:
                challenge_ack(sim, sk, msg("A SYN outside the window: challenge ACK."))
                return False
            limited = (seg.length == 0 and not seg.fin) and sk.oow_limited(sim.now)
            if not limited:
                sim.note(
                    msg("The segment is outside the receive window: a duplicate ACK answers it."),
                    "tcp_validate_incoming",
                )
                if seg.end_seq != seg.seq and seg.seq < sk.rcv_nxt:
                    dsack_set(sim, sk, seg.seq, min(seg.end_seq, sk.rcv_nxt))  # tcp_send_dupack
                tcp_output.send_ack(sim, sk, "dupack", "tcp_send_dupack")
        elif _reset_check(sk, seg):
            tcp_reset(sim, sk, seg)
        else:
            sim.note(msg("A RST outside the window is ignored."), "tcp_validate_incoming")
        return False
    if seg.rst:
        if seg.seq == sk.rcv_nxt or _reset_check(sk, seg):
            tcp_reset(sim, sk, seg)
        else:
            challenge_ack(
                sim,
                sk,
                msg(
                    "A RST inside the window but not at RCV.NXT: challenge ACK "
                    "(RFC 5961 3.2), the connection survives."
                ),
            )
        return False
    if seg.syn:
        challenge_ack(
            sim, sk, msg("A SYN on a synchronized connection: challenge ACK (RFC 5961 4.2).")
        )
        return False
    return True


def ack_state_change(sim: Sim, sk: Sock, seg: Seg) -> bool:
    """tcp_rcv_state_process's switch on the state once the ACK is accepted: SYN_RECV becomes
    ESTABLISHED; the ACK of our FIN moves FIN_WAIT1, CLOSING and LAST_ACK on. False when the
    socket is gone (or has handed over to a timewait sock)."""
    st = sk.state
    if st == "SYN_RECV":
        sk.ever_connected = True
        if sk.rtt.srtt_us == 0 and sk.ts_ok and seg.tsecr:
            # tcp_synack_rtt_meas(sk, NULL) -> tcp_ack_update_rtt: the TSecr gives a sample
            ts_rtt_sample(sim, sk, seg.tsecr)
            sim.note(
                msg(
                    "No RTT sample from the SYN+ACK's send time (it was retransmitted): the "
                    "ACK's TSecr gives one instead, {ms} ms.",
                    ms=round(sk.rtt.srtt_us / 8000, 3),
                ),
                "tcp_ack_update_rtt",
            )
        sim.set_state(sk, "ESTABLISHED", "ACK", "tcp_rcv_state_process")
        sk.retrans_stamp = None  # net/ipv4/tcp_input.c:6559
        init_transfer(sim, sk)
        sk.snd_wnd = seg.window << sk.snd_wscale
        tcp_output.update_pacing_rate(sk)  # tcp_rcv_state_process, v6.4 line 6583
        sk.lsndtime = sim.now  # no spurious tcp_cwnd_restart on the first data (line 6586)
        sim.note(
            msg(
                "{ep}: the handshake's ACK arrives; TCP_SYN_RECV becomes TCP_ESTABLISHED.",
                ep=sk.ep.label,
            ),
            "tcp_child_process" if sk.listener else "tcp_rcv_state_process",
        )
        sk.snd_wnd = seg.window << sk.snd_wscale
        sk.rcv_tstamp = sim.now
        if sk.held:
            calls.arm_keepalive(sim, sk)
        return True
    fin_acked = sk.snd_una == sk.write_seq
    if st == "FIN_WAIT1" and sk.fin_queued and fin_acked:
        sim.set_state(sk, "FIN_WAIT2", "ACK of FIN", "tcp_rcv_state_process")
        sk.snd_shut = True
        sim.note(
            msg("Our FIN is acknowledged: FIN_WAIT1 becomes FIN_WAIT2."),
            "tcp_rcv_state_process",
        )
        if not sk.dead:
            return True
        if _new_data(sk, seg):
            sim.note(
                msg("Data arrives after close(): the socket is destroyed."),
                "tcp_rcv_state_process",
            )
            calls.done(sim, sk, "data after close", "tcp_done")
            tcp_ipv4.reply_reset(sim, sk.ep, seg, msg("Data after close(): RST."))
            return False
        return not calls.orphan_fin_wait2(sim, sk, seg)
    if st == "CLOSING" and fin_acked:
        sim.note(msg("Our FIN is acknowledged in CLOSING: TIME_WAIT."), "tcp_rcv_state_process")
        tcp_minisocks.time_wait(sim, sk, "TIME_WAIT", 0)
        return False
    if st == "LAST_ACK" and fin_acked:
        sim.note(msg("The last ACK arrives: LAST_ACK becomes CLOSED."), "tcp_rcv_state_process")
        calls.done(sim, sk, "ACK of FIN", "tcp_done")
        return False
    return True


def rcv_text(sim: Sim, sk: Sock, seg: Seg) -> bool:
    """Step 7, the segment text: queued in the states that still receive; after the peer's FIN
    it is ignored, and new data after shutdown(SHUT_RD) resets. False when it reset."""
    st = sk.state
    if st in ("CLOSE_WAIT", "CLOSING", "LAST_ACK") and seg.seq >= sk.rcv_nxt:
        return True
    if st not in ("FIN_WAIT1", "FIN_WAIT2", "ESTABLISHED", "CLOSE_WAIT", "CLOSING", "LAST_ACK"):
        return True
    if st in ("FIN_WAIT1", "FIN_WAIT2") and sk.rcv_shut and _new_data(sk, seg):
        sim.note(
            msg("New data after the receive side was shut: RFC 1122 says reset."),
            "tcp_rcv_state_process",
        )
        tcp_reset(sim, sk, seg, data_after_close=True)
        tcp_ipv4.reply_reset(sim, sk.ep, seg, msg("Data after shutdown: RST."))
        return False
    data_queue(sim, sk, seg)
    return True


def challenge_ack(sim: Sim, sk: Sock, why: Message) -> None:
    sim.note(why, "tcp_send_challenge_ack")
    if sk.oow_limited(sim.now):
        sim.note(msg("Rate limited: no challenge ACK this time."))
        return
    tcp_output.send_ack(sim, sk, "challenge_ack", "tcp_send_challenge_ack")


def init_transfer(sim: Sim, sk: Sock) -> None:
    """tcp_init_transfer / tcp_init_metrics: no RTT sample from a retransmitted handshake
    resets the RTO to TCP_TIMEOUT_FALLBACK (3 s, RFC 6298 5.7); more than one handshake
    retransmission starts with a congestion window of 1."""
    if sk.rtt.srtt_us == 0:
        sk.rto = RTO_FALLBACK
        sim.note(
            msg(
                "The handshake was retransmitted, so there is no RTT sample: the RTO "
                "falls back to 3 s."
            ),
            "tcp_init_metrics",
        )
    if sk.syn_retrans > 1:
        sk.cwnd = 1
    sndbuf.init_buffer_space(sim, sk)
    wire.init_buffer_space(sk)


def data_queue(sim: Sim, sk: Sock, seg: Seg) -> None:
    """tcp_data_queue: in-order data and FIN, out-of-order, old and out-of-window."""
    if seg.length == 0 and not seg.fin:
        return
    if seg.seq == sk.rcv_nxt:
        # tcp_data_queue: at rcv_nxt with a zero window the segment is dropped and ACKed
        # (SKB_DROP_REASON_TCP_ZEROWINDOW), a bare FIN too (its end_seq is past its seq; only
        # later kernels accept a bare FIN there)
        if sk.receive_window() == 0 and (seg.length > 0 or seg.fin):
            sim.note(
                msg("The receive window is zero: the data is dropped and ACKed at once."),
                "tcp_data_queue",
            )
            quickack(sim, sk)
            sk.ack_now = True
            sk.ack_sched = True
            return
        accept_data(sim, sk, seg.seq, seg.length, seg.fin, seg)
        # tcp_ofo_queue (v6.4 line 4721): out-of-order data the in-order data covered again
        dsack_high = sk.rcv_nxt
        while sk.ooo:
            sk.ooo.sort()
            s, n, f = sk.ooo[0]
            if s > sk.rcv_nxt:
                break
            dsack_high = ofo_dsack(sim, sk, s, s + n + (1 if f else 0), dsack_high)
            sk.ooo.pop(0)
            if s + n + (1 if f else 0) > sk.rcv_nxt:
                cut = sk.rcv_nxt - s
                accept_data(sim, sk, sk.rcv_nxt, n - cut, f)
            if not sk.ooo:
                sk.ack_now = True
        sack_remove(sk)
        return
    if seg.end_seq <= sk.rcv_nxt:
        sim.note(msg("Old data (a retransmission): ACK at once."), "tcp_data_queue")
        dsack_set(sim, sk, seg.seq, seg.end_seq)
        quickack(sim, sk)
        sk.ack_sched = True
        sk.ack_now = True
        return
    if seg.seq >= sk.rcv_nxt + sk.receive_window():
        sim.note(msg("Beyond the window (a zero-window probe?): ACK at once."), "tcp_data_queue")
        quickack(sim, sk)
        sk.ack_sched = True
        sk.ack_now = True
        return
    if seg.seq < sk.rcv_nxt:
        dsack_set(sim, sk, seg.seq, sk.rcv_nxt)
        cut = sk.rcv_nxt - seg.seq
        accept_data(sim, sk, sk.rcv_nxt, seg.length - cut, seg.fin, seg)
        sack_remove(sk)
        return
    dup = next(
        (b for b in sk.ooo if b[0] <= seg.seq and seg.end_seq <= b[0] + b[1] + (1 if b[2] else 0)),
        None,
    )
    if dup is not None:
        sim.note(
            msg("A duplicate of queued out-of-order data: ACK at once with a D-SACK block."),
            "tcp_data_queue",
        )
        dsack_set(sim, sk, seg.seq, seg.end_seq)
        sk.ack_sched = True
        sk.ack_now = True
        return
    sim.note(
        msg(
            "Out of order: seq {seq} while {nxt} is expected; queued and ACKed at once.",
            seq=seg.seq,
            nxt=sk.rcv_nxt,
        ),
        "tcp_data_queue",
    )
    sk.ooo.append((seg.seq, seg.length, seg.fin))
    if sk.sack_ok:
        sack_new_ofo(sk, seg.seq, seg.end_seq)
    sk.ack_sched = True
    sk.ack_now = True


def incr_quickack(sk: Sock) -> None:
    """tcp_incr_quickack: rcv_wnd / (2 * rcv_mss) quick ACKs (2 when that is 0), at most
    TCP_MAX_QUICKACKS; the count only grows."""
    qa = min(sk.rcv_wnd // (2 * sk.rcv_mss) or 2, MAX_QUICKACKS)
    sk.quick = max(sk.quick, qa)


def quickack(sim: Sim, sk: Sock) -> None:
    """tcp_enter_quickack_mode: tcp_incr_quickack, leave ping-pong mode
    (inet_csk_exit_pingpong_mode), ato = TCP_ATO_MIN."""
    incr_quickack(sk)
    sk.pingpong = False
    sk.ato = ATO_MIN


def measure_rcv_mss(sk: Sock, seg: Seg) -> None:
    """tcp_measure_rcv_mss (from tcp_event_data_recv): a segment of at least rcv_mss raises
    rcv_mss (up to advmss). A smaller one sets ICSK_ACK_PUSHED (and ICSK_ACK_PUSHED2 when
    PUSHED was already pending), unless it is a run of equal-sized segments of a sender with a
    smaller MSS: then it is that size (with the header at least TCP_MSS_DEFAULT + 20, or at
    least TCP_MIN_MSS + 20 and without PSH/FIN), and twice in a row it becomes rcv_mss. (Later
    kernels also set PUSHED for a full-sized segment with PSH; 6.4 does not.)"""
    lss, sk.last_seg_size = sk.last_seg_size, 0
    n = seg.length
    if n >= sk.rcv_mss:
        sk.rcv_mss = min(n, sk.advmss)
        return
    hdr = TCP_HEADER + (wire.TCPOLEN_TSTAMP_ALIGNED if sk.ts_ok else 0)  # tcp_header_len
    remnant = seg.psh or "PSH" in seg.flags or seg.fin  # TCP_REMNANT (SYN, URG: never here)
    size = n + hdr
    if size >= wire.TCP_MSS_DEFAULT + TCP_HEADER or (
        size >= wire.TCP_MIN_MSS + TCP_HEADER and not remnant
    ):
        sk.last_seg_size = n
        if n == lss:
            sk.rcv_mss = n
            return
    if sk.ack_pushed & ACK_PUSHED:
        sk.ack_pushed |= ACK_PUSHED2
    sk.ack_pushed |= ACK_PUSHED


def accept_data(sim: Sim, sk: Sock, seq: int, n: int, fin: bool, seg: Seg | None = None) -> None:
    """Queue in-order data; ``seg`` is the arriving segment (tcp_event_data_recv measures
    it), None for data taken from the out-of-order queue (tcp_ofo_queue)."""
    if n > 0:
        if seg is not None:
            measure_rcv_mss(sk, seg)
        sk.recv_q += n
        sk.rcv_nxt = seq + n
        sk.ack_sched = True
        event_data_recv(sim, sk, n)
        sim.note(
            msg("{ep} queues {n} bytes; RCV.NXT = {nxt}.", ep=sk.ep.label, n=n, nxt=sk.rcv_nxt),
            "tcp_data_queue",
        )
    if fin:
        sk.rcv_nxt += 1
        tcp_fin(sim, sk)


def event_data_recv(sim: Sim, sk: Sock, n: int) -> None:
    """tcp_event_data_recv: quick ACK at the start, then the delayed-ACK estimator; the
    receive window may grow (tcp_grow_window)."""
    now = sim.now
    if sk.ato == 0:  # the first data: tcp_incr_quickack, ato = TCP_ATO_MIN (ping-pong kept)
        incr_quickack(sk)
        sk.ato = ATO_MIN
    else:
        m = now - sk.lrcvtime
        if m <= ATO_MIN / 2:
            sk.ato = sk.ato / 2 + ATO_MIN / 2
        elif m < sk.ato:
            sk.ato = sk.ato / 2 + m
            if sk.ato > sk.rto:
                sk.ato = sk.rto
        elif m > sk.rto:
            incr_quickack(sk)
    sk.lrcvtime = now
    sk.rcv_tstamp = now
    wire.grow_window(sim, sk, n)


def tcp_fin(sim: Sim, sk: Sock) -> None:
    sk.ack_sched = True
    sk.rcv_shut = True
    sk.sock_done = True
    st = sk.state
    if st in ("SYN_RECV", "ESTABLISHED"):
        sim.set_state(sk, "CLOSE_WAIT", "FIN", "tcp_fin")
        sk.pingpong = True
        sim.note(
            msg(
                "{ep} gets the peer's FIN: CLOSE_WAIT; recv() will return 0 once the "
                "queue is read.",
                ep=sk.ep.label,
            ),
            "tcp_fin",
        )
    elif st == "FIN_WAIT1":
        sim.note(
            msg("A FIN while our own FIN is unacknowledged: simultaneous close, CLOSING."),
            "tcp_fin",
        )
        tcp_output.send_ack(sim, sk, "ack", "tcp_fin")
        sim.set_state(sk, "CLOSING", "FIN", "tcp_fin")
    elif st == "FIN_WAIT2":
        sim.note(msg("The peer's FIN arrives in FIN_WAIT2: ACK it and enter TIME_WAIT."), "tcp_fin")
        tcp_output.send_ack(sim, sk, "ack", "tcp_fin")
        tcp_minisocks.time_wait(sim, sk, "TIME_WAIT", 0)
    sk.ooo = []
    if sk.sack_ok:  # tcp_fin (v6.4 line 4413): tcp_sack_reset drops the SACK and D-SACK blocks
        sk.sacks = []
        sk.dsack = None


def delayed_ack_timeout(sk: Sock) -> float:
    """tcp_send_delayed_ack: ato as it is (icsk_ack.ato); above TCP_DELACK_MIN it is bounded
    by HZ/2 (TCP_DELACK_MAX in pingpong mode) and, once an RTT was measured, by
    max(srtt, TCP_DELACK_MIN); then by icsk_delack_max (TCP_DELACK_MAX). ato is still 0 when
    no data came in yet (tcp_event_data_recv sets TCP_ATO_MIN on the first data; e.g. a bare
    FIN, tcp_fin): the timer is then set for jiffies + 0 and fires at the next tick.
    ICSK_ACK_PUSHED picks TCP_DELACK_MAX as pingpong does; with the last bound it changes
    nothing."""
    ato = sk.ato
    if ato > ATO_MIN:
        pushed = sk.ack_pushed & ACK_PUSHED
        max_ato = DELACK_MAX if sk.pingpong or pushed else 500.0  # HZ / 2
        srtt_us = sk.rtt.srtt_us >> 3
        if srtt_us:
            rtt = max(float(-(-srtt_us // 1000)), ATO_MIN)  # usecs_to_jiffies rounds up
            max_ato = min(max_ato, rtt)
        ato = min(ato, max_ato)
    return min(ato, DELACK_MAX)


def delack_deadline(now: float, ato: float) -> float:
    """jiffies + ato: with ato 0 the timer expires at once and runs at the next timer tick
    (1 ms, CONFIG_HZ=1000)."""
    return now + ato if ato > 0 else float(math.floor(now + 1e-9) + 1)


def ack_snd_check(sim: Sim, sk: Sock) -> None:
    """__tcp_ack_snd_check: ACK now, or arm the delayed-ACK timer."""
    if not sk.ack_sched:
        return
    in_quick = sk.quick > 0 and not sk.pingpong
    full = sk.rcv_nxt - sk.rcv_wup > sk.rcv_mss and wire.raw_select_window(sim, sk) >= sk.rcv_wnd
    if full or in_quick or sk.ack_now:
        tcp_output.send_ack(sim, sk, "ack", "__tcp_ack_snd_check")
        return
    if not sk.timer("delack").armed:
        ato = delayed_ack_timeout(sk)
        at = delack_deadline(sim.now, ato)
        sk.arm("delack", at)
        if ato > 0:
            text = msg("{ep} delays its ACK by {t} ms.", ep=sk.ep.label, t=round(ato, 3))
        else:
            text = msg(
                "{ep} has received no data yet, so its ACK timeout (ato) is still 0: the "
                "delayed-ACK timer fires at the next tick, {t} ms from now.",
                ep=sk.ep.label,
                t=round(at - sim.now, 3),
            )
        sim.note(text, "tcp_send_delayed_ack")
