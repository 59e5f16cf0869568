"""Engine behaviour: determinism, output shape, frames, recovery, timeouts, random loss."""

from __future__ import annotations

import functools
import json

import pytest
from cwndhelp import events, lfn, raw
from hypothesis import given, settings
from hypothesis import strategies as st

from app.settings import Settings
from app.sim.congestion import PRESETS, CwndExplainer, parse, run
from app.sim.congestion.run import MAX_FRAMES, SIM_VERSION, simulate
from app.sim.core.trace import Trace

CA_STATES = {"Open", "Disorder", "CWR", "Recovery", "Loss"}


@functools.cache
def crowd() -> Trace:
    """Sixteen CUBIC flows through a 3-packet buffer: losses, recoveries and timeouts."""
    return run(
        parse(
            raw(
                ["cubic"] * 16,
                duration=20,
                link={"rate_mbps": 10, "rtt_ms": 40, "buffer_packets": 3},
            )
        )
    )


@functools.cache
def lossy() -> Trace:
    return run(
        parse(
            raw(
                "reno",
                duration=30,
                link={"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1, "loss_rate": 0.02},
            )
        )
    )


def test_runs_are_deterministic() -> None:
    """Same params, same trace (fresh engine each time, no cache)."""
    p = parse(
        raw(
            ["cubic", "bbr"],
            duration=8,
            link={"rate_mbps": 20, "rtt_ms": 30, "buffer_bdp": 1, "loss_rate": 0.001},
        )
    )
    a, b = simulate(p), simulate(p)
    assert a.series == b.series and a.summary == b.summary
    assert [f.narration for f in a.frames] == [f.narration for f in b.frames]


def test_running_in_steps_equals_running_at_once() -> None:
    """Engine.run(until=...) resumes where it stopped; the result is the same."""
    from app.sim.congestion.engine import Engine

    p = parse(
        raw(["cubic", "reno"], duration=6, link={"rate_mbps": 20, "rtt_ms": 30, "buffer_bdp": 1})
    )
    whole = Engine(p)
    whole.run()
    steps = Engine(p)
    for t in (0.5, 0.5, 1.234, 3, 5.99, 100):
        steps.run(until=t)
    for a, b in zip(whole.flows, steps.flows, strict=True):
        assert a.series == b.series and a.events == b.events
    assert whole.events_processed == steps.events_processed


def test_seed_changes_random_loss_only_through_the_rng() -> None:
    """Different seeds give different random losses at the same rate."""
    r = raw(
        "reno",
        duration=20,
        link={"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1, "loss_rate": 0.02},
    )
    a = simulate(parse({**r, "seed": 1})).summary
    b = simulate(parse({**r, "seed": 2})).summary
    assert a["random_losses"] != b["random_losses"]
    for s in (a, b):
        assert s["random_losses"] / s["packets_simulated"] == pytest.approx(0.02, abs=0.006)


def test_simulation_keeps_no_cache_but_repeats_exactly() -> None:
    """run() is pure and uncached (the web layer holds the one cache): a repeat is equal."""
    r = raw("reno", duration=2, link={"rate_mbps": 5, "rtt_ms": 20, "buffer_packets": 10})
    a, b = run(r), run(parse(r))
    assert a is not b and a.series == b.series and a.summary == b.summary


def test_trace_shape_and_json() -> None:
    """The public series/summary shape: equal-length per-flow lists, JSON-serialisable."""
    tr = crowd()
    assert tr.explainer == "cwnd" and tr.sim_version == SIM_VERSION == "cwnd-6"
    for f in tr.series["flows"]:
        n = len(f["t"])
        assert n > 0
        for key in (
            "cwnd",
            "ssthresh",
            "inflight",
            "srtt_ms",
            "pacing_mbps",
            "delivery_mbps",
            "bbr_mode",
            "ca_state",
            "w_cubic",
            "w_est",
        ):
            assert len(f[key]) == n, key
        assert set(f["ca_state"]) <= CA_STATES
        assert all(m is None for m in f["bbr_mode"])
        assert f["t"] == sorted(f["t"]) and f["t"][0] >= f["start_s"] - 1e-9
        assert all(isinstance(e["text"], str) and e["text"] for e in f["events"])
        assert [e["t"] for e in f["events"]] == sorted(e["t"] for e in f["events"])
    q = tr.series["queue"]
    assert len(q["t"]) == len(q["packets"]) == len(q["drops"]) == 2001
    assert q["drops"] == sorted(q["drops"])  # cumulative
    assert max(q["packets"]) <= 3
    json.dumps({"series": tr.series, "summary": tr.summary})


def test_summary_fields() -> None:
    """Summary: per-flow goodput/retransmits/drops, utilisation, Jain, RTT mean/p95, totals."""
    s = crowd().summary
    assert len(s["flows"]) == 16
    for f in s["flows"]:
        assert {"goodput_mbps", "retransmits", "drops", "rtos", "rtt_mean_ms", "rtt_p95_ms"} <= set(
            f
        )
    assert 0.9 < s["utilisation"] <= 1
    assert 0.8 < s["jain_fairness"] <= 1
    assert s["rtt_p95_ms"] >= s["rtt_mean_ms"] >= 40
    assert s["drops"] == sum(f["drops"] for f in s["flows"]) == s["tail_drops"]
    assert s["packets_simulated"] > 0 and s["acks_simulated"] > 0


def test_frames_are_bounded_ordered_and_sourced() -> None:
    """At most 1000 frames, frame 0 is a flow start, time-ordered, each with a kernel source."""
    for tr in (crowd(), lfn("cubic")):
        frames = tr.frames
        assert 0 < len(frames) <= MAX_FRAMES
        assert frames[0].op == "start" and frames[0].time == 0
        assert [f.index for f in frames] == list(range(len(frames)))
        assert [f.time for f in frames] == sorted(f.time for f in frames)  # type: ignore[type-var]
        for fr in frames:
            assert fr.source is not None and fr.source.path.startswith("net/ipv4/")
            assert fr.narration and fr.state["t"] == fr.time
            assert fr.fields[0].name == "flow"
    marks = {f.mark for f in crowd().frames}
    assert {"start", "loss", "recovery", "rto"} <= marks


def test_loss_frame_explains_the_cubic_cut() -> None:
    """A CUBIC loss step says the numbers: cwnd, ssthresh = cwnd × 717/1024, W_max and K."""
    fr = next(f for f in lfn("cubic").frames if f.op == "loss" and f.time > 20)
    c, ss = fr.state["cwnd"], fr.state["ssthresh"]
    assert ss == c * 717 // 1024
    assert f"loss at cwnd {c} → ssthresh {ss} = {c} × 717/1024" in fr.narration
    assert "K = " in fr.narration
    assert fr.source is not None and fr.source.function == "cubictcp_recalc_ssthresh"
    assert fr.source.line == 341


def test_prr_walks_cwnd_down_to_ssthresh() -> None:
    """During Recovery, PRR lowers cwnd gradually (not in one step); at exit cwnd = ssthresh."""
    tr = lfn("cubic")
    f = tr.series["flows"][0]
    enter = [e for e in events(tr, "recovery_enter") if e["t"] > 2][0]
    leave = [e for e in events(tr, "recovery_exit") if e["t"] > enter["t"]][0]
    inside = [
        c
        for t, c, s in zip(f["t"], f["cwnd"], f["ca_state"], strict=True)
        if enter["t"] < t < leave["t"] and s == "Recovery"
    ]
    assert len(inside) >= 3
    assert enter["detail"]["ssthresh"] < inside[0] < enter["detail"]["cwnd"]
    assert leave["detail"]["cwnd"] == enter["detail"]["ssthresh"]


def test_rto_enters_loss_with_cwnd_one() -> None:
    """tcp_enter_loss: cwnd = in flight + 1 = 1, state Loss, the timer backs off."""
    tr = crowd()
    rtos = [
        (i, e)
        for i, fl in enumerate(tr.series["flows"])
        for e in fl["events"]
        if e["type"] == "rto"
    ]
    assert rtos
    i, e = rtos[0]
    assert e["detail"]["cwnd"] == 1
    assert e["detail"]["next_rto_ms"] == pytest.approx(2 * e["detail"]["rto_ms"])
    assert e["detail"]["rto_ms"] >= 200
    fl = tr.series["flows"][i]
    k = next(j for j, t in enumerate(fl["t"]) if t >= e["t"])
    assert fl["ca_state"][k] in ("Loss", "Open")


def test_cubic_epoch_after_rto_has_no_w_max() -> None:
    """After an RTO CUBIC forgets W_max: its next epoch has K = 0 and origin = cwnd."""
    tr = crowd()
    for fl in tr.series["flows"]:
        rto_times = [e["t"] for e in fl["events"] if e["type"] == "rto"]
        for t in rto_times:
            nxt = [ep for ep in fl["epochs"] if ep["t0"] > t]
            if nxt:
                ep = nxt[0]
                lost_between = [
                    e for e in fl["events"] if e["type"] == "loss" and t < e["t"] < ep["t0"]
                ]
                if not lost_between:
                    assert ep["w_max"] == 0 and ep["k_s"] == 0
                    assert ep["origin_point"] == ep["cwnd_start"]
                    return
    pytest.skip("no RTO followed by a clean epoch in this scenario")


def test_random_loss_is_recovered_by_sack() -> None:
    """With 2 % random loss Reno keeps going: every loss is retransmitted."""
    s = lossy().summary
    assert s["random_losses"] > 100
    assert s["retransmits"] >= s["drops"]
    assert s["goodput_mbps"] > 0.5


def test_flows_start_at_their_own_time_and_rtt() -> None:
    """A late flow's series starts at its start_s; a per-flow RTT shows in its srtt."""
    r = raw(["cubic", "cubic"], duration=6, link={"rate_mbps": 20, "rtt_ms": 20, "buffer_bdp": 2})
    r["flows"][1] = {"cc": "cubic", "start_s": 3, "rtt_ms": 80}
    tr = run(r)
    a, b = tr.series["flows"]
    assert a["t"][0] == 0 and b["t"][0] == pytest.approx(3)
    assert b["rtt_ms"] == 80
    assert min(b["srtt_ms"]) >= 80 > max(a["srtt_ms"][:100])


def test_queue_delay_and_bufferbloat() -> None:
    """A deep buffer raises the RTT; a shallow one keeps it near the base RTT."""
    deep = run(raw("cubic", duration=20, link={"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 8}))
    shallow = run(
        raw("cubic", duration=20, link={"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 0.1})
    )
    assert deep.summary["rtt_mean_ms"] > 3 * 40
    assert shallow.summary["rtt_mean_ms"] < 1.2 * 40
    assert deep.summary["utilisation"] > shallow.summary["utilisation"]


def test_registered_with_presets() -> None:
    """The registry knows 'cwnd', its presets parse, and the default exists."""
    ex = CwndExplainer()
    assert ex is not None and ex.sim_version == "cwnd-6"
    slugs = {p.slug for p in ex.presets}
    assert slugs == {
        "slow-start",
        "reno-sawtooth",
        "cubic-lfn",
        "cubic-vs-reno",
        "bbr-cycle",
        "bbr-vs-cubic",
        "bufferbloat",
        "shallow-buffer",
        "ecn-red",
        "rwnd-limit",
    }
    assert ex.preset(ex.default_preset) is not None
    for p in ex.presets:
        assert ex.dump(ex.parse(dict(p.params))) == ex.dump(
            ex.parse(ex.dump(ex.parse(dict(p.params))))
        )
        assert p.lesson == f"cwnd-{p.slug}"
        assert (Settings().root / "content" / f"{p.lesson}.md").is_file()


@pytest.mark.parametrize(
    "preset", [p for p in PRESETS if p.slug != "cubic-lfn"], ids=lambda p: p.slug
)
def test_presets_run(preset) -> None:  # type: ignore[no-untyped-def]
    """Every preset runs and produces steps and its headline events."""
    tr = run(dict(preset.params))
    assert tr.frames and tr.summary["packets_simulated"] > 0
    kinds = {e["type"] for f in tr.series["flows"] for e in f["events"]}
    headline = {"ecn-red": "cwr", "rwnd-limit": "rwnd_limited"}.get(preset.slug, "loss")
    assert headline in kinds
    if "bbr" in preset.slug:
        assert "bbr_mode" in kinds


@given(
    rate=st.sampled_from([0.5, 2, 10, 50]),
    rtt=st.sampled_from([2, 20, 80]),
    buf=st.sampled_from([{"buffer_packets": 1}, {"buffer_bdp": 0.5}, {"buffer_bdp": 3}]),
    loss=st.sampled_from([0, 0, 0.01, 0.2]),
    ccs=st.lists(st.sampled_from(["reno", "cubic", "bbr"]), min_size=1, max_size=4),
    seed=st.integers(0, 1000),
)
@settings(max_examples=12, deadline=None, derandomize=True)
def test_scoreboard_invariants_hold_while_walking(rate, rtt, buf, loss, ccs, seed) -> None:  # type: ignore[no-untyped-def]
    """For any link and mix: in_flight ≥ 0, cwnd ≥ 1, retrans_out ≤ lost_out, snd_una ≤ snd_nxt,
    and the receiver never has less than the sender saw ACKed."""
    from app.sim.congestion.engine import Engine

    link = {"rate_mbps": rate, "rtt_ms": rtt, "loss_rate": loss, **buf}
    eng = Engine(parse({**raw(ccs, duration=3, link=link), "seed": seed}))
    for k in range(1, 13):
        eng.run(until=k * 0.25)
        for f in eng.flows:
            assert f.in_flight() >= 0
            assert f.cwnd >= 1
            assert 0 <= f.retrans_out <= len(f.holes)
            assert f.snd_una <= f.snd_nxt and f.rcv_nxt >= f.snd_una
