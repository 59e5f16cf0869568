"""What Linux 6.4 does by default around a loss that the first model left out (issue 11).

Each function takes the engine and a flow and is called from the engine where tcp_input.c,
tcp_recovery.c or tcp_timer.c runs the kernel function it follows:

* **F-RTO** (``net.ipv4.tcp_frto = 2``, RFC 5682 with SACK). ``tcp_enter_loss``
  (tcp_input.c:2137) arms it for a timeout that does not interrupt a fast recovery (or repeats
  one); ``tcp_process_loss`` (tcp_input.c:2827) then runs on every ACK in Loss:

  - an ACK that moves snd_una undoes the reduction when it is for the original transmission
    (``tcp_try_undo_loss`` via ``tcp_may_undo``/``tcp_packet_delayed``: the timestamp it echoes
    is older than the first retransmission: the timeout was spurious);
  - an ACK that (S)ACKs never-retransmitted data sent before the timeout undoes it too (step
    3.b, ``tcp_try_undo_loss(sk, true)``);
  - the first ACK that moves snd_una without proving anything (step 2.b) moves ``high_seq`` to
    snd_nxt and sends *new* data instead of retransmitting (``REXMIT_NEW``,
    ``tcp_xmit_recovery``): the Loss phase is one round trip longer even when the loss is real;
  - once new data is out, an ACK that only SACKs (or a duplicate ACK) proves the loss real
    (step 3.a): F-RTO is off and retransmission goes on as before.

  An undo is ``tcp_undo_cwnd_reduction`` (tcp_input.c:2483): cwnd = the CC's ``undo_cwnd``,
  ssthresh back to ``prior_ssthresh`` if that was larger, lost marks cleared; RACK then looks at
  the scoreboard again (``rack.advanced = 1``), so a segment that really was dropped is marked
  lost afresh and starts an ordinary fast recovery.
* **RACK's reorder timer** (``tcp_rack_mark_lost``, tcp_recovery.c:95, arms
  ``ICSK_TIME_REO_TIMEOUT``; ``tcp_rack_reo_timeout``, tcp_recovery.c:149, handles it): a
  segment sent before the newest delivered one but still inside the reorder window is not left
  until the next ACK: the one retransmission timer is set to the longest wait left
  (``usecs_to_jiffies(remaining) + TCP_TIMEOUT_MIN``); when it fires the segments are lost, the
  flow enters Recovery and retransmits, and the RTO is re-armed.
* **SACK compression** (``__tcp_ack_snd_check``, tcp_input.c:5517; ``tcp_compressed_ack_kick``,
  tcp_timer.c:763): while the receiver holds out-of-order data, the first
  ``TCP_FASTRETRANS_THRESH`` (3) duplicate ACKs for one rcv_nxt go at once; after that it ACKs
  only when ``tcp_comp_sack_nr`` (44) segments are waiting or after min(``tcp_comp_sack_delay_ns``
  = 1 ms, 5 % of its RTT estimate). Any ACK sent cancels the timer (``tcp_event_ack_sent``).
* **Slow-start rounds**: a round ends when an ACK delivers a segment sent after the round began
  (the ``tp->delivered`` marker ``bbr_update_round`` keeps; ``bictcp_hystart_reset`` keeps the
  same idea in sequence space): the model records one ``round`` event per round while the flow
  is still in its first slow start, at most :data:`MAX_ROUNDS`.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, Final

from app.sim.congestion.flow import CA_CWR, CA_OPEN, CA_RECOVERY, EV_COMPACK, Flow, ss_or_none
from app.sim.core.i18n import Param, msg

if TYPE_CHECKING:
    from app.sim.congestion.receiver import Receiver
    from app.sim.congestion.recovery import Recovery

TCP_FRTO: Final = 2  # net.ipv4.tcp_frto default: the SACK-enhanced F-RTO of RFC 5682
TCP_COMP_SACK_NR: Final = 44  # net.ipv4.tcp_comp_sack_nr default
TCP_COMP_SACK_DELAY_S: Final = 1e-3  # net.ipv4.tcp_comp_sack_delay_ns default (1 ms)
TCP_FASTRETRANS_THRESH: Final = 3  # include/net/tcp.h: duplicate ACKs sent before compressing
TCP_TIMEOUT_MIN_S: Final = 2e-3  # TCP_TIMEOUT_MIN, 2 jiffies at HZ = 1000
MAX_ROUNDS: Final = 12  # slow-start rounds recorded per flow
_NEVER = 1 << 62


def current_ssthresh(f: Flow) -> int:
    """tcp_current_ssthresh (include/net/tcp.h): ssthresh in CWR/Recovery, else at least
    three quarters of cwnd."""
    if f.ca_state == CA_RECOVERY or f.ca_state == CA_CWR:
        return f.ssthresh
    return max(f.ssthresh, (f.cwnd >> 1) + (f.cwnd >> 2))


# -- F-RTO and undo ---------------------------------------------------------------------------


def arm_frto(f: Flow, new_recovery: bool, retransmits: int) -> None:
    """The end of tcp_enter_loss: F-RTO runs unless the timeout interrupts a fast recovery
    for the first time (``new_recovery || icsk_retransmits``)."""
    f.frto = bool(TCP_FRTO) and (new_recovery or retransmits > 0)
    f.frto_new = False


def init_undo(f: Flow, prior_ssthresh: int) -> None:
    """tcp_init_undo when a reduction starts: remember what an undo would restore."""
    f.undo_marker = True
    f.prior_ssthresh = prior_ssthresh


def packet_delayed(f: Flow, pkt: tuple[Any, ...]) -> bool:
    """tcp_packet_delayed: the ACK echoes a timestamp older than the first retransmission, so
    it was sent for an original transmission (TS ticks are 1 ms)."""
    rs = f.retrans_stamp
    return bool(rs) and int(pkt[1] * 1000) < int(rs * 1000)


def process_loss(
    eng: Recovery,
    f: Flow,
    now: float,
    una_adv: bool,
    orig_acked: bool,
    data_sacked: bool,
    pkt: tuple[Any, ...],
) -> bool:
    """tcp_process_loss (tcp_input.c:2827) for one ACK in Loss. Returns True when the state
    became Open (undone or recovered); sets ``f.frto_new`` for REXMIT_NEW."""
    recovered = f.snd_una >= f.high_seq
    if una_adv and f.undo_marker and packet_delayed(f, pkt):
        try_undo_loss(eng, f, now, False)
        return True
    if f.frto:
        if orig_acked:
            try_undo_loss(eng, f, now, True)
            return True
        if f.snd_nxt > f.high_seq:
            if data_sacked or not una_adv:
                f.frto = False  # step 3.a: the loss was real
                f.event(
                    "frto",
                    now,
                    {"step": "3a", "high_seq": f.high_seq, "cwnd": f.cwnd},
                    msg(
                        "F-RTO step 3.a: the ACK for the new data only SACKs it while the "
                        "segments before it are still missing, so the timeout was real; "
                        "retransmission of the lost segments goes on (tcp_process_loss)"
                    ),
                )
        elif una_adv and not recovered:
            f.high_seq = f.snd_nxt  # step 2.b: try new data (a bulk sender always has some)
            f.frto_new = True
            return False
    if recovered:
        # tcp_try_undo_recovery: no undo unless the ACK proves the retransmission needless
        eng.set_ca_state(f, CA_OPEN, now)
        f.event(
            "recovery_exit",
            now,
            {"cwnd": f.cwnd, "ssthresh": ss_or_none(f)},
            msg(
                "loss recovery after the timeout ends at cwnd {cwnd}: everything sent "
                "before the RTO is ACKed",
                cwnd=f.cwnd,
            ),
        )
        return True
    return False


def try_undo_loss(eng: Recovery, f: Flow, now: float, frto_undo: bool) -> None:
    """tcp_try_undo_loss (tcp_input.c:2578): undo the timeout's reduction and reopen."""
    before, ss_before = f.cwnd, ss_or_none(f)
    undo_cwnd_reduction(f, unmark_loss=True)
    f.icsk_retransmits = 0
    f.frto = False
    f.frto_new = False
    f.undos += 1
    eng.set_ca_state(f, CA_OPEN, now)
    nums: dict[str, Param] = {
        "before": before,
        "cwnd": f.cwnd,
        "ss_before": "∞" if ss_before is None else ss_before,
        "ssthresh": "∞" if ss_or_none(f) is None else f.ssthresh,
    }
    f.event(
        "undo",
        now,
        {
            "cwnd_before": before,
            "cwnd": f.cwnd,
            "ssthresh": ss_or_none(f),
            "how": "frto" if frto_undo else "timestamp",
        },
        (
            msg(
                "spurious timeout, undone (F-RTO step 3.b): this ACK covers data that was "
                "never retransmitted and was sent before the timeout, so nothing was lost; "
                "tcp_undo_cwnd_reduction restores cwnd {before} → {cwnd} and ssthresh "
                "{ss_before} → {ssthresh} and the flow is Open again",
                **nums,
            )
            if frto_undo
            else msg(
                "spurious timeout, undone: this ACK moves snd_una and echoes a timestamp "
                "older than the retransmission (tcp_packet_delayed), so the original "
                "arrived, only late; tcp_undo_cwnd_reduction restores cwnd {before} → "
                "{cwnd} and ssthresh {ss_before} → {ssthresh} and the flow is Open again",
                **nums,
            )
        ),
    )


