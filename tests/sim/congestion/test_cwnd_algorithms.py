"""Unit truths of the three algorithms, from kernel-facts.md §4 and §3.7 (Linux 6.4)."""

from __future__ import annotations

import random

import pytest

from app.sim.congestion import bbr as B
from app.sim.congestion import cubic as C
from app.sim.congestion.flow import CA_LOSS, TCP_INFINITE_SSTHRESH, Flow
from app.sim.congestion.reno import Reno, tcp_cong_avoid_ai, tcp_slow_start


def flow(cc: str = "reno", cwnd: int = 10) -> Flow:
    ca = {"reno": Reno(), "cubic": C.Cubic(), "bbr": B.Bbr(random.Random(0))}[cc]
    f = Flow(index=0, cc_name=cc, ca=ca, start=0.0, rtt=0.04, mss=1448)
    f.cwnd = cwnd
    return f


# -- Reno (tcp_cong.c) -------------------------------------------------------------------------


def test_slow_start_adds_acked_segments_up_to_ssthresh() -> None:
    """tcp_slow_start: cwnd += acked, capped at ssthresh; the rest is returned for CA."""
    f = flow(cwnd=10)
    f.ssthresh = 13
    assert tcp_slow_start(f, 5) == 2
    assert f.cwnd == 13


def test_cong_avoid_ai_one_segment_per_window() -> None:
    """tcp_cong_avoid_ai: +1 after w ACKed segments; snd_cwnd_cnt carries the remainder."""
    f = flow(cwnd=100)
    for _ in range(49):
        tcp_cong_avoid_ai(f, 100, 2)
    assert (f.cwnd, f.snd_cwnd_cnt) == (100, 98)
    tcp_cong_avoid_ai(f, 100, 2)
    assert (f.cwnd, f.snd_cwnd_cnt) == (101, 0)
    tcp_cong_avoid_ai(f, 10, 25)  # a stretch ACK adds more than one
    assert (f.cwnd, f.snd_cwnd_cnt) == (103, 5)


def test_reno_ssthresh_halves_with_floor_two() -> None:
    """tcp_reno_ssthresh: max(cwnd >> 1, 2)."""
    r = Reno()
    assert r.ssthresh(flow(cwnd=669), 0) == 334
    assert r.ssthresh(flow(cwnd=3), 0) == 2


# -- RTT estimator and RTO (tcp_input.c:828, §3.7) -------------------------------------------


def test_first_rtt_sample_gives_rto_srtt_plus_200ms() -> None:
    """First sample: srtt = m, rttvar = max(2m, 200 ms), so RTO = 40 + 200 ms for 40 ms."""
    f = flow()
    f.rtt_estimator(40_000)
    assert f.srtt_us == 40_000 << 3
    assert f.rttvar_us == 200_000
    assert f.rto_s == pytest.approx(0.240)


def test_rto_floor_is_200ms_of_variance_not_of_rto() -> None:
    """Steady 40 ms samples keep RTO ≈ srtt + 200 ms, not max(200 ms, srtt + 4·rttvar)."""
    f = flow()
    f.rtt_estimator(40_000)
    for i in range(200):
        f.snd_una = f.snd_nxt = i + 1
        f.rtt_estimator(40_000)
    assert f.srtt_us >> 3 == 40_000
    assert f.rto_s == pytest.approx(0.240)


# -- CUBIC (tcp_cubic.c) ----------------------------------------------------------------------


def test_cubic_precomputed_constants() -> None:
    """cubictcp_register: beta_scale 15, cube_rtt_scale 410, cube_factor 2^40/410."""
    assert C.BETA_SCALE == 15
    assert C.CUBE_RTT_SCALE == 410
    assert C.CUBE_FACTOR == 2681735677


@pytest.mark.parametrize(
    ("w_max", "cwnd", "units", "seconds"),
    [
        (100, 70, 4316, 4.2148),
        (1000, 700, 9294, 9.0762),
        (10, 7, 2003, 1.9561),
    ],
)
def test_cubic_root_matches_the_kernel_table(
    w_max: int, cwnd: int, units: int, seconds: float
) -> None:
    """cubic_root with the table + one Newton step gives the facts' K values exactly."""
    assert C.cubic_root(C.CUBE_FACTOR * (w_max - cwnd)) == units
    assert C.k_seconds(w_max, cwnd) == pytest.approx(seconds, abs=1e-4)


def test_cubic_root_error_is_small() -> None:
    """'Avg err ~= 0.195%': every value stays within 1 % of the real cube root."""
    for a in [64, 1000, 2**20, 3 * 2**30, 2**40 * 500, 2**50 + 12345]:
        assert C.cubic_root(a) == pytest.approx(a ** (1 / 3), rel=0.01)


def test_recalc_ssthresh_and_fast_convergence() -> None:
    """ssthresh = cwnd·717/1024; below the previous W_max, W_max = cwnd·1741/2048."""
    f = flow("cubic", cwnd=668)
    ca = f.ca
    assert isinstance(ca, C.Cubic)
    assert ca.ssthresh(f, 1.0) == 467
    assert ca.last_max_cwnd == 668
    f.cwnd = 600
    assert ca.ssthresh(f, 2.0) == 420
    assert ca.last_max_cwnd == 600 * 1741 // 2048 == 510
    assert ca.epoch_start == 0


