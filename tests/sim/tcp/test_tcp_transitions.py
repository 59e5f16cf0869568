"""One row per state transition: the script that provokes it, the kernel object that changes,
and the function (and RFC 9293 clause) the model follows."""

from __future__ import annotations

from typing import Any

import pytest
from tcphelp import OPEN, c, run, transitions

_HS = [*OPEN]
_EST_CLOSE = [*OPEN, c(100, "client", "close"), c(100, "server", "recv"), c(200, "server", "close")]

# (id, spec, params, endpoint, object, from, to, function)
ROWS: list[tuple[str, str, dict[str, Any], str, str, str, str, str]] = [
    (
        "listen",
        "inet_csk_listen_start; RFC 9293 3.10.1 OPEN (passive)",
        {"script": [c(0, "server", "listen")]},
        "server",
        "listener",
        "TCP_CLOSE",
        "TCP_LISTEN",
        "inet_csk_listen_start",
    ),
    (
        "connect",
        "tcp_v4_connect; RFC 9293 3.10.1 OPEN (active) sends SYN",
        {"script": [c(0, "client", "connect")]},
        "client",
        "sock",
        "TCP_CLOSE",
        "TCP_SYN_SENT",
        "tcp_v4_connect",
    ),
    (
        "synsent-established",
        "tcp_finish_connect; RFC 9293 3.10.7.3 SYN-SENT, ACK of our SYN",
        {"script": _HS},
        "client",
        "sock",
        "TCP_SYN_SENT",
        "TCP_ESTABLISHED",
        "tcp_finish_connect",
    ),
    (
        "synsent-refused",
        "tcp_reset in SYN_SENT gives ECONNREFUSED; RFC 9293 3.10.7.3 RST",
        {"script": [c(0, "client", "connect")]},
        "client",
        "sock",
        "TCP_SYN_SENT",
        "TCP_CLOSE",
        "tcp_reset",
    ),
    (
        "simultaneous-open",
        "tcp_rcv_synsent_state_process: SYN without ACK; RFC 9293 3.10.7.3",
        {"script": [c(0, "client", "connect"), c(0, "server", "connect")]},
        "client",
        "sock",
        "TCP_SYN_SENT",
        "TCP_SYN_RECV",
        "tcp_rcv_synsent_state_process",
    ),
    (
        "synrecv-established",
        "tcp_rcv_state_process case TCP_SYN_RECV: acceptable ACK",
        {"script": [c(0, "client", "connect"), c(0, "server", "connect")]},
        "server",
        "sock",
        "TCP_SYN_RECV",
        "TCP_ESTABLISHED",
        "tcp_rcv_state_process",
    ),
    (
        "request-sock",
        "tcp_conn_request hashes a TCP_NEW_SYN_RECV request sock",
        {"script": _HS},
        "server",
        "request_sock",
        "TCP_LISTEN",
        "TCP_NEW_SYN_RECV",
        "tcp_conn_request",
    ),
    (
        "request-freed",
        "tcp_check_req: the child replaces the request sock, which is freed, not moved to "
        "TCP_SYN_RECV (inet_csk_complete_hashdance)",
        {"script": _HS},
        "server",
        "request_sock",
        "TCP_NEW_SYN_RECV",
        "TCP_CLOSE",
        "inet_csk_complete_hashdance",
    ),
    (
        "child-cloned",
        "inet_csk_clone_lock sets the child to TCP_SYN_RECV",
        {"script": _HS},
        "server",
        "sock",
        "TCP_LISTEN",
        "TCP_SYN_RECV",
        "inet_csk_clone_lock",
    ),
    (
        "child-established",
        "tcp_child_process -> tcp_rcv_state_process: SYN_RECV to ESTABLISHED",
        {"script": _HS},
        "server",
        "sock",
        "TCP_SYN_RECV",
        "TCP_ESTABLISHED",
        "tcp_rcv_state_process",
    ),
    (
        "listener-close",
        "__tcp_close of a listener (inet_csk_listen_stop)",
        {"script": [c(0, "server", "listen"), c(5, "server", "close")]},
        "server",
        "listener",
        "TCP_LISTEN",
        "TCP_CLOSE",
        "__tcp_close",
    ),
    (
        "close-fin-wait1",
        "__tcp_close -> tcp_close_state: ESTABLISHED to FIN_WAIT1 (RFC 9293 3.10.4 CLOSE)",
        {"script": _EST_CLOSE},
        "client",
        "sock",
        "TCP_ESTABLISHED",
        "TCP_FIN_WAIT1",
        "__tcp_close",
    ),
    (
        "shutdown-fin-wait1",
        "tcp_shutdown(SEND_SHUTDOWN) applies tcp_close_state",
        {"script": [*OPEN, c(100, "client", "shutdown", how="SHUT_WR")]},
        "client",
        "sock",
        "TCP_ESTABLISHED",
        "TCP_FIN_WAIT1",
        "tcp_shutdown",
    ),
    (
        "close-wait",
        "tcp_fin: ESTABLISHED to CLOSE_WAIT (RFC 9293 3.10.7.4 eighth, FIN bit)",
        {"script": _EST_CLOSE},
        "server",
        "sock",
        "TCP_ESTABLISHED",
        "TCP_CLOSE_WAIT",
        "tcp_fin",
    ),
    (
        "fin-wait2",
        "tcp_rcv_state_process case TCP_FIN_WAIT1: our FIN is ACKed",
        {"script": _EST_CLOSE},
        "client",
        "sock",
        "TCP_FIN_WAIT1",
        "TCP_FIN_WAIT2",
        "tcp_rcv_state_process",
    ),
    (
        "orphan-fin-wait2-tw",
        "tcp_time_wait(sk, TCP_FIN_WAIT2, tmo) for an orphaned socket",
        {"script": _EST_CLOSE},
        "client",
        "timewait_sock",
        "TCP_FIN_WAIT2",
        "TCP_TIME_WAIT",
        "tcp_time_wait",
    ),
    (
        "tw-substate-time-wait",
        "tcp_timewait_state_process: FIN at rcv_nxt, substate TIME_WAIT",
        {"script": _EST_CLOSE},
        "client",
        "timewait_sock",
        "TCP_TIME_WAIT",
        "TCP_TIME_WAIT",
        "tcp_timewait_state_process",
    ),
    (
        "last-ack",
        "__tcp_close: CLOSE_WAIT to LAST_ACK (RFC 9293 3.10.4 CLOSE-WAIT)",
        {"script": _EST_CLOSE},
        "server",
        "sock",
        "TCP_CLOSE_WAIT",
        "TCP_LAST_ACK",
        "__tcp_close",
    ),
    (
        "last-ack-closed",
        "tcp_rcv_state_process case TCP_LAST_ACK -> tcp_done",
        {"script": _EST_CLOSE},
        "server",
        "sock",
        "TCP_LAST_ACK",
        "TCP_CLOSE",
        "tcp_done",
    ),
    (
        "closing",
        "tcp_fin in FIN_WAIT1: simultaneous close to CLOSING",
        {"script": [*OPEN, c(100, "client", "close"), c(100, "server", "close")]},
        "client",
        "sock",
        "TCP_FIN_WAIT1",
        "TCP_CLOSING",
        "tcp_fin",
    ),
    (
        "closing-time-wait",
        "tcp_rcv_state_process case TCP_CLOSING -> tcp_time_wait",
        {"script": [*OPEN, c(100, "client", "close"), c(100, "server", "close")]},
        "server",
        "timewait_sock",
        "TCP_CLOSING",
        "TCP_TIME_WAIT",
        "tcp_time_wait",
    ),
    (
        "fin-wait2-time-wait",
        "tcp_fin in FIN_WAIT2 (socket still held) -> tcp_time_wait",
        {
            "script": [
                *OPEN,
                c(50, "client", "shutdown", how="SHUT_WR"),
                c(50, "server", "recv"),
                c(200, "server", "close"),
            ]
        },
        "client",
        "timewait_sock",
        "TCP_FIN_WAIT2",
        "TCP_TIME_WAIT",
        "tcp_time_wait",
    ),
    (
        "rst-received",
        "tcp_reset: an in-window RST at RCV.NXT closes (RFC 5961 3.2)",
        {"script": [*OPEN, c(100, "client", "abort")]},
        "server",
        "sock",
        "TCP_ESTABLISHED",
        "TCP_CLOSE",
        "tcp_reset",
    ),
    (
        "abort",
        "tcp_disconnect: close() with SO_LINGER 0 from ESTABLISHED",
        {"script": [*OPEN, c(100, "client", "abort")]},
        "client",
        "sock",
        "TCP_ESTABLISHED",
        "TCP_CLOSE",
        "tcp_disconnect",
    ),
    (
        "close-unread",
        "__tcp_close: unread data, tcp_set_state(CLOSE) + active reset",
        {"script": [*OPEN, c(50, "client", "send", bytes=100), c(200, "server", "close")]},
        "server",
        "sock",
        "TCP_ESTABLISHED",
        "TCP_CLOSE",
        "__tcp_close",
    ),
    (
        "close-syn-sent",
        "__tcp_close -> tcp_close_state: new_state[SYN_SENT] is CLOSE",
        {"script": [c(0, "client", "connect", nonblock=True), c(1, "client", "close")]},
        "client",
        "sock",
        "TCP_SYN_SENT",
        "TCP_CLOSE",
        "__tcp_close",
    ),
    (
        "syn-timeout",
        "tcp_write_timeout: SYN retries exhausted -> tcp_write_err",
        {
            "script": [c(0, "client", "connect")],
            "network": [{"drop": {"from": "client", "nth": 1, "count": 7}}],
            "until_ms": 130_000,
        },
        "client",
        "sock",
        "TCP_SYN_SENT",
        "TCP_CLOSE",
        "tcp_write_err",
    ),
    (
        "time-wait-expiry",
        "tw_timer_handler frees the timewait sock after TCP_TIMEWAIT_LEN",
        {"script": _EST_CLOSE, "until_ms": 61_000},
        "client",
        "timewait_sock",
        "TCP_TIME_WAIT",
        "TCP_CLOSE",
        "tw_timer_handler",
    ),
    (
        "tw-syn",
        "tcp_timewait_state_process: a new SYN above rcv_nxt (TCP_TW_SYN)",
        {
            "script": [
                *OPEN,
                c(100, "server", "close"),
                c(100, "client", "recv"),
                c(150, "client", "close"),
                c(2000, "client", "connect"),
            ]
        },
        "server",
        "timewait_sock",
        "TCP_TIME_WAIT",
        "TCP_CLOSE",
        "tcp_timewait_state_process",
    ),
    (
        "req-expired",
        "reqsk_timer_handler drops the request after tcp_synack_retries",
        {
            "script": [c(0, "server", "listen"), c(0, "client", "connect")],
            "network": [{"drop": {"from": "server", "nth": 1, "count": 20}}],
            "until_ms": 70_000,
        },
        "server",
        "request_sock",
        "TCP_NEW_SYN_RECV",
        "TCP_CLOSE",
        "reqsk_timer_handler",
    ),
    (
        "keepalive-timeout",
        "tcp_keepalive_timer: probes unanswered -> tcp_write_err",
        {
            "script": [*OPEN[:2], c(0, "client", "connect", keepalive=True)],
            "network": [{"drop": {"from": "server", "nth": 2, "count": 50}}],
            "sysctl": {
                "tcp_keepalive_time_s": 10,
                "tcp_keepalive_intvl_s": 2,
                "tcp_keepalive_probes": 2,
            },
            "until_ms": 20_000,
        },
        "client",
        "sock",
        "TCP_ESTABLISHED",
        "TCP_CLOSE",
        "tcp_write_err",
    ),
]


@pytest.mark.parametrize(
    ("spec", "raw", "ep", "obj", "frm", "to", "func"),
    [pytest.param(*r[1:], id=r[0]) for r in ROWS],
)
def test_transition(
    spec: str, raw: dict[str, Any], ep: str, obj: str, frm: str, to: str, func: str
) -> None:
    """Each row's script makes that object take that transition, attributed to the kernel
    function named in the row's spec (RFC 9293 clause alongside where one applies)."""
    assert func in spec
    got = [
        (t["object"], t["from_state"], t["to_state"], t["function"])
        for t in transitions(run(raw))
        if t["endpoint"] == ep
    ]
    assert (obj, frm, to, func) in got, got


def test_rfc_names_of_transitions_follow_the_state_map() -> None:
    """Every transition's RFC names are RFC 9293 names (TCP_NEW_SYN_RECV shows as SYN_RECEIVED)."""
    from app.sim.tcp.sock import RFC_STATES

    for r in ROWS:
        for t in transitions(run(r[2])):
            assert t["rfc_from"] in RFC_STATES and t["rfc_to"] in RFC_STATES
            assert not t["rfc_to"].startswith("TCP_")
