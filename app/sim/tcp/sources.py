"""Every Linux 6.4 function the TCP explainer cites, in one table.

Each line is the function's definition line in upstream v6.4, the version the source links
open on elixir (first read in 6.4.4 stable code, where every function of net/ipv4/tcp_input.c
after ``__tcp_oow_rate_limited`` sits 6 lines lower: ``tcp_ack`` 3766 vs v6.4's 3760, issue 22).
``tests/sim/tcp/test_tcp_sources.py`` checks every line in a v6.4 tree when it is present;
``tests/sim/tcp/test_tcp_cited_lines.py`` keeps the checked table.
"""

from __future__ import annotations

from app.sim.core.sources import LINUX_6_4, SourceRef

_r = LINUX_6_4.ref


_TCP = "net/ipv4/tcp.c"
_IN = "net/ipv4/tcp_input.c"
_OUT = "net/ipv4/tcp_output.c"
_TMR = "net/ipv4/tcp_timer.c"
_MINI = "net/ipv4/tcp_minisocks.c"
_IPV4 = "net/ipv4/tcp_ipv4.c"
_CSK = "net/ipv4/inet_connection_sock.c"
_AF = "net/ipv4/af_inet.c"
_REC = "net/ipv4/tcp_recovery.c"

SOURCES: dict[str, SourceRef] = {
    # socket calls
    "inet_listen": _r("inet_listen", _AF, 192),
    "inet_csk_listen_start": _r("inet_csk_listen_start", _CSK, 1232),
    "tcp_v4_connect": _r("tcp_v4_connect", _IPV4, 200),
    "__inet_stream_connect": _r("__inet_stream_connect", _AF, 613),
    "tcp_connect": _r("tcp_connect", _OUT, 3834),
    "inet_csk_accept": _r("inet_csk_accept", _CSK, 657),
    "tcp_sendmsg_locked": _r("tcp_sendmsg_locked", _TCP, 1217),
    "tcp_recvmsg_locked": _r("tcp_recvmsg_locked", _TCP, 2419),
    "tcp_cleanup_rbuf": _r("tcp_cleanup_rbuf", _TCP, 1624),
    # the send buffer (app.sim.tcp.sndbuf)
    "sk_stream_wait_memory": _r("sk_stream_wait_memory", "net/core/stream.c", 118),
    "sk_stream_write_space": _r("sk_stream_write_space", "net/core/stream.c", 30),
    "inet_shutdown": _r("inet_shutdown", _AF, 869),
    "tcp_shutdown": _r("tcp_shutdown", _TCP, 2797),
    "tcp_close_state": _r("tcp_close_state", _TCP, 2782),
    "__tcp_close": _r("__tcp_close", _TCP, 2857),
    "tcp_disconnect": _r("tcp_disconnect", _TCP, 3076),
    "inet_csk_listen_stop": _r("inet_csk_listen_stop", _CSK, 1368),
    "inet_child_forget": _r("inet_child_forget", _CSK, 1269),
    # output
    "tcp_write_xmit": _r("tcp_write_xmit", _OUT, 2601),
    "tcp_send_fin": _r("tcp_send_fin", _OUT, 3391),
    "tcp_send_active_reset": _r("tcp_send_active_reset", _OUT, 3440),
    "tcp_send_ack": _r("tcp_send_ack", _OUT, 3987),
    "tcp_send_delayed_ack": _r("tcp_send_delayed_ack", _OUT, 3892),
    "tcp_event_data_sent": _r("tcp_event_data_sent", _OUT, 161),
    "tcp_cwnd_restart": _r("tcp_cwnd_restart", _OUT, 142),
    "tcp_send_synack": _r("tcp_send_synack", _OUT, 3474),
    "tcp_v4_send_synack": _r("tcp_v4_send_synack", _IPV4, 999),
    "tcp_retransmit_skb": _r("tcp_retransmit_skb", _OUT, 3261),
    "tcp_write_wakeup": _r("tcp_write_wakeup", _OUT, 4036),
    "tcp_send_probe0": _r("tcp_send_probe0", _OUT, 4082),
    "tcp_xmit_probe_skb": _r("tcp_xmit_probe_skb", _OUT, 4003),
    "tcp_v4_send_reset": _r("tcp_v4_send_reset", _IPV4, 677),
    "tcp_v4_timewait_ack": _r("tcp_v4_timewait_ack", _IPV4, 945),
    # input
    "tcp_v4_rcv": _r("tcp_v4_rcv", _IPV4, 1976),
    "tcp_rcv_state_process": _r("tcp_rcv_state_process", _IN, 6455),
    "tcp_rcv_synsent_state_process": _r("tcp_rcv_synsent_state_process", _IN, 6182),
    "tcp_finish_connect": _r("tcp_finish_connect", _IN, 6064),
    "tcp_rcv_established": _r("tcp_rcv_established", _IN, 5847),
    "tcp_validate_incoming": _r("tcp_validate_incoming", _IN, 5706),
    "tcp_send_challenge_ack": _r("tcp_send_challenge_ack", _IN, 3627),
    "tcp_send_dupack": _r("tcp_send_dupack", _IN, 4482),
    "tcp_ack": _r("tcp_ack", _IN, 3760),
    "tcp_ack_probe": _r("tcp_ack_probe", _IN, 3444),
    "tcp_fastretrans_alert": _r("tcp_fastretrans_alert", _IN, 2953),
    "tcp_data_queue": _r("tcp_data_queue", _IN, 5009),
    "tcp_event_data_recv": _r("tcp_event_data_recv", _IN, 774),
    "__tcp_ack_snd_check": _r("__tcp_ack_snd_check", _IN, 5517),
    "tcp_fin": _r("tcp_fin", _IN, 4359),
    "tcp_reset": _r("tcp_reset", _IN, 4312),
    "tcp_conn_request": _r("tcp_conn_request", _IN, 6924),
    "tcp_syn_flood_action": _r("tcp_syn_flood_action", _IN, 6828),
    "inet_csk_reqsk_queue_hash_add": _r("inet_csk_reqsk_queue_hash_add", _CSK, 1109),
    "tcp_check_req": _r("tcp_check_req", _MINI, 606),
    "tcp_v4_syn_recv_sock": _r("tcp_v4_syn_recv_sock", _IPV4, 1550),
    "inet_csk_clone_lock": _r("inet_csk_clone_lock", _CSK, 1136),
    "inet_csk_complete_hashdance": _r("inet_csk_complete_hashdance", _CSK, 1318),
    "tcp_child_process": _r("tcp_child_process", _MINI, 867),
    "cookie_v4_check": _r("cookie_v4_check", "net/ipv4/syncookies.c", 325),
    # state changes, timewait
    "tcp_set_state": _r("tcp_set_state", _TCP, 2692),
    "tcp_done": _r("tcp_done", _TCP, 4634),
    "tcp_time_wait": _r("tcp_time_wait", _MINI, 280),
    "tcp_timewait_state_process": _r("tcp_timewait_state_process", _MINI, 85),
    "tw_timer_handler": _r("tw_timer_handler", "net/ipv4/inet_timewait_sock.c", 168),
    "tcp_fin_time": _r("tcp_fin_time", "include/net/tcp.h", 1546),
    "tcp_init_metrics": _r("tcp_init_metrics", "net/ipv4/tcp_metrics.c", 444),
    # timers
    "tcp_retransmit_timer": _r("tcp_retransmit_timer", _TMR, 456),
    "tcp_write_timeout": _r("tcp_write_timeout", _TMR, 231),
    "retransmits_timed_out": _r("retransmits_timed_out", _TMR, 209),
    "tcp_orphan_retries": _r("tcp_orphan_retries", _TMR, 144),
    "tcp_write_err": _r("tcp_write_err", _TMR, 68),
    "tcp_probe_timer": _r("tcp_probe_timer", _TMR, 360),
    "tcp_delack_timer_handler": _r("tcp_delack_timer_handler", _TMR, 290),
    "tcp_keepalive_timer": _r("tcp_keepalive_timer", _TMR, 678),
    "reqsk_timer_handler": _r("reqsk_timer_handler", _CSK, 983),
    "tcp_rtx_synack": _r("tcp_rtx_synack", _OUT, 4116),
    # options, windows, loss probes (issue 25)
    "tcp_select_initial_window": _r("tcp_select_initial_window", _OUT, 206),
    "tcp_select_window": _r("tcp_select_window", _OUT, 257),
    "tcp_options_write": _r("tcp_options_write", _OUT, 607),
    "tcp_syn_options": _r("tcp_syn_options", _OUT, 759),
    "tcp_synack_options": _r("tcp_synack_options", _OUT, 840),
    "tcp_established_options": _r("tcp_established_options", _OUT, 913),
    "tcp_schedule_loss_probe": _r("tcp_schedule_loss_probe", _OUT, 2730),
    "tcp_send_loss_probe": _r("tcp_send_loss_probe", _OUT, 2800),
    "tcp_ack_update_rtt": _r("tcp_ack_update_rtt", _IN, 3087),
    "tcp_dsack_set": _r("tcp_dsack_set", _IN, 4440),
    # the sender's SACK scoreboard, RACK and PRR (issue 25; read in the v6.4 tree)
    "tcp_check_sack_reordering": _r("tcp_check_sack_reordering", _IN, 1032),
    "tcp_check_dsack": _r("tcp_check_dsack", _IN, 1249),
    "tcp_sacktag_write_queue": _r("tcp_sacktag_write_queue", _IN, 1809),
    "tcp_enter_loss": _r("tcp_enter_loss", _IN, 2137),
    "tcp_cwnd_reduction": _r("tcp_cwnd_reduction", _IN, 2625),
    "tcp_end_cwnd_reduction": _r("tcp_end_cwnd_reduction", _IN, 2651),
    "tcp_enter_recovery": _r("tcp_enter_recovery", _IN, 2801),
    "tcp_rack_detect_loss": _r("tcp_rack_detect_loss", _REC, 58),
    "tcp_rack_mark_lost": _r("tcp_rack_mark_lost", _REC, 95),
    "tcp_rack_reo_timeout": _r("tcp_rack_reo_timeout", _REC, 149),
    "tcp_newreno_mark_lost": _r("tcp_newreno_mark_lost", _REC, 217),
    "tcp_xmit_retransmit_queue": _r("tcp_xmit_retransmit_queue", _OUT, 3291),
    # F-RTO and undo after an RTO (issue 25; read in the v6.4 tree)
    "tcp_process_loss": _r("tcp_process_loss", _IN, 2827),
    "tcp_try_undo_loss": _r("tcp_try_undo_loss", _IN, 2578),
    "tcp_try_undo_recovery": _r("tcp_try_undo_recovery", _IN, 2533),
    "tcp_try_undo_dsack": _r("tcp_try_undo_dsack", _IN, 2562),
}


def ref(key: str) -> SourceRef:
    return SOURCES[key]
