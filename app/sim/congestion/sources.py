"""Which Linux 6.4 function each step models, for the player's source link.

Every line is the line of the function's definition in Linux 6.4 (6.4.6 stable, whose net/ is
6.4.4), checked in the source tree; tests/sim/congestion/test_cwnd_fixes.py checks them again
when the tree is at hand.
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
    "reno": _R(function="tcp_reno_ssthresh", path="net/ipv4/tcp_cong.c", line=517),
    "cubic": _R(function="cubictcp_recalc_ssthresh", path="net/ipv4/tcp_cubic.c", line=341),
    "bbr": _R(function="bbr_ssthresh", path="net/ipv4/tcp_bbr.c", line=1100),
}
INIT_CWND_REDUCTION = _R(function="tcp_init_cwnd_reduction", path="net/ipv4/tcp_input.c", line=2611)
# Leaving Recovery: tcp_end_cwnd_reduction sets cwnd = ssthresh, but returns at once for an ops
# table with cong_control; BBR restores its saved cwnd itself on its next ACK.
END_CWND_REDUCTION = _R(function="tcp_end_cwnd_reduction", path="net/ipv4/tcp_input.c", line=2651)
BBR_RECOVER_OR_RESTORE = _R(
    function="bbr_set_cwnd_to_recover_or_restore", path="net/ipv4/tcp_bbr.c", line=479
)
PROCESS_LOSS = _R(function="tcp_process_loss", path="net/ipv4/tcp_input.c", line=2827)
ENTER_LOSS = _R(function="tcp_enter_loss", path="net/ipv4/tcp_input.c", line=2137)
SEND_LOSS_PROBE = _R(function="tcp_send_loss_probe", path="net/ipv4/tcp_output.c", line=2800)
HYSTART = _R(function="hystart_update", path="net/ipv4/tcp_cubic.c", line=386)
BICTCP_UPDATE = _R(function="bictcp_update", path="net/ipv4/tcp_cubic.c", line=214)
BBR_MODE = {
    "DRAIN": _R(function="bbr_check_drain", path="net/ipv4/tcp_bbr.c", line=892),
    "PROBE_BW": _R(function="bbr_reset_probe_bw_mode", path="net/ipv4/tcp_bbr.c", line=616),
    "PROBE_RTT": _R(function="bbr_update_min_rtt", path="net/ipv4/tcp_bbr.c", line=940),
    "STARTUP": _R(function="bbr_check_probe_rtt_done", path="net/ipv4/tcp_bbr.c", line=907),
}
ENTER_CWR = _R(function="tcp_enter_cwr", path="net/ipv4/tcp_input.c", line=2668)
ENTER_RECOVERY = _R(function="tcp_enter_recovery", path="net/ipv4/tcp_input.c", line=2801)
CONNECT = _R(function="tcp_connect", path="net/ipv4/tcp_output.c", line=3834)
SND_WND_TEST = _R(function="tcp_snd_wnd_test", path="net/ipv4/tcp_output.c", line=2102)
# the rest of the options' citations (module docstrings of ecn.py, rwnd.py, red.py,
# handshake.py), checked by the same test
ECN_CHECK_CE = _R(function="__tcp_ecn_check_ce", path="net/ipv4/tcp_input.c", line=338)
ECN_ACCEPT_CWR = _R(function="tcp_ecn_accept_cwr", path="net/ipv4/tcp_input.c", line=319)
ECN_RCV_ECN_ECHO = _R(function="tcp_ecn_rcv_ecn_echo", path="net/ipv4/tcp_input.c", line=388)
TRY_TO_OPEN = _R(function="tcp_try_to_open", path="net/ipv4/tcp_input.c", line=2695)
CWND_REDUCTION = _R(function="tcp_cwnd_reduction", path="net/ipv4/tcp_input.c", line=2625)
FASTRETRANS_ALERT = _R(function="tcp_fastretrans_alert", path="net/ipv4/tcp_input.c", line=2953)
ECN_SEND = _R(function="tcp_ecn_send", path="net/ipv4/tcp_output.c", line=363)
ECN_SEND_SYN = _R(function="tcp_ecn_send_syn", path="net/ipv4/tcp_output.c", line=320)
RED_ENQUEUE = _R(function="red_enqueue", path="net/sched/sch_red.c", line=70)
RED_CALC_QAVG = _R(function="red_calc_qavg", path="include/net/red.h", line=353)
RED_ACTION = _R(function="red_action", path="include/net/red.h", line=414)
RED_MARK_PROBABILITY = _R(function="red_mark_probability", path="include/net/red.h", line=369)
CWND_TEST = _R(function="tcp_cwnd_test", path="net/ipv4/tcp_output.c", line=2038)
WRITE_XMIT = _R(function="tcp_write_xmit", path="net/ipv4/tcp_output.c", line=2601)
CWND_VALIDATE = _R(function="tcp_cwnd_validate", path="net/ipv4/tcp_output.c", line=1870)
IS_CWND_LIMITED = _R(function="tcp_is_cwnd_limited", path="include/net/tcp.h", line=1305)
ACK_UPDATE_RTT = _R(function="tcp_ack_update_rtt", path="net/ipv4/tcp_input.c", line=3087)
RTT_ESTIMATOR = _R(function="tcp_rtt_estimator", path="net/ipv4/tcp_input.c", line=828)
SYNSENT = _R(function="tcp_rcv_synsent_state_process", path="net/ipv4/tcp_input.c", line=6182)
FINISH_CONNECT = _R(function="tcp_finish_connect", path="net/ipv4/tcp_input.c", line=6064)
INIT_TRANSFER = _R(function="tcp_init_transfer", path="net/ipv4/tcp_input.c", line=6036)
# The long-term ("policer") rate taking over: two lossy intervals with the same rate
BBR_LT_BW = _R(function="bbr_lt_bw_interval_done", path="net/ipv4/tcp_bbr.c", line=657)
# Issue 11: F-RTO and undo after a timeout, RACK's reorder timer, SACK compression and the
# slow-start rounds (BBR's round counter lives in bbr_update_bw)
TRY_UNDO_LOSS = _R(function="tcp_try_undo_loss", path="net/ipv4/tcp_input.c", line=2578)
XMIT_RECOVERY = _R(function="tcp_xmit_recovery", path="net/ipv4/tcp_input.c", line=3727)
RACK_REO_TIMEOUT = _R(function="tcp_rack_reo_timeout", path="net/ipv4/tcp_recovery.c", line=149)
ACK_SND_CHECK = _R(function="__tcp_ack_snd_check", path="net/ipv4/tcp_input.c", line=5517)
ROUND = {
    "reno": _R(function="tcp_slow_start", path="net/ipv4/tcp_cong.c", line=458),
    "cubic": _R(function="tcp_slow_start", path="net/ipv4/tcp_cong.c", line=458),
    "bbr": _R(function="bbr_update_bw", path="net/ipv4/tcp_bbr.c", line=760),
}


def for_event(kind: str, cc: str, detail: dict[str, Any]) -> SourceRef | None:
    if kind == "start":
        return START.get(cc)
    if kind == "loss":
        return SSTHRESH.get(cc)
    if kind == "recovery_enter":
        return INIT_CWND_REDUCTION if "from_cwr" not in detail else ENTER_RECOVERY
    if kind == "cwr":
        return ENTER_CWR
    if kind == "cwr_exit":
        return END_CWND_REDUCTION
    if kind == "syn":
        return CONNECT
    if kind == "rwnd_limited":
        return SND_WND_TEST
    if kind == "recovery_exit":
        if "cwnd_before" not in detail:  # leaving Loss, after an RTO
            return PROCESS_LOSS
        return BBR_RECOVER_OR_RESTORE if cc == "bbr" else END_CWND_REDUCTION
    if kind == "rto":
        return ENTER_LOSS
    if kind == "tlp":
        return SEND_LOSS_PROBE
    if kind == "frto":  # step 2.b sends new data (REXMIT_NEW); 3.a is decided in process_loss
        return XMIT_RECOVERY if detail.get("step") == "2b" else PROCESS_LOSS
    if kind == "undo":
        return TRY_UNDO_LOSS
    if kind == "reo_timeout":
        return RACK_REO_TIMEOUT
    if kind == "sack_compressed":
        return ACK_SND_CHECK
    if kind == "round":
        return ROUND.get(cc)
    if kind == "hystart_exit":
        return HYSTART
    if kind == "epoch_start":
        return BICTCP_UPDATE
    if kind == "bbr_mode":
        if "lt_bw_mbps" in detail:
            return BBR_LT_BW
        return BBR_MODE.get(str(detail.get("to")), BBR_MODE["PROBE_BW"])
    return None
