"""The sawtooth's numbers, measured the same way on a machine's recording and on the model.

Both sides of a recorded congestion-control overlay (``app.sim.congestion.recorded``) are
reduced to one :class:`Series` (time in s from the flow's start, cwnd and ssthresh in segments,
smoothed RTT in ms) and measured here, so "machine" and "model" in the comparison table are one
function applied twice.

A **reduction** is a sample whose ssthresh changes to a value below ``DROP_BELOW`` × the cwnd
of the sample before it (an unset ssthresh counts as infinite). That catches every
multiplicative decrease (fast recovery, CWR on an ECN echo, an RTO), whether the new ssthresh
is above or below the last one, and skips HyStart leaving slow start (it sets ssthresh = cwnd).
``tcp:tcp_probe`` reports ``tcp_current_ssthresh()``, which outside CWR/Recovery is
max(ssthresh, ¾ cwnd): it rises with cwnd in congestion avoidance (a change that comes with a
larger cwnd is not a reduction) and falls to the new ssthresh on entering Recovery, which the
rule catches (¾ cwnd → 0.7 cwnd for CUBIC, → 0.5 cwnd for Reno). A series of the raw
``snd_ssthresh`` (the model's, a hand-made one) may set the same ssthresh at the next loss: there
cwnd falling while ssthresh is below 0.9 × cwnd counts, once cwnd has come down to the last
reduction's ssthresh and grown past it since. The reduction's
``before`` is that previous cwnd, its ``after`` the new ssthresh: the cwnd the flow is brought
back to when the reduction ends (tcp_end_cwnd_reduction; PRR walks it there in between).

A series without any ssthresh (a hand-made one) falls back to cwnd itself: a sample below
``DROP_BELOW`` × the one before starts a reduction, which lasts while cwnd keeps falling; its
``after`` is the lowest cwnd reached.

The numbers (:class:`Metrics`): ``peak`` the mean cwnd just before each reduction after the
first (the first ends slow start and overshoots; it counts alone when it is the only one),
``period`` the mean time between reductions, ``decrease`` the mean of after/before (CUBIC's
beta 717/1024 ≈ 0.7, Reno's 0.5), ``first_loss`` the time of the first reduction and
``srtt_mean`` the time-weighted mean smoothed RTT (each sample holds until the next).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

DROP_BELOW = 0.9  # a new ssthresh (or cwnd) under 0.9 × the cwnd before is a reduction


@dataclass(frozen=True, slots=True)
class Series:
    """One flow's samples in time order: ``t`` in s from the flow's start, ``cwnd`` and
    ``ssthresh`` (None: not set, i.e. infinite) in segments, ``srtt`` in ms (None: no sample)."""

    t: Sequence[float]
    cwnd: Sequence[float]
    ssthresh: Sequence[float | None]
    srtt: Sequence[float | None]

    def __post_init__(self) -> None:
        n = len(self.t)
        if not len(self.cwnd) == len(self.ssthresh) == len(self.srtt) == n:
            raise ValueError("a series' lists must have one value per time")

    def at(self, t: float) -> int | None:
        """The index of the last sample at or before ``t`` (None before the first)."""
        i = bisect_right(self.t, t + 1e-9) - 1
        return i if i >= 0 else None


@dataclass(frozen=True, slots=True)
class Reduction:
    """One multiplicative decrease: when, cwnd just before it, and what it brought cwnd to."""

    t: float
    before: float
    after: float

    @property
    def factor(self) -> float:
        return self.after / self.before if self.before > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Metrics:
    """The comparison table's numbers for one side (None where the series has too few
    reductions or samples to say)."""

    reductions: tuple[Reduction, ...]
    peak: float | None  # segments
    period: float | None  # s
    decrease: float | None  # after / before
    first_loss: float | None  # s
    srtt_mean: float | None  # ms


def reductions(s: Series) -> tuple[Reduction, ...]:
    """Every reduction of ``s`` (see the module docstring for the rule)."""
    if any(v is not None for v in s.ssthresh):
        return _by_ssthresh(s)
    return _by_cwnd(s)


def _by_ssthresh(s: Series) -> tuple[Reduction, ...]:
    out: list[Reduction] = []
    armed, reached = True, True  # a reduction to an unchanged ssthresh may start (see below)
    for i in range(1, len(s.t)):
        new, old = s.ssthresh[i], s.ssthresh[i - 1]
        before, cwnd = s.cwnd[i - 1], s.cwnd[i]
        if out and not armed:
            reached = reached or cwnd <= out[-1].after
            armed = reached and cwnd > out[-1].after
        if new is None or new >= DROP_BELOW * before:
            continue
        if new == old:
            # the same ssthresh again (a raw snd_ssthresh series: the peak, so the new
            # ssthresh, repeats): cwnd falling after it had grown back past the last one
            if not (armed and cwnd < before):
                continue
        elif old is not None and new > old and cwnd > before:
            continue  # tcp_probe's ¾ cwnd rising with cwnd in congestion avoidance
        out.append(Reduction(t=s.t[i], before=before, after=new))
        armed, reached = False, False
    return tuple(out)


def _by_cwnd(s: Series) -> tuple[Reduction, ...]:
    out: list[Reduction] = []
    i, n = 1, len(s.t)
    while i < n:
        before = s.cwnd[i - 1]
        if s.cwnd[i] < DROP_BELOW * before:
            start, low = i, s.cwnd[i]
            while i + 1 < n and s.cwnd[i + 1] <= low:
                i += 1
                low = s.cwnd[i]
            out.append(Reduction(t=s.t[start], before=before, after=low))
        i += 1
    return tuple(out)


def srtt_mean(s: Series) -> float | None:
    """The smoothed RTT averaged over time: each sample holds until the next one (the last
    counts as one typical interval); samples without an RTT are left out."""
    total = weight = 0.0
    n = len(s.t)
    for i, v in enumerate(s.srtt):
        if v is None:
            continue
        if i + 1 < n:
            dt = s.t[i + 1] - s.t[i]
        else:
            dt = (s.t[-1] - s.t[0]) / (n - 1) if n > 1 else 1.0
        dt = max(dt, 0.0)
        total += v * dt
        weight += dt
    if weight > 0:
        return total / weight
    shown = [v for v in s.srtt if v is not None]
    return sum(shown) / len(shown) if shown else None


def measure(s: Series) -> Metrics:
    """The comparison table's numbers for one series."""
    red = reductions(s)
    steady = red[1:] if len(red) > 1 else red
    peak = sum(r.before for r in steady) / len(steady) if steady else None
    gaps = [b.t - a.t for a, b in zip(red, red[1:], strict=False)]
    return Metrics(
        reductions=red,
        peak=peak,
        period=sum(gaps) / len(gaps) if gaps else None,
        decrease=sum(r.factor for r in red) / len(red) if red else None,
        first_loss=(red[0].t - s.t[0]) if red and s.t else None,
        srtt_mean=srtt_mean(s),
    )
