"""The event loop of the congestion-control simulator: flows, one bottleneck, timers, sampling.

The engine is assembled from parts that follow Linux 6.4's files, each its own module:

* :mod:`~app.sim.congestion.link`: the bottleneck (a FIFO, drop-tail or RED) and the shared
  state;
* :mod:`~app.sim.congestion.receiver`: ``tcp_data_queue``, ``__tcp_ack_snd_check``, the
  delayed ACK and SACK compression (tcp_input.c, tcp_timer.c);
* :mod:`~app.sim.congestion.sender`: ``tcp_write_xmit``, ``tcp_transmit_skb``, pacing, the loss
  probe (tcp_output.c);
* :mod:`~app.sim.congestion.recovery`: RACK, ``tcp_fastretrans_alert``, PRR and the RTO
  (tcp_recovery.c, tcp_input.c, tcp_timer.c); F-RTO, undo and SACK compression's counters in
  :mod:`~app.sim.congestion.loss`;
* :mod:`~app.sim.congestion.ack`: ``tcp_ack`` step by step, ``tcp_rate_gen`` (tcp_input.c,
  tcp_rate.c).

Events live in the shared :class:`~app.sim.core.events.EventQueue` (entries ``(time, priority,
seq, kind, arg)``, equal times in scheduling order; an ACK entry names its flow by index). Each
flow's retransmission, delayed-ACK and pacing timers are lazy
:class:`~app.sim.core.events.Timer` entries: a later deadline only moves the flow's own deadline
(``rto_deadline``/``tlp_deadline``, ``rcv_deadline``, ``wstamp``), an earlier one queues a new
entry, an entry that comes up early re-queues itself and a superseded one is ignored. A flow's
ACKs arrive in the order they were sent, so they wait in its own ``ackq`` with only the head in
the heap. Time series are sampled every ``sample_ms``.

Simplifications of the whole (each part's module lists its own):

* the handshake (``connect = "handshake"``, the default for new scenarios; handshake.py) is a
  SYN that waits for the queue and a SYN-ACK one RTT later, never dropped; with
  ``connect = "established"`` a flow starts established, with one RTT sample (base RTT + the
  queue then) as the SYN-ACK would give. No receive-window limit unless a flow sets
  ``rwnd_bytes`` (rwnd.py; Linux's autotuning keeps the default window ahead of a bulk flow);
  segments are full;
* the bottleneck is drop-tail unless ``aqm`` makes it RED (red.py), which drops or, with its
  ``ecn`` flag, marks CE on the ECT data of flows that negotiated ECN (``tcp_ecn = 1``); the
  receiver echoes ECE and the sender enters CWR (ecn.py). Without RED nothing is ever marked;
* the first segments are ACKed at once (quick-ACK): 16 with the default 65160-byte initial
  receive window and a 1448-byte MSS (``tcp_incr_quickack``); an out-of-order segment does not
  use up a quick ACK; SACK compression's delay uses the handshake RTT as the receiver's estimate
  (its srtt, which the kernel takes when smaller than ``rcv_rtt_est``) and ignores the 100 µs
  slack.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from app.sim.congestion import handshake, rwnd
from app.sim.congestion import loss as lossrec
from app.sim.congestion.ack import AckProcessing
from app.sim.congestion.ack import tsecr_rtt_us as tsecr_rtt_us
from app.sim.congestion.algorithms import make_ca
from app.sim.congestion.flow import (
    CA_NAMES,
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
    ss_or_none,
)
from app.sim.congestion.params import CwndParams
from app.sim.core.events import EventQueue
from app.sim.core.i18n import msg


class Engine(AckProcessing):
    """One run. ``run()`` walks the heap to ``duration_s``; results stay on the flows."""

    def __init__(self, p: CwndParams) -> None:
        self.p = p
        self.end = p.duration_s
        self.init_link(p)
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
        self.init_red(p)
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

    # -- sampling -------------------------------------------------------------------------------

    def sample(self, now: float, k: int) -> None:
        dt = self.sample_s
        waiting = self.waiting(now)
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
            s["ssthresh"].append(ss_or_none(f))
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
