"""The receiver: data in, ACKs out (Linux 6.4, net/ipv4/tcp_input.c and tcp_timer.c).

One receiver for every path: the drop-tail link hands it bursts, the RED path
(:func:`~app.sim.congestion.ecn.transmit`) one segment at a time with its ECN bits.

* ``tcp_data_queue``: an in-order segment advances ``rcv_nxt`` and, when it fills (part of) a
  hole, pulls the out-of-order segments behind it (``tcp_ofo_queue``); an out-of-order one goes
  to the out-of-order set (``tcp_data_queue_ofo``).
* ``__tcp_ack_snd_check``: ACK every second full segment, at once while data is out of order or
  a hole was just filled, the first few segments at once (quick-ACK mode: ``tcp_incr_quickack``
  from ``tcp_event_data_recv``; :func:`~app.sim.congestion.flow.initial_quickacks`), and
  otherwise after the delayed-ACK timer (``tcp_delack_timer`` in tcp_timer.c; a fixed 40 ms,
  TCP_ATO_MIN, where Linux adapts ``ato`` from it).
* SACK compression (``__tcp_ack_snd_check`` with ``tcp_comp_sack_nr`` = 44, the hrtimer
  ``tcp_compressed_ack_kick``): while the receiver holds out-of-order data, the first 3
  duplicate ACKs for a hole go at once, then one ACK per min(1 ms, 5 % of its RTT) or per 44
  segments (:mod:`~app.sim.congestion.loss` keeps the counters).
* ECN (``tcp_ecn_accept_cwr`` and ``__tcp_ecn_check_ce``, :func:`~app.sim.congestion.ecn.data_ecn`)
  on the RED path; every ACK sent while TCP_ECN_DEMAND_CWR is set carries ECE
  (``tcp_ecn_send``).

Each ACK carries the cumulative ACK, how many segments the receiver holds out of order (what
SACK blocks tell the sender) and the segment that triggered it (RACK's newest delivery, the RTT
sample and the delivery-rate sample, as TCP timestamps and ``tcp_rate_skb_delivered`` give). It
reaches the sender ``owd`` later, in the flow's own FIFO ``ackq``; only its head is in the
event heap.

One difference between the paths is kept as it was (traces are pinned): on the RED path a
data segment never flushes a compressed-SACK ACK whose timer deadline has passed; only the
timer (``EV_COMPACK``) sends it.
"""

from __future__ import annotations

import heapq

from app.sim.congestion import ecn
from app.sim.congestion import loss as lossrec
from app.sim.congestion.flow import EV_ACK, EV_DELACK, Flow, Pkt
from app.sim.congestion.link import Link
from app.sim.core.events import Timer
from app.sim.core.tcp import TCP_DELACK_MIN_S


