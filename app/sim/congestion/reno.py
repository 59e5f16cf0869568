"""Reno as Linux 6.4 runs it (net/ipv4/tcp_cong.c), and the hook interface every algorithm uses.

The hooks are named after ``struct tcp_congestion_ops``: ``init``, ``ssthresh``, ``cong_avoid``,
``pkts_acked``, ``set_state`` and (BBR only) ``cong_control``. The engine calls them where
tcp_input.c does:

* every ACK: ``pkts_acked`` (from ``tcp_clean_rtx_queue``), then ``tcp_cong_control``
  (tcp_input.c:3495): BBR's ``cong_control``, or PRR during CWR/Recovery, or ``cong_avoid`` when
  the ACK advanced ``snd_una``;
* entering Recovery (``tcp_init_cwnd_reduction``, tcp_input.c:2611) or Loss (``tcp_enter_loss``,
  tcp_input.c:2137): ``ssthresh``;
* every CA-state change (``tcp_set_ca_state``, tcp_cong.c:37): ``set_state``.

Linux counts ACKed *segments*, not ACKs (Appropriate Byte Counting, RFC 3465), so delayed ACKs do
not slow Reno's slow start: ``tcp_slow_start`` adds every newly ACKed segment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.trace import SourceRef

if TYPE_CHECKING:
    from app.sim.congestion.flow import Flow


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
    """The default hooks; subclasses override what their kernel module implements."""

    name = ""
    has_pkts_acked = False  # lets the engine skip a call per ACK
    ssthresh_src = SourceRef(function="tcp_reno_ssthresh", path="net/ipv4/tcp_cong.c", line=517)
    init_src = SourceRef(
        function="tcp_init_congestion_control", path="net/ipv4/tcp_cong.c", line=226
    )

    def init(self, tp: Flow, now: float) -> None:
        pass

    def ssthresh(self, tp: Flow, now: float) -> int:
        raise NotImplementedError

    def cong_avoid(self, tp: Flow, acked: int, now: float) -> None:
        raise NotImplementedError

    def pkts_acked(self, tp: Flow, rtt_us: int, now: float) -> None:
        pass

    def set_state(self, tp: Flow, new_state: int, now: float) -> None:
        pass

    def acked_and_cong_avoid(self, tp: Flow, acked: int, rtt_us: int, now: float) -> None:
        """``pkts_acked`` then ``cong_avoid``: what an in-order ACK in state Open runs."""
        self.pkts_acked(tp, rtt_us, now)
        self.cong_avoid(tp, acked, now)

    def loss_text(self, tp: Flow, cwnd: int, ssthresh: int) -> tuple[dict[str, float], str]:
        """Numbers and our sentence for a loss event (after ``ssthresh`` ran)."""
        return {}, ""


class Reno(CongestionOps):
    """``tcp_reno`` (tcp_cong.c): slow start, then +1 segment per cwnd of ACKed segments."""

    name = "reno"

    def ssthresh(self, tp: Flow, now: float) -> int:
        """tcp_reno_ssthresh (tcp_cong.c:517): max(cwnd / 2, 2)."""
        return max(tp.cwnd >> 1, 2)

    def cong_avoid(self, tp: Flow, acked: int, now: float) -> None:
        """tcp_reno_cong_avoid (tcp_cong.c:498). A bulk sender is always cwnd-limited."""
        if tp.cwnd < tp.ssthresh:
            acked = tcp_slow_start(tp, acked)
            if not acked:
                return
        tcp_cong_avoid_ai(tp, tp.cwnd, acked)

    def acked_and_cong_avoid(self, tp: Flow, acked: int, rtt_us: int, now: float) -> None:
        self.cong_avoid(tp, acked, now)  # reno has no pkts_acked hook

    def loss_text(self, tp: Flow, cwnd: int, ssthresh: int) -> tuple[dict[str, float], str]:
        return (
            {"factor": 0.5},
            f"loss at cwnd {cwnd} → ssthresh {ssthresh} = max({cwnd} / 2, 2); Reno then "
            f"grows cwnd by 1 segment per round trip",
        )
