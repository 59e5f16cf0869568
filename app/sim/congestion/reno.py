"""Reno as Linux 6.4 runs it (net/ipv4/tcp_cong.c), and the ops table every algorithm fills in.

:class:`CongestionOps` is ``struct tcp_congestion_ops`` (include/net/tcp.h): ``init``,
``ssthresh``, ``cong_avoid``, ``set_state``, ``pkts_acked``, ``cong_control`` and ``undo_cwnd``,
plus ``tso_segs``: the segments a paced flow sends per burst, which the kernel sizes in
tcp_tso_segs (asking ``min_tso_segs``) and BBR plans for with bbr_tso_segs_goal. Optional hooks are ``None`` when an algorithm
has none, and the engine asks as tcp_input.c does (``if (icsk->icsk_ca_ops->cong_control)``).
The engine calls them where the kernel does:

* every ACK: ``pkts_acked`` (from ``tcp_clean_rtx_queue``), then ``tcp_cong_control``
  (tcp_input.c:3495): ``cong_control`` when the table has one (BBR), or PRR during
  CWR/Recovery, or ``cong_avoid`` when the ACK advanced ``snd_una``;
* entering Recovery (``tcp_init_cwnd_reduction``, tcp_input.c:2611) or Loss (``tcp_enter_loss``,
  tcp_input.c:2137): ``ssthresh``;
* every CA-state change (``tcp_set_ca_state``, tcp_cong.c:37): ``set_state``.

The kernel's other hooks have nothing to do here: ``cwnd_event`` reacts to idle restarts and
ECN events (a bulk sender is never idle; reno, cubic and bbr ignore CA_EVENT_ECN_IS_CE, which
only DCTCP-like modules use), ``in_ack_event`` to ECE/window updates (none of the three has it),
``sndbuf_expand`` and ``get_info`` to socket buffers and inet_diag. ``undo_cwnd`` runs when an
undo proves a timeout's reduction spurious (F-RTO or the timestamp echo, in
:mod:`~app.sim.congestion.loss`); the model's never-reordering path gives no DSACK undo.

The remaining members are the model's own: how each algorithm explains itself (``start_note``,
``loss_text``, ``recovery_note``, ``recovery_exit_note``, ``rto_note``), the extra time series it
records (``series_keys`` and ``record``), extra per-flow outputs (``trace_extras``) and
``finish`` at the end of a run.

Linux counts ACKed *segments*, not ACKs (Appropriate Byte Counting, RFC 3465), so delayed ACKs do
not slow Reno's slow start: ``tcp_slow_start`` adds every newly ACKed segment.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from app.sim.congestion.rwnd import tcp_is_cwnd_limited
from app.sim.core.i18n import Message, msg

if TYPE_CHECKING:
    from app.sim.congestion.flow import Flow, RateSample

CongControl = Callable[["Flow", "RateSample", float], None]
"""``cong_control(tp, rs, now)``: set cwnd and the pacing rate from a rate sample."""
PktsAcked = Callable[["Flow", int, float], None]
"""``pkts_acked(tp, rtt_us, now)``: one ACK's RTT sample (-1 when there is none)."""


def tcp_slow_start(tp: Flow, acked: int) -> int:
    """tcp_slow_start (tcp_cong.c:458): cwnd += acked up to ssthresh; return the leftover."""
    cwnd = tp.cwnd + acked
    if cwnd > tp.ssthresh:
        cwnd = tp.ssthresh
    acked -= cwnd - tp.cwnd
    tp.cwnd = cwnd if cwnd < tp.cwnd_clamp else tp.cwnd_clamp
    return acked


