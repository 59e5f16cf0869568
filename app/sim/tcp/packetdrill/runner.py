"""Run a packetdrill script against the model: the local endpoint is Linux 6.4's (app.sim.tcp),
the peer is the script. Inbound packets are injected at their times; every expected outbound
packet is compared, field by field, with the next segment the model sent (within
``tolerance_us``, packetdrill's ``--tolerance_usecs``, default 4000); syscalls return what
the model's calls return. Each line gets a status (match, mismatch, unsupported, comment) and
the verdict names the first line that failed.

Timing as packetdrill reads it: ``+t`` is after the previous event's script time, a range
``a...b`` is a syscall expected to return at ``b`` (both ends read like the start), ``*`` is
any time. Sysctls of shell lines (and the selftests' defaults.sh) apply from the start.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.sim.core.i18n import Message, msg
from app.sim.core.sources import SourceRef
from app.sim.tcp.driver import Sim
from app.sim.tcp.options import TcpOption
from app.sim.tcp.packetdrill import model as M
from app.sim.tcp.packetdrill.ast import (
    Comment,
    Event,
    InfoAssert,
    Option,
    Packet,
    Script,
    Shell,
    Syscall,
    Unsupported,
)
from app.sim.tcp.packetdrill.peer import PeerSim, RunLimit, Sent
from app.sim.tcp.packetdrill.settings import knobs
from app.sim.tcp.packetdrill.syscalls import PendingPoll, check_poll
from app.sim.tcp.packetdrill.tcpinfo import CA_STATES
from app.sim.tcp.params import MAX_RCVBUF, TcpParams
from app.sim.tcp.sock import Seg, Sock
from app.sim.tcp.tcp_sack import lost_out, retrans_out, sacked_out

DEFAULT_TOLERANCE_US = 4000
MAX_EVENTS = 20_000  # model events (timers, calls, segments) a run may take
MAX_SIM_MS = 600_000.0  # simulated time a script may span: 10 minutes
# advmss of a 1500-byte MTU (the selftests' tun device): what the local end's SYN or SYN-ACK
# offers, whatever the peer's MSS option says (tcp_advertise_mss / tcp_openreq_init_rwin use
# the route's advmss). The peer's option only clamps what the local end sends (mss_clamp,
# tcp_sync_mss), which the model reads from the peer's SYN itself.
ADVMSS = 1460


def rcvbuf_before_open(script: Script, opt: str = "SO_RCVBUF") -> int | None:
    """SO_RCVBUF set before listen() or connect(): the model's ``rcvbuf`` (the space its
    windows may offer; the kernel doubles the value for overhead and offers half of that,
    tcp_full_space). A listener's value is the request sock's and its child's (the SYN-ACK's
    window and scale, tcp_openreq_init_rwin). None when the script sets none in time.
    ``opt="SO_SNDBUF"``: the model's ``sndbuf`` the same way (sk_clone_lock copies a
    listener's sk_sndbuf and its lock to the child)."""
    from app.sim.tcp.packetdrill.syscalls import SOL_RCVBUF_ARGS, _int, _name

    for ev in script.events:
        if not isinstance(ev, Syscall):
            continue
        if ev.name in ("listen", "connect"):
            return None
        if ev.name == "setsockopt" and len(ev.args) > SOL_RCVBUF_ARGS:
            if _name(ev.args[2]) == opt:
                v = _int(ev.args[3])
                if v is not None and 0 < v <= MAX_RCVBUF:
                    return v
    return None


class RunLimitError(ValueError):
    """The script needs more than a run may take (simulated time or events)."""

    def __init__(self, why: Message) -> None:
        self.why = why
        super().__init__(why.render())


