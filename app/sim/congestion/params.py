"""Parameters of a congestion-control run: a dumbbell with one bottleneck and 1-16 flows.

``parse(raw)`` turns JSON-shaped input into frozen :class:`CwndParams` (or raises
:class:`~app.sim.core.ParamError` naming every bad field); ``dump(params)`` gives the raw form
back, so ``parse(dump(p)) == p``.

Options: ``connect`` ("handshake", the default: a SYN and SYN-ACK before data; or
"established"), the link's ``aqm`` ("droptail", the default; "red"; "red-ecn" = RED with its
``ecn`` flag) with ``red_min_packets``/``red_max_packets``/``red_max_p``, and per flow
``tcp_ecn`` (net.ipv4.tcp_ecn of the sender: 1 asks for ECN) and ``rwnd_bytes`` (a fixed
receive window).

Units follow the API: rates in Mbit/s, delays in ms, durations in s, sizes in bytes, ``cwnd`` in
segments. Every data packet on the wire is ``mss + HEADER_BYTES`` bytes (IPv4 20 + TCP 20 + the
timestamp option 12, as Linux sends by default), so an MSS of 1448 makes 1500-byte packets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from app.sim.congestion.algorithms import ALGORITHMS
from app.sim.core.errors import ParamError
from app.sim.core.i18n import Param, msg
from app.sim.core.validate import Checker, describe

CC_NAMES = tuple(ALGORITHMS)  # the congestion controls a flow may name, from the one list
HEADER_BYTES = 52  # 20 IPv4 + 20 TCP + 12 TCP timestamp option (tcp_options_write)
MAX_FLOWS = 16
MAX_DURATION_S = 600.0
MIN_RATE_MBPS = 0.1
MAX_RATE_MBPS = 10_000.0
MAX_RTT_MS = 10_000.0
MAX_BUFFER_PACKETS = 1_000_000
MAX_SAMPLES = 60_000  # per series: duration_s / sample_ms
MAX_FLOW_SAMPLES = 120_000  # samples × flows: bounds a trace's memory and JSON size
# The largest run one request may ask for: at about 500 k events per second of one core this is
# at most ~5 s of CPU (runs over ~1.5 s become jobs with a progress bar; see app/web/runs.py).
MAX_PACKET_EVENTS = 2_500_000

_LINK_KEYS = (
    "rate_mbps",
    "rtt_ms",
    "buffer_packets",
    "buffer_bytes",
    "buffer_bdp",
    "loss_rate",
    "aqm",
    "red_min_packets",
    "red_max_packets",
    "red_max_p",
)
_FLOW_KEYS = ("cc", "start_s", "rtt_ms", "tcp_ecn", "rwnd_bytes")
_TOP_KEYS = (
    "link",
    "flows",
    "duration_s",
    "mss",
    "seed",
    "sample_ms",
    "comp_sack_nr",
    "connect",
)
AQMS = ("droptail", "red", "red-ecn")  # red-ecn: tc qdisc ... red ... ecn
CONNECTS = ("handshake", "established")  # the first is the default
TCP_ECN_DEFAULT = 2  # net.ipv4.tcp_ecn: 2 = accept ECN when the peer asks, never ask
RED_MAX_P_DEFAULT = 0.02  # tc red's default "probability"
COMP_SACK_NR = 44  # net.ipv4.tcp_comp_sack_nr: the receivers' SACK compression (0: off)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkParams:
    """The bottleneck: rate, base (propagation) RTT, drop-tail buffer and random loss."""

    rate_mbps: float
    rtt_ms: float
    buffer_packets: int | None = None
    buffer_bytes: int | None = None
    buffer_bdp: float | None = None
    loss_rate: float = 0.0
    aqm: str = "droptail"
    red_min_packets: float | None = None
    red_max_packets: float | None = None
    red_max_p: float = RED_MAX_P_DEFAULT


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowParams:
    """One bulk sender: its congestion control, start time and optional own base RTT; its
    ``net.ipv4.tcp_ecn`` (1 asks for ECN in the SYN; the receiver's default 2 accepts) and an
    optional fixed receive window (``rwnd_bytes``, what the receiver advertises)."""

    cc: str
    start_s: float = 0.0
    rtt_ms: float | None = None
    tcp_ecn: int = TCP_ECN_DEFAULT
    rwnd_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CwndParams:
    link: LinkParams
    flows: tuple[FlowParams, ...]
    duration_s: float = 60.0
    mss: int = 1448
    seed: int = 0
    sample_ms: float = 10.0
    comp_sack_nr: int = COMP_SACK_NR
    connect: str = "handshake"

    # Derived values used by the engine and the views (not part of the raw form).
    @property
    def wire_bytes(self) -> int:
        return self.mss + HEADER_BYTES

    @property
    def bdp_packets(self) -> float:
        """Bandwidth-delay product of the link's base RTT, in wire packets."""
        return self.link.rate_mbps * 1e6 * self.link.rtt_ms / 1e3 / (8 * self.wire_bytes)

    @property
    def buffer_limit_packets(self) -> int:
        """Drop-tail limit in packets waiting (the packet being transmitted is not counted)."""
        link = self.link
        if link.buffer_packets is not None:
            return link.buffer_packets
        if link.buffer_bytes is not None:
            return max(1, link.buffer_bytes // self.wire_bytes)
        if link.buffer_bdp is None:
            raise ValueError("the link gives no buffer size")  # parse() never lets this through
        return max(1, round(link.buffer_bdp * self.bdp_packets))

    @property
    def red_thresholds(self) -> tuple[float, float]:
        """RED's min and max thresholds in packets: as given, else a quarter and half of the
        buffer limit (at least 1 and min + 1)."""
        limit = self.buffer_limit_packets
        lo = self.link.red_min_packets
        hi = self.link.red_max_packets
        if lo is None:
            lo = max(1.0, limit / 4)
        if hi is None:
            hi = max(lo + 1, limit / 2)
        return lo, hi

    def flow_rtt_ms(self, i: int) -> float:
        rtt = self.flows[i].rtt_ms
        return self.link.rtt_ms if rtt is None else rtt

    @property
    def estimated_events(self) -> int:
        """Packet events the run can cause: data packets the link can carry plus ~1 ACK per 2,
        each weighted by what an event costs (:attr:`event_weight`)."""
        packets = estimate_packets(self.link.rate_mbps, self.duration_s, self.mss)
        return math.ceil(packets * 1.5 * self.event_weight)

    @property
    def event_weight(self) -> float:
        """What one packet event costs against a Reno/CUBIC one (measured with ``bench/
        cwnd_speed.py`` and 16-flow, 1 ms, lossy runs): BBR paces every packet and updates its
        model on every ACK (≤ 1.4×); beside a RED queue, whose marks it ignores, it keeps the
        queue busy for all flows (≤ 3×). The cost limit and a run's expected time use it."""
        if not any(f.cc == "bbr" for f in self.flows):
            return 1.0
        return 3.0 if self.link.aqm != "droptail" else 1.5


def estimate_packets(rate_mbps: float, duration_s: float, mss: int) -> float:
    return rate_mbps * 1e6 * duration_s / (8 * (mss + HEADER_BYTES))


_LINK_EXAMPLE = '{"rate_mbps": 100, "rtt_ms": 40, "buffer_bdp": 1}'


def parse(raw: Any) -> CwndParams:
    """Validate JSON-shaped parameters; raise ParamError listing every problem found."""
    if isinstance(raw, CwndParams):
        return raw
    c = Checker()
    if not isinstance(raw, Mapping):
        raise ParamError.single(
            (), msg("parameters must be an object; you gave {what}", what=describe(raw))
        )
    c.unknown(raw, _TOP_KEYS, ())

    link = _parse_link(c, raw.get("link"))
    flows = _parse_flows(c, raw.get("flows"), "flows" in raw)
    duration = _number(c, raw, "duration_s", (), 60.0, gt=0, le=MAX_DURATION_S, unit="s")
    mss = c.integer(raw, "mss", (), default=1448, ge=536, le=9000)
    seed = c.integer(raw, "seed", (), default=0, ge=0, le=2**63 - 1)
    sample_ms = _number(c, raw, "sample_ms", (), 10.0, ge=1, le=10_000, unit="ms")
    comp_sack_nr = c.integer(raw, "comp_sack_nr", (), default=COMP_SACK_NR, ge=0, le=255)
    connect = c.choice(raw, "connect", (), CONNECTS)

    if flows:
        for i, f in enumerate(flows):
            if f.start_s >= duration and duration > 0:
                c.add(
                    ("flows", i, "start_s"),
                    msg(
                        "start_s must be before the end of the run ({duration} s); you gave {v}",
                        duration=f"{duration:g}",
                        v=f"{f.start_s:g}",
                    ),
                )
    if not c.issues and flows:
        n = duration / (sample_ms / 1e3)
        limit = min(MAX_SAMPLES, MAX_FLOW_SAMPLES // len(flows))
        if n > limit:
            nums: dict[str, Param] = {
                "sample_ms": f"{sample_ms:g}",
                "n": f"{n:,.0f}",
                "flows": len(flows),
                "limit": f"{limit:,}",
                "min_ms": math.ceil(duration * 1e3 / limit),
            }
            c.add(
                ("sample_ms",),
                (
                    msg(
                        "sample_ms {sample_ms} gives {n} samples per series for each of {flows} "
                        "flows; the limit is {limit}: use sample_ms ≥ {min_ms}",
                        **nums,
                    )
                    if len(flows) > 1
                    else msg(
                        "sample_ms {sample_ms} gives {n} samples per series for each of {flows} "
                        "flow; the limit is {limit}: use sample_ms ≥ {min_ms}",
                        **nums,
                    )
                ),
            )
    if c.issues or link is None or flows is None:
        raise ParamError(c.issues)

    params = CwndParams(
        link=link,
        flows=tuple(flows),
        duration_s=duration,
        mss=mss,
        seed=seed,
        sample_ms=sample_ms,
        connect=connect,
    )
    if comp_sack_nr != COMP_SACK_NR:
        params = replace(params, comp_sack_nr=comp_sack_nr)
    _check_buffer_size(c, params)
    _check_rwnd(c, params)
    _check_budget(c, params)
    if c.issues:
        raise ParamError(c.issues)
    return params


def _number(
    c: Checker,
    raw: Mapping[str, Any],
    key: str,
    loc: tuple[str | int, ...],
    default: float,
    **kw: Any,
) -> float:
    """``c.number`` for a field with a default: the value, or the default when it is absent or
    not a number (the checker has then recorded the issue)."""
    value = c.number(raw, key, loc, default=default, **kw)
    return default if value is None else value


def _parse_link(c: Checker, raw: Any) -> LinkParams | None:
    loc: tuple[str | int, ...] = ("link",)
    if raw is None:
        c.add(loc, msg("link is required, e.g. {example}", example=_LINK_EXAMPLE))
        return None
    if not isinstance(raw, Mapping):
        c.add(loc, msg("link must be an object; you gave {what}", what=describe(raw)))
        return None
    c.unknown(raw, _LINK_KEYS, loc)
    before = len(c.issues)
    rate = c.number(raw, "rate_mbps", loc, required=True, gt=0, unit="Mbit/s")
    if rate is not None and rate > 0 and not MIN_RATE_MBPS <= rate <= MAX_RATE_MBPS:
        c.add(
            (*loc, "rate_mbps"),
            msg(
                "rate_mbps must be between {lo} and {hi} Mbit/s (0.1 Mbit/s – 10 Gbit/s); "
                "you gave {v}",
                lo=f"{MIN_RATE_MBPS:g}",
                hi=f"{MAX_RATE_MBPS:g}",
                v=f"{rate:g}",
            ),
        )
    rtt = c.number(raw, "rtt_ms", loc, required=True, gt=0, le=MAX_RTT_MS, unit="ms")
    loss = c.number(raw, "loss_rate", loc, default=0.0, ge=0, le=0.5)
    aqm = c.choice(raw, "aqm", loc, AQMS)
    red_min = c.number(raw, "red_min_packets", loc, default=None, ge=0, le=MAX_BUFFER_PACKETS)
    red_max = c.number(raw, "red_max_packets", loc, default=None, gt=0, le=MAX_BUFFER_PACKETS)
    max_p = c.number(raw, "red_max_p", loc, default=RED_MAX_P_DEFAULT, gt=0, le=1)
    if red_min is not None and red_max is not None and red_max <= red_min:
        c.add(
            (*loc, "red_max_packets"),
            msg(
                "red_max_packets must be above red_min_packets ({lo}); you gave {v}",
                lo=f"{red_min:g}",
                v=f"{red_max:g}",
            ),
        )
    given = [k for k in ("buffer_packets", "buffer_bytes", "buffer_bdp") if raw.get(k) is not None]
    bp = bb = None
    bd: float | None = None
    if len(given) != 1:
        what = msg("none") if not given else ", ".join(given)
        c.add(
            (*loc, "buffer_packets"),
            msg(
                "give exactly one of buffer_packets, buffer_bytes or buffer_bdp; you gave {what}",
                what=what,
            ),
        )
    elif given[0] == "buffer_packets":
        bp = c.integer(raw, "buffer_packets", loc, default=0, ge=1, le=MAX_BUFFER_PACKETS)
    elif given[0] == "buffer_bytes":
        bb = c.integer(raw, "buffer_bytes", loc, default=0, ge=1, le=MAX_BUFFER_PACKETS * 9052)
    else:
        bd = c.number(raw, "buffer_bdp", loc, gt=0, le=1000)
    if len(c.issues) > before or rate is None or rtt is None:
        return None
    return LinkParams(
        rate_mbps=rate,
        rtt_ms=rtt,
        buffer_packets=bp,
        buffer_bytes=bb,
        buffer_bdp=bd,
        loss_rate=loss or 0.0,
        aqm=aqm,
        red_min_packets=red_min,
        red_max_packets=red_max,
        red_max_p=RED_MAX_P_DEFAULT if max_p is None else max_p,
    )


def _parse_flows(c: Checker, raw: Any, present: bool) -> list[FlowParams] | None:
    if not present or raw is None:
        c.add(
            ("flows",),
            msg(
                "flows is required: a list of 1 to {max} flows such as {example}",
                max=MAX_FLOWS,
                example='{"cc": "cubic"}',
            ),
        )
        return None
    if not isinstance(raw, (list, tuple)):
        c.add(("flows",), msg("flows must be a list; you gave {what}", what=describe(raw)))
        return None
    if not raw:
        c.add(("flows",), msg("flows must list at least one flow; you gave none"))
        return None
    if len(raw) > MAX_FLOWS:
        c.add(
            ("flows",),
            msg(
                "at most {max} flows share the bottleneck; you gave {n}", max=MAX_FLOWS, n=len(raw)
            ),
        )
        return None
    out: list[FlowParams] = []
    ok = True
    for i, f in enumerate(raw):
        loc: tuple[str | int, ...] = ("flows", i)
        if not isinstance(f, Mapping):
            c.add(loc, msg("each flow must be an object; you gave {what}", what=describe(f)))
            ok = False
            continue
        before = len(c.issues)
        c.unknown(f, _FLOW_KEYS, loc)
        cc = f.get("cc")
        if cc is None:
            c.add(
                (*loc, "cc"),
                msg("cc is required; choose one of {names}", names=", ".join(CC_NAMES)),
            )
        elif not isinstance(cc, str) or cc.lower() not in CC_NAMES:
            c.add(
                (*loc, "cc"),
                msg(
                    "unknown congestion control; choose one of {names}; you gave {what}",
                    names=", ".join(CC_NAMES),
                    what=describe(cc),
                ),
            )
        start = _number(c, f, "start_s", loc, 0.0, ge=0, unit="s")
        rtt = c.number(f, "rtt_ms", loc, default=None, gt=0, le=MAX_RTT_MS, unit="ms")
        ecn = c.integer(f, "tcp_ecn", loc, default=TCP_ECN_DEFAULT, ge=0, le=2)
        rwnd: int | None = None
        if f.get("rwnd_bytes") is not None:
            rwnd = c.integer(f, "rwnd_bytes", loc, default=0, ge=1, le=1 << 30)
        if len(c.issues) > before or not isinstance(cc, str):  # a bad cc is an issue already
            ok = False
            continue
        out.append(
            FlowParams(cc=cc.lower(), start_s=start, rtt_ms=rtt, tcp_ecn=ecn, rwnd_bytes=rwnd)
        )
    return out if ok else None


def _check_rwnd(c: Checker, p: CwndParams) -> None:
    for i, f in enumerate(p.flows):
        if f.rwnd_bytes is not None and f.rwnd_bytes < p.mss:
            c.add(
                ("flows", i, "rwnd_bytes"),
                msg(
                    "rwnd_bytes must hold at least one {mss}-byte segment; you gave {v}",
                    mss=p.mss,
                    v=f.rwnd_bytes,
                ),
            )


def _check_buffer_size(c: Checker, p: CwndParams) -> None:
    if p.link.buffer_bytes is not None and p.link.buffer_bytes < p.wire_bytes:
        c.add(
            ("link", "buffer_bytes"),
            msg(
                "buffer_bytes must hold at least one {size}-byte packet; you gave {v}",
                size=p.wire_bytes,
                v=p.link.buffer_bytes,
            ),
        )
    elif p.buffer_limit_packets > MAX_BUFFER_PACKETS:
        c.add(
            ("link", "buffer_bdp" if p.link.buffer_bdp is not None else "buffer_bytes"),
            msg(
                "the buffer would hold {n} packets; the limit is {limit}",
                n=f"{p.buffer_limit_packets:,}",
                limit=f"{MAX_BUFFER_PACKETS:,}",
            ),
        )


def _check_budget(c: Checker, p: CwndParams) -> None:
    events = p.estimated_events
    if events <= MAX_PACKET_EVENTS:
        return
    scale = MAX_PACKET_EVENTS / events
    weight = p.event_weight
    c.add(
        ("duration_s",),
        msg(
            "about {events} million packet events ({rate} Mbit/s × {duration} s ÷ {size} B, "
            "with ACKs{weight}); the limit is {limit} million. "
            "Shorten duration_s to ≤ {max_duration} s or lower link.rate_mbps to ≤ {max_rate}",
            events=f"{events / 1e6:,.1f}",
            rate=f"{p.link.rate_mbps:g}",
            duration=f"{p.duration_s:g}",
            size=p.wire_bytes,
            weight=msg(", BBR's counted ×{w}", w=f"{weight:g}") if weight != 1 else "",
            limit=f"{MAX_PACKET_EVENTS / 1e6:g}",
            max_duration=f"{math.floor(p.duration_s * scale * 10) / 10:g}",
            max_rate=f"{math.floor(p.link.rate_mbps * scale * 10) / 10:g}",
        ),
    )


def dump(p: CwndParams) -> dict[str, Any]:
    """The raw (JSON-shaped) form of ``p``; ``parse(dump(p)) == p``."""
    link: dict[str, Any] = {"rate_mbps": p.link.rate_mbps, "rtt_ms": p.link.rtt_ms}
    if p.link.buffer_packets is not None:
        link["buffer_packets"] = p.link.buffer_packets
    elif p.link.buffer_bytes is not None:
        link["buffer_bytes"] = p.link.buffer_bytes
    else:
        link["buffer_bdp"] = p.link.buffer_bdp
    if p.link.loss_rate:
        link["loss_rate"] = p.link.loss_rate
    if p.link.aqm != "droptail":
        link["aqm"] = p.link.aqm
        link["red_max_p"] = p.link.red_max_p
    if p.link.red_min_packets is not None:
        link["red_min_packets"] = p.link.red_min_packets
    if p.link.red_max_packets is not None:
        link["red_max_packets"] = p.link.red_max_packets
    flows: list[dict[str, Any]] = []
    for f in p.flows:
        d: dict[str, Any] = {"cc": f.cc, "start_s": f.start_s}
        if f.rtt_ms is not None:
            d["rtt_ms"] = f.rtt_ms
        if f.tcp_ecn != TCP_ECN_DEFAULT:
            d["tcp_ecn"] = f.tcp_ecn
        if f.rwnd_bytes is not None:
            d["rwnd_bytes"] = f.rwnd_bytes
        flows.append(d)
    out: dict[str, Any] = {
        "link": link,
        "flows": flows,
        "duration_s": p.duration_s,
        "mss": p.mss,
        "seed": p.seed,
        "sample_ms": p.sample_ms,
        "comp_sack_nr": p.comp_sack_nr,
    }
    out["connect"] = p.connect
    return out
