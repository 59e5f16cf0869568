"""Small captures the tests write themselves with dpkt (nothing copied from elsewhere)."""

from __future__ import annotations

import io
import socket
import struct
from collections.abc import Sequence

import dpkt

A = ("10.0.0.1", 40312)
B = ("10.0.0.2", 80)
S, F, R, P, K = dpkt.tcp.TH_SYN, dpkt.tcp.TH_FIN, dpkt.tcp.TH_RST, dpkt.tcp.TH_PUSH, dpkt.tcp.TH_ACK

Seg = tuple[float, tuple[str, int], tuple[str, int], int, int, int, int, bytes, bytes]


def segment(
    t: float,
    src: tuple[str, int],
    dst: tuple[str, int],
    flags: int,
    seq: int,
    ack: int = 0,
    win: int = 64240,
    data: bytes = b"",
    opts: bytes = b"",
) -> Seg:
    return (t, src, dst, flags, seq, ack, win, data, opts)


def frame(seg: Seg, link: str = "ether") -> bytes:
    _t, src, dst, flags, seq, ack, win, data, opts = seg
    tcp = dpkt.tcp.TCP(
        sport=src[1], dport=dst[1], flags=flags, seq=seq, ack=ack, win=win, opts=opts, data=data
    )
    tcp.off = (20 + len(opts)) // 4
    if ":" in src[0]:
        ip6 = dpkt.ip6.IP6(
            src=socket.inet_pton(socket.AF_INET6, src[0]),
            dst=socket.inet_pton(socket.AF_INET6, dst[0]),
            nxt=6,
            hlim=64,
            data=tcp,
        )
        ip6.plen = len(bytes(tcp))
        ip: dpkt.Packet = ip6
        etype = dpkt.ethernet.ETH_TYPE_IP6
    else:
        ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=6, data=tcp)
        ip.len = 20 + len(bytes(tcp))
        etype = dpkt.ethernet.ETH_TYPE_IP
    if link == "raw":
        return bytes(ip)
    if link == "sll":
        return bytes(dpkt.sll.SLL(ethtype=etype, data=ip))
    if link == "sll2":
        return bytes(dpkt.sll2.SLL2(ethtype=etype, data=ip))
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=etype, data=ip))


LINKS = {"ether": dpkt.pcap.DLT_EN10MB, "raw": 101, "sll": 113, "sll2": 276}


def pcap(segs: Sequence[Seg], link: str = "ether", ng: bool = False) -> bytes:
    out = io.BytesIO()
    if ng:
        w: dpkt.pcapng.Writer | dpkt.pcap.Writer = dpkt.pcapng.Writer(out, linktype=LINKS[link])
    else:
        w = dpkt.pcap.Writer(out, linktype=LINKS[link])
    for seg in segs:
        w.writepkt(frame(seg, link), ts=1_700_000_000 + seg[0])
    return out.getvalue()


MSS_WS = struct.pack("!BBH", 2, 4, 1460) + b"\x01" + struct.pack("!BBB", 3, 3, 7)


def handshake_data_close(a: tuple[str, int] = A, b: tuple[str, int] = B) -> list[Seg]:
    """Client a connects to b, sends 100 bytes, closes; b closes after (active close by a)."""
    return [
        segment(0.000, a, b, S, 1000, opts=MSS_WS),
        segment(0.010, b, a, S | K, 5000, 1001, opts=MSS_WS),
        segment(0.020, a, b, K, 1001, 5001, win=502),
        segment(0.021, a, b, P | K, 1001, 5001, win=502, data=b"x" * 100),
        segment(0.031, b, a, K, 5001, 1101, win=509),
        segment(0.040, a, b, F | K, 1101, 5001, win=502),
        segment(0.050, b, a, K, 5001, 1102, win=509),
        segment(0.060, b, a, F | K, 5001, 1102, win=509),
        segment(0.070, a, b, K, 1102, 5002, win=502),
    ]
