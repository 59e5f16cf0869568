"""A machine's recorded cwnd beside the model's, for the same link and congestion control.

:func:`recorded_trace` takes a parsed ``cwnd`` recording (the JSON of
``GET /api/v1/recordings/{id}``: ``link`` ``{rate_mbit, rtt_ms, buffer_bytes, mtu}`` or null,
``duration_ms`` and ``flows[i]`` ``{cc, src, dst, series: [{t_ms, cwnd, ssthresh, srtt_us}]}``,
cwnd in segments as ``tcp:tcp_probe``'s snd_cwnd) and the user's overrides, runs the
congestion explainer (:class:`~app.sim.congestion.explainer.CwndExplainer`, within its limits)
on that link with that algorithm, and returns a trace whose steps walk through time: every
reduction the machine made, every one the model made, and regular ticks in between, each with
both sides' cwnd, ssthresh and smoothed RTT at that moment.

Overrides (all optional, JSON-shaped; a bad one raises :class:`ParamError` naming it):
``rate_mbit``, ``rtt_ms``, ``buffer_bytes`` (the bottleneck), ``cc`` (reno, cubic or bbr),
``duration_ms`` (how long the model runs) and ``flow`` (which recorded flow; default: the one
with the most samples). A recording without link parameters gets them estimated from its own
series (:func:`estimate_link`), each estimate named in ``summary["estimated"]``.

Both sides are measured by one function (:mod:`app.sim.congestion.sawtooth`); the model's
ssthresh is shown as ``tcp_probe`` reports the machine's (``tcp_current_ssthresh``), so the two
lines mean the same thing. Times run from each side's first sample (the machine's first
``tcp_probe``, the model's first sample once its connection is established).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from app.sim.congestion import sources
from app.sim.congestion.explainer import CwndExplainer
from app.sim.congestion.params import (
    CC_NAMES,
    HEADER_BYTES,
    MAX_BUFFER_PACKETS,
    MAX_DURATION_S,
    MAX_PACKET_EVENTS,
    MAX_RATE_MBPS,
    MAX_RTT_MS,
    MIN_RATE_MBPS,
    CwndParams,
    FlowParams,
    LinkParams,
)
from app.sim.congestion.run import SIM_VERSION, CwndTrace
from app.sim.congestion.sawtooth import Metrics, Reduction, Series, measure
from app.sim.core import Field, Frame, Message, ParamError, Trace, msg
from app.sim.core.validate import Checker, describe, is_number

RECORDED_VERSION = f"{SIM_VERSION}+recorded-1"
MAX_FRAMES = 300  # steps of one overlay: ticks plus reductions (each side's evenly thinned)
TICKS = 60  # regular steps over the run
MAX_REDUCTIONS = 115  # per side, so ticks + both sides stay within MAX_FRAMES
MODEL_SAMPLES = 4000  # the model samples its series about this many times
INFINITE_SSTHRESH = 0x7FFFFFFF  # TCP_INFINITE_SSTHRESH, as tcp_probe prints an unset one
BETA = {"cubic": "0.7", "reno": "0.5"}  # 717/1024 (tcp_cubic.c beta) and tcp_reno_ssthresh
OVERRIDE_KEYS = ("rate_mbit", "rtt_ms", "buffer_bytes", "cc", "duration_ms", "flow")
LINK_KEYS = ("rate_mbit", "rtt_ms", "buffer_bytes")
DEFAULT_MSS = 1448
# scrubber marks are catalog words
MARK_MACHINE = msg("loss").id
MARK_MODEL = msg("model").id


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedParams:
    """What the overlay compares: the link and algorithm the model runs (after overrides and
    estimates) and which recorded flow it is set beside."""

    rate_mbit: float
    rtt_ms: float
    buffer_bytes: int
    cc: str
    duration_ms: float
    flow: int
    mss: int
    estimated: tuple[str, ...]  # link fields estimated from the recording's own series
    shortened: bool  # the model runs less than the recording: the rest is over its work limit
    model: CwndParams


class Side(TypedDict):
    """One side's numbers at a step (None where it has no sample yet)."""

    cwnd: float | None
    ssthresh: float | None
    srtt_ms: float | None


