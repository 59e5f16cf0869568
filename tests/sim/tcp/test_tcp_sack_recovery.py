"""The sender's loss recovery as 6.4 runs it with SACK (its default): the SACK scoreboard
(tcp_sacktag_write_queue, tcp_check_dsack), RACK (tcp_rack_mark_lost, tcp_rack_reo_timeout),
recovery and PRR with CUBIC's ssthresh (tcp_enter_recovery, tcp_cwnd_reduction,
tcp_end_cwnd_reduction), what is resent (tcp_xmit_retransmit_queue), limited transmit
(tcp_cwnd_test with tcp_packets_in_flight) and NewReno without SACK (tcp_newreno_mark_lost).

The scripts are the project's own (1000-byte MSS from the peer, a 40 ms handshake RTT, so
min_rtt/4 = 10 ms); each expected packet is checked line for line by the packetdrill runner,
and the socket's counters are read from the model after the run.
"""

from __future__ import annotations

import re
from pathlib import Path

from app.sim.tcp import tcp_sack
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import DEFAULT_TOLERANCE_US, MAX_EVENTS, Result, Runner
from app.sim.tcp.sock import Sock
from tests.linux_v64 import require_v6_4, v6_4_file
from tests.pdscripts import OPEN_SACK

OPEN_NO_SACK = OPEN_SACK.replace("sackOK,nop,nop,nop,wscale 7", "nop,wscale 7")


def drive(body: str, open_: str = OPEN_SACK) -> tuple[Result, Sock]:
    runner = Runner(parse(open_ + body), DEFAULT_TOLERANCE_US, MAX_EVENTS)
    res = runner.run()
    sk = runner.sim.ep.fd
    assert isinstance(sk, Sock)
    return res, sk


def assert_all_match(res: Result) -> None:
    bad = [(r.line, [m.render() for m in r.reasons]) for r in res.lines if r.status == "mismatch"]
    assert res.verdict.passed, bad


def sources(res: Result, needle: str, script: str) -> list[str]:
    """The kernel functions behind the matched packet lines containing ``needle``."""
    lines = (OPEN_SACK + script).split("\n")
    return [
        r.source.function for r in res.lines if r.source is not None and needle in lines[r.line - 1]
    ]


RACK_TIMER = """
   +0 write(4, ..., 8000) = 8000
   +0 > P. 1:8001(8000) ack 1
// only the sixth segment arrived: RACK waits min_rtt/4 = 10 ms, + TCP_TIMEOUT_MIN (2 ms)
 +.04 < . 1:1(0) ack 1 win 500 <sack 5001:6001,nop,nop>
+.012 > . 1:1001(1000) ack 1
// the seventh arrives too: PRR lets one more retransmission go
+.002 < . 1:1(0) ack 1 win 500 <sack 5001:7001,nop,nop>
   +0 > . 1001:2001(1000) ack 1
"""


def test_rack_reordering_timer_marks_the_earlier_segments_lost_and_recovers() -> None:
    """tcp_rack_mark_lost arms the reordering timer (rack.rtt + min_rtt/4 - elapsed, +2 ms);
    tcp_rack_reo_timeout marks segments 1-5 lost, enters recovery (CUBIC's ssthresh 7 of 10)
    and PRR (tcp_cwnd_reduction) lets exactly one retransmission go per delivery."""
    res, sk = drive(RACK_TIMER)
    assert_all_match(res)
    assert sk.ca_state == "Recovery"
    assert (sk.ssthresh, sk.prior_cwnd) == (7, 10)
    assert tcp_sack.sacked_out(sk) == 2
    assert tcp_sack.lost_out(sk) == 5  # 1:5001
    assert tcp_sack.retrans_out(sk) == 2
    assert sources(res, "> . 1:1001", RACK_TIMER) == ["tcp_retransmit_skb"]


