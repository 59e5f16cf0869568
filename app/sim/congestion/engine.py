"""The event loop: flows, one bottleneck (drop-tail or RED), receivers, timers and sampling.

Model (a dumbbell):

* Senders reach the bottleneck instantly; all of a flow's propagation delay sits after it, split
  evenly between the data path (bottleneck → receiver) and the ACK path (receiver → sender).
  ACKs never queue. Every data packet is ``mss + 52`` bytes on the wire.
* The bottleneck is FIFO, drop-tail, and computed arithmetically: a packet arriving at ``t`` leaves
  at ``max(t, last_departure) + size/rate`` unless the packets already waiting reach the limit
  (the one being transmitted is not counted, as in a qdisc). Optional random loss is drawn from
  ``random.Random(seed)`` before the queue.
* Because the path is FIFO with a fixed delay per flow, a flow's packets reach its receiver in the
  order they were sent. So the receiver processes a packet when it is sent (its arrival time is
  already known), which saves one event per packet. The receiver ACKs every second full segment
  (``__tcp_ack_snd_check``), at once while data is out of order or a hole was just filled, the
  first few segments at once (quick-ACK mode), and otherwise after the 40 ms delayed-ACK timer.
  While it holds out-of-order data it compresses SACKs as 6.4 does by default
  (``tcp_comp_sack_nr`` = 44, see :mod:`~app.sim.congestion.loss`): the first 3 duplicate ACKs
  for a hole go at once, then one ACK per min(1 ms, 5 % of its RTT) or per 44 segments.
  Each ACK carries the cumulative ACK, how many segments the receiver holds out of order (what
  SACK blocks tell the sender) and the segment that triggered it (RACK's newest delivery, the RTT
  sample and the delivery-rate sample, as TCP timestamps and ``tcp_rate_skb_delivered`` give).
* Senders: Linux 6.4's ACK processing order (``tcp_ack``): clean the retransmit queue (RTT
  estimator, ``pkts_acked``), RACK loss marking, the CA-state machine (``tcp_fastretrans_alert``:
  Open/Disorder/Recovery/Loss), then ``tcp_cong_control`` (BBR's ``cong_control``, PRR in
  Recovery, else ``cong_avoid``), then transmit: lost segments first, then new data, while
  ``tcp_packets_in_flight < cwnd``; BBR's segments leave in TSO-sized bursts at ``tcp_wstamp_ns``.
* Events live in the shared :class:`~app.sim.core.events.EventQueue` (entries ``(time, priority,
  seq, kind, arg)``, equal times in scheduling order; an ACK entry names its flow by index). Each
  flow's retransmission, delayed-ACK and pacing timers are lazy
  :class:`~app.sim.core.events.Timer` entries: a later deadline only moves the flow's own
  deadline (``rto_deadline``/``tlp_deadline``, ``rcv_deadline``, ``wstamp``), an earlier one
  queues a new entry, an entry that comes up early re-queues itself and a superseded one is
  ignored. Time series are sampled every ``sample_ms``.
* The engine never asks which algorithm a flow runs: it calls the flow's ops table
  (:class:`~app.sim.congestion.reno.CongestionOps`) where tcp_input.c calls
  ``icsk->icsk_ca_ops``, and tests ``cong_control is not None`` where the kernel does.

Simplifications, each a deliberate choice (what Linux does differs as said):

* the handshake (``connect = "handshake"``, the default for new scenarios; handshake.py) is a
  SYN that waits for the queue and a SYN-ACK one RTT later, never dropped; with
  ``connect = "established"`` a flow starts established, with one RTT sample (base RTT + the
  queue then) as the SYN-ACK would give. No receive-window limit unless a flow sets
  ``rwnd_bytes`` (rwnd.py; Linux's autotuning keeps the default window ahead of a bulk flow);
  segments are full;
* the bottleneck is drop-tail unless ``aqm`` makes it RED (red.py), which drops or, with its
  ``ecn`` flag, marks CE on the ECT data of flows that negotiated ECN (``tcp_ecn = 1``); the
  receiver echoes ECE and the sender enters CWR (ecn.py). Without RED nothing is ever marked;
* the delayed-ACK timer is a fixed 40 ms (TCP_ATO_MIN; Linux adapts ``ato`` from it); the
  first segments are ACKed at once (quick-ACK): 16 with the default 65160-byte initial receive
  window and a 1448-byte MSS (``tcp_incr_quickack``); an out-of-order segment does not use up a
  quick ACK; SACK compression's delay uses the handshake RTT as the receiver's estimate (its
  srtt, which the kernel takes when smaller than ``rcv_rtt_est``) and ignores the 100 µs slack;
* loss detection is RACK with a reorder window of min_rtt/4 below 3 SACKed segments and 0 after
  (``reo_wnd_steps`` stays 1: the path never reorders, so no DSACK widens it), with its reorder
  timer (:mod:`~app.sim.congestion.loss`); the wait left is computed at the ACK that last
  advanced RACK (every ACK does here);
* after a timeout F-RTO (``tcp_frto`` = 2) runs as in ``tcp_process_loss``, and a timeout proved
  spurious (the timestamp echo, or never-retransmitted data (S)ACKed) is undone with the
  algorithm's ``undo_cwnd`` (:mod:`~app.sim.congestion.loss`). The model's FIFO path only makes
  a timeout spurious when its delay grows by more than the RTO (a test raises a flow's ``owd``
  to do that). There are no DSACKs (a duplicate reaches the receiver only after a spurious
  timeout, and the timestamp undo comes first), so no DSACK undo in Recovery; an undo keeps
  the lost mark on a segment already retransmitted (Linux clears it and counts the segment
  in flight twice until its ACK);
* the tail loss probe (RFC 8985 §7 as in 6.4's ``tcp_schedule_loss_probe`` /
  ``tcp_send_loss_probe``) is modelled: in Open, after new data or an ACK that moves snd_una,
  the flow's one timer becomes a probe timer of 2·srtt + 2 ms (+ 200 ms with one segment out,
  capped at the RTO); when it fires one new segment goes out beyond cwnd and the RTO restarts.
  A bulk sender always has new data, so Linux's other probe (resending the last segment when
  the window forbids new data) and what follows from it (a DSACK ending the episode,
  ``tcp_process_tlp_ack``'s cwnd reduction) cannot happen and are left out; the episode ends
  when snd_una reaches the probe. As in ``tcp_xmit_retransmit_queue``, resending the head
  segment restarts the RTO from now;
* on RTO every outstanding un-SACKed segment is marked lost (6.4 with RACK leaves segments
  sent within the last RTT unmarked; after ≥ 200 ms of silence that is normally none);
* the RTT sample of an ACK comes from the segment that triggered it (Linux's srtt uses the
  oldest newly ACKed segment, usually sent a few µs earlier in the same burst); when that is a
  retransmission and the ACK advances snd_una, the timestamp echo gives the sample, in whole
  ms, as ``tcp_ack_update_rtt`` takes it (the 52-byte headers carry timestamps);
* TSO only for paced (BBR) flows, as bursts of ``bbr_tso_segs_goal`` segments; no TSQ.
"""