def undo_cwnd_reduction(f: Flow, unmark_loss: bool) -> None:
    """tcp_undo_cwnd_reduction (tcp_input.c:2483).

    Unmarking: the lost marks of segments not yet retransmitted are cleared and the drops the
    timeout had marked go back to RACK (``rack.advanced = 1``), which marks the ones really
    missing again. A retransmitted segment keeps its mark here (Linux clears it but keeps it
    counted in retrans_out), so it stays counted once in flight rather than twice.
    """
    if unmark_loss:
        holes = f.holes
        for seq in [s for s, t in holes.items() if t is None]:
            del holes[seq]
        f.hole_heap = list(holes)
        heapq.heapify(f.hole_heap)
        f.rtxq = []
        if f.undo_undetected:
            f.undetected.extendleft(reversed(f.undo_undetected))
            f.undo_undetected = []
    if f.prior_ssthresh:
        f.cwnd = f.ca.undo_cwnd(f)
        if f.prior_ssthresh > f.ssthresh:
            f.ssthresh = f.prior_ssthresh
    f.undo_marker = False


def frto_send_new(eng: Recovery, f: Flow, now: float) -> None:
    """tcp_xmit_recovery with REXMIT_NEW (tcp_input.c:3727): new data first; retransmit only
    if none could go (then F-RTO is off)."""
    f.frto_new = False
    nxt0 = f.snd_nxt
    rtxq = f.rtxq
    f.rtxq = []
    eng.push(f, now)
    f.rtxq = rtxq
    sent = f.snd_nxt - nxt0
    if sent > 0:
        f.event(
            "frto",
            now,
            {"step": "2b", "sent": sent, "high_seq": f.high_seq, "cwnd": f.cwnd},
            (
                msg(
                    "F-RTO step 2.b: the first ACK after the timeout moved snd_una, so instead "
                    "of retransmitting the next lost segment the sender sends {sent} new "
                    "segments ({first}…); if their ACK covers data that was never "
                    "retransmitted the timeout was spurious and is undone, if it only SACKs "
                    "them the loss was real and this Loss phase lasts one round trip longer",
                    sent=sent,
                    first=nxt0,
                )
                if sent != 1
                else msg(
                    "F-RTO step 2.b: the first ACK after the timeout moved snd_una, so instead "
                    "of retransmitting the next lost segment the sender sends 1 new segment "
                    "({first}); if its ACK covers data that was never retransmitted the "
                    "timeout was spurious and is undone, if it only SACKs it the loss was "
                    "real and this Loss phase lasts one round trip longer",
                    first=nxt0,
                )
            ),
        )
        return
    f.frto = False
    eng.push(f, now)


