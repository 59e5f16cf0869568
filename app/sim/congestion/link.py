"""The bottleneck link of the dumbbell: one FIFO, computed arithmetically, and the engine's state.

Mirrors no single kernel file: the queue is a packet-limited FIFO as ``pfifo_enqueue``
(net/sched/sch_fifo.c) keeps one, drop-tail unless the scenario's ``aqm`` makes it RED
(:mod:`~app.sim.congestion.red`, whose path is :func:`~app.sim.congestion.ecn.transmit`).

* Senders reach the bottleneck instantly; all of a flow's propagation delay sits after it, split
  evenly between the data path (bottleneck → receiver) and the ACK path (receiver → sender).
  ACKs never queue. Every data packet is ``mss + 52`` bytes on the wire.
* A packet arriving at ``t`` leaves at ``max(t, last_departure) + size/rate`` unless the packets
  already waiting reach the limit (the one being transmitted is not counted, as in a qdisc).
  Optional random loss is drawn from ``random.Random(seed)`` before the queue.
* The path is FIFO with a fixed delay per flow, so a flow's packets reach its receiver in the
  order they were sent: the link hands the receiver each segment with its arrival time at once
  (:mod:`~app.sim.congestion.receiver`), which saves one event per packet.

:class:`Link` also declares the state every part of the engine shares (the event queue, the
flows, the counters), so that each part (:mod:`~app.sim.congestion.receiver`,
:mod:`~app.sim.congestion.sender`, :mod:`~app.sim.congestion.recovery`,
:mod:`~app.sim.congestion.ack`) is type-checked against it.
"""

from __future__ import annotations

import math
import random
from typing import Any

from app.sim.congestion.flow import Flow, Pkt
from app.sim.congestion.params import CwndParams
from app.sim.congestion.red import Red
from app.sim.core.events import EventQueue


class Link:
    """The bottleneck and the run's shared state (:class:`~app.sim.congestion.engine.Engine`
    fills it)."""

    p: CwndParams
    end: float
    rng: random.Random
    loss_rate: float
    tx: float
    limit: int
    limit_time: float
    last_dep: float
    accepted: int
    tail_drops: int
    random_drops: int
    ce_marks: int
    red: Red | None
    acks: int
    events_processed: int
    evq: EventQueue
    heap: list[Any]
    seq: Any
    flows: list[Flow]

    def init_link(self, p: CwndParams) -> None:
        """The link's numbers: serialisation time, the queue limit, optional RED and loss."""
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
        self.ce_marks = 0

    def init_red(self, p: CwndParams) -> None:
        """A RED queue (red.py) when ``aqm`` asks for one; it draws from the link's rng."""
        self.red = None
        if p.link.aqm != "droptail":
            lo, hi = p.red_thresholds
            self.red = Red(lo, hi, p.link.red_max_p, p.link.aqm == "red-ecn", self.rng)

    def enqueue(self, f: Flow, pkt: Pkt, now: float) -> float:
        """One segment (a retransmission or a probe) into the drop-tail queue: its arrival
        time at the receiver, or -1.0 when it is dropped (random loss is drawn first)."""
        if self.loss_rate and self.rng.random() < self.loss_rate:
            self.random_drops += 1
            f.drops += 1
            f.undetected.append(pkt)
            return -1.0
        backlog = self.last_dep - now
        if backlog > self.limit_time:
            self.tail_drops += 1
            f.drops += 1
            f.undetected.append(pkt)
            return -1.0
        dep = (self.last_dep if backlog > 0 else now) + self.tx
        self.last_dep = dep
        self.accepted += 1
        return dep + f.owd

    def enqueue_burst(self, f: Flow, seq0: int, n: int, now: float) -> list[tuple[float, Pkt]]:
        """``n`` new segments from ``seq0`` into the drop-tail queue at once (the hot path, so
        with locals): the ones that get through, as (arrival at the receiver, segment). The
        queue limit is tested before random loss is drawn."""
        tx = self.tx
        lim = self.limit_time
        owd = f.owd
        last = self.last_dep
        loss = self.loss_rate
        d, dm, ft, al = f.delivered, f.delivered_mstamp, f.first_tx_mstamp, f.app_limited
        b = last - now
        if n > 0 and not loss and (b if b > 0 else 0.0) + (n + 1) * tx <= lim:
            # the whole burst fits in the queue (with a packet's time to spare over the
            # rounding of the running sum): each segment leaves tx after the one before, the
            # first tx after the link frees up; the same running sum as the loop below
            out: list[tuple[float, Pkt]] = []
            add = out.append
            if b <= 0:
                last = now
            for seq in range(seq0, seq0 + n):
                last += tx
                add((last + owd, (seq, now, False, d, dm, ft, al)))
            self.last_dep = last
            self.accepted += n
            return out
        out = []
        add = out.append
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
                continue
            last = (last if b > 0 else now) + tx
            add((last + owd, pkt))
        self.last_dep = last
        self.accepted += len(out)
        return out

    def waiting(self, now: float) -> int:
        """Packets waiting at ``now``, not counting the one being sent."""
        b = self.last_dep - now
        return max(0, math.ceil(b / self.tx - 1e-6) - 1) if b > 0 else 0