@dataclass(slots=True, kw_only=True)
class LineResult:
    line: int
    kind: str  # packet | syscall | comment | shell | option | unsupported
    status: str = "match"  # match | mismatch | unsupported | comment
    expected: dict[str, Any] | None = None
    got: dict[str, Any] | None = None
    diffs: list[str] = field(default_factory=list)
    reasons: list[Message] = field(default_factory=list)
    source: SourceRef | None = None  # the kernel function behind the model's answer
    t_ms: float | None = None
    frames: list[int] = field(default_factory=list)

    def fail(self, key: str, why: Message) -> None:
        self.status = "mismatch"
        self.diffs.append(key)
        self.reasons.append(why)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFrame:
    index: int
    line: int
    t_ms: float
    event: str
    narration: Message
    source: SourceRef | None
    segment: dict[str, Any] | None
    call: dict[str, Any] | None
    state: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    passed: bool
    line: int | None
    reason: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    verdict: Verdict
    lines: tuple[LineResult, ...]
    frames: tuple[RunFrame, ...]
    script: Script
    local: str
    tolerance_us: int
    events: int


@dataclass(slots=True)
class Pending:
    """A syscall the model has not answered yet (it blocked)."""

    res: LineResult
    node: Syscall
    call: str
    expect_ms: float
    fd: int


@dataclass(slots=True)
class Fd:
    kind: str  # socket | listener | conn
    nonblock: bool = False
    linger0: bool = False
    opts: dict[str, int] = field(default_factory=dict)


def run(
    script: Script, tolerance_us: int = DEFAULT_TOLERANCE_US, max_events: int = MAX_EVENTS
) -> Result:
    """Run ``script``; raises :class:`RunLimitError` when it needs more than the limits."""
    return Runner(script, tolerance_us, max_events).run()


