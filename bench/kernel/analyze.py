"""Turn raw kernel samples (TCP_INFO polls, tcp_probe events) into a short summary.

Pure functions over lists of dicts so they can be re-run on a saved JSON file:
``python bench/kernel/analyze.py data/kernel/<run>.json``.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from typing import Any

INF_SSTHRESH = 0x7FFFFFFF
CA_OPEN, CA_RECOVERY, CA_LOSS = 0, 3, 4
WIRE_BYTES = 1514  # a full-sized frame on the bottleneck: 1448 payload + 32 TCP + 20 IP + 14 eth

_PROBE = re.compile(
    r"\s(?P<ts>\d+\.\d+): tcp_probe: .*?src=(?P<src>[\d.]+):(?P<sport>\d+) "
    r"dest=(?P<dst>[\d.]+):(?P<dport>\d+) .*?data_len=(?P<data_len>\d+) "
    r"snd_nxt=(?P<snd_nxt>0x[0-9a-f]+) snd_una=(?P<snd_una>0x[0-9a-f]+) "
    r"snd_cwnd=(?P<cwnd>\d+) ssthresh=(?P<ssthresh>\d+) snd_wnd=(?P<snd_wnd>\d+) "
    r"srtt=(?P<srtt>\d+)"
)


def parse_probe_trace(
    text: str, t0: float, sport: int | None = None, dport: int | None = None
) -> list[dict[str, Any]]:
    """Parse tcp_probe lines (trace_clock=mono) into rows with t relative to ``t0``.

    ``sport`` / ``dport`` keep one flow's rows (multi-flow runs use one port per flow).
    """
    rows = []
    for line in text.splitlines():
        m = _PROBE.search(line)
        if not m:
            continue
        if sport is not None and int(m["sport"]) != sport:
            continue
        if dport is not None and int(m["dport"]) != dport:
            continue
        rows.append(
            {
                "t": round(float(m["ts"]) - t0, 6),
                "snd_cwnd": int(m["cwnd"]),
                "snd_ssthresh": int(m["ssthresh"]),
                "srtt_us": int(m["srtt"]),
                "snd_una": int(m["snd_una"], 16),
                "snd_nxt": int(m["snd_nxt"], 16),
                "snd_wnd": int(m["snd_wnd"]),
            }
        )
    return rows


def _first(rows: list[dict[str, Any]], pred: Any, start: int = 0) -> int | None:
    for i in range(start, len(rows)):
        if pred(rows[i]):
            return i
    return None


def _at(rows: list[dict[str, Any]], t: float) -> int:
    """Index of the last row with time <= t (0 if none)."""
    lo, hi = 0, len(rows)
    while lo < hi:
        mid = (lo + hi) // 2
        if rows[mid]["t"] <= t:
            lo = mid + 1
        else:
            hi = mid
    return max(0, lo - 1)


def reductions(info: list[dict[str, Any]], probe: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every multiplicative decrease: entry into CWR/Recovery/Loss, or a step down
    of the raw ssthresh while Open (HyStart).

    The cut is found in the TCP_INFO polls (their ssthresh is the raw
    ``tp->snd_ssthresh``) and then pinned to the exact ACK with tcp_probe when we
    have it: tcp_probe fires *before* an ACK is processed, so the row just before
    the new ssthresh first shows carries the cwnd the kernel scaled.  (tcp_probe's
    own ssthresh field is ``tcp_current_ssthresh()``, i.e. max(ssthresh, 3/4 cwnd)
    while in Open, so it cannot be used on its own to find cuts.)
    """
    events = []
    for i in range(1, len(info)):
        prev, cur = info[i - 1], info[i]
        entered = prev["ca_state"] < 2 <= cur["ca_state"]  # Open/Disorder -> CWR/Recovery/Loss
        if not entered and cur["snd_ssthresh"] >= prev["snd_ssthresh"]:
            continue
        new = cur["snd_ssthresh"]
        ev: dict[str, Any] = {
            "t": cur["t"],
            "cwnd_before": prev["snd_cwnd"],
            "ssthresh": new,
            "pinned_by": "tcp_info",
        }
        if probe:
            a, b = _at(probe, prev["t"] - 0.003), _at(probe, cur["t"] + 0.003)
            for k in range(a + 1, b + 1):
                if probe[k]["snd_ssthresh"] == new and probe[k - 1]["snd_ssthresh"] != new:
                    ev.update(
                        t=probe[k]["t"], cwnd_before=probe[k - 1]["snd_cwnd"], pinned_by="tcp_probe"
                    )
                    break
        w = ev["cwnd_before"]
        ev["ratio"] = round(new / w, 4) if w else None
        k = _at(info, cur["t"] + 0.1)
        states = {info[x]["ca_state"] for x in range(i, k + 1)}
        retrans = info[_at(info, cur["t"] + 0.25)]["total_retrans"] - prev["total_retrans"]
        ev["retrans_during"] = retrans
        if CA_LOSS in states:
            ev["kind"] = "RTO"
        elif CA_RECOVERY in states:
            ev["kind"] = "fast-recovery"
        elif 2 in states:
            ev["kind"] = "CWR"
        else:
            ev["kind"] = "no-loss (HyStart)" if retrans == 0 else "loss"
        m = _first(info, lambda r: r["ca_state"] != CA_OPEN, i - 1)
        if m is not None and info[m]["t"] <= cur["t"] + 0.1:
            n = _first(info, lambda r: r["ca_state"] == CA_OPEN, m)
            if n is not None:
                ev["recovery_s"] = round(info[n]["t"] - info[m]["t"], 4)
                ev["cwnd_after_recovery"] = info[n]["snd_cwnd"]
        events.append(ev)
    series = probe or info
    # time to climb back to the cwnd before the cut (CUBIC's K, Reno's sawtooth length)
    for a, ev in enumerate(events):
        idx = _at(series, ev["t"])
        end_t = events[a + 1]["t"] if a + 1 < len(events) else math.inf
        back = _first(series, lambda r, w=ev["cwnd_before"]: r["snd_cwnd"] >= w, idx + 1)
        if back is not None and series[back]["t"] < end_t:
            ev["regain_s"] = round(series[back]["t"] - ev["t"], 3)
        if a + 1 < len(events):
            ev["interval_to_next_s"] = round(events[a + 1]["t"] - ev["t"], 3)
            ev["growth_pkts_per_rtt"] = _growth(series, ev, events[a + 1]["t"])
    return events


