"""Which bytes of a head buffer are protocol headers, and what they are called.

The simulation labels bytes it writes (``skb_put``/``skb_push`` with a label such as "TCP"), but
on receive a frame arrives as one region and its headers only show up as pulls
(``skb_pull(14)`` by ``eth_type_trans``) and header offsets (``mac_header``, ...). This module
reads the whole trace once and finds those header spans per buffer, named after the layer:
the calling function (``via``) when the scenario names one, else the header offset the pull
started at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.sim.core import Frame, Message, msg
from app.sim.skbuff.ops import Op
from app.sim.skbuff.state import RegionView, SkbSnapshot, SkbState
from app.web.svgtext import in_words

PRETTY = {
    "eth": "Ethernet",
    "ethernet": "Ethernet",
    "mac": "Ethernet",
    "vlan": "VLAN",
    "ip": "IP",
    "ipv4": "IPv4",
    "ipv6": "IPv6",
    "ip6": "IPv6",
    "tcp": "TCP",
    "udp": "UDP",
    "icmp": "ICMP",
    "icmpv6": "ICMPv6",
    "arp": "ARP",
    "gre": "GRE",
    "vxlan": "VXLAN",
    "geneve": "Geneve",
    "mpls": "MPLS",
}

# Prefixes of calling functions and the header they strip or write.
VIA_LAYER = (
    ("eth", "Ethernet"),
    ("neigh_", "Ethernet"),
    ("ip6", "IPv6"),
    ("ipv6", "IPv6"),
    ("ip_", "IP"),
    ("__ip_", "IP"),
    ("tcp", "TCP"),
    ("udp", "UDP"),
    ("icmp", "ICMP"),
)


# Region names that are words, not protocol names: shown in the reader's language when drawn
# (pieces keep the simulation's label, which the per-trace layout cache shares across readers).
WORDS: dict[str, Message] = {
    "payload": msg("payload"),
    "pulled header": msg("pulled header"),
    "headers": msg("headers"),
    "frame": msg("frame"),
    "trailer": msg("trailer"),
    "paged data": msg("paged data"),
    "from frags": msg("from frags"),
    "pulled": msg("pulled"),
}


def shown(label: str) -> str:
    """A piece's label as the reader reads it ("payload" → "负载" on a Chinese page)."""
    return in_words(WORDS, label)


def pretty(label: str) -> str:
    """A region label as the picture shows it ("eth" → "Ethernet")."""
    return PRETTY.get(label.strip().lower(), label)


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    label: str


def _via_layer(via: str | None) -> str | None:
    if not via:
        return None
    for prefix, layer in VIA_LAYER:
        if via.startswith(prefix):
            return layer
    return None


def _offset_layer(skb: SkbSnapshot, offset: int) -> str | None:
    if skb.get("mac_header") == offset:
        return "Ethernet"
    if skb.get("transport_header") == offset:
        return "L4"
    if offset and skb.get("network_header") == offset:
        return "IP"
    return None


def header_spans(frames: Sequence[Frame[SkbState]], ops: Sequence[Op]) -> dict[str, list[Span]]:
    """Header spans per buffer name, from pulls (data moved forward over bytes, tail kept) and
    from header offsets (mac..network is the link header, network..transport the IP header)."""
    found: dict[str, list[Span]] = {}

    def add(buf: str, span: Span) -> None:
        spans = found.setdefault(buf, [])
        if span.end > span.start and all(span.end <= s.start or span.start >= s.end for s in spans):
            spans.append(span)

    prev: dict[str, SkbSnapshot] = {}
    for i, frame in enumerate(frames):
        op = ops[i] if i < len(ops) else None
        for skb in frame.state.get("skbs", ()):
            name = str(skb.get("name"))
            old = prev.get(name)
            if (
                old is not None
                and old.get("buffer") == skb.get("buffer")
                and int(skb["data"]) > int(old["data"])
                and skb.get("tail") == old.get("tail")
                and int(old["len"]) - int(skb["len"]) == int(skb["data"]) - int(old["data"])
            ):
                start, end = int(old["data"]), int(skb["data"])
                own = op is not None and op.skb == name
                layer = (_via_layer(op.via) if op is not None and own else None) or _offset_layer(
                    skb, start
                )
                add(str(skb["buffer"]), Span(start, end, layer or "pulled header"))
        prev = {str(s.get("name")): s for s in frame.state.get("skbs", ())}
    for frame in frames:
        for skb in frame.state.get("skbs", ()):
            buf = str(skb.get("buffer"))
            mac, net, th = (
                skb.get("mac_header"),
                skb.get("network_header"),
                skb.get("transport_header"),
            )
            if mac is not None and net and int(net) > int(mac):
                add(buf, Span(int(mac), int(net), "Ethernet"))
            if net and th is not None and int(th) > int(net):
                add(buf, Span(int(net), int(th), "IP"))
    for spans in found.values():
        spans.sort(key=lambda s: s.start)
    return found


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of written bytes in a head buffer as drawn: a header or payload, named."""

    start: int
    end: int
    label: str
    kind: str  # "header" | "payload"


def pieces(regions: Sequence[RegionView], spans: Sequence[Span]) -> list[Piece]:
    """The buffer's written regions, with known header spans carved out of them."""
    out: list[Piece] = []
    seen: set[tuple[int, int, str]] = set()
    for reg in regions:
        start, end, label = int(reg["start"]), int(reg["end"]), str(reg.get("label", ""))
        if (start, end, label) in seen or end <= start:
            continue
        seen.add((start, end, label))
        kind = "header" if reg.get("kind") == "header" else "payload"
        inner = [
            s
            for s in spans
            if start <= s.start and s.end <= end and (s.start, s.end) != (start, end)
        ]
        if not inner:
            out.append(Piece(start, end, pretty(label), kind))
            continue
        at = start
        rest = "payload" if kind == "payload" else pretty(label)
        for s in inner:
            if s.start > at:
                out.append(Piece(at, s.start, rest, kind))
            out.append(Piece(s.start, s.end, s.label, "header"))
            at = s.end
        if at < end:
            out.append(Piece(at, end, rest, kind))
    out.sort(key=lambda p: p.start)
    return out
