"""Faithfulness checks from issue 4 on the ns-3 comparison link (peers.md): 100 Mbit/s, 40 ms,
1-BDP drop-tail buffer (333 packets), 1448-byte segments, 60 s."""

from __future__ import annotations

import pytest
from cwndhelp import BDP_PLUS_BUFFER, at, events, lfn, raw

from app.sim.congestion import parse, run

# -- CUBIC ------------------------------------------------------------------------------------


def test_cubic_peaks_at_bdp_plus_buffer() -> None:
    """After startup every loss comes at cwnd within 5 % of BDP + buffer (ns-3: 668–671)."""
    tr = lfn("cubic")
    losses = [e for e in events(tr, "loss") if e["t"] > 2]
    assert len(losses) >= 5
    for e in losses:
        assert e["detail"]["cwnd"] == pytest.approx(BDP_PLUS_BUFFER, rel=0.05)
    f = tr.series["flows"][0]
    peak = max(c for t, c in zip(f["t"], f["cwnd"], strict=True) if t > 2)
    assert peak == pytest.approx(BDP_PLUS_BUFFER, rel=0.05)


def test_cubic_post_loss_ratio_is_0_7() -> None:
    """ssthresh / cwnd at each loss is 717/1024 = 0.70 ± 0.02, and recovery ends at ssthresh."""
    tr = lfn("cubic")
    for e in events(tr, "loss"):
        assert e["detail"]["ssthresh"] / e["detail"]["cwnd"] == pytest.approx(0.70, abs=0.02)
    for e in events(tr, "recovery_exit"):
        assert e["detail"]["cwnd"] == e["detail"]["ssthresh"]


def test_cubic_fast_convergence_alternates_short_and_long_epochs() -> None:
    """A loss below the previous W_max sets W_max = 0.85·cwnd, so epochs alternate short/long
    (ns-3: 5.97 s and 12.74 s)."""
    tr = lfn("cubic")
    losses = [e for e in events(tr, "loss") if e["t"] > 2]
    gaps = [b["t"] - a["t"] for a, b in zip(losses, losses[1:], strict=False)]
    fc = [e["detail"]["fast_convergence"] for e in losses]
    assert len(gaps) >= 4
    for g, after_fc in zip(gaps, fc, strict=False):
        if after_fc:  # W_max was lowered to 0.85·cwnd: plateau below the pipe, long epoch
            assert 11.5 < g < 14
        else:  # W_max at the pipe size: the concave approach hits it after ~K − 2 s
            assert 5 < g < 7
    assert fc[1:] == [1 - x for x in fc[:-1]]  # strictly alternating


def test_cubic_epoch_k_matches_kernel_math() -> None:
    """Each epoch's K is cubic_root((W_max − cwnd)/C) in 2^-10 s, e.g. ≈7.96 s for 672 → 470."""
    from app.sim.congestion.cubic import k_seconds

    tr = lfn("cubic")
    epochs = tr.series["flows"][0]["epochs"]
    assert len(epochs) >= 6
    for ep in epochs[1:]:
        assert ep["k_s"] == pytest.approx(k_seconds(ep["w_max"], ep["cwnd_start"]), abs=1e-3)
        assert ep["t_end"] is not None and ep["t_end"] > ep["t0"]


def test_cubic_fills_the_pipe() -> None:
    """Goodput ≥ 95 % of the payload capacity (ns-3: 99.6 %); the queue never empties."""
    tr = lfn("cubic")
    s = tr.summary
    assert s["goodput_mbps"] >= 0.95 * s["payload_capacity_mbps"]
    assert s["utilisation"] > 0.99
    q = tr.series["queue"]
    assert min(p for t, p in zip(q["t"], q["packets"], strict=True) if t > 2) > 0


def test_cubic_hystart_ends_slow_start_with_ssthresh_cwnd() -> None:
    """HyStart fires once in slow start and sets ssthresh = cwnd."""
    tr = lfn("cubic")
    (h,) = events(tr, "hystart_exit")
    assert h["detail"]["ssthresh"] == h["detail"]["cwnd"] >= 16
    assert h["detail"]["method"] in ("ack_train", "delay")


# -- Reno -------------------------------------------------------------------------------------


def test_reno_halves_on_loss() -> None:
    """ssthresh / cwnd = 0.50 ± 0.02 (ns-3 TcpLinuxReno: 668.5 → 334)."""
    tr = lfn("reno")
    losses = events(tr, "loss")
    assert len(losses) >= 3
    for e in losses:
        assert e["detail"]["ssthresh"] / e["detail"]["cwnd"] == pytest.approx(0.50, abs=0.02)
    steady = [e for e in losses if e["t"] > 2]
    assert steady and all(
        e["detail"]["cwnd"] == pytest.approx(BDP_PLUS_BUFFER, rel=0.05) for e in steady
    )