def test_without_the_timer_a_late_retransmission_fails() -> None:
    """The same script expecting the retransmission 2 ms earlier (before the reordering
    window has passed) fails at that line: RACK waits."""
    res, _ = drive(
        RACK_TIMER.replace("+.012 > . 1:1001", "+.006 > . 1:1001").replace(
            "+.002 < . 1:1(0) ack 1 win 500 <sack 5001:7001",
            "+.008 < . 1:1(0) ack 1 win 500 <sack 5001:7001",
        )
    )
    assert not res.verdict.passed
    assert "1:1001" in (OPEN_SACK + RACK_TIMER).split("\n")[res.verdict.line - 1]


PRR = """
   +0 write(4, ..., 8000) = 8000
   +0 > P. 1:8001(8000) ack 1
// 1:1001 is lost; three later segments SACKed (as many as tp->reordering): no reordering
// window, the head is lost at once and recovery starts on this ACK
 +.04 < . 1:1(0) ack 1 win 500 <sack 1001:2001,nop,nop>
   +0 < . 1:1(0) ack 1 win 500 <sack 1001:3001,nop,nop>
   +0 < . 1:1(0) ack 1 win 500 <sack 1001:4001,nop,nop>
   +0 > . 1:1001(1000) ack 1
// more data is written while cwnd (7) is full
+.005 write(4, ..., 3000) = 3000
// each SACK lets one new segment go (PRR, in flight at ssthresh)
+.005 < . 1:1(0) ack 1 win 500 <sack 1001:5001,nop,nop>
   +0 > . 8001:9001(1000) ack 1
+.002 < . 1:1(0) ack 1 win 500 <sack 1001:6001,nop,nop>
   +0 > . 9001:10001(1000) ack 1
// everything up to high_seq (8001) acknowledged: recovery ends with cwnd = ssthresh
 +.03 < . 1:1(0) ack 8001 win 500
   +0 > P. 10001:11001(1000) ack 1
"""


def test_prr_sends_one_segment_per_delivery_and_recovery_ends_at_ssthresh() -> None:
    """tcp_enter_recovery (ssthresh = 10 × 717/1024 = 7), tcp_cwnd_reduction (the forced
    fast retransmit, then packet conservation), tcp_end_cwnd_reduction (cwnd = ssthresh)."""
    res, sk = drive(PRR)
    assert_all_match(res)
    assert sk.ca_state == "Open"
    assert sk.ssthresh == 7
    assert sk.cwnd == 7  # set by tcp_end_cwnd_reduction; no growth above ssthresh yet
    assert sources(res, "> . 8001:9001", PRR) == ["tcp_write_xmit"]


def test_recovery_ending_lets_ssthresh_segments_go() -> None:
    """After recovery a write finds cwnd = 7 with three segments in flight: four more go."""
    body = PRR + "+.01 write(4, ..., 9000) = 9000\n"
    runner = Runner(parse(OPEN_SACK + body), DEFAULT_TOLERANCE_US, MAX_EVENTS)
    runner.run()
    sk = runner.sim.ep.fd
    assert isinstance(sk, Sock)
    assert tcp_sack.packets_in_flight(sk) == sk.cwnd == 7
    assert sk.snd_nxt == 15001


LIMITED = """
   +0 write(4, ..., 10000) = 10000
   +0 > P. 1:10001(10000) ack 1
   +0 write(4, ..., 2000) = 2000
// one segment SACKed: one fewer in flight (tcp_packets_in_flight), one new segment goes
 +.04 < . 1:1(0) ack 1 win 500 <sack 2001:3001,nop,nop>
   +0 > . 10001:11001(1000) ack 1
// a second: another one
+.001 < . 1:1(0) ack 1 win 500 <sack 2001:4001,nop,nop>
   +0 > P. 11001:12001(1000) ack 1
// the hole was only reordered: slow start grows cwnd by the one segment newly delivered
+.001 < . 1:1(0) ack 4001 win 500
"""


