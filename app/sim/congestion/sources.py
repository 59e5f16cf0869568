"""Which Linux 6.4 function each step models, for the player's source link.

Lines marked "facts" are from ../shared/reference/kernel-facts.md; the others were checked
against 6.4-era source (patch hunk line numbers, counted from the facts sheet's anchors). All
follow the facts' 6.4.4-based numbering.
"""

from __future__ import annotations

from typing import Any

from app.sim.core.trace import SourceRef

_R = SourceRef
START = {
    "reno": _R(function="tcp_init_congestion_control", path="net/ipv4/tcp_cong.c", line=239),
    "cubic": _R(function="cubictcp_init", path="net/ipv4/tcp_cubic.c", line=129),
    "bbr": _R(function="bbr_init", path="net/ipv4/tcp_bbr.c", line=1038),
}
SSTHRESH = {
    "reno": _R(function="tcp_reno_ssthresh", path="net/ipv4/tcp_cong.c", line=517),  # facts
    "cubic": _R(
        function="cubictcp_recalc_ssthresh", path="net/ipv4/tcp_cubic.c", line=341
    ),  # facts
    "bbr": _R(function="bbr_ssthresh", path="net/ipv4/tcp_bbr.c", line=1100),
}
INIT_CWND_REDUCTION = _R(
    function="tcp_init_cwnd_reduction", path="net/ipv4/tcp_input.c", line=2611
)  # facts
END_CWND_REDUCTION = _R(function="tcp_end_cwnd_reduction", path="net/ipv4/tcp_input.c", line=2651)
PROCESS_LOSS = _R(function="tcp_process_loss", path="net/ipv4/tcp_input.c", line=2827)
ENTER_LOSS = _R(function="tcp_enter_loss", path="net/ipv4/tcp_input.c", line=2137)  # facts
# 6.4.4 line estimated from the facts sheet's anchors (__tcp_push_pending_frames at 2867
# follows it) and the hunk headers of 5.18/6.6 patches to the same function
SEND_LOSS_PROBE = _R(function="tcp_send_loss_probe", path="net/ipv4/tcp_output.c", line=2800)
HYSTART = _R(function="hystart_update", path="net/ipv4/tcp_cubic.c", line=386)
BICTCP_UPDATE = _R(function="bictcp_update", path="net/ipv4/tcp_cubic.c", line=214)  # facts
BBR_MODE = {
    "DRAIN": _R(function="bbr_check_drain", path="net/ipv4/tcp_bbr.c", line=892),
    "PROBE_BW": _R(function="bbr_reset_probe_bw_mode", path="net/ipv4/tcp_bbr.c", line=616),
    "PROBE_RTT": _R(function="bbr_update_min_rtt", path="net/ipv4/tcp_bbr.c", line=940),
    "STARTUP": _R(function="bbr_check_probe_rtt_done", path="net/ipv4/tcp_bbr.c", line=907),
}


def for_event(kind: str, cc: str, detail: dict[str, Any]) -> SourceRef | None:
    if kind == "start":
        return START.get(cc)
    if kind == "loss":
        return SSTHRESH.get(cc)
    if kind == "recovery_enter":
        return INIT_CWND_REDUCTION
    if kind == "recovery_exit":
        return END_CWND_REDUCTION if "cwnd_before" in detail else PROCESS_LOSS
    if kind == "rto":
        return ENTER_LOSS
    if kind == "tlp":
        return SEND_LOSS_PROBE
    if kind == "hystart_exit":
        return HYSTART
    if kind == "epoch_start":
        return BICTCP_UPDATE
    if kind == "bbr_mode":
        return BBR_MODE.get(str(detail.get("to")), BBR_MODE["PROBE_BW"])
    return None