def tcp_cong_avoid_ai(tp: Flow, w: int, acked: int) -> None:
    """tcp_cong_avoid_ai (tcp_cong.c:472): +1 segment for every ``w`` segments ACKed.

    ``snd_cwnd_cnt`` carries the ACKed segments over between ACKs; a stretch ACK may add more
    than one segment at once.
    """
    if tp.snd_cwnd_cnt >= w:
        tp.snd_cwnd_cnt = 0
        tp.cwnd += 1
    cnt = tp.snd_cwnd_cnt + acked
    if cnt >= w:
        delta = cnt // w
        cnt -= delta * w
        tp.cwnd += delta
    tp.snd_cwnd_cnt = cnt
    if tp.cwnd > tp.cwnd_clamp:
        tp.cwnd = tp.cwnd_clamp


class CongestionOps:
    """``struct tcp_congestion_ops``: the hooks an algorithm gives, and the model's narration.

    Subclasses override what their kernel module implements. ``ssthresh``, ``undo_cwnd`` and
    (without ``cong_control``) ``cong_avoid`` are required, as tcp_validate_congestion_control
    demands; ``pkts_acked`` and ``cong_control`` are optional and ``None`` when absent.
    """

    name: ClassVar[str] = ""
    series_keys: ClassVar[tuple[str, ...]] = ()
    """Time series this algorithm adds to every flow's ``series`` (filled by ``record``)."""

    # Optional hooks: None unless the algorithm has one, as the kernel tests the function
    # pointer (``if (icsk->icsk_ca_ops->cong_control)``). A subclass that has one overrides the
    # property to return its method (a property, not a class attribute a method of the same
    # name shadows: mypyc, scripts/build_native.py, compiles such an attribute as an instance
    # slot, which a subclass's method would not override).

    @property
    def pkts_acked(self) -> PktsAcked | None:
        """``pkts_acked``: one ACK's RTT sample (CUBIC's cubictcp_acked)."""
        return None

    @property
    def cong_control(self) -> CongControl | None:
        """``cong_control``: set cwnd and the pacing rate from a rate sample (BBR's bbr_main)."""
        return None

    @classmethod
    def create(cls, rng: random.Random) -> CongestionOps:
        """A fresh per-flow instance (``inet_csk_ca``); ``rng`` is the run's generator."""
        return cls()

    def init(self, tp: Flow, now: float) -> None:
        """``init``: set up private state when the connection is established."""

    def ssthresh(self, tp: Flow, now: float) -> int:
        """``ssthresh`` (required): the slow-start threshold after a loss."""
        raise NotImplementedError(f"{type(self).__name__} has no ssthresh hook")

    def cong_avoid(self, tp: Flow, acked: int, now: float) -> None:
        """``cong_avoid``: grow cwnd for ``acked`` newly ACKed segments."""
        raise NotImplementedError(f"{type(self).__name__} has no cong_avoid hook")

    def set_state(self, tp: Flow, new_state: int, now: float) -> None:
        """``set_state``: called before the CA state changes (tcp_set_ca_state)."""

    def undo_cwnd(self, tp: Flow) -> int:
        """``undo_cwnd`` = tcp_reno_undo_cwnd (tcp_cong.c:525): max(cwnd, prior_cwnd)."""
        return max(tp.cwnd, tp.prior_cwnd)

    def in_slow_start(self, tp: Flow) -> bool:
        """The model's own: whether the flow is still in slow start, for the per-round steps
        (tcp_in_slow_start: cwnd < ssthresh)."""
        return tp.cwnd < tp.ssthresh

    def tso_segs(self, tp: Flow) -> int:
        """Segments a paced flow sends per burst (tcp_tso_segs). Only paced flows are sent in
        bursts here, so the default (one segment) is never used by reno or cubic."""
        return 1

    def acked_and_cong_avoid(self, tp: Flow, acked: int, rtt_us: int, now: float) -> None:
        """``pkts_acked`` then ``cong_avoid``: what an in-order ACK in state Open runs."""
        pkts_acked = self.pkts_acked
        if pkts_acked is not None:
            pkts_acked(tp, rtt_us, now)
        self.cong_avoid(tp, acked, now)

    # -- the model's narration and outputs --------------------------------------------------

    def start_note(self, tp: Flow) -> Message | None:
        """Appended to the flow's start sentence (None: nothing to add)."""
        return None

    def loss_text(self, tp: Flow, cwnd: int, ssthresh: int) -> tuple[dict[str, float], Message]:
        """Numbers and our sentence for a loss event (after ``ssthresh`` ran)."""
        return {}, msg("loss at cwnd {cwnd} → ssthresh {ssthresh}", cwnd=cwnd, ssthresh=ssthresh)

    def recovery_note(self, tp: Flow, cwnd: int) -> Message:
        """How cwnd moves during Recovery: PRR (tcp_cwnd_reduction), unless cong_control."""
        return msg(
            "PRR (RFC 6937) will walk cwnd from {cwnd} down to ssthresh {ssthresh} over about "
            "one round trip, sending ~{ratio} segments per segment delivered",
            cwnd=cwnd,
            ssthresh=tp.ssthresh,
            ratio=f"{tp.ssthresh / max(cwnd, 1):.2f}",
        )

    def recovery_exit_note(self, tp: Flow, before: int) -> Message:
        """What happens to cwnd when Recovery ends (tcp_end_cwnd_reduction)."""
        return msg("cwnd = ssthresh = {cwnd} (PRR had it at {before})", cwnd=tp.cwnd, before=before)

    def rto_note(self, tp: Flow, cwnd: int) -> Message:
        """Why ssthresh is what it is after a retransmission timeout."""
        return msg("ssthresh = {ssthresh}", ssthresh=tp.ssthresh)

    def record(self, tp: Flow, series: dict[str, list[Any]]) -> None:
        """Append this sample tick's values of ``series_keys`` (and ``bbr_mode``, None here)."""
        series["bbr_mode"].append(None)

    def trace_extras(self, tp: Flow) -> dict[str, Any]:
        """Extra per-flow outputs of the trace (CUBIC's epochs)."""
        return {}

    def finish(self, tp: Flow, end: float) -> None:
        """The run ends at ``end``: close anything still open."""


