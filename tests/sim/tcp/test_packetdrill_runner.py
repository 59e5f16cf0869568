"""The packetdrill runner on the project's own example scripts: the ones the model passes pass
line for line; a deliberately wrong expectation fails at that line with its reason; timing,
tolerance, relative numbering, blocking calls and the run limit behave as packetdrill's."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import RunLimitError, run

EXAMPLES = Path(__file__).resolve().parents[3] / "content" / "packetdrill"


def text(name: str) -> str:
    return (EXAMPLES / f"{name}.pkt").read_text()


def line_of(script: str, needle: str) -> int:
    return next(i for i, ln in enumerate(script.split("\n"), 1) if needle in ln)


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.pkt")))
def test_the_examples_the_model_should_pass_pass(name: str) -> None:
    res = run(parse(text(name)))
    bad = [
        (r.line, r.status, [m.render() for m in r.reasons])
        for r in res.lines
        if r.status not in ("match", "comment")
    ]
    assert res.verdict.passed, bad
    assert res.verdict.line is None


def test_a_wrong_expectation_fails_at_that_line_with_the_reason() -> None:
    src = text("basic-server").replace("> P. 1:701(700) ack 301", "> P. 1:801(800) ack 301")
    res = run(parse(src))
    assert not res.verdict.passed
    assert res.verdict.line == line_of(src, "1:801(800)")
    failed = next(r for r in res.lines if r.line == res.verdict.line)
    assert failed.status == "mismatch"
    assert {"len"} <= set(failed.diffs)
    assert failed.got is not None and failed.got["len"] == 700
    assert failed.source is not None and failed.source.function == "tcp_write_xmit"
    # the lines before it matched
    assert all(r.status in ("match", "comment") for r in res.lines if r.line < failed.line)


def test_a_wrong_return_value_and_errno_fail() -> None:
    src = text("rst-challenge-ack").replace("= -1 ECONNRESET", "= -1 EPIPE")
    res = run(parse(src))
    assert res.verdict.line == line_of(src, "EPIPE")
    assert "ECONNRESET" in res.verdict.reason.render()


def test_time_outside_tolerance_fails_inside_passes() -> None:
    """The persist timer's first probe comes 300 ms after the zero window (RTO after a 100 ms
    RTT sample): expected 5 ms later, it fails with 4000 µs of tolerance and passes with 6000."""
    src = text("zero-window").replace("+.3 > . 2000:2000(0)", "+.305 > . 2000:2000(0)")
    res = run(parse(src), tolerance_us=4000)
    assert res.verdict.line == line_of(src, "+.305")
    assert "time" in next(r for r in res.lines if r.line == res.verdict.line).diffs
    assert run(parse(src), tolerance_us=6000).verdict.passed


def test_sequence_numbers_are_relative_to_the_local_isn() -> None:
    """packetdrill maps the local ISN to 0: the model's SYN is seq 0 whatever its ISS."""
    res = run(parse(text("basic-client")))
    syn = next(r for r in res.lines if r.got and r.got.get("flags") == "S")
    assert syn.got is not None and syn.got["seq"] == 0


def test_a_blocking_read_returns_when_data_arrives() -> None:
    """read() with a range blocks until the peer's data comes 100 ms later (tcp_recvmsg)."""
    src = (
        text("basic-server")
        .replace(
            "   +0 read(4, ..., 1000) = 300",
            "",
        )
        .replace(
            " +.01 < P. 1:301(300) ack 1 win 65535",
            "   +0...0.010 read(4, ..., 1000) = 300\n +.01 < P. 1:301(300) ack 1 win 65535",
        )
    )
    res = run(parse(src))
    assert res.verdict.passed, [(r.line, [m.render() for m in r.reasons]) for r in res.lines]
    rd = next(r for r in res.lines if r.got and r.got.get("call") == "read")
    assert rd.got is not None and rd.got["ret"] == 300


