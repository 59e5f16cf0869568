"""The congestion engine on the shared simulation core: event queue, RTT estimator, ops table."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from app.sim.congestion import bbr as B
from app.sim.congestion import cubic as C
from app.sim.congestion import params as P
from app.sim.congestion.algorithms import ALGORITHMS, make_ca
from app.sim.congestion.engine import Engine
from app.sim.congestion.flow import CA_OPEN, Flow
from app.sim.congestion.reno import CongestionOps, Reno
from app.sim.core.events import EventQueue
from app.sim.core.tcp import RttEstimator
from tests.native import pure_python

PKG = Path(P.__file__).resolve().parent


def _samples(rng: random.Random, n: int) -> list[int]:
    """RTT samples in µs: a jittery base with queue build-ups, sudden drops and rare huge
    outliers (beyond TCP_RTO_MAX) so every branch of the estimator runs."""
    base = rng.choice([200, 5_000, 40_000, 300_000])
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.02:
            m = rng.randrange(60_000_000, 200_000_000)
        elif r < 0.1:
            m = rng.randrange(1, base + 1)
        elif r < 0.3:
            m = base * rng.randrange(2, 8)
        else:
            m = base + rng.randrange(0, base // 4 + 1)
        out.append(m)
    return out


def _state(e: RttEstimator) -> tuple[int, int, int, int, int, float]:
    return (e.srtt_us, e.mdev_us, e.mdev_max_us, e.rttvar_us, e.rtt_seq, e.rto_s)


@pure_python  # replaces/overrides a method compiled code calls directly
@pytest.mark.parametrize("cc", ["reno", "bbr"])
@pytest.mark.parametrize("seed", range(6))
def test_inlined_rtt_estimator_matches_the_shared_one(
    seed: int, cc: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tcp_rtt_estimator (net/ipv4/tcp_input.c) then __tcp_set_rto: the copy inlined in the
    engine's in-order ACK path (with and without cong_control) gives the same srtt, mdev,
    mdev_max, rttvar, rtt_seq and RTO as app.sim.core.tcp.RttEstimator for the same samples and
    the same snd_una/snd_nxt."""
    rng = random.Random(seed)
    link = {"rate_mbps": 1000, "rtt_ms": 40, "buffer_packets": 1_000_000}
    eng = Engine(
        P.parse({"link": link, "flows": [{"cc": cc}], "duration_s": 10, "connect": "established"})
    )
    eng.run(until=0.0)  # the flow starts: one handshake sample, IW 10 sent
    f = eng.flows[0]
    ref = RttEstimator()
    ref.srtt_us, ref.mdev_us, ref.mdev_max_us = f.srtt_us, f.mdev_us, f.mdev_max_us
    ref.rttvar_us, ref.rtt_seq, ref.rto_s = f.rttvar_us, f.rtt_seq, f.rto_s

    def slow_path(m: int) -> None:
        raise AssertionError("the ACK left the inlined path")

    monkeypatch.setattr(Flow, "rtt_estimator", slow_path)
    monkeypatch.setattr(Flow, "sample", slow_path)
    now = 0.0
    for m in _samples(rng, 400):
        now += 0.001
        if f.snd_nxt == f.snd_una:  # a paced flow may be waiting for its pacing time
            eng.push(f, max(now, f.wstamp))
            now = max(now, f.wstamp)
        ack_no = min(f.snd_una + rng.randrange(1, 3), f.snd_nxt)
        snd_nxt = f.snd_nxt
        assert f.ca_state == CA_OPEN and ack_no > f.snd_una and not f.undetected
        pkt = (ack_no - 1, now - m / 1e6, False, f.delivered, now, now, 0)
        eng.on_ack(f, now, ack_no, 0, pkt)
        ref.sample(f.last_rtt_us, ack_no, snd_nxt)
        assert _state(f) == _state(ref)
        now += max(m, 1) / 1e6  # keep time moving forward past the sample


@pytest.mark.parametrize("seed", range(3))
def test_flow_rtt_estimator_is_the_shared_one(seed: int) -> None:
    """Flow.rtt_estimator is tcp_rtt_estimator (net/ipv4/tcp_input.c) as RttEstimator runs it,
    with the flow's own snd_una/snd_nxt deciding when a round trip has passed."""
    rng = random.Random(100 + seed)
    f = Flow(index=0, cc_name="reno", ca=Reno(), start=0.0, rtt=0.04, mss=1448)
    ref = RttEstimator()
    for m in _samples(rng, 300):
        f.snd_una += rng.randrange(0, 3)
        f.snd_nxt = max(f.snd_nxt, f.snd_una) + rng.randrange(0, 4)
        f.rtt_estimator(m)
        ref.sample(m, f.snd_una, f.snd_nxt)
        assert _state(f) == _state(ref)


def test_events_use_the_shared_queue() -> None:
    """Engine events are EventQueue entries (time, priority, seq, kind, arg), popped in
    (time, priority, seq) order; the flows' timers live in the same queue."""
    eng = Engine(
        P.parse(
            {
                "link": {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1},
                "flows": [{"cc": "cubic"}, {"cc": "bbr", "start_s": 0.05}],
                "duration_s": 2,
            }
        )
    )
    assert isinstance(eng.evq, EventQueue)
    for f in eng.flows:
        for timer in (f.rto_timer, f.delack_timer, f.pace_timer):
            assert timer.queue is eng.evq
    eng.run(until=1.0)
    assert eng.evq.processed > 0 and eng.evq.now == 1.0
    entries = list(eng.evq.heap)
    assert entries and all(len(e) == 5 and e[0] > 1.0 for e in entries)
    keys = sorted((e[0], e[1], e[2]) for e in entries)
    assert len({k[2] for k in keys}) == len(keys)  # seq is unique: order never needs ``arg``