def orig_cum_acked(f: Flow, ack_no: int) -> bool:
    """Whether a cumulative ACK to ``ack_no`` covers a segment marked lost by the timeout and
    never retransmitted (FLAG_ORIG_SACK_ACKED from tcp_clean_rtx_queue); call before the holes
    below ``ack_no`` are removed."""
    for seq, t in f.holes.items():
        if t is None and f.snd_una <= seq < ack_no and seq < f.high_seq:
            return True
    return False


# -- RACK's reorder timer ---------------------------------------------------------------------


def reo_wait(und: Any, rx: float, reo: float) -> float:
    """The longest wait left (s) among the drops sent before ``rx`` still inside the reorder
    window (tcp_rack_detect_loss's ``reo_timeout``): the one sent last waits longest."""
    last = -1.0
    for p in und:
        if p[1] >= rx:
            break
        last = p[1]
    return reo - (rx - last) if last >= 0 else -1.0


def mark_skb_lost(f: Flow, p: tuple[Any, ...]) -> bool:
    """tcp_mark_skb_lost (tcp_input.c), as tcp_rack_detect_loss calls it for a dropped
    transmission ``p`` RACK has given up on: a dropped retransmission is lost again (no longer
    in retrans_out), a segment sent once becomes a hole (lost_out); either waits in ``rtxq``.
    False when there is nothing to mark: the segment was ACKed since, or is already a hole, or
    a later retransmission of it is the one outstanding."""
    seq = p[0]
    holes = f.holes
    if p[2]:
        if holes.get(seq) != p[1]:
            return False
        f.retrans_out -= 1
    elif seq < f.snd_una or seq in holes:
        return False
    else:
        heapq.heappush(f.hole_heap, seq)
    holes[seq] = None
    heapq.heappush(f.rtxq, seq)
    return True


