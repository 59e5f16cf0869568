"""The packetdrill parser: every construct the kernel's selftests use becomes a typed event with
its line and column; syntax errors name line and column; unsupported constructs are named."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sim.tcp.options import TcpOption
from app.sim.tcp.packetdrill.ast import (
    Comment,
    Elided,
    InfoAssert,
    InfoCheck,
    ListArg,
    Name,
    Option,
    Packet,
    Shell,
    StructArg,
    Syscall,
    Unsupported,
)
from app.sim.tcp.packetdrill.lexer import ScriptSyntaxError
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.settings import DEFAULTS_SH, knobs


def one(text: str) -> object:
    events = parse(text).events
    assert len(events) == 1
    return events[0]


def test_times_absolute_relative_ranges_and_any() -> None:
    """0.100 is absolute, +0.1 relative, a...b a range (µs), * any time."""
    s = parse(
        "0.100 close(3) = 0\n+.1 close(3) = 0\n+0...0.5 read(4, ..., 10) = 10\n* > . 1:1(0)\n"
    )
    times = [e.time for e in s.events if isinstance(e, Syscall | Packet)]
    assert (times[0].kind, times[0].us) == ("abs", 100_000)
    assert (times[1].kind, times[1].us) == ("rel", 100_000)
    assert (times[2].kind, times[2].us, times[2].end_us) == ("rel", 0, 500_000)
    assert times[3].kind == "any"


def test_syscalls_with_returns_and_errnos() -> None:
    """The expected return value, and -1 with an errno and its note in parentheses."""
    ev = one("+0 connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)")
    assert isinstance(ev, Syscall)
    assert (ev.name, ev.ret, ev.errno) == ("connect", -1, "EINPROGRESS")
    assert ev.args == (3, Elided(), Elided())
    assert (ev.line, ev.col) == (1, 1)


@pytest.mark.parametrize(
    "call",
    [
        "socket(..., SOCK_STREAM, IPPROTO_TCP) = 3",
        "bind(3, ..., ...) = 0",
        "listen(3, 1) = 0",
        "accept(3, ..., ...) = 4",
        "write(4, ..., 1000) = 1000",
        "send(4, ..., 10, 0) = 10",
        "sendto(4, ..., 10, 0, ..., ...) = 10",
        "read(4, ..., 10) = 10",
        "recv(4, ..., 10, 0) = 10",
        "close(4) = 0",
        "shutdown(4, SHUT_WR) = 0",
        "getsockopt(4, SOL_SOCKET, SO_ERROR, [0], [4]) = 0",
        "fcntl(3, F_GETFL) = 0x2 (flags O_RDWR)",
    ],
)
def test_every_supported_syscall_parses(call: str) -> None:
    ev = one("0 " + call)
    assert isinstance(ev, Syscall)
    assert ev.name == call.split("(")[0]


def test_structs_lists_and_or_flags() -> None:
    """SO_LINGER's [{onoff=1, linger=0}], poll's list of structs, O_RDWR|O_NONBLOCK."""
    ev = one("+0 setsockopt(3, SOL_SOCKET, SO_LINGER, [{onoff=1, linger=0}], 8) = 0")
    assert isinstance(ev, Syscall)
    assert ev.args[3] == ListArg((StructArg((("onoff", 1), ("linger", 0))),))
    ev = one("+0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0")
    assert isinstance(ev, Syscall) and ev.args[2] == Name(("O_RDWR", "O_NONBLOCK"))
    ev = one("+0 poll([{fd=4, events=POLLIN|POLLOUT, revents=POLLOUT}], 1, 0) = 1")
    assert isinstance(ev, Syscall) and isinstance(ev.args[0], ListArg)


def test_a_syscall_may_span_lines() -> None:
    ev = one("+0 setsockopt(3, SOL_SOCKET,\n   SO_REUSEADDR, [1], 4) = 0")
    assert isinstance(ev, Syscall) and ev.name == "setsockopt"


def test_packets_flags_seq_ack_win_and_options() -> None:
    """Inbound and outbound packets: flags, start:end(len), ack, win and every option."""
    ev = one("+0 < S. 0:0(0) ack 1 win 65535 <mss 1460,sackOK,TS val 7 ecr 3,nop,wscale 7>")
    assert isinstance(ev, Packet)
    assert (ev.direction, ev.flags, ev.seq, ev.end, ev.length) == ("<", "S.", 0, 0, 0)
    assert (ev.ack, ev.win) == (1, 65535)
    assert ev.options == (
        TcpOption("mss", (1460,)),
        TcpOption("sackOK"),
        TcpOption("TS", (7, 3)),
        TcpOption("nop"),
        TcpOption("wscale", (7,)),
    )
    ev = one("+0 > . 1:1(0) ack 1001 <nop,nop,sack 2001:3001 4001:5001>")
    assert isinstance(ev, Packet) and ev.options == (
        TcpOption("nop"),
        TcpOption("nop"),
        TcpOption("sack", (2001, 3001, 4001, 5001)),
    )
    for flags in ("F.", "P.", "R", "R.", "FP."):
        ev = one(f"+0 > {flags} 1:1(0)")
        assert isinstance(ev, Packet) and ev.flags == flags
    # packetdrill's grammar (parser.y, `flags`): `-` is a segment with no flag set
    ev = one("+0 < - 1:1001(1000) win 20000")
    assert isinstance(ev, Packet) and (ev.flags, ev.length) == ("", 1000)


def test_a_cwnd_assertion_is_an_event_other_python_is_not() -> None:
    """A timed ``%{ assert tcpi_snd_cwnd OP N[, message] }%`` is an InfoAssert; any other
    python (another field, an expression) stays unsupported."""
    ev = one("+0 %{ assert tcpi_snd_cwnd == 12, 'cwnd=%d' % tcpi_snd_cwnd }%")
    assert isinstance(ev, InfoAssert)
    assert ev.checks == (InfoCheck(field="tcpi_snd_cwnd", op="==", value=12),)
    for text in ("+0 %{ assert tcpi_rto == 1 }%", "+0 %{ assert 1 <= tcpi_snd_cwnd <= 3 }%"):
        assert isinstance(one(text), Unsupported)


def test_a_block_of_assertions_is_one_event_with_a_check_per_line() -> None:
    """Several ``assert`` lines in one block, with messages and ``#`` comments: one check
    each, TCP_CA_* names read as enum tcp_ca_state's values (Recovery is 3). Any other line
    in the block, or an unknown TCP_CA_ name, leaves the whole block unsupported."""
    block = (
        "+.02 %{\nassert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state\n"
        "assert tcpi_sacked >= 2,tcpi_sacked  # two SACKed\n"
        "assert tcpi_snd_ssthresh != 9\n}%"
    )
    ev = one(block)
    assert isinstance(ev, InfoAssert)
    assert [(c.field, c.op, c.value) for c in ev.checks] == [
        ("tcpi_ca_state", "==", 3),
        ("tcpi_sacked", ">=", 2),
        ("tcpi_snd_ssthresh", "!=", 9),
    ]
    assert ev.time.us == 20000
    for bad in ("x = 1", "assert tcpi_ca_state == TCP_CA_Nowhere", "assert tcpi_rtt > 0"):
        assert isinstance(one(block.replace("assert tcpi_snd_ssthresh != 9", bad)), Unsupported)


def test_any_options_and_no_options() -> None:
    """<...> is None (not checked); no <...> at all is () (none expected)."""
    ev = one("+0 > S 0:0(0) <...>")
    assert isinstance(ev, Packet) and ev.options is None
    ev = one("+0 > . 1:1(0) ack 1")
    assert isinstance(ev, Packet) and ev.options == ()


def test_comments_options_and_shell_lines() -> None:
    s = parse(
        "// one\n/* two\n three */\n--tolerance_usecs=10000\n"
        '`./defaults.sh\nsysctl -q net.ipv4.tcp_rmem="4096 540000 $((15*1024*1024))"`\n'
        "0 close(3) = 0 // trailing comments belong to their line\n"
    )
    kinds = [type(e) for e in s.events]
    assert kinds == [Comment, Comment, Option, Shell, Syscall]
    opt = s.events[2]
    assert isinstance(opt, Option) and (opt.name, opt.value) == ("tolerance_usecs", "10000")
    sh = s.events[3]
    assert isinstance(sh, Shell) and sh.defaults
    assert sh.sysctls == (("tcp_rmem", "4096 540000 15728640"),)
    assert s.events[4].line == 7


def test_set_sysctls_py_settings_are_sysctls_and_its_restore_line_is_read() -> None:
    """The selftests' set_sysctls.py writes /proc/sys/net/ipv4/X=V (lines may continue with
    a backslash); the restore script it leaves is read as having nothing to undo."""
    ev = one(
        "`../common/defaults.sh\n../common/set_sysctls.py /proc/sys/net/ipv4/tcp_min_tso_segs=10"
        " \\\n   /proc/sys/net/ipv4/tcp_slow_start_after_idle=0`"
    )
    assert isinstance(ev, Shell) and ev.defaults
    assert ev.sysctls == (("tcp_min_tso_segs", "10"), ("tcp_slow_start_after_idle", "0"))
    ev = one("`/tmp/sysctl_restore_${PPID}.sh`")
    assert isinstance(ev, Shell) and ev.sysctls == ()
    ev = one("`../common/set_sysctls.py /proc/sys/vm/x=1`")
    assert isinstance(ev, Unsupported)


def test_sysctls_map_to_the_model_knobs() -> None:
    """A sysctl that is a field of Sysctls is applied; others are listed as having no knob."""
    s = parse("`sysctl -q net.ipv4.tcp_syn_retries=3 net.ipv4.tcp_retries1=4`\n")
    k = knobs(s)
    assert k.sysctls.tcp_syn_retries == 3
    assert k.per_line[1]["no_model_knob"] == ["tcp_retries1=4"]
    k = knobs(parse("`sysctl -q net.ipv4.tcp_frto=0`\n"))  # F-RTO's knob (tcp_enter_loss)
    assert k.sysctls.tcp_frto == 0 and k.per_line[1]["no_model_knob"] == []
    k = knobs(parse("`./defaults.sh`\n"))
    assert k.sysctls.tcp_synack_retries == 5
    assert len(k.per_line[1]["applied"]) + len(k.per_line[1]["no_model_knob"]) == len(DEFAULTS_SH)


@pytest.mark.parametrize(
    ("text", "construct"),
    [
        ("%{\nprint(1)\n}%", "python"),
        ("+0 setsockopt(3, SOL_TCP, TCP_FASTOPEN, [1], 4) = 0", "TFO"),
        ("+0 < S 0:0(0) win 1 <mss 1460,FO 1234abcd>", "TFO"),
        ("+0 < [ect0] S 0:0(0) win 1", "ECN"),
        ("+0 > SEWA 0:0(0)", "AccECN"),
        ("+0 socket(..., SOCK_STREAM, IPPROTO_MPTCP) = 3", "MPTCP"),
        ("+0 recvmsg(4, {msg_name(...)=...}, MSG_ERRQUEUE) = 0", "cmsg"),
        ("+0 setsockopt(3, IPPROTO_TCP, TCP_MD5SIG, [1], 4) = 0", "MD5"),
        ("+0 bind(3, AF_INET6, ...) = 0", "IPv6"),
        ("+0 < udp (100)", "udp"),
        ("+0 ioctl(3, SIOCOUTQ, [0]) = 0", "ioctl"),
        ("+0 < U. 1:101(100) ack 1 win 257 urg 100", "urgent"),
        ("`tc qdisc add dev tun0 root fq`", "tc"),
        # a shell line at a time: the model applies settings from the start only
        ("+.07 `sysctl -q net.ipv4.tcp_timestamps=0`", "timed shell command sysctl"),
        ("+0 `tc qdisc delete dev tun0 root`", "timed shell command tc"),
    ],
)
def test_unsupported_constructs_are_named_not_crashes(text: str, construct: str) -> None:
    ev = one(text)
    assert isinstance(ev, Unsupported)
    assert construct in ev.construct
    assert ev.line == 1


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [
        ("0 close(3) = 0\n  +0 frobnicate", 2, 6),
        ("+0 > S 0:10(0)", 1, 4),
        ("+0 > S 0:0(0) ack", 1, 18),
        ("+x close(3) = 0", 1, 2),
        ("0 close(3) = 0\n/* never closed", 2, 1),
        ("0 close(3 = 0", 1, 11),
        ("+0 > S 0:0(0) <mss>", 1, 19),
        ("+0 > Q 0:0(0)", 1, 6),
    ],
)
def test_syntax_errors_name_line_and_column(text: str, line: int, col: int) -> None:
    with pytest.raises(ScriptSyntaxError) as exc:
        parse(text)
    assert (exc.value.line, exc.value.col) == (line, col)
    assert f"line {line}, column {col}" in str(exc.value)


_RANGE_CASES = [
    # (a packet line, the column of its bad number, the field, the largest value that fits)
    ("+0 < P. 1:{n}({m}) ack 1", 11, "end", ("4294967297", "4294967296"), ("65536", "65535")),
    ("+0 < P. 1:{n}({m}) ack 1", 17, "length", ("70001", "70000"), ("65536", "65535")),
    ("+0 < . 1:1(0) ack {n}", 19, "ack", ("4294967296",), ("4294967295",)),
    ("+0 < . 1:1(0) ack 1 win {n}", 25, "win", ("65536",), ("65535",)),
    ("+0 < S 0:0(0) win 10 <mss {n}>", 27, "mss", ("65536",), ("65535",)),
    ("+0 < S 0:0(0) win 10 <wscale {n}>", 30, "wscale", ("256",), ("255",)),
    ("+0 < S 0:0(0) win 10 <TS val {n} ecr 0>", 30, "TS val", ("4294967296",), ("4294967295",)),
    ("+0 < . 1:1(0) ack 1 <sack 1:{n}>", 29, "sack", ("4294967296",), ("4294967295",)),
]


@pytest.mark.parametrize(("pattern", "col", "field", "bad", "fits"), _RANGE_CASES)
def test_a_packets_numbers_out_of_range_name_line_and_column(
    pattern: str, col: int, field: str, bad: tuple[str, ...], fits: tuple[str, ...]
) -> None:
    """As packetdrill's parser.y checks them (is_valid_u32: sequence, ack, SACK and TS
    numbers; is_valid_u16: payload length, window, mss; is_valid_u8: wscale); the largest
    value that fits parses."""
    with pytest.raises(ScriptSyntaxError) as exc:
        parse(pattern.format(n=bad[0], m=bad[-1]))
    assert (exc.value.line, exc.value.col) == (1, col)
    assert f"{field} {bad[-1] if field == 'length' else bad[0]} out of range" in str(exc.value)
    parse(pattern.format(n=fits[0], m=fits[-1]))


_PIECES = [
    "0 ",
    "+0 ",
    "+.1 ",
    "*",
    "...",
    "0.5 ",
    "< ",
    "> ",
    "S",
    "S.",
    ".",
    "P.",
    "F.",
    "R",
    " 0:0(0)",
    " 1:1001(1000)",
    " ack 1",
    " win 257",
    " <mss 1000,nop,wscale 7>",
    " <...>",
    "<sack 1:2>",
    "socket(..., SOCK_STREAM, IPPROTO_TCP) = 3",
    "listen(3, 1) = 0",
    "accept(3, ..., ...) = 4",
    "connect(3, ..., ...) = 0",
    "write(4, ..., 100) = 100",
    "read(4, ..., 100) = 100",
    "close(4) = 0",
    "poll([{fd=4, events=POLLIN, revents=0}], 1, 10) = 0",
    "\n",
    "//c\n",
    "/*",
    "*/",
    "`sysctl -q net.ipv4.tcp_sack=0`",
    "%{",
    "}%",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "=",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_any_text_is_a_script_or_a_syntax_error_never_a_crash(pieces: list[str]) -> None:
    """Whatever the text, parse gives a Script or a ScriptSyntaxError, and the run a Result or
    a RunLimitError."""
    from app.sim.tcp.packetdrill.runner import RunLimitError, run

    try:
        script = parse("".join(pieces))
    except ScriptSyntaxError as exc:
        assert exc.line >= 1 and exc.col >= 1
        return
    try:
        res = run(script)
    except RunLimitError:
        return
    assert len(res.lines) == len(script.events)


def test_tilde_ranges_for_packets() -> None:
    """``+0~+.04 > …``: a packet expected anywhere in a time range."""
    ev = one("+0~+.04 > . 1:1(0) ack 1002")
    assert isinstance(ev, Packet)
    assert (ev.time.kind, ev.time.us, ev.time.end_us) == ("rel", 0, 40_000)
