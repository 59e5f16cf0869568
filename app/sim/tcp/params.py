"""Parameters of a TCP run: a script of socket calls per endpoint, network events, and a few
knobs (RTT, MSS, receive buffer, sysctls). ``parse`` validates JSON-shaped input and reports
every problem at once; ``dump`` gives it back (``parse(dump(p)) == p``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.sim.core.errors import ParamError, ParamIssue
from app.sim.core.i18n import Message, msg
from app.sim.core.tcp import (
    TCP_FIN_TIMEOUT_S,
    TCP_KEEPALIVE_INTVL_S,
    TCP_KEEPALIVE_PROBES,
    TCP_KEEPALIVE_TIME_S,
    TCP_SYN_RETRIES,
    TCP_SYNACK_RETRIES,
)

ENDPOINTS = ("client", "server")
CALLS = ("listen", "connect", "accept", "send", "recv", "shutdown", "close", "abort")
HOWS = ("SHUT_RD", "SHUT_WR", "SHUT_RDWR")
NET_KINDS = ("drop", "delay", "duplicate", "reorder")
MAX_EVENTS = 1000
MAX_UNTIL_MS = 3_600_000  # ms: one hour
MAX_BYTES = 10_000_000
# Ranges parse checks (the editor's inputs take the same ones)
RTT_MS_RANGE: tuple[float, float] = (0.01, 10_000)
MSS_RANGE = (64, 65483)
MAX_RCVBUF = 65535 << 14  # the largest window TCP_MAX_WSCALE can express
MAX_MEM = 2**31 - 1  # tcp_rmem entries (int)
MAX_ISS = 2**31 - 1
MAX_LISTEN_QUEUE = 4096  # listen's backlog, queued and half_open
MAX_NTH = 1_000_000  # a network event's segment number and drop count
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One socket call an endpoint's program makes at ``t_ms`` (or later, if the previous call
    of the same endpoint is still blocked)."""

    t_ms: float
    endpoint: str
    call: str
    bytes: int | None = None  # send: how many; recv: at most how many (None = all queued)
    how: str | None = None  # shutdown
    backlog: int | None = None  # listen
    queued: int = 0  # listen: other clients' connections already waiting in the accept queue
    half_open: int = 0  # listen: spoofed half-open requests already in the SYN queue
    nonblock: bool = False  # connect: O_NONBLOCK (returns EINPROGRESS)
    keepalive: bool = False  # connect/accept: SO_KEEPALIVE
    nodelay: bool = False  # connect/accept: TCP_NODELAY (set by the packetdrill runner)


@dataclass(frozen=True, slots=True, kw_only=True)
class NetEvent:
    """What the network does to the ``nth`` segment ``src`` sends (counted from 1)."""

    kind: str  # drop | delay | duplicate | reorder
    src: str
    nth: int
    count: int = 1  # drop: this many consecutive segments
    ms: float = 0.0  # delay: extra one-way delay


