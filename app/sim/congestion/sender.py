"""The sender's transmit side (Linux 6.4, net/ipv4/tcp_output.c).

* ``tcp_xmit_retransmit_queue`` then ``tcp_write_xmit`` (:meth:`Sender.push`): lost segments
  first, then new data, while ``tcp_packets_in_flight < cwnd`` (``tcp_cwnd_test``) and the
  receive window allows (``tcp_snd_wnd_test``, :mod:`~app.sim.congestion.rwnd`).
* Pacing (``tcp_pacing_check``, ``tcp_update_skb_after_send``): a paced flow (BBR's
  ``sk_pacing_status``) sends TSO-sized bursts of the algorithm's ``tso_segs`` (at most half of
  cwnd) at ``tcp_wstamp_ns``; the next burst leaves len/rate later, less up to half of that as
  credit for lateness; the first 10 segments are not paced. The pacing timer wakes the sender
  at ``wstamp``. TSO only for paced flows; no TSQ.
* ``tcp_transmit_skb`` (:meth:`Sender.transmit`, :meth:`Sender.send_new`): a segment leaves with
  the delivery-rate state ``tcp_rate_skb_sent`` stamps on it, into the bottleneck
  (:mod:`~app.sim.congestion.link`) and from there the receiver.
* The tail loss probe (RFC 8985 §7): ``tcp_schedule_loss_probe`` and ``tcp_send_loss_probe``.
  In Open, after new data or an ACK that moves snd_una, the flow's one retransmission timer
  becomes a probe timer of 2·srtt + 2 ms (+ 200 ms with one segment out, capped at the RTO);
  when it fires one new segment goes out beyond cwnd and the RTO restarts. A bulk sender always
  has new data, so Linux's other probe (resending the last segment when the window forbids new
  data) and what follows from it (a DSACK ending the episode, ``tcp_process_tlp_ack``'s cwnd
  reduction) cannot happen and are left out.
* The retransmission timer's arming (``tcp_rearm_rto``, ``inet_csk_reset_xmit_timer``): one
  lazy :class:`~app.sim.core.events.Timer` entry per flow serving the RTO (``rto_deadline``) and
  the probe (``tlp_deadline``), as Linux's one timer serves ICSK_TIME_RETRANS and
  ICSK_TIME_LOSS_PROBE (and RACK's ICSK_TIME_REO_TIMEOUT, ``reo_deadline``).
"""

from __future__ import annotations

import heapq

from app.sim.congestion import ecn, rwnd
from app.sim.congestion.flow import CA_CWR, CA_OPEN, CA_RECOVERY, EV_PACE, EV_RTO, Flow
from app.sim.congestion.receiver import Receiver
from app.sim.core.i18n import Param, msg