def recovery_episodes(info: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stretches where ca_state is Recovery (3) or Loss/RTO (4)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for i, r in enumerate(info):
        bad = r["ca_state"] in (CA_RECOVERY, CA_LOSS)
        if bad and cur is None:
            cur = {
                "t": r["t"],
                "cwnd_before": info[max(0, i - 1)]["snd_cwnd"],
                "state": r["ca_state"],
                "cwnd_min": r["snd_cwnd"],
            }
        elif bad and cur is not None:
            cur["state"] = max(cur["state"], r["ca_state"])
            cur["cwnd_min"] = min(cur["cwnd_min"], r["snd_cwnd"])
        elif cur is not None:
            cur["dur_ms"] = round(1000 * (r["t"] - cur["t"]), 1)
            cur["cwnd_after"] = r["snd_cwnd"]
            out.append(cur)
            cur = None
    return out


def _growth(series: list[dict[str, Any]], ev: dict[str, Any], t_end: float) -> list[float]:
    """cwnd growth per RTT in the first and second half of the climb after a cut.

    Reno should give ~1.0 in both halves; CUBIC a concave start then whatever
    dominates later (the cubic curve or its Reno-friendly estimate).
    """
    start = ev["t"] + ev.get("recovery_s", 0.1) + 0.05
    rtt_key = "srtt_us" if "srtt_us" in series[0] else "rtt"
    out = []
    mid = (start + t_end) / 2
    for a, b in ((start, mid), (mid, t_end - 0.01)):
        i, j = _at(series, a), _at(series, b)
        rtts = 0.0
        for k in range(i + 1, j + 1):
            srtt = series[k][rtt_key] / 1e6
            if srtt > 0:
                rtts += (series[k]["t"] - series[k - 1]["t"]) / srtt
        dw = series[j]["snd_cwnd"] - series[i]["snd_cwnd"]
        out.append(round(dw / rtts, 3) if rtts > 0 else float("nan"))
    return out


def _runs(values: list[tuple[float, Any]]) -> list[tuple[Any, float, float]]:
    """Collapse (t, value) into (value, t_start, t_end) runs."""
    out: list[tuple[Any, float, float]] = []
    for t, v in values:
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1], t)
        else:
            out.append((v, t, t))
    return out


