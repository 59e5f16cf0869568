"""Which of the kernel's packetdrill selftests a model of Linux 6.4 must pass line for line
(docs/packetdrill-scope.md lists every script and why; tests/sim/tcp/test_packetdrill_scope.py
checks that the two agree). Names only: the scripts themselves are GPL test code and are never
in this repository."""

from __future__ import annotations

# The "in" rows of docs/packetdrill-scope.md.
IN_SCOPE: frozenset[str] = frozenset(
    {
        "tcp_basic_client.pkt",
        "tcp_basic_server.pkt",
        "tcp_blocking_blocking-accept.pkt",
        "tcp_blocking_blocking-connect.pkt",
        "tcp_blocking_blocking-read.pkt",
        "tcp_blocking_blocking-write.pkt",
        "tcp_close_close-local-close-then-remote-fin.pkt",
        "tcp_close_close-on-syn-sent.pkt",
        "tcp_close_close-remote-fin-then-close.pkt",
        "tcp_close_no_rst.pkt",
        "tcp_fast_recovery_prr-ss-10pkt-lost-1.pkt",
        "tcp_fast_recovery_prr-ss-30pkt-lost-1_4-11_16.pkt",
        "tcp_fast_recovery_prr-ss-30pkt-lost1_4.pkt",
        "tcp_fast_recovery_prr-ss-ack-below-snd_una-cubic.pkt",
        "tcp_limited_transmit_limited-transmit-no-sack.pkt",
        "tcp_limited_transmit_limited-transmit-sack.pkt",
        "tcp_nagle_https_client.pkt",
        "tcp_sack_sack-shift-sacked-2-6-8-3-9-nofack.pkt",
        "tcp_sack_sack-shift-sacked-7-3-4-8-9-fack.pkt",
        "tcp_sack_sack-shift-sacked-7-5-6-8-9-fack.pkt",
        "tcp_slow_start_slow-start-ack-per-1pkt.pkt",
        "tcp_slow_start_slow-start-ack-per-2pkt.pkt",
        "tcp_slow_start_slow-start-ack-per-2pkt-send-5pkt.pkt",
        "tcp_slow_start_slow-start-ack-per-2pkt-send-6pkt.pkt",
        "tcp_slow_start_slow-start-ack-per-4pkt.pkt",
        "tcp_slow_start_slow-start-after-idle.pkt",
        "tcp_slow_start_slow-start-after-win-update.pkt",
        "tcp_slow_start_slow-start-app-limited-9-packets-out.pkt",
        "tcp_slow_start_slow-start-app-limited.pkt",
        "tcp_ts_recent_fin_tsval.pkt",
        "tcp_ts_recent_invalid_ack.pkt",
        "tcp_ts_recent_reset_tsval.pkt",
        "tcp_validate_validate-established-no-flags.pkt",
    }
)

# Scripts that pin behaviour changed after v6.4: out of scope for a 6.4 model. Each names the
# upstream commit that changed the kernel code the script depends on (found in the netdev and
# stable archives: torvalds/linux is too large to fetch here) and why 6.4 answers otherwise.
# The model answers as the v6.4 tree does; the bench reports these apart.
AFTER_6_4: dict[str, tuple[str, str]] = {
    "tcp_disorder_fin_in_FIN_WAIT.pkt": (
        "795a7dfbc3d95e4c7c09569f319f026f8c7f5a9c",
        "net: tcp: accept old ack during closing (2024): in 6.4 tcp_rcv_state_process "
        "(tcp_input.c lines 6538-6547) drops a FIN whose ACK is older than snd_una and sends a "
        "challenge ACK of rcv_nxt (ack 1), where the script expects its FIN acknowledged (ack 2)",
    ),
    "tcp_dsack_mult.pkt": (
        "a041f70e573e185d5d5fdbba53f0db2fbe7257ad",
        "tcp: fix tcp_ofo_queue() to avoid including too much DUP SACK range (2025): 6.4's "
        "tcp_ofo_queue (tcp_input.c line 4738) D-SACKs covered out-of-order data up to the old "
        "rcv_nxt (1001:6001), where the script expects 1001:3001",
    ),
    "tcp_rcv_zero_wnd_fin.pkt": (
        "2bd99aef1b19e6da09eff692bc0a09d61d785782",
        "tcp: accept bare FIN packets under memory pressure (2024): 6.4's tcp_data_queue "
        "(tcp_input.c line 5039) drops any segment at rcv_nxt into a zero window, a bare FIN "
        "too, and ACKs rcv_nxt (ack 60001), where the script expects the FIN taken (ack 60002); "
        "the script itself came with 1e3bb184e941 (2026), which restored that after "
        "9ca48d616ed7 (2025)",
    ),
}
