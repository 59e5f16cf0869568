"""``run(params) -> Trace``: simulate, then shape series, summary and step frames.

Output contract (the JSON API returns ``series`` and ``summary``):

``series["flows"][i]``: ``cc``, ``index``, ``start_s``, ``rtt_ms`` and lists sampled every
``sample_ms`` from the flow's start: ``t`` (s), ``cwnd`` (segments), ``ssthresh`` (segments;
``None`` while it is still the initial "infinite" 0x7fffffff), ``inflight``
(``tcp_packets_in_flight``), ``srtt_ms``, ``pacing_mbps`` (sk_pacing_rate; for reno/cubic the
advisory rate Linux computes but does not enforce without fq), ``delivery_mbps`` (segments newly
ACKed or SACKed over the last sample interval × MSS), ``bbr_mode`` (None for non-BBR),
``ca_state`` ("Open", "Disorder", "CWR", "Recovery", "Loss"); CUBIC also ``w_cubic`` (the
kernel's last ``bic_target``, the cubic curve one min RTT ahead) and ``w_est`` (``tcp_cwnd``, the
Reno-friendly estimate), both None outside an epoch; BBR also ``bw_mbps`` (max-filter bw),
``pacing_gain`` and ``min_rtt_ms``. Then ``events``: time-ordered dicts ``t``, ``type``,
``detail`` (numbers of the event), ``text`` (our sentence) and ``state`` (a snapshot: ``cwnd``,
``ssthresh``, ``inflight``, ``srtt_ms``, ``ca_state``). Types and their ``detail``:

* ``syn`` (only with ``connect = "handshake"``): rtt_ms (the SYN's round trip, the first RTT
  sample), queue_ms (what the SYN waited at the bottleneck), ecn (1 when the SYN asks for ECN).
* ``start``: cwnd, rtt_ms (handshake sample), rto_ms.
* ``cwr`` (an ACK with ECE, ``tcp_enter_cwr``): cwnd (before), ssthresh (after), high_seq,
  ce_marks (CE-marked segments the receiver has seen). ``cwr_exit``: cwnd, ssthresh,
  cwnd_before. A ``recovery_enter`` with ``from_cwr`` = 1 came during CWR (no new reduction).
* ``rwnd_limited``: cwnd, rwnd (segments): the receive window starts to stop transmission.
* ``loss`` (the congestion response on entering Recovery): cwnd (before), ssthresh (after),
  lost, first_lost_seq, sacked; CUBIC adds w_max, k_s, beta, fast_convergence (0/1); Reno
  factor; BBR prior_cwnd.
* ``recovery_enter``: cwnd, ssthresh, high_seq, lost. ``recovery_exit``: cwnd, ssthresh, and
  cwnd_before after fast recovery (absent after an RTO's Loss state).
* ``rto``: cwnd_before, cwnd (= 1), ssthresh, rto_ms, next_rto_ms, lost, backoff.
* ``tlp`` (a tail loss probe, ``tcp_send_loss_probe``: no ACK moved snd_una for about
  2·srtt while in Open, so one new segment goes out beyond cwnd to draw a SACK): seq (the
  probe), packets_out (before it), pto_ms, rto_ms (the RTO it restarts), dropped (0/1).
* ``frto`` (F-RTO after a timeout, ``tcp_process_loss``): step "2b" (the first ACK that moves
  snd_una sends new data instead of a retransmission: sent, high_seq, cwnd) or "3a" (the ACK
  for that new data only SACKs it: the loss was real, retransmission goes on).
* ``undo`` (a spurious timeout undone, ``tcp_try_undo_loss``): cwnd_before, cwnd, ssthresh,
  how ("timestamp": the ACK echoes a TSval older than the retransmission; "frto": step 3.b,
  never-retransmitted data was (S)ACKed).
* ``reo_timeout`` (RACK's reorder timer fired, ``tcp_rack_reo_timeout``): lost,
  first_lost_seq, reo_wnd_ms; a ``loss`` and ``recovery_enter`` follow when it starts Recovery.
* ``sack_compressed`` (the first ACK of a loss episode the receiver held back,
  ``__tcp_ack_snd_check``): segments (out-of-order segments it stands for), delay_ms,
  comp_sack_nr.
* ``round`` (a round trip of the flow's first slow start ends, at most 12): round, cwnd_start,
  cwnd, delivered (in the round), delivered_total.
* ``hystart_exit``: cwnd, ssthresh, delay_min_ms, method ("ack_train" or "delay") and its
  train_ms/curr_rtt_ms and threshold_ms.
* ``epoch_start`` (CUBIC): cwnd, w_max, k_s, origin_point, delay_min_ms.
* ``bbr_mode``: from, to, cwnd, bw_mbps, min_rtt_ms, and cycle_idx / target_inflight /
  prior_cwnd where relevant (from == to marks the long-term "policer" rate taking over).

A flow keeps at most max(500, 8000 / flows) events; later ones are only counted
(``summary.flows[i].events_dropped``). For CUBIC, ``epochs`` lists ``t0``, ``t_end``,
``w_max``, ``k_s``, ``origin_point``, ``cwnd_start``, ``tcp_cwnd_start``, ``delay_min_ms`` and
``c``: the kernel's target over an epoch is ``origin_point + c·(t − t0 + delay_min − k_s)³``
(segments, t in s; ``delay_min`` rounded up to whole ms as the kernel's jiffies do), and the
Reno-friendly estimate starts at ``tcp_cwnd_start`` and gains one segment per
``reno_ack_per_segment`` ACKed segments (``w_est`` samples it).

``series["queue"]``: ``t``, ``packets`` (waiting at the bottleneck, not counting the one being
sent) and ``drops`` (cumulative drops, tail and random).

``summary``: per flow ``goodput_mbps`` (payload cumulatively ACKed by the end ÷ time since the
flow started), ``retransmits``, ``drops``, ``rtos``, ``tlps`` (loss probes sent),
``loss_events``, ``undos`` (timeouts undone), ``reo_timeouts`` (RACK reorder timers that marked a
loss), ``sacks_compressed`` (ACKs the receiver saved by compressing SACKs, as TCPAckCompressed counts),
``rtt_mean_ms`` / ``rtt_p95_ms``, ``ecn`` (negotiated), ``ce_marks`` (CE
segments the receiver saw), ``ece_acks``, ``cwr_entries``, ``rwnd_segments`` (None without a
receive window) and ``rwnd_limited_s`` (time the window bound, as tcpi_rwnd_limited); overall ``goodput_mbps``, ``utilisation`` (bottleneck busy time from the first
start), ``jain_fairness`` (on goodput), ``rtt_mean_ms`` / ``rtt_p95_ms`` (the latest RTT sample
of each flow at every sample tick, i.e. time-weighted), ``drops``, ``retransmits``,
``packets_simulated``, ``aqm``, ``ce_marks`` and ``red`` (None for drop-tail, else RED's
thresholds, ``wlog`` and its ``prob_mark``/``forced_mark``/``prob_drop``/``forced_drop`` counters,
whose drops are also in ``tail_drops``) and more.

Traces are cached (``run`` is memoised on the frozen params): treat them as read-only.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

from app.sim.congestion import sources
from app.sim.congestion.engine import Engine
from app.sim.congestion.flow import CA_NAMES, TCP_INFINITE_SSTHRESH, Flow, Narration
from app.sim.congestion.params import CwndParams, parse
from app.sim.core import Message, Progress, msg
from app.sim.core.trace import Field, Frame, Trace

EXPLAINER = "cwnd"
SIM_VERSION = "cwnd-6"  # cwnd-2: tail loss probe; the RTO restarts when the head is resent
# cwnd-3: an ACK that advances snd_una samples the RTT from TSecr when the segment was resent;
# the receiver starts with tcp_incr_quickack's 16 quick ACKs (not 5); BBR's recovery exit,
# long-term rate and RTO narration cite and say what 6.4 does
# cwnd-5: F-RTO and undo after a timeout, RACK's reorder timer, SACK compression at the
# receiver (comp_sack_nr), one step per slow-start round; options: RED/ECN bottleneck and CWR,
# receive-window limit, the SYN handshake
# cwnd-6: five tcp_input.c citations at v6.4's lines (they were 6.4.4's, 6 lower)
MAX_FRAMES = 1000
PROGRESS_SLICES = 100  # a run reports progress (simulated seconds) this many times

# A field's unit is an id the player translates (``_(unit)``); only "segments" is a word.
SEGMENTS = msg("segments").id

_MARKS = {
    "start": "start",
    "loss": "loss",
    "recovery_enter": "recovery",
    "recovery_exit": "recovery",
    "rto": "rto",
    "tlp": "tlp",
    "frto": "frto",
    "undo": "undo",
    "reo_timeout": "loss",
    "sack_compressed": "sack",
    "round": "round",
    "hystart_exit": "hystart",
    "epoch_start": "epoch",
    "bbr_mode": "mode",
    "syn": "start",
    "cwr": "cwr",
    "cwr_exit": "cwr",
    "rwnd_limited": "rwnd",
}


class CwndEvent(TypedDict):
    """A notable moment of one flow (see the module docstring for each type's ``detail``)."""

    t: float
    type: str
    detail: dict[str, Any]
    text: str
    state: dict[str, Any]


class QueueSeries(TypedDict):
    t: list[float]
    packets: list[int]
    drops: list[int]


class CwndSeries(TypedDict):
    """``series`` of a congestion-control trace: one entry per flow, and the bottleneck queue.
    Each flow dict holds the sampled lists named in the module docstring plus ``events`` (a list
    of :class:`CwndEvent`) and, for CUBIC, ``epochs``."""

    flows: list[dict[str, Any]]
    queue: QueueSeries


class CwndState(TypedDict, total=False):
    """A step's state: the flow and event it shows, the flow's numbers then, and the event's
    own ``detail`` numbers (keys vary by event type)."""

    t: float
    flow: int
    cc: str
    event: str
    cwnd: int | None
    ssthresh: int | None
    inflight: int
    srtt_ms: float
    ca_state: str


CwndTrace = Trace[CwndState, CwndSeries]


def run(params: CwndParams | Any, progress: Progress | None = None) -> CwndTrace:
    """Simulate ``params`` (frozen, or raw JSON-shaped); pure and deterministic. Not cached:
    the web layer keeps the one run cache."""
    return simulate(parse(params), progress)


def simulate(params: CwndParams, progress: Progress | None = None) -> CwndTrace:
    """Run the engine, reporting simulated seconds done after each of ``PROGRESS_SLICES``."""
    eng = Engine(params)
    if progress is None:
        eng.run()
    else:
        total = params.duration_s
        for k in range(1, PROGRESS_SLICES + 1):
            until = total * k / PROGRESS_SLICES
            eng.run(until=until if k < PROGRESS_SLICES else None)
            progress(until, total)
    flows = eng.flows
    series: CwndSeries = {
        "flows": [_flow_series(params, f) for f in flows],
        "queue": eng.queue,  # type: ignore[typeddict-item]
    }
    summary = _summary(params, eng)
    frames = _frames(params, flows)
    return Trace(
        explainer=EXPLAINER,
        sim_version=SIM_VERSION,
        params=params,
        frames=tuple(frames),
        series=series,
        summary=summary,
    )


def _flow_series(p: CwndParams, f: Flow) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cc": f.cc_name,
        "index": f.index,
        "start_s": f.start,
        "rtt_ms": p.flow_rtt_ms(f.index),
    }
    out.update(f.series or {"t": [], "cwnd": []})
    out["events"] = f.events
    out.update(f.ca.trace_extras(f))
    return out


