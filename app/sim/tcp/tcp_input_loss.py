"""The sender's loss-recovery state machine and its congestion window, after
``net/ipv4/tcp_input.c`` (kept apart from app.sim.tcp.tcp_input for size):
``tcp_fastretrans_alert`` (Open, Disorder, Recovery and Loss), ``tcp_identify_packet_loss``
(RACK with SACK, NewReno without), ``tcp_time_to_recover``, ``tcp_enter_recovery``, Proportional
Rate Reduction (``tcp_init_cwnd_reduction``, ``tcp_cwnd_reduction``,
``tcp_end_cwnd_reduction``, RFC 6937 with the slow-start reduction bound), and
``tcp_cong_control``'s growth with CUBIC's ssthresh (``cubictcp_recalc_ssthresh``).

After an RTO, Loss runs 6.4's F-RTO (RFC 5682, ``tcp_frto``, default 2) and undo
(``tcp_process_loss``, ``tcp_try_undo_loss``, ``tcp_try_undo_recovery``, ``tcp_may_undo``,
``tcp_packet_delayed``, ``tcp_undo_cwnd_reduction`` with CUBIC's ``undo_cwnd``,
``tcp_reno_undo_cwnd``). Simplifications: Recovery's undo is not modelled (``tcp_enter_recovery``
leaves no undo marker here, so ``tcp_try_undo_partial`` / ``tcp_try_undo_dsack`` never fire and a
spurious fast retransmission keeps the reduced window), no ECN (CWR), no SACK reneging; above ssthresh the window grows by one
segment per window of ACKed segments (``tcp_cong_avoid_ai``; CUBIC's curve,
``bictcp_update``, is app.sim.congestion's, not this model's); the window grows only while the
sender is cwnd-limited as ``tcp_is_cwnd_limited`` tells (``tcp_cwnd_validate`` keeps the record;
its restart after idle is not modelled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.congestion.cubic import recalc_ssthresh
from app.sim.core.i18n import Message, msg
from app.sim.core.tcp import TCP_INFINITE_SSTHRESH
from app.sim.tcp import tcp_output, tcp_recovery, tcp_sack
from app.sim.tcp.tcp_sack import (
    FLAG_DATA_ACKED,
    FLAG_DATA_SACKED,
    FLAG_FORWARD_PROGRESS,
    FLAG_LOST_RETRANS,
    FLAG_ORIG_SACK_ACKED,
    FLAG_SET_XMIT_TIMER,
    FLAG_SND_UNA_ADVANCED,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim
    from app.sim.tcp.sock import Sock

TCP_FASTRETRANS_THRESH = 3  # net.ipv4.tcp_reordering's default
# what tcp_xmit_recovery sends (REXMIT_*, lines 113-115 of v6.4's net/ipv4/tcp_input.c)
REXMIT_NONE = 0
REXMIT_LOST = 1  # the segments marked lost
REXMIT_NEW = 2  # F-RTO: new data (tcp_process_loss's step 2.b)


def in_cwnd_reduction(sk: Sock) -> bool:
    """tcp_in_cwnd_reduction (include/net/tcp.h:1250): CWR or Recovery."""
    return sk.ca_state in ("CWR", "Recovery")


def cubic_ssthresh(sk: Sock) -> int:
    """cubictcp_recalc_ssthresh (net/ipv4/tcp_cubic.c:341): cwnd × 717/1024 (at least 2); W_max is
    cwnd, or less with fast convergence when the loss came below the last W_max."""
    ssthresh, sk.cubic_w_max = recalc_ssthresh(sk.cwnd, sk.cubic_w_max)
    return ssthresh


def init_cwnd_reduction(sim: Sim, sk: Sock) -> None:
    """tcp_init_cwnd_reduction (net/ipv4/tcp_input.c:2611): recovery ends at snd_nxt; PRR starts counting from the window
    it had (prior_cwnd); ssthresh from the congestion control."""
    sk.high_seq = sk.snd_nxt
    sk.tlp_high_seq = 0
    sk.snd_cwnd_cnt = 0
    sk.prior_cwnd = sk.cwnd
    sk.prr_delivered = 0
    sk.prr_out = 0
    sk.ssthresh = cubic_ssthresh(sk)


def enter_recovery(sim: Sim, sk: Sock) -> None:
    """tcp_enter_recovery (net/ipv4/tcp_input.c:2801): start a window reduction (unless one runs) and enter Recovery."""
    sk.undo_marker = None  # the model's simplification: 6.4 calls tcp_init_undo here
    sk.prior_ssthresh = 0
    if not in_cwnd_reduction(sk):
        init_cwnd_reduction(sim, sk)
    sk.ca_state = "Recovery"
    sim.note(
        msg(
            "Loss is proven: fast recovery until {hs} is acknowledged; ssthresh = {ss} = "
            "{cw} × 717/1024 (CUBIC), and PRR brings cwnd down to it as ACKs arrive.",
            hs=sk.high_seq,
            ss=sk.ssthresh,
            cw=sk.prior_cwnd,
        ),
        "tcp_enter_recovery",
    )


def cwnd_reduction(sim: Sim, sk: Sock, newly_acked_sacked: int, newly_lost: int, flag: int) -> None:
    """tcp_cwnd_reduction (net/ipv4/tcp_input.c:2625; PRR, RFC 6937): while more than ssthresh is in flight, send in
    proportion ssthresh/prior_cwnd of what was delivered; below it, as much as was delivered
    (one more when snd_una advanced without new loss: the slow-start reduction bound), up to
    ssthresh; always one on entering recovery. cwnd = in flight + that count."""
    if newly_acked_sacked <= 0 or not sk.prior_cwnd:
        return
    in_flight = tcp_sack.packets_in_flight(sk)
    delta = sk.ssthresh - in_flight
    sk.prr_delivered += newly_acked_sacked
    if delta < 0:
        dividend = sk.ssthresh * sk.prr_delivered + sk.prior_cwnd - 1
        sndcnt = dividend // sk.prior_cwnd - sk.prr_out
    else:
        sndcnt = max(sk.prr_delivered - sk.prr_out, newly_acked_sacked)
        if flag & FLAG_SND_UNA_ADVANCED and not newly_lost:
            sndcnt += 1
        sndcnt = min(delta, sndcnt)
    sndcnt = max(sndcnt, 0 if sk.prr_out else 1)
    sk.cwnd = in_flight + sndcnt
    sim.note(
        msg(
            "PRR: {d} delivered in recovery, {o} sent; {f} in flight, ssthresh {ss}: cwnd = {cw}.",
            d=sk.prr_delivered,
            o=sk.prr_out,
            f=in_flight,
            ss=sk.ssthresh,
            cw=sk.cwnd,
        ),
        "tcp_cwnd_reduction",
    )


def end_cwnd_reduction(sim: Sim, sk: Sock) -> None:
    """tcp_end_cwnd_reduction (net/ipv4/tcp_input.c:2651): recovery is over; cwnd is set to ssthresh."""
    if sk.ssthresh < TCP_INFINITE_SSTHRESH:
        sk.cwnd = sk.ssthresh
    sim.note(
        msg(
            "Recovery ends: everything up to {hs} is acknowledged; cwnd = ssthresh = {cw}.",
            hs=sk.high_seq,
            cw=sk.cwnd,
        ),
        "tcp_end_cwnd_reduction",
    )


def any_retrans_done(sk: Sock) -> bool:
    """tcp_any_retrans_done (net/ipv4/tcp_input.c:2441): a retransmission in flight, or the head was retransmitted."""
    return tcp_sack.retrans_out(sk) > 0 or bool(sk.rtx and sk.rtx[0].retrans)


def try_to_open(sk: Sock) -> None:
    """tcp_try_to_open (net/ipv4/tcp_input.c:2695) / tcp_try_keep_open (net/ipv4/tcp_input.c:2681): Disorder while anything is SACKed, lost or
    retransmitted, else Open (high_seq = snd_nxt on a change)."""
    left_out = tcp_sack.sacked_out(sk) + tcp_sack.lost_out(sk)
    if not any_retrans_done(sk):
        sk.retrans_stamp = None  # tcp_try_to_open clears retrans_stamp (line 2702)
    state = "Disorder" if left_out or any_retrans_done(sk) else "Open"
    if sk.ca_state != state:
        sk.ca_state = state
        sk.high_seq = sk.snd_nxt


def time_to_recover(sk: Sock) -> bool:
    """tcp_time_to_recover (net/ipv4/tcp_input.c:2321): with RACK (tcp_recovery 1) only a segment marked lost starts
    recovery (the classic duplicate-ACK rule is NewReno's head marking)."""
    return tcp_sack.lost_out(sk) > 0


def identify_packet_loss(sim: Sim, sk: Sock, flag: int) -> int:
    """tcp_identify_packet_loss (net/ipv4/tcp_input.c:2922): NewReno without SACK, else RACK; a RACK timer replaces the
    RTO (FLAG_SET_XMIT_TIMER cleared); a lost retransmission sets FLAG_LOST_RETRANS."""
    if not sk.rtx:
        return flag
    if not sk.sack_ok:
        tcp_recovery.newreno_mark_lost(sim, sk, bool(flag & FLAG_SND_UNA_ADVANCED))
        return flag
    prior_retrans = tcp_sack.retrans_out(sk)
    if tcp_recovery.mark_lost(sim, sk):
        flag &= ~FLAG_SET_XMIT_TIMER
    if prior_retrans > tcp_sack.retrans_out(sk):
        flag |= FLAG_LOST_RETRANS
    return flag


def _exit_recovery(sim: Sim, sk: Sock) -> bool:
    """tcp_fastretrans_alert's step D for Recovery: snd_una reached high_seq. Without SACK
    the state is held until something above high_seq is acknowledged
    (tcp_is_non_sack_preventing_reopen, net/ipv4/tcp_input.c:2517): True, and the ACK is done."""
    if not sk.sack_ok:
        sk.reno_sacked = 0
        if sk.snd_una == sk.high_seq:
            return True
    sk.ca_state = "Open"  # tcp_try_undo_recovery without an undo
    end_cwnd_reduction(sim, sk)
    return False


def try_undo_dsack(sim: Sim, sk: Sock) -> bool:
    """tcp_try_undo_dsack (net/ipv4/tcp_input.c:2562): D-SACKs have shown every
    retransmission of the episode needless (undo_retrans 0): undo the reduction. In the model
    only a Loss episode leaves an undo marker, so this undoes an RTO whose D-SACKs came after
    Loss ended (RACK's reo_wnd_persist is not modelled)."""
    if sk.undo_marker is None or sk.undo_retrans:
        return False
    undo_cwnd_reduction(sim, sk, False)
    _undo_note(
        sim,
        sk,
        msg(
            "D-SACKs show that every retransmission reached the peer twice: the timeout was spurious."
        ),
        "tcp_try_undo_dsack",
    )
    return True


def _open_states(sim: Sim, sk: Sock, flag: int, num_dupack: int) -> tuple[int, bool]:
    """Step E for Open and Disorder (and Loss once it is over): count a Reno duplicate ACK,
    try a D-SACK undo (Open and Disorder), look for loss, and enter Recovery when it is
    proven."""
    if not sk.sack_ok:
        if flag & FLAG_SND_UNA_ADVANCED:
            sk.reno_sacked = 0
        tcp_sack.add_reno_sack(sk, num_dupack)
    if sk.ca_state in ("Open", "Disorder"):
        try_undo_dsack(sim, sk)
    flag = identify_packet_loss(sim, sk, flag)
    if not time_to_recover(sk):
        try_to_open(sk)
        return flag, False
    enter_recovery(sim, sk)
    return flag, True


def ts_before(a: int, b: int) -> bool:
    """before() (include/net/tcp.h): a is earlier than b in 32-bit sequence space."""
    return (a - b) % 2**32 >= 2**31


def packet_delayed(sk: Sock) -> bool:
    """tcp_packet_delayed (net/ipv4/tcp_input.c:2419) with tcp_tsopt_ecr_before
    (net/ipv4/tcp_input.c:2400): the ACK echoes a timestamp from before the first
    retransmission, so what it acknowledges is the original transmission (Eifel
    detection, RFC 3522)."""
    stamp = sk.retrans_stamp
    tsecr = sk.rcv_tsecr
    return bool(stamp is not None and tsecr and ts_before(tsecr, stamp))


def may_undo(sk: Sock) -> bool:
    """tcp_may_undo (net/ipv4/tcp_input.c:2512): an undo marker, and either every
    retransmission was shown needless by a D-SACK (undo_retrans 0) or the packet was only
    delayed."""
    return sk.undo_marker is not None and (sk.undo_retrans == 0 or packet_delayed(sk))


def undo_cwnd_reduction(sim: Sim, sk: Sock, unmark_loss: bool) -> None:
    """tcp_undo_cwnd_reduction (net/ipv4/tcp_input.c:2483): forget the lost marks (for
    Loss); with a prior ssthresh, cwnd comes back through CUBIC's undo_cwnd
    (tcp_reno_undo_cwnd, net/ipv4/tcp_cong.c:525: max(cwnd, prior_cwnd)) and ssthresh to
    the prior one when that was higher; the undo marker is spent and RACK re-examines losses."""
    if unmark_loss:
        for o in sk.rtx:
            o.lost = False
    if sk.prior_ssthresh:
        sk.cwnd = max(sk.cwnd, sk.prior_cwnd)
        if sk.prior_ssthresh > sk.ssthresh:
            sk.ssthresh = sk.prior_ssthresh
    sk.undo_marker = None
    sk.rack_advanced = True


def non_sack_preventing_reopen(sk: Sock) -> bool:
    """tcp_is_non_sack_preventing_reopen (net/ipv4/tcp_input.c:2517): without SACK the
    state is held until something above high_seq is acknowledged."""
    if sk.snd_una == sk.high_seq and not sk.sack_ok:
        if not any_retrans_done(sk):
            sk.retrans_stamp = None
        return True
    return False


def _undo_note(sim: Sim, sk: Sock, why: Message, src: str) -> None:
    sim.note(
        msg(
            "{why} The RTO's reduction is undone: cwnd = {cw}, ssthresh = {ss}.",
            why=why,
            cw=sk.cwnd,
            ss=sk.ssthresh if sk.ssthresh < TCP_INFINITE_SSTHRESH else "∞",
        ),
        src,
    )


def try_undo_recovery(sim: Sim, sk: Sock) -> bool:
    """tcp_try_undo_recovery (net/ipv4/tcp_input.c:2533) for Loss: everything up to high_seq
    is acknowledged; undo if tcp_may_undo allows; back to Open unless NewReno holds the
    state (True)."""
    if may_undo(sk):
        undo_cwnd_reduction(sim, sk, False)
        _undo_note(
            sim,
            sk,
            msg(
                "The ACK echoes a timestamp from before the retransmission: the timeout was spurious."
            ),
            "tcp_try_undo_recovery",
        )
    if non_sack_preventing_reopen(sk):
        return True
    sk.ca_state = "Open"
    return False


def try_undo_loss(sim: Sim, sk: Sock, frto_undo: bool) -> bool:
    """tcp_try_undo_loss (net/ipv4/tcp_input.c:2578): in Loss, undo when F-RTO found the
    timeout spurious (frto_undo) or tcp_may_undo allows: the lost marks are dropped, the
    window restored, icsk_retransmits reset, and the state is Open (with SACK, or after
    F-RTO)."""
    if not (frto_undo or may_undo(sk)):
        return False
    undo_cwnd_reduction(sim, sk, True)
    if frto_undo:
        why = msg(
            "F-RTO: this ACK covers data that was never retransmitted, so the original "
            "transmission arrived: the timeout was spurious."
        )
    else:
        why = msg(
            "The ACK echoes a timestamp from before the retransmission: the original "
            "arrived, the timeout was spurious."
        )
    _undo_note(sim, sk, why, "tcp_try_undo_loss")
    sk.retransmits = 0
    if non_sack_preventing_reopen(sk):
        return True
    if frto_undo or sk.sack_ok:
        sk.ca_state = "Open"
    return True


def _frto(sim: Sim, sk: Sock, flag: int, num_dupack: int, recovered: bool) -> int | None:
    """tcp_process_loss's F-RTO branches (RFC 5682 3.1, SACK-enhanced): the REXMIT_ value
    when they decide the ACK, else None (conventional loss recovery goes on)."""
    if flag & FLAG_ORIG_SACK_ACKED and try_undo_loss(sim, sk, True):
        return REXMIT_NONE
    if sk.snd_nxt > sk.high_seq:
        if flag & FLAG_DATA_SACKED or num_dupack:
            sk.frto = False  # step 3.a: the loss was real
            sim.note(
                msg(
                    "F-RTO: a duplicate ACK or SACK after the new data: the loss was real; "
                    "conventional loss recovery goes on."
                ),
                "tcp_process_loss",
            )
    elif flag & FLAG_SND_UNA_ADVANCED and not recovered:
        sk.high_seq = sk.snd_nxt
        if sk.has_unsent() and sk.snd_una + sk.snd_wnd > sk.snd_nxt:
            sim.note(
                msg(
                    "F-RTO: the retransmission is acknowledged; instead of retransmitting "
                    "more, new data goes out to test whether the timeout was spurious."
                ),
                "tcp_process_loss",
            )
            return REXMIT_NEW
        sk.frto = False
    return None


def process_loss(sim: Sim, sk: Sock, flag: int, num_dupack: int) -> int:
    """tcp_process_loss (net/ipv4/tcp_input.c:2827): an ACK in Loss. An advancing ACK may
    undo (tcp_try_undo_loss); F-RTO's steps while tp->frto; all up to high_seq acknowledged
    ends Loss (tcp_try_undo_recovery); else the lost segments go again (REXMIT_LOST)."""
    recovered = sk.snd_una >= sk.high_seq
    if flag & FLAG_SND_UNA_ADVANCED and try_undo_loss(sim, sk, False):
        return REXMIT_NONE
    if sk.frto:
        rexmit = _frto(sim, sk, flag, num_dupack, recovered)
        if rexmit is not None:
            return rexmit
    if recovered:
        try_undo_recovery(sim, sk)
        return REXMIT_NONE
    if not sk.sack_ok:
        if sk.snd_nxt > sk.high_seq and num_dupack:
            tcp_sack.add_reno_sack(sk, num_dupack)
        elif flag & FLAG_SND_UNA_ADVANCED:
            sk.reno_sacked = 0
    return REXMIT_LOST


def fastretrans_alert(
    sim: Sim, sk: Sock, prior_snd_una: int, num_dupack: int, flag: int
) -> tuple[int, int]:
    """tcp_fastretrans_alert (net/ipv4/tcp_input.c:2953): run the recovery state machine for a
    dubious ACK (a duplicate, one with SACK blocks, or any ACK outside Open). Returns (flags,
    what tcp_xmit_recovery is to send: REXMIT_NONE, REXMIT_LOST or F-RTO's REXMIT_NEW)."""
    if not sk.rtx and sk.reno_sacked:
        sk.reno_sacked = 0
    if sk.ca_state == "Open":
        sk.retrans_stamp = None  # step D clears retrans_stamp in Open (line 2982)
    if sk.ca_state == "Recovery" and sk.snd_una >= sk.high_seq:
        if _exit_recovery(sim, sk):
            return flag, REXMIT_NONE
    if sk.ca_state == "Recovery":
        if not flag & FLAG_SND_UNA_ADVANCED and not sk.sack_ok:
            tcp_sack.add_reno_sack(sk, num_dupack)
        return identify_packet_loss(sim, sk, flag), REXMIT_LOST
    rexmit = REXMIT_NONE
    if sk.ca_state == "Loss":
        rexmit = process_loss(sim, sk, flag, num_dupack)
        flag = identify_packet_loss(sim, sk, flag)
        if sk.ca_state != "Open" and not flag & FLAG_LOST_RETRANS:
            return flag, rexmit
    flag, recover = _open_states(sim, sk, flag, num_dupack)
    return flag, REXMIT_LOST if recover else rexmit


def may_raise_cwnd(sk: Sock, flag: int) -> bool:
    """tcp_may_raise_cwnd (net/ipv4/tcp_input.c:3475): on in-order delivery only, unless reordering is high."""
    if sk.reordering > TCP_FASTRETRANS_THRESH:
        return bool(flag & FLAG_FORWARD_PROGRESS)
    return bool(flag & FLAG_DATA_ACKED)


def is_cwnd_limited(sk: Sock) -> bool:
    """tcp_is_cwnd_limited (include/net/tcp.h:1305): the last window filled cwnd; or, in slow
    start, cwnd is below twice the most packets that were out (an application-limited sender
    may still double what it used)."""
    if sk.is_cwnd_limited:
        return True
    if sk.cwnd < sk.ssthresh:
        return sk.cwnd < 2 * sk.max_packets_out
    return False


def cong_avoid(sk: Sock, acked: int) -> None:
    """cubictcp_cong_avoid (net/ipv4/tcp_cubic.c:324): slow start up to ssthresh
    (tcp_slow_start (net/ipv4/tcp_cong.c:458)) and, above it, tcp_cong_avoid_ai
    (net/ipv4/tcp_cong.c:472) with one segment per window; nothing unless the sender is
    cwnd-limited."""
    if not is_cwnd_limited(sk):
        return
    if sk.cwnd < sk.ssthresh:
        cwnd = min(sk.cwnd + acked, sk.ssthresh)
        acked -= cwnd - sk.cwnd
        sk.cwnd = cwnd
        if not acked:
            return
    w = sk.cwnd
    if sk.snd_cwnd_cnt >= w:
        sk.snd_cwnd_cnt = 0
        sk.cwnd += 1
    sk.snd_cwnd_cnt += acked
    if sk.snd_cwnd_cnt >= w:
        delta = sk.snd_cwnd_cnt // w
        sk.snd_cwnd_cnt -= delta * w
        sk.cwnd += delta


def cong_control(sim: Sim, sk: Sock, delivered: int, newly_lost: int, flag: int) -> None:
    """tcp_cong_control (net/ipv4/tcp_input.c:3495): PRR in Recovery (and CWR), else growth when the window may rise."""
    if in_cwnd_reduction(sk):
        cwnd_reduction(sim, sk, delivered, newly_lost, flag)
    elif may_raise_cwnd(sk, flag):
        cong_avoid(sk, delivered)


def xmit_recovery(sim: Sim, sk: Sock, rexmit: int) -> None:
    """tcp_xmit_recovery (net/ipv4/tcp_input.c:3727): retransmit what is marked lost, within
    cwnd; for F-RTO's REXMIT_NEW, new data first (__tcp_push_pending_frames, Nagle off), and
    when none could go, F-RTO ends and the lost segments go instead."""
    if rexmit == REXMIT_NONE or sk.state == "SYN_SENT":
        return
    if rexmit == REXMIT_NEW:
        tcp_output.push(sim, sk, nagle=False)
        if sk.snd_nxt > sk.high_seq:
            return
        sk.frto = False
    tcp_output.xmit_retransmit_queue(sim, sk)
