"""Errors returned to socket calls, as errno names (frame results, not failures)."""

from __future__ import annotations

import pytest
from tcphelp import OPEN, c, returns, run

# (call sequence, endpoint, call, expected errno, where the kernel decides it)
CASES = [
    (
        [c(0, "client", "send", bytes=10)],
        "client",
        "send",
        "EPIPE",
        "tcp_sendmsg_locked -> sk_stream_wait_connect on a closed socket",
    ),
    ([c(0, "client", "recv")], "client", "recv", "ENOTCONN", "tcp_recvmsg_locked"),
    (
        [c(0, "client", "shutdown", how="SHUT_WR")],
        "client",
        "shutdown",
        "ENOTCONN",
        "inet_shutdown on TCP_CLOSE",
    ),
    (
        [c(0, "server", "listen"), c(1, "server", "send", bytes=1)],
        "server",
        "send",
        "EPIPE",
        "sk_stream_wait_connect on a listener",
    ),
    (
        [c(0, "server", "listen"), c(1, "server", "connect")],
        "server",
        "connect",
        "EISCONN",
        "__inet_stream_connect: sk_state is not TCP_CLOSE",
    ),
    ([c(0, "client", "accept")], "client", "accept", "EINVAL", "inet_csk_accept: not listening"),
    (
        [*OPEN, c(50, "client", "connect")],
        "client",
        "connect",
        "EISCONN",
        "__inet_stream_connect: SS_CONNECTED",
    ),
    (
        [
            c(0, "server", "listen"),
            c(0, "client", "connect", nonblock=True),
            c(1, "client", "connect"),
        ],
        "client",
        "connect",
        "EALREADY",
        "__inet_stream_connect: SS_CONNECTING",
    ),
    (
        [*OPEN, c(50, "client", "shutdown", how="SHUT_WR"), c(60, "client", "send", bytes=5)],
        "client",
        "send",
        "EPIPE",
        "tcp_sendmsg_locked: SEND_SHUTDOWN",
    ),
    ([c(0, "client", "connect")], "client", "connect", "ECONNREFUSED", "tcp_reset in SYN_SENT"),
]


@pytest.mark.parametrize(("script", "ep", "call", "errno", "where"), CASES)
def test_errno(script: list[dict[str, object]], ep: str, call: str, errno: str, where: str) -> None:
    """The call returns the errno the named kernel function returns (checked on 6.18 with
    Python sockets for the unconnected and listener cases)."""
    got = [r for _, r in returns(run({"script": script, "until_ms": 2000}), ep, call)]
    assert got[-1] == errno, (where, got)


def test_reset_error_then_epipe() -> None:
    """After a RST the first call reports ECONNRESET (sk_err), later sends EPIPE."""
    tr = run(
        {
            "script": [
                *OPEN,
                c(50, "server", "recv"),
                c(100, "client", "abort"),
                c(200, "server", "send", bytes=1),
            ]
        }
    )
    assert returns(tr, "server", "recv")[-1][1] == "ECONNRESET"
    assert returns(tr, "server", "send")[-1][1] == "EPIPE"


def test_reset_in_close_wait_is_epipe() -> None:
    """tcp_reset: a RST in CLOSE_WAIT sets EPIPE, not ECONNRESET."""
    tr = run(
        {
            "script": [
                *OPEN,
                c(50, "client", "shutdown", how="SHUT_WR"),
                c(100, "client", "abort"),
                c(150, "server", "send", bytes=1),
            ]
        }
    )
    assert returns(tr, "server", "send")[-1][1] == "EPIPE"
    notes = [n for f in tr.frames for n in (f.narration, *f.notes)]
    assert any(n.params.get("err") == "EPIPE" for n in notes)