class RecordedState(TypedDict, total=False):
    """A step: its time, what it is (``tick``, ``machine`` or ``model`` reduction), both
    sides' values then and, for a reduction, its numbers."""

    t: float
    kind: str
    cc: str
    machine: Side
    model: Side
    before: float
    after: float
    factor: float


class RecordedSeries(TypedDict):
    """What the chart draws: ``flows[0]`` the machine, ``flows[1]`` the model (each as the
    congestion explainer's flow series, plus ``label``), and the model's bottleneck queue."""

    flows: list[dict[str, Any]]
    queue: dict[str, list[float]]


RecordedTrace = Trace[RecordedState, RecordedSeries]


# --- the recording -----------------------------------------------------------------------------


def _num(v: Any) -> float | None:
    return float(v) if is_number(v) and math.isfinite(float(v)) else None


def _flows(recording: Mapping[str, Any]) -> Sequence[Any]:
    flows = recording.get("flows")
    if not isinstance(flows, list) or not flows:
        raise ParamError.single(
            ("flows",), msg("the recording has no flow with tcp_probe samples to compare")
        )
    return flows


def machine_series(flow: Any, index: int) -> Series:
    """One recorded flow as a :class:`Series` (time from its first sample, ssthresh None where
    tcp_probe printed the unset value); ParamError naming the first bad sample."""
    loc: tuple[str | int, ...] = ("flows", index)
    points = flow.get("series") if isinstance(flow, Mapping) else None
    if not isinstance(points, list) or not points:
        raise ParamError.single((*loc, "series"), msg("this flow has no samples"))
    rows: list[tuple[float, float, float | None, float | None]] = []
    for j, p in enumerate(points):
        here = (*loc, "series", j)
        if not isinstance(p, Mapping):
            raise ParamError.single(
                here, msg("each sample must be an object; you gave {what}", what=describe(p))
            )
        t, cwnd = _num(p.get("t_ms")), _num(p.get("cwnd"))
        if t is None or cwnd is None or cwnd < 0:
            key = "t_ms" if t is None else "cwnd"
            raise ParamError.single(
                (*here, key),
                msg("{key} must be a number; you gave {what}", key=key, what=describe(p.get(key))),
            )
        ss, srtt = _num(p.get("ssthresh")), _num(p.get("srtt_us"))
        if ss is not None and (ss >= INFINITE_SSTHRESH or ss < 0):
            ss = None
        rows.append((t, cwnd, ss, srtt / 1000 if srtt is not None and srtt > 0 else None))
    rows.sort(key=lambda r: r[0])
    t0 = rows[0][0]
    return Series(
        t=[(r[0] - t0) / 1000 for r in rows],
        cwnd=[r[1] for r in rows],
        ssthresh=[r[2] for r in rows],
        srtt=[r[3] for r in rows],
    )


def _default_flow(flows: Sequence[Any]) -> int:
    """The flow with the most samples (an iperf3 run's data connection, not its control one)."""
    sizes = [
        len(f["series"]) if isinstance(f, Mapping) and isinstance(f.get("series"), list) else -1
        for f in flows
    ]
    return max(range(len(flows)), key=lambda i: (sizes[i], -i))


