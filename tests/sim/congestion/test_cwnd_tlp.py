"""Tail loss probe (RFC 8985 §7 as in Linux 6.4's tcp_schedule_loss_probe / tcp_send_loss_probe).

The tail-loss scenarios black-hole the bottleneck for a while (every packet offered is dropped)
by setting the engine's queue limit below zero, then restore it: the ACK clock stops, and only
a probe, or else the RTO, can restart it.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from cwndhelp import lfn

from app.sim.congestion import parse, run, sources
from app.sim.congestion.engine import Engine
from app.sim.congestion.flow import CA_OPEN, CA_RECOVERY
from app.sim.core.trace import Trace

LINK = {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1}


def blackholed(cc: str, start: float, length: float, duration: float = 4.0) -> Engine:
    """One ``cc`` flow whose every packet offered in [start, start + length) is dropped."""
    eng = Engine(parse({"link": LINK, "flows": [{"cc": cc}], "duration_s": duration, "seed": 0}))
    eng.run(until=start)
    limit = eng.limit_time
    eng.limit_time = -1.0
    eng.run(until=start + length)
    eng.limit_time = limit
    eng.run()
    return eng


def kinds(eng: Engine, after: float) -> list[tuple[float, str, dict[str, Any]]]:
    return [(e["t"], e["type"], e["detail"]) for e in eng.flows[0].events if e["t"] >= after]


def test_probe_timeout_formula() -> None:
    """PTO = usecs_to_jiffies(2·srtt) + 2 ms, or + 200 ms with one segment out, capped at the
    RTO still to run; only in Open (or CWR)."""
    eng = Engine(parse({"link": LINK, "flows": [{"cc": "reno"}], "duration_s": 1, "seed": 0}))
    f = eng.flows[0]
    f.srtt_us = 70_300 << 3  # srtt 70.3 ms → 2·srtt = 140.6 ms → 141 jiffies
    f.ca_state = CA_OPEN
    f.snd_una, f.snd_nxt = 100, 110
    assert eng.schedule_loss_probe(f, 1.0, 0.3)
    assert f.tlp_deadline == pytest.approx(1.0 + 0.143)
    f.snd_nxt = 101  # one segment out: room for a delayed ACK (TCP_RTO_MIN)
    assert eng.schedule_loss_probe(f, 1.0, 0.5)
    assert f.tlp_deadline == pytest.approx(1.0 + 0.341)
    assert eng.schedule_loss_probe(f, 1.0, 0.3)  # never later than the RTO
    assert f.tlp_deadline == pytest.approx(1.3)
    f.ca_state = CA_RECOVERY
    f.tlp_deadline = 0.0
    assert not eng.schedule_loss_probe(f, 1.0, 0.3)
    assert f.tlp_deadline == 0.0


def test_tail_loss_is_recovered_by_the_probe_not_the_rto() -> None:
    """The whole tail of a window is lost and the ACKs stop: about 2·srtt after the last
    one the probe (one new segment) goes out, its SACK makes RACK mark the tail lost, and
    fast recovery repairs it. No RTO."""
    eng = blackholed("cubic", 2.0, 0.15)
    f = eng.flows[0]
    evs = kinds(eng, 2.0)
    assert [k for _, k, _ in evs][:3] == ["tlp", "loss", "recovery_enter"]
    t_tlp, _, probe = evs[0]
    t_loss, _, loss = evs[1]
    assert probe["seq"] > loss["first_lost_seq"] and probe["dropped"] == 0
    assert probe["pto_ms"] < probe["rto_ms"]
    # the probe's SACK arrives about one RTT later and RACK marks the whole tail at once
    assert 0.04 <= t_loss - t_tlp <= 0.1
    assert loss["lost"] > 20 and loss["sacked"] == 1
    assert "recovery_exit" in [k for _, k, _ in evs]
    assert f.rtos == 0 and f.tlps == 1
    assert f.snd_una > probe["seq"]


def test_one_probe_per_episode_then_the_rto() -> None:
    """If the probe is lost too, no second probe follows (tlp_high_seq): the RTO, restarted
    when the probe went out, fires one RTO after it. (The black hole ends between the probe,
    about 2.2 s, and the RTO, about 2.47 s, so the RTO's retransmission gets through.)"""
    eng = blackholed("reno", 2.0, 0.3)
    f = eng.flows[0]
    evs = kinds(eng, 2.0)
    assert [k for _, k, _ in evs][:2] == ["tlp", "rto"]
    (t_tlp, _, probe), (t_rto, _, rto) = evs[:2]
    assert probe["dropped"] == 1
    assert t_rto - t_tlp == pytest.approx(probe["rto_ms"] / 1e3, abs=1e-6)
    assert rto["rto_ms"] == probe["rto_ms"]
    assert f.tlps == 1 and f.rtos == 1


def test_paced_flow_probes_too() -> None:
    """BBR's probe waits for nothing but the pacing time, and recovers the tail the same way."""
    eng = blackholed("bbr", 2.0, 0.1)
    evs = kinds(eng, 2.0)
    assert [k for _, k, _ in evs][:3] == ["tlp", "loss", "recovery_enter"]
    assert eng.flows[0].rtos == 0


def test_steady_bulk_flow_never_probes() -> None:
    """With the ACK clock running the probe timer keeps moving and never fires."""
    for cc in ("cubic", "reno"):
        s = lfn(cc).summary
        assert s["tlps"] == 0 and s["rtos"] == 0
        assert s["flows"][0]["tlps"] == 0


def test_probe_event_is_a_frame_with_its_source() -> None:
    ref = sources.for_event("tlp", "cubic", {})
    assert ref is not None and ref.function == "tcp_send_loss_probe"
    assert ref.path == "net/ipv4/tcp_output.c"
    tr = tail_losses()
    frames = [fr for fr in tr.frames if fr.op == "tlp"]
    assert frames and all(fr.source == ref and fr.mark == "tlp" for fr in frames)
    assert all("tail loss probe" in fr.narration for fr in frames)


@functools.cache
def tail_losses() -> Trace:
    """Eight CUBIC flows through a 3-packet buffer: a few tails are lost whole and probed."""
    return run(
        parse(
            {
                "link": {"rate_mbps": 10, "rtt_ms": 40, "buffer_packets": 3},
                "flows": [{"cc": "cubic", "start_s": 0.1 * i} for i in range(8)],
                "duration_s": 10,
                "seed": 0,
            }
        )
    )


@functools.cache
def four_bbr() -> Trace:
    return run(
        parse(
            {
                "link": {"rate_mbps": 20, "rtt_ms": 40, "buffer_bdp": 1},
                "flows": [{"cc": "bbr", "start_s": 0.1 * i} for i in range(4)],
                "duration_s": 25,
                "seed": 0,
            }
        )
    )


def test_four_bbr_flows_stay_in_the_kernel_band() -> None:
    """content/cwnd-kernel-check.md, "Several flows on one bottleneck": 4×BBR on 20 Mbit/s,
    40 ms, 1-BDP buffer, 25 s, starts 0.1 s apart. The kernel lost ≈ 5 200 segments, had a
    Jain index of 0.69–0.72, 1 RTO per run and the long-term ("policer") mode in 3–4 flows.
    Before the loss probe (and the RTO restart on a resent head) the simulator had 3 RTOs."""
    s = four_bbr().summary
    assert 4000 <= s["drops"] <= 9000
    assert 0.55 <= s["jain_fairness"] <= 0.85
    assert s["rtos"] <= 2
    policed = [
        fl["index"]
        for fl in four_bbr().series["flows"]
        if any(e["type"] == "bbr_mode" and "lt_bw_mbps" in e["detail"] for e in fl["events"])
    ]
    assert len(policed) >= 3
