"""The driver of one run: the event loop over a script's calls, segment arrivals and timers,
the simulated network between the two endpoints, and the frames it records.

Time is in milliseconds, driven by :class:`app.sim.core.events.EventQueue` and lazily re-armed
:class:`~app.sim.core.events.Timer`. A step is one event: a socket call (dispatched through
:data:`app.sim.tcp.calls.CALLS`), a segment's arrival (``tcp_v4_rcv``) or a timer
(:data:`app.sim.tcp.tcp_timer` tables); its notes and state changes become one frame, then one
frame per segment it sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.sim.core.events import EventQueue
from app.sim.core.i18n import Message, msg
from app.sim.core.sources import SourceRef
from app.sim.tcp import calls, tcp_ipv4, tcp_timer
from app.sim.tcp.options import TcpOption
from app.sim.tcp.params import Call, NetEvent, TcpParams
from app.sim.tcp.sock import (
    EV_ARRIVE,
    EV_CALL,
    RFC_NAME,
    Endpoint,
    Listener,
    Obj,
    Req,
    Seg,
    Sock,
    TimeWait,
)
from app.sim.tcp.sources import ref
from app.sim.tcp.state import CallState, EndpointState, LinuxObject, TcpState, TransitionState

MAX_FRAMES = 20_000


class Sim:
    """One run: ``run()`` processes the events and hands each frame's raw data to ``frame_cb``
    (the explainer builds the typed frame from it and :meth:`snapshot`)."""

    def __init__(self, p: TcpParams, frame_cb: Callable[[Sim, dict[str, Any]], None]) -> None:
        self.p = p
        self.q = EventQueue()
        self.now = 0.0
        self.frame_cb = frame_cb
        self.eps = {
            "client": Endpoint(self, "client", "server", p.client_iss),
            "server": Endpoint(self, "server", "client", p.server_iss),
        }
        self.one_way = p.rtt_ms / 2
        self.seg_ids = 0
        self.obj_ids = 0
        self.net: dict[tuple[str, int], NetEvent] = {}
        for ev in p.network:
            for k in range(ev.count if ev.kind == "drop" else 1):
                self.net.setdefault((ev.src, ev.nth + k), ev)
        self.held: dict[str, Seg] = {}  # reorder: a segment waiting for the next one
        self.in_flight: dict[int, Seg] = {}
        self.copies: dict[int, int] = {}  # deliveries still due per segment
        # what the current step did
        self.notes: list[tuple[Message, SourceRef | None]] = []
        self.transitions: list[TransitionState] = []
        self.sent_now: list[tuple[Seg, SourceRef, Message]] = []
        self.frames = 0
        self.ended: str | None = None
        self.segments_total = 0

    def run(
        self, progress: Callable[[float, float], None] | None = None, total: float = 100.0
    ) -> None:
        """Process events up to ``until_ms``; report ``progress(done, total)`` in events about
        once per 1% of ``total`` (the explainer's cost estimate)."""
        for _i, c in sorted(enumerate(self.p.script), key=lambda ic: (ic[1].t_ms, ic[0])):
            self.q.push(c.t_ms, EV_CALL, c, priority=2)
        self.frame(
            "start",
            msg(
                "Two endpoints, client and server, with no sockets yet; one-way delay {d} ms.",
                d=self.one_way,
            ),
            None,
        )
        until = self.p.until_ms
        step = max(int(total // 100), 1)
        done = 0
        while self.q.heap and self.q.heap[0][0] <= until:
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
            done += 1
            if progress is not None and done % step == 0:
                progress(min(done, total), total)
            if self.frames >= MAX_FRAMES:
                self.ended = "frame_limit"
                break
        if progress is not None:
            progress(total, total)

    def note(self, m: Message, src: str | None = None) -> None:
        self.notes.append((m, ref(src) if src else None))

    def set_state(self, obj: Obj, new: str, event: str, func: str) -> None:
        old = obj.state
        if old == new:
            return
        obj.state = new
        self.transitions.append(
            {
                "endpoint": obj.ep.name,
                "object": obj.kind,
                "object_id": obj.id,
                "from_state": "TCP_" + old,
                "to_state": "TCP_" + new,
                "rfc_from": RFC_NAME[old],
                "rfc_to": RFC_NAME[new],
                "event": event,
                "function": func,
            }
        )

    def flush(
        self, event: str, call: CallState | None = None, delivered: Seg | None = None
    ) -> None:
        """Emit the frame of the step just processed, then one frame per segment it sent."""
        if self.notes:
            narration, source = self.notes[0]
            # the frame cites the most specific function: the first one a detail note names,
            # else the headline's (the entry point)
            source = next((src for _, src in self.notes[1:] if src is not None), source)
            extra = tuple(m for m, _ in self.notes[1:])
        else:
            narration, source, extra = msg("Nothing changes."), None, ()
        self.frame(event, narration, source, call=call, delivered=delivered, notes=extra)
        self.notes = []
        self.transitions = []
        sent, self.sent_now = self.sent_now, []
        for seg, src, m in sent:
            self.frame("send", m, src, segment=seg)

    def frame(
        self,
        event: str,
        narration: Message,
        source: SourceRef | None,
        *,
        call: CallState | None = None,
        segment: Seg | None = None,
        delivered: Seg | None = None,
        notes: tuple[Message, ...] = (),
    ) -> None:
        self.frames += 1
        self.frame_cb(
            self,
            {
                "event": event,
                "narration": narration,
                "source": source,
                "call": call,
                "segment": segment,
                "delivered": delivered,
                "notes": notes,
                "transitions": list(self.transitions),
            },
        )

    def snapshot(self) -> TcpState:
        return {
            "t_ms": round(self.now, 3),
            "event": "",
            "endpoints": {n: self.ep_state(e) for n, e in self.eps.items()},
            "segment": None,
            "delivered": None,
            "transitions": [],
            "call": None,
            "in_flight": sorted(self.in_flight),
        }

    def rfc_state(self, e: Endpoint) -> str:
        o = e.ehash
        if isinstance(o, Sock):
            return RFC_NAME[o.state]
        if isinstance(o, TimeWait):
            return RFC_NAME[o.substate]
        if isinstance(o, Req):
            return "SYN_RECEIVED"
        if e.listener is not None and e.listener.reqs:
            return "SYN_RECEIVED"
        if e.listener is not None:
            return "LISTEN"
        return "CLOSED"

    def ep_state(self, e: Endpoint) -> EndpointState:
        objs: list[LinuxObject] = []
        for o in e.objects():
            objs.append(
                {
                    "id": o.id,
                    "object": o.kind,
                    "state": "TCP_" + o.state,
                    "tw_substate": "TCP_" + o.substate if isinstance(o, TimeWait) else None,
                    "held_by_app": (o is e.fd and o.held) or (isinstance(o, Listener) and o.held),
                    "timers": o.armed(),
                }
            )
        conn = e.ehash if e.ehash is not None else e.fd
        if conn is None and e.listener is not None and e.listener.reqs:
            conn = e.listener.reqs[-1]
        st: EndpointState = {
            "rfc": self.rfc_state(e),
            "linux": objs,
            "iss": None,
            "irs": None,
            "snd_una": None,
            "snd_nxt": None,
            "rcv_nxt": None,
            "snd_wnd": None,
            "rcv_wnd": None,
            "send_queue": 0,
            "unsent": 0,
            "recv_queue": 0,
            "accept_queue": e.listener.ack_backlog if e.listener else 0,
            "syn_queue": e.listener.qlen if e.listener else 0,
            "rto_ms": None,
            "backoff": 0,
            "cwnd": None,
            "error": None,
            "blocked": e.blocked.call if e.blocked else None,
        }
        if isinstance(conn, Sock) and (conn.ever_connected or conn.state != "CLOSE"):
            st["iss"] = conn.iss
            st["irs"] = conn.irs if conn.irs else None
            st["snd_una"] = conn.snd_una
            st["snd_nxt"] = conn.snd_nxt
            st["rcv_nxt"] = conn.rcv_nxt if conn.irs else None
            st["snd_wnd"] = conn.snd_wnd
            st["rcv_wnd"] = conn.rcv_wnd
            st["send_queue"] = max(0, conn.data_end - max(conn.snd_una, conn.iss + 1))
            st["unsent"] = conn.unsent()
            st["recv_queue"] = conn.recv_q
            st["rto_ms"] = conn.rto
            st["backoff"] = conn.backoff
            st["cwnd"] = conn.cwnd
            st["error"] = conn.err
        elif isinstance(conn, Req):
            st["iss"], st["irs"] = conn.iss, conn.irs
            st["snd_una"], st["snd_nxt"] = conn.iss, conn.iss + 1
            st["rcv_nxt"], st["snd_wnd"], st["rcv_wnd"] = conn.rcv_nxt, conn.snd_wnd, conn.rcv_wnd
        elif isinstance(conn, TimeWait):
            st["iss"], st["irs"] = conn.iss, conn.irs
            st["snd_una"], st["snd_nxt"] = conn.snd_nxt, conn.snd_nxt
            st["rcv_nxt"], st["rcv_wnd"] = conn.rcv_nxt, conn.rcv_wnd
        return st

    def xmit(
        self,
        ep: Endpoint,
        flags: tuple[str, ...],
        seq: int,
        ack: int,
        length: int,
        window: int,
        kind: str,
        src: str,
        text: Message,
        options: tuple[TcpOption, ...] = (),
        scaled: int | None = None,
    ) -> Seg:
        self.seg_ids += 1
        seg = Seg(
            id=self.seg_ids,
            src=ep.name,
            dst=ep.peer,
            flags=flags,
            seq=seq,
            ack=ack,
            length=length,
            window=window,
            kind=kind,
            sent_ms=self.now,
            options=options,
            scaled=scaled,
        )
        ep.sent += 1
        self.segments_total += 1
        seg.nth = ep.sent
        ev = self.net.get((ep.name, seg.nth))
        arrive = self.now + self.one_way
        held = self.held.pop(ep.name, None)
        if ev is not None and ev.kind == "drop":
            seg.lost = True
        elif ev is not None and ev.kind == "delay":
            arrive += ev.ms
        if not seg.lost:
            self.in_flight[seg.id] = seg
            self.copies[seg.id] = 1
            if ev is not None and ev.kind == "reorder":
                self.held[ep.name] = seg
                arrive += 1000.0  # released by the next segment, or after 1 s
            elif ev is not None and ev.kind == "duplicate":
                self.copies[seg.id] = 2
                self.q.push(arrive + 0.001, EV_ARRIVE, seg)
            self.q.push(arrive, EV_ARRIVE, seg)
            seg.arrive_ms = arrive
        if held is not None and self.copies.get(held.id, 0) > 0:
            t_held = self.now + self.one_way + 0.001
            if held.arrive_ms is None or t_held < held.arrive_ms:
                held.arrive_ms = t_held
                self.q.push(t_held, EV_ARRIVE, held)
        self.sent_now.append((seg, ref(src), text))
        return seg

    def on_arrive(self, seg: Seg) -> None:
        left = self.copies.get(seg.id, 0)
        if left <= 0 or (seg.arrive_ms is not None and self.now + 1e-9 < seg.arrive_ms):
            return  # a reordered segment's superseded entry
        self.copies[seg.id] = left - 1
        if left == 1:
            self.in_flight.pop(seg.id, None)
        ep = self.eps[seg.dst]
        self.note(
            msg(
                "{ep} receives {flags} seq={seq} ack={ack} len={n}.",
                ep=ep.label,
                flags="+".join(seg.flags),
                seq=seg.seq,
                ack=seg.ack if seg.has_ack else 0,
                n=seg.length,
            ),
            "tcp_v4_rcv",
        )
        tcp_ipv4.receive(self, ep, seg)
        self.flush("deliver", delivered=seg)
        self.after_step()

    def on_call(self, c: Call) -> None:
        ep = self.eps[c.endpoint]
        if ep.blocked is not None or ep.waiting:
            ep.waiting.append(c)
            return
        self.do_call(ep, c)

    def do_call(self, ep: Endpoint, c: Call) -> None:
        res = calls.CALLS[c.call](self, ep, c)
        if res is None:  # blocked
            ep.blocked = c
            self.note(msg("{ep}: {call}() blocks.", ep=ep.label, call=c.call))
            self.flush("call", call=self.call_state(ep, c, "blocked"))
            return
        self.flush("call", call=self.call_state(ep, c, res))
        self.after_step()

    def call_state(self, ep: Endpoint, c: Call, res: str) -> CallState:
        errno = res if res.startswith("E") else None
        return {"endpoint": ep.name, "call": c.call, "result": res, "errno": errno}

    def after_step(self) -> None:
        """Complete blocked calls whose condition now holds; run calls queued behind them."""
        for ep in self.eps.values():
            if ep.blocked is None:
                continue
            c = ep.blocked
            res = calls.POLLS[c.call](self, ep, c)
            if res is None:
                if self.notes or self.sent_now:  # it ran on (a writer woken) and blocks again
                    self.flush("call", call=self.call_state(ep, c, "blocked"))
                continue
            ep.blocked = None
            self.notes.insert(
                0,
                (
                    msg("{ep}: {call}() returns {res}.", ep=ep.label, call=c.call, res=res),
                    ref(calls.RETURNS_FROM[c.call]),
                ),
            )
            self.flush("return", call=self.call_state(ep, c, res))
            while ep.waiting and ep.blocked is None:
                nxt = ep.waiting.pop(0)
                self.do_call(ep, nxt)

    def on_timer(self, obj: Obj, name: str) -> None:
        tcp_timer.fire(self, obj, name)
        self.flush("timer")
        self.after_step()
