"""The scripted peer: the model's local endpoint (app.sim.tcp, Linux 6.4) with the network
replaced by a packetdrill script. Segments the local endpoint sends are captured in an outbox
instead of travelling (``xmit`` cancels their delivery); the script's inbound packets are
handed to ``tcp_v4_rcv`` (:func:`app.sim.tcp.tcp_ipv4.receive`) at their times. Nothing in
the model changes: this subclasses :class:`app.sim.tcp.driver.Sim`."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.sim.core.i18n import msg
from app.sim.core.sources import SourceRef
from app.sim.tcp import tcp_ipv4
from app.sim.tcp.driver import Sim
from app.sim.tcp.params import TcpParams
from app.sim.tcp.sock import EV_ARRIVE, EV_CALL, Seg


class RunLimit(Exception):
    """The script needs more model events than a run may take."""


@dataclass(frozen=True, slots=True)
class Sent:
    """A segment the local endpoint sent: when, and which kernel function. Its PSH is the
    model's (``Seg.psh``, set by app.sim.tcp.tcp_output as 6.4's ``__tcp_transmit_skb`` and
    ``tcp_mark_push`` would), read when the runner compares it."""

    seg: Seg
    t_ms: float
    source: SourceRef | None

    @property
    def psh(self) -> bool:
        return self.seg.psh


class PeerSim(Sim):
    """One local endpoint (``local``: "client" or "server") against a scripted peer."""

    def __init__(
        self,
        p: TcpParams,
        local: str,
        frame_cb: Callable[[Sim, dict[str, Any]], None],
        max_events: int,
    ) -> None:
        super().__init__(p, frame_cb)
        self.local = local
        self.ep = self.eps[local]
        self.outbox: deque[Sent] = deque()
        self.events = 0
        self.max_events = max_events
        self.after_event: Callable[[], None] | None = None  # the runner's check of waiting polls

    def xmit(self, *args: Any, **kwargs: Any) -> Seg:
        """The model's send path, up to the wire: the segment goes to the outbox."""
        seg = super().xmit(*args, **kwargs)
        self.copies[seg.id] = 0  # the queued arrival becomes a no-op
        self.in_flight.pop(seg.id, None)
        source = self.sent_now[-1][1] if self.sent_now else None
        self.outbox.append(Sent(seg, self.now, source))
        return seg

    def inject(self, seg: Seg) -> None:
        """An inbound packet of the script reaches ``tcp_v4_rcv`` now."""
        self.note(
            msg(
                "The script's peer sends {flags} seq={seq} ack={ack} len={n}.",
                flags="+".join(seg.flags),
                seq=seg.seq,
                ack=seg.ack if seg.has_ack else 0,
                n=seg.length,
            ),
            "tcp_v4_rcv",
        )
        tcp_ipv4.receive(self, self.ep, seg)
        self.flush("deliver", delivered=seg)
        self.after_step()
        if self.after_event is not None:
            self.after_event()

    def next_time(self) -> float | None:
        return self.q.heap[0][0] if self.q.heap else None

    def step_one(self) -> None:
        """Process the model's earliest event (a timer; arrivals are cancelled)."""
        self.events += 1
        if self.events > self.max_events:
            raise RunLimit
        t, kind, arg = self.q.pop()
        self.now = t
        if kind == EV_CALL:
            self.on_call(arg)
        elif kind == EV_ARRIVE:
            self.on_arrive(arg)
        else:
            obj, name = arg
            if obj.timers[name].due(t):
                self.on_timer(obj, name)
        if self.after_event is not None:
            self.after_event()

    def advance(self, until_ms: float, inclusive: bool = False) -> None:
        """Run the model's events before ``until_ms`` (or at it, if ``inclusive``)."""
        while (t := self.next_time()) is not None and (t < until_ms or inclusive and t <= until_ms):
            self.step_one()
        self.now = max(self.now, until_ms)
