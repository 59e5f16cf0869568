"""Packet captures (``tcpdump -w``, pcap or pcapng) read with dpkt: the frames of the file, each
checked against the bytes that are really there before dpkt decodes it, then the segments of
the first TCP connection in it.

Nothing is trusted: a header cut short, a record or block claiming more bytes than the file
has left (a "4 GB packet") or than the snaplen allows, an unknown link type, or a capture
without one TCP segment is refused with :class:`~app.sim.core.ParamError` naming the byte
offset. Memory is bounded by the body (at most 5 MB: no record is read past its end) and
time by the number of frames (:data:`MAX_FRAMES`).
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import dpkt
from dpkt import pcap as dpcap
from dpkt import pcapng

from app.sim.core import Message, ParamError, msg

MAX_FRAMES = 200_000
MAX_SNAPLEN = 262_144  # tcpdump's own maximum

# Link types (https://www.tcpdump.org/linktypes.html) and how a frame's IP packet is found.
LINK_ETHERNET = 1
LINK_RAW = (101, 12, 14)  # LINKTYPE_RAW (and the DLT_RAW numbers some systems write)
LINK_IPV4 = 228
LINK_IPV6 = 229
LINK_SLL = 113
LINK_SLL2 = 276
LINK_TYPES = (LINK_ETHERNET, *LINK_RAW, LINK_IPV4, LINK_IPV6, LINK_SLL, LINK_SLL2)

PCAP_MAGICS = {
    dpcap.TCPDUMP_MAGIC: (">", 1e6),
    dpcap.TCPDUMP_MAGIC_NANO: (">", 1e9),
    dpcap.PMUDPCT_MAGIC: ("<", 1e6),
    dpcap.PMUDPCT_MAGIC_NANO: ("<", 1e9),
}
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"


@dataclass(frozen=True, slots=True)
class RawFrame:
    offset: int  # where its record or block starts in the file
    time_s: float
    link: int
    data: bytes


def _at(offset: int, why: Message) -> ParamError:
    """An error at a byte offset of the capture (the loc names the offset too)."""
    return ParamError.single(
        (f"byte {offset}",), msg("byte {offset}: {why}", offset=offset, why=why)
    )


def is_capture(body: bytes) -> bool:
    """Whether ``body`` starts like a pcap or pcapng file."""
    if body[:4] == PCAPNG_MAGIC:
        return True
    return len(body) >= 4 and struct.unpack(">I", body[:4])[0] in PCAP_MAGICS


def frames(body: bytes) -> Iterator[RawFrame]:
    """Every captured frame of a pcap or pcapng file, in file order."""
    if body[:4] == PCAPNG_MAGIC:
        yield from _pcapng_frames(body)
    else:
        yield from _pcap_frames(body)


def _pcap_frames(body: bytes) -> Iterator[RawFrame]:
    head_len = dpcap.FileHdr.__hdr_len__
    if len(body) < head_len:
        raise _at(
            len(body), msg("the pcap file header is cut short ({need} bytes needed)", need=24)
        )
    magic = struct.unpack(">I", body[:4])[0]
    if magic not in PCAP_MAGICS:
        raise _at(0, msg("not a pcap or pcapng file (unknown magic number)"))
    order, divisor = PCAP_MAGICS[magic]
    head = (dpcap.LEFileHdr if order == "<" else dpcap.FileHdr)(body[:head_len])
    if head.linktype not in LINK_TYPES:
        raise _at(20, msg("unknown link type {link}", link=head.linktype))
    snaplen = min(head.snaplen or MAX_SNAPLEN, MAX_SNAPLEN)
    record = dpcap.LEPktHdr if order == "<" else dpcap.PktHdr
    rec_len = record.__hdr_len__
    offset = head_len
    count = 0
    while offset < len(body):
        if len(body) - offset < rec_len:
            raise _at(offset, msg("a packet record header is cut short"))
        hdr = record(body[offset : offset + rec_len])
        start = offset + rec_len
        if hdr.caplen > snaplen:
            raise _at(
                offset,
                msg(
                    "a record claims {caplen} bytes, more than the snaplen ({snaplen})",
                    caplen=hdr.caplen,
                    snaplen=snaplen,
                ),
            )
        if hdr.caplen > len(body) - start:
            raise _at(
                offset,
                msg(
                    "a record claims {caplen} bytes but only {left} are left",
                    caplen=hdr.caplen,
                    left=len(body) - start,
                ),
            )
        count += 1
        if count > MAX_FRAMES:
            raise _at(offset, msg("more than {limit} packets", limit=MAX_FRAMES))
        yield RawFrame(
            offset,
            hdr.tv_sec + hdr.tv_usec / divisor,
            head.linktype,
            body[start : start + hdr.caplen],
        )
        offset = start + hdr.caplen


def _tsresol(idb: Any) -> float:
    """Ticks per second of an interface (its ``if_tsresol`` option; microseconds if none)."""
    for opt in getattr(idb, "opts", []):
        if opt.code == 9 and len(opt.data) >= 1:
            value = opt.data[0]
            exp = value & 0x7F
            if exp > 60:
                return 1e6
            return float(2**exp) if value & 0x80 else float(10**exp)
    return 1e6


def _pcapng_frames(body: bytes) -> Iterator[RawFrame]:  # noqa: C901 (one loop over block kinds)
    offset = 0
    order = "<"
    interfaces: list[tuple[int, int, float]] = []  # (link type, snaplen, ticks per second)
    count = 0
    while offset < len(body):
        if len(body) - offset < 12:
            raise _at(offset, msg("a pcapng block header is cut short"))
        if body[offset : offset + 4] == PCAPNG_MAGIC:
            if len(body) - offset < 12:
                raise _at(offset, msg("a pcapng block header is cut short"))
            bom = body[offset + 8 : offset + 12]
            if bom == b"\x4d\x3c\x2b\x1a":
                order = "<"
            elif bom == b"\x1a\x2b\x3c\x4d":
                order = ">"
            else:
                raise _at(offset + 8, msg("unknown pcapng byte-order magic"))
            interfaces = []
        kind, length = struct.unpack(order + "II", body[offset : offset + 8])
        if length < 12 or length % 4:
            raise _at(offset, msg("a pcapng block claims a length of {length}", length=length))
        if length > len(body) - offset:
            raise _at(
                offset,
                msg(
                    "a pcapng block claims {length} bytes but only {left} are left",
                    length=length,
                    left=len(body) - offset,
                ),
            )
        block = body[offset : offset + length]
        le = order == "<"
        try:
            if kind == pcapng.PCAPNG_BT_IDB:
                idb = (
                    pcapng.InterfaceDescriptionBlockLE if le else pcapng.InterfaceDescriptionBlock
                )(block)
                if idb.linktype not in LINK_TYPES:
                    raise _at(offset + 8, msg("unknown link type {link}", link=idb.linktype))
                snap = min(idb.snaplen or MAX_SNAPLEN, MAX_SNAPLEN)
                interfaces.append((idb.linktype, snap, _tsresol(idb)))
            elif kind == pcapng.PCAPNG_BT_EPB:
                if length < 32:
                    raise _at(offset, msg("a pcapng block header is cut short"))
                iface, _hi, _lo, caplen = struct.unpack(order + "IIII", block[8:24])
                if iface >= len(interfaces):
                    raise _at(
                        offset + 8,
                        msg("a packet names interface {n}, which is not described", n=iface),
                    )
                link, snap, ticks = interfaces[iface]
                if caplen > snap:
                    raise _at(
                        offset,
                        msg(
                            "a record claims {caplen} bytes, more than the snaplen ({snaplen})",
                            caplen=caplen,
                            snaplen=snap,
                        ),
                    )
                if caplen > length - 32:
                    raise _at(
                        offset,
                        msg(
                            "a record claims {caplen} bytes but only {left} are left",
                            caplen=caplen,
                            left=length - 32,
                        ),
                    )
                epb = (pcapng.EnhancedPacketBlockLE if le else pcapng.EnhancedPacketBlock)(block)
                count += 1
                if count > MAX_FRAMES:
                    raise _at(offset, msg("more than {limit} packets", limit=MAX_FRAMES))
                ts = ((epb.ts_high << 32) | epb.ts_low) / ticks
                yield RawFrame(offset, ts, link, bytes(epb.pkt_data[:caplen]))
            elif kind == pcapng.PCAPNG_BT_SHB:
                (pcapng.SectionHeaderBlockLE if le else pcapng.SectionHeaderBlock)(block)
        except (dpkt.UnpackError, struct.error, IndexError) as exc:
            raise _at(
                offset, msg("a pcapng block does not decode ({why})", why=type(exc).__name__)
            ) from None
        offset += length


@dataclass(frozen=True, slots=True)
class Packet:
    """One TCP segment as captured: addresses, ports and the decoded dpkt TCP header."""

    offset: int
    time_s: float
    src: str  # "ip:port" ("[v6]:port" for IPv6)
    dst: str
    tcp: dpkt.tcp.TCP


def _ip_of(frame: RawFrame) -> Any:
    """The frame's IPv4 or IPv6 packet (dpkt), or None (ARP, a frame cut by the snaplen…)."""
    link = frame.link
    data = frame.data
    if link == LINK_ETHERNET:
        return dpkt.ethernet.Ethernet(data).data
    if link == LINK_SLL:
        return dpkt.sll.SLL(data).data
    if link == LINK_SLL2:
        return dpkt.sll2.SLL2(data).data
    version = data[0] >> 4 if data else 0
    if (link in LINK_RAW and version == 4) or link == LINK_IPV4:
        return dpkt.ip.IP(data)
    if (link in LINK_RAW and version == 6) or link == LINK_IPV6:
        return dpkt.ip6.IP6(data)
    return None


def _endpoint(ip: Any, addr: bytes, port: int) -> str:
    if isinstance(ip, dpkt.ip6.IP6):
        return f"[{ipaddress.IPv6Address(addr)}]:{port}"
    return f"{ipaddress.IPv4Address(addr)}:{port}"


def tcp_packets(body: bytes) -> Iterator[Packet]:
    """The TCP segments of a capture (any connection), in file order."""
    for frame in frames(body):
        try:
            ip = _ip_of(frame)
        except (dpkt.UnpackError, struct.error, IndexError):
            continue  # not a packet this app reads (or cut short by the snaplen)
        if not isinstance(ip, dpkt.ip.IP | dpkt.ip6.IP6):
            continue
        seg = ip.data
        if not isinstance(seg, dpkt.tcp.TCP):
            continue
        yield Packet(
            frame.offset,
            frame.time_s,
            _endpoint(ip, ip.src, seg.sport),
            _endpoint(ip, ip.dst, seg.dport),
            seg,
        )