def test_unsupported_lines_fail_the_verdict_but_not_the_run() -> None:
    src = text("basic-client") + "\n+0 setsockopt(3, SOL_TCP, TCP_FASTOPEN, [1], 4) = 0\n"
    res = run(parse(src))
    assert not res.verdict.passed
    assert "TCP Fast Open" in res.verdict.reason.render()
    assert res.lines[-1].status == "unsupported"


def test_scripts_past_the_simulated_time_limit_are_refused() -> None:
    with pytest.raises(RunLimitError) as exc:
        run(parse("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+700 close(3) = 0\n"))
    assert "600 s" in exc.value.why.render()


def test_scripts_past_the_event_limit_are_refused() -> None:
    with pytest.raises(RunLimitError) as exc:
        run(parse(text("fast-retransmit")), max_events=3)
    assert "3 model events" in exc.value.why.render()


def test_a_burst_is_one_gso_packet_or_its_segments() -> None:
    """packetdrill's tun takes GSO packets: back-to-back segments of one burst may be written
    as one packet or one by one; a join never spans a time gap or passes the expected end."""
    src = text("basic-client")
    split = src.replace(
        "   +0 > P. 1:2001(2000) ack 1",
        "   +0 > . 1:1001(1000) ack 1\n   +0 > P. 1001:2001(1000) ack 1",
    )
    assert run(parse(src)).verdict.passed
    assert run(parse(split)).verdict.passed
    too_long = src.replace("> P. 1:2001(2000) ack 1", "> P. 1:3001(3000) ack 1")
    res = run(parse(too_long))
    assert res.verdict.line == line_of(too_long, "1:3001(3000)")
    got = next(r for r in res.lines if r.line == res.verdict.line).got
    assert got is not None and got["len"] == 2000


def test_the_chinese_examples_are_the_same_scripts() -> None:
    """content/zh-CN/packetdrill: the same lines, only the comments translated, same verdicts."""
    zh_dir = EXAMPLES.parent / "zh-CN" / "packetdrill"
    for en in EXAMPLES.glob("*.pkt"):
        zh = (zh_dir / en.name).read_text()
        en_lines, zh_lines = en.read_text().split("\n"), zh.split("\n")
        assert len(en_lines) == len(zh_lines), en.name
        for a, b in zip(en_lines, zh_lines, strict=True):
            assert a.split("//")[0] == b.split("//")[0], (en.name, a, b)
        assert run(parse(zh)).verdict.passed == run(parse(en.read_text())).verdict.passed


POLL_SCRIPT = """0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0 bind(3, ..., ...) = 0
+0 listen(3, 4) = 0
+0 < S 0:0(0) win 65535 <mss 1000>
+0 > S. 0:0(0) ack 1 <...>
+.01 < . 1:1(0) ack 1 win 65535
+0 accept(3, ..., ...) = 4
+0...0.1 poll([{fd=4, events=POLLIN, revents=POLLIN}], 1, 1000) = 1
+.1 < P. 1:101(100) ack 1 win 65535
+0 > . 1:1(0) ack 101
+0 read(4, ..., 100) = 100
+0 poll([{fd=4, events=POLLIN|POLLOUT, revents=POLLOUT}], 1, 0) = 1
+0...0.05 poll([{fd=4, events=POLLIN, revents=0}], 1, 50) = 0
"""


def test_poll_waits_while_later_lines_run_and_times_out() -> None:
    """poll() with a timeout waits for the peer's data (tcp_poll: POLLIN), answers at once
    with timeout 0, and returns 0 when its timeout passes."""
    res = run(parse(POLL_SCRIPT))
    assert res.verdict.passed, [(r.line, [m.render() for m in r.reasons]) for r in res.lines]
    got = {r.line: r.got for r in res.lines}
    assert got[8] is not None and (got[8]["ret"], got[8]["t_ms"]) == (1, 110.0)
    assert got[13] is not None and (got[13]["ret"], got[13]["t_ms"]) == (0, 160.0)
    wrong = POLL_SCRIPT.replace("revents=POLLOUT}], 1, 0) = 1", "revents=POLLIN}], 1, 0) = 1")
    assert run(parse(wrong)).verdict.line == 12