def _rtt_stats(samples: list[int]) -> tuple[float | None, float | None]:
    """Mean and 95th percentile (nearest rank) in ms of RTT samples in µs."""
    if not samples:
        return None, None
    xs = sorted(samples)
    p95 = xs[max(0, math.ceil(0.95 * len(xs)) - 1)]
    return round(sum(xs) / len(xs) / 1e3, 3), round(p95 / 1e3, 3)


def _summary(p: CwndParams, eng: Engine) -> dict[str, Any]:
    end = p.duration_s
    flows_out = []
    goodputs = []
    all_rtts: list[int] = []
    for f in eng.flows:
        active = max(end - f.start, 1e-9)
        goodput = f.snd_una * p.mss * 8 / active / 1e6
        goodputs.append(goodput)
        all_rtts += f.rtt_samples
        mean, p95 = _rtt_stats(f.rtt_samples)
        flows_out.append(
            {
                "index": f.index,
                "cc": f.cc_name,
                "start_s": f.start,
                "goodput_mbps": round(goodput, 3),
                "delivered_segments": f.snd_una,
                "retransmits": f.retransmits,
                "drops": f.drops,
                "rtos": f.rtos,
                "tlps": f.tlps,
                "loss_events": f.loss_events,
                "undos": f.undos,
                "reo_timeouts": f.reo_timeouts,
                "sacks_compressed": f.sacks_compressed,
                "rtt_mean_ms": mean,
                "rtt_p95_ms": p95,
                "final_cwnd": f.cwnd,
                "final_ssthresh": None if f.ssthresh >= TCP_INFINITE_SSTHRESH else f.ssthresh,
                "final_ca_state": CA_NAMES[f.ca_state],
                "events_dropped": f.events_dropped,
                "ecn": f.ecn_ok,
                "ce_marks": f.ce_marks,
                "ece_acks": f.ece_acks,
                "cwr_entries": f.cwr_entries,
                "rwnd_segments": f.rwnd or None,
                "rwnd_limited_s": round(f.rwnd_limited_s, 3),
            }
        )
    mean_all, p95_all = _rtt_stats(all_rtts)
    first = min(f.start for f in eng.flows)
    span = max(end - first, 1e-9)
    busy = eng.accepted * eng.tx - max(0.0, eng.last_dep - end)
    n = len(goodputs)
    sq = sum(g * g for g in goodputs)
    jain = (sum(goodputs) ** 2 / (n * sq)) if sq > 0 else None
    payload_capacity = p.link.rate_mbps * p.mss / p.wire_bytes
    return {
        "flows": flows_out,
        "goodput_mbps": round(sum(goodputs), 3),
        "capacity_mbps": p.link.rate_mbps,
        "payload_capacity_mbps": round(payload_capacity, 3),
        "utilisation": round(min(1.0, busy / span), 4),
        "jain_fairness": round(jain, 4) if jain is not None else None,
        "rtt_mean_ms": mean_all,
        "rtt_p95_ms": p95_all,
        "drops": eng.tail_drops + eng.random_drops,
        "tail_drops": eng.tail_drops,
        "random_losses": eng.random_drops,
        "retransmits": sum(f.retransmits for f in eng.flows),
        "rtos": sum(f.rtos for f in eng.flows),
        "tlps": sum(f.tlps for f in eng.flows),
        "packets_simulated": eng.accepted + eng.tail_drops + eng.random_drops,
        "aqm": p.link.aqm,
        "ce_marks": eng.ce_marks,
        "red": _red_summary(eng),
        "acks_simulated": eng.acks,
        "events_processed": eng.events_processed,
        "bdp_packets": round(p.bdp_packets, 2),
        "buffer_packets": p.buffer_limit_packets,
        "wire_bytes": p.wire_bytes,
        "duration_s": p.duration_s,
    }


