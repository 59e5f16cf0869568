"""A RED queue at the bottleneck (net/sched/sch_red.c, include/net/red.h), optionally marking.

Linux's RED keeps ``qavg``, an exponentially weighted average of the backlog, updated on every
enqueue (``red_calc_qavg``): ``qavg += (backlog - qavg) / 2^Wlog``. After the queue was idle it
instead decays ``qavg`` as if one small packet had arrived to an empty queue every packet time
of the idle period (``red_calc_qavg_from_idle_time``; the kernel approximates the power with a
table, the model computes it). ``red_action`` then compares ``qavg`` with the thresholds:

* below ``min``: pass (and ``qcount = -1``);
* between ``min`` and ``max``: mark with a probability that grows linearly from 0 to ``max_p``
  and, through ``qcount`` (packets since the last mark) and a random ``qR`` drawn after each mark
  (``red_random``), spreads the marks evenly: a packet is marked once
  ``max_p · (qavg - min) / (max - min) · qcount ≥ qR`` with ``qR`` uniform in [0, 1)
  (``red_mark_probability``);
* at or above ``max``: always mark (``RED_HARD_MARK``; "gentle" mode is not modelled).

``red_enqueue`` turns a mark into a drop unless the qdisc has the ``ecn`` flag and the packet
is ECN-capable (``INET_ECN_set_ce`` succeeds on ECT(0)/ECT(1)); then the packet is queued with
CE set. A packet that passes RED still meets the child FIFO's hard limit (the link's buffer).

Sizes here are in packets: every data packet has the same size, so the kernel's byte backlog
and byte thresholds divide evenly. ``Wlog`` is what tc derives when no ``burst`` is given
(iproute2 ``tc/q_red.c``: burst = (2·min + max) / 3 packets, then ``tc_red_eval_ewma``).
Random numbers come from the run's ``random.Random(seed)``.
"""

from __future__ import annotations

import random
from typing import Final

RED_DONT_MARK: Final = 0
RED_PROB_MARK: Final = 1
RED_HARD_MARK: Final = 2
PASS: Final = 0  # what red_enqueue does with one packet
MARK: Final = 1
DROP: Final = 2


def tc_red_eval_ewma(qmin: float, burst: float) -> int:
    """iproute2's tc_red_eval_ewma (tc/tc_red.c) in packets: the smallest Wlog for which a
    burst of ``burst`` packets into an empty queue keeps qavg below ``qmin``."""
    w = 0.5
    a = burst + 1 - qmin
    if a < 1.0:
        return 1
    for wlog in range(1, 32):
        if a <= (1 - (1 - w) ** burst) / w:
            return wlog
        w /= 2
    return 31


class Red:
    """One RED qdisc's parameters (``struct red_parms``) and state (``struct red_vars``)."""

    __slots__ = (
        "qth_min",
        "qth_max",
        "max_p",
        "ecn",
        "wlog",
        "w",
        "qavg",
        "qcount",
        "q_r",
        "rng",
        "prob_mark",
        "forced_mark",
        "prob_drop",
        "forced_drop",
    )

    def __init__(
        self, qth_min: float, qth_max: float, max_p: float, ecn: bool, rng: random.Random
    ) -> None:
        self.qth_min = qth_min
        self.qth_max = qth_max
        self.max_p = max_p
        self.ecn = ecn
        self.wlog = tc_red_eval_ewma(qth_min, (2 * qth_min + qth_max) / 3)
        self.w = 1.0 / (1 << self.wlog)
        self.qavg = 0.0
        self.qcount = -1
        self.q_r = 0.0
        self.rng = rng
        self.prob_mark = self.forced_mark = self.prob_drop = self.forced_drop = 0

    def calc_qavg(self, backlog: int, idle_slots: float) -> float:
        """red_calc_qavg (include/net/red.h:353): the EWMA on an enqueue, or the decay over an
        idle period of ``idle_slots`` packet times (red_calc_qavg_from_idle_time)."""
        if idle_slots > 0:
            self.qavg *= (1 - self.w) ** idle_slots
        else:
            self.qavg += (backlog - self.qavg) * self.w
        return self.qavg

    def action(self, qavg: float) -> int:
        """red_action (include/net/red.h:414) with red_mark_probability (:369)."""
        if qavg < self.qth_min:
            self.qcount = -1
            return RED_DONT_MARK
        if qavg >= self.qth_max:
            self.qcount = -1
            return RED_HARD_MARK
        self.qcount += 1
        if self.qcount:
            pb = self.max_p * (qavg - self.qth_min) / (self.qth_max - self.qth_min)
            if pb * self.qcount >= self.q_r:
                self.qcount = 0
                self.q_r = self.rng.random()
                return RED_PROB_MARK
        else:
            self.q_r = self.rng.random()
        return RED_DONT_MARK

    def enqueue(self, backlog: int, idle_slots: float, ect: bool) -> int:
        """red_enqueue (net/sched/sch_red.c:70): PASS, MARK (CE set) or DROP for one packet
        that finds ``backlog`` packets waiting (``idle_slots`` packet times after the queue
        went idle, else 0). ``ect``: the packet is ECN-capable."""
        act = self.action(self.calc_qavg(backlog, idle_slots))
        if act == RED_DONT_MARK:
            return PASS
        if act == RED_PROB_MARK:
            if self.ecn and ect:
                self.prob_mark += 1
                return MARK
            self.prob_drop += 1
            return DROP
        if self.ecn and ect:  # no harddrop flag: a hard mark is a mark too
            self.forced_mark += 1
            return MARK
        self.forced_drop += 1
        return DROP