class Runner:
    def __init__(self, script: Script, tolerance_us: int, max_events: int) -> None:
        self.script = script
        self.tol_us = tolerance_us
        for ev in script.events:  # the script's own --tolerance_usecs wins, as in packetdrill
            if isinstance(ev, Option) and ev.name == "tolerance_usecs" and ev.value.isdigit():
                self.tol_us = int(ev.value)
        self.tol = self.tol_us / 1000
        check_times(script)
        self.local = (
            "server"
            if any(isinstance(e, Syscall) and e.name == "listen" for e in script.events)
            else "client"
        )
        syn = next(
            (
                e
                for e in script.events
                if isinstance(e, Packet) and e.direction == "<" and "S" in e.flags
            ),
            None,
        )
        opts = syn.options or () if syn is not None else ()
        self.peer_wscale = next((o.values[0] for o in opts if o.kind == "wscale"), 0)
        self.knobs = knobs(script)
        # the tun device takes TSO packets unless the script turns TSO off (ethtool -K … tso
        # off): then the kernel segments in software and every packet is one segment
        self.tso = tso_on(script)
        if not self.knobs.window_scaling:
            self.peer_wscale = 0
        params = TcpParams(
            script=(),
            until_ms=MAX_SIM_MS,
            mss=ADVMSS,
            rcvbuf=rcvbuf_before_open(script),
            sndbuf=rcvbuf_before_open(script, "SO_SNDBUF"),
            sysctl=self.knobs.sysctls,
            client_iss=0,  # the local ISN is packetdrill's 0, so the narration's numbers are
            server_iss=0,  # the script's
        )
        self.sim = PeerSim(params, self.local, self.on_frame, max_events)
        self.local_isn = self.sim.ep.iss_base
        self.lines: list[LineResult] = []
        self.frames: list[RunFrame] = []
        self.cur: LineResult | None = None
        self.pending: deque[Pending] = deque()
        self.fds: dict[int, Fd] = {}
        self.polls: list[PendingPoll] = []
        self.sim.after_event = self.check_polls
        self.last_ms = 0.0

    def check_polls(self) -> None:
        if self.polls:
            self.polls = [pp for pp in self.polls if not check_poll(self, pp)]

    # --- the model's frames --------------------------------------------------------------------
    def on_frame(self, sim: Sim, f: dict[str, Any]) -> None:
        seg = f["segment"] or f["delivered"]
        view: dict[str, Any] | None = None
        if seg is not None:
            if seg.src == self.local:
                if seg.syn:
                    self.local_isn = seg.seq
                view = M.outbound_view(seg, seg.psh, sim.now, self.local_isn)
            else:
                view = {
                    "dir": "<",
                    "flags": M.flag_letters(frozenset(seg.flags)),
                    "seq": seg.seq - M.REMOTE_BASE,
                    "len": seg.length,
                }
        line = self.cur.line if self.cur is not None else 0
        frame = RunFrame(
            index=len(self.frames),
            line=line,
            t_ms=round(sim.now, 3),
            event=f["event"],
            narration=f["narration"],
            source=f["source"],
            segment=view,
            call=dict(f["call"]) if f["call"] is not None else None,
            state=sim.rfc_state(self.sim.ep),
        )
        self.frames.append(frame)
        if self.cur is not None:
            self.cur.frames.append(frame.index)
        call = f["call"]
        if call is not None and f["event"] in ("call", "return"):
            self.call_result(call["call"], call["result"], f["source"])

    def call_result(self, call: str, result: str, source: SourceRef | None) -> None:
        from app.sim.tcp.packetdrill.syscalls import finish

        p = next((q for q in self.pending if q.call == call), None)
        if p is None:
            return
        if result == "blocked":
            if self.fds.get(p.fd, Fd("conn")).nonblock:
                self.sim.ep.blocked = None
                result = "EAGAIN"
            else:
                return
        self.pending.remove(p)
        p.res.source = p.res.source or source
        finish(self, p, result)

    # --- the run -----------------------------------------------------------------------------
    def run(self) -> Result:
        from app.sim.tcp.packetdrill.syscalls import syscall

        try:
            for ev in self.script.events:
                self.event(ev, syscall)
            self.cur = None
            self.drain_pending()
        except RunLimit:
            raise RunLimitError(
                msg(
                    "the script needs more than {n} model events (the run limit)",
                    n=self.sim.max_events,
                )
            ) from None
        return Result(
            verdict=self.verdict(),
            lines=tuple(self.lines),
            frames=tuple(self.frames),
            script=self.script,
            local=self.local,
            tolerance_us=self.tol_us,
            events=self.sim.events,
        )

    def event(self, ev: Event, syscall: Any) -> None:
        self.check_polls()  # a waiting poll's timeout may have passed
        res = LineResult(line=ev.line, kind=event_kind(ev))
        self.lines.append(res)
        self.cur = res
        if isinstance(ev, Comment | Option | Shell):
            res.status = "comment"
            if isinstance(ev, Shell):
                res.got = self.knobs.applied(ev)
                if ev.offloads:
                    res.got = {
                        **res.got,
                        "offloads": [offload_text(f, on) for f, on in ev.offloads],
                    }
            elif isinstance(ev, Option):
                res.got = {"option": ev.name, "value": ev.value}
            return
        if isinstance(ev, Unsupported):
            res.status = "unsupported"
            res.reasons.append(msg("not supported: {what}", what=ev.construct))
            res.expected = {"construct": ev.construct}
            if ev.time is not None and ev.time.kind != "any":
                base = self.last_ms if ev.time.kind == "rel" else 0.0
                self.last_ms = base + ev.time.us / 1000
                self.sim.advance(self.last_ms)  # packetdrill runs the block at its time
            return
        t = self.when(ev)
        if isinstance(ev, InfoAssert):
            self.sim.advance(t if t is not None else self.sim.now)
            check_info(self, ev, res)
        elif isinstance(ev, Packet) and ev.direction == ">":
            self.expect_packet(ev, res, t)
        elif isinstance(ev, Packet):
            self.inject(ev, res, t)
        else:
            self.sim.advance(t if t is not None else self.sim.now)
            syscall(self, ev, res, t if t is not None else self.sim.now)

    def when(self, ev: Packet | Syscall | InfoAssert) -> float | None:
        """The event's script time in ms (None for ``*``); moves the previous-event time."""
        tm = ev.time
        if tm.kind == "any":
            return None
        base = self.last_ms if tm.kind == "rel" else 0.0
        t = base + tm.us / 1000
        self.last_ms = t
        return t

    def range_end(self, p: Packet, start: float | None) -> float | None:
        """The last time a packet may be sent: its range's end (``a~b``), else its time."""
        if start is None or p.time.end_us is None:
            return start
        base = start - p.time.us / 1000 if p.time.kind == "rel" else 0.0
        return base + p.time.end_us / 1000

    def end_time(self, ev: Syscall, start: float) -> float:
        tm = ev.time
        if tm.end_us is None:
            return start
        base = start - tm.us / 1000 if tm.kind == "rel" else 0.0
        return base + tm.end_us / 1000

    def inject(self, p: Packet, res: LineResult, t: float | None) -> None:
        now = t if t is not None else self.sim.now
        self.sim.advance(now)
        self.sim.seg_ids += 1
        seg = M.inbound_segment(
            p,
            seg_id=self.sim.seg_ids,
            local=self.local,
            peer=self.sim.ep.peer,
            local_isn=self.local_isn,
            wscale=self.peer_wscale,
            now=now,
        )
        res.expected = M.packet_view(p, now)
        res.got = {"injected": True}
        res.t_ms = round(now, 3)
        self.sim.inject(seg)
        if t is None:
            self.last_ms = self.sim.now

    def expect_packet(self, p: Packet, res: LineResult, t: float | None) -> None:
        res.expected = M.packet_view(p, t)
        end = self.range_end(p, t)
        limit = (end + self.tol) if end is not None else MAX_SIM_MS
        sim = self.sim
        while not sim.outbox and (nt := sim.next_time()) is not None and nt <= limit:
            sim.step_one()
        if not sim.outbox:
            sim.advance(limit if t is not None else sim.now, inclusive=True)
            res.fail("packet", msg("the model sent no packet by {t} ms", t=round(limit, 3)))
            return
        sent = self.gso(sim.outbox.popleft(), p)
        self.compare(p, sent, res, t)

    def gso(self, first: Sent, p: Packet) -> Sent:
        """packetdrill's tun device takes GSO packets: a burst the kernel hands down as one
        TSO skb is one packet there. The model sends MSS-sized segments, so when the script
        expects more bytes than the first segment holds, the segments that follow it back to
        back (same instant, contiguous, data only) are joined up to the expected end."""
        seg = first.seg
        want_end = p.end + self.local_isn
        if not self.tso or not seg.length or seg.syn or seg.rst or seg.seq + seg.length >= want_end:
            return first
        joined, last = [first], first
        box = self.sim.outbox
        while box:
            nxt = box[0]
            s = nxt.seg
            end = last.seg.seq + last.seg.length
            if s.seq != end or not s.length or s.syn or s.rst or abs(nxt.t_ms - first.t_ms) > 1e-9:
                break
            if s.seq + s.length > want_end or last.seg.fin:
                break
            joined.append(box.popleft())
            last = nxt
        if len(joined) == 1:
            return first
        total = sum(x.seg.length for x in joined)
        extra: dict[str, Any] = {}
        if M.MODEL_HAS_OPTIONS:  # the model's Seg takes options once it writes them
            extra["options"] = M.model_options(last.seg) or ()
        merged = Seg(
            id=seg.id,
            src=seg.src,
            dst=seg.dst,
            flags=last.seg.flags,
            seq=seg.seq,
            ack=last.seg.ack,
            length=total,
            window=last.seg.window,
            kind=seg.kind,
            sent_ms=first.t_ms,
            **extra,
        )
        merged.psh = last.seg.psh  # packetdrill's aggregate takes the last packet's header
        return Sent(merged, first.t_ms, first.source)

    def compare(self, p: Packet, sent: Sent, res: LineResult, t: float | None) -> None:
        seg = sent.seg
        got = M.outbound_view(seg, sent.psh, sent.t_ms, self.local_isn)
        res.got = got
        res.source = sent.source
        res.t_ms = got["t_ms"]
        if t is None or p.time.end_us is not None:
            self.last_ms = sent.t_ms  # after * or a~b, the next +t counts from the packet
        check_packet(
            p,
            got,
            M.model_options(seg),
            res,
            sent_ms=sent.t_ms,
            t=t,
            end=self.range_end(p, t),
            tol=self.tol,
            local_isn=self.local_isn,
        )

    def drain_pending(self) -> None:
        """After the last line: let blocked calls and polls return within their time, then
        fail the ones still waiting."""
        if self.pending or self.polls:
            waits = [p.expect_ms for p in self.pending] + [p.expect_ms for p in self.polls]
            last = max(waits) + self.tol
            while (
                (self.pending or self.polls)
                and (nt := self.sim.next_time()) is not None
                and nt <= last
            ):
                self.sim.step_one()
            self.sim.advance(last, inclusive=True)
            self.check_polls()
        for p in list(self.pending):
            p.res.fail("return", msg("the call never returned (it is still blocked)"))
        for pp in self.polls:
            pp.res.fail("return", msg("the call never returned (it is still blocked)"))
        self.pending.clear()
        self.polls.clear()

    def verdict(self) -> Verdict:
        return verdict_of(self.lines)