class Reno(CongestionOps):
    """``tcp_reno`` (tcp_cong.c): slow start, then +1 segment per cwnd of ACKed segments."""

    name = "reno"

    def ssthresh(self, tp: Flow, now: float) -> int:
        """tcp_reno_ssthresh (tcp_cong.c:517): max(cwnd / 2, 2)."""
        return max(tp.cwnd >> 1, 2)

    def cong_avoid(self, tp: Flow, acked: int, now: float) -> None:
        """tcp_reno_cong_avoid: :meth:`acked_and_cong_avoid` (reno has no pkts_acked hook)."""
        self.acked_and_cong_avoid(tp, acked, -1, now)

    def acked_and_cong_avoid(self, tp: Flow, acked: int, rtt_us: int, now: float) -> None:
        """tcp_reno_cong_avoid (tcp_cong.c:498), as the engine's one call for an in-order ACK
        (reno has no pkts_acked hook, so ``rtt_us`` is unused). A bulk sender is cwnd-limited
        unless a receive window holds it back (tcp_is_cwnd_limited, rwnd.py)."""
        if tp.rwnd and not tcp_is_cwnd_limited(tp):  # only a receive window can starve cwnd
            return
        if tp.cwnd < tp.ssthresh:
            acked = tcp_slow_start(tp, acked)
            if not acked:
                return
        tcp_cong_avoid_ai(tp, tp.cwnd, acked)

    def rto_note(self, tp: Flow, cwnd: int) -> Message:
        return msg("ssthresh = {ssthresh} = max({cwnd} / 2, 2)", ssthresh=tp.ssthresh, cwnd=cwnd)

    def loss_text(self, tp: Flow, cwnd: int, ssthresh: int) -> tuple[dict[str, float], Message]:
        return (
            {"factor": 0.5},
            msg(
                "loss at cwnd {cwnd} → ssthresh {ssthresh} = max({cwnd} / 2, 2); Reno then "
                "grows cwnd by 1 segment per round trip",
                cwnd=cwnd,
                ssthresh=ssthresh,
            ),
        )
