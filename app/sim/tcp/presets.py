"""The TCP explainer's presets: raw (JSON-shaped) params, parsed like user input."""

from __future__ import annotations

from typing import Any

from app.sim.core.explainer import Preset
from app.sim.core.i18n import msg


def _c(t: float, ep: str, call: str, **kw: Any) -> dict[str, Any]:
    return {"t_ms": t, "endpoint": ep, "call": call, **kw}


_OPEN = [_c(0, "server", "listen"), _c(0, "server", "accept"), _c(0, "client", "connect")]

_RAW: list[tuple[str, Any, dict[str, Any]]] = [
    (
        "handshake",
        msg("Three-way handshake and data transfer"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=3000),
                _c(50, "server", "recv"),
                _c(120, "server", "send", bytes=500),
                _c(120, "client", "recv"),
            ],
            "until_ms": 1000,
        },
    ),
    (
        "client-close",
        msg("The client closes first"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=1000),
                _c(50, "server", "recv"),
                _c(100, "client", "close"),
                _c(100, "server", "recv"),
                _c(200, "server", "close"),
            ],
            "until_ms": 61_000,
        },
    ),
    (
        "server-close",
        msg("The server closes first"),
        {
            "script": [
                *_OPEN,
                _c(50, "server", "send", bytes=1000),
                _c(50, "client", "recv"),
                _c(100, "server", "close"),
                _c(100, "client", "recv"),
                _c(200, "client", "close"),
            ],
            "until_ms": 61_000,
        },
    ),
    (
        "simultaneous-open",
        msg("Simultaneous open: crossed SYNs"),
        {
            "script": [
                _c(0, "client", "connect"),
                _c(0, "server", "connect"),
                _c(100, "client", "send", bytes=500),
                _c(100, "server", "recv"),
            ],
            "until_ms": 2000,
        },
    ),
    (
        "simultaneous-close",
        msg("Simultaneous close: both sides in CLOSING"),
        {
            "script": [*_OPEN, _c(100, "client", "close"), _c(100, "server", "close")],
            "until_ms": 61_000,
        },
    ),
    (
        "half-close",
        msg("Half-close: shutdown(SHUT_WR) and data the other way"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=1000),
                _c(60, "client", "shutdown", how="SHUT_WR"),
                _c(60, "client", "recv"),
                _c(60, "server", "recv"),
                _c(60, "server", "recv"),
                _c(200, "server", "send", bytes=2000),
                _c(300, "server", "close"),
                _c(300, "client", "recv"),
                _c(400, "client", "close"),
            ],
            "until_ms": 61_000,
        },
    ),
    (
        "abort",
        msg("Abort: close() with SO_LINGER 0 sends RST"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=1000),
                _c(50, "server", "recv"),
                _c(200, "client", "abort"),
                _c(200, "server", "recv"),
                _c(300, "server", "send", bytes=100),
                _c(400, "server", "close"),
            ],
            "until_ms": 1000,
        },
    ),
    (
        "close-unread",
        msg("Close with unread data sends RST"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=1000),
                _c(60, "client", "recv"),
                _c(200, "server", "close"),
            ],
            "until_ms": 1000,
        },
    ),
    (
        "closed-port",
        msg("Connect to a closed port"),
        {"script": [_c(0, "client", "connect")], "until_ms": 500},
    ),
    (
        "syn-timeout",
        msg("Lost SYNs: exponential backoff until connect() gives up"),
        {
            "script": [_c(0, "server", "listen"), _c(0, "client", "connect")],
            "network": [{"drop": {"from": "client", "nth": 1, "count": 7}}],
            "until_ms": 130_000,
        },
    ),
    (
        "lost-fin",
        msg("A lost FIN and its retransmission"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=1000),
                _c(50, "server", "recv"),
                _c(100, "client", "close"),
                _c(100, "server", "recv"),
                _c(500, "server", "close"),
            ],
            "network": [{"drop": {"from": "client", "nth": 4}}],
            "until_ms": 61_000,
        },
    ),
    (
        "lost-last-ack",
        msg("A lost final ACK: LAST_ACK retransmits its FIN"),
        {
            "script": [
                *_OPEN,
                _c(100, "client", "close"),
                _c(100, "server", "recv"),
                _c(200, "server", "close"),
            ],
            "network": [{"drop": {"from": "client", "nth": 4}}],
            "until_ms": 62_000,
        },
    ),
    (
        "time-wait",
        msg("Without timestamps, TIME_WAIT holds the 4-tuple for 60 seconds"),
        {
            "script": [
                *_OPEN,
                _c(100, "client", "close"),
                _c(100, "server", "recv"),
                _c(150, "server", "close"),
                _c(30_000, "client", "connect"),
                _c(61_000, "client", "connect"),
                _c(61_000, "server", "accept"),
            ],
            "until_ms": 62_000,
            "sysctl": {"tcp_timestamps": 0},
        },
    ),
    (
        "time-wait-takeover",
        msg("With timestamps, connect() takes over a TIME_WAIT 4-tuple"),
        {
            "script": [
                *_OPEN,
                _c(100, "client", "close"),
                _c(100, "server", "recv"),
                _c(150, "server", "close"),
                _c(30_000, "client", "connect"),
                _c(30_000, "server", "accept"),
            ],
            "until_ms": 31_000,
        },
    ),
    (
        "syn-to-time-wait",
        msg("A new SYN reopens a TIME_WAIT 4-tuple"),
        {
            "script": [
                *_OPEN,
                _c(100, "server", "close"),
                _c(100, "client", "recv"),
                _c(150, "client", "close"),
                _c(2000, "client", "connect"),
                _c(2000, "server", "accept"),
            ],
            "until_ms": 3000,
        },
    ),
    (
        "accept-queue-full",
        msg("A SYN to a full accept queue is dropped"),
        {
            "script": [
                _c(0, "server", "listen", backlog=1, queued=2),
                _c(0, "client", "connect"),
                _c(2500, "server", "accept"),
                _c(2500, "server", "accept"),
                _c(2500, "server", "accept"),
            ],
            "until_ms": 5000,
        },
    ),
    (
        "syn-cookies",
        msg("SYN cookies when the SYN queue overflows"),
        {
            "script": [
                _c(0, "server", "listen", backlog=8, half_open=8),
                _c(0, "server", "accept"),
                _c(0, "client", "connect"),
                _c(50, "client", "send", bytes=1000),
                _c(50, "server", "recv"),
            ],
            "until_ms": 1000,
        },
    ),
    (
        "keepalive",
        msg("Keepalive probes on an idle connection"),
        {
            "script": [
                _c(0, "server", "listen"),
                _c(0, "server", "accept"),
                _c(0, "client", "connect", keepalive=True),
                _c(10, "client", "recv"),
            ],
            "network": [{"drop": {"from": "server", "nth": 3, "count": 100}}],
            "sysctl": {
                "tcp_keepalive_time_s": 30,
                "tcp_keepalive_intvl_s": 5,
                "tcp_keepalive_probes": 3,
            },
            "until_ms": 90_000,
        },
    ),
    (
        "zero-window",
        msg("A zero window and its persist probes"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=8000),
                _c(6000, "server", "recv"),
                _c(6100, "server", "recv"),
            ],
            "rcvbuf": 4000,
            "until_ms": 8000,
        },
    ),
    (
        "sack-recovery",
        msg("One segment lost: SACK blocks, RACK and PRR recover it"),
        {
            "script": [*_OPEN, _c(50, "client", "send", bytes=28960), _c(50, "server", "recv")],
            "network": [{"drop": {"from": "client", "nth": 6}}],
            "until_ms": 300,
        },
    ),
    (
        "spurious-rto",
        msg("A delay spike fires the RTO for nothing: F-RTO sees it was spurious"),
        {
            "script": [
                *_OPEN,
                _c(50, "client", "send", bytes=4344),
                _c(50, "server", "recv"),
                _c(330, "client", "send", bytes=5792),
            ],
            # a queue on the client's path stalls until 330 ms and then lets everything go,
            # in order: the three segments, the loss probe (sent at 92 ms) and the RTO's
            # retransmission (sent at 312 ms)
            "network": [
                {"delay": {"from": "client", "nth": 3, "ms": 270}},
                {"delay": {"from": "client", "nth": 4, "ms": 270}},
                {"delay": {"from": "client", "nth": 5, "ms": 270}},
                {"delay": {"from": "client", "nth": 6, "ms": 229}},
                {"delay": {"from": "client", "nth": 7, "ms": 10}},
            ],
            # without timestamps, so that F-RTO alone decides (with them, tcp_packet_delayed
            # proves the timeout spurious at the first ACK)
            "sysctl": {"tcp_timestamps": 0},
            "until_ms": 800,
        },
    ),
    (
        "challenge-ack",
        msg("A SYN on a live connection gets a challenge ACK (RFC 5961)"),
        {
            "script": [
                *_OPEN,
                _c(100, "client", "abort"),
                _c(200, "client", "connect"),
            ],
            "network": [{"drop": {"from": "client", "nth": 3}}],
            "until_ms": 2000,
        },
    ),
]

PRESETS: tuple[Preset, ...] = tuple(
    Preset(slug=slug, title=title, params=raw, lesson="tcp-" + slug) for slug, title, raw in _RAW
)