def tso_on(script: Script) -> bool:
    """Whether the tun device keeps TSO: the last ``ethtool -K … tso on|off`` of the
    script's shell lines (they apply from the start, as sysctls do), else on."""
    on = True
    for ev in script.events:
        if isinstance(ev, Shell):
            for feat, value in ev.offloads:
                if feat == "tso":
                    on = value
    return on


def offload_text(feat: str, on: bool) -> str:
    return f"{feat} {'on' if on else 'off'}"


def verdict_of(lines: list[LineResult]) -> Verdict:
    """The first line that failed, or "every line matches"."""
    for r in lines:
        if r.status in ("mismatch", "unsupported"):
            return Verdict(passed=False, line=r.line, reason=r.reasons[0])
    return Verdict(passed=True, line=None, reason=msg("every line matches"))


def check_packet(
    p: Packet,
    got: dict[str, Any],
    got_options: tuple[TcpOption, ...] | None,
    res: LineResult,
    *,
    sent_ms: float,
    t: float | None,
    end: float | None,
    tol: float,
    local_isn: int,
) -> None:
    """Compare a sent packet (``got``: the view of :func:`model.outbound_view`, in the
    script's numbers, sent at ``sent_ms``) with the script's expectation ``p`` at script time ``t`` (ms; None for
    ``*``), field by field, failing ``res`` for each difference. Shared by the model's runner
    and the real-kernel runner, so both judge a packet the same way."""
    want = M.flag_names(p.flags)
    have = M.flag_names(got["flags"])
    if want != have:
        res.fail("flags", msg("flags {got}, expected {want}", got=got["flags"], want=p.flags))
    if got["seq"] != p.seq:
        res.fail("seq", msg("seq {got}, expected {want}", got=got["seq"], want=p.seq))
    if got["len"] != p.length:
        res.fail("len", msg("{got} bytes, expected {want}", got=got["len"], want=p.length))
    if p.ack is not None and got["ack"] != p.ack:
        res.fail("ack", msg("ack {got}, expected {want}", got=got["ack"], want=p.ack))
    if p.win is not None and got["win"] != p.win:
        res.fail("win", msg("window {got}, expected {want}", got=got["win"], want=p.win))
    why = options_diff(p.options, got_options, local_isn)
    if why is not None:
        res.fail("options", why)
    late = end is not None and sent_ms > end + tol + 1e-9
    if t is not None and (sent_ms < t - tol - 1e-9 or late):
        res.fail(
            "time",
            msg(
                "sent at {got} ms, expected {want} ms (tolerance {tol} ms)",
                got=round(sent_ms, 3),
                want=round(t, 3),
                tol=tol,
            ),
        )