def test_option_matching_for_when_the_model_writes_options() -> None:
    """options_diff as it will run once the model's segments carry options: kinds in order,
    mss/wscale/sack values exact, TS by presence, <...> anything, none expected means none."""
    from app.sim.tcp.options import TcpOption as O
    from app.sim.tcp.packetdrill.runner import options_diff

    syn = (O("mss", (1460,)), O("sackOK"), O("TS", (5, 0)), O("nop"), O("wscale", (7,)))
    want = (O("mss", (1460,)), O("sackOK"), O("TS", (0, 0)), O("nop"), O("wscale", (7,)))
    assert options_diff(want, syn, 0) is None
    assert options_diff(None, syn, 0) is None
    why = options_diff(want, None, 0)  # the model writes none yet
    assert why is not None and "no options yet" in why.render()
    assert options_diff((), None, 0) is None
    assert options_diff((), syn, 0) is not None
    wrong = (*want[:4], O("wscale", (8,)))
    why = options_diff(wrong, syn, 0)
    assert why is not None and "wscale 8" in why.render()
    sack = (O("nop"), O("nop"), O("sack", (1001, 2001)))
    assert options_diff(sack, sack, 0) is None
    assert options_diff(sack, (O("nop"), O("nop"), O("sack", (1001, 3001))), 0) is not None


def test_a_packet_time_range_accepts_any_time_within_it() -> None:
    """``+0~+.05 > …``: the delayed ACK of a FIN (40 ms, ping-pong after tcp_fin) anywhere in
    the range; the next ``+0`` counts from when it was sent."""
    src = text("close-paths")
    ranged = src.replace(" +.04 > . 1:1(0) ack 202\n", "   +0~+.05 > . 1:1(0) ack 202\n")
    assert ranged != src
    res = run(parse(ranged))
    assert res.verdict.passed, [(r.line, [m.render() for m in r.reasons]) for r in res.lines]
    short = src.replace(" +.04 > . 1:1(0) ack 202\n", "   +0~+.02 > . 1:1(0) ack 202\n")
    assert run(parse(short)).verdict.line == line_of(short, "+0~+.02")


# A passive open whose peer offers MSS 1000: our own script, in the selftests' style.
SMALL_PEER_MSS = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 20000 <mss 1000,sackOK,nop,nop>
   +0 > S. 0:0(0) ack 1 <mss {advmss},nop,nop,sackOK>
  +.02 < . 1:1(0) ack 1 win 20000
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 1500) = 1500
   +0 > . 1:1001(1000) ack 1
   +0 > P. 1001:1501(500) ack 1
