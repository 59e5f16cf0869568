"""BBR's long-term ("policer") bandwidth sampler (Linux 6.4, net/ipv4/tcp_bbr.c:
``bbr_lt_bw_sampling``, ``bbr_lt_bw_interval_done``, ``bbr_reset_lt_bw_sampling`` and
``bbr_reset_lt_bw_sampling_interval``).

Lossy intervals of 4 to 16 rounds that deliver about the same rate (within 1/8 or 4 kbit/s)
suggest a token-bucket policer: BBR then paces at their average with gain 1 for 48 rounds.
The state lives on :class:`~app.sim.congestion.bbr.Bbr` (``lt_*``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.congestion import bbr as b
from app.sim.congestion.flow import Flow, RateSample
from app.sim.core.i18n import msg

if TYPE_CHECKING:
    from app.sim.congestion.bbr import Bbr


def reset_interval(bbr: Bbr, tp: Flow) -> None:
    """bbr_reset_lt_bw_sampling_interval: a new interval starts now."""
    bbr.lt_last_stamp = int(tp.delivered_mstamp * 1e3)  # ms
    bbr.lt_last_delivered = tp.delivered
    bbr.lt_last_lost = tp.lost
    bbr.lt_rtt_cnt = 0


def reset(bbr: Bbr, tp: Flow) -> None:
    """bbr_reset_lt_bw_sampling: no long-term rate, not sampling."""
    bbr.lt_bw = 0
    bbr.lt_use_bw = 0
    bbr.lt_is_sampling = False
    reset_interval(bbr, tp)
    bbr.refresh_steady()


def interval_done(bbr: Bbr, tp: Flow, bw: int, now: float) -> None:
    """bbr_lt_bw_interval_done: two lossy intervals at about the same rate mean a policer."""
    if bbr.lt_bw:
        diff = abs(bw - bbr.lt_bw)
        if (
            diff * b.BBR_UNIT <= b.BBR_LT_BW_RATIO * bbr.lt_bw
            or bbr.rate_bytes_per_sec(tp, diff, b.BBR_UNIT) <= b.BBR_LT_BW_DIFF
        ):
            bbr.lt_bw = (bw + bbr.lt_bw) >> 1
            bbr.lt_use_bw = 1
            bbr.refresh_steady()
            bbr.pacing_gain = b.BBR_UNIT
            bbr.lt_rtt_cnt = 0
            tp.event(
                "bbr_mode",
                now,
                {
                    "from": b.MODE_NAMES[bbr.mode],
                    "to": b.MODE_NAMES[bbr.mode],
                    "lt_bw_mbps": round(bbr.lt_bw * tp.mss * 8 / b.BW_UNIT, 3),
                },
                msg(
                    "BBR long-term sampler: two lossy intervals delivered the same rate, "
                    "so it assumes a policer and paces at that rate with gain 1"
                ),
            )
            return
    bbr.lt_bw = bw
    reset_interval(bbr, tp)


def sampling(bbr: Bbr, tp: Flow, rs: RateSample, now: float) -> None:
    """bbr_lt_bw_sampling: detect a token-bucket policer from lossy, steady intervals."""
    if bbr.lt_use_bw:
        if bbr.mode == b.PROBE_BW and bbr.round_start:
            bbr.lt_rtt_cnt += 1
            if bbr.lt_rtt_cnt >= b.BBR_LT_BW_MAX_RTTS:
                reset(bbr, tp)
                bbr.reset_probe_bw_mode(tp, now, msg("48 rounds on the long-term rate are over"))
        return
    if not bbr.lt_is_sampling:
        if not rs.losses:
            return
        reset_interval(bbr, tp)
        bbr.lt_is_sampling = True
        bbr.refresh_steady()
    if rs.is_app_limited:
        reset(bbr, tp)
        return
    if bbr.round_start:
        bbr.lt_rtt_cnt = (bbr.lt_rtt_cnt + 1) & 0x7F
    if bbr.lt_rtt_cnt < b.BBR_LT_INTVL_MIN_RTTS:
        return
    if bbr.lt_rtt_cnt > 4 * b.BBR_LT_INTVL_MIN_RTTS:
        reset(bbr, tp)
        return
    if not rs.losses:
        return
    lost = tp.lost - bbr.lt_last_lost
    delivered = tp.delivered - bbr.lt_last_delivered
    if not delivered or (lost << b.BBR_SCALE) < b.BBR_LT_LOSS_THRESH * delivered:
        return
    t = int(tp.delivered_mstamp * 1e3) - bbr.lt_last_stamp
    if t < 1:
        return
    t *= 1000
    interval_done(bbr, tp, delivered * b.BW_UNIT // t, now)