def estimate_link(s: Series, mss: int) -> dict[str, float]:
    """A bottleneck that would give ``s``: the base RTT as its lowest smoothed RTT, the rate as
    the median of cwnd/srtt once the first reduction has filled the queue (the sending rate of
    a flow whose queue never empties), the buffer as the mean peak above that BDP."""
    rtts = [v for v in s.srtt if v is not None]
    if not rtts:
        return {}
    rtt = min(MAX_RTT_MS, max(0.1, min(rtts)))
    m = measure(s)
    start = s.t.index(m.reductions[0].t) if m.reductions else 0
    wire = mss + HEADER_BYTES
    rates = sorted(
        c * wire * 8 / (r / 1000) / 1e6
        for c, r in zip(s.cwnd[start:], s.srtt[start:], strict=True)
        if r is not None and c > 0
    )
    if not rates:
        return {"rtt_ms": round(rtt, 3)}
    rate = min(MAX_RATE_MBPS, max(MIN_RATE_MBPS, rates[len(rates) // 2]))
    bdp = rate * 1e6 * rtt / 1e3 / (8 * wire)
    peak = m.peak if m.peak is not None else max(s.cwnd)
    buffer = min(MAX_BUFFER_PACKETS * wire, max(wire, round((peak - bdp) * wire)))
    return {"rate_mbit": round(rate, 3), "rtt_ms": round(rtt, 3), "buffer_bytes": buffer}


# --- overrides -----------------------------------------------------------------------------------


def parse_overrides(recording: Mapping[str, Any], overrides: Mapping[str, Any]) -> RecordedParams:
    """The link, algorithm, duration and flow the overlay compares; ParamError naming each bad
    override (by its key) or recording field (by its path)."""
    if not isinstance(recording, Mapping):
        raise ParamError.single((), msg("the recording must be a JSON object"))
    if not isinstance(overrides, Mapping):
        raise ParamError.single(
            (), msg("overrides must be an object; you gave {what}", what=describe(overrides))
        )
    c = Checker()
    c.unknown(overrides, OVERRIDE_KEYS, ())
    flows = _flows(recording)
    flow = c.integer(overrides, "flow", (), default=_default_flow(flows), ge=0, le=len(flows) - 1)
    if c.issues:
        raise ParamError(c.issues)
    rec_flow = flows[flow] if isinstance(flows[flow], Mapping) else {}
    series = machine_series(flows[flow], flow)
    mss = _mss(recording, rec_flow)
    wire = mss + HEADER_BYTES
    link = _link_values(c, recording, overrides, wire)
    estimated: list[str] = []
    missing = [k for k in LINK_KEYS if k not in link]
    if missing:
        guess = estimate_link(series, mss)
        for key in missing:
            if key in guess:
                link[key] = guess[key]
                estimated.append(key)
            else:
                c.add((key,), msg("the recording does not give {key}; enter it", key=key))
    cc = _cc(c, overrides, rec_flow, flow)
    duration = _duration(c, recording, overrides, series)
    if c.issues:
        raise ParamError(c.issues)
    shortened = False
    if overrides.get("duration_ms") is None:
        # the recording's own length: the model runs as much of it as its work limit allows
        fits = _fitting_duration_ms(link, cc, mss)
        shortened = fits < duration
        duration = min(duration, fits)
    model = _model_params(link, cc, duration, mss)
    return RecordedParams(
        rate_mbit=link["rate_mbit"],
        rtt_ms=link["rtt_ms"],
        buffer_bytes=int(link["buffer_bytes"]),
        cc=cc,
        duration_ms=duration,
        flow=flow,
        mss=mss,
        estimated=tuple(estimated),
        shortened=shortened,
        model=model,
    )


def _mss(recording: Mapping[str, Any], flow: Mapping[str, Any]) -> int:
    mss = _num(flow.get("mss"))
    if mss is None:
        link = recording.get("link")
        mtu = _num(link.get("mtu")) if isinstance(link, Mapping) else None
        mss = mtu - HEADER_BYTES if mtu is not None else DEFAULT_MSS
    return int(min(9000, max(536, mss)))


def _link_values(
    c: Checker, recording: Mapping[str, Any], overrides: Mapping[str, Any], wire: int
) -> dict[str, float]:
    """The link fields the overrides or the recording give, each checked where it came from."""
    rec = recording.get("link")
    rec = rec if isinstance(rec, Mapping) else {}
    out: dict[str, float] = {}
    limits: dict[str, tuple[float | None, float | None, float]] = {  # gt, ge, le
        "rate_mbit": (None, MIN_RATE_MBPS, MAX_RATE_MBPS),
        "rtt_ms": (0.0, None, MAX_RTT_MS),
        "buffer_bytes": (None, float(wire), float(MAX_BUFFER_PACKETS * wire)),
    }
    for key in LINK_KEYS:
        source, loc = (overrides, ()) if overrides.get(key) is not None else (rec, ("link",))
        if source.get(key) is None:
            continue
        before = len(c.issues)
        gt, ge, le = limits[key]
        value = c.number(source, key, loc, gt=gt, ge=ge, le=le)
        if value is not None and len(c.issues) == before:
            out[key] = value
    return out


def _cc(c: Checker, overrides: Mapping[str, Any], flow: Mapping[str, Any], index: int) -> str:
    raw = overrides.get("cc", flow.get("cc"))
    loc: tuple[str | int, ...] = ("cc",) if "cc" in overrides else ("flows", index, "cc")
    if isinstance(raw, str) and raw.lower() in CC_NAMES:
        return raw.lower()
    c.add(
        loc,
        msg(
            "the model has {names}; choose one as cc (the recording's is {what})",
            names=", ".join(CC_NAMES),
            what=describe(raw),
        ),
    )
    return CC_NAMES[0]


def _duration(
    c: Checker, recording: Mapping[str, Any], overrides: Mapping[str, Any], s: Series
) -> float:
    limit = MAX_DURATION_S * 1000
    if overrides.get("duration_ms") is not None:
        value = c.number(overrides, "duration_ms", (), gt=0, le=limit, unit="ms")
        return value if value is not None else 1.0
    recorded = _num(recording.get("duration_ms"))
    span = s.t[-1] * 1000 if s.t else 0.0
    best = max(recorded or 0.0, span)
    return min(limit, best) if best > 0 else 1000.0


def _model_params(link: Mapping[str, float], cc: str, duration_ms: float, mss: int) -> CwndParams:
    """The congestion explainer's params for this link, checked against its work limit
    (ParamError naming ``duration_ms`` when the run would be too long)."""
    sample_ms = max(1.0, round(duration_ms / MODEL_SAMPLES, 1))
    raw = {
        "link": {
            "rate_mbps": link["rate_mbit"],
            "rtt_ms": link["rtt_ms"],
            "buffer_bytes": int(link["buffer_bytes"]),
        },
        "flows": [{"cc": cc}],
        "duration_s": duration_ms / 1000,
        "mss": mss,
        "sample_ms": sample_ms,
    }
    try:
        return CwndExplainer().parse(raw)
    except ParamError as e:
        issue = e.issues[0]
        where = _MODEL_LOC.get(issue.loc, ("duration_ms",))
        if issue.loc == ("duration_s",):  # the run is over the model's work limit
            raise ParamError.single(
                where,
                msg(
                    "the model would need too long for this link: shorten duration_ms to "
                    "≤ {max_ms} ms or lower rate_mbit",
                    max_ms=f"{_fitting_duration_ms(link, cc, mss):g}",
                ),
            ) from None
        raise ParamError.single(where, issue.message) from None


def _fitting_duration_ms(link: Mapping[str, float], cc: str, mss: int) -> float:
    """The longest run (ms, to 0.1 s) of this link the congestion explainer's work limit
    allows, counted as it counts (``CwndParams.estimated_events``)."""
    probe = CwndParams(
        link=LinkParams(
            rate_mbps=link["rate_mbit"],
            rtt_ms=link["rtt_ms"],
            buffer_bytes=int(link["buffer_bytes"]),
        ),
        flows=(FlowParams(cc=cc),),
        duration_s=1.0,
        mss=mss,
    )
    per_second = max(1, probe.estimated_events)
    return max(100.0, math.floor(MAX_PACKET_EVENTS / per_second * 10) * 100.0)


_MODEL_LOC: dict[tuple[str | int, ...], tuple[str | int, ...]] = {
    ("link", "rate_mbps"): ("rate_mbit",),
    ("link", "rtt_ms"): ("rtt_ms",),
    ("link", "buffer_bytes"): ("buffer_bytes",),
    ("flows", 0, "cc"): ("cc",),
    ("duration_s",): ("duration_ms",),
    ("sample_ms",): ("duration_ms",),
}


# --- the model -----------------------------------------------------------------------------------


def probe_ssthresh(cwnd: int, ssthresh: int | None, ca_state: str) -> int | None:
    """ssthresh as tcp_probe reports it: ``tcp_current_ssthresh()`` is the real one during
    CWR and Recovery, else max(ssthresh, ¾ cwnd) (``(cwnd >> 1) + (cwnd >> 2)``)."""
    if ssthresh is None or ca_state in ("CWR", "Recovery"):
        return ssthresh
    return max(ssthresh, (cwnd >> 1) + (cwnd >> 2))


def model_series(flow: Mapping[str, Any]) -> Series:
    """The model's flow as a :class:`Series`: time from its first sample, ssthresh as
    tcp_probe would report it."""
    t = flow.get("t") or []
    t0 = t[0] if t else 0.0
    cwnd = flow.get("cwnd") or []
    states = flow.get("ca_state") or ["Open"] * len(t)
    return Series(
        t=[round(x - t0, 6) for x in t],
        cwnd=[float(c) for c in cwnd],
        ssthresh=[
            probe_ssthresh(int(c), s, st)
            for c, s, st in zip(cwnd, flow.get("ssthresh") or [], states, strict=True)
        ],
        srtt=list(flow.get("srtt_ms") or [None] * len(t)),
    )


# --- the trace -----------------------------------------------------------------------------------


def recorded_trace(
    recording: Mapping[str, Any], overrides: Mapping[str, Any] | None = None
) -> RecordedTrace:
    """The overlay of a parsed ``cwnd`` recording and the model (see the module docstring)."""
    p = parse_overrides(recording, overrides or {})
    machine = machine_series(_flows(recording)[p.flow], p.flow)
    run: CwndTrace = CwndExplainer().run(p.model)
    flow = run.series["flows"][0]
    model = model_series(flow)
    mine, theirs = measure(machine), measure(model)
    frames = _frames(p, machine, model, mine, theirs)
    return Trace(
        explainer="cwnd",
        sim_version=RECORDED_VERSION,
        params=p,
        frames=tuple(frames),
        series=_chart_series(p, machine, model, mine, flow, run),
        summary=_summary(recording, p, mine, theirs, machine, model),
    )


def _chart_series(
    p: RecordedParams,
    machine: Series,
    model: Series,
    mine: Metrics,
    flow: Mapping[str, Any],
    run: CwndTrace,
) -> RecordedSeries:
    t0 = (flow.get("t") or [0.0])[0]
    events = [
        {"t": round(e["t"] - t0, 6), "type": e["type"], "detail": e["detail"], "state": e["state"]}
        for e in flow.get("events", ())
        if e["type"] in ("loss", "rto", "cwr") and e["t"] >= t0
    ]
    queue = run.series["queue"]
    keep = [i for i, t in enumerate(queue["t"]) if t >= t0]
    return {
        "flows": [
            {
                "cc": p.cc,
                "label": msg("machine"),
                "t": list(machine.t),
                "cwnd": list(machine.cwnd),
                "ssthresh": list(machine.ssthresh),
                "srtt_ms": list(machine.srtt),
                "events": [
                    {"t": r.t, "type": "loss", "detail": {"cwnd": r.before}, "state": {}}
                    for r in mine.reductions
                ],
            },
            {
                "cc": p.cc,
                "label": msg("model"),
                "t": list(model.t),
                "cwnd": list(model.cwnd),
                "ssthresh": list(model.ssthresh),
                "srtt_ms": list(model.srtt),
                "delivery_mbps": list(flow.get("delivery_mbps") or []),
                "events": events,
            },
        ],
        "queue": {
            "t": [round(queue["t"][i] - t0, 6) for i in keep],
            "packets": [queue["packets"][i] for i in keep],
        },
    }


def metrics_json(m: Metrics) -> dict[str, Any]:
    """One side's comparison numbers (rounded as the table shows them)."""

    def r(v: float | None, digits: int) -> float | None:
        return None if v is None else round(v, digits)

    return {
        "reductions": len(m.reductions),
        "peak": r(m.peak, 1),
        "period_s": r(m.period, 3),
        "decrease": r(m.decrease, 3),
        "first_loss_s": r(m.first_loss, 3),
        "srtt_mean_ms": r(m.srtt_mean, 2),
    }


def _summary(
    recording: Mapping[str, Any],
    p: RecordedParams,
    mine: Metrics,
    theirs: Metrics,
    machine: Series,
    model: Series,
) -> dict[str, Any]:
    kernel = recording.get("kernel")
    flow = _flows(recording)[p.flow]
    return {
        "kind": "cwnd",
        "cc": p.cc,
        "flow": p.flow,
        "src": str(flow.get("src", "")) if isinstance(flow, Mapping) else "",
        "dst": str(flow.get("dst", "")) if isinstance(flow, Mapping) else "",
        "kernel": str(kernel.get("release", "")) if isinstance(kernel, Mapping) else "",
        "link": {
            "rate_mbit": p.rate_mbit,
            "rtt_ms": p.rtt_ms,
            "buffer_bytes": p.buffer_bytes,
            "mss": p.mss,
        },
        "duration_ms": p.duration_ms,
        "shortened": p.shortened,
        "estimated": list(p.estimated),
        "samples": {"machine": len(machine.t), "model": len(model.t)},
        "metrics": {"machine": metrics_json(mine), "model": metrics_json(theirs)},
    }


def _thin(items: Sequence[Reduction], limit: int) -> list[Reduction]:
    if len(items) <= limit:
        return list(items)
    step = len(items) / limit
    return [items[int(k * step)] for k in range(limit)]


def _side(s: Series, t: float) -> Side:
    i = s.at(t)
    if i is None:
        return {"cwnd": None, "ssthresh": None, "srtt_ms": None}
    srtt = s.srtt[i]
    return {
        "cwnd": s.cwnd[i],
        "ssthresh": s.ssthresh[i],
        "srtt_ms": round(srtt, 2) if srtt is not None else None,
    }


def _frames(
    p: RecordedParams, machine: Series, model: Series, mine: Metrics, theirs: Metrics
) -> list[Frame[RecordedState]]:
    end = max(machine.t[-1] if machine.t else 0.0, model.t[-1] if model.t else 0.0)
    stops: list[tuple[float, int, str, Reduction | None]] = [
        (round(end * k / TICKS, 6), 2, "tick", None) for k in range(TICKS + 1)
    ]
    stops += [(r.t, 0, "machine", r) for r in _thin(mine.reductions, MAX_REDUCTIONS)]
    stops += [(r.t, 1, "model", r) for r in _thin(theirs.reductions, MAX_REDUCTIONS)]
    stops.sort(key=lambda s: (s[0], s[1]))
    frames: list[Frame[RecordedState]] = []
    last: RecordedState = {}
    for t, _order, kind, red in stops[:MAX_FRAMES]:
        state: RecordedState = {
            "t": t,
            "kind": kind,
            "cc": p.cc,
            "machine": _side(machine, t),
            "model": _side(model, t),
        }
        if red is not None:
            state["before"], state["after"] = red.before, red.after
            state["factor"] = round(red.factor, 3)
        index = len(frames)
        frames.append(
            Frame(
                index=index,
                op={"tick": "cwnd", "machine": "tcp_probe", "model": "ssthresh"}[kind],
                result="ok",
                narration=narrate(p, state, index, mine, theirs),
                source=sources.for_event("loss", p.cc, {}) if red is not None else None,
                state=state,
                fields=_fields(state, last),
                mark={"machine": MARK_MACHINE, "model": MARK_MODEL}.get(kind),
                time=t,
            )
        )
        last = state
    return frames


def _fields(state: RecordedState, last: RecordedState) -> tuple[Field, ...]:
    rows = [Field(name="t", value=round(state["t"], 3), unit="s")]
    for key, unit in (("cwnd", "segments"), ("ssthresh", "segments"), ("srtt_ms", "ms")):
        for side in ("machine", "model"):
            v = state[side][key]  # type: ignore[literal-required]
            old = last[side][key] if side in last else v  # type: ignore[literal-required]
            rows.append(
                Field(
                    name=f"{side}_{key}",
                    value="–" if v is None and key != "ssthresh" else ("∞" if v is None else v),
                    unit=unit,
                    changed=old != v,
                )
            )
    if "factor" in state:
        rows.append(Field(name="after/before", value=state["factor"], changed=True))
    return tuple(rows)


def _fmt(v: float | None, spec: str = ".0f", none: str = "–") -> str:
    return none if v is None else format(v, spec)


def narrate(
    p: RecordedParams, state: RecordedState, index: int, mine: Metrics, theirs: Metrics
) -> Message:
    """A step's words: the link and the two runs on the first, the reduction on a reduction,
    both sides' values on a tick."""
    m, d = state["machine"], state["model"]
    values = {
        "t": f"{state['t']:.3f}",
        "m_cwnd": _fmt(m["cwnd"]),
        "m_ss": _fmt(m["ssthresh"], none="∞"),
        "m_srtt": _fmt(m["srtt_ms"], ".1f"),
        "cwnd": _fmt(d["cwnd"]),
        "ss": _fmt(d["ssthresh"], none="∞"),
        "srtt": _fmt(d["srtt_ms"], ".1f"),
    }
    both = msg(
        "At {t} s the machine's cwnd is {m_cwnd} segments (ssthresh {m_ss}, smoothed RTT "
        "{m_srtt} ms); the model's is {cwnd} segments (ssthresh {ss}, smoothed RTT {srtt} ms).",
        **values,
    )
    kind = state["kind"]
    if kind in ("machine", "model"):
        numbers = {
            "t": values["t"],
            "before": _fmt(state["before"]),
            "after": _fmt(state["after"]),
            "factor": f"{state['factor']:.2f}",
        }
        said = (
            msg(
                "The machine reduces its window at {t} s: ssthresh becomes {after} segments "
                "from a cwnd of {before}, × {factor}.",
                **numbers,
            )
            if kind == "machine"
            else msg(
                "The model reduces its window at {t} s: ssthresh becomes {after} segments from "
                "a cwnd of {before}, × {factor}.",
                **numbers,
            )
        )
        beta = BETA.get(p.cc)
        if beta is not None:
            said += " " + msg(
                "{cc} multiplies by {beta} on a loss; PRR brings cwnd down to ssthresh over "
                "the recovery.",
                cc=p.cc,
                beta=beta,
            )
        return said + " " + both
    if index == 0:
        return _intro(p, mine, theirs) + " " + both
    return both


def _intro(p: RecordedParams, mine: Metrics, theirs: Metrics) -> Message:
    text = msg(
        "Your recording beside the model: {cc} over a {rate} Mbit/s bottleneck with a base RTT "
        "of {rtt} ms and a {buffer}-byte buffer, for {seconds} s. The machine reduced its "
        "window {m_n} times, the model {n} times.",
        cc=p.cc,
        rate=f"{p.rate_mbit:g}",
        rtt=f"{p.rtt_ms:g}",
        buffer=f"{p.buffer_bytes}",
        seconds=f"{p.duration_ms / 1000:g}",
        m_n=len(mine.reductions),
        n=len(theirs.reductions),
    )
    if p.shortened:
        text += " " + msg(
            "The model runs the first {seconds} s only: a longer run of this link would be "
            "over its work limit.",
            seconds=f"{p.duration_ms / 1000:g}",
        )
    if p.estimated:
        text += " " + msg(
            "The recording gave no {fields}: estimated from its own samples; edit them to "
            "match your link.",
            fields=", ".join(p.estimated),
        )
    return text