@dataclass(frozen=True, slots=True, kw_only=True)
class Sysctls:
    tcp_syn_retries: int = TCP_SYN_RETRIES
    tcp_synack_retries: int = TCP_SYNACK_RETRIES
    tcp_fin_timeout_s: float = TCP_FIN_TIMEOUT_S
    tcp_keepalive_time_s: float = TCP_KEEPALIVE_TIME_S
    tcp_keepalive_intvl_s: float = TCP_KEEPALIVE_INTVL_S
    tcp_keepalive_probes: int = TCP_KEEPALIVE_PROBES
    tcp_syncookies: int = 1
    tcp_timestamps: int = 1
    tcp_abort_on_overflow: bool = False
    tcp_sack: int = 1
    tcp_window_scaling: int = 1
    tcp_rmem: tuple[int, int, int] = (4096, 131072, 6291456)
    # the send buffer (app.sim.tcp.sndbuf): sk_sndbuf starts at tcp_wmem[1] (tcp_init_sock)
    # and tcp_sndbuf_expand grows it up to tcp_wmem[2]; tcp_notsent_lowat bounds the unsent
    # bytes (tcp_stream_memory_free). 6.4's defaults (tcp_init, tcp_sk_init)
    tcp_wmem: tuple[int, int, int] = (4096, 16384, 4194304)
    tcp_notsent_lowat: int = 4294967295
    tcp_retries2: int = 15
    tcp_early_retrans: int = 3
    tcp_ecn: int = 2
    # F-RTO after an RTO (tcp_enter_loss; any non-zero value turns it on); 6.4's default
    # (tcp_sk_init, net/ipv4/tcp_ipv4.c:3228)
    tcp_frto: int = 2
    # tcp_cwnd_restart after an idle RTO (tcp_slow_start_after_idle_check) and the least
    # segments per TSO packet (tcp_tso_autosize); 6.4's defaults (tcp_sk_init)
    tcp_slow_start_after_idle: int = 1
    tcp_min_tso_segs: int = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpParams:
    script: tuple[Call, ...]
    network: tuple[NetEvent, ...] = ()
    until_ms: float = 200_000.0
    rtt_ms: float = 20.0
    mss: int = 1460  # advmss: the MTU (1500) less 40 bytes of IPv4 and TCP headers
    rcvbuf: int | None = None  # SO_RCVBUF's receive space; None: tcp_rmem[1]'s
    sndbuf: int | None = None  # SO_SNDBUF's value (doubled by the kernel); None: tcp_wmem's
    client_iss: int = 1000
    server_iss: int = 5000
    sysctl: Sysctls = field(default_factory=Sysctls)


SYSCTL_INT_LIMITS: dict[str, tuple[int, int]] = {
    "tcp_syn_retries": (1, 127),
    "tcp_synack_retries": (1, 255),
    "tcp_keepalive_probes": (1, 127),
    "tcp_syncookies": (0, 2),
    "tcp_timestamps": (0, 2),
    "tcp_sack": (0, 1),
    "tcp_window_scaling": (0, 1),
    "tcp_retries2": (0, 255),
    "tcp_early_retrans": (0, 4),
    "tcp_ecn": (0, 2),
    "tcp_frto": (0, 255),  # a u8 with no bounds (proc_dou8vec_minmax, sysctl_net_ipv4.c:1215)
    "tcp_slow_start_after_idle": (0, 1),
    "tcp_min_tso_segs": (1, 65535),  # SYSCTL_ONE to gso_max_segs
    "tcp_notsent_lowat": (0, 4294967295),
}
SYSCTL_TRIPLES = frozenset({"tcp_rmem", "tcp_wmem"})  # min, default, max bytes
# Not knobs, because nothing the model does depends on them: tcp_retries1 (it only makes the
# kernel re-check the route). A packetdrill script that sets them is told the model has no knob for them.
SYSCTL_FLOAT_LIMITS: dict[str, tuple[float, float]] = {
    "tcp_fin_timeout_s": (1, 120),
    "tcp_keepalive_time_s": (1, 32767),
    "tcp_keepalive_intvl_s": (1, 32767),
}


def _num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _short(v: object) -> str:
    s = repr(v)
    return s if len(s) <= 24 else s[:21] + "..."


def _int_range(lo: int, hi: int) -> Message:
    return msg("expected an integer {lo} to {hi}", lo=lo, hi=hi)


def _unknown_endpoint(v: object) -> Message:
    return msg("unknown endpoint {value} (client or server)", value=_short(v))


def _takes_no(call: str, key: str) -> Message:
    """``close takes no how``: a field this call does not have (both are identifiers)."""
    return msg("{call} takes no {key}", call=call, key=key)


Bad = Callable[[tuple[str | int, ...], Message], None]
"""Records one problem at a location (``parse`` collects them all)."""


