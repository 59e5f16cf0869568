"""ACK processing (Linux 6.4, net/ipv4/tcp_input.c ``tcp_ack``, and net/ipv4/tcp_rate.c).

:meth:`AckProcessing.on_ack` follows ``tcp_ack``'s own steps for one ACK, each a method here:

1. the ECN echo (``tcp_ecn_rcv_ecn_echo``: FLAG_ECE) and snd_una's advance
   (FLAG_SND_UNA_ADVANCED; the cumulative part of ``tcp_clean_rtx_queue``),
2. the SACK scoreboard (``tcp_sacktag_write_queue``: the ACK's SACK count, the segment it
   reports, a retransmission SACKed),
3. the RTT sample (``tcp_ack_update_rtt`` → ``tcp_rtt_estimator``, ``tcp_set_rto``) and the
   algorithm's ``pkts_acked``,
4. RACK's loss marking and ``tcp_fastretrans_alert`` (:mod:`~app.sim.congestion.recovery`),
5. ``tcp_rate_gen`` and ``tcp_cong_control`` (BBR's ``cong_control``, PRR in Recovery/CWR, else
   ``cong_avoid``),
6. ``tcp_set_xmit_timer`` (the loss probe in Open, else ``tcp_rearm_rto``) and
   ``tcp_xmit_recovery`` (transmit: :meth:`~app.sim.congestion.sender.Sender.push`).

The common case (in-order progress in state Open, no SACK) is handled at the top of
:meth:`AckProcessing.on_ack`, with the same steps inlined; the rest goes to
:meth:`AckProcessing.ack_slow`. The engine never asks which
algorithm a flow runs: it calls the flow's ops table
(:class:`~app.sim.congestion.reno.CongestionOps`) where tcp_input.c calls ``icsk->icsk_ca_ops``,
and tests ``cong_control is not None`` where the kernel does.

The RTT sample of an ACK comes from the segment that triggered it (Linux's srtt uses the oldest
newly ACKed segment, usually sent a few µs earlier in the same burst); when that is a
retransmission and the ACK advances snd_una, the timestamp echo gives the sample, in whole ms,
as ``tcp_ack_update_rtt`` takes it (the 52-byte headers carry timestamps).
"""

from __future__ import annotations

import heapq
from math import trunc
from typing import TYPE_CHECKING, Final

from app.sim.congestion import ecn, rwnd
from app.sim.congestion import loss as lossrec
from app.sim.congestion.flow import CA_CWR, CA_LOSS, CA_OPEN, CA_RECOVERY, EV_RTO, Flow, Pkt
from app.sim.congestion.recovery import RTO_MAX_S, Recovery
from app.sim.core.tcp import TCP_RTO_MAX_US, TCP_RTO_MIN_US

if TYPE_CHECKING:
    from app.sim.congestion.reno import CongControl

TCP_TS_HZ: Final = 1000  # include/net/tcp.h: the TCP timestamp clock (TSval) ticks every ms