def test_one_algorithm_list() -> None:
    """params.CC_NAMES and make_ca both come from ALGORITHMS (tcp_ca_find by name)."""
    assert P.CC_NAMES == tuple(ALGORITHMS) == ("reno", "cubic", "bbr")
    rng = random.Random(0)
    for name, ops in ALGORITHMS.items():
        ca = make_ca(name, rng)
        assert type(ca) is ops and ca.name == name
    with pytest.raises(ValueError):
        make_ca("vegas", rng)


def test_ops_tables_match_the_kernels() -> None:
    """struct tcp_congestion_ops as tcp_reno, tcp_cubic.c and tcp_bbr.c fill it: only BBR has
    cong_control (and no cong_avoid), only CUBIC has pkts_acked."""
    rng = random.Random(0)
    reno, cubic, bbr = (make_ca(n, rng) for n in ("reno", "cubic", "bbr"))
    assert reno.cong_control is None and cubic.cong_control is None
    assert bbr.cong_control is not None
    assert reno.pkts_acked is None and bbr.pkts_acked is None
    assert cubic.pkts_acked is not None
    f = Flow(index=0, cc_name="bbr", ca=bbr, start=0.0, rtt=0.04, mss=1448)
    with pytest.raises(NotImplementedError):
        bbr.cong_avoid(f, 1, 0.0)
    assert f.cong_control is not None
    assert not f.paced
    f.min_rtt_us = 40_000
    bbr.init(f, 0.0)
    assert f.paced  # bbr_init: sk_pacing_status = SK_PACING_NEEDED


def test_reno_and_cubic_undo_cwnd_restore_prior_cwnd() -> None:
    """tcp_reno_undo_cwnd (tcp_cong.c), which CUBIC uses too: max(cwnd, prior_cwnd)."""
    for ca in (Reno(), C.Cubic()):
        f = Flow(index=0, cc_name=ca.name, ca=ca, start=0.0, rtt=0.04, mss=1448)
        f.cwnd, f.prior_cwnd = 30, 70
        assert ca.undo_cwnd(f) == 70
        f.cwnd = 90
        assert ca.undo_cwnd(f) == 90


def test_bbr_undo_cwnd_restarts_full_pipe_detection() -> None:
    """bbr_undo_cwnd (tcp_bbr.c): full_bw and full_bw_cnt are zeroed, the long-term sampler is
    reset, and cwnd is returned unchanged."""
    ca = B.Bbr(random.Random(0))
    f = Flow(index=0, cc_name="bbr", ca=ca, start=0.0, rtt=0.04, mss=1448)
    f.min_rtt_us = 40_000
    ca.init(f, 0.0)
    ca.full_bw, ca.full_bw_cnt = 12345, 2
    ca.lt_bw, ca.lt_use_bw, ca.lt_is_sampling = 999, 1, True
    f.cwnd = 77
    assert ca.undo_cwnd(f) == 77
    assert (ca.full_bw, ca.full_bw_cnt) == (0, 0)
    assert (ca.lt_bw, ca.lt_use_bw, ca.lt_is_sampling) == (0, 0, False)


def test_every_algorithm_fills_the_whole_table() -> None:
    """Every registered algorithm gives the required hooks (ssthresh, undo_cwnd, and
    cong_avoid unless it has cong_control), as tcp_validate_congestion_control demands."""
    for ops in ALGORITHMS.values():
        assert ops.ssthresh is not CongestionOps.ssthresh
        assert ops.undo_cwnd is not None
        ca = ops.create(random.Random(0))  # the optional hooks are properties of an instance
        assert ca.cong_control is not None or ops.cong_avoid is not CongestionOps.cong_avoid


@pytest.mark.parametrize("module", ["engine.py", "flow.py", "run.py"])
def test_the_engine_never_asks_which_algorithm(module: str) -> None:
    """The engine, the flow and the trace shaping go through the ops table only: no
    is_bbr/is_cubic flags and no reference to an algorithm's class or module."""
    text = (PKG / module).read_text()
    for word in ("is_bbr", "is_cubic", "isinstance(ca", "Bbr", "Cubic", "congestion.bbr"):
        assert word not in text, word
    assert "congestion.cubic" not in text


def test_no_assert_as_a_runtime_check() -> None:
    """app/sim/congestion never relies on ``assert`` (it vanishes under ``python -O``)."""
    for path in sorted(PKG.glob("*.py")):
        tree = ast.parse(path.read_text())
        found = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert)]
        assert not found, (path.name, found)


def test_a_finished_run_leaves_no_reference_cycles() -> None:
    """Queue entries name flows by index, so flows, timers and the queue form no cycle: a run's
    memory is freed by reference counting as soon as it is dropped, without the cyclic GC."""
    import gc

    p = P.parse(
        {
            "link": {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1},
            "flows": [{"cc": "cubic"}, {"cc": "bbr"}, {"cc": "reno"}],
            "duration_s": 2,
        }
    )
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        eng = Engine(p)
        eng.run(until=1.5)  # entries of every kind are still queued
        del eng
        gc.collect()
        leaked = [o for o in gc.garbage if isinstance(o, (Engine, Flow, EventQueue))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert leaked == []