"""


def test_the_syn_ack_offers_advmss_whatever_the_peers_mss() -> None:
    """tcp_openreq_init_rwin / tcp_make_synack: the SYN-ACK's MSS option is the route's advmss
    (1460 on the selftests' 1500-byte tun device), not the peer's; the peer's 1000 only clamps
    what the local end sends (tcp_sync_mss: 1000-byte segments)."""
    assert run(parse(SMALL_PEER_MSS.format(advmss=1460))).verdict.passed
    res = run(parse(SMALL_PEER_MSS.format(advmss=1000)))
    assert not res.verdict.passed and res.verdict.line == 5


FIRST_ACK_AFTER_SYNACK = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0...0.020 connect(3, ..., ...) = 0
   +0 > S 0:0(0) <...>
  +.02 < S. 0:0(0) ack 1 win 65535 <mss 1000>
   +0 > . 1:1(0) ack 1
   +0 write(3, ..., 5000) = 5000
   +0 > P. 1:5001(5000) ack 1
  +.02 < . 1:1(0) ack 1 win 65535
   +0 < . 1:1(0) ack 1 win 65535
   +0 < . 1:1(0) ack 1 win 65535
{more}   +0 > . 1:1001(1000) ack 1
"""


def test_the_peers_first_ack_after_its_syn_ack_is_a_window_update_not_a_duplicate() -> None:
    """tcp_ack / tcp_ack_update_window: the first ACK moves snd_wl1 past the SYN-ACK's
    sequence number, so tcp_may_update_window sets FLAG_WIN_UPDATE (one of FLAG_NOT_DUP) and
    it is not counted; three ACKs of 1 are two duplicates (no fast retransmit), four are three."""
    three = run(parse(FIRST_ACK_AFTER_SYNACK.format(more="")))
    assert not three.verdict.passed and three.verdict.line == 11
    four = run(parse(FIRST_ACK_AFTER_SYNACK.format(more="   +0 < . 1:1(0) ack 1 win 65535\n")))
    assert four.verdict.passed, [(r.line, r.status, r.reasons) for r in four.lines]


SMALL_RCVBUF = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_RCVBUF, [20000], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 40000 <mss 1000,nop,wscale 6>
   +0 > S. 0:0(0) ack 1 win 18980 <mss 1460,nop,wscale 0>
  +.01 < . 1:1(0) ack 1 win 300
   +0 accept(3, ..., ...) = 4
   +0 < P. 1:30001(30000) ack 1 win 300
    * > . 1:1(0) ack 30001 win 0
  +.01 < F. 30001:30001(0) ack 1 win 300
   +0 > . 1:1(0) ack 30001 win 0
"""


def test_a_listeners_so_rcvbuf_sets_the_syn_acks_window_and_a_bare_fin_meets_a_zero_window() -> (
    None
):
    """SO_RCVBUF set before listen() is the request sock's space (tcp_openreq_init_rwin, via
    tcp_full_space): the SYN-ACK offers 18980 with wscale 0. Once the window is zero,
    tcp_data_queue drops a segment at rcv_nxt, a bare FIN too (its end_seq is past its seq),
    and ACKs rcv_nxt at once (tcp_input.c line 5039): 6.4 does not yet accept the FIN there
    (2bd99aef1b19, "tcp: accept bare FIN packets under memory pressure", 2024)."""
    res = run(parse(SMALL_RCVBUF))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    fin_acked = SMALL_RCVBUF.rsplit("\n", 2)[0] + "\n   +0 > . 1:1(0) ack 30002 win 0\n"
    later = run(parse(fin_acked))
    assert not later.verdict.passed and later.verdict.line == 12


PSH_MARKS = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
  +.1 < S 0:0(0) win 20000 <mss 1000>
   +0 > S. 0:0(0) ack 1 <mss 1460>
  +.1 < . 1:1(0) ack 1 win 20000
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 15000) = 15000
   +0 > {first} 1:10001(10000) ack 1
 +.05 < . 1:1(0) ack 1001 win 10000
   +0 > {middle} 10001:11001(1000) ack 1
 +.05 < . 1:1(0) ack 11001 win 20000
   +0 > {last} 11001:15001(4000) ack 1
"""


def test_psh_falls_where_6_4_puts_it_on_gso_packets_and_marked_skbs() -> None:
    """tcp_sendmsg_locked cuts the 15000 bytes into skbs of half the peer's largest window
    (tcp_xmit_size_goal: 10000); the first fills and goes alone (tcp_push_one), and
    __tcp_transmit_skb sets PSH on every GSO packet, so 1:10001 carries it. tcp_push marks
    the second skb, but the window lets one segment go: tso_fragment cuts a one-segment
    packet off its front, without PSH. The rest ends the marked skb: PSH."""
    want = {"first": "P.", "middle": ".", "last": "P."}
    res = run(parse(PSH_MARKS.format(**want)))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    for key, line in (("first", 10), ("middle", 12), ("last", 14)):
        flipped = dict(want, **{key: "." if want[key] == "P." else "P."})
        res = run(parse(PSH_MARKS.format(**flipped)))
        assert not res.verdict.passed and res.verdict.line == line, key