def options_diff(
    want: tuple[TcpOption, ...] | None, got: tuple[TcpOption, ...] | None, local_isn: int
) -> Message | None:
    """Why the model's options differ from the script's, or None. ``<...>`` (None) matches
    anything; TS values are compared by presence (packetdrill rebases them on the kernel's
    clock)."""
    if want is None:
        return None
    if got is None:
        return msg("the model sends no options yet") if want else None
    got = M.shift_sack(got, -M.REMOTE_BASE)
    if not want and got:
        return msg("unexpected options {got}", got=",".join(o.text() for o in got))
    kinds_w = [o.kind for o in want]
    kinds_g = [o.kind for o in got]
    if kinds_w != kinds_g:
        return msg(
            "options {got}, expected {want}",
            got=",".join(o.text() for o in got) or "-",
            want=",".join(o.text() for o in want),
        )
    for w, g in zip(want, got, strict=True):
        if w.kind != "TS" and w.values != g.values:
            return msg("option {got}, expected {want}", got=g.text(), want=w.text())
    return None


def check_times(script: Script) -> None:
    """Refuse a script whose times run past :data:`MAX_SIM_MS` before running it."""
    last = 0.0
    for ev in script.events:
        if not isinstance(ev, Packet | Syscall) or ev.time.kind == "any":
            continue
        t = (last if ev.time.kind == "rel" else 0.0) + ev.time.us / 1000
        end = t if ev.time.end_us is None else t - ev.time.us / 1000 + ev.time.end_us / 1000
        last = t
        if max(t, end) > MAX_SIM_MS:
            raise RunLimitError(
                msg(
                    "line {line} is at {s} s of simulated time; the run limit is {limit} s",
                    line=ev.line,
                    s=round(max(t, end) / 1000, 3),
                    limit=int(MAX_SIM_MS / 1000),
                )
            )


