"""The real-kernel runner's packets and its shared comparison, without root: packets the
script injects are valid IPv4/TCP (checksums, options, numbering), the kernel's packets read
back in the script's numbers, and a packet is judged by the same check_packet as the model's."""

from __future__ import annotations

import struct

import dpkt  # type: ignore[import-untyped]
import pytest

from app.sim.tcp.options import TcpOption
from app.sim.tcp.packetdrill import kernelwire as W
from app.sim.tcp.packetdrill.ast import Packet
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.realkernel import run_kernel, script_span_ms, sysctl_settings
from app.sim.tcp.packetdrill.runner import LineResult, RunLimitError, check_packet


def _pkt(line: str) -> Packet:
    ev = parse(line + "\n").events[0]
    assert isinstance(ev, Packet)
    return ev


def _checksums_ok(raw: bytes) -> bool:
    ip = dpkt.ip.IP(raw)
    want_ip, want_tcp = ip.sum, ip.data.sum
    ip.sum = 0
    ip.data.sum = 0
    again = dpkt.ip.IP(bytes(ip))
    return bool(again.sum == want_ip and again.data.sum == want_tcp)


def test_inbound_syn_is_valid_ipv4_tcp_with_its_options() -> None:
    p = _pkt("0 < S 0:0(0) win 32792 <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 7>")
    raw = W.build_inbound(p, sport=48080, dport=8080, local_isn=12345, ip_id=7)
    ip = dpkt.ip.IP(raw)
    assert ip.len == len(raw) and ip.ttl == 64 and ip.id == 7 and ip.df
    assert _checksums_ok(raw)
    tcp = ip.data
    assert (tcp.sport, tcp.dport, tcp.seq, tcp.ack, tcp.win) == (48080, 8080, 0, 0, 32792)
    assert tcp.flags == dpkt.tcp.TH_SYN
    w = W.parse_packet(raw)
    assert w is not None and w.src == W.REMOTE_IP and w.dst == W.LOCAL_IP
    assert [o.text() for o in w.options] == [
        "mss 1460",
        "sackOK",
        "TS val 100 ecr 0",
        "nop",
        "wscale 7",
    ]


def test_inbound_ack_sack_and_ts_echo_use_the_kernels_numbers() -> None:
    p = _pkt("0 < . 1:101(100) ack 1001 win 500 <nop,nop,TS val 7 ecr 9,nop,nop,sack 2001:3001>")
    isn = 2**32 - 500  # the kernel's ISN just before the wrap
    raw = W.build_inbound(p, sport=1, dport=2, local_isn=isn, ts_ecr=424242)
    assert _checksums_ok(raw)
    tcp = dpkt.ip.IP(raw).data
    assert tcp.ack == (1001 + isn) % 2**32 and tcp.flags == dpkt.tcp.TH_ACK
    assert len(tcp.data) == 100 and tcp.seq == 1
    w = W.parse_packet(raw)
    assert w is not None
    ts = next(o for o in w.options if o.kind == "TS")
    assert ts.values == (7, 424242)  # the script's ecr replaced by the kernel's latest TSval
    sack = next(o for o in w.options if o.kind == "sack")
    assert sack.values == ((2001 + isn) % 2**32, (3001 + isn) % 2**32)


def test_options_are_padded_and_read_back() -> None:
    opts = (TcpOption("mss", (1000,)), TcpOption("nop"), TcpOption("wscale", (3,)))
    raw = W.options_bytes(opts)
    assert len(raw) % 4 == 0 and raw[:4] == struct.pack("!BBH", 2, 4, 1000)
    assert W.parse_options(raw) == opts
    assert W.parse_options(b"\x01\x01\x08\x0a" + struct.pack("!II", 5, 6)) == (
        TcpOption("nop"),
        TcpOption("nop"),
        TcpOption("TS", (5, 6)),
    )


def test_non_tcp_and_ipv6_are_not_packets_of_the_script() -> None:
    assert W.parse_packet(b"") is None
    assert W.parse_packet(b"\x60" + bytes(39)) is None
    udp = dpkt.ip.IP(src=b"\1\2\3\4", dst=b"\5\6\7\10", p=17, data=dpkt.udp.UDP(data=b"x"))
    assert W.parse_packet(bytes(udp)) is None


def _kernel_packet(flags: int, seq: int, ack: int, n: int, opts: bytes = b"") -> W.Wire:
    tcp = dpkt.tcp.TCP(sport=8080, dport=48080, seq=seq, ack=ack, flags=flags, win=502)
    tcp.opts = opts
    tcp.off = (20 + len(opts)) // 4
    tcp.data = bytes(n)
    ip = dpkt.ip.IP(src=b"\xc0\xa8\x00\x01", dst=b"\xc0\x00\x02\x01", p=6, data=tcp)
    ip.len = 20 + len(bytes(tcp))
    w = W.parse_packet(bytes(ip))
    assert w is not None
    return w


def test_kernel_packets_in_the_scripts_numbers() -> None:
    isn = 2**32 - 10
    w = _kernel_packet(dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, (isn + 1) % 2**32, 301, 700)
    view = W.wire_view(w, 12.34567, isn)
    assert (view["flags"], view["seq"], view["end"], view["ack"], view["win"]) == (
        "P.",
        1,
        701,
        301,
        502,
    )
    assert view["t_ms"] == 12.346
    rst = W.wire_view(_kernel_packet(dpkt.tcp.TH_RST, 0, 0, 0), 0, isn)
    assert (rst["flags"], rst["seq"], rst["ack"]) == ("R", 0, None)


def _judge(line: str, w: W.Wire, sent_ms: float, t: float, isn: int = 0) -> LineResult:
    p = _pkt(line)
    res = LineResult(line=1, kind="packet")
    view = W.wire_view(w, sent_ms, isn)
    check_packet(p, view, w.options, res, sent_ms=sent_ms, t=t, end=t, tol=4.0, local_isn=isn)
    return res


def test_the_shared_comparison_judges_kernel_packets() -> None:
    ts = b"\x01\x01\x08\x0a" + struct.pack("!II", 99, 1)
    w = _kernel_packet(dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, 1001, 301, 700, ts)
    ok = _judge("0.1 > P. 1:701(700) ack 301 <nop,nop,TS val 5 ecr 6>", w, 101.0, 100.0, 1000)
    assert ok.status == "match" and ok.diffs == []
    late = _judge("0.1 > P. 1:701(700) ack 301 <...>", w, 104.5, 100.0, 1000)
    assert late.diffs == ["time"]
    bad = _judge("0.1 > . 1:1001(1000) ack 300", w, 100.0, 100.0, 1000)
    assert bad.diffs == ["flags", "len", "ack", "options"]
    assert "unexpected options" in bad.reasons[-1].render()


def test_span_and_sysctls_of_a_script() -> None:
    s = parse(
        "`sysctl -q net.ipv4.tcp_sack=0 net.ipv4.tcp_timestamps=0`\n"
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "+1 close(3) = 0\n"
        "+0.5...0.75 close(3) = -1 EBADF (Bad file descriptor)\n"
    )
    assert script_span_ms(s) == pytest.approx(1750.0)
    assert sysctl_settings(s) == {1: [("net.ipv4.tcp_sack", "0"), ("net.ipv4.tcp_timestamps", "0")]}


def test_a_script_longer_than_the_limit_is_refused_before_anything_is_created() -> None:
    s = parse("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+30 close(3) = 0\n")
    with pytest.raises(RunLimitError, match="may take 10"):
        run_kernel(s, time_limit_s=10.0)
