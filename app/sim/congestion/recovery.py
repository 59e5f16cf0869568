"""Loss recovery (Linux 6.4): RACK, the CA-state machine, PRR and the retransmission timeout.

Mirrors net/ipv4/tcp_recovery.c (``tcp_rack_mark_lost``), net/ipv4/tcp_input.c
(``tcp_fastretrans_alert`` and its state changes, ``tcp_enter_recovery`` with
``tcp_init_cwnd_reduction``, ``tcp_end_cwnd_reduction``, PRR's ``tcp_cwnd_reduction``,
``tcp_enter_loss`` / ``tcp_timeout_mark_lost``), net/ipv4/tcp_cong.c (``tcp_set_ca_state``) and
net/ipv4/tcp_timer.c (``tcp_retransmit_timer``, the one timer's dispatch between the RTO, the
loss probe and RACK's reorder timeout). F-RTO, undo, the reorder timer's own handler and SACK
compression live in :mod:`~app.sim.congestion.loss`; ECN's CWR in
:mod:`~app.sim.congestion.ecn`.

Simplifications, each a deliberate choice (what Linux does differs as said):

* loss detection is RACK with a reorder window of min_rtt/4 below 3 SACKed segments and 0 after
  (``reo_wnd_steps`` stays 1: the path never reorders, so no DSACK widens it), with its reorder
  timer; the wait left is computed at the ACK that last advanced RACK (every ACK does here);
* after a timeout F-RTO (``tcp_frto`` = 2) runs as in ``tcp_process_loss``, and a timeout proved
  spurious (the timestamp echo, or never-retransmitted data (S)ACKed) is undone with the
  algorithm's ``undo_cwnd``. The model's FIFO path only makes a timeout spurious when its delay
  grows by more than the RTO (a test raises a flow's ``owd`` to do that). There are no DSACKs
  (a duplicate reaches the receiver only after a spurious timeout, and the timestamp undo comes
  first), so no DSACK undo in Recovery; an undo keeps the lost mark on a segment already
  retransmitted (Linux clears it and counts the segment in flight twice until its ACK);
* on RTO every outstanding un-SACKed segment is marked lost (6.4 with RACK leaves segments sent
  within the last RTT unmarked; after ≥ 200 ms of silence that is normally none); the timer
  retransmits the head itself, without waiting for pacing.
"""

from __future__ import annotations

from typing import Final

from app.sim.congestion import ecn
from app.sim.congestion import loss as lossrec
from app.sim.congestion.flow import (
    CA_CWR,
    CA_DISORDER,
    CA_LOSS,
    CA_OPEN,
    CA_RECOVERY,
    DUPTHRESH,
    Flow,
    Pkt,
    ss_or_none,
)
from app.sim.congestion.receiver import claim
from app.sim.congestion.sender import Sender
from app.sim.core.i18n import Param, msg
from app.sim.core.tcp import TCP_INFINITE_SSTHRESH, TCP_RTO_MAX_US

RTO_MAX_S: Final = TCP_RTO_MAX_US / 1e6