def test_sacked_segments_leave_room_for_new_data() -> None:
    """tcp_cwnd_test counts tcp_packets_in_flight (packets_out - sacked_out - lost_out +
    retrans_out): each SACKed segment lets one new one go (limited transmit); the RACK timer
    is pending, nothing is lost yet; the cumulative ACK of the reordered hole delivers two
    segments (the SACKed ones were counted before), so cwnd grows from 10 to 12."""
    res, sk = drive(LIMITED)
    assert_all_match(res)
    assert tcp_sack.lost_out(sk) == 0
    assert sk.reord_seen > 0  # tcp_check_sack_reordering: the hole was filled, not resent
    assert sk.cwnd == 12
    assert sk.ca_state == "Open"


def test_a_dsack_block_is_recognised_and_not_tagged() -> None:
    """tcp_check_dsack: a first block below the ACK reports data received twice; it tags
    nothing (sacked_out stays 0) and the frame cites the function."""
    body = """
   +0 write(4, ..., 2000) = 2000
   +0 > P. 1:2001(2000) ack 1
 +.04 < . 1:1(0) ack 2001 win 500 <sack 1:1001,nop,nop>
"""
    runner = Runner(parse(OPEN_SACK + body), DEFAULT_TOLERANCE_US, MAX_EVENTS)
    res = runner.run()
    assert_all_match(res)
    assert any(f.source is not None and f.source.function == "tcp_check_dsack" for f in res.frames)
    sk = runner.sim.ep.fd
    assert isinstance(sk, Sock)
    assert tcp_sack.sacked_out(sk) == 0 and not sk.rtx


def test_an_ack_below_snd_una_still_counts_its_sack_blocks() -> None:
    """tcp_ack's old_ack path: a reordered ACK below snd_una still carries SACK blocks;
    they are tagged (tcp_sacktag_write_queue), RACK finds 4001:5001 lost behind them and it
    is resent (tcp_fastretrans_alert, tcp_xmit_recovery), without a PRR step."""
    body = """
   +0 write(4, ..., 8000) = 8000
   +0 > P. 1:8001(8000) ack 1
 +.04 < . 1:1(0) ack 1 win 500 <sack 1001:2001,nop,nop>
   +0 < . 1:1(0) ack 1 win 500 <sack 1001:3001,nop,nop>
   +0 < . 1:1(0) ack 1 win 500 <sack 1001:4001,nop,nop>
   +0 > . 1:1001(1000) ack 1
+.005 write(4, ..., 2000) = 2000
+.005 < . 1:1(0) ack 4001 win 500
   +0 > P. 8001:10001(2000) ack 1
+.002 < . 1:1(0) ack 2001 win 500 <sack 5001:7001,nop,nop>
   +0 > . 4001:5001(1000) ack 1
"""
    res, sk = drive(body)
    assert_all_match(res)
    assert sk.snd_una == 4001
    assert sk.ca_state == "Recovery"
    assert [o.seq for o in sk.rtx if o.sacked] == [5001, 6001]
    assert [o.seq for o in sk.rtx if o.rexmit] == [4001]


NEWRENO = """
   +0 write(4, ..., 10000) = 10000
   +0 > P. 1:10001(10000) ack 1
   +0 write(4, ..., 2000) = 2000
// no SACK: each duplicate ACK counts as one segment delivered (tcp_add_reno_sack)
 +.04 < . 1:1(0) ack 1 win 500
   +0 > . 10001:11001(1000) ack 1
+.001 < . 1:1(0) ack 1 win 500
   +0 > P. 11001:12001(1000) ack 1
// the third: NewReno marks the head lost (tcp_newreno_mark_lost) and recovery resends it
+.001 < . 1:1(0) ack 1 win 500
   +0 > . 1:1001(1000) ack 1
"""


