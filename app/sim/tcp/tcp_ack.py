"""An incoming ACK at the sender, after ``net/ipv4/tcp_input.c``'s ``tcp_ack`` (moved out of
app.sim.tcp.tcp_input for size): the window update, the SACK scoreboard (app.sim.tcp.tcp_sack),
``tcp_clean_rtx_queue`` with its RTT sample, the tail-loss-probe episode, the recovery state
machine for a dubious ACK (app.sim.tcp.tcp_input_loss), the timers, ``tcp_cong_control`` and
``tcp_xmit_recovery``; and ``tcp_ack_probe`` when nothing was in flight.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import sndbuf, tcp_input_loss, tcp_output, tcp_recovery, tcp_sack
from app.sim.tcp.sock import RTO_MAX, RTO_MIN, OutSeg, Seg, Sock
from app.sim.tcp.tcp_sack import (
    FLAG_CA_ALERT,
    FLAG_DATA,
    FLAG_DATA_ACKED,
    FLAG_DSACKING_ACK,
    FLAG_NOT_DUP,
    FLAG_ORIG_SACK_ACKED,
    FLAG_RETRANS_DATA_ACKED,
    FLAG_SET_XMIT_TIMER,
    FLAG_SND_UNA_ADVANCED,
    FLAG_SYN_ACKED,
    FLAG_WIN_UPDATE,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def rtt_sample(sk: Sock, m_us: int) -> None:
    """tcp_ack_update_rtt (net/ipv4/tcp_input.c:3087): one RTT sample (µs): min_rtt
    (tcp_update_rtt_min, net/ipv4/tcp_input.c:3071, kept by the socket's SockRtt), srtt and
    the RTO."""
    sk.rtt.sample(m_us, sk.snd_una, sk.snd_nxt)
    sk.rto = max(min(sk.rtt.rto_s * 1000, RTO_MAX), RTO_MIN)


def ts_rtt_sample(sim: Sim, sk: Sock, tsecr: int) -> None:
    """tcp_ack_update_rtt's timestamp path: now - (TSecr - tsoffset) on the 1 ms clock."""
    delta = max(1, (int(sim.now) - (tsecr - sk.ts_off)) % 2**32)
    rtt_sample(sk, delta * 1000)


def _spurious_retrans(sk: Sock, o: OutSeg) -> bool:
    """tcp_skb_spurious_retrans (net/ipv4/tcp_input.c:2409): a retransmitted segment whose
    ACK echoes a timestamp from before its last transmission was acknowledged by the
    original; RACK does not take its (re)transmission time."""
    return bool(o.retrans and sk.rcv_tsecr and (sk.rcv_tsecr - int(o.sent_ms)) % 2**32 >= 2**31)


def _acked_marks(
    sim: Sim, sk: Sock, acked: list[OutSeg], ack: int, prior_fack: int
) -> tuple[int, int]:
    """The per-segment part of tcp_clean_rtx_queue: flags, delivery (SACKed segments were
    counted when SACKed), RACK for never-SACKed ones, reordering when a never-retransmitted
    hole below the highest SACK is filled. Returns (flags, delivered)."""
    flag = 0
    delivered = 0
    reord = sk.snd_nxt
    for o in acked:
        if o.retrans:
            flag |= FLAG_RETRANS_DATA_ACKED
        elif not o.sacked:
            reord = min(reord, o.seq)
            if o.end <= sk.high_seq:
                flag |= FLAG_ORIG_SACK_ACKED  # never retransmitted data is acknowledged
        if not o.sacked and sk.sack_ok:
            delivered += 1
            if not _spurious_retrans(sk, o):
                tcp_recovery.rack_advance(sim, sk, o.retrans > 0, o.tx, o.sent_ms)
        flag |= FLAG_SYN_ACKED if o.syn else FLAG_DATA_ACKED
    sk.rtx = [o for o in sk.rtx if o.end > ack]
    if not sk.sack_ok:
        delivered = tcp_sack.remove_reno_sacks(sk, len(acked))
        if flag & FLAG_RETRANS_DATA_ACKED:  # without SACK the progress may be the retransmission's
            flag &= ~FLAG_ORIG_SACK_ACKED
    elif reord < prior_fack:
        tcp_sack.check_sack_reordering(sk, reord)
    return flag, delivered


def clean_rtx(
    sim: Sim, sk: Sock, ack: int, seg: Seg | None = None, set_timer: bool = True
) -> tuple[int, int]:
    """tcp_clean_rtx_queue (net/ipv4/tcp_input.c:3238): drop acknowledged segments; one RTT sample from the newest
    never-retransmitted, else (Karn) from the ACK's TSecr when timestamps are on
    (tcp_ack_update_rtt). Returns (flags, newly delivered segments). ``set_timer``: re-arm
    the timers here (tcp_set_xmit_timer; tcp_ack does it after the recovery state machine)."""
    acked = [o for o in sk.rtx if o.end <= ack]
    if not acked:
        return 0, 0
    fresh = [o for o in acked if o.retrans == 0]
    prior_fack = tcp_sack.highest_sack_seq(sk)
    sk.snd_una = ack  # tcp_snd_una_update, before the queue is cleaned
    flag, delivered = _acked_marks(sim, sk, acked, ack, prior_fack)
    sndbuf.acked(sk, ack)
    if fresh:
        rtt_sample(sk, max(1, int(round((sim.now - fresh[-1].first_ms) * 1000))))
    elif sk.ts_ok and seg is not None and seg.tsecr:
        ts_rtt_sample(sim, sk, seg.tsecr)
    sk.backoff = 0
    sk.retransmits = 0
    if any(o.syn for o in acked):  # tcp_clean_rtx_queue, net/ipv4/tcp_input.c line 3320
        sk.retrans_stamp = None
    if set_timer:
        tcp_output.set_xmit_timer(sim, sk)
    return flag | FLAG_SET_XMIT_TIMER, delivered


def _window(sim: Sim, sk: Sock, seg: Seg, prior: int) -> int:
    """tcp_ack_update_window (net/ipv4/tcp_input.c:3552): a non-SYN segment's window is scaled by the peer's shift;
    tcp_may_update_window (net/ipv4/tcp_input.c:3518) holds for an ACK that moves snd_wl1 on (a later sequence number) or
    offers more window, even when the window itself is unchanged: FLAG_WIN_UPDATE. A window
    that changes while data waits runs tcp_slow_start_after_idle_check."""
    ack = seg.ack
    nwin = seg.window if seg.syn else seg.window << sk.snd_wscale
    if ack > prior or seg.seq > sk.snd_wl1 or (seg.seq == sk.snd_wl1 and nwin > sk.snd_wnd):
        if nwin != sk.snd_wnd:
            sk.snd_wnd = nwin
            if sk.has_unsent():
                tcp_output.slow_start_after_idle_check(sim, sk)
        sk.snd_wl1 = seg.seq
        return FLAG_WIN_UPDATE
    return 0


def _old_ack(sim: Sim, sk: Sock, seg: Seg, prior: int) -> None:
    """tcp_ack's old_ack path: an ACK below snd_una still carries SACK information; tag it,
    run the recovery state machine and retransmit (no window change, no PRR step)."""
    if not sk.sack_ok or not tcp_sack.blocks(seg):
        return
    flag, _ = tcp_sack.sacktag_write_queue(sim, sk, seg, prior)
    _, rexmit = tcp_input_loss.fastretrans_alert(sim, sk, prior, 0, flag)
    tcp_input_loss.xmit_recovery(sim, sk, rexmit)


def rcv_ack(sim: Sim, sk: Sock, seg: Seg) -> bool:
    """tcp_ack (net/ipv4/tcp_input.c:3760): False when the ACK is not acceptable."""
    ack = seg.ack
    prior = sk.snd_una
    # tp->rx_opt.rcv_tsecr, less the connection's offset (tcp_fast_parse_options)
    sk.rcv_tsecr = (seg.tsecr - sk.ts_off) % 2**32 if sk.ts_ok and seg.tsecr else 0
    if ack < prior:
        _old_ack(sim, sk, seg, prior)
        return sk.state == "ESTABLISHED"  # old ACK: ignored (tcp_ack returns 0)
    if ack > sk.snd_nxt:
        return False
    flag = FLAG_SND_UNA_ADVANCED if ack > prior else 0
    if seg.length or seg.fin:
        flag |= FLAG_DATA
    flag |= _window(sim, sk, seg, prior)
    delivered = 0
    if sk.sack_ok and tcp_sack.blocks(seg):
        sflag, delivered = tcp_sack.sacktag_write_queue(sim, sk, seg, prior)
        flag |= sflag
    sk.probes_out = 0
    sk.rcv_tstamp = sim.now
    if not sk.rtx:
        sk.snd_una = max(sk.snd_una, ack)
        tcp_output.process_tlp_ack(sk, ack, ack > prior, not flag & FLAG_NOT_DUP)
        if sk.has_unsent():
            ack_probe(sim, sk)
        return True
    cflag, cdelivered = clean_rtx(sim, sk, ack, seg, set_timer=False)
    flag |= cflag
    delivered += cdelivered
    sk.snd_una = max(sk.snd_una, ack)
    tcp_output.process_tlp_ack(sk, ack, ack > prior, not flag & FLAG_NOT_DUP)
    rexmit = tcp_input_loss.REXMIT_NONE
    lost_before = sk.lost_count
    reno_before = sk.reno_delivered
    if not flag & FLAG_NOT_DUP or flag & FLAG_CA_ALERT or sk.ca_state != "Open":
        dup = not flag & (FLAG_SND_UNA_ADVANCED | FLAG_NOT_DUP | FLAG_DSACKING_ACK)
        if dup:
            sim.note(
                msg("A duplicate ACK of {ack} (state {st}).", ack=ack, st="TCP_CA_" + sk.ca_state),
                "tcp_fastretrans_alert",
            )
        flag, rexmit = tcp_input_loss.fastretrans_alert(sim, sk, prior, 1 if dup else 0, flag)
    # tcp_newly_delivered (net/ipv4/tcp_input.c:3745): without SACK, the duplicate ACKs that
    # tcp_add_reno_sack counted were delivered too (tcp_count_delivered), so PRR sees them
    delivered += sk.reno_delivered - reno_before
    if flag & FLAG_SET_XMIT_TIMER:
        tcp_output.set_xmit_timer(sim, sk)
    tcp_input_loss.cong_control(sim, sk, delivered, sk.lost_count - lost_before, flag)
    tcp_output.update_pacing_rate(sk)  # the end of tcp_cong_control; not on the no_queue path
    tcp_input_loss.xmit_recovery(sim, sk, rexmit)
    return True


def ack_probe(sim: Sim, sk: Sock) -> None:
    """tcp_ack_probe (net/ipv4/tcp_input.c:3444; tcp_ack's no_queue path: nothing in flight, data waiting): if the
    window now takes the send head, stop the persist timer and reset its backoff; else
    re-arm it with the current backoff, counted from this ACK."""
    if tcp_output.head_fits_window(sk):
        if sk.timer("probe0").armed:
            sim.note(
                msg("The window is open again ({w} bytes): probing stops.", w=sk.snd_wnd),
                "tcp_ack_probe",
            )
        sk.stop("probe0")
        sk.backoff = 0
        return
    when = tcp_output.probe0_when(sk)
    sk.arm("probe0", sim.now + when)
    sim.note(
        msg(
            "The window is still closed ({w} bytes): the persist timer is re-armed for {t} ms "
            "from this ACK.",
            w=sk.snd_wnd,
            t=round(when, 3),
        ),
        "tcp_ack_probe",
    )
