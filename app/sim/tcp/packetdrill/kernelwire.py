"""IPv4/TCP packets between a packetdrill script and the real kernel's TUN device (built and
read with dpkt), in packetdrill's numbering: the kernel's ISN is 0 in the script, the script's
peer numbers its own bytes as written. Pure functions: no socket, no root."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

import dpkt

from app.sim.tcp.options import TcpOption
from app.sim.tcp.packetdrill import model as M
from app.sim.tcp.packetdrill.ast import Packet

LOCAL_IP = "192.168.0.1"  # the kernel's side, as in packetdrill
REMOTE_IP = "192.0.2.1"  # the script's peer (TEST-NET-1)
LOCAL_PORT = 8080
REMOTE_PORT = 48080
VNET_HDR = bytes(10)  # struct virtio_net_hdr: no checksum offload, no GSO (inbound packets)
DEFAULT_WIN = 65535
_MOD = 1 << 32
_FLAG_BITS = {
    "FIN": dpkt.tcp.TH_FIN,
    "SYN": dpkt.tcp.TH_SYN,
    "RST": dpkt.tcp.TH_RST,
    "PSH": dpkt.tcp.TH_PUSH,
    "ACK": dpkt.tcp.TH_ACK,
}


@dataclass(frozen=True, slots=True)
class Wire:
    """One TCP segment as it was on the wire (absolute numbers)."""

    src: str
    dst: str
    sport: int
    dport: int
    flags: frozenset[str]
    seq: int
    ack: int
    win: int
    length: int
    options: tuple[TcpOption, ...]


def options_bytes(opts: tuple[TcpOption, ...]) -> bytes:
    """TCP options in wire format, padded with EOL to a multiple of 4 bytes."""
    out = bytearray()
    for o in opts:
        if o.kind == "nop":
            out.append(1)
        elif o.kind == "eol":
            out.append(0)
        elif o.kind == "mss":
            out += struct.pack("!BBH", 2, 4, o.values[0])
        elif o.kind == "wscale":
            out += struct.pack("!BBB", 3, 3, o.values[0])
        elif o.kind == "sackOK":
            out += b"\x04\x02"
        elif o.kind == "TS":
            out += struct.pack("!BBII", 8, 10, o.values[0] % _MOD, o.values[1] % _MOD)
        elif o.kind == "sack":
            out += struct.pack("!BB", 5, 2 + 4 * len(o.values))
            out += b"".join(struct.pack("!I", v % _MOD) for v in o.values)
    out += bytes(-len(out) % 4)
    return bytes(out)


def parse_options(buf: bytes) -> tuple[TcpOption, ...]:
    """Wire options as :class:`TcpOption` values (EOL padding dropped, unknown kinds too)."""
    opts: list[TcpOption] = []
    for kind, data in dpkt.tcp.parse_opts(buf):
        if kind == dpkt.tcp.TCP_OPT_EOL:
            break
        if kind == dpkt.tcp.TCP_OPT_NOP:
            opts.append(TcpOption("nop"))
        elif kind == dpkt.tcp.TCP_OPT_MSS and len(data) == 2:
            opts.append(TcpOption("mss", struct.unpack("!H", data)))
        elif kind == dpkt.tcp.TCP_OPT_WSCALE and len(data) == 1:
            opts.append(TcpOption("wscale", (data[0],)))
        elif kind == dpkt.tcp.TCP_OPT_SACKOK:
            opts.append(TcpOption("sackOK"))
        elif kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(data) == 8:
            opts.append(TcpOption("TS", struct.unpack("!II", data)))
        elif kind == dpkt.tcp.TCP_OPT_SACK and len(data) % 8 == 0:
            opts.append(TcpOption("sack", struct.unpack(f"!{len(data) // 4}I", data)))
    return tuple(opts)


def inbound_options(
    opts: tuple[TcpOption, ...], local_isn: int, ts_ecr: int
) -> tuple[TcpOption, ...]:
    """The script's options in the kernel's numbers: SACK blocks name the kernel's bytes
    (+ its ISN); a TS echo other than 0 echoes the kernel's latest TSval (``ts_ecr``), as
    packetdrill rewrites it — the script cannot know the kernel's clock."""
    out: list[TcpOption] = []
    for o in opts:
        if o.kind == "sack":
            out.append(TcpOption("sack", tuple((v + local_isn) % _MOD for v in o.values)))
        elif o.kind == "TS":
            out.append(TcpOption("TS", (o.values[0], ts_ecr if o.values[1] else 0)))
        else:
            out.append(o)
    return tuple(out)


def build_inbound(
    p: Packet, *, sport: int, dport: int, local_isn: int, ts_ecr: int = 0, ip_id: int = 0
) -> bytes:
    """The script's inbound packet ``p`` as an IPv4 packet from the peer to the kernel, with
    its checksums (zero-filled payload)."""
    names = M.flag_names(p.flags)
    flags = 0
    for name in names:
        flags |= _FLAG_BITS[name]
    opts = options_bytes(inbound_options(p.options or (), local_isn, ts_ecr))
    tcp = dpkt.tcp.TCP(
        sport=sport,
        dport=dport,
        seq=p.seq % _MOD,
        ack=((p.ack or 0) + local_isn) % _MOD if "ACK" in names else 0,
        flags=flags,
        win=p.win if p.win is not None else DEFAULT_WIN,
        opts=opts,
        data=bytes(p.length),
    )
    tcp.off = (20 + len(opts)) // 4
    ip = dpkt.ip.IP(
        src=socket.inet_aton(REMOTE_IP),
        dst=socket.inet_aton(LOCAL_IP),
        p=dpkt.ip.IP_PROTO_TCP,
        ttl=64,
        id=ip_id & 0xFFFF,
        df=1,
        data=tcp,
    )
    ip.len = 20 + len(bytes(tcp))
    return bytes(ip)


def parse_packet(buf: bytes) -> Wire | None:
    """An IPv4/TCP packet read from the TUN device (after its virtio header), or None for
    anything else (IPv6 router solicitations, ARP-less noise)."""
    if not buf or buf[0] >> 4 != 4:
        return None
    try:
        ip = dpkt.ip.IP(buf)
    except (dpkt.UnpackError, ValueError):
        return None
    tcp = ip.data
    if ip.p != dpkt.ip.IP_PROTO_TCP or not isinstance(tcp, dpkt.tcp.TCP):
        return None
    return Wire(
        src=socket.inet_ntoa(ip.src),
        dst=socket.inet_ntoa(ip.dst),
        sport=tcp.sport,
        dport=tcp.dport,
        flags=frozenset(n for n, bit in _FLAG_BITS.items() if tcp.flags & bit),
        seq=tcp.seq,
        ack=tcp.ack,
        win=tcp.win,
        length=len(tcp.data),
        options=parse_options(bytes(tcp.opts)),
    )


def wire_view(w: Wire, t_ms: float, local_isn: int) -> dict[str, Any]:
    """The kernel's packet in the script's terms, the shape of :func:`model.outbound_view`."""
    seq = w.seq if "RST" in w.flags and w.seq == 0 else (w.seq - local_isn) % _MOD
    return {
        "dir": ">",
        "flags": M.flag_letters(w.flags),
        "seq": seq,
        "end": seq + w.length,
        "len": w.length,
        "ack": w.ack if "ACK" in w.flags else None,
        "win": w.win,
        "options": [o.text() for o in w.options],
        "t_ms": round(t_ms, 3),
    }
