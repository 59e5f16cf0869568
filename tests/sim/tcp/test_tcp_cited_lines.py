"""One version cited: every Linux line the TCP explainer cites is upstream v6.4's (the version
its source links open on elixir), kept here as the checked table.

The lines were first read in 6.4.4 stable code, where every function of net/ipv4/tcp_input.c
after ``__tcp_oow_rate_limited`` is 6 lines lower than in v6.4 (issue 22: ``tcp_ack`` 3766 vs
3760, ``tcp_validate_incoming`` 5712 vs 5706, ``tcp_rcv_state_process`` 6461 vs 6455);
test_tcp_sources.py checks each line in a v6.4 tree. A new citation is added here after it is
checked; a frame that cites a function missing from this table fails.
"""

from __future__ import annotations

import pytest
from tcphelp import EX, run_preset

from app.sim.tcp.sources import SOURCES

# (function, file, v6.4 line of its definition)
CHECKED: frozenset[tuple[str, str, int]] = frozenset(
    {
        ("tcp_fin_time", "include/net/tcp.h", 1546),
        ("inet_listen", "net/ipv4/af_inet.c", 192),
        ("__inet_stream_connect", "net/ipv4/af_inet.c", 613),
        ("inet_shutdown", "net/ipv4/af_inet.c", 869),
        ("inet_csk_accept", "net/ipv4/inet_connection_sock.c", 657),
        ("reqsk_timer_handler", "net/ipv4/inet_connection_sock.c", 983),
        ("inet_csk_reqsk_queue_hash_add", "net/ipv4/inet_connection_sock.c", 1109),
        ("inet_csk_clone_lock", "net/ipv4/inet_connection_sock.c", 1136),
        ("inet_csk_listen_start", "net/ipv4/inet_connection_sock.c", 1232),
        ("inet_child_forget", "net/ipv4/inet_connection_sock.c", 1269),
        ("inet_csk_complete_hashdance", "net/ipv4/inet_connection_sock.c", 1318),
        ("inet_csk_listen_stop", "net/ipv4/inet_connection_sock.c", 1368),
        ("tw_timer_handler", "net/ipv4/inet_timewait_sock.c", 168),
        ("cookie_v4_check", "net/ipv4/syncookies.c", 325),
        ("tcp_sendmsg_locked", "net/ipv4/tcp.c", 1217),
        ("tcp_cleanup_rbuf", "net/ipv4/tcp.c", 1624),
        ("sk_stream_write_space", "net/core/stream.c", 30),
        ("sk_stream_wait_memory", "net/core/stream.c", 118),
        ("tcp_recvmsg_locked", "net/ipv4/tcp.c", 2419),
        ("tcp_set_state", "net/ipv4/tcp.c", 2692),
        ("tcp_close_state", "net/ipv4/tcp.c", 2782),
        ("tcp_shutdown", "net/ipv4/tcp.c", 2797),
        ("__tcp_close", "net/ipv4/tcp.c", 2857),
        ("tcp_disconnect", "net/ipv4/tcp.c", 3076),
        ("tcp_done", "net/ipv4/tcp.c", 4634),
        ("tcp_event_data_recv", "net/ipv4/tcp_input.c", 774),
        ("tcp_fastretrans_alert", "net/ipv4/tcp_input.c", 2953),
        ("tcp_ack_probe", "net/ipv4/tcp_input.c", 3444),
        ("tcp_send_challenge_ack", "net/ipv4/tcp_input.c", 3627),
        ("tcp_ack", "net/ipv4/tcp_input.c", 3760),
        ("tcp_reset", "net/ipv4/tcp_input.c", 4312),
        ("tcp_fin", "net/ipv4/tcp_input.c", 4359),
        ("tcp_send_dupack", "net/ipv4/tcp_input.c", 4482),
        ("tcp_data_queue", "net/ipv4/tcp_input.c", 5009),
        ("__tcp_ack_snd_check", "net/ipv4/tcp_input.c", 5517),
        ("tcp_validate_incoming", "net/ipv4/tcp_input.c", 5706),
        ("tcp_rcv_established", "net/ipv4/tcp_input.c", 5847),
        ("tcp_finish_connect", "net/ipv4/tcp_input.c", 6064),
        ("tcp_rcv_synsent_state_process", "net/ipv4/tcp_input.c", 6182),
        ("tcp_rcv_state_process", "net/ipv4/tcp_input.c", 6455),
        ("tcp_syn_flood_action", "net/ipv4/tcp_input.c", 6828),
        ("tcp_conn_request", "net/ipv4/tcp_input.c", 6924),
        ("tcp_v4_connect", "net/ipv4/tcp_ipv4.c", 200),
        ("tcp_v4_send_reset", "net/ipv4/tcp_ipv4.c", 677),
        ("tcp_v4_timewait_ack", "net/ipv4/tcp_ipv4.c", 945),
        ("tcp_v4_send_synack", "net/ipv4/tcp_ipv4.c", 999),
        ("tcp_v4_syn_recv_sock", "net/ipv4/tcp_ipv4.c", 1550),
        ("tcp_v4_rcv", "net/ipv4/tcp_ipv4.c", 1976),
        ("tcp_init_metrics", "net/ipv4/tcp_metrics.c", 444),
        ("tcp_timewait_state_process", "net/ipv4/tcp_minisocks.c", 85),
        ("tcp_time_wait", "net/ipv4/tcp_minisocks.c", 280),
        ("tcp_check_req", "net/ipv4/tcp_minisocks.c", 606),
        ("tcp_child_process", "net/ipv4/tcp_minisocks.c", 867),
        ("tcp_write_xmit", "net/ipv4/tcp_output.c", 2601),
        ("tcp_retransmit_skb", "net/ipv4/tcp_output.c", 3261),
        ("tcp_send_fin", "net/ipv4/tcp_output.c", 3391),
        ("tcp_send_active_reset", "net/ipv4/tcp_output.c", 3440),
        ("tcp_send_synack", "net/ipv4/tcp_output.c", 3474),
        ("tcp_connect", "net/ipv4/tcp_output.c", 3834),
        ("tcp_send_delayed_ack", "net/ipv4/tcp_output.c", 3892),
        ("tcp_event_data_sent", "net/ipv4/tcp_output.c", 161),
        ("tcp_cwnd_restart", "net/ipv4/tcp_output.c", 142),
        ("tcp_send_ack", "net/ipv4/tcp_output.c", 3987),
        ("tcp_xmit_probe_skb", "net/ipv4/tcp_output.c", 4003),
        ("tcp_write_wakeup", "net/ipv4/tcp_output.c", 4036),
        ("tcp_send_probe0", "net/ipv4/tcp_output.c", 4082),
        ("tcp_rtx_synack", "net/ipv4/tcp_output.c", 4116),
        ("tcp_write_err", "net/ipv4/tcp_timer.c", 68),
        ("tcp_orphan_retries", "net/ipv4/tcp_timer.c", 144),
        ("retransmits_timed_out", "net/ipv4/tcp_timer.c", 209),
        ("tcp_write_timeout", "net/ipv4/tcp_timer.c", 231),
        ("tcp_delack_timer_handler", "net/ipv4/tcp_timer.c", 290),
        ("tcp_probe_timer", "net/ipv4/tcp_timer.c", 360),
        ("tcp_retransmit_timer", "net/ipv4/tcp_timer.c", 456),
        ("tcp_keepalive_timer", "net/ipv4/tcp_timer.c", 678),
        # issue 25's options, windows and loss probes: read in the 6.4.4 tree
        # (test_tcp_sources.py re-checks each in v6.4)
        ("tcp_select_initial_window", "net/ipv4/tcp_output.c", 206),
        ("tcp_select_window", "net/ipv4/tcp_output.c", 257),
        ("tcp_options_write", "net/ipv4/tcp_output.c", 607),
        ("tcp_syn_options", "net/ipv4/tcp_output.c", 759),
        ("tcp_synack_options", "net/ipv4/tcp_output.c", 840),
        ("tcp_established_options", "net/ipv4/tcp_output.c", 913),
        ("tcp_schedule_loss_probe", "net/ipv4/tcp_output.c", 2730),
        ("tcp_send_loss_probe", "net/ipv4/tcp_output.c", 2800),
        ("tcp_ack_update_rtt", "net/ipv4/tcp_input.c", 3087),
        ("tcp_dsack_set", "net/ipv4/tcp_input.c", 4440),
        # the sender's SACK scoreboard, RACK and PRR: read in the v6.4 tree
        ("tcp_check_sack_reordering", "net/ipv4/tcp_input.c", 1032),
        ("tcp_check_dsack", "net/ipv4/tcp_input.c", 1249),
        ("tcp_sacktag_write_queue", "net/ipv4/tcp_input.c", 1809),
        ("tcp_enter_loss", "net/ipv4/tcp_input.c", 2137),
        ("tcp_cwnd_reduction", "net/ipv4/tcp_input.c", 2625),
        ("tcp_end_cwnd_reduction", "net/ipv4/tcp_input.c", 2651),
        ("tcp_enter_recovery", "net/ipv4/tcp_input.c", 2801),
        ("tcp_rack_detect_loss", "net/ipv4/tcp_recovery.c", 58),
        ("tcp_rack_mark_lost", "net/ipv4/tcp_recovery.c", 95),
        ("tcp_rack_reo_timeout", "net/ipv4/tcp_recovery.c", 149),
        ("tcp_newreno_mark_lost", "net/ipv4/tcp_recovery.c", 217),
        ("tcp_xmit_retransmit_queue", "net/ipv4/tcp_output.c", 3291),
        # F-RTO and undo after an RTO: read in the v6.4 tree
        ("tcp_process_loss", "net/ipv4/tcp_input.c", 2827),
        ("tcp_try_undo_loss", "net/ipv4/tcp_input.c", 2578),
        ("tcp_try_undo_recovery", "net/ipv4/tcp_input.c", 2533),
        ("tcp_try_undo_dsack", "net/ipv4/tcp_input.c", 2562),
    }
)


def test_table_cites_only_checked_lines() -> None:
    """Every (function, file, line) of the TCP source table is in the checked table."""
    cited = {(r.function, r.path, r.line) for r in SOURCES.values()}
    assert sorted(cited - CHECKED) == []


def test_v6_4_lines_of_tcp_input() -> None:
    """tcp_input.c after __tcp_oow_rate_limited is cited at v6.4's lines, not 6.4.4's."""
    lines = {r.function: r.line for r in SOURCES.values()}
    assert lines["tcp_ack"] == 3760
    assert lines["tcp_validate_incoming"] == 5706
    assert lines["tcp_rcv_state_process"] == 6455
    # before __tcp_oow_rate_limited nothing moved
    assert lines["tcp_event_data_recv"] == 774
    assert lines["tcp_ack_probe"] == 3444


@pytest.mark.parametrize("slug", [p.slug for p in EX.presets])
def test_tcp_preset_cites_checked_lines(slug: str) -> None:
    """Each frame of a TCP preset that cites the kernel cites a checked function at its line."""
    cited = 0
    for f in run_preset(slug).frames:
        if f.source is None:
            continue
        cited += 1
        assert (f.source.function, f.source.path, f.source.line) in CHECKED, f.source
    assert cited > 0