def bbr_summary(info: list[dict[str, Any]], series: list[dict[str, Any]]) -> dict[str, Any]:
    gains = [(r["t"], r.get("bbr_pacing_gain")) for r in info if "bbr_pacing_gain" in r]
    runs = _runs([(t, round(g, 3)) for t, g in gains])
    first_hi = next((n for n, (g, _, _) in enumerate(runs) if g > 2.0), None)
    startup_end = None
    if first_hi is not None:
        startup_end = next((s for g, s, _ in runs[first_hi:] if g < 2.0), None)
    out: dict[str, Any] = {"startup_end_s": startup_end}
    startup_gain = runs[first_hi][0] if first_hi is not None else None
    out["startup_pacing_gain"] = startup_gain
    drain = [g for g, _, _ in runs if 0.0 < g < 0.5]
    out["drain_gain"] = drain[0] if drain else None
    # ProbeBW cycle: the distinct gains after startup and their mean phase length
    cyc: dict[str, list[float]] = {}
    for g, s, e in runs:
        if startup_end is not None and s > startup_end and g in (1.25, 0.75):
            cyc.setdefault(str(g), []).append(e - s)
    out["probe_bw_phases"] = {
        g: {"count": len(v), "mean_ms": round(1000 * statistics.mean(v), 1)} for g, v in cyc.items()
    }
    up = [s for g, s, _ in runs if g == 1.25 and startup_end is not None and s > startup_end]
    if len(up) > 2:
        out["gain_cycle_period_ms"] = round(
            1000 * statistics.median([b - a for a, b in zip(up, up[1:], strict=False)]), 1
        )
    # ProbeRTT: cwnd pinned at the 4-packet floor
    src = series or info
    low = _runs([(r["t"], r["snd_cwnd"] <= 4) for r in src])
    dips = [(s, e) for v, s, e in low if v and (startup_end is None or s > startup_end)]
    out["probe_rtt_dips"] = [
        {"t": round(s, 3), "dur_ms": round(1000 * (e - s), 1)} for s, e in dips
    ]
    out["probe_rtt_min_cwnd"] = min(
        (r["snd_cwnd"] for r in src if r["t"] > (startup_end or 0)), default=None
    )
    if len(dips) > 1:
        out["probe_rtt_spacing_s"] = [
            round(b[0] - a[0], 2) for a, b in zip(dips, dips[1:], strict=False)
        ]

    # plateau in ProbeBW, away from ProbeRTT dips
    def in_dip(t: float) -> bool:
        return any(s - 0.05 <= t <= e + 0.5 for s, e in dips)

    steady = [
        r
        for r in info
        if startup_end is not None and r["t"] > startup_end + 1.0 and not in_dip(r["t"])
    ]
    if steady:
        cw = [r["snd_cwnd"] for r in steady]
        mss = steady[-1]["snd_mss"] or 1448
        bw = statistics.median(r.get("bbr_bw", 0) for r in steady)  # bytes/s of payload
        mrtt = statistics.median(r.get("bbr_min_rtt", 0) for r in steady) / 1e6
        bdp = bw * mrtt / mss
        out["plateau_cwnd_median"] = statistics.median(cw)
        out["plateau_cwnd_range"] = [min(cw), max(cw)]
        out["bbr_bw_mbit"] = round(bw * 8 / 1e6, 3)
        out["bbr_min_rtt_ms"] = round(mrtt * 1000, 3)
        out["bbr_bdp_pkts"] = round(bdp, 1)
        out["plateau_over_bdp"] = round(statistics.median(cw) / bdp, 3) if bdp else None
    return out