def parse(raw: Any) -> TcpParams:
    """Validate ``raw``; raise ``ParamError`` listing every problem."""
    issues: list[ParamIssue] = []

    def bad(loc: tuple[str | int, ...], text: Message) -> None:
        issues.append(ParamIssue(loc=loc, msg=text))

    if not isinstance(raw, dict):
        raise ParamError.single((), msg("expected an object with a script"))
    known = {"script", "network", "until_ms", "rtt_ms", "mss", "rcvbuf", "sndbuf", "client_iss"}
    known |= {"server_iss", "sysctl"}
    for k in raw:
        if k not in known:
            bad((str(k),), msg("unknown field"))
    calls = _parse_list(
        raw.get("script"), "script", msg("expected a list of calls"), _parse_call, bad
    )
    events = _parse_list(
        raw.get("network", []), "network", msg("expected a list of network events"), _parse_net, bad
    )
    until = raw.get("until_ms", 200_000.0)
    if not _num(until) or until <= 0:
        bad(("until_ms",), msg("expected a positive number of milliseconds"))
        until = 1.0
    elif until > MAX_UNTIL_MS:
        bad(("until_ms",), msg("over 1 hour ({ms} ms)", ms=int(MAX_UNTIL_MS)))
    rtt = raw.get("rtt_ms", 20.0)
    lo_rtt, hi_rtt = RTT_MS_RANGE
    if not _num(rtt) or not lo_rtt <= rtt <= hi_rtt:
        bad(("rtt_ms",), msg("expected {lo:g} to {hi:g} ms", lo=lo_rtt, hi=hi_rtt))
        rtt = 20.0
    mss = raw.get("mss", 1460)
    if not _int(mss) or not MSS_RANGE[0] <= mss <= MSS_RANGE[1]:
        bad(("mss",), _int_range(*MSS_RANGE))
        mss = 1460
    rcvbuf = raw.get("rcvbuf")
    if rcvbuf is not None and (not _int(rcvbuf) or not 0 < rcvbuf <= MAX_RCVBUF):
        bad(("rcvbuf",), _int_range(1, MAX_RCVBUF))
        rcvbuf = None
    sndbuf = raw.get("sndbuf")
    if sndbuf is not None and (not _int(sndbuf) or not 0 < sndbuf <= MAX_MEM):
        bad(("sndbuf",), _int_range(1, MAX_MEM))
        sndbuf = None
    isss: dict[str, int] = {}
    for key, default in (("client_iss", 1000), ("server_iss", 5000)):
        v = raw.get(key, default)
        if not _int(v) or not 0 <= v <= MAX_ISS:
            bad((key,), _int_range(0, MAX_ISS))
            v = default
        isss[key] = v
    sysctl = _parse_sysctl(raw.get("sysctl", {}), bad)
    if issues:
        raise ParamError(issues)
    return TcpParams(
        script=tuple(calls),
        network=tuple(events),
        until_ms=float(until),
        rtt_ms=float(rtt),
        mss=mss,
        rcvbuf=rcvbuf,
        sndbuf=sndbuf,
        client_iss=isss["client_iss"],
        server_iss=isss["server_iss"],
        sysctl=sysctl,
    )


def _parse_list(
    items: object,
    key: str,
    expected: Message,
    parse_one: Callable[[object, tuple[str | int, ...], Bad], T | None],
    bad: Bad,
) -> list[T]:
    """The valid items of the list ``raw[key]`` (at most ``MAX_EVENTS``)."""
    if not isinstance(items, list):
        bad((key,), expected)
        return []
    if len(items) > MAX_EVENTS:
        bad((key,), msg("more than {max} events ({n})", max=MAX_EVENTS, n=len(items)))
        return []
    out: list[T] = []
    for i, e in enumerate(items):
        item = parse_one(e, (key, i), bad)
        if item is not None:
            out.append(item)
    return out


_CALL_FIELDS = frozenset(
    (
        *("t_ms", "endpoint", "call", "bytes", "how"),
        *("backlog", "queued", "half_open", "nonblock", "keepalive"),
    )
)
_LISTEN_FIELDS = ("backlog", "queued", "half_open")  # each an integer 0 to MAX_LISTEN_QUEUE
_FLAG_CALLS = {"nonblock": ("connect",), "keepalive": ("connect", "accept")}