def arm_reo(eng: Recovery, f: Flow, now: float) -> None:
    """tcp_rack_mark_lost arms ICSK_TIME_REO_TIMEOUT on the retransmission timer for the
    longest wait left, in whole jiffies plus TCP_TIMEOUT_MIN; it replaces a pending probe."""
    wait_us = int(f.reo_wait * 1e6)
    f.reo_wait = -1.0
    jiffies = (wait_us + 999) // 1000
    f.reo_deadline = d = now + jiffies / 1000 + TCP_TIMEOUT_MIN_S
    f.tlp_deadline = 0.0
    eng.set_timer(f, d)


def reo_timeout(eng: Recovery, f: Flow, now: float) -> None:
    """tcp_rack_reo_timeout (tcp_recovery.c:149): the waits are over; mark, recover, rearm."""
    f.reo_deadline = 0.0
    und = f.undetected
    rx = f.rack_xmit
    n = 0
    first = -1
    while und and und[0][1] < rx:  # the window has passed for every segment sent before rx
        p = und.popleft()
        if mark_skb_lost(f, p):
            n += 1
            if first < 0 and not p[2]:  # the first segment lost for the first time
                first = p[0]
    f.lost += n
    if n:
        f.reo_timeouts += 1
        wnd = f.min_rtt_us / 4e3
        f.event(
            "reo_timeout",
            now,
            {"lost": n, "first_lost_seq": first, "reo_wnd_ms": round(wnd, 3)},
            (
                msg(
                    "RACK's reorder timer fires: {n} segments sent before the newest one "
                    "delivered are still not SACKed a reorder window (min_rtt/4 ≈ {wnd} ms) "
                    "later, so tcp_rack_reo_timeout marks them lost now instead of waiting for "
                    "another ACK",
                    n=n,
                    wnd=f"{wnd:.1f}",
                )
                if n != 1
                else msg(
                    "RACK's reorder timer fires: segment {seq}, sent before the newest one "
                    "delivered, is still not SACKed a reorder window (min_rtt/4 ≈ {wnd} ms) "
                    "later, so tcp_rack_reo_timeout marks it lost now instead of waiting for "
                    "another ACK",
                    seq=first,
                    wnd=f"{wnd:.1f}",
                )
            ),
        )
        if f.ca_state != CA_RECOVERY and f.holes:
            eng.enter_recovery(f, now)
            if f.cong_control is None:
                eng.cwnd_reduction(f, 1, n, False)
        eng.push(f, now)
    # tcp_rearm_rto: the RTO keeps the deadline it had (never in the past)
    if f.snd_nxt == f.snd_una:
        return
    if f.rto_deadline:
        eng.set_timer(f, max(f.rto_deadline, now + 1e-3))
    else:
        eng.arm_rto(f, now)


# -- slow-start rounds ------------------------------------------------------------------------


def round_end(f: Flow, now: float) -> None:
    """An ACK delivered a segment sent after this round began: the round is over. Recorded
    while the flow is in its first slow start (Open, the CC's own notion), at most
    MAX_ROUNDS times; then never again."""
    if f.round_count >= MAX_ROUNDS or f.ca_state != CA_OPEN or not f.ca.in_slow_start(f):
        f.round_next = _NEVER
        return
    f.round_count += 1
    k = f.round_count
    got = f.delivered - f.round_delivered
    nums: dict[str, Param] = {
        "k": k,
        "before": f.round_cwnd,
        "cwnd": f.cwnd,
        "got": got,
        "srtt": f"{f.srtt_us / 8000:.1f}",
    }
    f.event(
        "round",
        now,
        {
            "round": k,
            "cwnd_start": f.round_cwnd,
            "cwnd": f.cwnd,
            "delivered": got,
            "delivered_total": f.delivered,
        },
        msg(
            "round trip {k} of slow start ends: the first segment sent after it began is "
            "ACKed; {got} segments were delivered in it and cwnd grew {before} → {cwnd} (one "
            "segment per segment ACKed), srtt {srtt} ms",
            **nums,
        ),
    )
    f.round_cwnd = f.cwnd
    f.round_delivered = f.delivered
    f.round_next = f.delivered + 1