def summarize(run: dict[str, Any]) -> dict[str, Any]:
    cfg = run["config"]
    info = run["tcp_info"]
    series = run.get("tcp_probe") or info
    cc = cfg["cc"]
    rate_bps = cfg["rate_mbit"] * 1e6
    link_pps = rate_bps / 8 / WIRE_BYTES
    base_rtt = cfg["rtt_ms"] / 1000.0
    s: dict[str, Any] = {
        "cc": cc,
        "source": "tcp_probe" if run.get("tcp_probe") else "tcp_info",
        "samples_tcp_info": len(info),
        "samples_tcp_probe": len(run.get("tcp_probe") or []),
        "link_bdp_pkts": round(link_pps * base_rtt, 1),
        "buffer_pkts": round(cfg["limit_bytes"] / WIRE_BYTES, 1),
    }
    if not info:
        return s
    last = info[-1]
    s["goodput_mbit"] = round(last["bytes_acked"] * 8 / last["t"] / 1e6, 3) if last["t"] else None
    s["peak_cwnd"] = max(r["snd_cwnd"] for r in series)
    steady = [r for r in info if r["t"] > 1.0] or info
    s["mean_srtt_ms"] = round(statistics.mean(r["rtt"] for r in steady) / 1000, 2)
    s["min_rtt_ms"] = round(last["min_rtt"] / 1000, 3)
    s["total_retrans"] = last["total_retrans"]
    s["tbf_drops"] = run.get("tc", {}).get("dropped")
    episodes = recovery_episodes(info)
    s["recovery_episodes"] = len(episodes)
    s["rto_episodes"] = sum(e["state"] == CA_LOSS for e in episodes)
    ev = reductions(info, run.get("tcp_probe") or []) if cc != "bbr" else []
    s["reductions"] = ev
    for e in ev:
        w = e["cwnd_before"]
        if cc == "reno":
            e["kernel_formula"] = max(w >> 1, 2)
        elif cc == "cubic":
            e["kernel_formula"] = max(w * 717 >> 10, 2)
    losses = [e for e in ev if e["kind"] in ("fast-recovery", "RTO", "loss")]
    if losses and "kernel_formula" in losses[0]:
        s["ssthresh_matches_formula"] = (
            f"{sum(e['ssthresh'] == e['kernel_formula'] for e in losses)}/{len(losses)}"
        )
    if losses:
        s["loss_ratio_mean"] = round(statistics.mean(e["ratio"] for e in losses), 4)
        gaps = [e["interval_to_next_s"] for e in losses if "interval_to_next_s" in e]
        if gaps:
            s["loss_interval_mean_s"] = round(statistics.mean(gaps), 3)
    if cc == "bbr":
        s["bbr"] = bbr_summary(info, run.get("tcp_probe") or [])
        s["bbr"]["ssthresh_set"] = sorted(
            {r["snd_ssthresh"] for r in info if r["snd_ssthresh"] < INF_SSTHRESH}
        )
        end = s["bbr"].get("startup_end_s") or 0.0
        s["bbr"]["recoveries_after_startup"] = [
            {
                "t": e["t"],
                "dur_ms": e.get("dur_ms"),
                "cwnd": [e["cwnd_before"], e["cwnd_min"], e.get("cwnd_after")],
            }
            for e in episodes
            if e["t"] > end + 0.5
        ]
        s["bbr"]["retrans_after_startup"] = (
            last["total_retrans"] - info[_at(info, end + 0.5)]["total_retrans"]
        )
    return s


def format_summary(s: dict[str, Any]) -> str:
    lines = [
        f"== {s['cc']}: goodput {s.get('goodput_mbit')} Mbit/s, peak cwnd {s.get('peak_cwnd')}, "
        f"link BDP {s['link_bdp_pkts']} pkts + buffer {s['buffer_pkts']} pkts",
        f"   mean srtt {s.get('mean_srtt_ms')} ms (min_rtt {s.get('min_rtt_ms')} ms), "
        f"retrans {s.get('total_retrans')}, tbf drops {s.get('tbf_drops')}, "
        f"recovery episodes {s.get('recovery_episodes')} (RTO {s.get('rto_episodes')})",
        f"   cwnd source {s['source']} ({s['samples_tcp_probe']} probe / "
        f"{s['samples_tcp_info']} TCP_INFO samples)",
    ]
    for e in s.get("reductions", []):
        lines.append(
            f"   t={e['t']:7.3f}s cut {e['cwnd_before']:4d} -> ssthresh {e['ssthresh']:4d} "
            f"ratio {e['ratio']:.4f} [{e['kind']}, {e['pinned_by']}] "
            f"after-recovery cwnd {e.get('cwnd_after_recovery', '-')} "
            f"regain {e.get('regain_s', '-')}s next {e.get('interval_to_next_s', '-')}s"
            + (f" growth/RTT {e['growth_pkts_per_rtt']}" if "growth_pkts_per_rtt" in e else "")
        )
    if "loss_ratio_mean" in s:
        lines.append(
            f"   mean post-loss ratio {s['loss_ratio_mean']}, "
            f"mean interval between cuts {s.get('loss_interval_mean_s', '-')} s, "
            f"ssthresh == kernel formula in {s.get('ssthresh_matches_formula', '-')}"
        )
    b = s.get("bbr")
    if b:
        lines.append(
            f"   BBR startup gain {b.get('startup_pacing_gain')} until {b.get('startup_end_s')}s, "
            f"drain gain {b.get('drain_gain')}, ProbeBW phases {b.get('probe_bw_phases')}, "
            f"cycle {b.get('gain_cycle_period_ms', '-')} ms"
        )
        lines.append(
            f"   plateau cwnd median {b.get('plateau_cwnd_median')} range "
            f"{b.get('plateau_cwnd_range')} vs BBR BDP {b.get('bbr_bdp_pkts')} pkts "
            f"(bw {b.get('bbr_bw_mbit')} Mbit/s x min_rtt {b.get('bbr_min_rtt_ms')} ms) "
            f"-> {b.get('plateau_over_bdp')} x BDP"
        )
        lines.append(
            f"   ProbeRTT dips (cwnd<=4): {b.get('probe_rtt_dips')} spacing "
            f"{b.get('probe_rtt_spacing_s', '-')} s, min cwnd {b.get('probe_rtt_min_cwnd')}"
        )
        lines.append(
            f"   ssthresh values set {b.get('ssthresh_set')}; after startup: retrans "
            f"{b.get('retrans_after_startup')}, recoveries {b.get('recoveries_after_startup')}"
        )
    return "\n".join(lines)


