"""RACK loss detection, after ``net/ipv4/tcp_recovery.c`` (``tcp_recovery`` = 1, 6.4's
default): a segment is lost once a segment sent after it was delivered and it has waited the
most recent RTT plus a reordering window (``tcp_rack_detect_loss``); a segment that has not
waited long enough arms the reordering timer (``tcp_rack_mark_lost``,
``ICSK_TIME_REO_TIMEOUT``), whose expiry marks it lost and starts recovery
(``tcp_rack_reo_timeout``). Without SACK, NewReno marks the head lost instead
(``tcp_newreno_mark_lost``). With RACK on, 6.4 never reaches the RFC 6675 scoreboard marking
(``tcp_update_scoreboard``, ``tcp_mark_head_lost``: ``tcp_fastretrans_alert`` calls it only when
``tcp_is_rack`` is false, i.e. ``tcp_recovery`` = 0), so the model has no such path.

Times are µs of the model's clock (``tcp_mstamp``, the segment's last transmission). The
reordering window's growth on D-SACKs (``tcp_rack_update_reo_wnd``) is not modelled: it stays
one step of min_rtt/4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import tcp_input_loss, tcp_output, tcp_sack
from app.sim.tcp.sock import TIMEOUT_MIN, OutSeg, Sock

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim

CA_ORDER = {"Open": 0, "Disorder": 1, "CWR": 2, "Recovery": 3, "Loss": 4}


def us(ms: float) -> int:
    return int(round(ms * 1000))


def min_rtt_us(sk: Sock) -> int:
    """tcp_min_rtt (include/net/tcp.h:753): ~0U before the first sample (kept by the
    socket's RTT estimator, :class:`app.sim.tcp.sock.SockRtt`)."""
    return sk.rtt.min_us


def sent_after(t1: int, t2: int, tx1: int, tx2: int) -> bool:
    """tcp_skb_sent_after (include/net/tcp.h:1181): later, or at the same time with a later
    end. Linux's µs clock moves between the ACKs it processes, so two transmissions at one
    µs belong to one burst, where a later end is a later send. The model's clock does not
    move within an instant: a retransmission and new data sent for different ACKs of one
    instant share a time. So the tie goes to the later transmission (OutSeg.tx), which is
    what the kernel's distinct times say."""
    return t1 > t2 or (t1 == t2 and tx1 > tx2)


def reo_wnd(sk: Sock) -> int:
    """tcp_rack_reo_wnd (net/ipv4/tcp_recovery.c:5): no window (0) while no reordering was seen and recovery is under way
    or as many segments are SACKed as ``reordering`` (the duplicate-ACK threshold); else
    min_rtt/4, at most srtt."""
    if not sk.reord_seen:
        if CA_ORDER[sk.ca_state] >= CA_ORDER["Recovery"]:
            return 0
        if tcp_sack.sacked_out(sk) >= sk.reordering:
            return 0
    return min((min_rtt_us(sk) >> 2) * sk.reo_wnd_steps, sk.rtt.srtt_us >> 3)


def skb_timeout(sim: Sim, sk: Sock, o: OutSeg, wnd: int) -> int:
    """tcp_rack_skb_timeout (net/ipv4/tcp_recovery.c:32): rack.rtt_us + reo_wnd - the time since the segment was sent."""
    return sk.rack_rtt_us + wnd - (us(sim.now) - us(o.sent_ms))


def rack_advance(sim: Sim, sk: Sock, ever_retrans: bool, tx: int, xmit_ms: float) -> None:
    """tcp_rack_advance (net/ipv4/tcp_recovery.c:118): a (S)ACKed segment's send time becomes RACK's reference when it is
    the most recently sent; a retransmission ACKed sooner than min_rtt is ambiguous and
    skipped."""
    xmit = us(xmit_ms)
    rtt = us(sim.now) - xmit
    if rtt < min_rtt_us(sk) and ever_retrans:
        return
    sk.rack_advanced = True
    sk.rack_rtt_us = rtt
    if sent_after(xmit, sk.rack_mstamp_us, tx, sk.rack_tx):
        sk.rack_mstamp_us = xmit
        sk.rack_tx = tx


def detect_loss(sim: Sim, sk: Sock) -> tuple[int, int]:
    """tcp_rack_detect_loss (net/ipv4/tcp_recovery.c:58): walk the segments in send order (tsorted_sent_queue) up to
    RACK's reference; mark those that waited long enough lost. Returns (newly lost, the
    longest wait still due in µs)."""
    wnd = reo_wnd(sk)
    timeout = 0
    newly = 0
    order = sorted((o for o in sk.rtx if not o.sacked), key=lambda o: (us(o.sent_ms), o.tx))
    for o in order:
        if o.lost and not o.rexmit:
            continue
        if not sent_after(sk.rack_mstamp_us, us(o.sent_ms), sk.rack_tx, o.tx):
            break
        remaining = skb_timeout(sim, sk, o, wnd)
        if remaining <= 0:
            newly += 1 if tcp_sack.mark_skb_lost(sk, o) else 0
        else:
            timeout = max(timeout, remaining)
    return newly, timeout


def mark_lost(sim: Sim, sk: Sock) -> bool:
    """tcp_rack_mark_lost (net/ipv4/tcp_recovery.c:95): after RACK advanced, detect losses; a segment still inside the
    reordering window arms the reordering timer (its wait in jiffies + TCP_TIMEOUT_MIN).
    True when the timer was armed."""
    if not sk.rack_advanced:
        return False
    sk.rack_advanced = False
    newly, timeout = detect_loss(sim, sk)
    if newly:
        sim.note(
            msg(
                "RACK: {n} segment(s) sent before the last one delivered have waited an RTT "
                "plus the reordering window ({w} ms): marked lost.",
                n=newly,
                w=round(reo_wnd(sk) / 1000, 3),
            ),
            "tcp_rack_detect_loss",
        )
    if timeout:
        when = float(-(-timeout // 1000)) + TIMEOUT_MIN  # usecs_to_jiffies + TCP_TIMEOUT_MIN
        sk.stop("retransmit")
        sk.stop("loss_probe")
        sk.arm("reo", sim.now + when)
        sim.note(
            msg(
                "RACK: earlier segments are not delivered yet, but may only be reordered: the "
                "reordering timer is armed for {t} ms.",
                t=round(when, 3),
            ),
            "tcp_rack_mark_lost",
        )
    return bool(timeout)


def reo_timeout(sim: Sim, sk: Sock) -> None:
    """tcp_rack_reo_timeout (net/ipv4/tcp_recovery.c:149): the reordering window has passed: mark the expired segments
    lost; if that changed what is in flight, enter recovery (one PRR step) and retransmit;
    then re-arm the RTO."""
    if not sk.rtx or sk.state == "CLOSE":
        return
    prior_inflight = tcp_sack.packets_in_flight(sk)
    lost_before = sk.lost_count
    newly, _ = detect_loss(sim, sk)
    sim.note(
        msg(
            "The reordering timer fires: {n} segment(s) are now marked lost.",
            n=newly,
        ),
        "tcp_rack_reo_timeout",
    )
    if prior_inflight != tcp_sack.packets_in_flight(sk):
        if sk.ca_state != "Recovery":
            tcp_input_loss.enter_recovery(sim, sk)
            tcp_input_loss.cwnd_reduction(sim, sk, 1, sk.lost_count - lost_before, 0)
        tcp_output.xmit_retransmit_queue(sim, sk)
    if not sk.timer("retransmit").armed:
        tcp_output.rearm_rto(sim, sk)


def newreno_mark_lost(sim: Sim, sk: Sock, snd_una_advanced: bool) -> None:
    """tcp_newreno_mark_lost (net/ipv4/tcp_recovery.c:217; RFC 6582, no SACK): the head is lost after ``reordering``
    duplicate ACKs, and in recovery after each partial ACK."""
    st = CA_ORDER[sk.ca_state]
    rec = CA_ORDER["Recovery"]
    if (st < rec and sk.reno_sacked >= sk.reordering) or (st == rec and snd_una_advanced):
        head = sk.rtx[0]
        if head.lost:
            return
        tcp_sack.mark_skb_lost(sk, head)
        sim.note(
            msg("NewReno: the first unacknowledged segment, seq={seq}, is lost.", seq=head.seq),
            "tcp_newreno_mark_lost",
        )