def test_a_forced_push_marks_an_skb_in_the_middle_of_a_write() -> None:
    """forced_push (net/ipv4/tcp.c): with a 2000-byte largest window the skbs hold 1000
    bytes; once more than half the window is written since the last push the full skb is
    marked PSH, so the second of two segments carries it, the first does not."""
    script = "\n".join(text("zero-window").split("\n")[:13]) + "\n"
    one_by_one = script.replace("> P. 1:2001(2000) ack 1", "> . 1:1001(1000) ack 1")
    res = run(parse(one_by_one + "   +0 > P. 1001:2001(1000) ack 1\n"))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    res = run(parse(one_by_one.replace("> . 1:1001", "> P. 1:1001")))
    assert not res.verdict.passed


OFO_COVERED = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 20000 <mss 1000,sackOK,nop,nop,nop,wscale 7>
   +0 > S. 0:0(0) ack 1 <...>
  +.1 < . 1:1(0) ack 1 win 100
   +0 accept(3, ..., ...) = 4
   +0 < P. 1001:2001(1000) ack 1 win 100
   +0 > . 1:1(0) ack 1 <nop,nop,sack 1001:2001>
   +0 < P. 1:3001(3000) ack 1 win 100
   +0 > . 1:1(0) ack 3001 <nop,nop,sack {dsack}>
"""


def test_ofo_data_covered_again_is_a_dsack_up_to_the_old_rcv_nxt() -> None:
    """tcp_ofo_queue (6.4): queued 1001:2001 is covered again by 1:3001; tcp_dsack_extend
    reports it from its start to the RCV.NXT the in-order data reached (1001:3001), not to
    its own end (1001:2001, the answer since a041f70e573e, 2025)."""
    res = run(parse(OFO_COVERED.format(dsack="1001:3001")))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    res = run(parse(OFO_COVERED.format(dsack="1001:2001")))
    assert not res.verdict.passed and res.verdict.line == 12


FIN_WITH_AN_OLD_ACK = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0...0.050 connect(3, ..., ...) = 0
   +0 > S 0:0(0) <...>
 +.05 < S. 0:0(0) ack 1 win 10000 <mss 1000,sackOK,nop,nop>
   +0 > . 1:1(0) ack 1
 +.01 shutdown(3, SHUT_WR) = 0
   +0 > F. 1:1(0) ack 1
 +.05 < . 202:202(0) ack 2 win 10000
 +.01 < F. 1:201(200) ack 1 win 10000
   +0 > . 2:2(0) ack {ack}
"""


def test_a_fin_whose_ack_is_older_than_snd_una_gets_a_challenge_ack_in_fin_wait2() -> None:
    """The peer's ACK of our FIN overtook its own data and FIN, sent before it with ack 1.
    6.4's tcp_rcv_state_process (net/ipv4/tcp_input.c lines 6538-6547) takes tcp_ack's 0
    for an ACK below snd_una as not acceptable: a challenge ACK of rcv_nxt (ack 1), and the
    segment, FIN included, is dropped. Acknowledging it (ack 202) is the 2024 change
    795a7dfbc3d9 ("net: tcp: accept old ack during closing"), later than 6.4."""
    res = run(parse(FIN_WITH_AN_OLD_ACK.format(ack=1)))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    assert res.lines[-1].source is not None
    assert res.lines[-1].source.function == "tcp_send_challenge_ack"
    later = run(parse(FIN_WITH_AN_OLD_ACK.format(ack=202)))
    assert not later.verdict.passed and later.verdict.line == 10


RESENT_WITH_FIN = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 20000 <mss 1000,sackOK,nop,nop>
   +0 > S. 0:0(0) ack 1 <...>
  +.1 < . 1:1(0) ack 1 win 20000
   +0 accept(3, ..., ...) = 4
   +0 < . 1:501(500) ack 1 win 20000
   +0 > . 1:1(0) ack 501
   +0 < {flags} 1:801(800) ack 1 win 20000
   +0~+.2 > . 1:1(0) ack {ack}{opts}
