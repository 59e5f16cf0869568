"""BBR v1 as Linux 6.4 runs it (net/ipv4/tcp_bbr.c), with the kernel's fixed-point units.

Bandwidth is kept in packets per µs << 24 (``BW_SCALE``) and gains in 1/256 (``BBR_SCALE``), so
``bdp = ceil(bw · min_rtt · gain)`` and the pacing rate come out exactly as the kernel's.

``bbr_main`` is the ``cong_control`` hook, so BBR bypasses ``cong_avoid`` and PRR: on every ACK
it updates its model (round counting and the 10-round windowed-max bw filter, ACK-aggregation
estimate, gain cycling, full-pipe detection, DRAIN, the 10 s min_rtt filter and PROBE_RTT), then
sets the pacing rate and cwnd. The long-term (policer) bandwidth sampler is included too.

Modes: STARTUP (pacing and cwnd gain 2/ln2 = 2.89) until three rounds without 25 % bw growth;
DRAIN (pacing gain 0.35) until inflight ≤ 1 BDP; PROBE_BW cycling pacing gains 1.25, 0.75, 1×6,
one min_rtt each; PROBE_RTT (cwnd 4 for ≥ 200 ms and one round) when min_rtt has not been
lowered (strictly) for 10 s.
"""

from __future__ import annotations

import random
from math import inf, nextafter, trunc
from typing import TYPE_CHECKING, Any, ClassVar, Final

from app.sim.congestion import bbr_lt
from app.sim.congestion.flow import CA_LOSS, CA_OPEN, CA_RECOVERY, JIFFIES_BASE, RateSample
from app.sim.congestion.minmax import MinMax
from app.sim.congestion.reno import CongestionOps
from app.sim.core.i18n import Message, msg
from app.sim.core.tcp import HZ, TCP_INFINITE_SSTHRESH, TCP_INIT_CWND

if TYPE_CHECKING:
    from app.sim.congestion.flow import Flow
    from app.sim.congestion.reno import CongControl

BW_SCALE: Final = 24
BW_UNIT: Final = 1 << BW_SCALE
BBR_SCALE: Final = 8
BBR_UNIT: Final = 1 << BBR_SCALE

STARTUP: Final = 0
DRAIN: Final = 1
PROBE_BW: Final = 2
PROBE_RTT: Final = 3
MODE_NAMES = ("STARTUP", "DRAIN", "PROBE_BW", "PROBE_RTT")

