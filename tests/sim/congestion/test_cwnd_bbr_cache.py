"""BBR's per-ACK shortcuts give what the kernel's per-ACK computations give."""

from __future__ import annotations

import random
from math import inf, nextafter
from typing import Any

from app.sim.congestion.bbr import MIN_RTT_EXPIRES_J, _min_rtt_expiry
from app.sim.congestion.flow import JIFFIES_BASE
from app.sim.core.tcp import HZ
from tests.native import pure_python


def test_min_rtt_expiry_is_the_jiffies_test_as_a_time() -> None:
    """``now >= _min_rtt_expiry(stamp)`` exactly when ``now·HZ ≥ stamp + MIN_RTT_EXPIRES_J``
    (bbr_update_min_rtt's expiry), also for the floats next to the boundary."""
    rng = random.Random(7)
    for _ in range(5000):
        stamp = JIFFIES_BASE + rng.randrange(0, 600_000)
        t = _min_rtt_expiry(stamp)
        threshold = stamp + MIN_RTT_EXPIRES_J
        below = nextafter(t, -inf)
        for now in (t, below, nextafter(t, inf), t - 1e-7, t + 1e-7, rng.uniform(0, 700)):
            assert (now * HZ >= threshold) == (now >= t), (stamp, now)
        assert below * HZ < threshold <= t * HZ


def test_kept_bdp_and_pacing_rate_are_bbr_bdp_and_bbr_rate_bytes_per_sec() -> None:
    """What cong_control keeps between ACKs is bbr_bdp / bbr_rate_bytes_per_sec of the bw,
    gain and min_rtt it was kept with, and those are the model's current ones."""
    from app.sim.congestion import parse
    from app.sim.congestion.bbr import BBR_EXTRA_ACKED_MAX_US, BW_SCALE, Bbr
    from app.sim.congestion.engine import Engine

    eng = Engine(
        parse(
            {
                "link": {"rate_mbps": 50, "rtt_ms": 30, "buffer_bdp": 1},
                "flows": [{"cc": "bbr"}],
                "duration_s": 3,
            }
        )
    )
    seen = 0
    for step in range(1, 31):
        eng.run(step * 0.1)
        f = eng.flows[0]
        ca = f.ca
        assert isinstance(ca, Bbr)
        if ca.bdp_bw < 0:
            continue
        seen += 1
        assert ca.bdp_cwnd == ca._bdp(ca.bdp_bw, ca.bdp_gain)
        assert ca.bdp_max_aggr == ca.bdp_bw * BBR_EXTRA_ACKED_MAX_US >> BW_SCALE
        assert ca.bdp_rtt == ca.min_rtt_us and ca.bdp_bw == ca._bw()
        assert ca.bdp_gain == ca.cwnd_gain
        assert ca.rate == ca.rate_bytes_per_sec(f, ca.rate_bw, ca.rate_gain)
        assert ca.rate_gain == ca.pacing_gain and ca.rate_bw == ca._bw()
    assert seen > 20


@pure_python  # replaces/overrides a method compiled code calls directly
def test_probe_bw_shortcut_is_bbr_main() -> None:
    """Every ACK that cong_control handles itself (its PROBE_BW shortcut) leaves BBR and the
    flow as the general bbr_main steps (_main) leave them, from the same state: checked on
    copies, over runs that reach PROBE_BW's gain cycle, a loss episode and PROBE_RTT."""
    import copy

    from app.sim.congestion import parse
    from app.sim.congestion.bbr import PROBE_BW, Bbr
    from app.sim.congestion.engine import Engine

    hook = Bbr.bbr_main
    calls = checked = 0

    def state(ca: Bbr, tp: object) -> tuple[object, ...]:
        slots = tuple(
            (n, getattr(ca, n)) for n in Bbr.__slots__ if n not in ("rng", "bw", "extra_acked")
        )
        flow = tuple(
            getattr(tp, n) for n in ("cwnd", "pacing_rate", "ssthresh", "app_limited", "events")
        )
        return (slots, list(ca.extra_acked), ca.bw.t, ca.bw.v, ca.bw.quiet, flow)

    def checking(self: Bbr, tp: Any, rs: Any, now: float) -> None:
        nonlocal calls, checked
        # the shortcut's condition, as the kernel's state gives it (not the kept flag)
        shortcut = (
            self.mode == PROBE_BW
            and now < self.min_rtt_expires
            and not rs.losses
            and not (self.lt_use_bw or self.lt_is_sampling or self.packet_conservation)
            and tp.ca_state == self.prev_ca_state
        )
        assert self.probe_bw_steady == (
            self.mode == PROBE_BW
            and not (self.lt_use_bw or self.lt_is_sampling or self.packet_conservation)
        )
        calls += shortcut
        if not shortcut or calls % 7 or checked >= 1000:  # every 7th, for a spread of the run
            hook(self, tp, rs, now)
            return
        checked += 1
        ca2, tp2, rs2 = copy.deepcopy((self, tp, rs))
        hook(self, tp, rs, now)
        ca2._main(tp2, rs2, now)
        assert state(ca2, tp2) == state(self, tp), now

    runs = [  # one flow through PROBE_RTT at 10 s; two that lose packets
        ({"rate_mbps": 10, "rtt_ms": 30, "buffer_packets": 60}, 1, 10.5, 500),
        ({"rate_mbps": 20, "rtt_ms": 20, "buffer_packets": 10}, 2, 4, 10),
    ]
    Bbr.bbr_main = checking  # type: ignore[method-assign]
    try:
        for link, n, duration, least in runs:
            calls = checked = 0
            flows = [{"cc": "bbr", "start_s": 0.3 * i} for i in range(n)]
            Engine(parse({"link": link, "flows": flows, "duration_s": duration})).run()
            assert checked >= least, checked
    finally:
        Bbr.bbr_main = hook  # type: ignore[method-assign]
