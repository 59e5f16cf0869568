"""Delayed ACKs as 6.4 decides them (issue 25): ping-pong entry in tcp_event_data_sent, ato
as it is in tcp_send_delayed_ack (0 before any data: the next tick), the way out of ping-pong
in tcp_delack_timer_handler, and tcp_incr_quickack's count."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import LineResult, Result, run
from app.sim.tcp.sock import Sock
from app.sim.tcp.tcp_input import incr_quickack

EXAMPLES = Path(__file__).resolve().parents[3] / "content" / "packetdrill"

HANDSHAKE = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 4) = 0
   +0 < S 0:0(0) win 65535 <mss 1000>
   +0 > S. 0:0(0) ack 1 <...>
 +.02 < . 1:1(0) ack 1 win 65535
   +0 accept(3, ..., ...) = 4
"""


def outbound(res: Result) -> list[LineResult]:
    return [r for r in res.lines if r.kind == "packet" and r.got is not None]


def test_tcp_event_data_sent_enters_ping_pong_so_the_ack_waits() -> None:
    """delayed-ack.pkt: the reply leaves 0 ms after the request (< ato, 40 ms), so
    tcp_event_data_sent enters ping-pong mode; the next request is not quick-ACKed but waits
    for the delayed-ACK timer, 40 ms."""
    res = run(parse((EXAMPLES / "delayed-ack.pkt").read_text()))
    assert res.verdict.passed, res.verdict.reason.render()
    last = outbound(res)[-1]
    assert last.t_ms == 100.0
    assert last.source is not None and last.source.function == "tcp_delack_timer_handler"


def test_a_reply_later_than_ato_keeps_quick_acks() -> None:
    """tcp_event_data_sent: a reply 50 ms after the request (more than ato) does not enter
    ping-pong mode; the next request is still ACKed at once (tcp_in_quickack_mode)."""
    script = (
        HANDSHAKE
        + """\
 +.02 < P. 1:101(100) ack 1 win 65535
   +0 > . 1:1(0) ack 101
 +.05 write(4, ..., 100) = 100
   +0 > P. 1:101(100) ack 101
 +.01 < P. 101:201(100) ack 101 win 65535
   +0 > . 101:101(0) ack 201
"""
    )
    res = run(parse(script))
    assert res.verdict.passed, res.verdict.reason.render()
    assert outbound(res)[-1].source is not None
    assert outbound(res)[-1].source.function == "__tcp_ack_snd_check"  # type: ignore[union-attr]


def test_tcp_send_delayed_ack_with_ato_zero_fires_at_the_next_tick() -> None:
    """tcp_send_delayed_ack uses icsk_ack.ato as it is: a FIN before any data (tcp_fin enters
    ping-pong, no quick ACKs yet, ato still 0) is ACKed at jiffies + 0, the next tick (1 ms),
    not after TCP_ATO_MIN."""
    script = (
        HANDSHAKE
        + """\
 +.02 < F. 1:1(0) ack 1 win 65535
+.001 > . 1:1(0) ack 2
"""
    )
    res = run(parse(script), tolerance_us=0)
    assert res.verdict.passed, res.verdict.reason.render()
    ack = outbound(res)[-1]
    assert ack.t_ms == 41.0
    assert ack.source is not None and ack.source.function == "tcp_delack_timer_handler"


def test_tcp_delack_timer_handler_leaves_ping_pong() -> None:
    """ping-pong.pkt: in ping-pong mode an ACK rides on the reply; when the timer has to fire
    (tcp_delack_timer_handler) ping-pong ends (inet_csk_exit_pingpong_mode) and the quick
    ACKs left over make the next request's ACK immediate again."""
    res = run(parse((EXAMPLES / "ping-pong.pkt").read_text()))
    assert res.verdict.passed, res.verdict.reason.render()
    acks = [r for r in outbound(res) if r.got and r.got.get("len") == 0 and r.t_ms]
    by_fn = [(r.t_ms, r.source.function if r.source else None) for r in acks[-2:]]
    assert by_fn == [(110.0, "tcp_delack_timer_handler"), (130.0, "__tcp_ack_snd_check")]
    rides = next(r for r in outbound(res) if r.t_ms == 50.0)
    assert rides.got is not None and rides.got["len"] == 30


def test_tcp_incr_quickack_counts() -> None:
    """tcp_incr_quickack: rcv_wnd / (2 * rcv_mss) quick ACKs, 2 when that is 0, at most
    TCP_MAX_QUICKACKS (16); the count never shrinks."""

    def quick(rcv_wnd: int, rcv_mss: int, before: int = 0) -> int:
        sk = SimpleNamespace(rcv_wnd=rcv_wnd, rcv_mss=rcv_mss, quick=before)
        incr_quickack(cast(Sock, sk))
        return int(sk.quick)

    assert quick(65535, 536) == 16
    assert quick(1500, 536) == 1
    assert quick(1000, 536) == 2
    assert quick(1500, 536, before=5) == 5


# Our own script: an interactive (ping-pong) server gets two small segments, then reads them.
PUSHED_SCRIPT = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 4) = 0
   +0 < S 0:0(0) win 65535 <mss 1000>
   +0 > S. 0:0(0) ack 1 <...>
 +.02 < . 1:1(0) ack 1 win 65535
   +0 accept(3, ..., ...) = 4
 +.02 < P. 1:101(100) ack 1 win 65535
   +0 > . 1:1(0) ack 101
   +0 read(4, ..., 100) = 100
   +0 write(4, ..., 100) = 100
   +0 > P. 1:101(100) ack 101
 +.02 < P. 101:151(50) ack 101 win 65535
{second} +.01 read(4, ..., 100) = {n}
{ack}"""


def test_reading_after_two_small_segments_acks_at_once_in_ping_pong_mode() -> None:
    """tcp_measure_rcv_mss sets ICSK_ACK_PUSHED for a small segment and ICSK_ACK_PUSHED2 for
    a second one while the first is unacknowledged; tcp_cleanup_rbuf then sends the ACK as the
    read empties the queue, even in ping-pong mode (__tcp_ack_snd_check had delayed it). With
    one small segment (PUSHED only) a ping-pong socket keeps waiting for the delayed-ACK timer."""
    two = PUSHED_SCRIPT.format(
        second="   +0 < P. 151:201(50) ack 101 win 65535\n",
        n=100,
        ack="   +0 > . 101:101(0) ack 201\n",
    )
    res = run(parse(two))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    ack = next(r for r in res.lines if r.line == 16)
    assert ack.source is not None and ack.source.function == "tcp_cleanup_rbuf"
    one = PUSHED_SCRIPT.format(second="", n=50, ack="   +0 > . 101:101(0) ack 151\n")
    late = run(parse(one))
    assert not late.verdict.passed and late.verdict.line == 15  # no ACK at the read
    waited = PUSHED_SCRIPT.format(second="", n=50, ack="+.03 > . 101:101(0) ack 151\n")
    assert run(parse(waited)).verdict.passed  # the timer's ACK, 40 ms after the segment