"""


def test_a_fin_drops_the_dsack_its_own_overlap_set() -> None:
    """tcp_data_queue sets a D-SACK for the resent head of a segment (1:501), but when the
    segment carries a FIN, tcp_fin's tcp_sack_reset clears it before the (delayed) ACK
    goes: no SACK option. Without the FIN the D-SACK is reported."""
    fin = run(parse(RESENT_WITH_FIN.format(flags="F.", ack=802, opts="")))
    assert fin.verdict.passed, [(r.line, r.reasons) for r in fin.lines if r.status != "match"]
    data = run(parse(RESENT_WITH_FIN.format(flags=".", ack=801, opts=" <nop,nop,sack 1:501>")))
    assert data.verdict.passed, [(r.line, r.reasons) for r in data.lines if r.status != "match"]
    no_fin_no_dsack = run(parse(RESENT_WITH_FIN.format(flags=".", ack=801, opts="")))
    assert not no_fin_no_dsack.verdict.passed


def test_a_cwnd_assertion_reads_the_models_cwnd_after_the_acks() -> None:
    """Slow start (tcp_cong_avoid): each ACK of new data adds the segments it acknowledges,
    so after the ACK of 1:1001 the 10-segment initial window is 11; the assertion is judged
    at its time, after the ACK was processed."""
    script = PSH_MARKS.format(first="P.", middle=".", last="P.").split("\n")
    at_ack = "\n".join([*script[:11], "   +0 %{{ assert tcpi_snd_cwnd == {n} }}%", ""])
    res = run(parse(at_ack.format(n=11)))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    res = run(parse(at_ack.format(n=9)))
    assert not res.verdict.passed and res.verdict.line == 12
    assert res.lines[-1].got == {"values": {"tcpi_snd_cwnd": 11}}


def test_a_block_of_assertions_reads_the_models_tcp_info_fields() -> None:
    """After the ACK of 1:1001 with nothing lost: ca_state Open (0), ssthresh still
    TCP_INFINITE_SSTHRESH, ten segments out (1001:11001; tcpi_unacked is packets_out), none SACKed, lost
    or resent, reordering 3 (net.ipv4.tcp_reordering). Every line must hold: one wrong value
    fails the line, naming that field."""
    script = PSH_MARKS.format(first="P.", middle=".", last="P.").split("\n")
    block = (
        "   +0 %{{\nassert tcpi_ca_state == TCP_CA_Open\nassert tcpi_unacked == {n}\n"
        "assert tcpi_sacked == 0\nassert tcpi_lost == 0, tcpi_lost\nassert tcpi_retrans == 0\n"
        "assert tcpi_reordering == 3\nassert tcpi_snd_ssthresh > 1000\n}}%"
    )
    at_ack = "\n".join([*script[:11], block, ""])
    res = run(parse(at_ack.format(n=10)))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    assert res.lines[-1].got["values"]["tcpi_unacked"] == 10
    res = run(parse(at_ack.format(n=9)))
    assert not res.verdict.passed and res.lines[-1].diffs == ["value"]
    assert "tcpi_unacked is 10" in str(res.lines[-1].reasons[0])


APP_LIMITED = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
  +.1 < S 0:0(0) win 20000 <mss 1000>
   +0 > S. 0:0(0) ack 1 <mss 1460>
  +.1 < . 1:1(0) ack 1 win 20000
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., {n}) = {n}
   +0 > P. 1:{end}({n}) ack 1
 +.05 < . 1:1(0) ack {end} win 20000
   +0 %{{ assert tcpi_snd_cwnd == {cwnd} }}%
"""