class AckProcessing(Recovery):
    """``tcp_ack`` and the delivery-rate sample."""

    def on_ack(self, f: Flow, now: float, ack_no: int, sacked: int, pkt: Pkt) -> None:
        """tcp_ack for one ACK: scoreboard, RTT, loss marking, CA state, cwnd, transmit.

        The common case is handled here, in one place: in-order progress in state Open.
        Nothing can be newly lost (a drop blocks the cumulative ACK and would show up as
        SACKs), so tcp_ack's steps reduce to the RTT sample, cong_control or cong_avoid, the
        timer and transmit, inlined for speed. Everything else goes to :meth:`ack_slow`."""
        if pkt[3] >= f.round_next:  # a segment sent after the round began: the round ends
            lossrec.round_end(f, now)
        if (
            sacked
            or ack_no <= f.snd_una
            or f.sacked_out
            or f.holes
            or f.ca_state != CA_OPEN
            or f.undetected
        ):
            self.ack_slow(f, now, ack_no, sacked, pkt)
            return
        # (icsk_retransmits is already 0 in Open: the first ACK to move snd_una after an
        # RTO clears it, in the Loss state, before Loss can end)
        delivered = ack_no - f.snd_una
        f.snd_una = ack_no
        f.delivered += delivered
        # tcp_ack_update_rtt: snd_una advanced, so there is always a sample: the segment's
        # own, or for a retransmission the timestamp echo (as in ack_update_rtt)
        sent = pkt[1]
        m = rtt_us = trunc((now - sent) * 1e6) if not pkt[2] else tsecr_rtt_us(now, sent)
        # tcp_rtt_estimator and tcp_set_rto, inlined (Flow.rtt_estimator is the shared
        # version): srtt ×8, mdev ×4, rttvar floored at 200 ms per RTT
        srtt = f.srtt_us
        m -= srtt >> 3
        srtt += m
        mdev = f.mdev_us
        if m < 0:
            m = -m - (mdev >> 2)
            if m > 0:
                m >>= 3
        else:
            m -= mdev >> 2
        mdev += m
        f.mdev_us = mdev
        if mdev > f.mdev_max_us:
            f.mdev_max_us = mdev
            if mdev > f.rttvar_us:
                f.rttvar_us = mdev
        if ack_no > f.rtt_seq:
            if f.mdev_max_us < f.rttvar_us:
                f.rttvar_us -= (f.rttvar_us - f.mdev_max_us) >> 2
            f.rtt_seq = f.snd_nxt
            f.mdev_max_us = TCP_RTO_MIN_US
        if srtt < 1:
            srtt = 1
        f.srtt_us = srtt
        rto_us = (srtt >> 3) + f.rttvar_us
        f.rto_s = rto = -(-rto_us // 1000) / 1000 if rto_us < TCP_RTO_MAX_US else RTO_MAX_S
        f.backoff = 0
        if rtt_us < f.min_rtt_us:
            f.min_rtt_us = rtt_us
        f.last_rtt_us = rtt_us
        if sent > f.rack_xmit:
            f.rack_xmit = sent
        cong_control = f.cong_control
        if cong_control is not None:
            self.ack_open_cong_control(f, cong_control, now, ack_no, pkt, delivered, rtt_us, rto)
            return
        f.ca.acked_and_cong_avoid(f, delivered, rtt_us, now)
        nxt = f.snd_nxt
        if nxt == ack_no:
            f.rto_deadline = f.tlp_deadline = 0.0
            self.push(f, now)
            return
        f.rto_deadline = now + rto
        room = f.cwnd - (nxt - ack_no)
        if f.rwnd:
            room = rwnd.window_room(f, room, now)
        if room > 0:
            if self.red is None:  # send_new, inlined: the link, then the receiver
                f.snd_nxt = nxt + room
                self.rcv_data(f, self.enqueue_burst(f, nxt, room, now))
            else:
                self.send_new(f, room, now)
            nxt = f.snd_nxt
        # tcp_set_xmit_timer / tcp_schedule_loss_probe (state Open): the timer becomes
        # the loss probe, 2·srtt in whole jiffies + 2 ms (+ 200 ms with one segment out),
        # never later than the RTO (``pto_s``, inlined for speed)
        pto = (((srtt >> 2) + 999) // 1000 + (2 if nxt - ack_no > 1 else 200)) / 1000
        f.tlp_deadline = d = now + (pto if pto < rto else rto)
        qa = f.rto_timer.queued_at  # set_timer, inlined
        if qa is None or d < qa:
            f.rto_timer.queued_at = d
            heapq.heappush(self.heap, (d, 0, next(self.seq), EV_RTO, f.index))

    def ack_open_cong_control(
        self,
        f: Flow,
        cong_control: CongControl,
        now: float,
        ack_no: int,
        pkt: Pkt,
        delivered: int,
        rtt_us: int,
        rto: float,
    ) -> None:
        """The rest of :meth:`on_ack`'s common case for an ops table with cong_control (BBR):
        tcp_rate_gen (:meth:`rate_sample` for an ACK that delivered ``delivered`` > 0 segments
        in order, inlined), cong_control, the loss probe (schedule_loss_probe in Open, inlined:
        pto_s capped at the RTO, plus the pacing delay), then transmit."""
        nxt = f.snd_nxt  # cong_control sends nothing
        rs = f.rs
        app_limited = f.app_limited
        if app_limited and f.delivered > app_limited:
            f.app_limited = 0
        f.delivered_mstamp = now
        rs.acked_sacked = delivered
        rs.losses = 0
        # prior_in_flight: packets_out before this ACK (nothing is SACKed or lost here)
        rs.prior_in_flight = nxt - ack_no + delivered + f.retrans_out
        rs.rtt_us = rtt_us
        prior_delivered = pkt[3]
        rs.prior_delivered = prior_delivered
        rs.is_app_limited = pkt[6] != 0
        f.first_tx_mstamp = sent = pkt[1]
        rs.delivered = f.delivered - prior_delivered
        snd_us = sent - pkt[5]
        ack_us = now - pkt[4]
        interval = trunc((snd_us if snd_us >= ack_us else ack_us) * 1e6)
        rs.interval_us = interval if interval >= f.min_rtt_us else -1
        cong_control(f, rs, now)
        if nxt == ack_no:
            f.rto_deadline = f.tlp_deadline = 0.0
            self.push(f, now)
            return
        f.rto_deadline = now + rto
        pto = (((f.srtt_us >> 2) + 999) // 1000 + (200 if nxt - ack_no == 1 else 2)) / 1000
        if pto > rto:  # (the RTO just computed, so > 0)
            pto = rto
        d = now + pto
        wstamp = f.wstamp
        paced = f.paced and wstamp > now
        if paced:
            d += wstamp - now
        f.tlp_deadline = d
        timer = f.rto_timer
        qa = timer.queued_at  # set_timer, inlined
        if qa is None or d < qa:
            timer.queued_at = d
            heapq.heappush(self.heap, (d, 0, next(self.seq), EV_RTO, f.index))
        # tcp_pacing_check before transmitting (push's own first test, hoisted): with the
        # pacing timer armed nothing can leave before it fires
        if paced and f.pace_timer.queued_at is not None and not f.rwnd:
            return
        self.push(f, now)

    def ack_slow(self, f: Flow, now: float, ack_no: int, sacked: int, pkt: Pkt) -> None:
        """tcp_ack's steps one by one, for every ACK the common case in :meth:`on_ack` does not
        cover (SACKs, losses, a CA state other than Open, ECE)."""
        ece = False
        if sacked >= ecn.ECE_BIT:  # tcp_ecn_rcv_ecn_echo: FLAG_ECE
            sacked -= ecn.ECE_BIT
            ece = f.ecn_ok
            f.ece_acks += 1
        prior_in_flight = f.snd_nxt - f.snd_una - f.sacked_out - len(f.holes) + f.retrans_out
        if f.comp_acks and f.comp_acks[0][0] <= now:
            lossrec.comp_ack_arrived(f, now)
        una_adv, delivered, orig = self.ack_snd_una(f, ack_no)
        s_old = f.sacked_out
        delivered, orig = self.sacktag(f, ack_no, sacked, pkt, delivered, orig)
        f.delivered += delivered
        rtt_us = self.ack_update_rtt(f, now, pkt, una_adv)
        ca = f.ca
        pkts_acked = ca.pkts_acked
        if pkts_acked is not None:
            pkts_acked(f, rtt_us, now)
        # RACK: the newest delivered transmission marks everything sent before it as lost
        if pkt[1] > f.rack_xmit:
            f.rack_xmit = pkt[1]
        newly_lost = self.rack_mark_lost(f) if f.undetected else 0
        newly_lost = self.fastretrans_alert(
            f, now, una_adv, orig, sacked > s_old, ece, pkt, newly_lost
        )
        # tcp_cong_control
        cong_control = f.cong_control
        if cong_control is not None:
            self.rate_sample(f, now, delivered, newly_lost, pkt, rtt_us, prior_in_flight)
            cong_control(f, f.rs, now)
        elif f.ca_state == CA_RECOVERY or f.ca_state == CA_CWR:
            self.cwnd_reduction(f, delivered, newly_lost, una_adv)
        elif una_adv:
            ca.cong_avoid(f, delivered, now)
        self.set_xmit_timer(f, now, una_adv)
        if f.frto_new:  # tcp_xmit_recovery with REXMIT_NEW
            lossrec.frto_send_new(self, f, now)
        else:
            self.push(f, now)

    def ack_snd_una(self, f: Flow, ack_no: int) -> tuple[bool, int, bool]:
        """FLAG_SND_UNA_ADVANCED and the cumulative part of tcp_clean_rtx_queue: snd_una moves,
        icsk_retransmits clears, holes below it are filled. Returns (advanced, segments
        delivered, FLAG_ORIG_SACK_ACKED as asked in Loss with F-RTO on)."""
        if ack_no <= f.snd_una:
            return False, 0, False
        orig = False
        if f.frto and f.ca_state == CA_LOSS:
            orig = lossrec.orig_cum_acked(f, ack_no)
        delivered = ack_no - f.snd_una
        f.snd_una = ack_no
        f.icsk_retransmits = 0
        if f.holes:
            hh = f.hole_heap
            holes = f.holes
            while hh and hh[0] < ack_no:
                seq = heapq.heappop(hh)
                if seq in holes and holes.pop(seq) is not None:
                    f.retrans_out -= 1
        return True, delivered, orig

    def sacktag(
        self, f: Flow, ack_no: int, sacked: int, pkt: Pkt, delivered: int, orig: bool
    ) -> tuple[int, bool]:
        """tcp_sacktag_write_queue: the receiver's out-of-order count becomes sacked_out; the
        segment that triggered the ACK, when beyond it, is SACKed (a retransmission of it is
        no longer out). Returns the segments delivered so far and FLAG_ORIG_SACK_ACKED."""
        seq = pkt[0]
        s_old = f.sacked_out
        if sacked != s_old or seq >= ack_no:
            if seq >= ack_no and not pkt[2] and seq < f.high_seq and seq not in f.sacked_set:
                orig = True  # a never-retransmitted segment newly SACKed
            delivered += sacked - s_old
            f.sacked_out = sacked
            if seq >= ack_no:  # the segment that triggered this ACK is SACKed
                f.sacked_set.add(seq)
                holes = f.holes
                if seq in holes and holes.pop(seq) is not None:
                    f.retrans_out -= 1
            if not sacked:
                f.sacked_set.clear()
        return delivered, orig

    def ack_update_rtt(self, f: Flow, now: float, pkt: Pkt, una_adv: bool) -> int:
        """tcp_clean_rtx_queue → tcp_ack_update_rtt (tcp_input.c:3087): the ACK's RTT sample
        (-1 when none).

        A never-retransmitted segment gives its own (Karn's rule forbids one from retransmitted
        data). Failing that, an ACK that advances snd_una (FLAG_ACKED) takes one from its
        timestamp echo, which timestamps (the 52-byte headers) always carry: TSecr is the TSval
        of the retransmission itself, so the sample is exact, in whole ms. A valid sample feeds
        the estimator and min_rtt, recomputes the RTO (tcp_set_rto) and clears the backoff
        (RFC 6298), so the doubled RTO of a timeout lasts only until the first retransmission
        is ACKed; the same sample is rs.rtt_us and pkts_acked's, so BBR's and CUBIC's hooks see
        it too."""
        if not pkt[2]:
            rtt_us = trunc((now - pkt[1]) * 1e6)
        elif una_adv:
            rtt_us = tsecr_rtt_us(now, pkt[1])
        else:
            return -1
        f.sample(rtt_us, f.snd_una, f.snd_nxt)  # tcp_rtt_estimator (Flow.rtt_estimator)
        f.backoff = 0
        if rtt_us < f.min_rtt_us:
            f.min_rtt_us = rtt_us
        f.last_rtt_us = rtt_us
        return rtt_us

    def set_xmit_timer(self, f: Flow, now: float, una_adv: bool) -> None:
        """tcp_set_xmit_timer on forward progress: the loss probe in Open, else tcp_rearm_rto;
        no timer with nothing outstanding; RACK's reorder timer when it asked for one."""
        if f.snd_nxt == f.snd_una:
            f.rto_deadline = f.tlp_deadline = f.reo_deadline = 0.0
        elif una_adv:
            f.reo_deadline = 0.0  # tcp_set_xmit_timer replaces a pending reorder timer
            self.arm_rto(f, now)
            if not self.schedule_loss_probe(f, now, f.rto_s):
                f.tlp_deadline = 0.0  # tcp_rearm_rto replaces a pending probe
        elif f.reo_wait > 0:
            lossrec.arm_reo(self, f, now)  # ICSK_TIME_REO_TIMEOUT
        f.reo_wait = -1.0

    def rate_sample(
        self,
        f: Flow,
        now: float,
        delivered: int,
        lost: int,
        pkt: Pkt,
        rtt_us: int,
        prior_in_flight: int,
    ) -> None:
        """tcp_rate_gen (tcp_rate.c): fill ``f.rs`` for ``cong_control``. Only an ops table
        with ``cong_control`` reads it, so only those flows pay for it (and only the fields
        BBR reads are kept: see :class:`~app.sim.congestion.flow.RateSample`)."""
        rs = f.rs
        if f.app_limited and f.delivered > f.app_limited:
            f.app_limited = 0
        if delivered:
            f.delivered_mstamp = now
        rs.acked_sacked = delivered
        rs.losses = lost
        rs.prior_in_flight = prior_in_flight
        rs.rtt_us = rtt_us
        if delivered > 0:
            rs.prior_delivered = pkt[3]
            rs.is_app_limited = pkt[6] != 0
            f.first_tx_mstamp = pkt[1]
            rs.delivered = f.delivered - pkt[3]
            # the longer of the send and the ACK phases; shorter than min_rtt is invalid
            interval = trunc(max(pkt[1] - pkt[5], now - pkt[4]) * 1e6)
            rs.interval_us = interval if interval >= f.min_rtt_us else -1
        else:
            rs.delivered = -1
            rs.interval_us = -1


def tsecr_rtt_us(now: float, sent: float) -> int:
    """The RTT the timestamp echo gives (tcp_ack_update_rtt): tcp_time_stamp now less the
    echoed TSval, both in TCP_TS_HZ (1 kHz) ticks of the same clock, at least 1, in µs."""
    delta = int(now * TCP_TS_HZ) - int(sent * TCP_TS_HZ)
    return (delta if delta > 0 else 1) * (1_000_000 // TCP_TS_HZ)
