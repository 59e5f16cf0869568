"""The TCP connection-lifecycle engine: two endpoints, a lossy network, Linux 6.4 semantics.

Each endpoint owns the kernel objects Linux would: a listener (``TCP_LISTEN``), request socks
(``TCP_NEW_SYN_RECV``), full sockets, and a timewait mini-socket whose ``tw_substate`` is
``TCP_FIN_WAIT2`` or ``TCP_TIME_WAIT``. There is one 4-tuple (client port to server port), so
each endpoint's established-hash slot (``ehash``) holds at most one object, looked up before the
listener as ``__inet_lookup_skb`` does. Time is in milliseconds, driven by
:class:`app.sim.core.events.EventQueue` and lazily re-armed :class:`~app.sim.core.events.Timer`.

Simplifications (each keeps the state machine faithful, not the byte-level details): sequence
numbers are not wrapped mod 2**32; no TCP options (no timestamps, SACK or window scaling); the
receive window is the free receive buffer; congestion control is slow start from 10 segments
and 1 segment after an RTO; the send buffer is unbounded (send never blocks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.sim.core.events import EventQueue, Timer
from app.sim.core.i18n import Message, msg
from app.sim.core.sources import SourceRef
from app.sim.core.tcp import TCP_INIT_CWND, TCP_RETRIES2, RttEstimator
from app.sim.tcp.params import Call, NetEvent, TcpParams
from app.sim.tcp.sources import ref
from app.sim.tcp.state import (
    CallState,
    EndpointState,
    LinuxObject,
    SegmentState,
    TcpState,
    TimerState,
    TransitionState,
)

# --- constants (include/net/tcp.h, CONFIG_HZ=1000), in ms --------------------------------------
RTO_INIT = 1000.0  # TCP_TIMEOUT_INIT
RTO_MIN = 200.0  # TCP_RTO_MIN
RTO_MAX = 120_000.0  # TCP_RTO_MAX
RTO_FALLBACK = 3000.0  # TCP_TIMEOUT_FALLBACK
TIMEWAIT_LEN = 60_000.0  # TCP_TIMEWAIT_LEN
ATO_MIN = 40.0  # TCP_ATO_MIN = TCP_DELACK_MIN
DELACK_MAX = 200.0  # TCP_DELACK_MAX
MAX_QUICKACKS = 16  # TCP_MAX_QUICKACKS
INVALID_RATELIMIT = 500.0  # net.ipv4.tcp_invalid_ratelimit
TW_ISN_GAP = 65535 + 2  # tcp_timewait_state_process: isn = tw_snd_nxt + 65535 + 2

RFC_NAME = {
    "CLOSE": "CLOSED",
    "LISTEN": "LISTEN",
    "SYN_SENT": "SYN_SENT",
    "SYN_RECV": "SYN_RECEIVED",
    "NEW_SYN_RECV": "SYN_RECEIVED",
    "ESTABLISHED": "ESTABLISHED",
    "FIN_WAIT1": "FIN_WAIT_1",
    "FIN_WAIT2": "FIN_WAIT_2",
    "CLOSE_WAIT": "CLOSE_WAIT",
    "CLOSING": "CLOSING",
    "LAST_ACK": "LAST_ACK",
    "TIME_WAIT": "TIME_WAIT",
}
RFC_STATES = frozenset(RFC_NAME.values())
LINUX_STATES = frozenset("TCP_" + s for s in RFC_NAME)
SYNCHRONIZED = frozenset(
    ("SYN_RECV", "ESTABLISHED", "FIN_WAIT1", "FIN_WAIT2", "CLOSE_WAIT", "CLOSING", "LAST_ACK")
)
# tcp.c new_state[]: the state close()/shutdown(SHUT_WR) moves to, and whether a FIN is sent
CLOSE_TABLE: dict[str, tuple[str, bool]] = {
    "ESTABLISHED": ("FIN_WAIT1", True),
    "SYN_SENT": ("CLOSE", False),
    "SYN_RECV": ("FIN_WAIT1", True),
    "FIN_WAIT1": ("FIN_WAIT1", False),
    "FIN_WAIT2": ("FIN_WAIT2", False),
    "TIME_WAIT": ("CLOSE", False),
    "CLOSE": ("CLOSE", False),
    "CLOSE_WAIT": ("LAST_ACK", True),
    "LAST_ACK": ("LAST_ACK", False),
    "LISTEN": ("CLOSE", False),
    "CLOSING": ("CLOSING", False),
}
NEED_RESET = frozenset(("ESTABLISHED", "CLOSE_WAIT", "FIN_WAIT1", "FIN_WAIT2", "SYN_RECV"))

EV_ARRIVE, EV_TIMER, EV_CALL = 0, 1, 2
# where a call that blocked returns from
CALL_SOURCE = {
    "connect": "__inet_stream_connect",
    "accept": "inet_csk_accept",
    "recv": "tcp_recvmsg_locked",
    "send": "tcp_sendmsg_locked",
}
MAX_FRAMES = 20_000


class Seg:
    """A segment on the wire."""

    __slots__ = (
        "ack",
        "arrive_ms",
        "dst",
        "flags",
        "id",
        "kind",
        "length",
        "lost",
        "nth",
        "sent_ms",
        "seq",
        "src",
        "window",
    )

    def __init__(
        self,
        *,
        id: int,
        src: str,
        dst: str,
        flags: tuple[str, ...],
        seq: int,
        ack: int,
        length: int,
        window: int,
        kind: str,
        sent_ms: float,
    ) -> None:
        self.id = id
        self.src = src
        self.dst = dst
        self.flags = flags
        self.seq = seq
        self.ack = ack
        self.length = length
        self.window = window
        self.kind = kind
        self.sent_ms = sent_ms
        self.nth = 0
        self.lost = False
        self.arrive_ms: float | None = None

    @property
    def syn(self) -> bool:
        return "SYN" in self.flags

    @property
    def fin(self) -> bool:
        return "FIN" in self.flags

    @property
    def rst(self) -> bool:
        return "RST" in self.flags

    @property
    def has_ack(self) -> bool:
        return "ACK" in self.flags

    @property
    def end_seq(self) -> int:
        return self.seq + self.length + (1 if self.syn else 0) + (1 if self.fin else 0)

    def as_state(self) -> SegmentState:
        return {
            "id": self.id,
            "src": self.src,
            "dst": self.dst,
            "nth": self.nth,
            "flags": list(self.flags),
            "seq": self.seq,
            "ack": self.ack if self.has_ack else 0,
            "len": self.length,
            "window": self.window,
            "lost": self.lost,
            "sent_ms": self.sent_ms,
            "arrive_ms": self.arrive_ms,
            "kind": self.kind,
        }


class OutSeg:
    """One transmitted, not yet acknowledged segment in the retransmission queue."""

    __slots__ = ("end", "first_ms", "length", "lost", "retrans", "seq", "syn", "fin")

    def __init__(self, seq: int, length: int, syn: bool, fin: bool, now: float) -> None:
        self.seq = seq
        self.length = length
        self.syn = syn
        self.fin = fin
        self.end = seq + length + (1 if syn else 0) + (1 if fin else 0)
        self.first_ms = now
        self.retrans = 0
        self.lost = False


class Obj:
    """A kernel object with timers: listener, request sock, socket or timewait sock."""

    kind = "sock"

    def __init__(self, sim: Sim, ep: Endpoint, state: str) -> None:
        self.sim = sim
        self.ep = ep
        self.state = state
        self.timers: dict[str, Timer] = {}
        self.oow_last: float | None = None  # last_oow_ack_time
        sim.obj_ids += 1
        self.id = sim.obj_ids

    def timer(self, name: str) -> Timer:
        t = self.timers.get(name)
        if t is None:
            t = Timer(self.sim.q, EV_TIMER, (self, name))
            self.timers[name] = t
        return t

    def arm(self, name: str, at: float) -> None:
        self.timer(name).arm(at)

    def stop(self, name: str) -> None:
        t = self.timers.get(name)
        if t is not None:
            t.stop()

    def stop_all(self) -> None:
        for t in self.timers.values():
            t.stop()

    def armed(self) -> list[TimerState]:
        return [
            {"name": n, "deadline_ms": round(t.deadline, 3)}
            for n, t in sorted(self.timers.items())
            if t.deadline is not None
        ]

    def oow_limited(self, now: float) -> bool:
        """__tcp_oow_rate_limited: at most one out-of-window reply per tcp_invalid_ratelimit."""
        if self.oow_last is not None and 0 <= now - self.oow_last < INVALID_RATELIMIT:
            return True
        self.oow_last = now
        return False


class Listener(Obj):
    kind = "listener"

    def __init__(self, sim: Sim, ep: Endpoint, backlog: int, queued: int, half_open: int):
        super().__init__(sim, ep, "LISTEN")
        self.backlog = backlog  # sk_max_ack_backlog
        self.accept_q: list[Sock] = []
        self.phantom_accept = queued  # other clients' connections waiting in the accept queue
        self.reqs: list[Req] = []
        self.phantom_syn = half_open  # half-open requests from a SYN flood
        self.cookies: dict[int, int] = {}  # cookie ISN -> peer's ISN
        self.held = True

    @property
    def ack_backlog(self) -> int:
        return len(self.accept_q) + self.phantom_accept

    @property
    def qlen(self) -> int:
        return len(self.reqs) + self.phantom_syn

    def acceptq_full(self) -> bool:
        return self.ack_backlog > self.backlog  # sk_acceptq_is_full: strictly greater

    def reqsk_queue_full(self) -> bool:
        return self.qlen >= self.backlog  # inet_csk_reqsk_queue_is_full


class Req(Obj):
    kind = "request_sock"

    def __init__(self, sim: Sim, ep: Endpoint, lsn: Listener, iss: int, irs: int, wnd: int):
        super().__init__(sim, ep, "NEW_SYN_RECV")
        self.listener = lsn
        self.iss = iss
        self.irs = irs
        self.rcv_nxt = irs + 1
        self.snd_wnd = wnd
        self.num_timeout = 0
        self.acked = False
        self.born_ms = sim.now


class TimeWait(Obj):
    kind = "timewait_sock"

    def __init__(self, sim: Sim, ep: Endpoint, sk: Sock, substate: str) -> None:
        super().__init__(sim, ep, "TIME_WAIT")
        self.substate = substate
        self.snd_nxt = sk.snd_nxt
        self.rcv_nxt = sk.rcv_nxt
        self.rcv_wnd = sk.adv_window()
        self.iss = sk.iss
        self.irs = sk.irs


class Sock(Obj):
    kind = "sock"

    def __init__(self, sim: Sim, ep: Endpoint) -> None:
        super().__init__(sim, ep, "CLOSE")
        self.held = True  # the script holds a descriptor
        self.dead = False  # SOCK_DEAD: orphaned by close()
        self.ever_connected = False
        self.iss = 0
        self.irs = 0
        self.snd_una = 0
        self.snd_nxt = 0
        self.write_seq = 0  # next sequence number to queue (data end, + 1 once a FIN is queued)
        self.fin_queued = False
        self.rcv_nxt = 0
        self.rcv_wup = 0
        self.rcv_wnd = sim.p.rcvbuf
        self.snd_wnd = 0
        self.snd_wl1 = 0
        self.recv_q = 0
        self.ooo: list[tuple[int, int, bool]] = []
        self.rtx: list[OutSeg] = []
        self.rcv_shut = False
        self.snd_shut = False
        self.sock_done = False
        self.syn_retrans = 0  # retransmissions of our SYN (or SYN-ACK) in the handshake  # SOCK_DONE: the peer's FIN arrived (recv returns 0 first)
        self.err: str | None = None
        self.rtt = RttEstimator()
        self.rto = RTO_INIT
        self.backoff = 0
        self.retransmits = 0
        self.retrans_stamp: float | None = None
        self.cwnd = TCP_INIT_CWND
        self.dupacks = 0
        self.quick = 0
        self.ato = 0.0
        self.pingpong = False
        self.ack_sched = False
        self.ack_now = False
        self.lrcvtime = 0.0
        self.rcv_tstamp = 0.0
        self.probes_out = 0
        self.keepalive = False
        self.linger0 = False
        self.nonblock = False
        self.listener: Listener | None = None

    # --- derived -------------------------------------------------------------------------
    def adv_window(self) -> int:
        """The window to advertise: free receive buffer, never shrinking the right edge."""
        free = max(0, self.sim.p.rcvbuf - self.recv_q - sum(n for _, n, _ in self.ooo))
        return max(free, self.rcv_wup + self.rcv_wnd - self.rcv_nxt, 0)

    def receive_window(self) -> int:
        """tcp_receive_window: what is left of the last advertised window."""
        return max(0, self.rcv_wup + self.rcv_wnd - self.rcv_nxt)

    @property
    def packets_out(self) -> int:
        return len(self.rtx)

    @property
    def data_end(self) -> int:
        return self.write_seq - (1 if self.fin_queued else 0)

    def unsent(self) -> int:
        return max(0, self.data_end - max(self.snd_nxt, self.iss + 1))


class Endpoint:
    def __init__(self, sim: Sim, name: str, peer: str, iss: int) -> None:
        self.sim = sim
        self.name = name
        self.peer = peer
        self.iss_base = iss
        self.iss_count = 0
        self.listener: Listener | None = None
        self.ehash: Sock | Req | TimeWait | None = None
        self.fd: Sock | None = None  # the connection socket the script holds
        self.waiting: list[Call] = []
        self.blocked: Call | None = None
        self.sent = 0  # segments sent so far (for nth)

    def next_iss(self) -> int:
        iss = self.iss_base + self.iss_count * 1_000_000
        self.iss_count += 1
        return iss

    def objects(self) -> list[Obj]:
        objs: list[Obj] = []
        if self.listener is not None:
            objs.append(self.listener)
            objs.extend(self.listener.reqs)
        if self.ehash is not None and self.ehash not in objs:
            objs.append(self.ehash)
        if self.fd is not None and self.fd not in objs:
            objs.append(self.fd)
        return objs


class Sim:
    """One run. ``run()`` returns the list of frames' raw data, built by ``frame_cb``."""

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

    # --- the driver --------------------------------------------------------------------------
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

    # --- recording ---------------------------------------------------------------------------
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
            st["rcv_wnd"] = conn.adv_window()
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
            st["rcv_nxt"], st["snd_wnd"], st["rcv_wnd"] = conn.rcv_nxt, conn.snd_wnd, self.p.rcvbuf
        elif isinstance(conn, TimeWait):
            st["iss"], st["irs"] = conn.iss, conn.irs
            st["snd_una"], st["snd_nxt"] = conn.snd_nxt, conn.snd_nxt
            st["rcv_nxt"], st["rcv_wnd"] = conn.rcv_nxt, conn.rcv_wnd
        return st

    # --- the network -------------------------------------------------------------------------
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
                ep=ep.name,
                flags="+".join(seg.flags),
                seq=seg.seq,
                ack=seg.ack if seg.has_ack else 0,
                n=seg.length,
            ),
            "tcp_v4_rcv",
        )
        self.receive(ep, seg)
        self.flush("deliver", delivered=seg)
        self.after_step()

    # --- socket calls ------------------------------------------------------------------------
    def on_call(self, c: Call) -> None:
        ep = self.eps[c.endpoint]
        if ep.blocked is not None or ep.waiting:
            ep.waiting.append(c)
            return
        self.do_call(ep, c)

    def do_call(self, ep: Endpoint, c: Call) -> None:
        res = getattr(self, "call_" + c.call)(ep, c)
        if res is None:  # blocked
            ep.blocked = c
            self.note(msg("{ep}: {call}() blocks.", ep=ep.name, call=c.call))
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
            res = getattr(self, "poll_" + c.call)(ep, c)
            if res is None:
                continue
            ep.blocked = None
            self.notes.insert(
                0,
                (
                    msg("{ep}: {call}() returns {res}.", ep=ep.name, call=c.call, res=res),
                    ref(CALL_SOURCE[c.call]),
                ),
            )
            self.flush("return", call=self.call_state(ep, c, res))
            while ep.waiting and ep.blocked is None:
                nxt = ep.waiting.pop(0)
                self.do_call(ep, nxt)

    # listen
    def call_listen(self, ep: Endpoint, c: Call) -> str:
        self.note(msg("{ep} calls listen().", ep=ep.name), "inet_listen")
        if ep.listener is not None:
            return "0"
        if ep.fd is not None:
            self.note(msg("The socket is connected: listen() fails with EINVAL."))
            return "EINVAL"
        backlog = min(c.backlog if c.backlog is not None else 4096, 4096)
        lsn = Listener(self, ep, backlog, c.queued, c.half_open)
        ep.listener = lsn
        lsn.state = "CLOSE"
        self.set_state(lsn, "LISTEN", "listen()", "inet_csk_listen_start")
        self.note(
            msg("The socket enters LISTEN with backlog {b} (sk_max_ack_backlog).", b=backlog),
            "inet_csk_listen_start",
        )
        if c.queued or c.half_open:
            self.note(
                msg(
                    "Other clients already fill the queues: {a} connections wait for accept(), "
                    "{s} half-open requests sit in the SYN queue.",
                    a=c.queued,
                    s=c.half_open,
                )
            )
        return "0"

    # connect
    def call_connect(self, ep: Endpoint, c: Call) -> str | None:
        self.note(msg("{ep} calls connect().", ep=ep.name), "__inet_stream_connect")
        sk = ep.fd
        if ep.listener is not None and sk is None:
            return "EISCONN"
        if sk is not None and sk.state in ("SYN_SENT", "SYN_RECV") and sk.nonblock:
            self.note(msg("A connect() is already in progress: EALREADY."))
            return "EALREADY"
        if sk is not None and (sk.state != "CLOSE" or sk.ever_connected):
            self.note(msg("The socket is already connected: EISCONN."))
            return "EISCONN"
        if isinstance(ep.ehash, TimeWait):
            self.note(
                msg("This 4-tuple is still in TIME_WAIT here: connect() fails with EADDRNOTAVAIL.")
            )
            return "EADDRNOTAVAIL"
        if sk is None:
            sk = Sock(self, ep)
            ep.fd = sk
        sk.keepalive = c.keepalive
        sk.nonblock = c.nonblock
        sk.iss = ep.next_iss()
        sk.snd_una = sk.iss
        sk.snd_nxt = sk.iss
        sk.write_seq = sk.iss + 1
        sk.rto = RTO_INIT
        sk.err = None
        ep.ehash = sk
        self.set_state(sk, "SYN_SENT", "connect()", "tcp_v4_connect")
        self.note(
            msg("The socket moves to SYN_SENT and picks ISS {iss}.", iss=sk.iss), "tcp_v4_connect"
        )
        self.send_syn(sk, retrans=False)
        if c.nonblock:
            return "EINPROGRESS"
        return None

    def poll_connect(self, ep: Endpoint, c: Call) -> str | None:
        sk = ep.fd
        if sk is None:
            return "EBADF"
        if sk.state in ("SYN_SENT", "SYN_RECV"):
            return None
        if sk.state == "CLOSE" or sk.err is not None and not sk.ever_connected:
            err = sk.err or "ECONNRESET"
            sk.err = None
            return err
        return "0"

    # accept
    def call_accept(self, ep: Endpoint, c: Call) -> str | None:
        self.note(msg("{ep} calls accept().", ep=ep.name), "inet_csk_accept")
        lsn = ep.listener
        if lsn is None:
            self.note(msg("The socket is not listening: EINVAL."))
            return "EINVAL"
        return self.poll_accept(ep, c)

    def poll_accept(self, ep: Endpoint, c: Call) -> str | None:
        lsn = ep.listener
        if lsn is None:
            return "EINVAL"
        if lsn.phantom_accept:
            lsn.phantom_accept -= 1
            self.note(
                msg(
                    "accept() takes another client's connection off the queue ({n} left).",
                    n=lsn.ack_backlog,
                ),
                "inet_csk_accept",
            )
            return "0"
        if not lsn.accept_q:
            return None
        child = lsn.accept_q.pop(0)
        child.held = True
        child.keepalive = c.keepalive
        ep.fd = child
        self.note(
            msg("accept() returns the child socket, now {st}.", st="TCP_" + child.state),
            "inet_csk_accept",
        )
        if c.keepalive and child.state == "ESTABLISHED":
            self.arm_keepalive(child)
        return "0"

    # send
    def call_send(self, ep: Endpoint, c: Call) -> str | None:
        sk = ep.fd
        n = c.bytes or 0
        self.note(msg("{ep} calls send({n}).", ep=ep.name, n=n), "tcp_sendmsg_locked")
        if sk is None:
            self.note(msg("The socket is not connected: EPIPE (sk_stream_wait_connect)."))
            return "EPIPE"
        if sk.err is not None:
            err, sk.err = sk.err, None
            return err
        if sk.snd_shut or sk.state in ("CLOSE", "LISTEN") or sk.fin_queued:
            self.note(msg("Sending is shut down or the connection is gone: EPIPE."))
            return "EPIPE"
        if sk.state in ("SYN_SENT", "SYN_RECV"):
            if sk.nonblock:
                return "EAGAIN"
        sk.write_seq += n
        self.note(msg("{n} bytes join the send queue.", n=n), "tcp_sendmsg_locked")
        if sk.state not in ("SYN_SENT", "SYN_RECV"):
            self.push(sk)
        return str(n)

    def poll_send(self, ep: Endpoint, c: Call) -> str | None:
        return str(c.bytes)

    # recv
    def call_recv(self, ep: Endpoint, c: Call) -> str | None:
        self.note(msg("{ep} calls recv().", ep=ep.name), "tcp_recvmsg_locked")
        if ep.fd is None:
            return "ENOTCONN"
        return self.poll_recv(ep, c)

    def poll_recv(self, ep: Endpoint, c: Call) -> str | None:
        sk = ep.fd
        if sk is None:
            return "ENOTCONN"
        if sk.recv_q > 0:
            n = sk.recv_q if c.bytes is None else min(c.bytes, sk.recv_q)
            before = sk.receive_window()
            sk.recv_q -= n
            self.note(msg("recv() copies {n} bytes to the program.", n=n), "tcp_recvmsg_locked")
            self.cleanup_rbuf(sk, before)
            return str(n)
        if sk.sock_done:
            self.note(msg("The peer's FIN was read up to: recv() returns 0 (EOF)."))
            return "0"
        if sk.err is not None:
            err, sk.err = sk.err, None
            return err
        if sk.rcv_shut:
            self.note(msg("No data and the receive side is shut down: recv() returns 0 (EOF)."))
            return "0"
        if sk.state == "CLOSE":
            return "ENOTCONN"
        if sk.state in ("SYN_SENT",) and sk.nonblock:
            return "EAGAIN"
        return None

    def cleanup_rbuf(self, sk: Sock, before: int) -> None:
        """tcp_cleanup_rbuf: after reading, send a window update if the window at least
        doubled (and the old one was at most half the buffer)."""
        if sk.state in ("CLOSE", "SYN_SENT", "LISTEN") or sk.rcv_shut:
            return
        new = sk.adv_window()
        if 2 * before <= self.p.rcvbuf and new and new >= 2 * before:
            self.note(
                msg(
                    "The window reopens from {a} to {b} bytes: a window update goes out.",
                    a=before,
                    b=new,
                ),
                "tcp_cleanup_rbuf",
            )
            self.send_ack(sk, "window_update", "tcp_cleanup_rbuf")

    # shutdown
    def call_shutdown(self, ep: Endpoint, c: Call) -> str:
        sk = ep.fd
        how = c.how or "SHUT_WR"
        self.note(msg("{ep} calls shutdown({how}).", ep=ep.name, how=how), "inet_shutdown")
        if sk is None:
            if ep.listener is not None:
                if how != "SHUT_WR":  # inet_shutdown: a listener disconnects on SHUT_RD
                    self.close_listener(ep)
                return "0"
            return "ENOTCONN"
        if sk.state == "CLOSE":
            return "ENOTCONN"
        if how in ("SHUT_RD", "SHUT_RDWR"):
            sk.rcv_shut = True
        if sk.state == "SYN_SENT":
            self.disconnect(sk, "shutdown()")
            return "0"
        if how in ("SHUT_WR", "SHUT_RDWR"):
            self.tcp_shutdown(sk)
        return "0"

    def tcp_shutdown(self, sk: Sock) -> None:
        if sk.state in ("ESTABLISHED", "SYN_SENT", "SYN_RECV", "CLOSE_WAIT"):
            self.close_state(sk, "shutdown(SHUT_WR)", "tcp_shutdown")
        sk.snd_shut = True

    def close_state(self, sk: Sock, event: str, func: str) -> bool:
        new, fin = CLOSE_TABLE[sk.state]
        old = sk.state
        self.set_state(sk, new, event, func)
        if new == "CLOSE":
            self.done(sk, event, func, already=True)
        if fin:
            self.note(
                msg(
                    "tcp_close_state: {a} becomes {b} as soon as the FIN is queued, before it "
                    "is sent (Linux; RFC 9293 changes state when the FIN is sent).",
                    a="TCP_" + old,
                    b="TCP_" + new,
                ),
                "tcp_close_state",
            )
            self.send_fin(sk)
        return fin

    # close / abort
    def call_close(self, ep: Endpoint, c: Call) -> str:
        return self.close(ep, abort=False)

    def call_abort(self, ep: Endpoint, c: Call) -> str:
        return self.close(ep, abort=True)

    def close(self, ep: Endpoint, abort: bool) -> str:
        if abort:
            self.note(msg("{ep} sets SO_LINGER to 0 and calls close().", ep=ep.name), "__tcp_close")
        else:
            self.note(msg("{ep} calls close().", ep=ep.name), "__tcp_close")
        sk = ep.fd
        if sk is None:
            if ep.listener is not None:
                self.close_listener(ep)
                return "0"
            return "EBADF"
        ep.fd = None
        sk.held = False
        sk.rcv_shut = True
        sk.snd_shut = True
        unread = sk.recv_q
        sk.recv_q = 0
        sk.ooo = []
        if sk.state == "CLOSE":
            self.note(msg("The socket was already closed; the descriptor is released."))
            return "0"
        sk.dead = True
        if unread:
            self.note(
                msg(
                    "{n} bytes were never read: Linux sends RST instead of FIN (RFC 2525 2.17).",
                    n=unread,
                ),
                "__tcp_close",
            )
            self.set_state(sk, "CLOSE", "close() with unread data", "__tcp_close")
            self.active_reset(sk)
            self.done(sk, "close()", "__tcp_close", already=True)
            return "0"
        if abort:
            self.disconnect(sk, "close() with SO_LINGER 0")
            return "0"
        self.close_state(sk, "close()", "__tcp_close")
        if sk.state == "FIN_WAIT2":
            self.orphan_fin_wait2(sk, None)
        return "0"

    def close_listener(self, ep: Endpoint) -> None:
        lsn = ep.listener
        if lsn is None:
            return
        self.set_state(lsn, "CLOSE", "close()", "__tcp_close")
        lsn.stop_all()
        for r in lsn.reqs:
            r.stop_all()
            if ep.ehash is r:
                ep.ehash = None
        lsn.reqs = []
        for child in lsn.accept_q:
            self.note(
                msg("The listener closes: a child nobody accepted is reset."),
                "inet_child_forget",
            )
            child.held = False
            child.dead = True
            self.disconnect(child, "listener closed")
        lsn.accept_q = []
        ep.listener = None

    def disconnect(self, sk: Sock, event: str) -> None:
        """tcp_disconnect: RST in the states that need one, then CLOSE."""
        old = sk.state
        if old in NEED_RESET or (old in ("CLOSING", "LAST_ACK") and sk.snd_nxt != sk.write_seq):
            self.note(
                msg("tcp_disconnect from {st}: a RST aborts the connection.", st="TCP_" + old),
                "tcp_disconnect",
            )
            self.active_reset(sk)
        self.set_state(sk, "CLOSE", event, "tcp_disconnect")
        self.done(sk, event, "tcp_disconnect", already=True)

    # --- kernel helpers ----------------------------------------------------------------------
    def done(self, sk: Sock, event: str, func: str, already: bool = False) -> None:
        """tcp_done: CLOSE, stop the timers, drop the queues, unhash."""
        if not already:
            self.set_state(sk, "CLOSE", event, "tcp_done")
        sk.stop_all()
        sk.rtx = []
        sk.rcv_shut = True
        sk.snd_shut = True
        if sk.ep.ehash is sk:
            sk.ep.ehash = None
        lsn = sk.listener
        if lsn is not None and sk in lsn.accept_q and sk.dead:
            lsn.accept_q.remove(sk)

    def time_wait(self, sk: Sock, substate: str, tmo: float) -> None:
        """tcp_time_wait: a timewait mini-socket takes the full socket's place in the hash."""
        tw = TimeWait(self, sk.ep, sk, substate)
        rto35 = sk.rto * 3.5
        if tmo < rto35:
            tmo = rto35
        if substate == "TIME_WAIT":
            tmo = TIMEWAIT_LEN
        tw.arm("timewait", self.now + tmo)
        self.transitions.append(
            {
                "endpoint": sk.ep.name,
                "object": "timewait_sock",
                "object_id": tw.id,
                "from_state": "TCP_" + sk.state,
                "to_state": "TCP_TIME_WAIT",
                "rfc_from": RFC_NAME[sk.state],
                "rfc_to": RFC_NAME[substate],
                "event": "tcp_time_wait",
                "function": "tcp_time_wait",
            }
        )
        self.note(
            msg(
                "tcp_time_wait: a timewait mini-socket (tw_substate {sub}) replaces the socket "
                "for {s} s; the full socket closes.",
                sub="TCP_" + substate,
                s=round(tmo / 1000, 3),
            ),
            "tcp_time_wait",
        )
        self.done(sk, "tcp_time_wait", "tcp_time_wait")
        sk.ep.ehash = tw

    def fin_time(self, sk: Sock) -> float:
        """tcp_fin_time: tcp_fin_timeout, at least 3.5 RTO."""
        t = self.p.sysctl.tcp_fin_timeout_s * 1000
        return max(t, sk.rto * 3.5)

    def orphan_fin_wait2(self, sk: Sock, seg: Seg | None) -> bool:
        """An orphaned FIN_WAIT2 socket: a timewait sock (substate FIN_WAIT2) now, or the
        keepalive timer first when tcp_fin_time exceeds TCP_TIMEWAIT_LEN. True if it left."""
        tmo = self.fin_time(sk)
        if tmo > TIMEWAIT_LEN:
            sk.arm("fin_wait2", self.now + tmo - TIMEWAIT_LEN)
            return False
        if seg is not None and seg.fin:
            sk.arm("fin_wait2", self.now + tmo)
            return False
        self.time_wait(sk, "FIN_WAIT2", tmo)
        return True

    def active_reset(self, sk: Sock) -> None:
        """tcp_send_active_reset: RST+ACK at SND.NXT."""
        self.xmit(
            sk.ep,
            ("RST", "ACK"),
            sk.snd_nxt,
            sk.rcv_nxt,
            0,
            0,
            "rst",
            "tcp_send_active_reset",
            msg("{ep} sends RST+ACK seq={seq}.", ep=sk.ep.name, seq=sk.snd_nxt),
        )

    def reply_reset(self, ep: Endpoint, seg: Seg, why: Message) -> None:
        """tcp_v4_send_reset: answer a segment no socket wants (never a RST)."""
        if seg.rst:
            return
        if seg.has_ack:
            flags: tuple[str, ...] = ("RST",)
            seq, ack = seg.ack, 0
        else:
            flags = ("RST", "ACK")
            seq, ack = 0, seg.end_seq
        self.note(why, "tcp_v4_send_reset")
        self.xmit(
            ep,
            flags,
            seq,
            ack,
            0,
            0,
            "rst",
            "tcp_v4_send_reset",
            msg("{ep} answers with a RST.", ep=ep.name),
        )

    def ack_sent(self, sk: Sock) -> None:
        """tcp_event_ack_sent: the ACK went out, the delayed ACK is cancelled."""
        sk.ack_sched = False
        sk.ack_now = False
        sk.stop("delack")
        if sk.quick:
            sk.quick -= 1
            if sk.quick == 0:
                sk.ato = ATO_MIN
        sk.rcv_wnd = sk.adv_window()
        sk.rcv_wup = sk.rcv_nxt

    def send_ack(self, sk: Sock, kind: str, src: str) -> None:
        win = sk.adv_window()
        texts = {
            "ack": msg(
                "{ep} sends ACK ack={ack} win={win}.", ep=sk.ep.name, ack=sk.rcv_nxt, win=win
            ),
            "delayed_ack": msg(
                "{ep} sends its delayed ACK ack={ack}.", ep=sk.ep.name, ack=sk.rcv_nxt
            ),
            "challenge_ack": msg(
                "{ep} sends a challenge ACK (RFC 5961) seq={seq} ack={ack}.",
                ep=sk.ep.name,
                seq=sk.snd_nxt,
                ack=sk.rcv_nxt,
            ),
            "dupack": msg("{ep} sends a duplicate ACK ack={ack}.", ep=sk.ep.name, ack=sk.rcv_nxt),
            "window_update": msg("{ep} sends a window update, win={win}.", ep=sk.ep.name, win=win),
        }
        self.xmit(
            sk.ep,
            ("ACK",),
            sk.snd_nxt,
            sk.rcv_nxt,
            0,
            win,
            kind,
            src,
            texts.get(kind, texts["ack"]),
        )
        self.ack_sent(sk)

    def send_syn(self, sk: Sock, retrans: bool) -> None:
        if not retrans:
            sk.rtx = [OutSeg(sk.iss, 0, True, False, self.now)]
            sk.snd_nxt = sk.iss + 1
        flags: tuple[str, ...] = ("SYN", "ACK") if sk.state == "SYN_RECV" else ("SYN",)
        ack = sk.rcv_nxt if sk.state == "SYN_RECV" else 0
        kind = "retransmit" if retrans else "syn"
        text = (
            msg("{ep} retransmits its SYN (attempt {n}).", ep=sk.ep.name, n=sk.retransmits)
            if retrans
            else msg("{ep} sends SYN seq={seq}.", ep=sk.ep.name, seq=sk.iss)
        )
        self.xmit(
            sk.ep,
            flags,
            sk.iss,
            ack,
            0,
            sk.adv_window(),
            kind,
            "tcp_retransmit_skb" if retrans else "tcp_connect",
            text,
        )
        if sk.state == "SYN_RECV":
            self.ack_sent(sk)
        if not sk.timer("retransmit").armed:
            sk.arm("retransmit", self.now + sk.rto)

    def send_fin(self, sk: Sock) -> None:
        """tcp_send_fin: queue a FIN after the data; it goes out when the window allows."""
        if sk.fin_queued:
            return
        sk.fin_queued = True
        sk.write_seq += 1
        self.push(sk)

    def push(self, sk: Sock) -> None:
        """tcp_write_xmit: send new data (and a queued FIN) within cwnd and the peer's window;
        arm the persist timer when a zero window stops it."""
        if sk.state in ("SYN_SENT", "SYN_RECV", "CLOSE", "LISTEN"):
            return
        mss = self.p.mss
        sent_any = False
        while True:
            # retransmit segments marked lost first (after an RTO)
            lost = next((o for o in sk.rtx if o.lost), None)
            inflight = sum(1 for o in sk.rtx if not o.lost)
            if inflight >= sk.cwnd:
                break
            if lost is not None:
                lost.lost = False
                self.retransmit(sk, lost, "loss")
                continue
            start = sk.snd_nxt
            data_left = sk.data_end - start
            wnd_end = sk.snd_una + sk.snd_wnd
            fin_pending = sk.fin_queued and start < sk.write_seq
            if data_left <= 0 and not fin_pending:
                break
            n = min(mss, max(data_left, 0), max(wnd_end - start, 0))
            fin = fin_pending and start + n == sk.data_end
            if n == 0 and not (fin and start + 1 <= wnd_end):
                break
            if fin and n < data_left:
                fin = False
            if 0 < n < mss and n < data_left and sk.rtx:
                break  # wait for more window rather than send a runt (SWS avoidance)
            if 0 < n < mss and not fin and any(0 < o.length < mss for o in sk.rtx):
                break  # Nagle with Minshall's rule: one small segment in flight at a time
            o = OutSeg(start, n, False, fin, self.now)
            sk.rtx.append(o)
            sk.snd_nxt = o.end
            flags = ("FIN", "ACK") if fin else ("ACK",)
            if fin and n:
                text = msg(
                    "{ep} sends {n} bytes with FIN, seq={seq}.", ep=sk.ep.name, n=n, seq=start
                )
            elif fin:
                text = msg("{ep} sends FIN seq={seq}.", ep=sk.ep.name, seq=start)
            else:
                text = msg("{ep} sends {n} bytes, seq={seq}.", ep=sk.ep.name, n=n, seq=start)
            self.xmit(
                sk.ep,
                flags,
                start,
                sk.rcv_nxt,
                n,
                sk.adv_window(),
                "fin" if fin else "data",
                "tcp_send_fin" if fin and not n else "tcp_write_xmit",
                text,
            )
            self.ack_sent(sk)
            sent_any = True
            if not sk.timer("retransmit").armed:
                sk.stop("probe0")
                sk.arm("retransmit", self.now + sk.rto)
        if (
            not sent_any
            and not sk.rtx
            and (sk.unsent() > 0 or (sk.fin_queued and sk.snd_nxt < sk.write_seq))
        ):
            if not sk.timer("probe0").armed:
                when = min(max(sk.rto, RTO_MIN) * (2**sk.backoff), RTO_MAX)
                sk.arm("probe0", self.now + when)
                self.note(
                    msg(
                        "The peer's window is {w}: the persist timer is armed for {t} ms.",
                        w=sk.snd_wnd,
                        t=round(when, 3),
                    ),
                    "tcp_send_probe0",
                )

    def retransmit(self, sk: Sock, o: OutSeg, why: str) -> None:
        o.retrans += 1
        if sk.retrans_stamp is None:
            sk.retrans_stamp = o.first_ms
        if o.syn:
            sk.syn_retrans += 1
            self.send_syn(sk, retrans=True)
            return
        flags: tuple[str, ...] = ("FIN", "ACK") if o.fin else ("ACK",)
        self.xmit(
            sk.ep,
            flags,
            o.seq,
            sk.rcv_nxt,
            o.length,
            sk.adv_window(),
            "retransmit",
            "tcp_retransmit_skb",
            msg("{ep} retransmits its FIN, seq={seq}.", ep=sk.ep.name, seq=o.seq)
            if o.fin and not o.length
            else msg(
                "{ep} retransmits seq={seq} ({n} bytes and FIN).",
                ep=sk.ep.name,
                seq=o.seq,
                n=o.length,
            )
            if o.fin
            else msg(
                "{ep} retransmits seq={seq} ({n} bytes).", ep=sk.ep.name, seq=o.seq, n=o.length
            ),
        )
        self.ack_sent(sk)

    def arm_keepalive(self, sk: Sock) -> None:
        if sk.keepalive:
            sk.arm("keepalive", self.now + self.p.sysctl.tcp_keepalive_time_s * 1000)

    def tcp_reset(self, sk: Sock, seg: Seg) -> None:
        """tcp_reset: the error the program sees, then tcp_done."""
        err = {"SYN_SENT": "ECONNREFUSED", "CLOSE_WAIT": "EPIPE"}.get(sk.state, "ECONNRESET")
        if sk.state == "CLOSE":
            return
        if not sk.dead:
            sk.err = err
        self.note(
            msg(
                "{ep} accepts the RST: {st} becomes TCP_CLOSE; pending error {err}.",
                ep=sk.ep.name,
                st="TCP_" + sk.state,
                err=err,
            ),
            "tcp_reset",
        )
        self.set_state(sk, "CLOSE", "RST received", "tcp_reset")
        self.done(sk, "RST", "tcp_reset", already=True)

    # --- input -------------------------------------------------------------------------------
    def receive(self, ep: Endpoint, seg: Seg) -> None:
        o = ep.ehash
        if isinstance(o, TimeWait):
            self.rcv_timewait(ep, o, seg)
        elif isinstance(o, Req):
            self.rcv_req(ep, o, seg)
        elif isinstance(o, Sock):
            if o.state == "SYN_SENT":
                self.rcv_synsent(o, seg)
            else:
                self.rcv_sync(o, seg)
        elif ep.listener is not None:
            self.rcv_listen(ep, ep.listener, seg)
        else:
            self.note(msg("{ep} has no socket for this segment.", ep=ep.name), "tcp_v4_rcv")
            self.reply_reset(ep, seg, msg("No socket matches: the kernel answers with a RST."))

    def rcv_listen(self, ep: Endpoint, lsn: Listener, seg: Seg, tw_isn: int = 0) -> None:
        if seg.rst:
            self.note(msg("The listener ignores a RST."), "tcp_rcv_state_process")
            return
        if seg.has_ack and not seg.syn:
            peer_iss = lsn.cookies.get(seg.ack - 1)
            if peer_iss is not None and seg.seq == peer_iss + 1:
                self.cookie_child(ep, lsn, seg, peer_iss)
                return
            self.note(
                msg("An ACK reaches the listener without a request: RST."), "tcp_rcv_state_process"
            )
            self.reply_reset(ep, seg, msg("The listener answers an unexpected ACK with a RST."))
            return
        if seg.has_ack:
            self.reply_reset(ep, seg, msg("The listener answers a SYN+ACK with a RST."))
            return
        if not seg.syn:
            return
        self.note(
            msg(
                "A SYN reaches the listener.",
            ),
            "tcp_conn_request",
        )
        want_cookie = False
        sc = self.p.sysctl.tcp_syncookies
        if (sc == 2 or lsn.reqsk_queue_full()) and not tw_isn:
            if sc == 0:
                self.note(
                    msg(
                        "The SYN queue is full ({q} of {b}) and syncookies are off: the SYN is "
                        "dropped.",
                        q=lsn.qlen,
                        b=lsn.backlog,
                    ),
                    "tcp_syn_flood_action",
                )
                return
            want_cookie = True
            self.note(
                msg(
                    "The SYN queue is full ({q} of {b}): possible SYN flooding, sending a SYN "
                    "cookie instead of keeping a request sock.",
                    q=lsn.qlen,
                    b=lsn.backlog,
                ),
                "tcp_syn_flood_action",
            )
        if lsn.acceptq_full():
            self.note(
                msg(
                    "The accept queue is full ({n} waiting, backlog {b}): the SYN is dropped "
                    "(ListenOverflows); the client will retransmit it.",
                    n=lsn.ack_backlog,
                    b=lsn.backlog,
                ),
                "tcp_conn_request",
            )
            return
        if want_cookie:
            iss = ep.next_iss() + 777
            lsn.cookies[iss] = seg.seq
            self.xmit(
                ep,
                ("SYN", "ACK"),
                iss,
                seg.seq + 1,
                0,
                self.p.rcvbuf,
                "synack_cookie",
                "tcp_v4_send_synack",
                msg(
                    "{ep} sends SYN+ACK with a cookie as its ISN ({iss}); it keeps no state.",
                    ep=ep.name,
                    iss=iss,
                ),
            )
            return
        iss = tw_isn or ep.next_iss()
        req = Req(self, ep, lsn, iss, seg.seq, seg.window)
        lsn.reqs.append(req)
        ep.ehash = req
        self.transitions.append(
            {
                "endpoint": ep.name,
                "object": "request_sock",
                "object_id": req.id,
                "from_state": "TCP_LISTEN",
                "to_state": "TCP_NEW_SYN_RECV",
                "rfc_from": "LISTEN",
                "rfc_to": "SYN_RECEIVED",
                "event": "SYN",
                "function": "tcp_conn_request",
            }
        )
        self.note(
            msg(
                "A request sock (TCP_NEW_SYN_RECV) with ISS {iss} is hashed; the listener "
                "itself stays in LISTEN.",
                iss=iss,
            ),
            "inet_csk_reqsk_queue_hash_add",
        )
        req.arm("synack", self.now + RTO_INIT)
        self.send_synack(req, retrans=False)

    def send_synack(self, req: Req, retrans: bool) -> None:
        text = (
            msg("{ep} retransmits its SYN+ACK (timeout {n}).", ep=req.ep.name, n=req.num_timeout)
            if retrans
            else msg(
                "{ep} sends SYN+ACK seq={seq} ack={ack}.",
                ep=req.ep.name,
                seq=req.iss,
                ack=req.rcv_nxt,
            )
        )
        self.xmit(
            req.ep,
            ("SYN", "ACK"),
            req.iss,
            req.rcv_nxt,
            0,
            self.p.rcvbuf,
            "retransmit" if retrans else "synack",
            "tcp_rtx_synack" if retrans else "tcp_v4_send_synack",
            text,
        )

    def rcv_req(self, ep: Endpoint, req: Req, seg: Seg) -> None:
        """tcp_check_req: the third segment of the handshake meets the request sock."""
        lsn = req.listener
        if ep.listener is not lsn:
            self.drop_req(req)
            self.receive(ep, seg)
            return
        if seg.syn and not seg.has_ack and not seg.rst and seg.seq == req.irs:
            if not req.oow_limited(self.now):
                self.note(
                    msg("A retransmitted SYN: the request sock resends its SYN+ACK."),
                    "tcp_check_req",
                )
                self.send_synack(req, retrans=True)
            return
        if seg.has_ack and seg.ack != req.iss + 1:
            self.note(
                msg("The ACK does not acknowledge our SYN+ACK: the listener resets it."),
                "tcp_check_req",
            )
            self.reply_reset(ep, seg, msg("Bad ACK for the request sock: RST."))
            return
        in_win = req.rcv_nxt <= seg.seq <= req.rcv_nxt + self.p.rcvbuf or seg.end_seq == req.rcv_nxt
        if not in_win:
            if not seg.rst and not req.oow_limited(self.now):
                self.xmit(
                    ep,
                    ("ACK",),
                    req.iss + 1,
                    req.rcv_nxt,
                    0,
                    self.p.rcvbuf,
                    "ack",
                    "tcp_check_req",
                    msg("{ep} ACKs an out-of-window segment.", ep=ep.name),
                )
            return
        if seg.rst or seg.syn:
            self.note(
                msg("RST or SYN in window: the request sock is dropped (embryonic reset)."),
                "tcp_check_req",
            )
            if not seg.rst:
                self.reply_reset(ep, seg, msg("The request sock answers with a RST."))
            self.drop_req(req)
            return
        if not seg.has_ack:
            return
        if lsn.acceptq_full():
            req.acked = True
            if self.p.sysctl.tcp_abort_on_overflow:
                self.note(
                    msg("The accept queue is full and tcp_abort_on_overflow is set: RST."),
                    "tcp_check_req",
                )
                self.reply_reset(ep, seg, msg("Listen overflow: RST."))
                self.drop_req(req)
            else:
                self.note(
                    msg(
                        "The accept queue is full: the final ACK is ignored (req->acked); the "
                        "SYN+ACK timer keeps running."
                    ),
                    "tcp_check_req",
                )
            return
        child = self.make_child(ep, lsn, req.iss, req.irs, req.snd_wnd, req.born_ms)
        if req.num_timeout:  # Karn: a retransmitted SYN-ACK gives no RTT sample
            child.rtx[0].retrans = req.num_timeout
            child.syn_retrans = req.num_timeout
        self.transitions.append(
            {
                "endpoint": ep.name,
                "object": "request_sock",
                "object_id": req.id,
                "from_state": "TCP_NEW_SYN_RECV",
                "to_state": "TCP_SYN_RECV",
                "rfc_from": "SYN_RECEIVED",
                "rfc_to": "SYN_RECEIVED",
                "event": "ACK",
                "function": "tcp_v4_syn_recv_sock",
            }
        )
        self.note(
            msg(
                "The ACK is valid: tcp_v4_syn_recv_sock clones the listener into a child socket "
                "in TCP_SYN_RECV, which replaces the request sock and joins the accept queue."
            ),
            "tcp_v4_syn_recv_sock",
        )
        req.stop_all()
        lsn.reqs.remove(req)
        self.rcv_sync(child, seg)

    def drop_req(self, req: Req) -> None:
        req.stop_all()
        if req in req.listener.reqs:
            req.listener.reqs.remove(req)
        if req.ep.ehash is req:
            req.ep.ehash = None
        self.transitions.append(
            {
                "endpoint": req.ep.name,
                "object": "request_sock",
                "object_id": req.id,
                "from_state": "TCP_NEW_SYN_RECV",
                "to_state": "TCP_CLOSE",
                "rfc_from": "SYN_RECEIVED",
                "rfc_to": "LISTEN" if req.ep.listener else "CLOSED",
                "event": "drop",
                "function": "reqsk_timer_handler",
            }
        )

    def make_child(
        self, ep: Endpoint, lsn: Listener, iss: int, irs: int, wnd: int, synack_ms: float
    ) -> Sock:
        child = Sock(self, ep)
        child.held = False
        child.listener = lsn
        child.iss = iss
        child.irs = irs
        child.snd_una = iss
        child.snd_nxt = iss + 1
        child.write_seq = iss + 1
        child.rcv_nxt = irs + 1
        child.rcv_wup = irs + 1
        child.snd_wnd = wnd
        child.snd_wl1 = irs
        child.rtx = [OutSeg(iss, 0, True, False, synack_ms)]  # the SYN-ACK, acked below
        child.state = "LISTEN"
        self.set_state(child, "SYN_RECV", "clone", "inet_csk_clone_lock")
        ep.ehash = child
        lsn.accept_q.append(child)
        return child

    def cookie_child(self, ep: Endpoint, lsn: Listener, seg: Seg, peer_iss: int) -> None:
        iss = seg.ack - 1
        self.note(
            msg(
                "cookie_v4_check: the ACK carries a valid SYN cookie; the connection is "
                "rebuilt from it with no request sock."
            ),
            "cookie_v4_check",
        )
        if lsn.acceptq_full():
            self.note(
                msg("The accept queue is full: the cookie ACK is dropped."), "tcp_v4_syn_recv_sock"
            )
            return
        del lsn.cookies[iss]
        child = self.make_child(ep, lsn, iss, peer_iss, seg.window, self.now - self.p.rtt_ms)
        self.rcv_sync(child, seg)

    def rcv_synsent(self, sk: Sock, seg: Seg) -> None:
        """tcp_rcv_synsent_state_process."""
        if seg.has_ack:
            if seg.ack <= sk.iss or seg.ack > sk.snd_nxt:
                if not seg.rst:
                    self.note(
                        msg("The ACK does not cover our SYN: answer with a RST."),
                        "tcp_rcv_synsent_state_process",
                    )
                    self.reply_reset(sk.ep, seg, msg("SYN_SENT resets an unacceptable ACK."))
                return
            if seg.rst:
                self.tcp_reset(sk, seg)
                return
            if not seg.syn:
                return
            sk.irs = seg.seq
            sk.rcv_nxt = seg.seq + 1
            sk.rcv_wup = sk.rcv_nxt
            sk.snd_wl1 = seg.seq
            self.clean_rtx(sk, seg.ack)
            sk.snd_wnd = seg.window
            sk.ever_connected = True
            self.set_state(sk, "ESTABLISHED", "SYN+ACK", "tcp_finish_connect")
            self.init_transfer(sk)
            self.note(
                msg(
                    "{ep} gets SYN+ACK: IRS {irs}; the connection is ESTABLISHED.",
                    ep=sk.ep.name,
                    irs=seg.seq,
                ),
                "tcp_finish_connect",
            )
            sk.rcv_tstamp = self.now
            self.arm_keepalive(sk)
            self.send_ack(sk, "ack", "tcp_send_ack")
            self.push(sk)
            return
        if seg.rst:
            return
        if seg.syn:
            sk.irs = seg.seq
            sk.rcv_nxt = seg.seq + 1
            sk.rcv_wup = sk.rcv_nxt
            sk.snd_wnd = seg.window
            sk.snd_wl1 = seg.seq
            self.set_state(
                sk, "SYN_RECV", "SYN (simultaneous open)", "tcp_rcv_synsent_state_process"
            )
            self.note(
                msg(
                    "Crossed SYNs (simultaneous open): {ep} moves to SYN_RECV and answers with "
                    "SYN+ACK.",
                    ep=sk.ep.name,
                ),
                "tcp_rcv_synsent_state_process",
            )
            self.xmit(
                sk.ep,
                ("SYN", "ACK"),
                sk.iss,
                sk.rcv_nxt,
                0,
                sk.adv_window(),
                "synack",
                "tcp_send_synack",
                msg(
                    "{ep} sends SYN+ACK seq={seq} ack={ack}.",
                    ep=sk.ep.name,
                    seq=sk.iss,
                    ack=sk.rcv_nxt,
                ),
            )
            self.ack_sent(sk)

    def rcv_sync(self, sk: Sock, seg: Seg) -> None:
        """tcp_rcv_state_process / tcp_rcv_established for the synchronized states."""
        if not seg.has_ack and not seg.rst and not seg.syn:
            return
        # tcp_validate_incoming (RFC 5961)
        rwin = sk.receive_window()
        acceptable_seq = seg.end_seq >= sk.rcv_wup and seg.seq <= sk.rcv_nxt + rwin
        if not acceptable_seq:
            if not seg.rst:
                if seg.syn:
                    self.challenge_ack(sk, msg("A SYN outside the window: challenge ACK."))
                    return
                limited = (seg.length == 0 and not seg.fin) and sk.oow_limited(self.now)
                if not limited:
                    self.note(
                        msg(
                            "The segment is outside the receive window: a duplicate ACK answers it."
                        ),
                        "tcp_validate_incoming",
                    )
                    self.send_ack(sk, "dupack", "tcp_send_dupack")
            elif sk.state in ("CLOSE_WAIT", "LAST_ACK", "CLOSING") and seg.seq == sk.rcv_nxt - 1:
                self.tcp_reset(sk, seg)
            else:
                self.note(msg("A RST outside the window is ignored."), "tcp_validate_incoming")
            return
        if seg.rst:
            if seg.seq == sk.rcv_nxt or (
                sk.state in ("CLOSE_WAIT", "LAST_ACK", "CLOSING") and seg.seq == sk.rcv_nxt - 1
            ):
                self.tcp_reset(sk, seg)
            else:
                self.challenge_ack(
                    sk,
                    msg(
                        "A RST inside the window but not at RCV.NXT: challenge ACK "
                        "(RFC 5961 3.2), the connection survives."
                    ),
                )
            return
        if seg.syn:
            self.challenge_ack(
                sk, msg("A SYN on a synchronized connection: challenge ACK (RFC 5961 4.2).")
            )
            return
        # step 5: the ACK field
        if not self.rcv_ack(sk, seg):
            if sk.state == "SYN_RECV":
                self.note(
                    msg("SYN_RECV gets an unacceptable ACK: one RST."), "tcp_rcv_state_process"
                )
                self.reply_reset(sk.ep, seg, msg("SYN_RECV resets an unacceptable ACK."))
            elif sk.state != "ESTABLISHED":
                self.challenge_ack(sk, msg("An old or future ACK: challenge ACK."))
            return
        st = sk.state
        if st == "SYN_RECV":
            sk.ever_connected = True
            self.set_state(sk, "ESTABLISHED", "ACK", "tcp_rcv_state_process")
            self.init_transfer(sk)
            self.note(
                msg(
                    "{ep}: the handshake's ACK arrives; TCP_SYN_RECV becomes TCP_ESTABLISHED.",
                    ep=sk.ep.name,
                ),
                "tcp_child_process" if sk.listener else "tcp_rcv_state_process",
            )
            sk.snd_wnd = seg.window
            sk.rcv_tstamp = self.now
            if sk.held:
                self.arm_keepalive(sk)
        elif st == "FIN_WAIT1" and sk.fin_queued and sk.snd_una == sk.write_seq:
            self.set_state(sk, "FIN_WAIT2", "ACK of FIN", "tcp_rcv_state_process")
            sk.snd_shut = True
            self.note(
                msg("Our FIN is acknowledged: FIN_WAIT1 becomes FIN_WAIT2."),
                "tcp_rcv_state_process",
            )
            if sk.dead:
                if seg.end_seq != seg.seq and seg.end_seq - (1 if seg.fin else 0) > sk.rcv_nxt:
                    self.note(
                        msg("Data arrives after close(): the socket is destroyed."),
                        "tcp_rcv_state_process",
                    )
                    self.done(sk, "data after close", "tcp_done")
                    self.reply_reset(sk.ep, seg, msg("Data after close(): RST."))
                    return
                if self.orphan_fin_wait2(sk, seg):
                    return
        elif st == "CLOSING" and sk.snd_una == sk.write_seq:
            self.note(
                msg("Our FIN is acknowledged in CLOSING: TIME_WAIT."), "tcp_rcv_state_process"
            )
            self.time_wait(sk, "TIME_WAIT", 0)
            return
        elif st == "LAST_ACK" and sk.snd_una == sk.write_seq:
            self.note(
                msg("The last ACK arrives: LAST_ACK becomes CLOSED."), "tcp_rcv_state_process"
            )
            self.done(sk, "ACK of FIN", "tcp_done")
            return
        # step 7: the segment text
        st = sk.state
        new_data = seg.end_seq != seg.seq and seg.end_seq - (1 if seg.fin else 0) > sk.rcv_nxt
        if st in ("CLOSE_WAIT", "CLOSING", "LAST_ACK") and seg.seq >= sk.rcv_nxt:
            pass
        elif st in ("FIN_WAIT1", "FIN_WAIT2", "ESTABLISHED", "CLOSE_WAIT", "CLOSING", "LAST_ACK"):
            if st in ("FIN_WAIT1", "FIN_WAIT2") and sk.rcv_shut and new_data:
                self.note(
                    msg("New data after the receive side was shut: RFC 1122 says reset."),
                    "tcp_rcv_state_process",
                )
                self.tcp_reset(sk, seg)
                self.reply_reset(sk.ep, seg, msg("Data after shutdown: RST."))
                return
            self.data_queue(sk, seg)
        if sk.state != "CLOSE" and sk.ep.ehash is sk:
            self.push(sk)
            self.ack_snd_check(sk)

    def challenge_ack(self, sk: Sock, why: Message) -> None:
        self.note(why, "tcp_send_challenge_ack")
        if sk.oow_limited(self.now):
            self.note(msg("Rate limited: no challenge ACK this time."))
            return
        self.send_ack(sk, "challenge_ack", "tcp_send_challenge_ack")

    def init_transfer(self, sk: Sock) -> None:
        """tcp_init_transfer / tcp_init_metrics: no RTT sample from a retransmitted handshake
        resets the RTO to TCP_TIMEOUT_FALLBACK (3 s, RFC 6298 5.7); more than one handshake
        retransmission starts with a congestion window of 1."""
        if sk.rtt.srtt_us == 0:
            sk.rto = RTO_FALLBACK
            self.note(
                msg(
                    "The handshake was retransmitted, so there is no RTT sample: the RTO "
                    "falls back to 3 s."
                ),
                "tcp_init_metrics",
            )
        if sk.syn_retrans > 1:
            sk.cwnd = 1

    def clean_rtx(self, sk: Sock, ack: int) -> int:
        """Drop acknowledged segments; one RTT sample from the newest never-retransmitted."""
        acked = [o for o in sk.rtx if o.end <= ack]
        if not acked:
            return 0
        sk.rtx = [o for o in sk.rtx if o.end > ack]
        fresh = [o for o in acked if o.retrans == 0]
        if fresh:
            m = max(1, int(round((self.now - fresh[-1].first_ms) * 1000)))
            sk.rtt.sample(m, ack, sk.snd_nxt)
            sk.rto = max(min(sk.rtt.rto_s * 1000, RTO_MAX), RTO_MIN)
        sk.snd_una = ack
        sk.backoff = 0
        sk.retransmits = 0
        sk.retrans_stamp = None
        sk.dupacks = 0
        sk.cwnd += len(acked) if not any(o.syn for o in acked) else 0
        sk.stop("retransmit")
        if sk.rtx:
            sk.arm("retransmit", self.now + sk.rto)
        return len(acked)

    def rcv_ack(self, sk: Sock, seg: Seg) -> bool:
        """tcp_ack: False when the ACK is not acceptable."""
        ack = seg.ack
        if ack < sk.snd_una:
            return sk.state == "ESTABLISHED"  # old ACK: ignored (tcp_ack returns 0)
        if ack > sk.snd_nxt:
            return False
        sk.probes_out = 0
        sk.rcv_tstamp = self.now
        prior = sk.snd_una
        n = self.clean_rtx(sk, ack)
        if (
            ack > prior
            or seg.seq > sk.snd_wl1
            or (seg.seq == sk.snd_wl1 and seg.window > sk.snd_wnd)
        ):
            if seg.window != sk.snd_wnd:
                sk.snd_wnd = seg.window
            sk.snd_wl1 = seg.seq
        sk.snd_una = max(sk.snd_una, ack)
        if n == 0 and sk.rtx and seg.length == 0 and not seg.fin and ack == prior:
            sk.dupacks += 1
            if sk.dupacks == 3:
                self.note(
                    msg("Three duplicate ACKs: fast retransmit of seq={seq}.", seq=sk.rtx[0].seq),
                    "tcp_fastretrans_alert",
                )
                self.retransmit(sk, sk.rtx[0], "fast")
        if not sk.rtx and sk.timer("probe0").armed:
            if sk.unsent() == 0 or sk.snd_una + sk.snd_wnd > sk.snd_nxt:
                sk.stop("probe0")
                sk.backoff = 0
                sk.probes_out = 0
                self.note(
                    msg("The window is open again ({w} bytes): probing stops.", w=sk.snd_wnd),
                    "tcp_ack_probe",
                )
        return True

    def data_queue(self, sk: Sock, seg: Seg) -> None:
        """tcp_data_queue: in-order data and FIN, out-of-order, old and out-of-window."""
        if seg.length == 0 and not seg.fin:
            return
        if seg.seq == sk.rcv_nxt:
            if sk.receive_window() == 0 and seg.length > 0:
                self.note(
                    msg("The receive window is zero: the data is dropped and ACKed at once."),
                    "tcp_data_queue",
                )
                self.quickack(sk)
                sk.ack_now = True
                sk.ack_sched = True
                return
            self.accept_data(sk, seg.seq, seg.length, seg.fin)
            while sk.ooo:
                sk.ooo.sort()
                s, n, f = sk.ooo[0]
                if s > sk.rcv_nxt:
                    break
                sk.ooo.pop(0)
                if s + n + (1 if f else 0) > sk.rcv_nxt:
                    cut = sk.rcv_nxt - s
                    self.accept_data(sk, sk.rcv_nxt, n - cut, f)
                if not sk.ooo:
                    sk.ack_now = True
            return
        if seg.end_seq <= sk.rcv_nxt:
            self.note(msg("Old data (a retransmission): ACK at once."), "tcp_data_queue")
            self.quickack(sk)
            sk.ack_sched = True
            sk.ack_now = True
            return
        if seg.seq >= sk.rcv_nxt + sk.receive_window():
            self.note(
                msg("Beyond the window (a zero-window probe?): ACK at once."), "tcp_data_queue"
            )
            self.quickack(sk)
            sk.ack_sched = True
            sk.ack_now = True
            return
        if seg.seq < sk.rcv_nxt:
            cut = sk.rcv_nxt - seg.seq
            self.accept_data(sk, sk.rcv_nxt, seg.length - cut, seg.fin)
            return
        self.note(
            msg(
                "Out of order: seq {seq} while {nxt} is expected; queued and ACKed at once.",
                seq=seg.seq,
                nxt=sk.rcv_nxt,
            ),
            "tcp_data_queue",
        )
        sk.ooo.append((seg.seq, seg.length, seg.fin))
        sk.ack_sched = True
        sk.ack_now = True

    def quickack(self, sk: Sock) -> None:
        qa = max(2, min(self.p.rcvbuf // (2 * self.p.mss), MAX_QUICKACKS))
        sk.quick = max(sk.quick, qa)
        sk.pingpong = False
        sk.ato = ATO_MIN

    def accept_data(self, sk: Sock, seq: int, n: int, fin: bool) -> None:
        if n > 0:
            sk.recv_q += n
            sk.rcv_nxt = seq + n
            sk.ack_sched = True
            self.event_data_recv(sk)
            self.note(
                msg("{ep} queues {n} bytes; RCV.NXT = {nxt}.", ep=sk.ep.name, n=n, nxt=sk.rcv_nxt),
                "tcp_data_queue",
            )
        if fin:
            sk.rcv_nxt += 1
            self.tcp_fin(sk)

    def event_data_recv(self, sk: Sock) -> None:
        """tcp_event_data_recv: quick ACK at the start, then the delayed-ACK estimator."""
        now = self.now
        if sk.ato == 0:
            self.quickack(sk)
        else:
            m = now - sk.lrcvtime
            if m <= ATO_MIN / 2:
                sk.ato = sk.ato / 2 + ATO_MIN / 2
            elif m < sk.ato:
                sk.ato = sk.ato / 2 + m
                if sk.ato > sk.rto:
                    sk.ato = sk.rto
            elif m > sk.rto:
                qa = max(2, min(self.p.rcvbuf // (2 * self.p.mss), MAX_QUICKACKS))
                sk.quick = max(sk.quick, qa)
        sk.lrcvtime = now
        sk.rcv_tstamp = now

    def tcp_fin(self, sk: Sock) -> None:
        sk.ack_sched = True
        sk.rcv_shut = True
        sk.sock_done = True
        st = sk.state
        if st in ("SYN_RECV", "ESTABLISHED"):
            self.set_state(sk, "CLOSE_WAIT", "FIN", "tcp_fin")
            sk.pingpong = True
            self.note(
                msg(
                    "{ep} gets the peer's FIN: CLOSE_WAIT; recv() will return 0 once the "
                    "queue is read.",
                    ep=sk.ep.name,
                ),
                "tcp_fin",
            )
        elif st == "FIN_WAIT1":
            self.note(
                msg("A FIN while our own FIN is unacknowledged: simultaneous close, CLOSING."),
                "tcp_fin",
            )
            self.send_ack(sk, "ack", "tcp_fin")
            self.set_state(sk, "CLOSING", "FIN", "tcp_fin")
        elif st == "FIN_WAIT2":
            self.note(
                msg("The peer's FIN arrives in FIN_WAIT2: ACK it and enter TIME_WAIT."), "tcp_fin"
            )
            self.send_ack(sk, "ack", "tcp_fin")
            self.time_wait(sk, "TIME_WAIT", 0)
        sk.ooo = []

    def ack_snd_check(self, sk: Sock) -> None:
        """__tcp_ack_snd_check: ACK now, or arm the delayed-ACK timer."""
        if not sk.ack_sched:
            return
        in_quick = sk.quick > 0 and not sk.pingpong
        if sk.rcv_nxt - sk.rcv_wup > self.p.mss or in_quick or sk.ack_now:
            self.send_ack(sk, "ack", "__tcp_ack_snd_check")
            return
        if not sk.timer("delack").armed:
            ato = sk.ato or ATO_MIN
            ato = min(ato, DELACK_MAX)
            sk.arm("delack", self.now + ato)
            self.note(
                msg("{ep} delays its ACK by {t} ms.", ep=sk.ep.name, t=round(ato, 3)),
                "tcp_send_delayed_ack",
            )

    def rcv_timewait(self, ep: Endpoint, tw: TimeWait, seg: Seg) -> None:
        """tcp_timewait_state_process."""
        self.note(
            msg("The timewait sock (substate {sub}) gets the segment.", sub="TCP_" + tw.substate),
            "tcp_timewait_state_process",
        )
        if tw.substate == "FIN_WAIT2":
            in_win = (
                seg.seq == tw.rcv_nxt
                or (seg.end_seq > tw.rcv_nxt and seg.seq < tw.rcv_nxt + tw.rcv_wnd)
                or (seg.seq == tw.rcv_nxt + tw.rcv_wnd and seg.seq == seg.end_seq)
            )
            if not in_win:
                self.tw_ack(ep, tw, seg)
                return
            if seg.rst:
                self.kill_tw(ep, tw, "RST")
                return
            if seg.syn and seg.seq >= tw.rcv_nxt:
                self.reply_reset(ep, seg, msg("A SYN to a FIN_WAIT2 timewait sock: RST."))
                return
            if not seg.has_ack or seg.end_seq <= tw.rcv_nxt or seg.end_seq == seg.seq:
                return
            if not seg.fin or seg.end_seq != tw.rcv_nxt + 1:
                self.reply_reset(ep, seg, msg("Data after the half-duplex close: RST."))
                return
            tw.substate = "TIME_WAIT"
            tw.rcv_nxt = seg.end_seq
            tw.arm("timewait", self.now + TIMEWAIT_LEN)
            self.transitions.append(
                {
                    "endpoint": ep.name,
                    "object": "timewait_sock",
                    "object_id": tw.id,
                    "from_state": "TCP_TIME_WAIT",
                    "to_state": "TCP_TIME_WAIT",
                    "rfc_from": "FIN_WAIT_2",
                    "rfc_to": "TIME_WAIT",
                    "event": "FIN",
                    "function": "tcp_timewait_state_process",
                }
            )
            self.note(
                msg("The FIN arrives: tw_substate becomes TCP_TIME_WAIT for 60 s."),
                "tcp_timewait_state_process",
            )
            self.xmit(
                ep,
                ("ACK",),
                tw.snd_nxt,
                tw.rcv_nxt,
                0,
                tw.rcv_wnd,
                "ack",
                "tcp_v4_timewait_ack",
                msg("{ep} ACKs the FIN from its timewait sock.", ep=ep.name),
            )
            return
        if seg.seq == tw.rcv_nxt and (seg.seq == seg.end_seq or seg.rst):
            if seg.rst:
                self.note(
                    msg(
                        "A RST in TIME_WAIT kills the timewait sock (TIME_WAIT "
                        "assassination; tcp_rfc1337 is 0)."
                    ),
                    "tcp_timewait_state_process",
                )
                self.kill_tw(ep, tw, "RST")
            else:
                tw.arm("timewait", self.now + TIMEWAIT_LEN)
            return
        if seg.syn and not seg.rst and not seg.has_ack and seg.seq > tw.rcv_nxt:
            isn = tw.snd_nxt + TW_ISN_GAP
            lsn = ep.listener
            self.note(
                msg(
                    "A new SYN with a higher sequence number reaches the TIME_WAIT tuple: the "
                    "timewait sock gives way and the connection reopens with ISN {isn} "
                    "(tw_snd_nxt + 65537).",
                    isn=isn,
                ),
                "tcp_timewait_state_process",
            )
            if lsn is not None:
                self.kill_tw(ep, tw, "SYN")
                self.rcv_listen(ep, lsn, seg, tw_isn=isn)
                return
        if not seg.rst:
            if seg.has_ack:
                tw.arm("timewait", self.now + TIMEWAIT_LEN)
                self.note(
                    msg("TIME_WAIT restarts its 60 s timer and ACKs the segment."),
                    "tcp_timewait_state_process",
                )
            self.tw_ack(ep, tw, seg)

    def tw_ack(self, ep: Endpoint, tw: TimeWait, seg: Seg) -> None:
        if (seg.seq == seg.end_seq or seg.syn) and tw.oow_limited(self.now):
            return
        self.xmit(
            ep,
            ("ACK",),
            tw.snd_nxt,
            tw.rcv_nxt,
            0,
            tw.rcv_wnd,
            "ack",
            "tcp_v4_timewait_ack",
            msg("{ep} answers from TIME_WAIT with ACK ack={ack}.", ep=ep.name, ack=tw.rcv_nxt),
        )

    def kill_tw(self, ep: Endpoint, tw: TimeWait, why: str) -> None:
        tw.stop_all()
        if ep.ehash is tw:
            ep.ehash = None
        self.transitions.append(
            {
                "endpoint": ep.name,
                "object": "timewait_sock",
                "object_id": tw.id,
                "from_state": "TCP_TIME_WAIT",
                "to_state": "TCP_CLOSE",
                "rfc_from": RFC_NAME[tw.substate],
                "rfc_to": "LISTEN" if ep.listener else "CLOSED",
                "event": why,
                "function": "tcp_timewait_state_process" if why != "timer" else "tw_timer_handler",
            }
        )

    # --- timers ------------------------------------------------------------------------------
    def on_timer(self, obj: Obj, name: str) -> None:
        getattr(self, "timer_" + name)(obj)
        self.flush("timer")
        self.after_step()

    def timer_timewait(self, tw: TimeWait) -> None:
        self.note(
            msg("{ep}: the timewait sock expires and is freed.", ep=tw.ep.name), "tw_timer_handler"
        )
        self.kill_tw(tw.ep, tw, "timer")

    def timer_synack(self, req: Req) -> None:
        """reqsk_timer_handler."""
        lsn = req.listener
        max_retries = self.p.sysctl.tcp_synack_retries
        qlen = lsn.qlen
        if qlen * 2 > max(8, lsn.backlog):
            young = sum(1 for r in lsn.reqs if r.num_timeout == 0) * 2
            while max_retries > 2:
                if qlen < young:
                    break
                max_retries -= 1
                young <<= 1
        if req.num_timeout >= max_retries:
            self.note(
                msg(
                    "The SYN+ACK was retransmitted {n} times without a valid ACK: the request "
                    "sock is dropped.",
                    n=req.num_timeout,
                ),
                "reqsk_timer_handler",
            )
            self.drop_req(req)
            return
        req.num_timeout += 1
        self.note(
            msg("The SYN+ACK timer fires ({n} of {m}).", n=req.num_timeout, m=max_retries),
            "reqsk_timer_handler",
        )
        self.send_synack(req, retrans=True)
        req.arm("synack", self.now + min(RTO_INIT * 2**req.num_timeout, RTO_MAX))

    def timer_delack(self, sk: Sock) -> None:
        """tcp_delack_timer_handler."""
        if not sk.ack_sched or sk.state == "CLOSE":
            return
        if not sk.pingpong:
            sk.ato = min(sk.ato * 2 if sk.ato else ATO_MIN, sk.rto)
        else:
            sk.pingpong = False
            sk.ato = ATO_MIN
        self.note(
            msg("{ep}: the delayed-ACK timer fires.", ep=sk.ep.name), "tcp_delack_timer_handler"
        )
        self.send_ack(sk, "delayed_ack", "tcp_delack_timer_handler")

    def timed_out(self, sk: Sock, boundary: int, rto_base: float) -> bool:
        """retransmits_timed_out with tcp_model_timeout."""
        if not sk.retransmits or sk.retrans_stamp is None:
            return False
        thresh = (int(RTO_MAX / rto_base)).bit_length() - 1
        if boundary <= thresh:
            timeout = ((2 << boundary) - 1) * rto_base
        else:
            timeout = ((2 << thresh) - 1) * rto_base + (boundary - thresh) * RTO_MAX
        return self.now - sk.retrans_stamp - timeout >= 0

    def timer_retransmit(self, sk: Sock) -> None:
        """tcp_retransmit_timer and tcp_write_timeout."""
        if not sk.rtx or sk.state == "CLOSE":
            return
        if sk.state in ("SYN_SENT", "SYN_RECV"):
            limit = self.p.sysctl.tcp_syn_retries
            expired = sk.retransmits >= limit or self.timed_out(sk, limit, RTO_INIT)
        else:
            limit = TCP_RETRIES2
            if sk.dead:
                limit = 8 if sk.rto < RTO_MAX else 0  # tcp_orphan_retries
            expired = self.timed_out(sk, limit, RTO_MIN)
        if expired:
            self.note(
                msg(
                    "{ep} gives up after {n} retransmissions: the connection times out "
                    "(ETIMEDOUT).",
                    ep=sk.ep.name,
                    n=sk.retransmits,
                ),
                "tcp_write_timeout",
            )
            if not sk.dead:
                sk.err = "ETIMEDOUT"
            self.set_state(sk, "CLOSE", "retransmission timeout", "tcp_write_err")
            self.done(sk, "timeout", "tcp_write_err", already=True)
            return
        self.note(
            msg(
                "{ep}: the retransmission timer fires after {rto} ms.",
                ep=sk.ep.name,
                rto=round(sk.rto, 3),
            ),
            "tcp_retransmit_timer",
        )
        for o in sk.rtx:
            o.lost = True
        sk.cwnd = 1
        sk.retransmits += 1
        head = sk.rtx[0]
        head.lost = False
        self.retransmit(sk, head, "rto")
        sk.backoff += 1
        sk.rto = min(sk.rto * 2, RTO_MAX)
        sk.arm("retransmit", self.now + sk.rto)
        self.note(
            msg("Exponential backoff: the next RTO is {rto} ms.", rto=round(sk.rto, 3)),
            "tcp_retransmit_timer",
        )

    def timer_probe0(self, sk: Sock) -> None:
        """tcp_probe_timer / tcp_send_probe0: a zero-window probe."""
        if sk.rtx or sk.state == "CLOSE":
            sk.probes_out = 0
            return
        if sk.unsent() == 0 and not (sk.fin_queued and sk.snd_nxt < sk.write_seq):
            return
        max_probes = TCP_RETRIES2
        if sk.dead:
            alive = min(sk.rto * 2**sk.backoff, RTO_MAX) < RTO_MAX
            max_probes = 8 if alive else 0
        if sk.probes_out >= max_probes:
            self.note(
                msg("{ep}: too many unanswered window probes: ETIMEDOUT.", ep=sk.ep.name),
                "tcp_probe_timer",
            )
            if not sk.dead:
                sk.err = "ETIMEDOUT"
            self.set_state(sk, "CLOSE", "probe timeout", "tcp_write_err")
            self.done(sk, "timeout", "tcp_write_err", already=True)
            return
        self.note(
            msg("{ep}: the persist timer fires; a zero-window probe goes out.", ep=sk.ep.name),
            "tcp_probe_timer",
        )
        wnd_end = sk.snd_una + sk.snd_wnd
        if sk.snd_nxt < wnd_end:
            self.push(sk)
            if sk.rtx:
                sk.probes_out = 0
                sk.backoff = 0
                return
        self.xmit(
            sk.ep,
            ("ACK",),
            sk.snd_una - 1,
            sk.rcv_nxt,
            0,
            sk.adv_window(),
            "probe",
            "tcp_xmit_probe_skb",
            msg(
                "{ep} sends a window probe seq={seq} (SND.UNA - 1).",
                ep=sk.ep.name,
                seq=sk.snd_una - 1,
            ),
        )
        self.ack_sent(sk)
        sk.probes_out += 1
        if sk.backoff < TCP_RETRIES2:
            sk.backoff += 1
        when = min(max(sk.rto, RTO_MIN) * 2**sk.backoff, RTO_MAX)
        sk.arm("probe0", self.now + when)

    def timer_keepalive(self, sk: Sock) -> None:
        """tcp_keepalive_timer."""
        if not sk.keepalive or sk.state in ("CLOSE", "SYN_SENT"):
            return
        s = self.p.sysctl
        ktime = s.tcp_keepalive_time_s * 1000
        if sk.rtx or sk.unsent():
            sk.arm("keepalive", self.now + ktime)
            return
        elapsed = self.now - max(sk.lrcvtime, sk.rcv_tstamp)
        if elapsed + 1e-9 >= ktime:
            if sk.probes_out >= s.tcp_keepalive_probes:
                self.note(
                    msg(
                        "{ep}: {n} keepalive probes went unanswered: RST and ETIMEDOUT.",
                        ep=sk.ep.name,
                        n=sk.probes_out,
                    ),
                    "tcp_keepalive_timer",
                )
                self.active_reset(sk)
                if not sk.dead:
                    sk.err = "ETIMEDOUT"
                self.set_state(sk, "CLOSE", "keepalive timeout", "tcp_write_err")
                self.done(sk, "timeout", "tcp_write_err", already=True)
                return
            self.note(
                msg(
                    "{ep}: idle for {s} s; keepalive probe {n}.",
                    ep=sk.ep.name,
                    s=round(elapsed / 1000, 3),
                    n=sk.probes_out + 1,
                ),
                "tcp_keepalive_timer",
            )
            self.xmit(
                sk.ep,
                ("ACK",),
                sk.snd_una - 1,
                sk.rcv_nxt,
                0,
                sk.adv_window(),
                "keepalive",
                "tcp_write_wakeup",
                msg(
                    "{ep} sends a keepalive probe seq={seq} (SND.UNA - 1).",
                    ep=sk.ep.name,
                    seq=sk.snd_una - 1,
                ),
            )
            self.ack_sent(sk)
            sk.probes_out += 1
            sk.arm("keepalive", self.now + s.tcp_keepalive_intvl_s * 1000)
        else:
            sk.arm("keepalive", self.now + ktime - elapsed)
            self.note(
                msg(
                    "{ep}: the keepalive timer fires, but the peer was heard from {s} s ago; it "
                    "is re-armed.",
                    ep=sk.ep.name,
                    s=round(elapsed / 1000, 3),
                ),
                "tcp_keepalive_timer",
            )

    def timer_fin_wait2(self, sk: Sock) -> None:
        """The keepalive timer of an orphaned FIN_WAIT2 socket."""
        if sk.state != "FIN_WAIT2" or not sk.dead:
            return
        tmo = self.fin_time(sk) - TIMEWAIT_LEN
        if tmo > 0:
            self.time_wait(sk, "FIN_WAIT2", tmo)
            return
        self.note(msg("The orphaned FIN_WAIT2 socket times out: RST."), "tcp_keepalive_timer")
        self.active_reset(sk)
        self.done(sk, "fin timeout", "tcp_done")