@pytest.mark.parametrize(("n", "cwnd"), [(3000, 10), (5000, 10), (6000, 16), (10000, 20)])
def test_cwnd_grows_only_while_it_limits_the_sender(n: int, cwnd: int) -> None:
    """tcp_cwnd_validate records the most packets out; tcp_is_cwnd_limited lets slow start
    grow cwnd only below twice that: 3 or 5 segments out of 10 leave it at 10, 6 let the
    ACK add 6, a full window adds 10."""
    script = APP_LIMITED.format(n=n, end=n + 1, cwnd=cwnd)
    res = run(parse(script))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]


HALF_CWND = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 65535 <mss 1000>
   +0 > S. 0:0(0) ack 1 <mss 1460>
   +0 < . 1:1(0) ack 1 win 65535
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 10000) = 10000
   +0 > {flags} 1:5001(5000) ack 1
   +0 > P. 5001:10001(5000) ack 1
"""


def test_a_burst_is_at_least_two_gso_packets() -> None:
    """With a near-zero RTT tcp_tso_autosize allows big TSO packets, but tcp_cwnd_test gives
    each at most half of cwnd: the 10-segment window leaves as two 5-segment packets, each
    with PSH (__tcp_transmit_skb)."""
    res = run(parse(HALF_CWND.format(flags="P.")))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    res = run(parse(HALF_CWND.format(flags=".")))
    assert not res.verdict.passed and res.verdict.line == 10


AFTER_IDLE = """\
`sysctl -q net.ipv4.tcp_slow_start_after_idle={on}`
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
  +.1 < S 0:0(0) win 20000 <mss 1000>
   +0 > S. 0:0(0) ack 1 <mss 1460>
  +.1 < . 1:1(0) ack 1 win 20000
   +0 accept(3, ..., ...) = 4
   +0 write(4, ..., 10000) = 10000
   +0 > P. 1:10001(10000) ack 1
  +.1 < . 1:1(0) ack 10001 win 20000
   +0 %{{ assert tcpi_snd_cwnd == 20 }}%
   +3 write(4, ..., 1000) = 1000
   +0 > P. 10001:11001(1000) ack 1
   +0 %{{ assert tcpi_snd_cwnd == {cwnd} }}%
"""


@pytest.mark.parametrize(("on", "cwnd"), [(1, 10), (0, 20)])
def test_slow_start_after_idle_restarts_cwnd(on: int, cwnd: int) -> None:
    """tcp_slow_start_after_idle_check (tcp_skb_entail): 3 s without sending, more than an
    RTO, halves cwnd once per RTO down to the initial window (tcp_cwnd_restart); with the
    sysctl off cwnd stays 20."""
    res = run(parse(AFTER_IDLE.format(on=on, cwnd=cwnd)))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]


NO_FLAGS = """\
    0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
   +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
   +0 bind(3, ..., ...) = 0
   +0 listen(3, 1) = 0
   +0 < S 0:0(0) win 20000 <mss 1000>
   +0 > S. 0:0(0) ack 1 <...>
 +.01 < . 1:1(0) ack 1 win 20000
   +0 accept(3, ..., ...) = 4
   +0 ioctl(3, SIOCINQ, [0]) = -1 EINVAL (Invalid argument)
 +.01 < - 1:501(500) win 20000
   +0 ioctl(4, SIOCINQ, [{first}]) = 0
 +.01 < P. 1:501(500) ack 1 win 20000
   +0 ioctl(4, FIONREAD, [500]) = 0
"""


def test_siocinq_counts_unread_bytes_and_a_segment_without_ack_is_dropped() -> None:
    """tcp_ioctl's SIOCINQ (tcp_inq): the bytes not read yet; EINVAL on a listener. A segment
    with no flag at all (`-`) is dropped by tcp_rcv_established (no ACK, RST or SYN), so it
    adds nothing; the same bytes with ACK do."""
    res = run(parse(NO_FLAGS.format(first=0)))
    assert res.verdict.passed, [(r.line, r.reasons) for r in res.lines if r.status != "match"]
    res = run(parse(NO_FLAGS.format(first=500)))
    assert not res.verdict.passed and res.verdict.line == 11