class Sender(Receiver):
    """Sending, pacing and the retransmission timer's arming."""

    def push(self, f: Flow, now: float) -> None:
        """tcp_xmit_retransmit_queue then tcp_write_xmit: send while in_flight < cwnd."""
        if f.paced and f.wstamp > now and f.pace_timer.queued_at is not None:
            # tcp_pacing_check with the pacing timer already armed: nothing can leave before
            # it fires, whatever the window (most ACKs of a paced flow end here). Only an idle
            # flow (the delivery-rate clock restarts) and a receive window (its accounting)
            # need the full path.
            if f.snd_nxt != f.snd_una and not f.rwnd:
                return
        room = f.cwnd - (f.snd_nxt - f.snd_una - f.sacked_out - len(f.holes) + f.retrans_out)
        if f.rwnd:  # tcp_snd_wnd_test: the receiver's window may bind first
            room = rwnd.window_room(f, room, now)
        if room <= 0:
            return
        if f.snd_nxt == f.snd_una:  # tcp_rate_skb_sent: restart the delivery-rate clock
            f.first_tx_mstamp = f.delivered_mstamp = now
            arm = True
        else:
            arm = False
        in_reduction = f.ca_state == CA_RECOVERY or f.ca_state == CA_CWR
        nxt0 = f.snd_nxt
        if f.paced:
            head = self.write_xmit_paced(f, room, now, in_reduction)
        else:
            head = self.write_xmit(f, room, now, in_reduction)
        if arm:
            self.arm_rto(f, now)
        if head:
            # tcp_xmit_retransmit_queue: retransmitting the head restarts the RTO from now
            # (and replaces a pending loss probe)
            f.tlp_deadline = 0.0
            self.arm_rto(f, now)
        if f.snd_nxt != nxt0 and not self.schedule_loss_probe(f, now, f.rto_deadline - now):
            # tcp_event_new_data_sent re-arms the RTO in place of a pending probe
            f.tlp_deadline = 0.0

    def write_xmit(self, f: Flow, room: int, now: float, in_reduction: bool) -> bool:
        """An unpaced flow: retransmissions, then ``room`` new segments at once. True when
        the head (snd_una) was retransmitted."""
        head = False
        if f.rtxq:
            while room > 0:
                seq = self.next_retransmit(f, now)
                if seq < 0:
                    break
                self.transmit(f, seq, now, True)
                room -= 1
                if seq == f.snd_una:
                    head = True
                if in_reduction:
                    f.prr_out += 1
        if room > 0:
            self.send_new(f, room, now)
            if in_reduction:
                f.prr_out += room
        return head

    def write_xmit_paced(self, f: Flow, room: int, now: float, in_reduction: bool) -> bool:
        """A paced flow: bursts of the TSO goal at ``wstamp`` (tcp_pacing_check); when the
        time has not come the pacing timer is armed. True when the head was retransmitted."""
        head = False
        goal = 0  # the TSO goal, read when first needed (only the pacing rate changes it)
        while room > 0:
            wstamp = f.wstamp
            if wstamp > now:  # tcp_pacing_check: wait for the earliest departure time
                timer = f.pace_timer
                if timer.queued_at is None:  # Timer.arm, inlined (the timer is idle)
                    timer.queued_at = timer.deadline = wstamp
                    heapq.heappush(self.heap, (wstamp, 0, next(self.seq), EV_PACE, f.index))
                break
            if not goal:
                goal = f.ca.tso_segs(f)
            burst = goal  # tcp_cwnd_test: also at most half of cwnd
            half = f.cwnd >> 1
            if half < burst:
                burst = half if half > 1 else 1
            if room < burst:
                burst = room
            left = burst
            while left and f.rtxq:
                seq = self.next_retransmit(f, now)
                if seq < 0:
                    break
                self.transmit(f, seq, now, True)
                left -= 1
                if seq == f.snd_una:
                    head = True
            if left:
                if self.red is None:  # send_new, inlined: the link, then the receiver
                    seq0 = f.snd_nxt
                    f.snd_nxt = seq0 + left
                    self.rcv_burst(f, self.enqueue_burst(f, seq0, left, now))
                else:
                    self.send_new(f, left, now)
            room -= burst
            if in_reduction:
                f.prr_out += burst
            # tcp_update_skb_after_send (update_skb_after_send, inlined; wstamp as read above)
            ws = now if wstamp < now else wstamp
            f.data_segs_out = segs_out = f.data_segs_out + burst
            rate = f.pacing_rate
            if rate and segs_out >= 10:
                len_s = burst * f.mss / rate
                credit = ws - wstamp
                half_s = len_s / 2
                ws += len_s - (credit if credit < half_s else half_s)
            f.wstamp = ws
        return head

    def next_retransmit(self, f: Flow, now: float) -> int:
        """The lowest segment marked lost and not yet retransmitted, or -1."""
        rtxq = f.rtxq
        holes = f.holes
        while rtxq:
            seq = heapq.heappop(rtxq)
            if seq in holes and holes[seq] is None:
                holes[seq] = now
                f.retrans_out += 1
                f.retransmits += 1
                if not f.retrans_stamp:
                    f.retrans_stamp = now
                return seq
        return -1

    def send_new(self, f: Flow, n: int, now: float) -> None:
        """``transmit`` for ``n`` new segments at once: the link, then the receiver."""
        if self.red is not None:
            ecn.send_new(self, self.red, f, n, now)
            return
        seq0 = f.snd_nxt
        f.snd_nxt = seq0 + n
        self.rcv_data(f, self.enqueue_burst(f, seq0, n, now))

    def transmit(self, f: Flow, seq: int, now: float, retrans: bool) -> None:
        """One segment into the bottleneck; if it gets through, into the receiver."""
        if self.red is not None:
            ecn.transmit(self, self.red, f, seq, now, retrans)
            return
        pkt = (seq, now, retrans, f.delivered, f.delivered_mstamp, f.first_tx_mstamp, f.app_limited)
        r = self.enqueue(f, pkt, now)
        if r >= 0:
            self.rcv_data(f, [(r, pkt)])

    # -- the retransmission timer's arming and the tail loss probe ----------------------------

    def set_timer(self, f: Flow, deadline: float) -> None:
        """Make sure the flow's retransmission timer fires no later than ``deadline``.

        Entries are lazy, as :meth:`Timer.arm` queues them: a later deadline keeps the pending
        entry (the handler re-queues it when it fires early); an earlier one pushes a new
        entry, and the old one is ignored when it comes up (only the entry at ``queued_at``
        counts). The flow keeps the deadlines themselves (``tlp_deadline``, ``rto_deadline``),
        so only the timer's queue entry is used.
        """
        qa = f.rto_timer.queued_at
        if qa is None or deadline < qa:
            f.rto_timer.queued_at = deadline
            self.evq.push(deadline, EV_RTO, f.index)

    def arm_rto(self, f: Flow, now: float) -> None:
        f.rto_deadline = now + f.rto_s
        self.set_timer(f, f.rto_deadline)

    def schedule_loss_probe(self, f: Flow, now: float, rto_left: float) -> bool:
        """tcp_schedule_loss_probe (tcp_output.c:2730 in 6.4): arm the tail loss probe.

        Only in Open (or CWR) with data outstanding (SACK is always on here). The probe
        timeout (PTO) is 2·srtt in whole jiffies plus TCP_TIMEOUT_MIN (2 ms), or plus
        TCP_RTO_MIN (200 ms) when a single segment is out (its ACK may be delayed), and never
        later than the RTO (``rto_left``: the full RTO when the ACK advanced, else what is
        left of it). tcp_reset_xmit_timer adds the pacing delay, so a paced flow's probe is
        not held back by tcp_pacing_check. Returns False when no probe is scheduled.
        """
        if (f.ca_state != CA_OPEN and f.ca_state != CA_CWR) or f.snd_nxt == f.snd_una:
            return False
        pto = pto_s(f)
        if 0 < rto_left < pto:
            pto = rto_left
        d = now + pto
        if f.paced and f.wstamp > now:
            d += f.wstamp - now
        f.tlp_deadline = d
        self.set_timer(f, d)
        return True

    def send_loss_probe(self, f: Flow, now: float) -> None:
        """tcp_send_loss_probe (tcp_output.c:2800 in 6.4), when the probe timer fires.

        At most one probe is outstanding (``tlp_high_seq``; tcp_process_tlp_ack ends the
        episode once an ACK reaches it, which here means snd_una ≥ tlp_high_seq). A bulk
        sender without a receive-window limit always has new data, so the probe is one new
        segment, sent even when cwnd is full (tcp_write_xmit with push_one = 2) but not
        before the pacing time; Linux retransmits the highest outstanding segment only when
        no new data may go, which never happens here, so neither does the DSACK check or the
        cwnd reduction tcp_process_tlp_ack applies after a retransmitted probe. Then the RTO
        restarts from now; if no probe could go it keeps its deadline (tcp_rearm_rto).
        """
        f.tlp_deadline = 0.0
        if (
            f.tlp_high_seq > f.snd_una
            or (f.paced and f.wstamp > now)
            or (f.rwnd and f.snd_nxt >= f.snd_una + f.rwnd)
        ):
            # (a window-limited flow cannot send new data; Linux would resend its last
            # segment, which the model leaves out)
            self.set_timer(f, f.rto_deadline)
            return
        seq = f.snd_nxt
        packets_out = seq - f.snd_una
        drops = f.drops
        self.send_new(f, 1, now)
        if f.paced:  # tcp_update_skb_after_send for the one-segment skb, as in push
            update_skb_after_send(f, 1, now)
        f.tlp_high_seq = f.snd_nxt
        f.tlps += 1
        pto = pto_s(f)
        nums: dict[str, Param] = {
            "extra": 200 if packets_out == 1 else 2,
            "pto": f"{pto * 1e3:.0f}",
            "out": packets_out,
            "seq": seq,
            "rto": f"{f.rto_s * 1e3:.0f}",
        }
        f.event(
            "tlp",
            now,
            {
                "seq": seq,
                "packets_out": packets_out,
                "pto_ms": pto * 1e3,
                "rto_ms": f.rto_s * 1e3,
                "dropped": int(f.drops > drops),
            },
            (
                msg(
                    "tail loss probe: no ACK has moved snd_una for the probe timeout (2·srtt + "
                    "{extra} ms ≈ {pto} ms) with {out} segments out, so the sender sends one new "
                    "segment ({seq}) even though cwnd is full; if it arrives, its SACK lets RACK "
                    "mark the missing tail lost and start fast recovery instead of waiting for "
                    "the {rto} ms RTO (this probe was dropped too)",
                    **nums,
                )
                if f.drops > drops
                else msg(
                    "tail loss probe: no ACK has moved snd_una for the probe timeout (2·srtt + "
                    "{extra} ms ≈ {pto} ms) with {out} segments out, so the sender sends one new "
                    "segment ({seq}) even though cwnd is full; if it arrives, its SACK lets RACK "
                    "mark the missing tail lost and start fast recovery instead of waiting for "
                    "the {rto} ms RTO",
                    **nums,
                )
            ),
        )
        self.arm_rto(f, now)


def update_skb_after_send(f: Flow, segs: int, now: float) -> None:
    """tcp_update_skb_after_send for a paced skb of ``segs`` segments sent at ``now``: the
    next one leaves len/rate later, less up to half of that as credit for lateness; the first
    10 segments are not paced."""
    prior = f.wstamp
    if prior < now:
        f.wstamp = now
    f.data_segs_out += segs
    rate = f.pacing_rate
    if rate and f.data_segs_out >= 10:
        len_s = segs * f.mss / rate
        credit = f.wstamp - prior
        half = len_s / 2
        f.wstamp += len_s - (credit if credit < half else half)


def pto_s(f: Flow) -> float:
    """The probe timeout in seconds, before the RTO cap: usecs_to_jiffies(2·srtt) plus
    TCP_TIMEOUT_MIN (2 jiffies), or TCP_RTO_MIN with one segment out (HZ = 1000)."""
    jiffies = ((f.srtt_us >> 2) + 999) // 1000  # usecs_to_jiffies rounds up
    return (jiffies + (200 if f.snd_nxt - f.snd_una == 1 else 2)) / 1000
