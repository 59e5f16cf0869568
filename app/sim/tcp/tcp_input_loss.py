"""The sender's loss-recovery state machine and its congestion window, after
``net/ipv4/tcp_input.c`` (kept apart from app.sim.tcp.tcp_input for size):
``tcp_fastretrans_alert`` (Open, Disorder, Recovery and Loss), ``tcp_identify_packet_loss``
(RACK with SACK, NewReno without), ``tcp_time_to_recover``, ``tcp_enter_recovery``, Proportional
Rate Reduction (``tcp_init_cwnd_reduction``, ``tcp_cwnd_reduction``,
``tcp_end_cwnd_reduction``, RFC 6937 with the slow-start reduction bound), and
``tcp_cong_control``'s growth with CUBIC's ssthresh (``cubictcp_recalc_ssthresh``).

Simplifications: no undo (``tcp_try_undo_*``: a spurious retransmission keeps the reduced
window), no F-RTO, no ECN (CWR), no SACK reneging; above ssthresh the window grows by one
segment per window of ACKed segments (``tcp_cong_avoid_ai``; CUBIC's curve,
``bictcp_update``, is app.sim.congestion's, not this model's); the window grows only while the
sender is cwnd-limited as ``tcp_is_cwnd_limited`` tells (``tcp_cwnd_validate`` keeps the record;
its restart after idle is not modelled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.congestion.cubic import recalc_ssthresh
from app.sim.core.i18n import msg
from app.sim.core.tcp import TCP_INFINITE_SSTHRESH
from app.sim.tcp import tcp_output, tcp_recovery, tcp_sack
from app.sim.tcp.tcp_sack import (
    FLAG_DATA_ACKED,
    FLAG_FORWARD_PROGRESS,
    FLAG_LOST_RETRANS,
    FLAG_SET_XMIT_TIMER,
    FLAG_SND_UNA_ADVANCED,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim
    from app.sim.tcp.sock import Sock

TCP_FASTRETRANS_THRESH = 3  # net.ipv4.tcp_reordering's default


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


def _open_states(sim: Sim, sk: Sock, flag: int, num_dupack: int) -> tuple[int, bool]:
    """Step E for Open and Disorder (and Loss once it is over): count a Reno duplicate ACK,
    look for loss, and enter Recovery when it is proven."""
    if not sk.sack_ok:
        if flag & FLAG_SND_UNA_ADVANCED:
            sk.reno_sacked = 0
        tcp_sack.add_reno_sack(sk, num_dupack)
    flag = identify_packet_loss(sim, sk, flag)
    if not time_to_recover(sk):
        try_to_open(sk)
        return flag, False
    enter_recovery(sim, sk)
    return flag, True


def _loss_state(sk: Sock, flag: int, num_dupack: int) -> bool | None:
    """tcp_process_loss (net/ipv4/tcp_input.c:2827) without undo and F-RTO: all up to high_seq acknowledged ends Loss
    (tcp_try_undo_recovery; True), held without SACK until something above it is (None);
    else the lost segments go again (False, REXMIT_LOST)."""
    if sk.snd_una >= sk.high_seq:
        if not sk.sack_ok and sk.snd_una == sk.high_seq:
            return None
        sk.ca_state = "Open"
        return True
    if not sk.sack_ok:
        if sk.snd_nxt > sk.high_seq and num_dupack:
            tcp_sack.add_reno_sack(sk, num_dupack)
        elif flag & FLAG_SND_UNA_ADVANCED:
            sk.reno_sacked = 0
    return False


def fastretrans_alert(
    sim: Sim, sk: Sock, prior_snd_una: int, num_dupack: int, flag: int
) -> tuple[int, bool]:
    """tcp_fastretrans_alert (net/ipv4/tcp_input.c:2953): run the recovery state machine for a dubious ACK (a duplicate,
    one with SACK blocks, or any ACK outside Open). Returns (flags, whether lost segments
    are to be retransmitted: REXMIT_LOST)."""
    if not sk.rtx and sk.reno_sacked:
        sk.reno_sacked = 0
    if sk.ca_state == "Recovery" and sk.snd_una >= sk.high_seq:
        if _exit_recovery(sim, sk):
            return flag, False
    if sk.ca_state == "Recovery":
        if not flag & FLAG_SND_UNA_ADVANCED and not sk.sack_ok:
            tcp_sack.add_reno_sack(sk, num_dupack)
        return identify_packet_loss(sim, sk, flag), True
    if sk.ca_state == "Loss":
        over = _loss_state(sk, flag, num_dupack)
        flag = identify_packet_loss(sim, sk, flag)
        if not over and not flag & FLAG_LOST_RETRANS:
            return flag, over is False
    flag, recover = _open_states(sim, sk, flag, num_dupack)
    return flag, recover


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


def xmit_recovery(sim: Sim, sk: Sock, rexmit: bool) -> None:
    """tcp_xmit_recovery (net/ipv4/tcp_input.c:3727): retransmit what is marked lost, within cwnd."""
    if not rexmit or sk.state == "SYN_SENT":
        return
    tcp_output.xmit_retransmit_queue(sim, sk)
