"""CUBIC as Linux 6.4 runs it (net/ipv4/tcp_cubic.c, "v2.3"), with the kernel's integer math.

* Window growth, ``bictcp_update`` (:214): each epoch starts at the first ACK after a reduction;
  the target is ``origin ± 410·|t − K|³ >> 40`` with ``t`` in 2^-10 s and looked ahead by
  ``delay_min``; ``cnt = cwnd / (target − cwnd)`` then feeds ``tcp_cong_avoid_ai``. The curve is
  re-evaluated at most every HZ/32 jiffies while cwnd is unchanged, and at most once per jiffy.
* K comes from ``cubic_root`` (:167): a 64-entry table then one Newton–Raphson step, so it is
  off from the exact cube root by ~0.2 %, as in the kernel.
* Multiplicative decrease, ``cubictcp_recalc_ssthresh`` (:341): ssthresh = cwnd·717/1024, with
  fast convergence (W_max = cwnd·1741/2048 when the loss comes below the previous W_max).
* Reno-friendliness: ``tcp_cwnd`` grows by one per cwnd·15/8 ACKed segments and caps ``cnt``.
* HyStart (``hystart_update``, ``cubictcp_acked``): ACK-train and delay detection, from cwnd 16,
  setting ssthresh = cwnd when either fires. Linux's original HyStart, not HyStart++.
* ``cubictcp_state``: entering Loss (RTO) wipes the state, so W_max = 0 and the next epoch has
  K = 0 and the 20-ACK cap on ``cnt``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

from app.sim.congestion.flow import CA_LOSS, JIFFIES_BASE, sk_pacing_rate
from app.sim.congestion.reno import CongestionOps, tcp_slow_start
from app.sim.congestion.rwnd import tcp_is_cwnd_limited
from app.sim.core.i18n import Message, Param, msg
from app.sim.core.tcp import HZ

if TYPE_CHECKING:
    from app.sim.congestion.flow import Flow
    from app.sim.congestion.reno import PktsAcked

BICTCP_BETA_SCALE: Final = 1024
BICTCP_HZ: Final = 10  # t is kept in 2^-10 s units
BETA: Final = 717  # /1024 = 0.7002
BIC_SCALE: Final = 41
FAST_CONVERGENCE: Final = True
TCP_FRIENDLINESS: Final = True
# cubictcp_register: the scale factors precomputed at module load
BETA_SCALE: Final = 8 * (BICTCP_BETA_SCALE + BETA) // 3 // (BICTCP_BETA_SCALE - BETA)  # 15
CUBE_RTT_SCALE: Final = BIC_SCALE * 10  # 410 -> C = 410/1024 = 0.4004 segments/s³
CUBE_FACTOR = (1 << (10 + 3 * BICTCP_HZ)) // (BIC_SCALE * 10)  # 2^40 / 410
C: Final = CUBE_RTT_SCALE / 1024

HYSTART_ACK_TRAIN: Final = 0x1
HYSTART_DELAY: Final = 0x2
HYSTART_DETECT: Final = HYSTART_ACK_TRAIN | HYSTART_DELAY
HYSTART_LOW_WINDOW: Final = 16
HYSTART_ACK_DELTA_US: Final = 2000
HYSTART_MIN_SAMPLES: Final = 8
HYSTART_DELAY_MIN: Final = 4000
HYSTART_DELAY_MAX: Final = 16000
GSO_MAX_SIZE: Final = 65536  # sk_gso_max_size for hystart_ack_delay

U32: Final = 0xFFFFFFFF

# cbrt table for cubic_root: cube roots of the top 6 bits, hand-tuned in the kernel (Willy
# Tarreau). These are data, not code: index i holds the first guess for a = i << 3b.
_CBRT_V = bytes(
    (
        0,
        54,
        54,
        54,
        118,
        118,
        118,
        118,
        123,
        129,
        134,
        138,
        143,
        147,
        151,
        156,
        157,
        161,
        164,
        168,
        170,
        173,
        176,
        179,
        181,
        185,
        187,
        190,
        192,
        194,
        197,
        199,
        200,
        202,
        204,
        206,
        209,
        211,
        213,
        215,
        217,
        219,
        221,
        222,
        224,
        225,
        227,
        229,
        231,
        232,
        234,
        236,
        237,
        239,
        240,
        242,
        244,
        245,
        246,
        248,
        250,
        251,
        252,
        254,
    )
)


def cubic_root(a: int) -> int:
    """cubic_root (tcp_cubic.c:167): table guess from the top bits, one Newton–Raphson step.

    Returns cbrt(a) to within ~0.2 % using only integer operations, like the kernel.
    """
    b = a.bit_length()  # fls64
    if b < 7:  # a < 64: straight from the table
        return (_CBRT_V[a] + 35) >> 6
    b = ((b * 84) >> 8) - 1  # ~ b / 3, the shift that leaves 6 bits
    shift = a >> (b * 3)
    x = (((_CBRT_V[shift] + 10) << b) & U32) >> 6
    # one Newton–Raphson step, x = (2x + a/x²) / 3, with x(x-1) for x² and 341/1024 for 1/3
    x = (2 * x + ((a // (x * (x - 1))) & U32)) & U32
    return ((x * 341) & U32) >> 10


def recalc_ssthresh(cwnd: int, last_max_cwnd: int) -> tuple[int, int]:
    """cubictcp_recalc_ssthresh's arithmetic (:341): (ssthresh, the new last_max_cwnd). W_max
    is cwnd, or less with fast convergence when the loss came below the last W_max; ssthresh
    is cwnd·β, at least 2."""
    if cwnd < last_max_cwnd and FAST_CONVERGENCE:
        last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + BETA)) // (2 * BICTCP_BETA_SCALE)
    else:
        last_max_cwnd = cwnd
    return max((cwnd * BETA) // BICTCP_BETA_SCALE, 2), last_max_cwnd


def k_seconds(w_max: int, cwnd: int) -> float:
    """K in seconds exactly as bictcp_update computes it for an epoch starting at ``cwnd``."""
    if w_max <= cwnd:
        return 0.0
    return cubic_root(CUBE_FACTOR * (w_max - cwnd)) / 1024


class Cubic(CongestionOps):
    """``struct bictcp`` and the cubictcp_* hooks."""

    name = "cubic"
    series_keys: ClassVar[tuple[str, ...]] = ("w_cubic", "w_est")

    __slots__ = (
        "cnt",
        "last_max_cwnd",
        "last_cwnd",
        "last_time",
        "bic_origin_point",
        "bic_K",
        "delay_min",
        "epoch_start",
        "ack_cnt",
        "tcp_cwnd",
        "sample_cnt",
        "found",
        "round_start",
        "end_seq",
        "last_ack",
        "curr_rtt",
        "bic_target",
        "epoch_t0",
    )

    def __init__(self) -> None:
        self._reset()
        self.round_start = 0
        self.end_seq = 0
        self.last_ack = 0
        self.curr_rtt = U32
        self.bic_target = 0
        self.epoch_t0 = 0.0

    def _reset(self) -> None:
        """bictcp_reset: zero every field up to ``unused`` (so W_max and delay_min too)."""
        self.cnt = 0
        self.last_max_cwnd = 0
        self.last_cwnd = 0
        self.last_time = 0
        self.bic_origin_point = 0
        self.bic_K = 0
        self.delay_min = 0
        self.epoch_start = 0
        self.ack_cnt = 0
        self.tcp_cwnd = 0
        self.found = 0
        self.sample_cnt = 0

    def _hystart_reset(self, tp: Flow, now: float) -> None:
        """bictcp_hystart_reset: a new round ends when snd_una passes today's snd_nxt."""
        self.round_start = self.last_ack = int(now * 1e6) & U32
        self.end_seq = tp.snd_nxt
        self.curr_rtt = U32
        self.sample_cnt = 0

    def init(self, tp: Flow, now: float) -> None:
        """cubictcp_init: reset, and start HyStart's first round."""
        self._reset()
        self._hystart_reset(tp, now)

    def ssthresh(self, tp: Flow, now: float) -> int:
        """cubictcp_recalc_ssthresh (:341): end the epoch, set W_max, return cwnd·β."""
        self._close_epoch(tp, now)
        self.epoch_start = 0
        ssthresh, self.last_max_cwnd = recalc_ssthresh(tp.cwnd, self.last_max_cwnd)
        return ssthresh

    def loss_text(self, tp: Flow, cwnd: int, ssthresh: int) -> tuple[dict[str, float], Message]:
        w_max = self.last_max_cwnd
        k = k_seconds(w_max, ssthresh)
        fc = w_max != cwnd
        detail = {
            "w_max": w_max,
            "k_s": round(k, 3),
            "beta": BETA / 1024,
            "fast_convergence": int(fc),
        }
        nums: dict[str, Param] = {
            "cwnd": cwnd,
            "ssthresh": ssthresh,
            "w_max": w_max,
            "k": f"{k:.2f}",
        }
        if fc:
            text = msg(
                "loss at cwnd {cwnd} → ssthresh {ssthresh} = {cwnd} × 717/1024; cwnd is below "
                "the previous W_max, so fast convergence sets W_max {w_max} = {cwnd} × "
                "1741/2048; K = {k} s (time for the cubic to climb back to W_max)",
                **nums,
            )
        else:
            text = msg(
                "loss at cwnd {cwnd} → ssthresh {ssthresh} = {cwnd} × 717/1024; W_max {w_max}; "
                "K = {k} s (time for the cubic to climb back to W_max)",
                **nums,
            )
        return detail, text

    def rto_note(self, tp: Flow, cwnd: int) -> Message:
        return msg(
            "ssthresh = {ssthresh} = {cwnd} × 717/1024; entering Loss resets CUBIC "
            "(W_max = 0), so its next epoch starts with K = 0",
            ssthresh=tp.ssthresh,
            cwnd=cwnd,
        )

    def record(self, tp: Flow, series: dict[str, list[Any]]) -> None:
        """w_cubic (the last bic_target) and w_est (tcp_cwnd), None outside an epoch."""
        series["bbr_mode"].append(None)
        live = self.epoch_start != 0
        series["w_cubic"].append(self.bic_target if live else None)
        series["w_est"].append(self.tcp_cwnd if live else None)

    def trace_extras(self, tp: Flow) -> dict[str, Any]:
        return {"epochs": tp.epochs}

    def finish(self, tp: Flow, end: float) -> None:
        """The epoch still running at the end of the run ends there."""
        self._close_epoch(tp, end)

    def set_state(self, tp: Flow, new_state: int, now: float) -> None:
        """cubictcp_state: an RTO (Loss) wipes W_max and delay_min; HyStart starts over."""
        if new_state == CA_LOSS:
            self._close_epoch(tp, now)
            self._reset()
            self._hystart_reset(tp, now)

    def acked_and_cong_avoid(self, tp: Flow, acked: int, rtt_us: int, now: float) -> None:
        """cubictcp_acked (delay_min, HyStart) then cubictcp_cong_avoid, in one engine call
        (``rtt_us`` = -1: no sample, so cubictcp_acked does nothing; :meth:`cong_avoid`)."""
        jiffies = int(now * HZ) + JIFFIES_BASE
        if rtt_us >= 0:
            if not (self.epoch_start and jiffies - self.epoch_start < HZ):
                delay = rtt_us or 1
                if self.delay_min == 0 or self.delay_min > delay:
                    self.delay_min = delay
                if not self.found and tp.cwnd < tp.ssthresh and tp.cwnd >= HYSTART_LOW_WINDOW:
                    self._hystart_update(tp, delay, now)
        # cubictcp_cong_avoid (:324): slow start below ssthresh, then the cubic curve
        if tp.rwnd and not tcp_is_cwnd_limited(tp):  # only a receive window can starve cwnd
            return
        cwnd = tp.cwnd
        if cwnd < tp.ssthresh:
            acked = tcp_slow_start(tp, acked)
            if not acked:
                return
            cwnd = tp.cwnd
        # bictcp_update's early exit, inlined: the curve is re-evaluated at most every HZ/32
        # jiffies while cwnd is unchanged
        if self.last_cwnd == cwnd and jiffies - self.last_time <= HZ // 32:
            self.ack_cnt += acked
        else:
            self.update(tp, cwnd, acked, now)
        # tcp_cong_avoid_ai(tp, self.cnt, acked), inlined: it runs on every ACK
        w = self.cnt
        if tp.snd_cwnd_cnt >= w:
            tp.snd_cwnd_cnt = 0
            tp.cwnd += 1
        cnt = tp.snd_cwnd_cnt + acked
        if cnt >= w:
            delta = cnt // w
            cnt -= delta * w
            tp.cwnd += delta
        tp.snd_cwnd_cnt = cnt

    def cong_avoid(self, tp: Flow, acked: int, now: float) -> None:
        """cubictcp_cong_avoid (:324) alone: :meth:`acked_and_cong_avoid` without a sample."""
        self.acked_and_cong_avoid(tp, acked, -1, now)

    def update(self, tp: Flow, cwnd: int, acked: int, now: float) -> None:
        """bictcp_update (:214): compute ``cnt``, the ACKed segments per +1 of cwnd."""
        self.ack_cnt += acked
        jiffies = int(now * HZ) + JIFFIES_BASE
        if self.last_cwnd == cwnd and jiffies - self.last_time <= HZ // 32:
            return
        if not (self.epoch_start and jiffies == self.last_time):
            self.last_cwnd = cwnd
            self.last_time = jiffies
            if self.epoch_start == 0:
                self._start_epoch(tp, cwnd, acked, jiffies, now)
            # t: time since the epoch started plus one min RTT, in 2^-10 s
            t = jiffies - self.epoch_start + -(-self.delay_min // (1_000_000 // HZ))
            t = (t << BICTCP_HZ) // HZ
            k = self.bic_K
            offs = k - t if t < k else t - k
            delta = ((CUBE_RTT_SCALE * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) & U32
            if t < k:
                target = (self.bic_origin_point - delta) & U32
            else:
                target = (self.bic_origin_point + delta) & U32
            self.bic_target = target
            if target > cwnd:
                self.cnt = cwnd // (target - cwnd)
            else:
                self.cnt = 100 * cwnd  # a very small increment
            if self.last_max_cwnd == 0 and self.cnt > 20:
                self.cnt = 20  # first epoch: at least 5 % per RTT
        if TCP_FRIENDLINESS:
            delta = (cwnd * BETA_SCALE) >> 3
            if self.ack_cnt > delta:
                n = (self.ack_cnt - 1) // delta  # the kernel's while loop, in one step
                self.ack_cnt -= n * delta
                self.tcp_cwnd += n
            if self.tcp_cwnd > cwnd:
                max_cnt = cwnd // (self.tcp_cwnd - cwnd)
                if self.cnt > max_cnt:
                    self.cnt = max_cnt
        if self.cnt < 2:
            self.cnt = 2  # at most +1 per 2 ACKed: cwnd grows at most 1.5× per RTT

    def _start_epoch(self, tp: Flow, cwnd: int, acked: int, jiffies: int, now: float) -> None:
        self.epoch_start = jiffies
        self.ack_cnt = acked
        self.tcp_cwnd = cwnd
        if self.last_max_cwnd <= cwnd:
            self.bic_K = 0
            self.bic_origin_point = cwnd
        else:
            self.bic_K = cubic_root(CUBE_FACTOR * (self.last_max_cwnd - cwnd))
            self.bic_origin_point = self.last_max_cwnd
        self.epoch_t0 = now
        k = self.bic_K / 1024
        d = -(-self.delay_min // 1000) / HZ  # usecs_to_jiffies(delay_min), in seconds
        tp.epochs.append(
            {
                "t0": round(now, 6),
                "t_end": None,
                "w_max": self.last_max_cwnd,
                "k_s": round(k, 4),
                "k_units": self.bic_K,
                "origin_point": self.bic_origin_point,
                "cwnd_start": cwnd,
                "tcp_cwnd_start": cwnd,
                "delay_min_ms": d * 1e3,
                "c": C,
                "reno_ack_per_segment": (cwnd * BETA_SCALE) >> 3,
            }
        )
        if self.last_max_cwnd > cwnd:
            text = msg(
                "CUBIC epoch starts at cwnd {cwnd}: W(t) = 0.4·(t − K)³ + {origin} with K = {k} s "
                "(cubic_root of (W_max − cwnd)/C); cwnd is concave below W_max until t = K, "
                "then convex",
                cwnd=cwnd,
                origin=self.bic_origin_point,
                k=f"{k:.2f}",
            )
        elif self.last_max_cwnd == 0:
            text = msg(
                "CUBIC epoch starts at cwnd {cwnd} with no W_max above it: K = 0, so the curve "
                "is convex from the start (capped at +5 % per RTT while W_max is unknown)",
                cwnd=cwnd,
            )
        else:
            text = msg(
                "CUBIC epoch starts at cwnd {cwnd} with no W_max above it: K = 0, so the curve "
                "is convex from the start",
                cwnd=cwnd,
            )
        tp.event(
            "epoch_start",
            now,
            {
                "cwnd": cwnd,
                "w_max": self.last_max_cwnd,
                "k_s": round(k, 3),
                "origin_point": self.bic_origin_point,
                "delay_min_ms": round(d * 1e3, 3),
            },
            text,
        )

    def _close_epoch(self, tp: Flow, now: float) -> None:
        if self.epoch_start and tp.epochs and tp.epochs[-1]["t_end"] is None:
            tp.epochs[-1]["t_end"] = round(now, 6)

    @property
    def pkts_acked(self) -> PktsAcked | None:
        """CUBIC's ``pkts_acked`` hook: :meth:`cubictcp_acked`."""
        return self.cubictcp_acked

    def cubictcp_acked(self, tp: Flow, rtt_us: int, now: float) -> None:
        """cubictcp_acked: keep delay_min; run HyStart while in slow start from cwnd 16."""
        if rtt_us < 0:
            return
        if self.epoch_start and int(now * HZ) + JIFFIES_BASE - self.epoch_start < HZ:
            return  # discard delay samples for 1 s after a reduction
        delay = rtt_us or 1
        if self.delay_min == 0 or self.delay_min > delay:
            self.delay_min = delay
        if not self.found and tp.cwnd < tp.ssthresh and tp.cwnd >= HYSTART_LOW_WINDOW:
            self._hystart_update(tp, delay, now)

    def _hystart_update(self, tp: Flow, delay: int, now: float) -> None:
        """hystart_update: leave slow start on a long ACK train or a rising RTT."""
        if tp.snd_una > self.end_seq:
            self._hystart_reset(tp, now)
        now_us = int(now * 1e6) & U32
        if HYSTART_DETECT & HYSTART_ACK_TRAIN:
            if now_us - self.last_ack <= HYSTART_ACK_DELTA_US:
                self.last_ack = now_us
                threshold = self.delay_min + _hystart_ack_delay(tp)
                if not tp.paced:  # SK_PACING_NONE: ACKs may come compressed, halve it
                    threshold >>= 1
                if now_us - self.round_start > threshold:
                    train_us = now_us - self.round_start
                    self._found(
                        tp,
                        now,
                        "ack_train",
                        msg(
                            "HyStart: the ACK train of this round lasted {train} ms > "
                            "{threshold} ms (about half the min RTT {min_rtt} ms), so the pipe "
                            "is full: ssthresh = cwnd = {cwnd}, slow start ends",
                            train=f"{train_us / 1e3:.1f}",
                            threshold=f"{threshold / 1e3:.1f}",
                            min_rtt=f"{self.delay_min / 1e3:.1f}",
                            cwnd=tp.cwnd,
                        ),
                        {"train_ms": train_us / 1e3, "threshold_ms": threshold / 1e3},
                    )
                    return
        if HYSTART_DETECT & HYSTART_DELAY:
            if self.curr_rtt > delay:
                self.curr_rtt = delay
            if self.sample_cnt < HYSTART_MIN_SAMPLES:
                self.sample_cnt += 1
            else:
                thresh = min(max(self.delay_min >> 3, HYSTART_DELAY_MIN), HYSTART_DELAY_MAX)
                if self.curr_rtt > self.delay_min + thresh:
                    self._found(
                        tp,
                        now,
                        "delay",
                        msg(
                            "HyStart: this round's min RTT {rtt} ms exceeds delay_min "
                            "{delay_min} ms + {thresh} ms, so a queue is building: ssthresh = "
                            "cwnd = {cwnd}, slow start ends",
                            rtt=f"{self.curr_rtt / 1e3:.1f}",
                            delay_min=f"{self.delay_min / 1e3:.1f}",
                            thresh=f"{thresh / 1e3:.1f}",
                            cwnd=tp.cwnd,
                        ),
                        {
                            "curr_rtt_ms": self.curr_rtt / 1e3,
                            "threshold_ms": (self.delay_min + thresh) / 1e3,
                        },
                    )

    def _found(self, tp: Flow, now: float, how: str, text: Message, extra: dict[str, Any]) -> None:
        self.found = 1
        tp.ssthresh = tp.cwnd
        detail = {
            "cwnd": tp.cwnd,
            "ssthresh": tp.cwnd,
            "delay_min_ms": self.delay_min / 1e3,
            "method": how,
            **{k: round(v, 3) for k, v in extra.items()},
        }
        tp.event("hystart_exit", now, detail, text)


def _hystart_ack_delay(tp: Flow) -> int:
    """hystart_ack_delay: min(1 ms, 4 GSO packets' time at sk_pacing_rate), in µs.

    Linux sets sk_pacing_rate for every socket (tcp_update_pacing_rate), paced or not.
    """
    rate = sk_pacing_rate(tp)
    if not rate:
        return 0
    return min(1000, int(GSO_MAX_SIZE * 4 * 1_000_000 // rate))