class Recovery(Sender):
    """What the sender does when segments go missing."""

    def rack_mark_lost(self, f: Flow) -> int:
        """tcp_rack_mark_lost (tcp_recovery.c): lost if sent before the newest delivery.

        RACK waits a reorder window (min_rtt/4) first, unless the flow is already in Recovery
        or three segments are SACKed (tcp_rack_reo_wnd); the path never reorders, so with a
        window of 0 the oldest hole is lost as soon as anything sent after it arrives.
        """
        und = f.undetected
        rx = f.rack_xmit
        if f.ca_state >= CA_RECOVERY or f.sacked_out >= DUPTHRESH:
            reo = 0.0
        else:
            reo = f.min_rtt_us / 4e6
        n = 0
        while und:  # tcp_rack_detect_loss
            x = und[0][1]
            if x >= rx or rx - x < reo:
                if x < rx:  # inside the reorder window: the timer waits for the rest
                    f.reo_wait = lossrec.reo_wait(und, rx, reo)
                break
            if lossrec.mark_skb_lost(f, und.popleft()):
                n += 1
        f.lost += n
        return n

    def fastretrans_alert(
        self,
        f: Flow,
        now: float,
        una_adv: bool,
        orig: bool,
        more_sacked: bool,
        ece: bool,
        pkt: Pkt,
        newly_lost: int,
    ) -> int:
        """tcp_fastretrans_alert: leave Recovery/Loss once high_seq is ACKed, enter Recovery,
        or run tcp_process_loss in Loss (F-RTO, undo, the end of Loss); ECE and CWR go to
        :func:`~app.sim.congestion.ecn.alert`. Returns ``newly_lost`` with what RACK marks
        again after an undo."""
        state = f.ca_state
        if state == CA_LOSS:  # tcp_process_loss: F-RTO, undo, or the end of Loss
            if lossrec.process_loss(self, f, now, una_adv, orig, more_sacked, pkt):
                if f.undetected:  # RACK looks again after an undo (rack.advanced = 1)
                    newly_lost += self.rack_mark_lost(f)
                self.ca_state_machine(f, now)
        elif ece or state == CA_CWR:
            ecn.alert(self, f, now, ece)
        elif state >= CA_RECOVERY or f.holes or f.sacked_out or state == CA_DISORDER:
            self.ca_state_machine(f, now)
        return newly_lost

    def end_cwnd_reduction(self, f: Flow, now: float) -> int:
        """tcp_end_cwnd_reduction, then state Open: cwnd = ssthresh, unless cong_control keeps
        its own cwnd (BBR). Returns the cwnd before, for the event."""
        before = f.cwnd
        if f.cong_control is None and f.ssthresh < TCP_INFINITE_SSTHRESH:
            f.cwnd = f.ssthresh
        self.set_ca_state(f, CA_OPEN, now)
        return before

    def ca_state_machine(self, f: Flow, now: float) -> None:
        state = f.ca_state
        if state == CA_RECOVERY and f.snd_una >= f.high_seq:
            before = self.end_cwnd_reduction(f, now)
            f.event(
                "recovery_exit",
                now,
                {"cwnd": f.cwnd, "ssthresh": ss_or_none(f), "cwnd_before": before},
                msg(
                    "recovery ends: every segment sent before the loss (up to {high_seq}) is "
                    "ACKed; {note}",
                    high_seq=f.high_seq,
                    note=f.ca.recovery_exit_note(f, before),
                ),
            )
        if f.ca_state <= CA_DISORDER:
            if f.holes:
                self.enter_recovery(f, now)
            elif f.sacked_out:
                if f.ca_state != CA_DISORDER:
                    self.set_ca_state(f, CA_DISORDER, now)
            elif f.ca_state != CA_OPEN:
                self.set_ca_state(f, CA_OPEN, now)

    def set_ca_state(self, f: Flow, state: int, now: float) -> None:
        """tcp_set_ca_state (tcp_cong.c:37): the CC's set_state hook sees every change."""
        f.ca.set_state(f, state, now)
        f.ca_state = state
        if state == CA_OPEN:  # tcp_fastretrans_alert clears it once the flow is Open
            f.retrans_stamp = 0.0

    def enter_recovery(self, f: Flow, now: float) -> None:
        """tcp_enter_recovery + tcp_init_cwnd_reduction (tcp_input.c:2611)."""
        if f.ca_state == CA_CWR:
            ecn.recovery_from_cwr(self, f, now)
            return
        f.ecn_queue_cwr = f.ecn_ok  # tcp_ecn_queue_cwr
        cwnd = f.cwnd
        f.high_seq = f.snd_nxt
        f.tlp_high_seq = 0
        f.snd_cwnd_cnt = 0
        f.prior_cwnd = cwnd
        f.prr_delivered = 0
        f.prr_out = 0
        lost = len(f.holes)
        first = min(f.holes)
        f.loss_events += 1
        lossrec.init_undo(f, lossrec.current_ssthresh(f))  # tcp_enter_recovery: tcp_init_undo
        f.ssthresh = f.ca.ssthresh(f, now)
        self.set_ca_state(f, CA_RECOVERY, now)
        detail, text = f.ca.loss_text(f, cwnd, f.ssthresh)
        f.event(
            "loss",
            now,
            {
                "cwnd": cwnd,
                "ssthresh": ss_or_none(f),
                "lost": lost,
                "first_lost_seq": first,
                "sacked": f.sacked_out,
                **detail,
            },
            text,
        )
        nums: dict[str, Param] = {
            "sacked": f.sacked_out,
            "first": first,
            "lost": lost,
            "high_seq": f.high_seq,
            "how": f.ca.recovery_note(f, cwnd),
        }
        f.event(
            "recovery_enter",
            now,
            {"cwnd": cwnd, "ssthresh": ss_or_none(f), "high_seq": f.high_seq, "lost": lost},
            (
                msg(
                    "{sacked} segments SACKed beyond segment {first}, so RACK marks {lost} "
                    "segments lost and the flow enters Recovery until segment {high_seq} is "
                    "ACKed; {how}",
                    **nums,
                )
                if lost != 1
                else msg(
                    "{sacked} segments SACKed beyond segment {first}, so RACK marks {lost} "
                    "segment lost and the flow enters Recovery until segment {high_seq} is "
                    "ACKed; {how}",
                    **nums,
                )
            ),
        )

    def cwnd_reduction(self, f: Flow, acked_sacked: int, newly_lost: int, una_adv: bool) -> None:
        """tcp_cwnd_reduction (PRR, RFC 6937) as in Linux 6.4."""
        if acked_sacked <= 0 or not f.prior_cwnd:
            return
        in_flight = f.snd_nxt - f.snd_una - f.sacked_out - len(f.holes) + f.retrans_out
        delta = f.ssthresh - in_flight
        f.prr_delivered += acked_sacked
        if delta < 0:
            sndcnt = -(-(f.ssthresh * f.prr_delivered) // f.prior_cwnd) - f.prr_out
        else:
            sndcnt = max(f.prr_delivered - f.prr_out, acked_sacked)
            if una_adv and not newly_lost:
                sndcnt += 1
            sndcnt = min(delta, sndcnt)
        if sndcnt < (0 if f.prr_out else 1):  # force the fast retransmit on entry
            sndcnt = 0 if f.prr_out else 1
        f.cwnd = in_flight + sndcnt

    # -- the retransmission timer (tcp_timer.c) ----------------------------------------------

    def on_rto_timer(self, f: Flow, now: float) -> None:
        """The retransmission timer: the loss probe if one is scheduled, else the RTO.

        The flow keeps the two deadlines it serves (``tlp_deadline``, ``rto_deadline``) itself,
        so this handler, not :meth:`Timer.due`, decides whether to fire or re-queue.
        """
        if not claim(f.rto_timer, now):
            return  # superseded by an earlier entry
        if f.snd_nxt == f.snd_una:
            f.tlp_deadline = f.reo_deadline = 0.0
            return
        if f.reo_deadline:  # RACK's reorder timer holds the retransmission timer
            if now < f.reo_deadline:
                self.set_timer(f, f.reo_deadline)
            else:
                lossrec.reo_timeout(self, f, now)
            return
        due = f.tlp_deadline
        if due:
            if now < due:
                self.set_timer(f, due)
            else:
                self.send_loss_probe(f, now)
            return
        if not f.rto_deadline:
            return
        if now < f.rto_deadline:
            self.set_timer(f, f.rto_deadline)
            return
        self.enter_loss(f, now)

    def enter_loss(self, f: Flow, now: float) -> None:
        """tcp_retransmit_timer → tcp_enter_loss (tcp_input.c:2137)."""
        f.rtos += 1
        cwnd = f.cwnd
        state = f.ca_state
        new_reduction = (
            state <= CA_DISORDER
            or f.snd_una >= f.high_seq
            or (state == CA_LOSS and f.icsk_retransmits == 0)
        )
        if new_reduction:
            lossrec.init_undo(f, lossrec.current_ssthresh(f))  # tcp_init_undo, prior_ssthresh
            f.prior_cwnd = cwnd
            f.ssthresh = f.ca.ssthresh(f, now)
        lossrec.arm_frto(f, state < CA_RECOVERY, f.icsk_retransmits)
        f.reo_deadline = 0.0
        lost = self.timeout_mark_lost(f)
        f.tlp_deadline = 0.0
        f.cwnd = f.in_flight() + 1
        f.snd_cwnd_cnt = 0
        f.high_seq = f.snd_nxt
        f.ecn_queue_cwr = f.ecn_ok  # tcp_ecn_queue_cwr
        self.set_ca_state(f, CA_LOSS, now)
        rto = f.rto_s
        f.icsk_retransmits += 1
        f.backoff += 1
        f.rto_s = min(f.rto_s * 2, RTO_MAX_S)
        if new_reduction:
            why = f.ca.rto_note(f, cwnd)
        else:
            why = msg(
                "ssthresh stays {ssthresh} (already reduced for this window)",
                ssthresh=f.ssthresh,
            )
        f.event(
            "rto",
            now,
            {
                "cwnd_before": cwnd,
                "cwnd": f.cwnd,
                "ssthresh": ss_or_none(f),
                "rto_ms": rto * 1e3,
                "next_rto_ms": f.rto_s * 1e3,
                "lost": lost,
                "backoff": f.backoff,
            },
            msg(
                "retransmission timeout after {rto} ms without progress: {lost} segments marked "
                "lost, cwnd {before} → {cwnd} (packets in flight + 1), {why}; the timer backs off "
                "to {next_rto} ms",
                rto=f"{rto * 1e3:.0f}",
                lost=lost,
                before=cwnd,
                cwnd=f.cwnd,
                why=why,
                next_rto=f"{f.rto_s * 1e3:.0f}",
            ),
        )
        # the timer retransmits the head itself, without waiting for pacing
        seq = self.next_retransmit(f, now)
        if seq >= 0:
            self.transmit(f, seq, now, True)
        self.arm_rto(f, now)

    def timeout_mark_lost(self, f: Flow) -> int:
        """tcp_timeout_mark_lost: everything outstanding that is not SACKed is lost. Returns
        how many segments are now marked lost."""
        sacked = {s for s in f.sacked_set if s >= f.snd_una}
        old = f.holes
        holes: dict[int, float | None] = {}
        newly = 0
        for s in range(f.snd_una, f.snd_nxt):
            if s not in sacked:
                holes[s] = None
                if s not in old:
                    newly += 1
        f.holes = holes
        f.hole_heap = list(holes)
        f.rtxq = list(holes)  # ascending: already a heap
        f.retrans_out = 0
        f.undo_undetected = list(f.undetected)  # what an undo gives back to RACK
        f.undetected.clear()
        f.lost += newly
        return len(holes)