from __future__ import annotations

import heapq
import math
import random
from typing import Any

from app.sim.congestion import ecn, handshake, rwnd
from app.sim.congestion import loss as lossrec
from app.sim.congestion.algorithms import make_ca
from app.sim.congestion.flow import (
    CA_CWR,
    CA_DISORDER,
    CA_LOSS,
    CA_NAMES,
    CA_OPEN,
    CA_RECOVERY,
    DUPTHRESH,
    EV_ACK,
    EV_COMPACK,
    EV_DELACK,
    EV_PACE,
    EV_RTO,
    EV_SAMPLE,
    EV_START,
    MAX_EVENTS_TOTAL,
    Flow,
    sk_pacing_rate,
)
from app.sim.congestion.params import CwndParams
from app.sim.congestion.red import Red
from app.sim.core.events import EventQueue, Timer
from app.sim.core.i18n import Param, msg
from app.sim.core.tcp import (
    TCP_DELACK_MIN_S,
    TCP_INFINITE_SSTHRESH,
    TCP_RTO_MAX_US,
    TCP_RTO_MIN_US,
)

_RTO_MAX_S = TCP_RTO_MAX_US / 1e6
TCP_TS_HZ = 1000  # include/net/tcp.h: the TCP timestamp clock (TSval) ticks every ms