# -- the receiver's SACK compression ----------------------------------------------------------


def comp_delay(handshake_rtt_us: int) -> float:
    """The compressed-ACK delay (s): min(tcp_comp_sack_delay_ns, rtt / 20), with rtt the
    receiver's estimate: its srtt from the handshake when that is the smaller (it is, as queues
    only lengthen rcv_rtt_est)."""
    return min(TCP_COMP_SACK_DELAY_S, handshake_rtt_us / 20 / 1e6)


def comp_ooo(eng: Receiver, f: Flow, nxt: int, pkt: tuple[Any, ...], r: float) -> bool:
    """__tcp_ack_snd_check for an out-of-order segment arriving at ``r`` with SACK compression
    on. True: ACK now (the caller sends it); False: compressed (no ACK yet)."""
    if f.comp_count >= f.comp_nr:
        comp_sent(f, r, 1)
        return True
    if f.comp_rcv_nxt != nxt:
        f.comp_rcv_nxt = nxt
        f.comp_dupacks = 0
    if f.comp_dupacks < TCP_FASTRETRANS_THRESH:
        f.comp_dupacks += 1
        comp_sent(f, r, 1)
        return True
    f.comp_count += 1
    f.sacks_compressed += 1
    f.comp_pkt = pkt
    if not f.comp_deadline:
        f.comp_deadline = d = r + f.comp_delay
        timer = f.comp_timer
        if timer.queued_at is None:
            timer.queued_at = d
            eng.evq.push(d, EV_COMPACK, f.index)
    return False


def comp_sent(f: Flow, r: float, extra: int) -> None:
    """tcp_event_ack_sent: any ACK sent clears the compressed count and cancels the timer; an
    ACK that covers compressed segments is noted for the sender's narration."""
    n = f.comp_count
    if n:
        f.comp_acks.append((r + f.owd, n + extra))
        f.comp_count = 0
        f.comp_deadline = 0.0


def comp_flush(eng: Receiver, f: Flow) -> None:
    """tcp_compressed_ack_kick, when the timer's deadline passed before the next arrival: one
    ACK at the deadline for the segments held back."""
    t = f.comp_deadline
    pkt = f.comp_pkt
    f.sacks_compressed -= 1  # this ACK goes after all (tcp_compressed_ack_kick's decrement)
    f.comp_acks.append((t + f.owd, f.comp_count))
    f.comp_count = 0
    f.comp_deadline = 0.0
    eng.send_ack(f, t, pkt)


def on_comp_timer(eng: Receiver, f: Flow, now: float) -> None:
    """The compressed-ACK hrtimer: send the held-back ACK if it is still due."""
    timer = f.comp_timer
    if timer.queued_at != now:
        return
    timer.queued_at = None
    d = f.comp_deadline
    if not d or not f.comp_count:
        return
    if d > now:  # cancelled and armed again later
        timer.queued_at = d
        eng.evq.push(d, EV_COMPACK, f.index)
        return
    comp_flush(eng, f)


def comp_ack_arrived(f: Flow, now: float) -> None:
    """The sender gets an ACK the receiver held back: narrate the first of each loss episode."""
    t, n = f.comp_acks.popleft()
    episode = f.loss_events + f.rtos
    if f.comp_told == episode:
        return
    f.comp_told = episode
    nums: dict[str, Param] = {
        "n": n,
        "delay": f"{f.comp_delay * 1e3:.2f}",
        "nr": f.comp_nr,
    }
    f.event(
        "sack_compressed",
        now,
        {"segments": n, "delay_ms": round(f.comp_delay * 1e3, 3), "comp_sack_nr": f.comp_nr},
        (
            msg(
                "this ACK stands for {n} out-of-order segments: after the first 3 duplicate "
                "ACKs for the hole went out at once, the receiver held its SACKs back for up "
                "to {delay} ms or {nr} segments (SACK compression, __tcp_ack_snd_check), so the "
                "sender's scoreboard and PRR move in steps rather than segment by segment",
                **nums,
            )
            if n != 1
            else msg(
                "this ACK was held back: after the first 3 duplicate ACKs for the hole went out "
                "at once, the receiver waits up to {delay} ms or {nr} segments before it SACKs "
                "more out-of-order data (SACK compression, __tcp_ack_snd_check); here no other "
                "segment came within the delay, so the timer sent it",
                **nums,
            )
        ),
    )