def _parse_call(e: object, loc: tuple[str | int, ...], bad: Bad) -> Call | None:
    if not isinstance(e, dict):
        bad(loc, msg("expected an object"))
        return None
    d: dict[str, Any] = e
    ok = True
    for k in d:
        if k not in _CALL_FIELDS:
            bad((*loc, str(k)), msg("unknown field"))
            ok = False
    t: Any = d.get("t_ms")
    ok &= _check_time(t, loc, bad)
    ep: Any = d.get("endpoint")
    if ep not in ENDPOINTS:
        bad((*loc, "endpoint"), _unknown_endpoint(ep))
        ok = False
    call: Any = d.get("call")
    if call not in CALLS:
        bad((*loc, "call"), msg("unknown call {value}", value=_short(call)))
        return None
    ok &= _check_bytes(call, d.get("bytes"), loc, bad)
    how: Any = d.get("how")
    if call == "shutdown" and how not in HOWS:
        bad((*loc, "how"), msg("expected {a}, {b} or {c}", a=HOWS[0], b=HOWS[1], c=HOWS[2]))
        ok = False
    elif call != "shutdown" and how is not None:
        bad((*loc, "how"), _takes_no(call, "how"))
        ok = False
    for key in _LISTEN_FIELDS:
        if key not in d:
            continue
        if call != "listen":
            bad((*loc, key), msg("only listen takes {key}", key=key))
            ok = False
        elif not _int(d[key]) or not 0 <= d[key] <= MAX_LISTEN_QUEUE:
            bad((*loc, key), _int_range(0, MAX_LISTEN_QUEUE))
            ok = False
    flags: dict[str, bool] = {}
    for key, calls_ok in _FLAG_CALLS.items():
        v: Any = d.get(key, False)
        if not isinstance(v, bool):
            bad((*loc, key), msg("expected true or false"))
            ok = False
            v = False
        elif v and call not in calls_ok:
            bad((*loc, key), _takes_no(call, key))
            ok = False
        flags[key] = v
    if not ok:
        return None
    return Call(
        t_ms=float(t),
        endpoint=str(ep),
        call=str(call),
        bytes=d.get("bytes"),
        how=how,
        backlog=d.get("backlog"),
        queued=d.get("queued", 0) or 0,
        half_open=d.get("half_open", 0) or 0,
        nonblock=flags["nonblock"],
        keepalive=flags["keepalive"],
    )


def _check_time(t: Any, loc: tuple[str | int, ...], bad: Bad) -> bool:
    if not _num(t):
        bad((*loc, "t_ms"), msg("expected a number of milliseconds"))
    elif t < 0:
        bad((*loc, "t_ms"), msg("negative time"))
    elif t > MAX_UNTIL_MS:
        bad((*loc, "t_ms"), msg("after 1 hour"))
    else:
        return True
    return False


def _check_bytes(call: str, nbytes: Any, loc: tuple[str | int, ...], bad: Bad) -> bool:
    """send needs a byte count, recv may have one (at most), other calls take none."""
    in_range = _int(nbytes) and 1 <= nbytes <= MAX_BYTES
    if call == "send" and not in_range:
        bad((*loc, "bytes"), msg("send needs bytes, 1 to {max}", max=MAX_BYTES))
    elif call == "recv" and nbytes is not None and not in_range:
        bad((*loc, "bytes"), msg("expected 1 to {max}", max=MAX_BYTES))
    elif call not in ("send", "recv") and nbytes is not None:
        bad((*loc, "bytes"), msg("{call} takes no bytes", call=call))
    else:
        return True
    return False


def _parse_net(e: object, loc: tuple[str | int, ...], bad: Bad) -> NetEvent | None:
    if not isinstance(e, dict) or len(e) != 1:
        bad(loc, msg("expected one of {kinds}", kinds=", ".join(NET_KINDS)))
        return None
    kind, body = next(iter(e.items()))
    if kind not in NET_KINDS:
        bad((*loc, str(kind)), msg("unknown network event {value}", value=_short(kind)))
        return None
    if not isinstance(body, dict):
        bad((*loc, kind), msg("expected an object with from and nth"))
        return None
    b: dict[str, Any] = body
    ok = True
    allowed = {"from", "nth"} | ({"count"} if kind == "drop" else set())
    allowed |= {"ms"} if kind == "delay" else set()
    for k in b:
        if k not in allowed:
            bad((*loc, kind, str(k)), msg("unknown field"))
            ok = False
    src: Any = b.get("from")
    if src not in ENDPOINTS:
        bad((*loc, kind, "from"), _unknown_endpoint(src))
        ok = False
    nth: Any = b.get("nth")
    if not _int(nth) or not 1 <= nth <= MAX_NTH:
        bad((*loc, kind, "nth"), msg("expected a segment number from 1"))
        ok = False
    count: Any = b.get("count", 1)
    if not _int(count) or not 1 <= count <= MAX_NTH:
        bad((*loc, kind, "count"), msg("expected a count from 1"))
        ok = False
    ms: Any = b.get("ms", 0.0)
    if kind == "delay" and (not _num(ms) or not 0 < ms <= MAX_UNTIL_MS):
        bad((*loc, kind, "ms"), msg("delay needs ms, above 0 and at most 1 hour"))
        ok = False
    if not ok:
        return None
    return NetEvent(kind=kind, src=str(src), nth=nth, count=count, ms=float(ms))