def test_reno_grows_one_segment_per_rtt() -> None:
    """In congestion avoidance cwnd grows by one segment per round trip (Linux counts ACKed
    segments, so delayed ACKs do not halve it as in ns-3's TcpNewReno)."""
    tr = lfn("reno")
    f = tr.series["flows"][0]
    exits = events(tr, "recovery_exit")
    later = [e for e in events(tr, "loss") if e["t"] > exits[-2]["t"]]
    t0, t1 = exits[-2]["t"] + 0.5, later[0]["t"] - 0.5
    rtts = 0.0
    for i in range(1, len(f["t"])):
        if t0 < f["t"][i] <= t1:
            rtts += (f["t"][i] - f["t"][i - 1]) / (f["srtt_ms"][i] / 1e3)
    grown = at(f, "cwnd", t1) - at(f, "cwnd", t0)
    assert grown / rtts == pytest.approx(1.0, abs=0.08)


def test_reno_sawtooth_period_matches_ns3() -> None:
    """From 334 back to 669 takes about 20 s (ns-3: 20.1 s)."""
    losses = [e for e in events(lfn("reno"), "loss") if e["t"] > 2]
    assert losses[1]["t"] - losses[0]["t"] == pytest.approx(20.1, abs=1.0)


# -- BBR --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bbr():  # type: ignore[no-untyped-def]
    return run(parse(raw("bbr", duration=22)))


def test_bbr_cwnd_plateau_near_two_bdp(bbr) -> None:  # type: ignore[no-untyped-def]
    """In PROBE_BW cwnd sits at 2 × BDP plus the TSO budget (ns-3, without TSO: 1.95 BDP)."""
    f = bbr.series["flows"][0]
    vals = [
        c
        for t, c, m in zip(f["t"], f["cwnd"], f["bbr_mode"], strict=True)
        if 2 < t < 9.5 and m == "PROBE_BW"
    ]
    bdp = 334  # bw 8333 packets/s × min_rtt 40.1 ms
    assert min(vals) >= 1.9 * bdp
    assert max(vals) <= 2.15 * bdp


def test_bbr_startup_drain_probe_bw(bbr) -> None:  # type: ignore[no-untyped-def]
    """STARTUP → DRAIN → PROBE_BW, with PROBE_BW never starting in the 0.75 phase."""
    modes = [(e["detail"]["from"], e["detail"]["to"]) for e in events(bbr, "bbr_mode")]
    assert modes[:2] == [("STARTUP", "DRAIN"), ("DRAIN", "PROBE_BW")]
    for e in events(bbr, "bbr_mode"):
        if e["detail"]["to"] == "PROBE_BW":
            assert e["detail"]["cycle_idx"] != 1


def test_bbr_pacing_gain_cycle(bbr) -> None:  # type: ignore[no-untyped-def]
    """PROBE_BW paces at 1.25, 0.75, then 1 × bw for six phases; a cycle lasts 8 × min_rtt
    (ns-3: 119.9 / 71.9 / 95.9 Mbit/s, period 0.32 s)."""
    f = bbr.series["flows"][0]
    idx = [i for i, t in enumerate(f["t"]) if 2 < t < 9.5]
    gains = [f["pacing_gain"][i] for i in idx]
    # run-length encode the gain sequence
    runs: list[list[float]] = []
    for i, g in zip(idx, gains, strict=True):
        if runs and runs[-1][0] == g:
            runs[-1][2] = f["t"][i]
        else:
            runs.append([g, f["t"][i], f["t"][i]])
    seq = [r[0] for r in runs]
    starts = [
        r[1] for r, nxt in zip(runs, runs[1:], strict=False) if r[0] == 1.25 and nxt[0] == 0.75
    ]
    assert len(starts) >= 15
    for k, g in enumerate(seq):
        if g == 1.25 and k + 2 < len(seq):
            assert seq[k + 1] == 0.75 and seq[k + 2] == 1.0
    periods = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    min_rtt = 0.0401
    for p in periods:
        assert p == pytest.approx(8 * min_rtt, rel=0.1)
    rates = {
        g: [f["pacing_mbps"][i] for i, gg in zip(idx, gains, strict=True) if gg == g]
        for g in (1.25, 0.75, 1.0)
    }
    assert max(rates[1.25]) == pytest.approx(119.5, abs=1)
    assert min(rates[0.75]) == pytest.approx(71.7, abs=1)
    assert rates[1.0][len(rates[1.0]) // 2] == pytest.approx(95.6, abs=1)


def test_bbr_probe_rtt_every_10_s(bbr) -> None:  # type: ignore[no-untyped-def]
    """min_rtt is only refreshed by a strictly lower sample, so it expires every 10 s and
    PROBE_RTT holds cwnd at 4 for at least 200 ms."""
    f = bbr.series["flows"][0]
    enters = [e for e in events(bbr, "bbr_mode") if e["detail"]["to"] == "PROBE_RTT"]
    leaves = [e for e in events(bbr, "bbr_mode") if e["detail"]["from"] == "PROBE_RTT"]
    assert len(enters) == 2 and len(leaves) == 2
    assert enters[0]["t"] == pytest.approx(10.0, abs=0.1)
    assert enters[1]["t"] - leaves[0]["t"] == pytest.approx(10.0, abs=0.1)
    for a, b in zip(enters, leaves, strict=True):
        assert 0.2 <= b["t"] - a["t"] < 0.4
        dip = [c for t, c in zip(f["t"], f["cwnd"], strict=True) if a["t"] < t < b["t"]]
        assert dip and max(dip) == 4