CYCLE_LEN: Final = 8
BBR_BW_RTTS: Final = CYCLE_LEN + 2  # max-bw filter window, in rounds
BBR_MIN_RTT_WIN_SEC: Final = 10
BBR_PROBE_RTT_MODE_MS: Final = 200
BBR_MIN_TSO_RATE: Final = 1_200_000  # bit/s
BBR_PACING_MARGIN_PERCENT: Final = 1
BBR_HIGH_GAIN: Final = BBR_UNIT * 2885 // 1000 + 1  # 739
BBR_DRAIN_GAIN: Final = BBR_UNIT * 1000 // 2885  # 88
BBR_CWND_GAIN: Final = BBR_UNIT * 2  # 512
BBR_PACING_GAIN = (BBR_UNIT * 5 // 4, BBR_UNIT * 3 // 4) + (BBR_UNIT,) * 6
BBR_CYCLE_RAND: Final = 7
BBR_CWND_MIN_TARGET: Final = 4
BBR_FULL_BW_THRESH: Final = BBR_UNIT * 5 // 4
BBR_FULL_BW_CNT: Final = 3
BBR_LT_INTVL_MIN_RTTS: Final = 4
BBR_LT_LOSS_THRESH: Final = 50
BBR_LT_BW_RATIO: Final = BBR_UNIT // 8
BBR_LT_BW_DIFF: Final = 4000 // 8
BBR_LT_BW_MAX_RTTS: Final = 48
BBR_EXTRA_ACKED_GAIN: Final = BBR_UNIT
BBR_EXTRA_ACKED_WIN_RTTS: Final = 5
BBR_ACK_EPOCH_ACKED_RESET_THRESH: Final = 1 << 20
BBR_EXTRA_ACKED_MAX_US: Final = 100 * 1000

# bbr_rate_bytes_per_sec's factor after the gain: µs per s, less the pacing margin
BBR_RATE_FACTOR: Final = 1_000_000 // 100 * (100 - BBR_PACING_MARGIN_PERCENT)
# bbr_update_min_rtt's filter expires when jiffies > min_rtt_stamp + 10 s of jiffies, i.e.
# when now·HZ ≥ min_rtt_stamp + this (jiffies = int(now·HZ) + JIFFIES_BASE)
MIN_RTT_EXPIRES_J: Final = BBR_MIN_RTT_WIN_SEC * HZ - JIFFIES_BASE + 1

SK_PACING_SHIFT: Final = 10  # sk_pacing_shift default: ~1 ms of data per TSO burst
GSO_LEGACY_MAX_SIZE: Final = 65536
MAX_TCP_HEADER: Final = 320
U32: Final = 0xFFFFFFFF


def _jiffies(now: float) -> int:
    return trunc(now * HZ) + JIFFIES_BASE


def _min_rtt_expiry(stamp: int) -> float:
    """The first time ``now`` at which bbr_update_min_rtt finds the filter stamped at jiffies
    ``stamp`` expired (``now·HZ ≥ stamp + MIN_RTT_EXPIRES_J``): ``now·HZ`` only grows with
    ``now``, so the test is ``now ≥`` this float, found exactly (the nearest floats checked)."""
    threshold = stamp + MIN_RTT_EXPIRES_J
    t = threshold / HZ
    while t * HZ < threshold:
        t = nextafter(t, inf)
    while nextafter(t, -inf) * HZ >= threshold:
        t = nextafter(t, -inf)
    return t


class Bbr(CongestionOps):
    """``struct bbr`` and the bbr_* hooks."""

    name = "bbr"
    series_keys: ClassVar[tuple[str, ...]] = ("bw_mbps", "pacing_gain", "min_rtt_ms")

    # the long-term sampler's fields (bbr_lt.py sets them)
    lt_is_sampling: bool
    lt_rtt_cnt: int
    lt_use_bw: int
    lt_bw: int
    lt_last_delivered: int
    lt_last_stamp: int
    lt_last_lost: int

    __slots__ = (
        "rng",
        "min_rtt_us",
        "min_rtt_stamp",
        "min_rtt_expires",
        "probe_rtt_done_stamp",
        "bw",
        "rtt_cnt",
        "next_rtt_delivered",
        "cycle_mstamp",
        "mode",
        "prev_ca_state",
        "packet_conservation",
        "round_start",
        "idle_restart",
        "probe_rtt_round_done",
        "lt_is_sampling",
        "lt_rtt_cnt",
        "lt_use_bw",
        "lt_bw",
        "lt_last_delivered",
        "lt_last_stamp",
        "lt_last_lost",
        "pacing_gain",
        "cwnd_gain",
        "full_bw_reached",
        "full_bw_cnt",
        "cycle_idx",
        "has_seen_rtt",
        "prior_cwnd",
        "full_bw",
        "ack_epoch_mstamp",
        "extra_acked",
        "ack_epoch_acked",
        "extra_acked_win_rtts",
        "extra_acked_win_idx",
        "probe_rtt_count",
        "tso_goal",
        "probe_bw_steady",
        "dm_us",
        "bdp_bw",
        "bdp_gain",
        "bdp_rtt",
        "bdp_cwnd",
        "bdp_max_aggr",
        "rate_bw",
        "rate_gain",
        "rate",
    )

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng  # get_random_u32_below for the PROBE_BW start phase
        self.bw = MinMax()
        self.extra_acked = [0, 0]
        self.probe_rtt_count = 0
        self.mode = STARTUP  # (init sets the model; refresh_steady reads these first)
        self.packet_conservation = 0
        self.probe_bw_steady = False
        self.tso_goal = 2  # bbr_tso_segs_goal(), recomputed whenever the pacing rate changes
        self.dm_us = 0  # tp->delivered_mstamp in µs, set once per ACK by cong_control
        self.bdp_bw = self.bdp_gain = self.bdp_rtt = -1  # _bdp_inputs: nothing kept yet
        self.bdp_cwnd = self.bdp_max_aggr = 0
        self.rate_bw = self.rate_gain = -1  # cong_control's pacing rate: none kept yet
        self.rate = 0

    @classmethod
    def create(cls, rng: random.Random) -> Bbr:
        return cls(rng)

    # -- hooks ------------------------------------------------------------------------------

    def init(self, tp: Flow, now: float) -> None:
        """bbr_init: STARTUP, empty bw filter, min_rtt from the handshake, initial pacing;
        the socket paces itself (sk_pacing_status = SK_PACING_NEEDED)."""
        tp.paced = True
        self.prior_cwnd = 0
        tp.ssthresh = TCP_INFINITE_SSTHRESH
        self.rtt_cnt = 0
        self.next_rtt_delivered = tp.delivered
        self.prev_ca_state = CA_OPEN
        self.packet_conservation = 0
        self.probe_rtt_done_stamp = 0
        self.probe_rtt_round_done = 0
        self.min_rtt_us = tp.min_rtt_us  # tcp_min_rtt(): the handshake's sample
        self.min_rtt_stamp = _jiffies(now)
        self.min_rtt_expires = _min_rtt_expiry(self.min_rtt_stamp)
        self.bw.reset(self.rtt_cnt, 0)
        self.has_seen_rtt = 0
        self._init_pacing_rate_from_rtt(tp)
        self.round_start = 0
        self.idle_restart = 0
        self.full_bw_reached = 0
        self.full_bw = 0
        self.full_bw_cnt = 0
        self.cycle_mstamp = 0
        self.cycle_idx = 0
        bbr_lt.reset(self, tp)
        self.mode = STARTUP
        self.pacing_gain = BBR_HIGH_GAIN
        self.cwnd_gain = BBR_HIGH_GAIN
        self.ack_epoch_mstamp = int(now * 1e6)
        self.ack_epoch_acked = 0
        self.extra_acked_win_rtts = 0
        self.extra_acked_win_idx = 0
        self.extra_acked[0] = self.extra_acked[1] = 0
        self.refresh_steady()

    def ssthresh(self, tp: Flow, now: float) -> int:
        """bbr_ssthresh: remember cwnd for after recovery; ssthresh itself is unchanged."""
        self._save_cwnd(tp)
        return tp.ssthresh

    def loss_text(self, tp: Flow, cwnd: int, ssthresh: int) -> tuple[dict[str, float], Message]:
        return (
            {"prior_cwnd": self.prior_cwnd},
            msg(
                "loss at cwnd {cwnd}: BBR does not cut to a fraction; it saves cwnd {prior} to "
                "restore after recovery and keeps one round of packet conservation (send one "
                "packet per packet delivered)",
                cwnd=cwnd,
                prior=self.prior_cwnd,
            ),
        )

    def start_note(self, tp: Flow) -> Message | None:
        return msg(
            "; BBR paces its first window at 2.89 × {cwnd} segments per RTT ({rate} Mbit/s)",
            cwnd=tp.cwnd,
            rate=f"{tp.pacing_rate * 8 / 1e6:.2f}",
        )

    def recovery_note(self, tp: Flow, cwnd: int) -> Message:
        return msg("BBR skips PRR and sets cwnd itself")

    def recovery_exit_note(self, tp: Flow, before: int) -> Message:
        return msg(
            "BBR's cwnd goes back to at least the {prior} it saved when the loss began",
            prior=self.prior_cwnd,
        )

    def rto_note(self, tp: Flow, cwnd: int) -> Message:
        return msg(
            "BBR zeroes full_bw, the bandwidth its full-pipe test compares against (a pipe "
            "already judged full stays so), and will restore its saved cwnd after recovery"
        )

    def record(self, tp: Flow, series: dict[str, list[Any]]) -> None:
        """The mode, the max-filter bw, the pacing gain and min_rtt at this sample tick."""
        series["bbr_mode"].append(MODE_NAMES[self.mode])
        series["bw_mbps"].append(round(self.bw_bytes_per_sec(tp) * 8e-6, 3))
        series["pacing_gain"].append(self.pacing_gain / BBR_UNIT)
        series["min_rtt_ms"].append(round(self.min_rtt_us / 1e3, 3))

    def set_state(self, tp: Flow, new_state: int, now: float) -> None:
        """bbr_set_state (tcp_bbr.c:1128): entering Loss (an RTO) ends the round, zeroes full_bw
        (not full_bw_reached) and feeds the long-term sampler a lossy sample."""
        if new_state == CA_LOSS:
            self.prev_ca_state = CA_LOSS
            self.full_bw = 0
            self.round_start = 1
            rs = RateSample()
            rs.losses = 1
            bbr_lt.sampling(self, tp, rs, now)

    def in_slow_start(self, tp: Flow) -> bool:
        """BBR's slow start is STARTUP (its ssthresh stays "infinite" throughout)."""
        return self.mode == STARTUP

    def undo_cwnd(self, tp: Flow) -> int:
        """bbr_undo_cwnd (tcp_bbr.c:1089): the slow-down was spurious, so full_bw and
        full_bw_cnt are zeroed (full_bw_reached stays) and the long-term sampler starts over;
        cwnd stays as it is."""
        self.full_bw = 0
        self.full_bw_cnt = 0
        bbr_lt.reset(self, tp)
        return tp.cwnd

    def tso_segs(self, tp: Flow) -> int:
        """The burst size: bbr_tso_segs_goal, recomputed whenever the pacing rate changes."""
        return self.tso_goal

    @property
    def cong_control(self) -> CongControl | None:
        """BBR's ``cong_control`` hook: :meth:`bbr_main`."""
        return self.bbr_main

    def bbr_main(self, tp: Flow, rs: RateSample, now: float) -> None:
        """bbr_main: bbr_update_model, then bbr_set_pacing_rate and bbr_set_cwnd.

        Every ACK comes here. PROBE_BW's ACKs (nearly all of a long run's) are handled here,
        with bbr_main's steps in the kernel's order, each under its function's name, less those
        that cannot act: for an ACK that reports no loss, in a CA state that has not changed,
        with the min_rtt filter unexpired, no long-term sampling and no packet conservation
        (``probe_bw_steady`` and the per-ACK tests below), the long-term sampler returns at
        once, the pipe is full (full_bw_reached is never cleared), STARTUP/DRAIN and PROBE_RTT
        do not act, the gains are the cycle's and bbr_set_cwnd_to_recover_or_restore changes
        nothing; bbr_set_cwnd is inlined. Every other ACK takes :meth:`_main`, the general
        steps.
        """
        if not (
            self.probe_bw_steady
            and now < self.min_rtt_expires
            and not rs.losses
            and tp.ca_state == self.prev_ca_state
        ):
            self._main(tp, rs, now)
            return
        dm = self.dm_us = trunc(tp.delivered_mstamp * 1e6)
        acked = rs.acked_sacked
        bw = self._update_bw(tp, rs, now, dm, acked)
        # bbr_update_cycle_phase: with gain 1 the phase ends after one min_rtt
        if (
            dm - self.cycle_mstamp > self.min_rtt_us
            if self.pacing_gain == BBR_UNIT
            else self._is_next_cycle_phase(tp, dm, rs.losses, rs.prior_in_flight, now)
        ):
            self._advance_cycle_phase(dm)
        # bbr_update_min_rtt: a new sample only (the filter has not expired)
        rtt_us = rs.rtt_us
        if 0 <= rtt_us < self.min_rtt_us:
            self._new_min_rtt(rtt_us, now)
        # bbr_update_gains and bbr_set_pacing_rate (has_seen_rtt is set: srtt is, from the
        # handshake's sample, before the first ACK)
        cycle_idx = self.cycle_idx
        gain = self.pacing_gain = BBR_PACING_GAIN[cycle_idx]
        self.cwnd_gain = BBR_CWND_GAIN
        if bw != self.rate_bw or gain != self.rate_gain:
            self._pacing_rate(tp, bw, gain)
        if self.rate != tp.pacing_rate:
            self._set_rate(tp, self.rate)
        # bbr_set_cwnd (as in _set_cwnd with full_bw_reached)
        cwnd = tp.cwnd
        if acked:
            if (
                bw != self.bdp_bw
                or self.bdp_gain != BBR_CWND_GAIN
                or self.min_rtt_us != self.bdp_rtt
            ):
                self._bdp_inputs(bw, BBR_CWND_GAIN)
            e0, e1 = self.extra_acked
            aggr = e0 if e0 > e1 else e1
            max_aggr = self.bdp_max_aggr
            target = self.bdp_cwnd + (aggr if aggr < max_aggr else max_aggr)
            target = (target + 3 * self.tso_goal + 1) & ~1
            if cycle_idx == 0:
                target += 2
            cwnd += acked
            if cwnd > target:
                cwnd = target
            if cwnd < BBR_CWND_MIN_TARGET:
                cwnd = BBR_CWND_MIN_TARGET
        if cwnd > tp.cwnd_clamp:
            cwnd = tp.cwnd_clamp
        tp.cwnd = cwnd

    def _main(self, tp: Flow, rs: RateSample, now: float) -> None:
        """bbr_main's steps for any ACK (cong_control's general case)."""
        dm = self.dm_us = trunc(tp.delivered_mstamp * 1e6)
        acked = rs.acked_sacked
        bw = self._update_bw(tp, rs, now, dm, acked)
        # bbr_update_cycle_phase
        mode = self.mode
        if mode == PROBE_BW and (
            dm - self.cycle_mstamp > self.min_rtt_us
            if self.pacing_gain == BBR_UNIT
            else self._is_next_cycle_phase(tp, dm, rs.losses, rs.prior_in_flight, now)
        ):
            self._advance_cycle_phase(dm)
        if self.round_start and not self.full_bw_reached:
            self._check_full_bw_reached(rs)
        if mode <= DRAIN and (mode == DRAIN or self.full_bw_reached):  # STARTUP or DRAIN
            self._check_drain(tp, now)
            mode = self.mode
        # bbr_update_min_rtt: the sample and the 10 s filter (its jiffies compared as
        # now·HZ ≥ stamp + window + 1, the same test without int(), and that as a time kept
        # with the stamp: _min_rtt_expiry); PROBE_RTT in _update_probe_rtt
        filter_expired = now >= self.min_rtt_expires
        rtt_us = rs.rtt_us
        if rtt_us >= 0 and (rtt_us < self.min_rtt_us or (filter_expired and not rs.is_ack_delayed)):
            self._new_min_rtt(rtt_us, now)
        if filter_expired or mode == PROBE_RTT:
            self._update_probe_rtt(tp, now, filter_expired)
            mode = self.mode
        # (bbr->idle_restart = 0 on delivery: only CA_EVENT_TX_START after idle sets it, which
        # a bulk sender never sees, so it stays 0)
        if mode == PROBE_BW and not self.lt_use_bw:  # bbr_update_gains' usual case
            gain = self.pacing_gain = BBR_PACING_GAIN[self.cycle_idx]
            cwnd_gain = self.cwnd_gain = BBR_CWND_GAIN
        else:
            gain, cwnd_gain = self._update_gains(mode)
        # bbr_set_pacing_rate
        if bw != self.rate_bw or gain != self.rate_gain:
            self._pacing_rate(tp, bw, gain)
        rate = self.rate
        if not self.has_seen_rtt and tp.srtt_us:
            self._init_pacing_rate_from_rtt(tp)
        if rate != tp.pacing_rate and (self.full_bw_reached or rate > tp.pacing_rate):
            self._set_rate(tp, rate)
        self._set_cwnd(tp, rs, acked, bw, cwnd_gain)

    def refresh_steady(self) -> None:
        """``probe_bw_steady``: PROBE_BW without long-term sampling or packet conservation
        (what cong_control's shortcut needs besides its per-ACK tests). Set again wherever
        those change: _set_mode, a round's start (packet conservation ends),
        bbr_set_cwnd_to_recover_or_restore and the long-term sampler (bbr_lt.py)."""
        self.probe_bw_steady = self.mode == PROBE_BW and not (
            self.lt_use_bw or self.lt_is_sampling or self.packet_conservation
        )

    def _update_bw(self, tp: Flow, rs: RateSample, now: float, dm: int, acked: int) -> int:
        """bbr_update_bw then bbr_update_ack_aggregation (both paths of cong_control): a round
        ends when a segment sent after it began is delivered (``round_start``); a valid sample
        feeds the long-term sampler and the max filter. Returns the model's bw."""
        interval_us = rs.interval_us
        if rs.delivered < 0 or interval_us <= 0:
            self.round_start = 0
            return self.lt_bw if self.lt_use_bw else self.bw.v[0]
        round_start = 0
        if rs.prior_delivered >= self.next_rtt_delivered:
            self.next_rtt_delivered = tp.delivered
            self.rtt_cnt += 1
            round_start = 1
            self.packet_conservation = 0
            self.refresh_steady()
        self.round_start = round_start
        if self.lt_use_bw or self.lt_is_sampling or rs.losses:  # else it returns at once
            bbr_lt.sampling(self, tp, rs, now)
        # minmax_running_max, unless the sample is app-limited and below the max; a sample
        # below the third choice in a round that has already left the filter unchanged leaves
        # it unchanged again (MinMax.quiet)
        sample = rs.delivered * BW_UNIT // interval_us
        filt = self.bw
        if (not rs.is_app_limited or sample >= filt.v[0]) and (
            sample >= filt.v[2] or filt.quiet != self.rtt_cnt
        ):
            filt.running_max(BBR_BW_RTTS, self.rtt_cnt, sample)
        bw = self.lt_bw if self.lt_use_bw else filt.v[0]
        if acked <= 0:
            return bw
        # bbr_update_ack_aggregation: extra_acked[] is the windowed max (over 5-10 rounds) of
        # data ACKed beyond what bw explains since the epoch began, capped at cwnd
        if round_start:
            self._ack_aggregation_round()
        epoch_us = dm - self.ack_epoch_mstamp
        expected = bw * epoch_us // BW_UNIT if epoch_us > 0 else 0
        epoch_acked = self.ack_epoch_acked
        if epoch_acked <= expected or epoch_acked + acked >= BBR_ACK_EPOCH_ACKED_RESET_THRESH:
            epoch_acked = expected = 0  # a new epoch starts at this ACK
            self.ack_epoch_mstamp = dm
        epoch_acked += acked
        if epoch_acked > 0xFFFFF:
            epoch_acked = 0xFFFFF
        self.ack_epoch_acked = epoch_acked
        extra = epoch_acked - expected
        if extra > tp.cwnd:
            extra = tp.cwnd
        win = self.extra_acked
        if extra > win[self.extra_acked_win_idx]:
            win[self.extra_acked_win_idx] = extra if extra < 0xFFFF else 0xFFFF
        return bw

    def _new_min_rtt(self, rtt_us: int, now: float) -> None:
        """bbr_update_min_rtt takes the sample: min_rtt, its stamp and the filter's expiry."""
        self.min_rtt_us = rtt_us
        self.min_rtt_stamp = _jiffies(now)
        self.min_rtt_expires = _min_rtt_expiry(self.min_rtt_stamp)

    def _pacing_rate(self, tp: Flow, bw: int, gain: int) -> int:
        """bbr_rate_bytes_per_sec(bw, gain) inlined, kept from the last ACK while bw and the
        gain are the same."""
        if bw != self.rate_bw or gain != self.rate_gain:
            self.rate_bw = bw
            self.rate_gain = gain
            self.rate = ((bw * tp.mss * gain >> BBR_SCALE) * BBR_RATE_FACTOR) >> BW_SCALE
        return self.rate

    def _update_gains(self, mode: int) -> tuple[int, int]:
        """bbr_update_gains: the pacing and cwnd gains of ``mode`` (set, and returned)."""
        if mode == PROBE_BW:
            gain = BBR_UNIT if self.lt_use_bw else BBR_PACING_GAIN[self.cycle_idx]
            cwnd_gain = BBR_CWND_GAIN
        elif mode == STARTUP:
            gain = cwnd_gain = BBR_HIGH_GAIN
        elif mode == DRAIN:
            gain, cwnd_gain = BBR_DRAIN_GAIN, BBR_HIGH_GAIN
        else:
            gain = cwnd_gain = BBR_UNIT
        self.pacing_gain = gain
        self.cwnd_gain = cwnd_gain
        return gain, cwnd_gain

    # -- model --------------------------------------------------------------------------

    def _bw(self) -> int:
        return self.lt_bw if self.lt_use_bw else self.bw.v[0]

    def bw_bytes_per_sec(self, tp: Flow) -> float:
        return self._bw() * tp.mss * 1e6 / BW_UNIT

    def rate_bytes_per_sec(self, tp: Flow, rate: int, gain: int) -> int:
        rate *= tp.mss
        rate *= gain
        rate >>= BBR_SCALE
        rate *= BBR_RATE_FACTOR
        return rate >> BW_SCALE

    def _init_pacing_rate_from_rtt(self, tp: Flow) -> None:
        if tp.srtt_us:
            rtt_us = max(tp.srtt_us >> 3, 1)
            self.has_seen_rtt = 1
        else:
            rtt_us = 1000
        bw = tp.cwnd * BW_UNIT // rtt_us
        self._set_rate(tp, self.rate_bytes_per_sec(tp, bw, BBR_HIGH_GAIN))

    def _set_rate(self, tp: Flow, rate: int) -> None:
        tp.pacing_rate = rate
        self.tso_goal = self.tso_segs_goal(tp)

    def tso_segs_goal(self, tp: Flow) -> int:
        """bbr_tso_segs_goal: about 1 ms of data at the pacing rate, 2..127 segments."""
        rate = int(tp.pacing_rate)
        nbytes = min(rate >> SK_PACING_SHIFT, GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER)
        min_segs = 1 if rate < (BBR_MIN_TSO_RATE >> 3) else 2
        return min(max(nbytes // tp.mss, min_segs), 0x7F)

    def _save_cwnd(self, tp: Flow) -> None:
        if self.prev_ca_state < CA_RECOVERY and self.mode != PROBE_RTT:
            self.prior_cwnd = tp.cwnd
        else:
            self.prior_cwnd = max(self.prior_cwnd, tp.cwnd)

    def _bdp(self, bw: int, gain: int) -> int:
        if self.min_rtt_us == U32:
            return TCP_INIT_CWND
        w = bw * self.min_rtt_us
        return (((w * gain) >> BBR_SCALE) + BW_UNIT - 1) // BW_UNIT

    def _quantization_budget(self, tp: Flow, cwnd: int) -> int:
        cwnd += 3 * self.tso_goal
        cwnd = (cwnd + 1) & ~1
        if self.mode == PROBE_BW and self.cycle_idx == 0:
            cwnd += 2
        return cwnd

    def _inflight(self, tp: Flow, bw: int, gain: int) -> int:
        return self._quantization_budget(tp, self._bdp(bw, gain))

    def _packets_in_net_at_edt(self, tp: Flow, inflight_now: int, now: float) -> int:
        interval_us = trunc((tp.wstamp - now) * 1e6) if tp.wstamp > now else 0
        interval_delivered = (self._bw() * interval_us) >> BW_SCALE
        inflight_at_edt = inflight_now
        if self.pacing_gain > BBR_UNIT:
            inflight_at_edt += self.tso_goal
        if interval_delivered >= inflight_at_edt:
            return 0
        return inflight_at_edt - interval_delivered

    def _set_cwnd_to_recover_or_restore(self, tp: Flow, rs: RateSample, acked: int) -> int | None:
        """Packet conservation for the first round of Recovery; restore cwnd when it ends.

        Returns the new cwnd if packet conservation decides it, else None after storing the
        starting cwnd in ``tp.cwnd``.
        """
        prev_state, state = self.prev_ca_state, tp.ca_state
        cwnd = tp.cwnd
        if rs.losses > 0:
            cwnd = max(cwnd - rs.losses, 1)
        if state == CA_RECOVERY and prev_state != CA_RECOVERY:
            self.packet_conservation = 1
            self.next_rtt_delivered = tp.delivered  # start a round now
            cwnd = tp.in_flight() + acked
        elif prev_state >= CA_RECOVERY and state < CA_RECOVERY:
            cwnd = max(cwnd, self.prior_cwnd)
            self.packet_conservation = 0
        self.prev_ca_state = state
        self.refresh_steady()
        if self.packet_conservation:
            return max(cwnd, tp.in_flight() + acked)
        tp.cwnd = cwnd
        return None

    def _set_cwnd(self, tp: Flow, rs: RateSample, acked: int, bw: int, gain: int) -> None:
        """bbr_set_cwnd: slow-start toward target = bdp·gain + aggregation + TSO budget."""
        cwnd = tp.cwnd
        if acked:
            cons = None
            # bbr_set_cwnd_to_recover_or_restore changes nothing without a loss, a state
            # change or packet conservation
            if rs.losses or tp.ca_state != self.prev_ca_state or self.packet_conservation:
                cons = self._set_cwnd_to_recover_or_restore(tp, rs, acked)
                cwnd = tp.cwnd
            if cons is not None:
                cwnd = cons
            else:
                # bbr_bdp, bbr_ack_aggregation_cwnd and bbr_quantization_budget, inlined
                # (every ACK comes here; _bdp and _quantization_budget are the same steps).
                # bw, min_rtt and the gain change at round and phase boundaries, so bbr_bdp
                # and the aggregation cap, products of them, are kept from the last ACK
                if bw != self.bdp_bw or gain != self.bdp_gain or self.min_rtt_us != self.bdp_rtt:
                    self._bdp_inputs(bw, gain)
                target = self.bdp_cwnd
                full_bw_reached = self.full_bw_reached
                if full_bw_reached:
                    # bbr_extra_acked_gain is BBR_UNIT (1), so the gain drops out
                    e0, e1 = self.extra_acked
                    aggr = e0 if e0 > e1 else e1
                    max_aggr = self.bdp_max_aggr
                    target += aggr if aggr < max_aggr else max_aggr
                target = (target + 3 * self.tso_goal + 1) & ~1
                if self.mode == PROBE_BW and self.cycle_idx == 0:
                    target += 2
                if full_bw_reached:
                    cwnd += acked
                    if cwnd > target:
                        cwnd = target
                elif cwnd < target or tp.delivered < TCP_INIT_CWND:
                    cwnd += acked
                if cwnd < BBR_CWND_MIN_TARGET:
                    cwnd = BBR_CWND_MIN_TARGET
        clamp = tp.cwnd_clamp
        if cwnd > clamp:
            cwnd = clamp
        if self.mode == PROBE_RTT and cwnd > BBR_CWND_MIN_TARGET:
            cwnd = BBR_CWND_MIN_TARGET
        tp.cwnd = cwnd

    def _bdp_inputs(self, bw: int, gain: int) -> None:
        """bbr_bdp(bw, gain) and bbr_ack_aggregation_cwnd's cap (bw · 100 ms) for _set_cwnd,
        kept with the bw, gain and min_rtt they were computed from."""
        min_rtt = self.bdp_rtt = self.min_rtt_us
        self.bdp_bw = bw
        self.bdp_gain = gain
        # x >> BW_SCALE is x / BW_UNIT and -(-x >> BW_SCALE) rounds it up
        if min_rtt == U32:
            self.bdp_cwnd = TCP_INIT_CWND
        else:
            self.bdp_cwnd = -(-(bw * min_rtt * gain >> BBR_SCALE) >> BW_SCALE)
        self.bdp_max_aggr = bw * BBR_EXTRA_ACKED_MAX_US >> BW_SCALE

    def _is_next_cycle_phase(
        self, tp: Flow, dm: int, losses: int, prior_in_flight: int, now: float
    ) -> bool:
        """bbr_is_next_cycle_phase at delivered_mstamp ``dm`` (µs) for the ACK's losses and
        prior_in_flight. bbr_packets_in_net_at_edt and bbr_inflight only read, so they are
        asked only when the phase length does not already decide."""
        is_full_length = dm - self.cycle_mstamp > self.min_rtt_us
        gain = self.pacing_gain
        if gain == BBR_UNIT:
            return is_full_length
        bw = self.bw.v[0]
        if gain > BBR_UNIT:
            return is_full_length and (
                losses > 0
                or self._packets_in_net_at_edt(tp, prior_in_flight, now)
                >= self._inflight(tp, bw, gain)
            )
        return is_full_length or self._packets_in_net_at_edt(
            tp, prior_in_flight, now
        ) <= self._inflight(tp, bw, BBR_UNIT)

    def _advance_cycle_phase(self, dm: int) -> None:
        """bbr_advance_cycle_phase at delivered_mstamp ``dm`` (µs)."""
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1)
        self.cycle_mstamp = dm

    def _set_mode(
        self,
        tp: Flow,
        mode: int,
        now: float,
        why: Message,
        extra: dict[str, float],
        old: int | None = None,
    ) -> None:
        if old is None:
            old = self.mode
        self.mode = mode
        self.refresh_steady()
        detail = {
            "from": MODE_NAMES[old],
            "to": MODE_NAMES[mode],
            "cwnd": tp.cwnd,
            "bw_mbps": round(self.bw_bytes_per_sec(tp) * 8 / 1e6, 3),
            "min_rtt_ms": round(self.min_rtt_us / 1e3, 3) if self.min_rtt_us != U32 else None,
            **extra,
        }
        tp.event(
            "bbr_mode",
            now,
            detail,
            msg("BBR {old} → {new}: {why}", old=MODE_NAMES[old], new=MODE_NAMES[mode], why=why),
        )

    def reset_probe_bw_mode(self, tp: Flow, now: float, why: Message) -> None:
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.randrange(BBR_CYCLE_RAND)
        self._advance_cycle_phase(self.dm_us)
        self._set_mode(
            tp,
            PROBE_BW,
            now,
            msg(
                "{why}; gain cycling starts at phase {phase} (pacing gain {gain})",
                why=why,
                phase=self.cycle_idx,
                gain=f"{BBR_PACING_GAIN[self.cycle_idx] / BBR_UNIT:g}",
            ),
            {"cycle_idx": self.cycle_idx},
        )

    def _reset_mode(self, tp: Flow, now: float, why: Message) -> None:
        if not self.full_bw_reached:
            self._set_mode(tp, STARTUP, now, why, {})
        else:
            self.reset_probe_bw_mode(tp, now, why)

    def _ack_aggregation_round(self) -> None:
        """bbr_update_ack_aggregation at the start of a round: every 5 rounds the other half
        of extra_acked[] takes over, starting from 0 (cong_control does the rest per ACK)."""
        self.extra_acked_win_rtts = min(0x1F, self.extra_acked_win_rtts + 1)
        if self.extra_acked_win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS:
            self.extra_acked_win_rtts = 0
            self.extra_acked_win_idx ^= 1
            self.extra_acked[self.extra_acked_win_idx] = 0

    def _check_full_bw_reached(self, rs: RateSample) -> None:
        if self.full_bw_reached or not self.round_start or rs.is_app_limited:
            return
        bw_thresh = (self.full_bw * BBR_FULL_BW_THRESH) >> BBR_SCALE
        if self.bw.v[0] >= bw_thresh:
            self.full_bw = self.bw.v[0]
            self.full_bw_cnt = 0
            return
        self.full_bw_cnt += 1
        self.full_bw_reached = int(self.full_bw_cnt >= BBR_FULL_BW_CNT)

    def _check_drain(self, tp: Flow, now: float) -> None:
        if self.mode == STARTUP and self.full_bw_reached:
            bdp = self._inflight(tp, self.bw.v[0], BBR_UNIT)
            tp.ssthresh = bdp
            self._set_mode(
                tp,
                DRAIN,
                now,
                msg(
                    "bw stopped growing by a quarter (25 percent) for {rounds} rounds at {bw} Mbit/s, so the pipe "
                    "is full; pace at 0.35× to drain the queue STARTUP built (target inflight "
                    "{bdp})",
                    rounds=BBR_FULL_BW_CNT,
                    bw=f"{self.bw_bytes_per_sec(tp) * 8 / 1e6:.1f}",
                    bdp=bdp,
                ),
                {"target_inflight": bdp},
            )
        if self.mode == DRAIN:
            inflight = self._packets_in_net_at_edt(tp, tp.in_flight(), now)
            bdp = self._inflight(tp, self.bw.v[0], BBR_UNIT)
            if inflight <= bdp:
                self.reset_probe_bw_mode(
                    tp,
                    now,
                    msg(
                        "inflight {inflight} ≤ 1 BDP ({bdp} packets): the queue is drained",
                        inflight=inflight,
                        bdp=bdp,
                    ),
                )

    def _check_probe_rtt_done(self, tp: Flow, now: float) -> None:
        j = _jiffies(now)
        if not (self.probe_rtt_done_stamp and j > self.probe_rtt_done_stamp):
            return
        self.min_rtt_stamp = j
        self.min_rtt_expires = _min_rtt_expiry(j)
        tp.cwnd = max(tp.cwnd, self.prior_cwnd)
        self._reset_mode(
            tp,
            now,
            msg(
                "200 ms and one round at ≤ {target} packets done; min_rtt is {min_rtt} ms, cwnd "
                "restored to {cwnd}",
                target=BBR_CWND_MIN_TARGET,
                min_rtt=f"{self.min_rtt_us / 1e3:.2f}",
                cwnd=tp.cwnd,
            ),
        )

    def _update_probe_rtt(self, tp: Flow, now: float, filter_expired: bool) -> None:
        """bbr_update_min_rtt's PROBE_RTT part (cong_control keeps the sample): enter it when
        min_rtt expired, hold cwnd low for 200 ms and a round, then leave."""
        j = _jiffies(now)
        if filter_expired and not self.idle_restart and self.mode != PROBE_RTT:
            old = self.mode
            self.mode = PROBE_RTT  # before bbr_save_cwnd, which then keeps max(prior, cwnd)
            self._save_cwnd(tp)
            self.probe_rtt_done_stamp = 0
            self.probe_rtt_count += 1
            self._set_mode(
                tp,
                PROBE_RTT,
                now,
                msg(
                    "min_rtt was not lowered (strictly) for {win} s; cap cwnd at {target} "
                    "packets for ≥ 200 ms to drain the queue and measure the path's RTT (cwnd "
                    "{prior} saved)",
                    win=BBR_MIN_RTT_WIN_SEC,
                    target=BBR_CWND_MIN_TARGET,
                    prior=self.prior_cwnd,
                ),
                {"prior_cwnd": self.prior_cwnd},
                old=old,
            )
        if self.mode == PROBE_RTT:
            # ignore low-rate samples while cwnd is tiny
            tp.app_limited = (tp.delivered + tp.in_flight()) or 1
            if not self.probe_rtt_done_stamp and tp.in_flight() <= BBR_CWND_MIN_TARGET:
                self.probe_rtt_done_stamp = j + BBR_PROBE_RTT_MODE_MS * HZ // 1000
                self.probe_rtt_round_done = 0
                self.next_rtt_delivered = tp.delivered
            elif self.probe_rtt_done_stamp:
                if self.round_start:
                    self.probe_rtt_round_done = 1
                if self.probe_rtt_round_done:
                    self._check_probe_rtt_done(tp, now)