def _red_summary(eng: Engine) -> dict[str, float] | None:
    """The RED qdisc's counters (as ``tc -s qdisc`` shows them) and thresholds, or None."""
    red = eng.red
    if red is None:
        return None
    return {
        "min_packets": round(red.qth_min, 3),
        "max_packets": round(red.qth_max, 3),
        "max_p": red.max_p,
        "wlog": red.wlog,
        "prob_mark": red.prob_mark,
        "forced_mark": red.forced_mark,
        "prob_drop": red.prob_drop,
        "forced_drop": red.forced_drop,
    }


def _frames(p: CwndParams, flows: list[Flow]) -> list[Frame[CwndState]]:
    evs: list[tuple[float, int, int, dict[str, Any]]] = []
    for f in flows:
        for j, e in enumerate(f.events):
            evs.append((e["t"], f.index, j, e))
    evs.sort(key=lambda x: (x[0], x[1], x[2]))
    if len(evs) > MAX_FRAMES:
        evs = _coarsen(evs)
    frames: list[Frame[CwndState]] = []
    ccs = {f.index: f.cc_name for f in flows}
    prev: dict[int, dict[str, Any]] = {}
    for i, (t, fi, _j, e) in enumerate(evs):
        d = e["detail"]
        snap = e["state"]
        state: CwndState = {"t": t, "flow": fi, "cc": ccs[fi], "event": e["type"], **snap, **d}  # type: ignore[typeddict-item]
        old = prev.get(fi, {})
        rows = [
            Field(name="flow", value=fi),
            Field(name="cc", value=ccs[fi]),
            Field(name="t", value=round(t, 4), unit="s"),
        ]
        for key, unit in (
            ("cwnd", SEGMENTS),
            ("ssthresh", SEGMENTS),
            ("inflight", SEGMENTS),
            ("srtt_ms", "ms"),
            ("ca_state", ""),
        ):
            v = d.get(key, snap[key]) if key in ("cwnd", "ssthresh") else snap[key]
            rows.append(
                Field(
                    name=key,
                    value="∞" if v is None else v,
                    unit=unit,
                    changed=key in old and old[key] != v,
                )
            )
            state[key] = v  # type: ignore[literal-required]
        for key, unit in (
            ("w_max", SEGMENTS),
            ("k_s", "s"),
            ("lost", SEGMENTS),
            ("rto_ms", "ms"),
            ("pto_ms", "ms"),
            ("rwnd", SEGMENTS),
            ("ce_marks", ""),
            ("queue_ms", "ms"),
            ("bw_mbps", "Mbit/s"),
            ("min_rtt_ms", "ms"),
            ("round", ""),  # slow-start rounds, F-RTO, SACK compression (issue 11)
            ("cwnd_start", SEGMENTS),
            ("delivered", SEGMENTS),
            ("sent", SEGMENTS),
            ("segments", SEGMENTS),
            ("delay_ms", "ms"),
            ("reo_wnd_ms", "ms"),
        ):
            if d.get(key) is not None:
                rows.append(
                    Field(
                        name=key, value=d[key], unit=unit, changed=key in old and old[key] != d[key]
                    )
                )
        if e["type"] == "bbr_mode":
            rows.append(Field(name="mode", value=f"{d['from']} → {d['to']}", changed=True))
        if "method" in d:
            rows.append(Field(name="method", value=d["method"]))
        for key in ("step", "how"):  # F-RTO's step, how an undo was proved
            if e["type"] in ("frto", "undo") and key in d:
                rows.append(Field(name=key, value=d[key]))
        prev[fi] = {**old, **{k: v for k, v in state.items() if k not in ("t", "event")}}
        frames.append(
            Frame(
                index=i,
                op=e["type"],
                result="ok",
                narration=_narration(e["text"]),
                source=sources.for_event(e["type"], ccs[fi], d),
                state=state,
                fields=tuple(rows),
                mark=_MARKS.get(e["type"]),
                time=t,
            )
        )
    return frames


def _narration(text: str) -> Message:
    """The message an event's text was rendered from (a plain string stays as written)."""
    return text.message if isinstance(text, Narration) else Message(text)


def _coarsen(
    evs: list[tuple[float, int, int, dict[str, Any]]],
) -> list[tuple[float, int, int, dict[str, Any]]]:
    """Keep at most MAX_FRAMES steps, sharing the budget fairly between event kinds.

    Kinds with few events keep them all; the budget left is split evenly between the rest,
    each sampled evenly in time, so every kind stays visible on the scrubber.
    """
    by_kind: dict[str, list[int]] = {}
    for k, ev in enumerate(evs):
        by_kind.setdefault(ev[3]["type"], []).append(k)
    keep: set[int] = set()
    room = MAX_FRAMES
    kinds = sorted(by_kind, key=lambda kind: (len(by_kind[kind]), kind))
    for n, kind in enumerate(kinds):
        idx = by_kind[kind]
        share = room // (len(kinds) - n)
        if len(idx) <= share:
            chosen = idx
        else:
            step = len(idx) / share
            chosen = [idx[int(j * step)] for j in range(share)]
        keep.update(chosen)
        room -= len(chosen)
    return [evs[k] for k in sorted(keep)]