def test_without_sack_three_duplicate_acks_mark_the_head_lost() -> None:
    """tcp_add_reno_sack / tcp_newreno_mark_lost: without SACK, duplicate ACKs stand in for
    SACKed segments (limited transmit twice), and the third starts recovery."""
    res, sk = drive(NEWRENO, OPEN_NO_SACK)
    assert_all_match(res)
    assert not sk.sack_ok
    assert sk.ca_state == "Recovery"
    assert sk.reno_sacked == 3
    assert [o.seq for o in sk.rtx if o.lost] == [1]


def test_a_timed_python_block_keeps_its_place_on_the_clock() -> None:
    """packetdrill runs ``+.05 %{ … }%`` 50 ms after the line before it: the model cannot run
    a block that is not a TCP_INFO assertion (the line is unsupported), but the lines after it still count from its time."""
    body = """
 +.05 %{ print(tcpi_rtt) }%
   +0 write(4, ..., 1000) = 1000
   +0 > P. 1:1001(1000) ack 1
"""
    res, _ = drive(body)
    lines = (OPEN_SACK + body).split("\n")
    write = next(r for r in res.lines if "write(4" in lines[r.line - 1])
    sent = next(r for r in res.lines if "> P. 1:1001" in lines[r.line - 1])
    assert write.t_ms == 90.0
    assert sent.status == "match"
    assert res.verdict.line is not None and "%{" in lines[res.verdict.line - 1]


CITED_MODULES = (
    "tcp_sack.py",
    "tcp_recovery.py",
    "tcp_input_loss.py",
    "tcp_ack.py",
    "tcp_timer.py",
    "tcp_output.py",
)
_CITE = re.compile(r"(\w+)\s*\(((?:net/ipv4|include/net)/[\w.]+\.[ch]):(\d+)")
_CITE_AFTER = re.compile(r"\((\w+), ((?:net/ipv4|include/net)/[\w.]+\.[ch]):(\d+)\)")


def citations() -> list[tuple[str, str, str, int]]:
    root = Path(__file__).resolve().parents[3] / "app" / "sim" / "tcp"
    found = []
    for name in CITED_MODULES:
        text = (root / name).read_text(encoding="utf-8")
        for rx in (_CITE, _CITE_AFTER):
            found += [(name, f, p, int(n)) for f, p, n in rx.findall(text)]
    return found


def test_the_recovery_modules_cite_v6_4_definition_lines() -> None:
    """Every ``function (path:line)`` in the loss-recovery modules' docstrings names the line
    where v6.4 defines that function (read in the local v6.4 tree)."""
    require_v6_4()
    cited = citations()
    assert len(cited) >= 45
    bad = []
    for module, func, path, line in cited:
        text = v6_4_file(path)[line - 1]
        if text.startswith((" ", "\t")) or not re.search(rf"\b{func}\s*\(", text):
            bad.append((module, func, path, line, text))
    assert bad == []


def test_cwnd_grows_only_while_the_sender_uses_it() -> None:
    """tcp_is_cwnd_limited with tcp_cwnd_validate's record: two segments out of a cwnd of 10
    leave it at 10 when ACKed; nine out (each ACKed alone) let slow start take it to twice
    that, 18, and no further."""
    small = """
   +0 write(4, ..., 2000) = 2000
   +0 > P. 1:2001(2000) ack 1
 +.04 < . 1:1(0) ack 2001 win 500
"""
    res, sk = drive(small)
    assert_all_match(res)
    assert sk.cwnd == 10
    acks = "".join(f"+.001 < . 1:1(0) ack {n}001 win 500\n" for n in range(2, 10))
    nine = f"""
   +0 write(4, ..., 9000) = 9000
   +0 > P. 1:9001(9000) ack 1
 +.04 < . 1:1(0) ack 1001 win 500
{acks}"""
    res, sk = drive(nine)
    assert_all_match(res)
    assert sk.max_packets_out == 9
    assert sk.cwnd == 18