def jain(xs: list[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = equal shares, 1/n = one flow has all."""
    sq = sum(x * x for x in xs)
    return round(sum(xs) ** 2 / (len(xs) * sq), 4) if sq > 0 else None


def lt_bw_episodes(info: list[dict[str, Any]], after: float) -> list[dict[str, Any]]:
    """BBR v1 long-term ("policer") bandwidth mode, seen from TCP_CC_INFO.

    While ``bbr->lt_use_bw`` is set, bbr_update_gains() pins the ProbeBW pacing gain
    at 1.0 and bbr_bw() reports the frozen lt_bw, for 48 round trips
    (bbr_lt_bw_max_rtts).  A normal ProbeBW 1.0 stretch lasts 6 rounds, so a gain
    of exactly 1.0 held for more than ~0.8 s (with a constant bw) marks an episode.
    """
    out: list[dict[str, Any]] = []
    runs = _runs([(r["t"], round(r.get("bbr_pacing_gain", 0), 3)) for r in info if r["t"] > after])
    for g, a, b in runs:
        if g == 1.0 and b - a > 0.8:
            bws = sorted({r.get("bbr_bw") or 0 for r in info if a <= r["t"] <= b})
            out.append(
                {
                    "t": round(a, 3),
                    "dur_s": round(b - a, 3),
                    "bw_mbit": [round(bws[0] * 8 / 1e6, 2), round(bws[-1] * 8 / 1e6, 2)],
                    "distinct_bw": len(bws),
                }
            )
    return out


def _dropped_segments(run: dict[str, Any]) -> int | None:
    r, tc = run.get("relay", {}), run.get("tc", {})
    if "a2b_send_drop_segs" not in r or tc.get("dropped") is None:
        return None
    return int(r["a2b_send_drop_segs"]) + max(0, int(tc["dropped"]) - int(r["a2b_send_drops"]))


def summarize_multi(run: dict[str, Any]) -> dict[str, Any]:
    """Per-flow summaries plus the shared-bottleneck view (fairness, drops, RTT)."""
    cfg = run["config"]
    per: list[dict[str, Any]] = []
    t_first = min(f["t0_monotonic"] for f in run["flows"])
    for k, f in enumerate(run["flows"]):
        sub = {
            "config": {**cfg, "cc": f["cc"]},
            "tc": {},
            "tcp_info": f["tcp_info"],
            "tcp_probe": f.get("tcp_probe") or [],
        }
        s = summarize(sub)
        info = f["tcp_info"]
        active = (run["t_end_monotonic"] - f["t0_monotonic"]) if "t_end_monotonic" in run else None
        last = info[-1] if info else {}
        s["index"] = k
        s["start_s"] = round(f["t0_monotonic"] - t_first, 3)
        if active and last:
            s["goodput_mbit"] = round(last["bytes_acked"] * 8 / active / 1e6, 3)
        cw = [r["snd_cwnd"] for r in info if r["t"] > 2.0]
        if cw:
            q = statistics.quantiles(cw, n=10)
            s["cwnd_steady"] = {
                "mean": round(statistics.mean(cw), 1),
                "p10": q[0],
                "median": statistics.median(cw),
                "p90": q[-1],
                "max": max(cw),
            }
        # cwnd once a second on the shared timeline (for eyeballing shapes)
        s["cwnd_per_s"] = [
            info[_at(info, t - s["start_s"])]["snd_cwnd"] if t >= s["start_s"] else None
            for t in range(1, int(cfg["seconds"]) + 1)
        ]
        if f["cc"] == "bbr" and "bbr" in s:
            s["bbr"]["lt_bw_episodes"] = lt_bw_episodes(info, s["bbr"].get("startup_end_s") or 0)
        s["rto_count"] = sum(e["state"] == CA_LOSS for e in recovery_episodes(info))
        per.append(s)
    goodputs = [s.get("goodput_mbit") or 0.0 for s in per]
    srtts = [s["mean_srtt_ms"] for s in per if s.get("mean_srtt_ms") is not None]
    return {
        "ccs": [f["cc"] for f in run["flows"]],
        "link_bdp_pkts": per[0]["link_bdp_pkts"] if per else None,
        "buffer_pkts": per[0]["buffer_pkts"] if per else None,
        "flows": per,
        "goodput_mbit": round(sum(goodputs), 3),
        "jain_fairness": jain(goodputs),
        "tbf_drops": run.get("tc", {}).get("dropped"),
        # tbf counts dropped skbs; a GSO skb of 2 segments that fits the burst is
        # dropped whole.  Segments: those in skbs the relay saw refused (ENOBUFS)
        # plus the single segments tbf_segment() dropped without refusing the skb.
        "dropped_segments": _dropped_segments(run),
        "total_retrans": sum(s.get("total_retrans") or 0 for s in per),
        "dsack_dups": sum((f["tcp_info"][-1].get("dsack_dups") or 0) for f in run["flows"]),
        "recovery_episodes": sum(s.get("recovery_episodes") or 0 for s in per),
        "mean_srtt_ms": round(statistics.mean(srtts), 2) if srtts else None,
    }


def format_multi(m: dict[str, Any]) -> str:
    lines = [
        f"== {len(m['flows'])} flows {'+'.join(m['ccs'])}: total goodput {m['goodput_mbit']} "
        f"Mbit/s, Jain {m['jain_fairness']}, tbf drops {m['tbf_drops']} skbs = "
        f"{m.get('dropped_segments')} segments, retrans {m['total_retrans']} "
        f"(DSACKed {m.get('dsack_dups')}), recoveries {m['recovery_episodes']}, mean srtt "
        f"{m['mean_srtt_ms']} ms (BDP {m['link_bdp_pkts']} + buffer {m['buffer_pkts']} pkts)"
    ]
    for s in m["flows"]:
        cs = s.get("cwnd_steady", {})
        lines.append(
            f"   flow {s['index']} {s['cc']:5s} start {s['start_s']:5.3f}s goodput "
            f"{s.get('goodput_mbit')} Mbit/s, retrans {s.get('total_retrans')}, recoveries "
            f"{s.get('recovery_episodes')} (RTO {s.get('rto_count')}), srtt "
            f"{s.get('mean_srtt_ms')} ms, cwnd t>2s mean {cs.get('mean')} "
            f"p10/50/90 {cs.get('p10')}/{cs.get('median')}/{cs.get('p90')} max {cs.get('max')}"
        )
        b = s.get("bbr")
        if b:
            lines.append(
                f"      BBR: startup ends {b.get('startup_end_s')}s, ProbeRTT dips "
                f"{[d['t'] for d in b.get('probe_rtt_dips', [])]} "
                f"(min cwnd {b.get('probe_rtt_min_cwnd')}), bw est {b.get('bbr_bw_mbit')} "
                f"Mbit/s, min_rtt {b.get('bbr_min_rtt_ms')} ms, plateau cwnd "
                f"{b.get('plateau_cwnd_median')}, lt_bw episodes {b.get('lt_bw_episodes')}"
            )
        lines.append(f"      cwnd each second: {s['cwnd_per_s']}")
    return "\n".join(lines)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if "flows" in data:
            print(format_multi(summarize_multi(data)))
        else:
            print(format_summary(summarize(data)))