def test_first_epoch_grows_at_least_5_percent_per_rtt() -> None:
    """With W_max unknown (0), cnt is capped at 20, and never below 2."""
    f = flow("cubic", cwnd=300)
    f.ssthresh = 300
    ca = f.ca
    assert isinstance(ca, C.Cubic)
    ca.delay_min = 40_000
    ca.cong_avoid(f, 2, 1.0)
    assert ca.bic_K == 0 and ca.bic_origin_point == 300
    assert ca.cnt == 20


def test_epoch_after_loss_uses_k_and_origin_w_max() -> None:
    """After a loss the epoch starts below W_max: origin = W_max, K = cubic_root(...)."""
    f = flow("cubic", cwnd=668)
    ca = f.ca
    assert isinstance(ca, C.Cubic)
    ca.delay_min = 40_000
    f.cwnd = f.ssthresh = ca.ssthresh(f, 1.0)
    ca.cong_avoid(f, 2, 1.5)
    assert ca.bic_origin_point == 668
    assert ca.bic_K == C.cubic_root(C.CUBE_FACTOR * (668 - 467))
    assert f.epochs[-1]["k_s"] == pytest.approx(7.95, abs=0.02)
    # concave start: the target is barely above cwnd, so growth is slow (cnt large)
    assert ca.cnt > 20


def test_rto_wipes_cubic_state() -> None:
    """cubictcp_state(Loss) → bictcp_reset: W_max and delay_min back to 0."""
    f = flow("cubic", cwnd=500)
    ca = f.ca
    assert isinstance(ca, C.Cubic)
    ca.delay_min = 40_000
    ca.ssthresh(f, 1.0)
    assert ca.last_max_cwnd == 500
    ca.set_state(f, CA_LOSS, 1.0)
    assert ca.last_max_cwnd == 0 and ca.delay_min == 0


def test_reno_friendly_estimate_caps_cnt() -> None:
    """tcp_cwnd grows by one per cwnd·15/8 ACKed and, once above cwnd, caps cnt."""
    f = flow("cubic", cwnd=100)
    f.ssthresh = 100
    ca = f.ca
    assert isinstance(ca, C.Cubic)
    ca.delay_min = 40_000
    ca.last_max_cwnd = 1000  # far below W_max: the cubic itself is slow here
    ca.update(f, 100, 1, 1.0)
    ca.tcp_cwnd = 110  # as if Reno had grown faster
    ca.last_time -= 100  # let the curve be re-evaluated
    ca.update(f, 100, 1, 1.2)
    assert ca.cnt <= 100 // 10


# -- BBR (tcp_bbr.c) --------------------------------------------------------------------------


def test_bbr_constants() -> None:
    """The gains and windows of §4.4."""
    assert B.BBR_HIGH_GAIN == 739
    assert B.BBR_DRAIN_GAIN == 88
    assert B.BBR_CWND_GAIN == 512
    assert B.BBR_PACING_GAIN == (320, 192, 256, 256, 256, 256, 256, 256)
    assert B.BBR_BW_RTTS == 10
    assert B.BBR_MIN_RTT_WIN_SEC == 10 and B.BBR_PROBE_RTT_MODE_MS == 200
    assert B.BBR_CWND_MIN_TARGET == 4
    assert B.BBR_FULL_BW_THRESH == 320 and B.BBR_FULL_BW_CNT == 3


def test_windowed_max_filter_forgets_after_ten_rounds() -> None:
    """minmax_running_max over 10 rounds: a peak is forgotten once it is out of the window."""
    m = B.MinMax()
    m.reset(0, 0)
    m.running_max(10, 1, 100)
    for r in range(2, 12):
        m.running_max(10, r, 50)
    assert m.get() == 100
    m.running_max(10, 12, 50)
    assert m.get() == 50


def test_bbr_bdp_and_quantization_budget() -> None:
    """bdp = ceil(bw·min_rtt·gain); budget adds 3 TSO bursts, rounds even, +2 in phase 0."""
    f = flow("bbr")
    ca = f.ca
    assert isinstance(ca, B.Bbr)
    f.min_rtt_us = 40_000
    ca.init(f, 0.0)
    bw = int(8333 / 1e6 * B.BW_UNIT)  # 100 Mbit/s of 1500-byte packets
    assert ca._bdp(bw, B.BBR_UNIT) == 334
    assert ca._bdp(bw, B.BBR_CWND_GAIN) == 667
    ca._set_rate(f, 12_000_000)
    goal = ca.tso_goal
    assert goal == 12_000_000 // 1024 // 1448 == 8
    ca.mode, ca.cycle_idx = B.PROBE_BW, 0
    assert ca._quantization_budget(f, 667) == 667 + 24 + 1 + 2
    ca.cycle_idx = 3
    assert ca._quantization_budget(f, 667) == 692


def test_bbr_init_paces_iw_at_high_gain() -> None:
    """bbr_init: pacing = 2.89 × cwnd / srtt (less the 1 % margin), ssthresh infinite."""
    f = flow("bbr")
    f.rtt_estimator(40_000)
    f.min_rtt_us = 40_000
    f.ca.init(f, 0.0)
    assert f.ssthresh == TCP_INFINITE_SSTHRESH
    expect = 10 / 0.04 * 1448 * 739 / 256 * 0.99
    assert f.pacing_rate == pytest.approx(expect, rel=0.001)