# TCP_INFO fields an assertion may check, read from the model's socket as tcp_get_info
# (net/ipv4/tcp.c, v6.4 lines 3854-3911; app.sim.tcp.packetdrill.tcpinfo) fills them for a
# connection: tcp_snd_cwnd(tp) and tp->snd_ssthresh in segments, icsk_ca_state as enum
# tcp_ca_state, tp->packets_out, sacked_out, lost_out, retrans_out and reordering
INFO_FIELDS: dict[str, Callable[[Sock], int]] = {
    "tcpi_snd_cwnd": lambda sk: sk.cwnd,
    "tcpi_snd_ssthresh": lambda sk: sk.ssthresh,
    "tcpi_ca_state": lambda sk: CA_STATES["TCP_CA_" + sk.ca_state],
    "tcpi_unacked": lambda sk: sk.packets_out,
    "tcpi_sacked": sacked_out,
    "tcpi_lost": lost_out,
    "tcpi_retrans": retrans_out,
    "tcpi_reordering": lambda sk: sk.reordering,
}
_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
}


def check_info(r: Runner, ev: InfoAssert, res: LineResult) -> None:
    """``%{ assert tcpi_X OP N }%`` (one or several): the fields of the model's connection now."""
    sk = r.sim.ep.fd if isinstance(r.sim.ep.fd, Sock) else r.sim.ep.ehash
    values = None
    if isinstance(sk, Sock):
        values = {c.field: INFO_FIELDS[c.field](sk) for c in ev.checks}
    judge_info(ev, res, values, r.sim.now)


def judge_info(ev: InfoAssert, res: LineResult, values: dict[str, int] | None, at: float) -> None:
    """Compare TCP_INFO fields (the model's or the kernel's) with every assertion of the
    line: each one that does not hold is a difference."""
    res.t_ms = round(at, 3)
    res.expected = {
        "asserts": [{"field": c.field, "op": c.op, "value": c.value} for c in ev.checks]
    }
    if values is None:
        res.fail("field", msg("no connection to read {field} from", field=ev.checks[0].field))
        return
    res.got = {"values": values}
    for c in ev.checks:
        if not _COMPARE[c.op](values[c.field], c.value):
            res.fail(
                "value",
                msg(
                    "{field} is {got}, expected {op} {want}",
                    field=c.field,
                    got=values[c.field],
                    op=c.op,
                    want=c.value,
                ),
            )


def event_kind(ev: Event) -> str:
    names = {
        Comment: "comment",
        Option: "option",
        Shell: "shell",
        Syscall: "syscall",
        InfoAssert: "assert",
    }
    if isinstance(ev, Packet):
        return "packet"
    if isinstance(ev, Unsupported):
        return "unsupported"
    return names.get(type(ev), "comment")


__all__ = [
    "LineResult",
    "check_packet",
    "judge_info",
    "Result",
    "RunFrame",
    "RunLimitError",
    "Verdict",
    "run",
]