class Engine:
    """One run. ``run()`` walks the heap to ``duration_s``; results stay on the flows."""

    def __init__(self, p: CwndParams) -> None:
        self.p = p
        self.end = p.duration_s
        self.rng = random.Random(p.seed)
        self.loss_rate = p.link.loss_rate
        rate_bps = p.link.rate_mbps * 1e6
        self.tx = p.wire_bytes * 8 / rate_bps  # seconds to serialise one packet
        self.limit = p.buffer_limit_packets
        # accept while the packets waiting (not the one in service) are fewer than the limit
        self.limit_time = self.limit * self.tx * (1 + 1e-9)
        self.last_dep = 0.0
        self.accepted = 0
        self.tail_drops = 0
        self.random_drops = 0
        self.acks = 0
        self.events_processed = 0
        self.evq = EventQueue()
        # the queue's heap and seq counter, bound once for the hot paths (send_new, on_ack)
        self.heap = self.evq.heap
        self.seq = self.evq.seq
        self.flows = [
            Flow(
                index=i,
                cc_name=f.cc,
                ca=make_ca(f.cc, self.rng),
                start=f.start_s,
                rtt=p.flow_rtt_ms(i) / 1e3,
                mss=p.mss,
                queue=self.evq,
            )
            for i, f in enumerate(p.flows)
        ]
        for f in self.flows:
            f.max_events = max(500, MAX_EVENTS_TOTAL // len(self.flows))
        # the options: a RED queue (red.py), ECN (ecn.py), receive windows (rwnd.py) and the
        # handshake (handshake.py)
        self.red: Red | None = None
        if p.link.aqm != "droptail":
            lo, hi = p.red_thresholds
            self.red = Red(lo, hi, p.link.red_max_p, p.link.aqm == "red-ecn", self.rng)
        self.ce_marks = 0
        self.handshake = p.connect == "handshake"
        for f, fp in zip(self.flows, p.flows, strict=True):
            f.ecn_ok = fp.tcp_ecn == 1  # the receiver's default tcp_ecn = 2 accepts
            if fp.rwnd_bytes is not None:
                f.rwnd = max(1, fp.rwnd_bytes // p.mss)
        self.sample_s = p.sample_ms / 1e3
        self.n_samples = int(math.floor(p.duration_s / self.sample_s + 1e-9)) + 1
        self.queue: dict[str, list[Any]] = {"t": [], "packets": [], "drops": []}
        for f in self.flows:
            self.push_event(f.start, EV_START, f.index)
        self.push_event(0.0, EV_SAMPLE, 0)

    def push_event(self, t: float, kind: int, arg: Any) -> None:
        self.evq.push(t, kind, arg)

    # -- main loop ---------------------------------------------------------------------------

    def run(self, until: float | None = None) -> None:
        """Process events up to ``until`` (default: the end). Calling it again resumes, so a
        test can walk the run in steps; finishing in steps gives the same result as at once."""
        evq = self.evq
        heap = evq.heap  # the hot loop pops the queue's heap itself (EventQueue.run inlined)
        pop = heapq.heappop
        flows = self.flows
        end = self.end if until is None else min(until, self.end)
        on_ack = self.on_ack
        push = heapq.heappush
        counter = evq.seq
        n = self.events_processed - self.acks
        acks = self.acks
        popped = 0
        while heap:
            if heap[0][0] > end:
                break
            ev = pop(heap)
            popped += 1
            now = ev[0]
            kind = ev[3]
            if kind == EV_ACK:
                # A flow's ACKs arrive in the order they were sent (FIFO path, fixed delay), so
                # they wait in its own queue with only the head in the heap; keep draining it
                # while it is ahead of every other event.
                f = flows[ev[4]]
                q = f.ackq
                while True:
                    t, a, sk, pkt = q.popleft()
                    acks += 1
                    on_ack(f, t, a, sk, pkt)
                    if not q:
                        f.ack_armed = False
                        break
                    nt = q[0][0]
                    if nt > end or (heap and nt >= heap[0][0]):
                        push(heap, (nt, 0, next(counter), EV_ACK, f.index))
                        break
                continue
            n += 1
            if kind == EV_PACE:
                # the pacing timer is armed only while idle, at wstamp, so its one entry is
                # always due when it pops (Timer.due, inlined: it runs for every paced burst)
                f = flows[ev[4]]
                timer = f.pace_timer
                timer.queued_at = timer.deadline = None
                self.push(f, now)
            elif kind == EV_DELACK:
                self.on_delack(flows[ev[4]], now)
            elif kind == EV_RTO:
                self.on_rto_timer(flows[ev[4]], now)
            elif kind == EV_SAMPLE:
                self.sample(now, ev[4])
            elif kind == EV_COMPACK:
                lossrec.on_comp_timer(self, flows[ev[4]], now)
            else:
                self.start_flow(flows[ev[4]], now)
        evq.processed += popped
        if end > evq.now:
            evq.now = end
        self.acks = acks
        self.events_processed = n + acks
        if end >= self.end:
            for f in flows:
                f.ca.finish(f, self.end)
                rwnd.finish(f, self.end)

    # -- flows start -----------------------------------------------------------------------

    def start_flow(self, f: Flow, now: float) -> None:
        """The connection is established at ``start_s``; the handshake gave one RTT sample.

        With ``connect = "handshake"`` the first call sends the SYN and the flow is
        established one round trip later, with the SYN's RTT as its first sample."""
        if self.handshake and not f.established:
            handshake.send_syn(self, f, now)
            return
        queue_wait = max(0.0, self.last_dep - now)
        m = f.syn_rtt_us or int((f.rtt + queue_wait) * 1e6)
        f.rtt_estimator(m)
        f.min_rtt_us = m
        f.comp_nr = self.p.comp_sack_nr
        f.comp_delay = lossrec.comp_delay(m)
        f.delivered_mstamp = f.first_tx_mstamp = f.wstamp = now
        ca = f.ca
        ca.init(f, now)
        f.series = {k: [] for k in SERIES_KEYS + ca.series_keys}
        text = msg(
            "flow {flow} ({cc}) starts: cwnd = IW {cwnd} segments, ssthresh = ∞, handshake RTT "
            "{rtt} ms → RTO {rto} ms",
            flow=f.index,
            cc=f.cc_name,
            cwnd=f.cwnd,
            rtt=f"{m / 1e3:.2f}",
            rto=f"{f.rto_s * 1e3:.0f}",
        )
        note = ca.start_note(f)
        if note is not None:
            text = text + note
        f.event("start", now, {"cwnd": f.cwnd, "rtt_ms": m / 1e3, "rto_ms": f.rto_s * 1e3}, text)
        self.push(f, now)

    # -- sending -------------------------------------------------------------------------------

    def push(self, f: Flow, now: float) -> None:
        """tcp_xmit_retransmit_queue then tcp_write_xmit: send while in_flight < cwnd."""
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
        transmit = self.transmit
        nxt0 = f.snd_nxt
        head = False
        if not f.paced:
            if f.rtxq:
                while room > 0:
                    seq = self.next_retransmit(f, now)
                    if seq < 0:
                        break
                    transmit(f, seq, now, True)
                    room -= 1
                    if seq == f.snd_una:
                        head = True
                    if in_reduction:
                        f.prr_out += 1
            if room > 0:
                self.send_new(f, room, now)
                if in_reduction:
                    f.prr_out += room
        else:
            goal = 0  # the TSO goal, read when first needed (only the pacing rate changes it)
            while room > 0:
                if f.wstamp > now:  # tcp_pacing_check: wait for the earliest departure time
                    timer = f.pace_timer
                    if timer.queued_at is None:  # Timer.arm, inlined (the timer is idle)
                        timer.queued_at = timer.deadline = f.wstamp
                        self.evq.push(f.wstamp, EV_PACE, f.index)
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
                    transmit(f, seq, now, True)
                    left -= 1
                    if seq == f.snd_una:
                        head = True
                if left:
                    self.send_new(f, left, now)
                room -= burst
                if in_reduction:
                    f.prr_out += burst
                # tcp_update_skb_after_send: the next burst leaves len/rate later, less up to
                # half of that as credit for lateness; the first 10 segments are not paced
                prior = f.wstamp
                if prior < now:
                    f.wstamp = now
                f.data_segs_out += burst
                rate = f.pacing_rate
                if rate and f.data_segs_out >= 10:
                    len_s = burst * f.mss / rate
                    credit = f.wstamp - prior
                    f.wstamp += len_s - min(len_s / 2, credit)
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
        """``transmit`` for ``n`` new segments at once (the hot path, so with locals)."""
        if self.red is not None:
            ecn.send_new(self, self.red, f, n, now)
            return
        seq0 = f.snd_nxt
        f.snd_nxt = seq0 + n
        heap = self.heap  # Timer.arm and EventQueue.push inlined below
        counter = self.seq
        tx = self.tx
        lim = self.limit_time
        owd = f.owd
        last = self.last_dep
        loss = self.loss_rate
        idx = f.index
        ooo = f.ooo
        d, dm, ft, al = f.delivered, f.delivered_mstamp, f.first_tx_mstamp, f.app_limited
        dropped = 0
        nxt = f.rcv_nxt  # receiver state in locals; written back before anything reads it
        pending = f.rcv_pending
        deadline = f.rcv_deadline
        hpush = heapq.heappush
        q = f.ackq
        qadd = q.append
        for seq in range(seq0, seq0 + n):
            pkt = (seq, now, False, d, dm, ft, al)
            b = last - now
            if b > lim or (loss and self.rng.random() < loss):
                if b > lim:
                    self.tail_drops += 1
                else:
                    self.random_drops += 1
                f.drops += 1
                f.undetected.append(pkt)
                dropped += 1
                continue
            last = (last if b > 0 else now) + tx
            r = last + owd
            if pending and deadline <= r:  # the delayed-ACK timer fired first
                pending = False
                f.rcv_nxt = nxt
                self.send_ack(f, deadline, f.rcv_pending_pkt)
            if f.comp_deadline and f.comp_deadline <= r:  # the compressed-SACK timer did
                f.rcv_nxt = nxt
                lossrec.comp_flush(self, f)
            if seq == nxt:
                nxt += 1
                if ooo:
                    if f.comp_count:
                        lossrec.comp_sent(f, r, 1)
                    while nxt in ooo:
                        ooo.remove(nxt)
                        nxt += 1
                elif f.quick > 0:
                    f.quick -= 1
                elif not pending:
                    pending = True
                    f.rcv_pending_pkt = pkt
                    deadline = r + TCP_DELACK_MIN_S
                    # arm the delayed-ACK timer (inlined): deadlines only grow (departures
                    # are FIFO), so an entry already queued comes first and on_delack moves it
                    if f.delack_timer.queued_at is None:
                        f.delack_timer.queued_at = deadline
                        hpush(heap, (deadline, 0, next(counter), EV_DELACK, idx))
                    continue
            elif seq > nxt:
                ooo.add(seq)
                if f.comp_nr and f.quick <= 0 and not lossrec.comp_ooo(self, f, nxt, pkt, r):
                    pending = False
                    continue
            pending = False
            qadd((r + owd, nxt, len(ooo), pkt))
        f.rcv_nxt = nxt
        f.rcv_pending = pending
        f.rcv_deadline = deadline
        if q and not f.ack_armed:
            f.ack_armed = True
            hpush(heap, (q[0][0], 0, next(counter), EV_ACK, idx))
        self.last_dep = last
        self.accepted += n - dropped

    def transmit(self, f: Flow, seq: int, now: float, retrans: bool) -> None:
        """One segment into the bottleneck; if it gets through, into the receiver."""
        if self.red is not None:
            ecn.transmit(self, self.red, f, seq, now, retrans)
            return
        pkt = (seq, now, retrans, f.delivered, f.delivered_mstamp, f.first_tx_mstamp, f.app_limited)
        if self.loss_rate and self.rng.random() < self.loss_rate:
            self.random_drops += 1
            f.drops += 1
            f.undetected.append(pkt)
            return
        backlog = self.last_dep - now
        if backlog > self.limit_time:
            self.tail_drops += 1
            f.drops += 1
            f.undetected.append(pkt)
            return
        dep = (self.last_dep if backlog > 0 else now) + self.tx
        self.last_dep = dep
        self.accepted += 1
        r = dep + f.owd  # arrival at the receiver
        # -- receiver (tcp_rcv_established / tcp_data_queue / __tcp_ack_snd_check) --
        if f.rcv_pending and f.rcv_deadline <= r:
            # the delayed-ACK timer expired before this segment arrived
            f.rcv_pending = False
            self.send_ack(f, f.rcv_deadline, f.rcv_pending_pkt)
        if f.comp_deadline and f.comp_deadline <= r:  # the compressed-SACK timer did
            lossrec.comp_flush(self, f)
        nxt = f.rcv_nxt
        if seq == nxt:
            nxt += 1
            ooo = f.ooo
            if ooo:  # fills (part of) a hole: ACK at once
                if f.comp_count:
                    lossrec.comp_sent(f, r, 1)
                while nxt in ooo:
                    ooo.remove(nxt)
                    nxt += 1
                f.rcv_nxt = nxt
            else:
                f.rcv_nxt = nxt
                if f.quick > 0:
                    f.quick -= 1
                elif not f.rcv_pending:  # first of two: wait for the next or the timer
                    f.rcv_pending = True
                    f.rcv_pending_pkt = pkt
                    f.rcv_deadline = d = r + TCP_DELACK_MIN_S
                    self.arm_delack(f, d)
                    return
        elif seq > nxt:
            f.ooo.add(seq)  # out of order: SACK it at once, unless SACKs are compressed
            if f.comp_nr and f.quick <= 0 and not lossrec.comp_ooo(self, f, nxt, pkt, r):
                f.rcv_pending = False
                return
        f.rcv_pending = False
        self.send_ack(f, r, pkt)

    def send_ack(self, f: Flow, t: float, pkt: Any) -> None:
        """The receiver sends an ACK at ``t``; it reaches the sender ``owd`` later."""
        at = t + f.owd
        sacked = len(f.ooo)
        if f.ecn_demand_cwr:  # tcp_ecn_send: ECE on every ACK until CWR arrives
            sacked |= ecn.ECE_BIT
        f.ackq.append((at, f.rcv_nxt, sacked, pkt))
        if not f.ack_armed:
            f.ack_armed = True
            self.evq.push(at, EV_ACK, f.index)

    def arm_delack(self, f: Flow, deadline: float) -> None:
        """Make sure the delayed-ACK timer fires no later than ``deadline`` (``rcv_deadline``).

        As :meth:`Timer.arm` queues it: deadlines only grow, so an entry already queued is
        earlier and stays; :meth:`on_delack` moves it on when it comes up early.
        """
        timer = f.delack_timer
        if timer.queued_at is None:
            timer.queued_at = deadline
            self.evq.push(deadline, EV_DELACK, f.index)

    def on_delack(self, f: Flow, now: float) -> None:
        """The delayed-ACK timer (tcp_delack_timer): ACK the pending segment if one still is.

        An ACK sent meanwhile (a second segment arrived) leaves the timer queued: it then
        finds nothing pending and stops; a newer pending segment's later deadline
        (``rcv_deadline``) re-queues it.
        """
        if not _claim(f.delack_timer, now):
            return  # never happens: deadlines only grow, so no entry is superseded
        if not f.rcv_pending:
            return
        if f.rcv_deadline <= now:
            f.rcv_pending = False
            self.send_ack(f, now, f.rcv_pending_pkt)
        else:
            self.arm_delack(f, f.rcv_deadline)

    # -- ACK processing ------------------------------------------------------------------------

    def on_ack(self, f: Flow, now: float, ack_no: int, sacked: int, pkt: tuple[Any, ...]) -> None:
        """tcp_ack for one ACK: scoreboard, RTT, loss marking, CA state, cwnd, transmit."""
        cong_control = f.cong_control
        if pkt[3] >= f.round_next:  # a segment sent after the round began: the round ends
            lossrec.round_end(f, now)
        if (
            not sacked
            and ack_no > f.snd_una
            and not f.sacked_out
            and not f.holes
            and f.ca_state == CA_OPEN
            and not f.undetected
        ):
            # The common case, in one place: in-order progress in state Open. Nothing can be
            # newly lost (a drop blocks the cumulative ACK and would show up as SACKs).
            if cong_control is not None:
                prior_in_flight = f.snd_nxt - f.snd_una + f.retrans_out
            # (icsk_retransmits is already 0 in Open: the first ACK to move snd_una after an
            # RTO clears it, in the Loss state, before Loss can end)
            delivered = ack_no - f.snd_una
            f.snd_una = ack_no
            f.delivered += delivered
            # tcp_ack_update_rtt: snd_una advanced, so there is always a sample: the segment's
            # own, or for a retransmission the timestamp echo (as in the slow path below)
            rtt_us = int((now - pkt[1]) * 1e6) if not pkt[2] else tsecr_rtt_us(now, pkt[1])
            # tcp_rtt_estimator, inlined here for speed (Flow.rtt_estimator is the shared
            # version): srtt ×8, mdev ×4, rttvar floored at 200 ms per RTT
            m = rtt_us
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
            f.rto_s = rto = -(-rto_us // 1000) / 1000 if rto_us < TCP_RTO_MAX_US else _RTO_MAX_S
            f.backoff = 0
            if rtt_us < f.min_rtt_us:
                f.min_rtt_us = rtt_us
            f.last_rtt_us = rtt_us
            if pkt[1] > f.rack_xmit:
                f.rack_xmit = pkt[1]
            if cong_control is not None:  # tcp_cong_control: the rate sample and bbr_main
                self.rate_sample(f, now, delivered, 0, pkt, rtt_us, prior_in_flight)
                cong_control(f, f.rs, now)
                if f.snd_nxt == ack_no:
                    f.rto_deadline = f.tlp_deadline = 0.0
                else:
                    f.rto_deadline = now + rto
                    self.schedule_loss_probe(f, now, rto)
                self.push(f, now)
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
                self.send_new(f, room, now)
                nxt = f.snd_nxt
            # tcp_set_xmit_timer / tcp_schedule_loss_probe (state Open): the timer becomes
            # the loss probe, 2·srtt in whole jiffies + 2 ms (+ 200 ms with one segment out),
            # never later than the RTO (``pto``, inlined for speed)
            pto = (((srtt >> 2) + 999) // 1000 + (2 if nxt - ack_no > 1 else 200)) / 1000
            f.tlp_deadline = d = now + (pto if pto < rto else rto)
            qa = f.rto_timer.queued_at  # set_timer, inlined
            if qa is None or d < qa:
                f.rto_timer.queued_at = d
                heapq.heappush(self.heap, (d, 0, next(self.seq), EV_RTO, f.index))
            return
        ece = False
        if sacked >= ecn.ECE_BIT:  # tcp_ecn_rcv_ecn_echo: FLAG_ECE
            sacked -= ecn.ECE_BIT
            ece = f.ecn_ok
            f.ece_acks += 1
        if cong_control is not None:
            prior_in_flight = f.snd_nxt - f.snd_una - f.sacked_out - len(f.holes) + f.retrans_out
        delivered = 0
        una_adv = False
        orig = False  # FLAG_ORIG_SACK_ACKED, asked only in Loss with F-RTO on
        if f.comp_acks and f.comp_acks[0][0] <= now:
            lossrec.comp_ack_arrived(f, now)
        if ack_no > f.snd_una:
            if f.frto and f.ca_state == CA_LOSS:
                orig = lossrec.orig_cum_acked(f, ack_no)
            delivered = ack_no - f.snd_una
            f.snd_una = ack_no
            f.icsk_retransmits = 0
            una_adv = True
            if f.holes:
                self.cum_ack_holes(f, ack_no)
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
        f.delivered += delivered

        # tcp_clean_rtx_queue → tcp_ack_update_rtt (tcp_input.c:3087): the ACK's RTT sample
        # (-1 when none). A never-retransmitted segment gives its own (Karn's rule forbids one
        # from retransmitted data). Failing that, an ACK that advances snd_una (FLAG_ACKED)
        # takes one from its timestamp echo, which timestamps (the 52-byte headers) always
        # carry: TSecr is the TSval of the retransmission itself, so the sample is exact, in
        # whole ms. A valid sample feeds the estimator and min_rtt, recomputes the RTO
        # (tcp_set_rto) and clears the backoff (RFC 6298), so the doubled RTO of a timeout lasts
        # only until the first retransmission is ACKed; the same sample is rs.rtt_us and
        # pkts_acked's, so BBR's and CUBIC's hooks see it too.
        if not pkt[2]:
            rtt_us = int((now - pkt[1]) * 1e6)
        elif una_adv:
            rtt_us = tsecr_rtt_us(now, pkt[1])
        else:
            rtt_us = -1
        if rtt_us >= 0:
            f.sample(rtt_us, f.snd_una, f.snd_nxt)  # tcp_rtt_estimator (Flow.rtt_estimator)
            f.backoff = 0
            if rtt_us < f.min_rtt_us:
                f.min_rtt_us = rtt_us
            f.last_rtt_us = rtt_us
        ca = f.ca
        if ca.pkts_acked is not None:
            ca.pkts_acked(f, rtt_us, now)

        # RACK: the newest delivered transmission marks everything sent before it as lost
        if pkt[1] > f.rack_xmit:
            f.rack_xmit = pkt[1]
        newly_lost = self.rack_mark_lost(f) if f.undetected else 0

        # tcp_fastretrans_alert: leave Recovery/Loss once high_seq is ACKed; enter Recovery
        state = f.ca_state
        if state == CA_LOSS:  # tcp_process_loss: F-RTO, undo, or the end of Loss
            if lossrec.process_loss(self, f, now, una_adv, orig, sacked > s_old, pkt):
                if f.undetected:  # RACK looks again after an undo (rack.advanced = 1)
                    newly_lost += self.rack_mark_lost(f)
                self.ca_state_machine(f, now)
        elif ece or state == CA_CWR:
            ecn.alert(self, f, now, ece)
        elif state >= CA_RECOVERY or f.holes or f.sacked_out or state == CA_DISORDER:
            self.ca_state_machine(f, now)

        # tcp_cong_control
        if cong_control is not None:
            self.rate_sample(f, now, delivered, newly_lost, pkt, rtt_us, prior_in_flight)
            cong_control(f, f.rs, now)
        elif f.ca_state == CA_RECOVERY or f.ca_state == CA_CWR:
            self.cwnd_reduction(f, delivered, newly_lost, una_adv)
        elif una_adv:
            ca.cong_avoid(f, delivered, now)

        # tcp_set_xmit_timer on forward progress: the loss probe in Open, else tcp_rearm_rto;
        # no timer with nothing outstanding
        if f.snd_nxt == f.snd_una:
            f.rto_deadline = f.tlp_deadline = f.reo_deadline = 0.0
        elif una_adv:
            f.reo_deadline = 0.0  # tcp_set_xmit_timer replaces a pending reorder timer
            self.arm_rto(f, now)
            if not self.schedule_loss_probe(f, now, f.rto_s):
                f.tlp_deadline = 0.0  # tcp_rearm_rto replaces a pending probe
        elif f.reo_wait > 0:
            lossrec.arm_reo(self, f, now)  # tcp_rack_mark_lost: ICSK_TIME_REO_TIMEOUT
        f.reo_wait = -1.0
        if f.frto_new:  # tcp_xmit_recovery with REXMIT_NEW
            lossrec.frto_send_new(self, f, now)
        else:
            self.push(f, now)

    def cum_ack_holes(self, f: Flow, ack_no: int) -> None:
        hh = f.hole_heap
        holes = f.holes
        while hh and hh[0] < ack_no:
            seq = heapq.heappop(hh)
            if seq in holes and holes.pop(seq) is not None:
                f.retrans_out -= 1

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
        holes = f.holes
        n = 0
        while und:
            p = und[0]
            x = p[1]
            if x >= rx or rx - x < reo:
                if x < rx:  # inside the reorder window: the timer waits for the rest
                    f.reo_wait = lossrec.reo_wait(und, rx, reo)
                break
            und.popleft()
            seq = p[0]
            if p[2]:  # a dropped retransmission: lost again
                if holes.get(seq) == x:
                    holes[seq] = None
                    f.retrans_out -= 1
                    heapq.heappush(f.rtxq, seq)
                    n += 1
            elif seq >= f.snd_una and seq not in holes:
                holes[seq] = None
                heapq.heappush(f.hole_heap, seq)
                heapq.heappush(f.rtxq, seq)
                n += 1
        f.lost += n
        return n

    def ca_state_machine(self, f: Flow, now: float) -> None:
        state = f.ca_state
        if state == CA_RECOVERY and f.snd_una >= f.high_seq:
            # tcp_end_cwnd_reduction: cwnd = ssthresh, unless cong_control keeps its own cwnd
            before = f.cwnd
            if f.cong_control is None and f.ssthresh < TCP_INFINITE_SSTHRESH:
                f.cwnd = f.ssthresh
            self.set_ca_state(f, CA_OPEN, now)
            f.event(
                "recovery_exit",
                now,
                {"cwnd": f.cwnd, "ssthresh": _ss(f), "cwnd_before": before},
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
                "ssthresh": _ss(f),
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
            {"cwnd": cwnd, "ssthresh": _ss(f), "high_seq": f.high_seq, "lost": lost},
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

    def rate_sample(
        self,
        f: Flow,
        now: float,
        delivered: int,
        lost: int,
        pkt: Any,
        rtt_us: int,
        prior_in_flight: int,
    ) -> None:
        """tcp_rate_gen (tcp_rate.c): fill ``f.rs`` for ``cong_control``. Only an ops table
        with ``cong_control`` reads it, so only those flows pay for it."""
        rs = f.rs
        if f.app_limited and f.delivered > f.app_limited:
            f.app_limited = 0
        if delivered:
            f.delivered_mstamp = now
        rs.acked_sacked = delivered
        rs.losses = lost
        rs.prior_in_flight = prior_in_flight
        rs.rtt_us = rtt_us
        rs.is_ack_delayed = False  # only runt (sub-MSS) segments are flagged; ours are full
        if delivered > 0:
            rs.prior_delivered = pkt[3]
            rs.prior_mstamp = pkt[4]
            rs.is_app_limited = bool(pkt[6])
            rs.is_retrans = pkt[2]
            f.first_tx_mstamp = pkt[1]
            rs.delivered = f.delivered - pkt[3]
            interval = int(max(pkt[1] - pkt[5], now - pkt[4]) * 1e6)
            if interval < f.min_rtt_us:
                interval = -1
            else:
                f.rate_delivered = rs.delivered
                f.rate_interval_us = interval
            rs.interval_us = interval
        else:
            rs.delivered = -1
            rs.interval_us = -1

    # -- retransmission timer --------------------------------------------------------------------

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
        pto = _pto(f)
        if 0 < rto_left < pto:
            pto = rto_left
        d = now + pto
        if f.paced and f.wstamp > now:
            d += f.wstamp - now
        f.tlp_deadline = d
        self.set_timer(f, d)
        return True

    def on_rto_timer(self, f: Flow, now: float) -> None:
        """The retransmission timer: the loss probe if one is scheduled, else the RTO.

        The flow keeps the two deadlines it serves (``tlp_deadline``, ``rto_deadline``) itself,
        so this handler, not :meth:`Timer.due`, decides whether to fire or re-queue.
        """
        if not _claim(f.rto_timer, now):
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
            prior = f.wstamp
            f.wstamp = now
            f.data_segs_out += 1
            rate = f.pacing_rate
            if rate and f.data_segs_out >= 10:
                len_s = f.mss / rate
                f.wstamp += len_s - min(len_s / 2, now - prior)
        f.tlp_high_seq = f.snd_nxt
        f.tlps += 1
        pto = _pto(f)
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
        # tcp_timeout_mark_lost: everything outstanding that is not SACKed is lost
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
        f.tlp_deadline = 0.0
        f.cwnd = f.in_flight() + 1
        f.snd_cwnd_cnt = 0
        f.high_seq = f.snd_nxt
        f.ecn_queue_cwr = f.ecn_ok  # tcp_ecn_queue_cwr
        self.set_ca_state(f, CA_LOSS, now)
        rto = f.rto_s
        f.icsk_retransmits += 1
        f.backoff += 1
        f.rto_s = min(f.rto_s * 2, _RTO_MAX_S)
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
                "ssthresh": _ss(f),
                "rto_ms": rto * 1e3,
                "next_rto_ms": f.rto_s * 1e3,
                "lost": len(holes),
                "backoff": f.backoff,
            },
            msg(
                "retransmission timeout after {rto} ms without progress: {lost} segments marked "
                "lost, cwnd {before} → {cwnd} (packets in flight + 1), {why}; the timer backs off "
                "to {next_rto} ms",
                rto=f"{rto * 1e3:.0f}",
                lost=len(holes),
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

    # -- sampling -------------------------------------------------------------------------------

    def sample(self, now: float, k: int) -> None:
        dt = self.sample_s
        tx = self.tx
        b = self.last_dep - now
        waiting = max(0, math.ceil(b / tx - 1e-6) - 1) if b > 0 else 0
        q = self.queue
        q["t"].append(round(now, 6))
        q["packets"].append(waiting)
        q["drops"].append(self.tail_drops + self.random_drops)
        for f in self.flows:
            if f.start > now + 1e-12 or not f.series:
                continue
            s = f.series
            s["t"].append(round(now, 6))
            s["cwnd"].append(f.cwnd)
            s["ssthresh"].append(_ss(f))
            s["inflight"].append(f.in_flight())
            s["srtt_ms"].append(round(f.srtt_us / 8000, 3))
            if f.last_rtt_us >= 0:
                f.rtt_samples.append(f.last_rtt_us)
            s["pacing_mbps"].append(round(sk_pacing_rate(f) * 8e-6, 3))
            span = min(dt, now - f.start) or dt
            s["delivery_mbps"].append(
                round((f.delivered - f.last_sample_delivered) * f.mss * 8e-6 / span, 3)
            )
            f.last_sample_delivered = f.delivered
            s["ca_state"].append(CA_NAMES[f.ca_state])
            f.ca.record(f, s)
        if k + 1 < self.n_samples:
            self.push_event((k + 1) * dt, EV_SAMPLE, k + 1)


SERIES_KEYS = (
    "t",
    "cwnd",
    "ssthresh",
    "inflight",
    "srtt_ms",
    "pacing_mbps",
    "delivery_mbps",
    "bbr_mode",
    "ca_state",
)
"""Every flow's series; its algorithm adds its own ``series_keys`` after these."""


def _claim(timer: Timer, now: float) -> bool:
    """Whether the entry popped at ``now`` is ``timer``'s live one (the earliest it queued);
    if so it is consumed and the timer is idle until armed again. A superseded entry, or one
    of a timer that is not armed, gives False (what :meth:`Timer.due` checks first)."""
    if timer.queued_at != now:
        return False
    timer.queued_at = None
    timer.deadline = None
    return True


def tsecr_rtt_us(now: float, sent: float) -> int:
    """The RTT the timestamp echo gives (tcp_ack_update_rtt): tcp_time_stamp now less the
    echoed TSval, both in TCP_TS_HZ (1 kHz) ticks of the same clock, at least 1, in µs."""
    delta = int(now * TCP_TS_HZ) - int(sent * TCP_TS_HZ)
    return (delta if delta > 0 else 1) * (1_000_000 // TCP_TS_HZ)


def _pto(f: Flow) -> float:
    """The probe timeout in seconds, before the RTO cap: usecs_to_jiffies(2·srtt) plus
    TCP_TIMEOUT_MIN (2 jiffies), or TCP_RTO_MIN with one segment out (HZ = 1000)."""
    jiffies = ((f.srtt_us >> 2) + 999) // 1000  # usecs_to_jiffies rounds up
    return (jiffies + (200 if f.snd_nxt - f.snd_una == 1 else 2)) / 1000


def _ss(f: Flow) -> int | None:
    return None if f.ssthresh >= TCP_INFINITE_SSTHRESH else f.ssthresh