class Receiver(Link):
    """The receiving half of every flow (its fields live on :class:`Flow`: ``rcv_nxt``,
    ``ooo``, ``rcv_pending``, ``quick``, the ``comp_*`` counters)."""

    def rcv_data(self, f: Flow, segs: list[tuple[float, Pkt]], ecn_bits: int = -1) -> None:
        """``tcp_data_queue`` then ``__tcp_ack_snd_check`` for segments arriving at the given
        times, in order. ``ecn_bits`` (RED path only, one segment) holds the segment's ECT, CE
        and CWR (:data:`~app.sim.congestion.ecn.ECT`...); -1 on the drop-tail path.

        Receiver state sits in locals while the burst is processed and is written back before
        anything else reads it; ACKs go into ``ackq`` and the queue's head is armed at the end.
        """
        owd = f.owd
        ooo = f.ooo
        nxt = f.rcv_nxt
        pending = f.rcv_pending
        deadline = f.rcv_deadline
        q = f.ackq
        red = ecn_bits >= 0
        now_ack = False
        for r, pkt in segs:
            if pending and deadline <= r:  # the delayed-ACK timer fired first
                pending = False
                f.rcv_nxt = nxt
                self.send_ack(f, deadline, f.rcv_pending_pkt)
            if red:  # tcp_ecn_accept_cwr, __tcp_ecn_check_ce
                now_ack = ecn.data_ecn(f, ecn_bits, pkt[0], nxt)
            elif f.comp_deadline and f.comp_deadline <= r:  # the compressed-SACK timer did
                f.rcv_nxt = nxt
                lossrec.comp_flush(self, f)
            seq = pkt[0]
            if seq == nxt:
                nxt += 1
                if ooo:  # fills (part of) a hole: ACK at once
                    if f.comp_count:
                        lossrec.comp_sent(f, r, 1)
                    while nxt in ooo:
                        ooo.remove(nxt)
                        nxt += 1
                elif f.quick > 0:
                    f.quick -= 1
                elif not pending and not now_ack:  # first of two: wait for the next or the timer
                    pending = True
                    f.rcv_pending_pkt = pkt
                    deadline = r + TCP_DELACK_MIN_S
                    # arm the delayed-ACK timer (arm_delack, inlined): deadlines only grow
                    # (departures are FIFO), so an entry already queued comes first and
                    # on_delack moves it
                    if f.delack_timer.queued_at is None:
                        f.delack_timer.queued_at = deadline
                        heapq.heappush(self.heap, (deadline, 0, next(self.seq), EV_DELACK, f.index))
                    continue
            elif seq > nxt:
                ooo.add(seq)  # out of order: SACK it at once, unless SACKs are compressed
                if (
                    f.comp_nr
                    and f.quick <= 0
                    and not now_ack
                    and not lossrec.comp_ooo(self, f, nxt, pkt, r)
                ):
                    pending = False
                    continue
            pending = False
            # tcp_ecn_send: ECE on every ACK until CWR arrives (only RED marks)
            if red and f.ecn_demand_cwr:
                q.append((r + owd, nxt, len(ooo) | ecn.ECE_BIT, pkt))
            else:
                q.append((r + owd, nxt, len(ooo), pkt))
        f.rcv_nxt = nxt
        f.rcv_pending = pending
        f.rcv_deadline = deadline
        if q and not f.ack_armed:
            f.ack_armed = True
            heapq.heappush(self.heap, (q[0][0], 0, next(self.seq), EV_ACK, f.index))

    def rcv_burst(self, f: Flow, segs: list[tuple[float, Pkt]]) -> None:
        """:meth:`rcv_data` for a paced flow's drop-tail burst (TSO-sized, so worth a loop of
        its own): while nothing is out of order, no quick ACK is left and no compressed SACK
        waits, :meth:`rcv_in_order` takes the segments; rcv_data the rest."""
        if not f.ooo and f.quick <= 0 and not f.comp_deadline:
            done = self.rcv_in_order(f, segs)
            if done == len(segs):
                return
            segs = segs[done:]
        self.rcv_data(f, segs)

    def rcv_in_order(self, f: Flow, segs: list[tuple[float, Pkt]]) -> int:
        """:meth:`rcv_data`'s steps for its commonest case, until a segment arrives out of
        order: nothing is out of order, no quick ACK is left and no compressed SACK waits, so
        every second in-order segment is ACKed (with no SACK) and the first of two arms the
        delayed ACK. Returns how many segments it took."""
        owd = f.owd
        nxt0 = nxt = f.rcv_nxt
        pending = f.rcv_pending
        deadline = f.rcv_deadline
        add = f.ackq.append
        for r, pkt in segs:
            if pending and deadline <= r:  # the delayed-ACK timer fired first
                pending = False
                f.rcv_nxt = nxt
                self.send_ack(f, deadline, f.rcv_pending_pkt)
            if pkt[0] != nxt:
                break
            nxt += 1
            if pending:
                pending = False
                add((r + owd, nxt, 0, pkt))
            else:  # first of two: wait for the next or the timer (arm_delack, inlined)
                pending = True
                f.rcv_pending_pkt = pkt
                deadline = r + TCP_DELACK_MIN_S
                if f.delack_timer.queued_at is None:
                    f.delack_timer.queued_at = deadline
                    heapq.heappush(self.heap, (deadline, 0, next(self.seq), EV_DELACK, f.index))
        f.rcv_nxt = nxt
        f.rcv_pending = pending
        f.rcv_deadline = deadline
        if f.ackq and not f.ack_armed:
            f.ack_armed = True
            heapq.heappush(self.heap, (f.ackq[0][0], 0, next(self.seq), EV_ACK, f.index))
        return nxt - nxt0

    def send_ack(self, f: Flow, t: float, pkt: Pkt | None) -> None:
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
        if not claim(f.delack_timer, now):
            return  # never happens: deadlines only grow, so no entry is superseded
        if not f.rcv_pending:
            return
        if f.rcv_deadline <= now:
            f.rcv_pending = False
            self.send_ack(f, now, f.rcv_pending_pkt)
        else:
            self.arm_delack(f, f.rcv_deadline)


def claim(timer: Timer, now: float) -> bool:
    """Whether the entry popped at ``now`` is ``timer``'s live one (the earliest it queued);
    if so it is consumed and the timer is idle until armed again. A superseded entry, or one
    of a timer that is not armed, gives False (what :meth:`Timer.due` checks first)."""
    if timer.queued_at != now:
        return False
    timer.queued_at = None
    timer.deadline = None
    return True