def _parse_sysctl(raw: object, bad: Bad) -> Sysctls:
    if not isinstance(raw, dict):
        bad(("sysctl",), msg("expected an object"))
        return Sysctls()
    values: dict[str, Any] = {}
    for k, v in raw.items():
        loc: tuple[str | int, ...] = ("sysctl", str(k))
        if k in SYSCTL_INT_LIMITS:
            lo, hi = SYSCTL_INT_LIMITS[k]
            if not _int(v) or not lo <= v <= hi:
                bad(loc, _int_range(lo, hi))
                continue
            values[k] = v
        elif k in SYSCTL_FLOAT_LIMITS:
            flo, fhi = SYSCTL_FLOAT_LIMITS[k]
            if not _num(v) or not flo <= v <= fhi:
                bad(loc, msg("expected {lo:g} to {hi:g} seconds", lo=flo, hi=fhi))
                continue
            values[k] = float(v)
        elif k in SYSCTL_TRIPLES:
            triple = parse_triple(v)
            if triple is None:
                bad(
                    loc,
                    msg(
                        "expected [min, default, max] bytes, 1 to {hi}, in that order",
                        hi=MAX_MEM,
                    ),
                )
                continue
            values[k] = triple
        elif k == "tcp_abort_on_overflow":
            if not isinstance(v, bool):
                bad(loc, msg("expected true or false"))
                continue
            values[k] = v
        else:
            bad(loc, msg("unknown sysctl"))
    return Sysctls(**values)


def parse_triple(v: object) -> tuple[int, int, int] | None:
    """tcp_rmem, tcp_wmem: three byte counts, min <= default <= max."""
    if not isinstance(v, list | tuple) or len(v) != 3:
        return None
    if not all(_int(x) and 1 <= x <= MAX_MEM for x in v):
        return None
    a, b, c = (int(x) for x in v)
    return (a, b, c) if a <= b <= c else None


def dump(p: TcpParams) -> dict[str, Any]:
    """The JSON-shaped form of ``p`` (defaults left out)."""
    script: list[dict[str, Any]] = []
    for c in p.script:
        d: dict[str, Any] = {"t_ms": c.t_ms, "endpoint": c.endpoint, "call": c.call}
        if c.bytes is not None:
            d["bytes"] = c.bytes
        if c.how is not None:
            d["how"] = c.how
        if c.backlog is not None:
            d["backlog"] = c.backlog
        if c.queued:
            d["queued"] = c.queued
        if c.half_open:
            d["half_open"] = c.half_open
        if c.nonblock:
            d["nonblock"] = True
        if c.keepalive:
            d["keepalive"] = True
        script.append(d)
    network: list[dict[str, Any]] = []
    for n in p.network:
        body: dict[str, Any] = {"from": n.src, "nth": n.nth}
        if n.kind == "drop" and n.count != 1:
            body["count"] = n.count
        if n.kind == "delay":
            body["ms"] = n.ms
        network.append({n.kind: body})
    out: dict[str, Any] = {"script": script, "network": network, "until_ms": p.until_ms}
    defaults = TcpParams(script=())
    for key in ("rtt_ms", "mss", "rcvbuf", "sndbuf", "client_iss", "server_iss"):
        if getattr(p, key) != getattr(defaults, key):
            out[key] = getattr(p, key)
    sd = Sysctls()
    sysctl = {
        k: list(v) if isinstance(v := getattr(p.sysctl, k), tuple) else v
        for k in Sysctls.__dataclass_fields__
        if getattr(p.sysctl, k) != getattr(sd, k)
    }
    if sysctl:
        out["sysctl"] = sysctl
    return out
