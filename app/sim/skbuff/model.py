"""sk_buff geometry and buffer operations, as Linux 6.4 does them on x86-64.

Models ``struct sk_buff`` (include/linux/skbuff.h:844) and its head buffer: the
``head``/``data``/``tail``/``end`` offsets, ``len``/``data_len``, ``truesize``, ``users``, the
shared ``skb_shared_info`` (``dataref``, ``frags[]``, ``frag_list``), fclone pairing and the
allocation rounding of ``kmalloc_reserve`` (net/core/skbuff.c:557). Numbers follow the
Stepscope kernel facts sheet §1 (x86-64: sizeof sk_buff rounds to 256, skb_shared_info is 320,
NET_SKB_PAD 64, NET_IP_ALIGN 0, MAX_TCP_HEADER 320, MAX_SKB_FRAGS 17).

The machine is mutable only inside one run; every frame gets a plain-value snapshot.
Fatal kernel outcomes (BUG(), use-after-free) are returned as step results, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from app.sim.core import Message, SourceRef, msg
from app.sim.core.i18n import join
from app.sim.skbuff.ops import DROP_REASONS, Op

# Words of a step: a message (translated by the web layer) or, for a bare identifier, a str.
Text = Message | str

# ---- constants (x86-64, Linux 6.4) -----------------------------------------------------------
SMP_CACHE_BYTES = 64
PAGE_SIZE = 4096
SHINFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
SKB_STRUCT = 256  # SKB_DATA_ALIGN(sizeof(struct sk_buff)), 224 or 232 rounded
TRUESIZE_OVERHEAD = SKB_STRUCT + SHINFO  # SKB_TRUESIZE(0) = 576
SMALL_HEAD_CACHE_SIZE = 640  # SKB_SMALL_HEAD_CACHE_SIZE = SKB_HEAD_ALIGN(MAX_TCP_HEADER)
NET_SKB_PAD = 64
NET_IP_ALIGN = 0
MAX_TCP_HEADER = 320
MAX_SKB_FRAGS = 17
KMALLOC_BUCKETS = (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)
KMALLOC_MAX_CACHE_SIZE = 8192
KMALLOC_MAX_SIZE = PAGE_SIZE << 10  # 4 MiB
NAPI_SMALL_FRAG = 1024
SMALL_FRAG_END = NAPI_SMALL_FRAG - SHINFO  # SKB_WITH_OVERHEAD(1024) = 704
PAGE_HEAD_MAX = PAGE_SIZE - SHINFO  # SKB_WITH_OVERHEAD(PAGE_SIZE) = 3776
MAX_SKBS_SIM = 16  # skbs one scenario may show (ops.MAX_SKBS)
DATAREF_SHIFT = 16
DATAREF_MASK = (1 << DATAREF_SHIFT) - 1
# 6.4's skb_gro_receive_list refuses p->len + skb->len >= 65536; skb_gro_receive compares
# p->len + skb_gro_len(skb) with dev->gro_ipv4_max_size, GRO_LEGACY_MAX_SIZE (65536) by default.
GRO_MAX_SIZE = 65536
HALF_PAGE_TRUESIZE = PAGE_SIZE // 2
# Kernels newer than 6.4: the 6.12 small-head cache holds 704 bytes, so data areas up to 384 fit.
SMALL_HEAD_6_12_DATA = 384

BUG_RESULTS = (
    "skb_over_panic",
    "skb_under_panic",
    "skb_put_nonlinear",
    "__skb_pull",
    "pskb_expand_head_shared",
    "skb_frag_overflow",
    "use_after_free",
)

HEADER_LABELS = frozenset(
    "eth ethernet mac vlan ip ipv4 ipv6 ip6 tcp udp icmp icmpv6 arp gre vxlan geneve "
    "hdr hdrs header headers mpls".split()
)


def _src(function: str, path: str, line: int) -> SourceRef:
    return SourceRef(function=function, path=path, line=line)


SKBUFF_H = "include/linux/skbuff.h"
SKBUFF_C = "net/core/skbuff.c"
# Every line below is the definition line of the function in Linux 6.4 (checked against the
# 6.4.6 tree by tests/sim/skbuff/test_skb_sources.py when the tree is present).
SOURCES: dict[str, SourceRef] = {
    "alloc_skb": _src("alloc_skb", SKBUFF_H, 1285),
    "alloc_skb_fclone": _src("alloc_skb_fclone", SKBUFF_H, 1335),
    "netdev_alloc_skb": _src("__netdev_alloc_skb", SKBUFF_C, 702),
    "napi_alloc_skb": _src("__napi_alloc_skb", SKBUFF_C, 776),
    "build_skb": _src("build_skb", SKBUFF_C, 469),
    "napi_build_skb": _src("napi_build_skb", SKBUFF_C, 537),
    "tcp_stream_alloc_skb": _src("tcp_stream_alloc_skb", "net/ipv4/tcp.c", 861),
    "skb_reserve": _src("skb_reserve", SKBUFF_H, 2735),
    "skb_put": _src("skb_put", SKBUFF_C, 2383),
    "skb_push": _src("skb_push", SKBUFF_C, 2404),
    "skb_pull": _src("skb_pull", SKBUFF_C, 2424),
    "skb_trim": _src("skb_trim", SKBUFF_C, 2463),
    "pskb_trim": _src("pskb_trim", SKBUFF_H, 3067),
    "skb_headroom": _src("skb_headroom", SKBUFF_H, 2696),
    "skb_tailroom": _src("skb_tailroom", SKBUFF_H, 2707),
    "skb_headlen": _src("skb_headlen", SKBUFF_H, 2405),
    "skb_add_rx_frag": _src("skb_add_rx_frag", SKBUFF_C, 851),
    "skb_fill_page_desc": _src("skb_fill_page_desc", SKBUFF_H, 2488),
    "skb_gro_receive": _src("skb_gro_receive", "net/core/gro.c", 153),
    "skb_gro_receive_list": _src("skb_gro_receive_list", "net/ipv4/udp_offload.c", 429),
    "skb_get": _src("skb_get", SKBUFF_H, 1885),
    "skb_set_owner_w": _src("skb_set_owner_w", "net/core/sock.c", 2454),
    "skb_clone": _src("skb_clone", SKBUFF_C, 1853),
    "skb_copy": _src("skb_copy", SKBUFF_C, 1933),
    "pskb_copy": _src("__pskb_copy_fclone", SKBUFF_C, 1972),
    "pskb_expand_head": _src("pskb_expand_head", SKBUFF_C, 2036),
    "skb_linearize": _src("skb_linearize", SKBUFF_H, 3730),
    "kfree_skb": _src("kfree_skb_reason", SKBUFF_C, 1061),
    "consume_skb": _src("consume_skb", SKBUFF_C, 1238),
    "__skb_header_release": _src("__skb_header_release", SKBUFF_H, 1970),
    "skb_reset_mac_header": _src("skb_reset_mac_header", SKBUFF_H, 2916),
    "skb_set_mac_header": _src("skb_set_mac_header", SKBUFF_H, 2921),
    "skb_reset_network_header": _src("skb_reset_network_header", SKBUFF_H, 2878),
    "skb_set_network_header": _src("skb_set_network_header", SKBUFF_H, 2883),
    "skb_reset_transport_header": _src("skb_reset_transport_header", SKBUFF_H, 2861),
    "skb_set_transport_header": _src("skb_set_transport_header", SKBUFF_H, 2866),
    "pskb_may_pull": _src("pskb_may_pull", SKBUFF_H, 2674),
    "ip_rcv_core": _src("ip_rcv_core", "net/ipv4/ip_input.c", 456),
    "tcp_v4_fill_cb": _src("tcp_v4_fill_cb", "net/ipv4/tcp_ipv4.c", 1950),
    "tcp_skb_entail": _src("tcp_skb_entail", "net/ipv4/tcp.c", 659),
    "tcp_set_skb_tso_segs": _src("tcp_set_skb_tso_segs", "net/ipv4/tcp_output.c", 1439),
    "tcp4_gro_complete": _src("tcp4_gro_complete", "net/ipv4/tcp_offload.c", 332),
    "skb_segment": _src("skb_segment", SKBUFF_C, 4355),
    "skb_partial_csum_set": _src("skb_partial_csum_set", SKBUFF_C, 5298),
    "tcp_v4_send_check": _src("tcp_v4_send_check", "net/ipv4/tcp_ipv4.c", 650),
    "igb_rx_checksum": _src("igb_rx_checksum", "drivers/net/ethernet/intel/igb/igb_main.c", 8674),
}

# Callers a scenario may name with "via", shown in the narration with the file and line where
# the caller is defined (Linux 6.4).
CALLERS: dict[str, tuple[str, int]] = {
    "eth_type_trans": ("net/ethernet/eth.c", 155),
    "ip_rcv_core": ("net/ipv4/ip_input.c", 456),
    "ip_local_deliver_finish": ("net/ipv4/ip_input.c", 227),
    "tcp_v4_rcv": ("net/ipv4/tcp_ipv4.c", 1976),
    "tcp_rcv_established": ("net/ipv4/tcp_input.c", 5853),
    "tcp_data_queue": ("net/ipv4/tcp_input.c", 5015),
    "tcp_sendmsg_locked": ("net/ipv4/tcp.c", 1217),
    "tcp_skb_entail": ("net/ipv4/tcp.c", 659),
    "tcp_recvmsg_locked": ("net/ipv4/tcp.c", 2419),
    "tcp_eat_recv_skb": ("net/ipv4/tcp.c", 1635),
    "__tcp_transmit_skb": ("net/ipv4/tcp_output.c", 1234),
    "__tcp_retransmit_skb": ("net/ipv4/tcp_output.c", 3141),
    "tcp_clean_rtx_queue": ("net/ipv4/tcp_input.c", 3238),
    "__ip_queue_xmit": ("net/ipv4/ip_output.c", 454),
    "ip_finish_output2": ("net/ipv4/ip_output.c", 195),
    "neigh_hh_output": ("include/net/neighbour.h", 491),
    "eth_header": ("net/ethernet/eth.c", 79),
    "igb_clean_rx_irq": ("drivers/net/ethernet/intel/igb/igb_main.c", 8883),
    "igb_build_skb": ("drivers/net/ethernet/intel/igb/igb_main.c", 8558),
    "igb_construct_skb": ("drivers/net/ethernet/intel/igb/igb_main.c", 8506),
    "igb_clean_tx_irq": ("drivers/net/ethernet/intel/igb/igb_main.c", 8246),
    "napi_gro_receive": ("net/core/gro.c", 648),
    "dev_gro_receive": ("net/core/gro.c", 482),
    "napi_skb_finish": ("net/core/gro.c", 621),
    "tcp_gro_receive": ("net/ipv4/tcp_offload.c", 180),
    "udp_gro_receive_segment": ("net/ipv4/udp_offload.c", 457),
    "skb_gro_receive": ("net/core/gro.c", 153),
    "napi_consume_skb": (SKBUFF_C, 1300),
    "igb_process_skb_fields": ("drivers/net/ethernet/intel/igb/igb_main.c", 8799),
    "__netif_receive_skb_core": ("net/core/dev.c", 5281),
    "ip_rcv": ("net/ipv4/ip_input.c", 560),
    "tcp_drop_reason": ("net/ipv4/tcp_input.c", 4717),
}
KNOWN_CALLERS: dict[str, str] = {name: f"{path}:{line}" for name, (path, line) in CALLERS.items()}

# Callers that use the unchecked double-underscore variant of the op they are shown with.
UNCHECKED_CALLERS: dict[str, str] = {
    "ip_local_deliver_finish": "__skb_pull",
    "tcp_rcv_established": "__skb_pull",
    "tcp_data_queue": "__skb_pull",
    "neigh_hh_output": "__skb_push",
    "igb_build_skb": "__skb_put",
    "igb_construct_skb": "__skb_put",
}

TABLE_FIELDS = (
    "len",
    "data_len",
    "headlen",
    "truesize",
    "users",
    "dataref",
    "nr_frags",
    "headroom",
    "tailroom",
    "data",
    "tail",
    "end",
)
BYTE_FIELDS = frozenset(
    {"len", "data_len", "headlen", "truesize", "headroom", "tailroom", "data", "tail", "end"}
)
HEADER_FIELDS = ("mac_header", "network_header", "transport_header")
DIFF_FIELDS = (
    *TABLE_FIELDS,
    "buffer",
    "status",
    "cloned",
    "fclone",
    "frag_list",
    *HEADER_FIELDS,
    "cb",
    "ip_summed",
    "csum_start",
    "csum_offset",
    "gso",
)
TCPHDR = {"FIN": 0x01, "SYN": 0x02, "RST": 0x04, "PSH": 0x08, "ACK": 0x10, "URG": 0x20}
TCPHDR |= {"ECE": 0x40, "CWR": 0x80}
SKB_IIF = 2  # the receiving device's ifindex in the walkthroughs (eth0 is usually 2)
CHECKSUM_NAMES = ("CHECKSUM_NONE", "CHECKSUM_UNNECESSARY", "CHECKSUM_COMPLETE", "CHECKSUM_PARTIAL")
CHECKSUM_PARTIAL = 3
CHECKSUM_UNNECESSARY = 1
TCP_CHECK_OFFSET = 16  # offsetof(struct tcphdr, check)
U16 = 0xFFFF


# ---- allocation arithmetic (pure) ------------------------------------------------------------
def data_align(x: int) -> int:
    """SKB_DATA_ALIGN: round up to SMP_CACHE_BYTES (64)."""
    return -(-x // SMP_CACHE_BYTES) * SMP_CACHE_BYTES


def head_align(x: int) -> int:
    """SKB_HEAD_ALIGN: aligned data area plus the aligned skb_shared_info."""
    return data_align(x) + SHINFO


def get_order(size: int) -> int:
    """get_order(): the smallest page order whose block holds ``size`` bytes."""
    order = 0
    while (PAGE_SIZE << order) < size:
        order += 1
    return order


def kmalloc_size_roundup(size: int) -> int:
    """kmalloc_size_roundup() (mm/slab_common.c:743) for SLUB on x86-64 with 4 KiB pages."""
    if size == 0:
        return 0
    if size > KMALLOC_MAX_CACHE_SIZE:
        return PAGE_SIZE << get_order(size)
    return next(b for b in KMALLOC_BUCKETS if b >= size)


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadAlloc:
    """Where a head buffer came from and how many bytes were really allocated."""

    where: str
    nbytes: int

    @property
    def end(self) -> int:
        return self.nbytes - SHINFO


def kmalloc_reserve(size: int) -> HeadAlloc | None:
    """kmalloc_reserve() (net/core/skbuff.c:557): small-head cache, kmalloc bucket or pages."""
    obj = head_align(size)
    if obj <= SMALL_HEAD_CACHE_SIZE:
        return HeadAlloc(where="skbuff_small_head", nbytes=SMALL_HEAD_CACHE_SIZE)
    got = kmalloc_size_roundup(obj)
    if got > KMALLOC_MAX_SIZE:
        return None
    if got > KMALLOC_MAX_CACHE_SIZE:
        return HeadAlloc(where=f"pages order {get_order(got)}", nbytes=got)
    name = f"kmalloc-{got // 1024}k" if got >= 1024 else f"kmalloc-{got}"
    return HeadAlloc(where=name, nbytes=got)


def default_frag_truesize(size: int) -> int:
    """Default truesize charged for an RX frag: half a page (igb/ixgbe style), else whole pages."""
    if size <= HALF_PAGE_TRUESIZE:
        return HALF_PAGE_TRUESIZE
    return -(-size // PAGE_SIZE) * PAGE_SIZE


# ---- engine state (mutable within one run only) ----------------------------------------------
@dataclass(slots=True)
class Region:
    start: int
    end: int
    label: str
    kind: str  # "header" | "payload"


@dataclass(slots=True)
class Frag:
    page: str
    offset: int
    size: int


@dataclass(slots=True)
class Buffer:
    id: str
    nbytes: int
    end: int
    where: str
    dataref: int = 1
    freed: bool = False
    head_frag: bool = False  # carved from a page (fragment), not a slab object
    stolen_by: str | None = None  # GRO turned this head into a frag of that skb
    # skb_shared_info's GSO fields (shared by clones, copied by pskb_expand_head/skb_copy).
    gso_size: int = 0
    gso_segs: int = 0
    gso_type: tuple[str, ...] = ()
    frags: list[Frag] = field(default_factory=list)
    frag_list: list[str] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)


@dataclass(slots=True)
class Skb:
    name: str
    buffer: str
    end: int
    truesize: int
    data: int = 0
    tail: int = 0
    len: int = 0
    data_len: int = 0
    users: int = 1
    fclone: str = "none"  # none | orig | clone | unavailable
    pair: str | None = None  # fclone pair id (sk_buff_fclones) for orig/clone
    cloned: bool = False
    nohdr: bool = False
    has_sk: bool = False
    origin: str = ""
    status: str = "live"  # live | dropped | consumed | in_frag_list
    owner: str | None = None  # head skb whose frag_list holds this one
    # Header offsets from head (u16 in the kernel); None is "unset" ((typeof)~0U).
    # __finalize_skb_around leaves network_header 0 (memset) and marks the other two unset.
    mac_header: int | None = None
    network_header: int = 0
    transport_header: int | None = None
    # cb[48]: which layer's private struct is laid over it, and the fields modelled.
    cb_layer: str | None = None  # "IPCB" (struct inet_skb_parm) | "TCP_SKB_CB" (tcp_skb_cb)
    cb: dict[str, int] = field(default_factory=dict)
    # Checksum state: ip_summed is CHECKSUM_NONE (0) .. CHECKSUM_PARTIAL (3); csum_start is
    # counted from head, csum_offset from csum_start (only meaningful for CHECKSUM_PARTIAL).
    ip_summed: int = 0
    csum_start: int = 0
    csum_offset: int = 0
    gro_count: int = 0  # NAPI_GRO_CB(skb)->count while GRO holds this skb (0: not held)
    drop_reason: str | None = None  # enum skb_drop_reason name, set by kfree_skb_reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Expanded:
    """What pskb_expand_head did: ``ok`` False means -ENOMEM with the skb unchanged."""

    ok: bool
    detail: Text


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """What one op did: the outcome plus the words and marks for its frame."""

    primary: str
    result: str
    narration: Text
    source: SourceRef
    notes: tuple[Text, ...] = ()
    mark: str | None = None
    bug: str | None = None  # the message the kernel would print, for BUG outcomes


def _label_kind(label: str, default: str) -> str:
    return "header" if label.strip().lower() in HEADER_LABELS else default


class SkbMachine:
    """All skbs, head buffers and pages of one scenario."""

    def __init__(self) -> None:
        self.skbs: dict[str, Skb] = {}
        self.buffers: dict[str, Buffer] = {}
        self.pages: dict[str, int] = {}
        self.fclone_refs: dict[str, int] = {}
        self._counters = {"buf": 0, "page": 0, "fc": 0}

    # -- helpers -------------------------------------------------------------------------------
    def _next(self, kind: str) -> str:
        self._counters[kind] += 1
        return f"{kind}{self._counters[kind]}"

    def buf(self, skb: Skb) -> Buffer:
        return self.buffers[skb.buffer]

    @staticmethod
    def tailroom(skb: Skb) -> int:
        return 0 if skb.data_len else skb.end - skb.tail

    def dataref(self, skb: Skb) -> int:
        return self.buf(skb).dataref & DATAREF_MASK

    def skb_cloned(self, skb: Skb) -> bool:
        """skb_cloned(): the cloned bit is set and someone else still holds the data."""
        return skb.cloned and (self.buf(skb).dataref & DATAREF_MASK) != 1

    def skb_header_cloned(self, skb: Skb) -> bool:
        """skb_header_cloned(): another skb may still read the header bytes."""
        if not skb.cloned:
            return False
        d = self.buf(skb).dataref
        return (d & DATAREF_MASK) - ((d >> DATAREF_SHIFT) & DATAREF_MASK) != 1

    def values(self, name: str) -> dict[str, Any]:
        """The comparable field values of one skb (for the table and the change list)."""
        s = self.skbs[name]
        b = self.buf(s)
        return {
            "len": s.len,
            "data_len": s.data_len,
            "headlen": s.len - s.data_len,
            "truesize": s.truesize,
            "users": s.users,
            "dataref": b.dataref & DATAREF_MASK,
            "nr_frags": len(b.frags),
            "headroom": s.data,
            "tailroom": self.tailroom(s),
            "data": s.data,
            "tail": s.tail,
            "end": s.end,
            "buffer": s.buffer,
            "status": s.status,
            "cloned": s.cloned,
            "fclone": s.fclone,
            "frag_list": tuple(b.frag_list),
            "mac_header": s.mac_header,
            "network_header": s.network_header,
            "transport_header": s.transport_header,
            "cb": (s.cb_layer, tuple(sorted(s.cb.items()))),
            "ip_summed": s.ip_summed,
            "csum_start": s.csum_start,
            "csum_offset": s.csum_offset,
            "gso": (b.gso_size, b.gso_segs, b.gso_type),
        }

    def snapshot_skb(self, name: str) -> dict[str, Any]:
        s = self.skbs[name]
        b = self.buf(s)
        return {
            "name": s.name,
            "head": 0,
            "data": s.data,
            "tail": s.tail,
            "end": s.end,
            "len": s.len,
            "data_len": s.data_len,
            "truesize": s.truesize,
            "headroom": s.data,
            "tailroom": self.tailroom(s),
            "users": s.users,
            "dataref": b.dataref & DATAREF_MASK,
            "dataref_nohdr": (b.dataref >> DATAREF_SHIFT) & DATAREF_MASK,
            "nr_frags": len(b.frags),
            "headlen": s.len - s.data_len,
            "buffer": b.id,
            "alloc": b.where,
            "alloc_bytes": b.nbytes,
            "frags": [
                {"page": f.page, "offset": f.offset, "size": f.size, "refs": self.pages[f.page]}
                for f in b.frags
            ],
            "frag_list": list(b.frag_list),
            "fclone": s.fclone,
            "cloned": s.cloned,
            "nohdr": s.nohdr,
            "sk": s.has_sk,
            "cb": {"layer": s.cb_layer, "fields": dict(s.cb)},
            "ip_summed": CHECKSUM_NAMES[s.ip_summed],
            "csum_start": s.csum_start,
            "csum_offset": s.csum_offset,
            "gso_size": b.gso_size,
            "gso_segs": b.gso_segs,
            "gso_type": list(b.gso_type),
            "drop_reason": s.drop_reason,
            "mac_header": s.mac_header,
            "network_header": s.network_header,
            "transport_header": s.transport_header,
            "status": s.status,
            "regions": [
                {"start": r.start, "end": r.end, "label": r.label, "kind": r.kind}
                for r in b.regions
            ],
        }

    def snapshot(self) -> dict[str, Any]:
        return {
            "skbs": [self.snapshot_skb(n) for n in self.skbs],
            "buffers": {
                b.id: {
                    "size": b.nbytes,
                    "end": b.end,
                    "dataref": b.dataref & DATAREF_MASK,
                    "dataref_nohdr": (b.dataref >> DATAREF_SHIFT) & DATAREF_MASK,
                    "freed": b.freed,
                    "alloc": b.where,
                    "head_frag": b.head_frag,
                    "stolen_by": b.stolen_by,
                }
                for b in self.buffers.values()
            },
            "pages": {p: {"refs": r} for p, r in self.pages.items()},
        }

    @staticmethod
    def _write_region(b: Buffer, start: int, end: int, label: str, kind: str) -> None:
        """Record bytes [start, end) as written; newer writes cover older ones."""
        if end <= start:
            return
        kept: list[Region] = []
        for r in b.regions:
            if r.end <= start or r.start >= end:
                kept.append(r)
                continue
            if r.start < start:
                kept.append(Region(r.start, start, r.label, r.kind))
            if r.end > end:
                kept.append(Region(end, r.end, r.label, r.kind))
        kept.append(Region(start, end, label, kind))
        kept.sort(key=lambda r: (r.start, r.end))
        b.regions = kept

    @staticmethod
    def _copy_regions(src: list[Region], lo: int, hi: int, shift: int) -> list[Region]:
        out = []
        for r in src:
            s, e = max(r.start, lo), min(r.end, hi)
            if e > s:
                out.append(Region(s + shift, e + shift, r.label, r.kind))
        return out

    def _new_buffer(self, alloc: HeadAlloc, *, head_frag: bool = False) -> Buffer:
        b = Buffer(
            id=self._next("buf"),
            nbytes=alloc.nbytes,
            end=alloc.end,
            where=alloc.where,
            head_frag=head_frag,
        )
        self.buffers[b.id] = b
        return b

    def _new_skb(
        self,
        name: str,
        alloc: HeadAlloc,
        *,
        fclone: str = "none",
        origin: str,
        head_frag: bool = False,
    ) -> Skb:
        b = self._new_buffer(alloc, head_frag=head_frag)
        s = Skb(
            name=name, buffer=b.id, end=b.end, truesize=b.end + TRUESIZE_OVERHEAD, origin=origin
        )
        if fclone == "orig":
            s.fclone = "orig"
            s.pair = self._next("fc")
            self.fclone_refs[s.pair] = 1
        self.skbs[name] = s
        return s

    def _step(
        self,
        op: Op,
        primary: str,
        result: str,
        text: Text,
        *,
        notes: tuple[Text, ...] = (),
        mark: str | None = None,
        bug: str | None = None,
    ) -> Step:
        if op.via:
            where = KNOWN_CALLERS.get(op.via)
            who = f"{op.via} ({where})" if where else op.via
            text = msg("Called from {who}. {text_}", who=who, text_=text)
            variant = UNCHECKED_CALLERS.get(op.via)
            if variant and result == "ok" and variant.lstrip("_") == op.op:
                notes = (
                    *notes,
                    msg(
                        "{via} actually calls {variant}, the variant without the length check: the caller has already validated the lengths.",
                        via=op.via,
                        variant=variant,
                    ),
                )
        if result != "ok" and result != "null" and mark is None:
            mark = "panic"
        return Step(
            primary=primary,
            result=result,
            narration=text,
            source=SOURCES[op.op],
            notes=notes,
            mark=mark,
            bug=bug,
        )

    @staticmethod
    def _panic_line(kind: str, s: Skb, sz: int, data: int, length: int, tail: int) -> str:
        return (
            f"skbuff: {kind}: text:<caller> len:{length} put:{sz} head:<head> "
            f"data:<head+{data}> tail:{tail:#x} end:{s.end:#x} dev:<NULL>"
        )

    # -- dispatch ------------------------------------------------------------------------------
    def apply(self, op: Op) -> Step:
        """Run one op and say what happened."""
        for n in (op.skb, op.src):
            if n is None or n not in self.skbs:
                continue
            if op.op in ("skb_clone", "skb_copy", "pskb_copy") and n == op.skb:
                continue  # the name being created
            s = self.skbs[n]
            if s.status != "live":
                return self._use_after_free(op, s)
        handler = getattr(self, "op_" + op.op.lstrip("_"))
        step: Step = handler(op)
        return step

    def _use_after_free(self, op: Op, s: Skb) -> Step:
        if s.status == "in_frag_list":
            why = msg(
                "'{name}' was handed to '{owner}''s frag_list by GRO: its caller gave up ownership, and the skb is freed together with '{owner}'. Touching it afterwards through the old pointer is a use-after-free bug (KASAN reports it once the memory is actually released).",
                name=s.name,
                owner=s.owner or "",
            )
        else:
            why = msg(
                "'{name}' was already released ({status}); its sk_buff went back to the slab and may hold another packet by now. {op} on it is a use-after-free: with KASAN the kernel prints 'BUG: KASAN: use-after-free in {op}'; without it the write silently corrupts whatever reuses the memory.",
                name=s.name,
                status=s.status,
                op=op.op,
            )
        return self._step(
            op,
            s.name,
            "use_after_free",
            why,
            mark="panic",
            bug=f"BUG: KASAN: use-after-free in {SOURCES[op.op].function}",
        )

    # -- allocation ----------------------------------------------------------------------------
    def _alloc_narr(self, call: Text, size: int, alloc: HeadAlloc) -> Text:
        obj = head_align(size)
        if alloc.where == "skbuff_small_head":
            how = msg(
                "SKB_HEAD_ALIGN({size}) = {data_align} + 320 = {obj} bytes fits the 640-byte skbuff_small_head cache",
                size=size,
                data_align=data_align(size),
                obj=obj,
            )
        else:
            how = msg(
                "SKB_HEAD_ALIGN({size}) = {data_align} + 320 = {obj} bytes is served by {where} ({nbytes} bytes)",
                size=size,
                data_align=data_align(size),
                obj=obj,
                where=alloc.where,
                nbytes=alloc.nbytes,
            )
        slack = alloc.end - size
        return msg(
            "{call} sizes the head with kmalloc_reserve: {how}. skb_shared_info takes the last 320 bytes, so end = {end}; the {slack} bytes of rounding slack become tailroom. truesize = end + 576 = {alloc_end_truesize_overhead}.",
            call=call,
            how=how,
            end=alloc.end,
            slack=slack,
            alloc_end_truesize_overhead=alloc.end + TRUESIZE_OVERHEAD,
        )

    def _alloc_notes(self, size: int) -> tuple[Text, ...]:
        if data_align(size) <= SMALL_HEAD_6_12_DATA:
            return (
                msg(
                    "Linux 6.12 grows the small-head cache to 704 bytes (it must also fit GRO_MAX_HEAD + NET_SKB_PAD), so a data area this small gets end = 384 and truesize = 960 there."
                ),
            )
        return ()

    def _kmalloc_or_null(self, op: Op, size: int) -> HeadAlloc | Step:
        alloc = kmalloc_reserve(size)
        if alloc is None:
            return self._step(
                op,
                op.skb,
                "null",
                msg(
                    "A {head_align}-byte head is larger than KMALLOC_MAX_SIZE (4 MiB); the allocation fails and {op} returns NULL.",
                    head_align=head_align(size),
                    op=op.op,
                ),
                mark="null",
            )
        return alloc

    def op_alloc_skb(self, op: Op) -> Step:
        size = op.size or 0
        alloc = self._kmalloc_or_null(op, size)
        if isinstance(alloc, Step):
            return alloc
        self._new_skb(op.skb, alloc, origin="alloc_skb")
        text = self._alloc_narr(
            msg("alloc_skb({size}) → __alloc_skb", size=size), size, alloc
        ) + msg(" data = tail = 0: headroom 0, len 0.")
        return self._step(op, op.skb, "ok", text, notes=self._alloc_notes(size))

    def op_alloc_skb_fclone(self, op: Op) -> Step:
        size = op.size or 0
        alloc = self._kmalloc_or_null(op, size)
        if isinstance(alloc, Step):
            return alloc
        self._new_skb(op.skb, alloc, fclone="orig", origin="alloc_skb_fclone")
        text = self._alloc_narr(f"alloc_skb_fclone({size})", size, alloc) + msg(
            " The sk_buff comes from skbuff_fclone_cache as the first half of a pair (fclone = orig, fclone_ref 1): a later skb_clone can use the companion without allocating."
        )
        return self._step(op, op.skb, "ok", text, notes=self._alloc_notes(size))

    def _rx_alloc(self, op: Op, napi: bool) -> Step:
        want = op.len or 0
        # __napi_alloc_skb adds NET_SKB_PAD + NET_IP_ALIGN; __netdev_alloc_skb only NET_SKB_PAD.
        pad = NET_SKB_PAD + NET_IP_ALIGN if napi else NET_SKB_PAD
        padded = want + pad
        fn = "__napi_alloc_skb" if napi else "__netdev_alloc_skb"
        notes: tuple[Text, ...] = ()
        head_frag = True
        if napi and padded <= SMALL_FRAG_END:
            alloc = HeadAlloc(where="napi 1K frag", nbytes=NAPI_SMALL_FRAG)
            how = msg(
                "{padded} ≤ 704, so it takes a fixed 1 KiB page fragment (NAPI_HAS_SMALL_PAGE_FRAG): end = SKB_WITH_OVERHEAD(1024) = 704",
                padded=padded,
            )
        elif (not napi and padded <= SMALL_FRAG_END) or padded > PAGE_HEAD_MAX:
            got = self._kmalloc_or_null(op, padded)
            if isinstance(got, Step):
                return got
            alloc = got
            head_frag = False
            why = "≤ 704" if padded <= SMALL_FRAG_END else msg("> 3776 (more than a page)")
            how = msg(
                "{padded} is {why}, so it falls back to __alloc_skb: SKB_HEAD_ALIGN({padded}) = {head_align} from {where} ({nbytes} bytes), end = {end}",
                padded=padded,
                why=why,
                head_align=head_align(padded),
                where=alloc.where,
                nbytes=alloc.nbytes,
                end=alloc.end,
            )
            if not napi:
                notes = (
                    msg(
                        "Linux 6.12 moves this lower threshold to the small-head cache size (SKB_WITH_OVERHEAD(704) = 384)."
                    ),
                )
        else:
            alloc = HeadAlloc(where="page_frag", nbytes=head_align(padded))
            how = msg(
                "704 < {padded} ≤ 3776, so the head is a page fragment of SKB_HEAD_ALIGN({padded}) = {data_align} + 320 = {nbytes} bytes (head_frag = 1), end = {end}",
                padded=padded,
                data_align=data_align(padded),
                nbytes=alloc.nbytes,
                end=alloc.end,
            )
        s = self._new_skb(op.skb, alloc, origin=op.op, head_frag=head_frag)
        s.data = s.tail = pad
        added = (
            msg("NET_SKB_PAD 64 + NET_IP_ALIGN 0 (x86-64)")
            if napi
            else msg("NET_SKB_PAD 64 (no NET_IP_ALIGN)")
        )
        text = msg(
            "{fn}(len {want}) adds {added} → {padded}. {how}. truesize = end + 576 = {truesize}. It then skb_reserve()s {pad}: data = tail = {pad}, headroom {pad}, tailroom {s_end_s_tail}.",
            fn=fn,
            want=want,
            added=added,
            padded=padded,
            how=how,
            truesize=s.truesize,
            pad=pad,
            s_end_s_tail=s.end - s.tail,
        )
        return self._step(op, op.skb, "ok", text, notes=notes)

    def op_netdev_alloc_skb(self, op: Op) -> Step:
        return self._rx_alloc(op, napi=False)

    def op_napi_alloc_skb(self, op: Op) -> Step:
        return self._rx_alloc(op, napi=True)

    def _build(self, op: Op, napi: bool) -> Step:
        """build_skb/napi_build_skb: an sk_buff around a buffer the driver already filled."""
        frag_size = op.size or 0
        alloc = HeadAlloc(where="driver page frag", nbytes=frag_size)
        s = self._new_skb(op.skb, alloc, origin=op.op, head_frag=True)
        fn = "napi_build_skb" if napi else "build_skb"
        whence = (
            msg("from the per-CPU NAPI cache (napi_skb_cache_get)")
            if napi
            else msg("from skbuff_cache (kmem_cache_alloc)")
        )
        text = msg(
            "{fn}(data, frag_size {frag_size}) allocates only the sk_buff, {whence}; the head is the driver's receive buffer, which the NIC has already written. __finalize_skb_around puts skb_shared_info in its last 320 bytes: end = {frag_size} − 320 = {end}, truesize = SKB_TRUESIZE(end) = {end} + 576 = {truesize}. data = tail = 0 and head_frag = 1 (the head is part of a page). The driver then skb_reserve()s its headroom and __skb_put()s the frame length.",
            fn=fn,
            frag_size=frag_size,
            whence=whence,
            end=s.end,
            truesize=s.truesize,
        )
        return self._step(op, op.skb, "ok", text)

    def op_build_skb(self, op: Op) -> Step:
        return self._build(op, napi=False)

    def op_napi_build_skb(self, op: Op) -> Step:
        return self._build(op, napi=True)

    def op_tcp_stream_alloc_skb(self, op: Op) -> Step:
        size = op.size or 0
        total = size + MAX_TCP_HEADER
        alloc = self._kmalloc_or_null(op, total)
        if isinstance(alloc, Step):
            return alloc
        s = self._new_skb(op.skb, alloc, fclone="orig", origin="tcp_stream_alloc_skb")
        s.truesize = alloc.end + TRUESIZE_OVERHEAD  # SKB_TRUESIZE(skb_end_offset(skb))
        s.data = s.tail = MAX_TCP_HEADER
        s.ip_summed = CHECKSUM_PARTIAL
        text = msg(
            "tcp_stream_alloc_skb({size}) calls alloc_skb_fclone({size} + MAX_TCP_HEADER 320 = {total}): SKB_HEAD_ALIGN({total}) = {head_align} → {where} ({nbytes} bytes), end = {end}. It sets truesize = SKB_TRUESIZE(end) = {truesize} and reserves 320 bytes for the TCP, IP and link headers: headroom {data}, tailroom {s_end_s_tail}. User data will go into page frags. ip_summed = CHECKSUM_PARTIAL: the device (or skb_checksum_help) will finish the TCP checksum.",
            size=size,
            total=total,
            head_align=head_align(total),
            where=alloc.where,
            nbytes=alloc.nbytes,
            end=alloc.end,
            truesize=s.truesize,
            data=s.data,
            s_end_s_tail=s.end - s.tail,
        )
        return self._step(op, op.skb, "ok", text, notes=self._alloc_notes(total))

    # -- linear-area pointer ops ---------------------------------------------------------------
    def op_skb_reserve(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        n = op.len or 0
        d0, t0 = s.data, s.tail
        s.data += n
        s.tail += n
        notes: list[Text] = []
        mark = None
        if s.len:
            notes.append(
                msg(
                    "skb_reserve is meant for an empty buffer; on one holding data it just slides the window over bytes that are not the packet any more."
                )
            )
        text = msg(
            "skb_reserve moves data and tail together by {n}: data {d0} → {data}, tail {t0} → {tail}. headroom is now {data}; len stays {len}.",
            n=n,
            d0=d0,
            data=s.data,
            t0=t0,
            tail=s.tail,
            len=s.len,
        )
        if s.tail > s.end:
            mark = "overrun"
            text += msg(
                " Nothing checks the size: tail ({tail}) is now past end ({end}), into skb_shared_info. The next skb_put will hit skb_over_panic.",
                tail=s.tail,
                end=s.end,
            )
        return self._step(op, s.name, "ok", text, notes=tuple(notes), mark=mark)

    def op_skb_put(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        n = op.len or 0
        if s.data_len:
            return self._step(
                op,
                s.name,
                "skb_put_nonlinear",
                msg(
                    "skb_put starts with SKB_LINEAR_ASSERT: the skb is nonlinear (data_len {data_len}), so BUG_ON fires — 'kernel BUG at net/core/skbuff.c'. Appending to the linear tail would put bytes in front of the paged data, out of order.",
                    data_len=s.data_len,
                ),
                bug="kernel BUG at net/core/skbuff.c (SKB_LINEAR_ASSERT in skb_put)",
            )
        new_tail = s.tail + n
        if new_tail > s.end:
            line = self._panic_line("skb_over_panic", s, n, s.data, s.len + n, new_tail)
            return self._step(
                op,
                s.name,
                "skb_over_panic",
                msg(
                    'skb_put({n}) moves tail {tail} → {new_tail}, past end {end} (tailroom was only {s_end_s_tail}). skb_over_panic → skb_panic prints the geometry with pr_emerg and calls BUG(): the kernel oopses instead of overwriting skb_shared_info. Printed: "{line}".',
                    n=n,
                    tail=s.tail,
                    new_tail=new_tail,
                    end=s.end,
                    s_end_s_tail=s.end - s.tail,
                    line=line,
                ),
                bug=line,
            )
        b = self.buf(s)
        t0, l0 = s.tail, s.len
        s.tail = new_tail
        s.len += n
        label = op.label or "data"
        self._write_region(b, t0, new_tail, label, _label_kind(label, "payload"))
        notes = []
        if self.skb_cloned(s):
            notes.append(
                msg(
                    "This skb's data is shared with a clone; real code makes it private first (skb_cow_data or pskb_expand_head) before writing."
                )
            )
        text = msg(
            "skb_put extends the data area by {n} bytes at the tail and returns the old tail for the caller to fill: tail {t0} → {tail}, len {l0} → {len}, tailroom {s_end_t0} → {s_end_s_tail}.",
            n=n,
            t0=t0,
            tail=s.tail,
            l0=l0,
            len=s.len,
            s_end_t0=s.end - t0,
            s_end_s_tail=s.end - s.tail,
        )
        return self._step(op, s.name, "ok", text, notes=tuple(notes))

    def op_skb_push(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        n = op.len or 0
        new_data = s.data - n
        if new_data < 0:
            line = self._panic_line("skb_under_panic", s, n, new_data, s.len + n, s.tail)
            return self._step(
                op,
                s.name,
                "skb_under_panic",
                msg(
                    'skb_push({n}) would move data {data} → {new_data}, in front of head: only {data} bytes of headroom exist. skb_under_panic → skb_panic prints the geometry and calls BUG(). Callers that are unsure use skb_cow_head() first. Printed: "{line}".',
                    n=n,
                    data=s.data,
                    new_data=new_data,
                    line=line,
                ),
                bug=line,
            )
        b = self.buf(s)
        d0, l0 = s.data, s.len
        s.data = new_data
        s.len += n
        label = op.label or "hdr"
        self._write_region(b, new_data, d0, label, _label_kind(label, "header"))
        notes = []
        if self.skb_header_cloned(s):
            notes.append(
                msg(
                    "The header bytes are shared with another skb (skb_header_cloned); real code calls skb_cow_head() first so it does not scribble on them."
                )
            )
        elif self.skb_cloned(s):
            notes.append(
                msg(
                    "The data is shared, but the other holders only reference the payload (the dataref split set by __skb_header_release), so writing headers into the headroom is safe — that is why TCP releases headers on queued skbs."
                )
            )
        text = msg(
            "skb_push prepends {n} bytes: data {d0} → {data}, len {l0} → {len}, headroom {d0} → {data}. The caller writes the {label} header at the new data.",
            n=n,
            d0=d0,
            data=s.data,
            l0=l0,
            len=s.len,
            label=label,
        )
        return self._step(op, s.name, "ok", text, notes=tuple(notes))

    def op_skb_pull(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        n = op.len or 0
        if n > s.len:
            return self._step(
                op,
                s.name,
                "null",
                msg(
                    "skb_pull({n}) asks for more than len {len}: skb_pull_inline returns NULL and leaves the skb unchanged (no panic). Callers treat this as a truncated packet.",
                    n=n,
                    len=s.len,
                ),
                mark="null",
            )
        if s.len - n < s.data_len:
            return self._step(
                op,
                s.name,
                "__skb_pull",
                msg(
                    "Only {s_len_s_data_len} bytes are linear (headlen) but skb_pull({n}) goes past them into paged data (data_len {data_len}). __skb_pull sees len < data_len after subtracting and calls BUG(). Code that may cross into frags uses pskb_may_pull()/pskb_pull(), which copy paged bytes into the head first.",
                    s_len_s_data_len=s.len - s.data_len,
                    n=n,
                    data_len=s.data_len,
                ),
                bug="kernel BUG at include/linux/skbuff.h (__skb_pull)",
            )
        d0, l0 = s.data, s.len
        s.data += n
        s.len -= n
        text = msg(
            "skb_pull removes {n} bytes from the front: data {d0} → {data}, len {l0} → {len}, headroom {d0} → {data}. The bytes stay in the buffer; they are just in front of data now, and the function returns the new data pointer.",
            n=n,
            d0=d0,
            data=s.data,
            l0=l0,
            len=s.len,
        )
        return self._step(op, s.name, "ok", text)

    def _linear_trim(self, s: Skb, n: int) -> Text:
        l0, t0 = s.len, s.tail
        s.len = n
        s.tail = s.data + n
        return msg("len {l0} → {len}, tail {t0} → {tail}", l0=l0, len=s.len, t0=t0, tail=s.tail)

    def op_skb_trim(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        n = op.len or 0
        if s.len <= n:
            return self._step(
                op,
                s.name,
                "ok",
                msg(
                    "skb_trim({n}) only shortens: len is already {len}, nothing changes.",
                    n=n,
                    len=s.len,
                ),
            )
        if s.data_len:
            return self._step(
                op,
                s.name,
                "ok",
                msg(
                    "skb_trim({n}) on a nonlinear skb (data_len {data_len}): __skb_set_length hits WARN_ON(skb_is_nonlinear) and returns without trimming. len stays {len}. Paged skbs need pskb_trim.",
                    n=n,
                    data_len=s.data_len,
                    len=s.len,
                ),
                mark="warn",
                notes=(msg("The WARN prints a stack trace once but does not stop the kernel."),),
            )
        what = self._linear_trim(s, n)
        return self._step(
            op,
            s.name,
            "ok",
            msg(
                "skb_trim cuts the linear data to {n} bytes by moving tail back: {what}.",
                n=n,
                what=what,
            ),
        )

    def op_pskb_trim(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        n = op.len or 0
        if s.len <= n:
            return self._step(
                op,
                s.name,
                "ok",
                msg("pskb_trim({n}): len is already {len}, nothing to trim.", n=n, len=s.len),
            )
        if not s.data_len:
            what = self._linear_trim(s, n)
            return self._step(
                op,
                s.name,
                "ok",
                msg(
                    "pskb_trim({n}) on a linear skb is a plain __skb_trim: {what}.", n=n, what=what
                ),
            )
        pre: Text = ""
        if self.skb_cloned(s):
            if s.users != 1:
                return self._shared_bug(op, s, msg("___pskb_trim must unclone first"))
            res = self._expand(s, 0, 0)
            if not res.ok:
                return self._step(
                    op,
                    s.name,
                    "null",
                    msg(
                        "___pskb_trim needs a private copy but pskb_expand_head fails with -ENOMEM ({detail}); pskb_trim returns the error and the skb is unchanged.",
                        detail=res.detail,
                    ),
                    mark="null",
                )
            pre = msg(
                "The data was shared, so ___pskb_trim first unclones it: {detail} ",
                detail=res.detail,
            )
        b = self.buf(s)
        l0, dl0 = s.len, s.data_len
        offset = s.len - s.data_len
        keep: list[Frag] = []
        dropped = 0
        for f in b.frags:
            if offset >= n:  # everything from here on lies beyond the new length
                self.pages[f.page] -= 1
                dropped += 1
                continue
            if offset + f.size >= n:  # the frag that reaches the new length is cut to it
                f.size = n - offset
            offset += f.size
            keep.append(f)
        b.frags = keep
        for member in list(b.frag_list):
            m = self.skbs[member]
            if offset >= n:
                b.frag_list.remove(member)
                self._release(m, "consumed")
                continue
            if offset + m.len > n and not m.data_len:
                self._linear_trim(m, n - offset)
            offset += m.len
        if n > s.len - s.data_len:
            s.data_len -= s.len - n
            s.len = n
        else:
            s.len = n
            s.data_len = 0
            s.tail = s.data + n
        text = msg(
            "{pre}pskb_trim({n}) → ___pskb_trim walks the frags: keeps what lies below {n}, shrinks the frag that crosses it and drops {dropped} frag(s) beyond (put_page). len {l0} → {len}, data_len {dl0} → {data_len}.",
            pre=pre,
            n=n,
            dropped=dropped,
            l0=l0,
            len=s.len,
            dl0=dl0,
            data_len=s.data_len,
        )
        if s.has_sk:
            text += msg(
                " skb->sk is set, so skb_condense is skipped and truesize stays {truesize}: the socket's accounting must not change under it.",
                truesize=s.truesize,
            )
        else:
            text += self._condense(s)
        return self._step(op, s.name, "ok", text)

    # -- header offsets ------------------------------------------------------------------------
    def _header_op(self, op: Op, which: str, offset: int | None) -> Step:
        s = self.skbs[op.skb]
        field = f"{which}_header"
        old: int | None = getattr(s, field)
        raw = s.data + (offset or 0)
        value = raw & U16
        setattr(s, field, value)
        was = msg("unset (~0)") if old is None else str(old)
        if offset is None:
            what = msg(
                "skb_reset_{field} records data − head: {field} {was} → {value}",
                field=field,
                was=was,
                value=value,
            )
        else:
            what = msg(
                "skb_set_{field}({offset}) records data − head + {offset} = {data} + {offset}: {field} {was} → {value}",
                field=field,
                offset=offset,
                data=s.data,
                was=was,
                value=value,
            )
        rel = value - s.data
        where = (
            msg("at data")
            if rel == 0
            else msg("{rel} bytes after data", rel=rel)
            if rel > 0
            else msg("{rel} bytes in front of data (already pulled)", rel=-rel)
        )
        text = msg(
            "{what}. The offset is counted from head, not from data, so it stays valid while later pulls and pushes move data; the {which} header now starts {where}.",
            what=what,
            which=which,
            where=where,
        )
        notes: tuple[Text, ...] = ()
        mark = None
        if raw < 0 or raw > U16:
            mark = "warn"
            notes = (
                msg(
                    "data + offset = {raw} does not fit the u16 field; the kernel stores {value}, and skb_{which}_header() would point at the wrong bytes.",
                    raw=raw,
                    value=value,
                    which=which,
                ),
            )
        return self._step(op, s.name, "ok", text, notes=notes, mark=mark)

    def op_skb_reset_mac_header(self, op: Op) -> Step:
        return self._header_op(op, "mac", None)

    def op_skb_reset_network_header(self, op: Op) -> Step:
        return self._header_op(op, "network", None)

    def op_skb_reset_transport_header(self, op: Op) -> Step:
        return self._header_op(op, "transport", None)

    def op_skb_set_mac_header(self, op: Op) -> Step:
        return self._header_op(op, "mac", op.offset or 0)

    def op_skb_set_network_header(self, op: Op) -> Step:
        return self._header_op(op, "network", op.offset or 0)

    def op_skb_set_transport_header(self, op: Op) -> Step:
        return self._header_op(op, "transport", op.offset or 0)

    def _eat_paged(self, s: Skb, delta: int) -> Text:
        """__pskb_pull_tail's bookkeeping after the copy: drop or advance the frags (and then
        frag_list skbs) that held the first ``delta`` paged bytes."""
        b = self.buf(s)
        left = delta
        keep: list[Frag] = []
        dropped = 0
        for f in b.frags:
            if left >= f.size:
                left -= f.size
                self.pages[f.page] -= 1
                dropped += 1
            else:
                if left:
                    f.offset += left
                    f.size -= left
                    left = 0
                keep.append(f)
        b.frags = keep
        released: list[str] = []
        for m in list(b.frag_list):
            if left <= 0:
                break
            ms = self.skbs[m]
            if left >= ms.len:
                left -= ms.len
                b.frag_list.remove(m)
                self._release(ms, "consumed")
                released.append(m)
            else:
                take = min(left, ms.len - ms.data_len)
                ms.data += take
                ms.len -= take
                left -= take
                if left:
                    self._eat_paged(ms, left)
                    ms.len -= left
                    ms.data_len -= left
                    left = 0
        parts = [msg("{dropped} frag(s) fully copied are released", dropped=dropped)]
        if keep and delta:
            parts.append(msg("the next frag now starts after the copied bytes"))
        if released:
            parts.append(msg("frag_list skb(s) {join} are consumed", join=", ".join(released)))
        return join(msg("; "), parts)

    def op_pskb_may_pull(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        n = op.len or 0
        headlen = s.len - s.data_len
        if n <= headlen:
            return self._step(
                op,
                s.name,
                "ok",
                msg(
                    "pskb_may_pull({n}): the first {n} bytes are already in the linear area (headlen {headlen}), so it returns true at once and nothing moves.",
                    n=n,
                    headlen=headlen,
                ),
            )
        if n > s.len:
            return self._step(
                op,
                s.name,
                "null",
                msg(
                    "pskb_may_pull({n}): the packet has only {len} bytes, so it returns false (pskb_may_pull_reason gives SKB_DROP_REASON_PKT_TOO_SMALL); the caller drops the packet. The skb is unchanged.",
                    n=n,
                    len=s.len,
                ),
                mark="null",
            )
        delta = n - headlen
        eat = s.tail + delta - s.end
        pre: Text = ""
        room = self._room_to_pull(
            op,
            s,
            eat,
            lambda detail: msg(
                "__pskb_pull_tail cannot grow the head ({detail}): pskb_may_pull returns false (SKB_DROP_REASON_NOMEM).",
                detail=detail,
            ),
        )
        if isinstance(room, Step):
            return room
        if room is not None:
            pre = (
                msg(
                    "eat = tail + {delta} − end = {eat} > 0, so the head first grows by eat + 128: ",
                    delta=delta,
                    eat=eat,
                )
                if eat > 0
                else msg("The head is shared with a clone, so it is made private first: ")
            ) + f"{room.detail} "
        b = self.buf(s)
        t0 = s.tail
        self._write_region(b, s.tail, s.tail + delta, "pulled", "payload")
        s.tail += delta
        s.data_len -= delta
        how = self._eat_paged(s, delta)
        text = msg(
            "{pre}pskb_may_pull({n}): only {headlen} bytes are linear, so __pskb_pull_tail({delta}) copies the next {delta} paged bytes behind them: tail {t0} → {tail}, data_len → {data_len}, len stays {len}; {how}. It returns true: the caller may now read {n} bytes at data.",
            pre=pre,
            n=n,
            headlen=headlen,
            delta=delta,
            t0=t0,
            tail=s.tail,
            data_len=s.data_len,
            len=s.len,
            how=how,
        )
        return self._step(op, s.name, "ok", text)

    # -- cb[48]: the layers' private control block --------------------------------------------
    def op_ip_rcv_core(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        ihl = op.len if op.len is not None else 20
        pulled = self.op_pskb_may_pull(replace(op, op="pskb_may_pull", len=ihl, via=None))
        if pulled.result != "ok":
            return self._step(
                op,
                s.name,
                pulled.result,
                msg(
                    "ip_rcv_core first needs the {ihl}-byte IP header in the linear area: {pulled_narration} The packet is dropped (kfree_skb_reason).",
                    ihl=ihl,
                    pulled_narration=pulled.narration,
                ),
                mark=pulled.mark,
                bug=pulled.bug,
            )
        th0 = s.transport_header
        s.transport_header = s.network_header + ihl
        s.cb_layer = "IPCB"
        s.cb = {"iif": SKB_IIF, "flags": 0, "opt.optlen": ihl - 20}
        was = "unset" if th0 is None else str(th0)
        text = msg(
            "ip_rcv_core checks the IP header with pskb_may_pull({ihl}) (here: {pulled_narration}) and sets transport_header = network_header + ihl*4 = {network_header} + {ihl} = {transport_header} (was {was}); data stays at the IP header. It then clears IPCB(skb), the struct inet_skb_parm that the IP layer lays over cb[0..], and stores iif = skb->skb_iif ({skb_iif}). Only the IP layer reads cb[] now; the next layer will reuse the same 48 bytes for its own struct.",
            ihl=ihl,
            pulled_narration=pulled.narration,
            network_header=s.network_header,
            transport_header=s.transport_header,
            was=was,
            skb_iif=SKB_IIF,
        )
        return self._step(op, s.name, "ok", text)

    def op_tcp_v4_fill_cb(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        seq = op.seq or 0
        doff = op.len if op.len is not None else 32
        flags = (op.flags or "ACK").split("|")
        fbyte = sum(TCPHDR[f] for f in flags)
        syn, fin = int("SYN" in flags), int("FIN" in flags)
        payload = s.len - doff
        end_seq = (seq + syn + fin + payload) & 0xFFFFFFFF
        moved: Text = ""
        iif = s.cb.get("iif") if s.cb_layer == "IPCB" else None
        if iif is not None:
            moved = msg(
                "IPCB starts at cb[0], exactly where TCP_SKB_CB puts seq, so it first memmove()s the IP layer's inet_skb_parm (iif {iif}) into TCP_SKB_CB(skb)->header.h4, further inside cb[]. ",
                iif=iif,
            )
        s.cb_layer = "TCP_SKB_CB"
        s.cb = {
            "seq": seq,
            "end_seq": end_seq,
            "tcp_flags": fbyte,
            "sacked": 0,
        }
        if iif is not None:
            s.cb["header.h4.iif"] = iif
        notes: tuple[Text, ...] = ()
        if payload < 0:
            notes = (
                msg(
                    "len {len} is shorter than the {doff}-byte TCP header; tcp_v4_rcv's pskb_may_pull(doff*4) would have dropped this packet first.",
                    len=s.len,
                    doff=doff,
                ),
            )
        text = msg(
            "tcp_v4_fill_cb: {moved}Then it fills TCP_SKB_CB(skb): seq = {seq}, end_seq = seq + SYN {syn} + FIN {fin} + len {len} − doff*4 {doff} = {end_seq}, tcp_flags = {join} ({fbyte:#04x}), sacked = 0. From here on TCP works with these numbers instead of re-reading the header.",
            moved=moved,
            seq=seq,
            syn=syn,
            fin=fin,
            len=s.len,
            doff=doff,
            end_seq=end_seq,
            join="|".join(flags),
            fbyte=fbyte,
        )
        return self._step(op, s.name, "ok", text, notes=notes)

    def op_tcp_skb_entail(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        seq = op.seq or 0
        s.cb_layer = "TCP_SKB_CB"
        s.cb = {"seq": seq, "end_seq": seq, "tcp_flags": TCPHDR["ACK"], "sacked": 0}
        b = self.buf(s)
        s.nohdr = True
        b.dataref = 1 + (1 << DATAREF_SHIFT) if (b.dataref & DATAREF_MASK) == 1 else b.dataref
        text = msg(
            "tcp_skb_entail stamps TCP_SKB_CB(skb) before any data is copied: seq = end_seq = write_seq = {seq}, tcp_flags = ACK, sacked = 0. It calls __skb_header_release (nohdr, dataref 0x10001) and queues the skb on sk_write_queue, charging its truesize ({truesize}) to sk_wmem_queued. Each copy into the skb advances end_seq by the bytes copied.",
            seq=seq,
            truesize=s.truesize,
        )
        return self._step(op, s.name, "ok", text)

    # -- GSO and checksum offload --------------------------------------------------------------
    def op_tcp_set_skb_tso_segs(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        mss = op.mss or 0
        if s.len <= mss:
            segs, size = 1, 0
            how = msg(
                "len {len} ≤ mss {mss}: one segment, tcp_gso_size = 0 (not GSO)", len=s.len, mss=mss
            )
        else:
            segs, size = -(-s.len // mss), mss
            how = msg(
                "len {len} > mss {mss}: tcp_gso_segs = DIV_ROUND_UP({len}, {mss}) = {segs}, tcp_gso_size = {mss}",
                len=s.len,
                mss=mss,
                segs=segs,
            )
        if s.cb_layer != "TCP_SKB_CB":
            s.cb_layer, s.cb = "TCP_SKB_CB", {}
        s.cb["tcp_gso_segs"] = segs
        s.cb["tcp_gso_size"] = size
        text = msg(
            "tcp_set_skb_tso_segs records in TCP_SKB_CB how many wire segments this skb stands for: {how}. tcp_skb_pcount() reads it for cwnd accounting, and __tcp_transmit_skb copies it into skb_shinfo(skb)->gso_segs / gso_size (with gso_type = sk->sk_gso_type) when it sends the clone.",
            how=how,
        )
        return self._step(op, s.name, "ok", text)

    def op_tcp4_gro_complete(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        b = self.buf(s)
        if s.transport_header is None:
            return self._step(
                op,
                s.name,
                "null",
                msg(
                    "tcp4_gro_complete reads tcp_hdr(skb), but transport_header is unset; in the kernel inet_gro_receive has set it (skb_set_transport_header) by now. Set it first."
                ),
                mark="null",
            )
        count = max(s.gro_count, 1)
        t0 = b.gso_type
        if "SKB_GSO_TCPV4" not in b.gso_type:
            b.gso_type = (*b.gso_type, "SKB_GSO_TCPV4")
        b.gso_segs = count
        s.ip_summed = CHECKSUM_PARTIAL
        s.csum_start = s.transport_header
        s.csum_offset = TCP_CHECK_OFFSET
        s.gro_count = 0
        text = msg(
            "GRO flushes '{name}': napi_gro_complete → inet_gro_complete → tcp4_gro_complete seeds th->check with the pseudo-header sum and ORs SKB_GSO_TCPV4 into gso_type ({join_t0_or_none} → {join}); tcp_gro_complete sets gso_segs = NAPI_GRO_CB(skb)->count = {count} and makes the checksum CHECKSUM_PARTIAL with csum_start = transport header ({csum_start}) and csum_offset = offsetof(struct tcphdr, check) = 16. gso_size stays {gso_size}: the stack now sees one {len}-byte GSO packet that can be cut back into {gso_size}-byte segments (skb_segment) if it is forwarded.",
            name=s.name,
            join_t0_or_none="|".join(t0) or "none",
            join="|".join(b.gso_type),
            count=count,
            csum_start=s.csum_start,
            gso_size=b.gso_size,
            len=s.len,
        )
        return self._step(op, s.name, "ok", text)

    def op_skb_segment(self, op: Op) -> Step:
        head = self.skbs[op.skb]
        hb = self.buf(head)
        mss = hb.gso_size

        def refuse(why: Text) -> Step:
            return self._step(op, head.name, "null", why, mark="null")

        if mss == 0:
            return refuse(
                msg(
                    "skb_segment cuts an skb into gso_size pieces, but '{name}''s skb_shinfo gso_size is 0: it is not a GSO packet.",
                    name=head.name,
                )
            )
        if head.mac_header is None or head.mac_header > head.data:
            return refuse(
                msg(
                    "skb_segment copies the headers from skb_mac_header() up to data, so the mac header must be set and in front of data (skb_reset_mac_header)."
                )
            )
        if hb.frag_list:
            return refuse(
                msg("This skb has a frag_list; segmenting frag_list GSO packets is not modelled.")
            )
        doffset = head.data - head.mac_header
        headroom = head.mac_header
        d0 = head.data
        head.data = head.mac_header  # __skb_push(head_skb, doffset)
        head.len += doffset
        total = head.len
        headlen = head.len - head.data_len
        nseg = -(-(total - doffset) // mss)
        if len(self.skbs) + nseg > MAX_SKBS_SIM:
            head.data, head.len = d0, head.len - doffset
            return refuse(
                msg(
                    "{nseg} segments would exceed the {max_skbs_sim} skbs one scenario may show.",
                    nseg=nseg,
                    max_skbs_sim=MAX_SKBS_SIM,
                )
            )
        names: list[str] = []
        offset, pos, i = doffset, headlen, 0
        frags = hb.frags
        while offset < total:
            ln = min(mss, total - offset)
            hsize = max(0, headlen - offset)
            hsize = min(hsize, ln)
            alloc = kmalloc_reserve(hsize + doffset + headroom)
            if alloc is None:  # bounded by the head, which was allocated
                raise RuntimeError("internal: a segment head larger than its original head")
            name = f"{head.name}_s{len(names) + 1}"
            n = self._new_skb(name, alloc, origin="skb_segment")
            nb = self.buf(n)
            self._copy_header_fields(n, head)
            n.data = headroom
            n.tail = headroom + doffset + hsize
            nb.regions = self._copy_regions(hb.regions, head.mac_header, d0, 0)
            if hsize:
                self._write_region(nb, headroom + doffset, n.tail, "data", "payload")
            while pos < offset + ln and i < len(frags):
                f = frags[i]
                nf = Frag(page=f.page, offset=f.offset, size=f.size)
                self.pages[f.page] += 1
                if pos < offset:
                    nf.offset += offset - pos
                    nf.size -= offset - pos
                if pos + f.size <= offset + ln:
                    i += 1
                    pos += f.size
                    nb.frags.append(nf)
                else:
                    nf.size -= pos + f.size - (offset + ln)
                    nb.frags.append(nf)
                    break
            n.data_len = ln - hsize
            n.len = doffset + hsize + n.data_len
            n.truesize += n.data_len
            names.append(name)
            offset += ln
        shown = join(
            msg(", "),
            (
                msg(
                    "{name} (len {len}, {n} frag(s))",
                    name=m,
                    len=self.skbs[m].len,
                    n=len(self.buf(self.skbs[m]).frags),
                )
                for m in names
            ),
        )
        text = msg(
            "skb_segment (reached from validate_xmit_skb → skb_gso_segment → tcp_gso_segment when the device cannot do TSO) cuts '{name}' into gso_size = {mss}-byte pieces. It pushes data back to the mac header (doffset = {doffset} header bytes), then for each piece allocates a small head (__alloc_skb(hsize + doffset + headroom {headroom})), copies the {doffset} header bytes into it and points frags at the same pages (skb_frag_ref, no payload copy): {shown}. Each segment's truesize counts its own head plus the paged bytes it references. tcp_gso_segment then rewrites every copy's sequence number and checksum, and the caller consume_skb()s the original.",
            name=head.name,
            mss=mss,
            doffset=doffset,
            headroom=headroom,
            shown=shown,
        )
        return self._step(op, head.name, "ok", text, mark="clone")

    def op_skb_partial_csum_set(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        start, off = op.start or 0, op.offset or 0
        csum_end = start + off + 2
        csum_start = s.data + start
        headlen = s.len - s.data_len
        if csum_start >= U16 or csum_end > headlen:
            return self._step(
                op,
                s.name,
                "null",
                msg(
                    "skb_partial_csum_set({start}, {off}): the 2-byte checksum field would end at {csum_end}, past the {headlen} linear bytes (or csum_start {csum_start} does not fit 16 bits). It prints 'bad partial csum' and returns false; nothing changes.",
                    start=start,
                    off=off,
                    csum_end=csum_end,
                    headlen=headlen,
                    csum_start=csum_start,
                ),
                mark="null",
            )
        s.ip_summed = CHECKSUM_PARTIAL
        s.csum_start = csum_start
        s.csum_offset = off
        s.transport_header = csum_start
        text = msg(
            "skb_partial_csum_set({start}, {off}) asks the device to finish a checksum: ip_summed = CHECKSUM_PARTIAL, csum_start = headroom {data} + {start} = {csum_start} (from head), csum_offset = {off}, and transport_header = csum_start. The device sums from csum_start to the end and stores the result at csum_start + csum_offset = {csum_start_off}.",
            start=start,
            off=off,
            data=s.data,
            csum_start=csum_start,
            csum_start_off=csum_start + off,
        )
        return self._step(op, s.name, "ok", text)

    def op_tcp_v4_send_check(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        if s.transport_header is None:
            return self._step(
                op,
                s.name,
                "null",
                msg(
                    "tcp_v4_send_check uses skb_transport_header(), which is unset here; __tcp_transmit_skb calls skb_reset_transport_header right after pushing the TCP header."
                ),
                mark="null",
            )
        s.csum_start = s.transport_header
        s.csum_offset = TCP_CHECK_OFFSET
        state = CHECKSUM_NAMES[s.ip_summed]
        text = msg(
            "tcp_v4_send_check → __tcp_v4_send_check writes the pseudo-header sum into th->check and sets csum_start = transport header − head = {csum_start}, csum_offset = offsetof(struct tcphdr, check) = 16. ip_summed is {state}",
            csum_start=s.csum_start,
            state=state,
        ) + (
            msg(": the NIC (or skb_checksum_help) adds the TCP header and payload to finish it.")
            if s.ip_summed == CHECKSUM_PARTIAL
            else "."
        )
        return self._step(op, s.name, "ok", text)

    def op_igb_rx_checksum(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        before = CHECKSUM_NAMES[s.ip_summed]
        s.ip_summed = CHECKSUM_UNNECESSARY
        text = msg(
            "igb_rx_checksum: the descriptor says the NIC verified the TCP/UDP checksum (E1000_RXD_STAT_TCPCS), so ip_summed {before} → CHECKSUM_UNNECESSARY and the stack will not sum the payload again. On a checksum error bit it would leave CHECKSUM_NONE and let the stack verify (and drop with SKB_DROP_REASON_TCP_CSUM).",
            before=before,
        )
        return self._step(op, s.name, "ok", text)

    # -- queries -------------------------------------------------------------------------------
    def op_skb_headroom(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        return self._step(
            op,
            s.name,
            "ok",
            msg(
                "skb_headroom = data − head = {data} bytes free in front of the data.", data=s.data
            ),
        )

    def op_skb_tailroom(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        if s.data_len:
            text = msg(
                "skb_tailroom is 0: the skb is nonlinear (data_len {data_len}), and bytes appended to the head would land before the paged data. (end − tail would be {s_end_s_tail}.)",
                data_len=s.data_len,
                s_end_s_tail=s.end - s.tail,
            )
        else:
            text = msg(
                "skb_tailroom = end − tail = {end} − {tail} = {s_end_s_tail} bytes.",
                end=s.end,
                tail=s.tail,
                s_end_s_tail=s.end - s.tail,
            )
        return self._step(op, s.name, "ok", text)

    def op_skb_headlen(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        return self._step(
            op,
            s.name,
            "ok",
            msg(
                "skb_headlen = len − data_len = {len} − {data_len} = {s_len_s_data_len} bytes in the linear area (tail − data).",
                len=s.len,
                data_len=s.data_len,
                s_len_s_data_len=s.len - s.data_len,
            ),
        )

    # -- paged data ----------------------------------------------------------------------------
    def _frag_overflow(self, op: Op, s: Skb, fn: str) -> Step:
        """An 18th frag: nothing in skb_fill_page_desc checks the index."""
        b = self.buf(s)
        i = len(b.frags)
        if b.head_frag or b.where.startswith("pages"):
            where = msg(
                "past the end of the head buffer. This head was carved from a page ({where}), not a slab object, so there is no slab redzone behind it and KASAN does not flag the write: it silently overwrites whatever the page holds next, typically another packet's buffer",
                where=b.where,
            )
            bug = f"frags[{i}] written past the head: silent memory corruption (no KASAN report)"
        else:
            where = msg(
                "past the end of the {where} slab object that holds the head, so a KASAN kernel reports a slab-out-of-bounds write; without KASAN it silently corrupts the neighbouring object",
                where=b.where,
            )
            bug = f"BUG: KASAN: slab-out-of-bounds in {fn} (frags[{i}])"
        text = msg(
            "The skb already has MAX_SKB_FRAGS = {max_skb_frags} frags. {fn} → skb_fill_page_desc does not check the index: frags[{i}] would lie just after skb_shared_info's array, which ends exactly at the end of the allocation — {where}. Callers stop before this: skb_gro_receive chains the segment on frag_list instead when its frags would not fit, and tcp_sendmsg_locked starts a new skb once sysctl_max_skb_frags is reached. The simulation treats it as fatal.",
            max_skb_frags=MAX_SKB_FRAGS,
            fn=fn,
            i=i,
            where=where,
        )
        return self._step(op, s.name, "skb_frag_overflow", text, bug=bug)

    def op_skb_add_rx_frag(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        b = self.buf(s)
        size = op.size or 0
        offset = op.offset or 0
        ts = op.truesize if op.truesize is not None else default_frag_truesize(size)
        if len(b.frags) >= MAX_SKB_FRAGS:
            return self._frag_overflow(op, s, "skb_add_rx_frag")
        page = self._next("page")
        self.pages[page] = 1
        b.frags.append(Frag(page=page, offset=offset, size=size))
        l0, dl0, t0 = s.len, s.data_len, s.truesize
        s.len += size
        s.data_len += size
        s.truesize += ts
        ts_why = (
            "given"
            if op.truesize is not None
            else msg("default: half a 4 KiB page, as igb/ixgbe charge")
            if size <= HALF_PAGE_TRUESIZE
            else msg("default: the whole pages it spans")
        )
        text = msg(
            "skb_add_rx_frag attaches {size} bytes at offset {offset} of {page} as frags[{len_b_frags_1}]: nr_frags {len_b_frags_1} → {n_frags}, len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} → {truesize} (+{ts}, {ts_why}). The head is untouched; skb_tailroom is now 0.",
            size=size,
            offset=offset,
            page=page,
            len_b_frags_1=len(b.frags) - 1,
            n_frags=len(b.frags),
            l0=l0,
            len=s.len,
            dl0=dl0,
            data_len=s.data_len,
            t0=t0,
            truesize=s.truesize,
            ts=ts,
            ts_why=ts_why,
        )
        notes: list[Text] = []
        if s.origin == "tcp_stream_alloc_skb":
            notes.append(
                msg(
                    "skb_add_rx_frag is a receive-side helper; on transmit tcp_sendmsg_locked copies into the socket's page frag and uses skb_fill_page_desc (charging truesize by the bytes copied)."
                )
            )
        if self.skb_cloned(s):
            notes.append(
                msg(
                    "The skb_shared_info is shared with a clone, which now sees a frag its len does not count; drivers only add frags to private skbs."
                )
            )
        return self._step(op, s.name, "ok", text, notes=tuple(notes))

    def op_skb_fill_page_desc(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        b = self.buf(s)
        size = op.size or 0
        offset = op.offset or 0
        if len(b.frags) >= MAX_SKB_FRAGS:
            return self._frag_overflow(op, s, "skb_fill_page_desc")
        page = self._next("page")
        self.pages[page] = 1
        i = len(b.frags)
        b.frags.append(Frag(page=page, offset=offset, size=size))
        l0, dl0, t0 = s.len, s.data_len, s.truesize
        s.len += size
        s.data_len += size
        s.truesize += size
        seq_note: Text = ""
        if s.cb_layer == "TCP_SKB_CB" and "end_seq" in s.cb:
            e0 = s.cb["end_seq"]
            s.cb["end_seq"] = (e0 + size) & 0xFFFFFFFF
            seq_note = msg(
                " tcp_sendmsg_locked also advances write_seq and TCP_SKB_CB(skb)->end_seq: {e0} → {s_cb_end_seq}.",
                e0=e0,
                s_cb_end_seq=s.cb["end_seq"],
            )
        text = msg(
            "The transmit path copies {size} bytes of user data into the socket's page frag ({page}, offset {offset}); skb_copy_to_page_nocache accounts them with skb_len_add: len {l0} → {len}, data_len {dl0} → {data_len} and truesize {t0} → {truesize} all grow by the {size} bytes copied. skb_fill_page_desc then records the page as frags[{i}] (nr_frags {i} → {i_1}) and the page gets a reference. The head is untouched; skb_tailroom is now 0.{seq_note}",
            size=size,
            page=page,
            offset=offset,
            l0=l0,
            len=s.len,
            dl0=dl0,
            data_len=s.data_len,
            t0=t0,
            truesize=s.truesize,
            i=i,
            i_1=i + 1,
            seq_note=seq_note,
        )
        notes: tuple[Text, ...] = ()
        if self.skb_cloned(s):
            notes = (
                msg(
                    "The skb_shared_info is shared with a clone, which now sees a frag its len does not count; tcp_sendmsg_locked only appends to skbs not yet sent."
                ),
            )
        return self._step(op, s.name, "ok", text, notes=notes)

    def _gro_too_big(self, op: Op, p: Skb, total: int, what: Text) -> Step:
        return self._step(
            op,
            p.name,
            "null",
            msg(
                "{what} = {total} ≥ 65536: {sources_op_op_function} returns -E2BIG and nothing changes; GRO flushes the held packet up the stack and this segment starts a new one.",
                what=what,
                total=total,
                sources_op_op_function=SOURCES[op.op].function,
            ),
            mark="null",
        )

    def op_skb_gro_receive(self, op: Op) -> Step:
        p = self.skbs[op.skb]
        s = self.skbs[op.src or ""]
        sb = self.buf(s)
        offset = op.offset or 0
        headlen = s.len - s.data_len
        if sb.frag_list:
            return self._step(
                op,
                p.name,
                "null",
                msg(
                    "'{name}' already carries a frag_list; a segment fresh from the driver never does, so this merge is not modelled and nothing changes.",
                    name=s.name,
                ),
                mark="null",
            )
        # never past the segment's own length (a clone made before a frag was added shares
        # that frag in skb_shared_info but does not count it in its len)
        reach = min(s.len, headlen + (sb.frags[0].size if sb.frags else 0))
        if offset > reach:
            return self._step(
                op,
                p.name,
                "null",
                msg(
                    "The GRO header offset {offset} is beyond '{name}''s linear part and first frag ({reach} bytes); headers never extend that far, so nothing is merged.",
                    offset=offset,
                    name=s.name,
                    reach=reach,
                ),
                mark="null",
            )
        seg_len = s.len - offset  # skb_gro_len(): the payload after the parsed headers
        if p.len + seg_len >= GRO_MAX_SIZE:
            return self._gro_too_big(
                op,
                p,
                p.len + seg_len,
                msg(
                    "'{name}' len {len} + skb_gro_len('{name2}') {seg_len}",
                    name=p.name,
                    len=p.len,
                    name2=s.name,
                    seg_len=seg_len,
                ),
            )
        pb = self.buf(p)
        lp = self.skbs[pb.frag_list[-1]] if pb.frag_list else p
        lb = self.buf(lp)
        into = f"'{lp.name}'" + (
            "" if lp is p else msg(" (the last skb on '{name}''s frag_list)", name=p.name)
        )
        how: Text
        freed: Text
        if headlen <= offset and len(lb.frags) + len(sb.frags) <= MAX_SKB_FRAGS:
            eat = offset - headlen
            n0 = len(lb.frags)
            moved = sb.frags
            if moved and eat:
                moved[0].offset += eat
                moved[0].size -= eat
            lb.frags.extend(moved)
            sb.frags = []
            new_ts = s.end + TRUESIZE_OVERHEAD
            delta = s.truesize - new_ts
            s.truesize = new_ts
            s.len -= s.data_len
            s.data_len = 0
            how = (
                msg(
                    "All of '{name}''s headers are in its linear part (headlen {headlen} ≤ offset {offset}), so its {n_moved} page frag(s) move into {into}'s frags[] (nr_frags {n0} → {n_frags}) without copying",
                    name=s.name,
                    headlen=headlen,
                    offset=offset,
                    n_moved=len(moved),
                    into=into,
                    n0=n0,
                    n_frags=len(lb.frags),
                )
                + (msg("; the first is advanced by {eat} header bytes", eat=eat) if eat else "")
                + msg(
                    ". '{name}' keeps only its head: its truesize becomes SKB_TRUESIZE(end) = {new_ts}, and the other {delta} bytes of truesize move with the pages.",
                    name=s.name,
                    new_ts=new_ts,
                    delta=delta,
                )
            )
            freed = (
                msg(
                    " napi_skb_finish then frees the emptied '{name}' and its head (GRO_MERGED_FREE): ",
                    name=s.name,
                )
                + self._release(s, "consumed")
                + msg(".")
            )
        elif (
            headlen > offset
            and sb.head_frag
            and len(lb.frags) + 1 + len(sb.frags) <= MAX_SKB_FRAGS
            and not self.skb_cloned(s)
        ):
            first = headlen - offset
            page = self._next("page")
            self.pages[page] = 1
            n0 = len(lb.frags)
            lb.frags.append(Frag(page=page, offset=s.data + offset, size=first))
            lb.frags.extend(sb.frags)
            nmoved = len(sb.frags)
            sb.frags = []
            delta = s.truesize - SKB_STRUCT
            s.truesize = SKB_STRUCT
            sb.stolen_by = p.name
            sb.freed = True
            sb.dataref = 0
            how = (
                msg(
                    "'{name}''s payload is in its head (headlen {headlen} > offset {offset}) and the head is a page fragment (head_frag), so GRO steals the head: the {first} bytes after the headers become a frag of {into} ({page} = {id}'s page, offset {s_data_offset})",
                    name=s.name,
                    headlen=headlen,
                    offset=offset,
                    first=first,
                    into=into,
                    page=page,
                    id=sb.id,
                    s_data_offset=s.data + offset,
                )
                + (msg(", followed by its {nmoved} frag(s)", nmoved=nmoved) if nmoved else "")
                + msg(
                    " (nr_frags {n0} → {n_frags}). '{name}' keeps truesize SKB_DATA_ALIGN(sizeof(struct sk_buff)) = {skb_struct}; the other {delta} bytes move with the page.",
                    n0=n0,
                    n_frags=len(lb.frags),
                    name=s.name,
                    skb_struct=SKB_STRUCT,
                    delta=delta,
                )
            )
            s.users -= 1
            s.status = "consumed"
            if s.pair is not None:
                self.fclone_refs[s.pair] -= 1
            freed = msg(
                " napi_skb_finish frees only the sk_buff (napi_skb_free_stolen_head): its head lives on inside '{name}'.",
                name=p.name,
            )
        else:
            full = len(lb.frags) + len(sb.frags) + (0 if headlen <= offset else 1)
            why = (
                msg(
                    "{into} already has {n_frags} frags and {full} would exceed MAX_SKB_FRAGS = {max_skb_frags}",
                    into=into,
                    n_frags=len(lb.frags),
                    full=full,
                    max_skb_frags=MAX_SKB_FRAGS,
                )
                if full > MAX_SKB_FRAGS
                else msg(
                    "the payload sits in '{name}''s head, which is not a page fragment (head_frag 0), so it cannot become a frag",
                    name=s.name,
                )
            )
            eat = max(0, offset - headlen)
            if eat and sb.frags:
                sb.frags[0].offset += eat
                sb.frags[0].size -= eat
                s.data_len -= eat
                s.len -= eat
            pull = min(offset, headlen)
            s.data += pull
            s.len -= pull
            delta = s.truesize
            pb.frag_list.append(s.name)
            s.status = "in_frag_list"
            s.owner = p.name
            s.has_sk = False
            s.nohdr = True
            sb.dataref = (
                1 + (1 << DATAREF_SHIFT) if (sb.dataref & DATAREF_MASK) == 1 else sb.dataref
            )
            how = msg(
                "Its frags cannot be merged ({why}), so skb_gro_receive falls back to chaining: it pulls the {offset} header bytes off '{name}', links it on '{name2}''s frag_list (after NAPI_GRO_CB(p)->last), marks its header released and drops its destructor; all of its truesize ({delta}) moves to '{name2}'.",
                why=why,
                offset=offset,
                name=s.name,
                name2=p.name,
                delta=delta,
            )
            freed = msg(
                " '{name}' now belongs to '{name2}' (GRO_MERGED, not freed).",
                name=s.name,
                name2=p.name,
            )
            lp = p
        l0, dl0, t0 = p.len, p.data_len, p.truesize
        held: Text = ""
        if p.gro_count == 0:
            p.gro_count = 1
            pb.gso_size = l0 - offset
            held = msg(
                " (When GRO held '{name}', dev_gro_receive set its gso_size = skb_gro_len = {pb_gso_size}.)",
                name=p.name,
                pb_gso_size=pb.gso_size,
            )
        p.gro_count += 1
        p.len += seg_len
        p.data_len += seg_len
        p.truesize += delta
        if lp is not p:
            lp.len += seg_len
            lp.data_len += seg_len
            lp.truesize += delta
        text = msg(
            "tcp_gro_receive has parsed '{name}''s headers ({offset} bytes, the GRO offset) and found it continues '{name2}''s flow. skb_gro_receive first checks the size: {l0} + {seg_len} < 65536 (gro_ipv4_max_size). {how} '{name2}': len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} → {truesize}; NAPI_GRO_CB(p)->count = {gro_count}.{freed}{held}",
            name=s.name,
            offset=offset,
            name2=p.name,
            l0=l0,
            seg_len=seg_len,
            how=how,
            len=p.len,
            dl0=dl0,
            data_len=p.data_len,
            t0=t0,
            truesize=p.truesize,
            gro_count=p.gro_count,
            freed=freed,
            held=held,
        )
        return self._step(op, p.name, "ok", text)

    def op_skb_gro_receive_list(self, op: Op) -> Step:
        p = self.skbs[op.skb]
        s = self.skbs[op.src or ""]
        off = op.offset or 0
        if p.len + s.len >= GRO_MAX_SIZE:
            return self._gro_too_big(
                op,
                p,
                p.len + s.len,
                msg(
                    "'{name}' len {len} + '{name2}' len {len2} (headers included: the check comes before the pull)",
                    name=p.name,
                    len=p.len,
                    name2=s.name,
                    len2=s.len,
                ),
            )
        if off > s.len - s.data_len:
            return self._step(
                op,
                p.name,
                "null",
                msg(
                    "The GRO header offset {off} is beyond '{name}''s linear part ({s_len_s_data_len} bytes); nothing is merged.",
                    off=off,
                    name=s.name,
                    s_len_s_data_len=s.len - s.data_len,
                ),
                mark="null",
            )
        b = self.buf(p)
        s.data += off
        s.len -= off
        b.frag_list.append(s.name)
        s.status = "in_frag_list"
        s.owner = p.name
        s.has_sk = False
        l0, dl0, t0 = p.len, p.data_len, p.truesize
        p.len += s.len
        p.data_len += s.len
        p.truesize += s.truesize
        pulled = (
            msg(
                " It then pulls the {off}-byte GRO header offset from '{name}'.",
                off=off,
                name=s.name,
            )
            if off
            else ""
        )
        text = msg(
            "UDP fraglist GRO (udp_gro_receive_segment, on a device with NETIF_F_GRO_FRAGLIST; in 6.4 TCP never uses it): skb_gro_receive_list checks {len} + {s_len_off} < 65536 and chains '{name}' onto '{name2}''s frag_list (after NAPI_GRO_CB(p)->last).{pulled} '{name2}' grows by the rest of it: len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} → {truesize}. '{name}' loses its destructor and now belongs to '{name2}'.",
            len=p.len,
            s_len_off=s.len + off,
            name=s.name,
            name2=p.name,
            pulled=pulled,
            l0=l0,
            dl0=dl0,
            data_len=p.data_len,
            t0=t0,
            truesize=p.truesize,
        )
        return self._step(op, p.name, "ok", text)

    # -- references, clones and copies ---------------------------------------------------------
    def op_skb_get(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        s.users += 1
        return self._step(
            op,
            s.name,
            "ok",
            msg(
                "skb_get takes another reference on the sk_buff itself: users {s_users_1} → {users}. Nothing is copied; the skb is now skb_shared(), so it must not be modified in place.",
                s_users_1=s.users - 1,
                users=s.users,
            ),
        )

    def op_skb_set_owner_w(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        s.has_sk = True
        notes: tuple[Text, ...] = ()
        if op.via == "__tcp_transmit_skb":
            notes = (
                msg(
                    "__tcp_transmit_skb does this inline after pushing the TCP header: skb_orphan, skb->sk = sk, destructor = tcp_wfree, and sk_wmem_alloc += truesize."
                ),
            )
        text = msg(
            "skb_set_owner_w charges '{name}' to the sending socket: skb->sk = sk, the destructor (sock_wfree) will give the {truesize} bytes of truesize back to sk_wmem_alloc when the skb is freed. From now on code that reallocates the head (pskb_expand_head, ___pskb_trim) must not change truesize.",
            name=s.name,
            truesize=s.truesize,
        )
        return self._step(op, s.name, "ok", text, notes=notes)

    def op_skb_clone(self, op: Op) -> Step:
        src = self.skbs[op.src or "skb"]
        b = self.buf(src)
        fast = src.fclone == "orig" and src.pair is not None and self.fclone_refs[src.pair] == 1
        n = Skb(
            name=op.skb,
            buffer=src.buffer,
            end=src.end,
            truesize=src.truesize,
            data=src.data,
            tail=src.tail,
            len=src.len,
            data_len=src.data_len,
            origin="skb_clone",
        )
        self._copy_header_fields(n, src)
        if fast:
            if src.pair is None:
                raise RuntimeError("internal: a fast clone without its fclone pair")
            self.fclone_refs[src.pair] = 2
            n.fclone, n.pair = "clone", src.pair
            how = msg(
                "'{name}' is an fclone orig with fclone_ref 1, so the companion sk_buff already allocated next to it is used: no allocation, fclone_ref 1 → 2.",
                name=src.name,
            )
        else:
            n.fclone = "unavailable"
            why = (
                msg("is an fclone orig whose companion is busy (fclone_ref 2)")
                if src.fclone == "orig"
                else msg("has no fclone companion")
            )
            how = msg(
                "'{name}' {why}, so the new sk_buff comes from skbuff_cache (fclone = unavailable).",
                name=src.name,
                why=why,
            )
        src.cloned = True
        n.cloned = True
        d0 = b.dataref & DATAREF_MASK
        b.dataref += 1
        self.skbs[n.name] = n
        hdr: Text = ""
        if src.nohdr:
            hdr = msg(
                " Because '{name}' released its header (nohdr), the clone's hdr_len is its headroom ({data}) and dataref's payload-only count stays at {b_dataref_dataref_shift_dataref}: the clone may write headers.",
                name=src.name,
                data=src.data,
                b_dataref_dataref_shift_dataref=b.dataref >> DATAREF_SHIFT & DATAREF_MASK,
            )
        text = msg(
            "skb_clone makes '{name}' share '{name2}''s head buffer {id} and frags: {how} Both get cloned = 1; dataref {d0} → {b_dataref_dataref_mask}. The clone has users 1 and no socket.{hdr}",
            name=n.name,
            name2=src.name,
            id=b.id,
            how=how,
            d0=d0,
            b_dataref_dataref_mask=b.dataref & DATAREF_MASK,
            hdr=hdr,
        )
        return self._step(op, n.name, "ok", text, mark="clone")

    def op_skb_copy(self, op: Op) -> Step:
        src = self.skbs[op.src or "skb"]
        size = src.end + src.data_len
        alloc = kmalloc_reserve(size)
        if alloc is None:
            return self._step(
                op,
                src.name,
                "null",
                msg(
                    "skb_copy needs a {size}-byte head, beyond KMALLOC_MAX_SIZE; it returns NULL.",
                    size=size,
                ),
                mark="null",
            )
        sb = self.buf(src)
        n = self._new_skb(op.skb, alloc, origin="skb_copy")
        self._copy_header_fields(n, src)
        self._copy_gso(n, src)
        nb = self.buf(n)
        n.data = src.data
        n.tail = src.data + src.len
        n.len = src.len
        nb.regions = self._copy_regions(sb.regions, 0, src.tail, 0)
        if src.data_len:
            self._write_region(nb, src.tail, n.tail, "paged data", "payload")
        text = msg(
            "skb_copy allocates a private, fully linear copy '{name}': end + data_len = {end} + {data_len} = {size}, re-rounded by kmalloc_reserve to {where} ({nbytes} bytes) → end {end2}. It reserves the same headroom ({data}), skb_put()s len {len} and copies headroom and data (paged bytes included). truesize = {truesize}; dataref 1; nothing is shared.",
            name=n.name,
            end=src.end,
            data_len=src.data_len,
            size=size,
            where=alloc.where,
            nbytes=alloc.nbytes,
            end2=n.end,
            data=n.data,
            len=n.len,
            truesize=n.truesize,
        )
        return self._step(op, n.name, "ok", text, mark="clone")

    def op_pskb_copy(self, op: Op) -> Step:
        src = self.skbs[op.src or "skb"]
        headlen = src.len - src.data_len
        size = src.data + headlen
        alloc = kmalloc_reserve(size)
        if alloc is None:
            return self._step(
                op,
                src.name,
                "null",
                msg(
                    "pskb_copy needs a {size}-byte head, beyond KMALLOC_MAX_SIZE; it returns NULL.",
                    size=size,
                ),
                mark="null",
            )
        sb = self.buf(src)
        n = self._new_skb(op.skb, alloc, origin="pskb_copy")
        self._copy_header_fields(n, src)
        self._copy_gso(n, src)
        nb = self.buf(n)
        n.data = src.data
        n.tail = src.data + headlen
        n.len = src.len
        n.data_len = src.data_len
        n.truesize += src.data_len
        nb.regions = self._copy_regions(sb.regions, src.data, src.tail, 0)
        for f in sb.frags:
            nb.frags.append(Frag(page=f.page, offset=f.offset, size=f.size))
            self.pages[f.page] += 1
        for m in sb.frag_list:
            self.skbs[m].users += 1
            nb.frag_list.append(m)
        shared: Text = ""
        if sb.frags:
            shared = msg(
                " Its {n_frags} frag(s) are shared, not copied: each page gets a reference (skb_frag_ref).",
                n_frags=len(sb.frags),
            )
        if sb.frag_list:
            shared += msg(" The frag_list skbs are shared too (skb_clone_fraglist: users + 1).")
        text = msg(
            "pskb_copy gives '{name}' a private head for headroom + headlen = {data} + {headlen} = {size} bytes, re-rounded to {where} ({nbytes} bytes) → end {end}, and copies only the linear data.{shared} len {len}, data_len {data_len}, truesize = end + 576 + data_len = {truesize}.",
            name=n.name,
            data=src.data,
            headlen=headlen,
            size=size,
            where=alloc.where,
            nbytes=alloc.nbytes,
            end=n.end,
            shared=shared,
            len=n.len,
            data_len=n.data_len,
            truesize=n.truesize,
        )
        return self._step(op, n.name, "ok", text, mark="clone")

    def _shared_bug(self, op: Op, s: Skb, why: Text = "") -> Step:
        extra = f" ({why})" if why else ""
        return self._step(
            op,
            s.name,
            "pskb_expand_head_shared",
            msg(
                "pskb_expand_head starts with BUG_ON(skb_shared(skb)): users is {users}, not 1{extra}. Reallocating the head under another holder of this sk_buff would pull the data out from under it, so the kernel stops with 'kernel BUG at net/core/skbuff.c'.",
                users=s.users,
                extra=extra,
            ),
            bug="kernel BUG at net/core/skbuff.c (pskb_expand_head: skb_shared)",
        )

    def _expand(self, s: Skb, nhead: int, ntail: int) -> Expanded:
        """pskb_expand_head's effect. Fails (ok False, skb unchanged) only when the head would
        exceed KMALLOC_MAX_SIZE."""
        osize = s.end
        size = osize + nhead + ntail
        alloc = kmalloc_reserve(size)
        if alloc is None:
            return Expanded(
                ok=False,
                detail=msg(
                    "a {head_align}-byte head exceeds KMALLOC_MAX_SIZE", head_align=head_align(size)
                ),
            )
        old = self.buf(s)
        was_cloned = self.skb_cloned(s)
        new = self._new_buffer(alloc)
        new.regions = self._copy_regions(old.regions, 0, s.tail, nhead)
        new.frags = [Frag(page=f.page, offset=f.offset, size=f.size) for f in old.frags]
        new.frag_list = list(old.frag_list)
        new.gso_size, new.gso_segs, new.gso_type = old.gso_size, old.gso_segs, old.gso_type
        if was_cloned:
            for f in old.frags:
                self.pages[f.page] += 1
            for m in old.frag_list:
                self.skbs[m].users += 1
            s.buffer = new.id
            old_desc = self._drop_data_ref(old, s)
        else:
            old.freed = True
            old.dataref = 0
            old_desc = msg(
                "the old head {old_id} is freed (frags move to the new one)", old_id=old.id
            )
            s.buffer = new.id
        s.data += nhead
        s.tail += nhead
        self._shift_headers(s, nhead)
        s.end = new.end
        s.cloned = False
        s.nohdr = False
        if not s.has_sk:
            s.truesize += new.end - osize
            grow = msg(
                " truesize += {new_end_osize} → {truesize} (no owning socket).",
                new_end_osize=new.end - osize,
                truesize=s.truesize,
            )
        else:
            grow = msg(
                " truesize is unchanged: skb->sk is set, so the skb is charged to a socket and pskb_expand_head leaves truesize alone."
            )
        return Expanded(
            ok=True,
            detail=(
                msg(
                    "new size {osize} + {nhead} + {ntail} = {size} → {where} ({nbytes} bytes), end {osize} → {new_end}, data and tail shift by {nhead}, dataref 1 on {new_id}; {old_desc}.{grow}",
                    osize=osize,
                    nhead=nhead,
                    ntail=ntail,
                    size=size,
                    where=alloc.where,
                    nbytes=alloc.nbytes,
                    new_end=new.end,
                    new_id=new.id,
                    old_desc=old_desc,
                    grow=grow,
                )
            ),
        )

    @staticmethod
    def _shift_headers(s: Skb, off: int) -> None:
        """skb_headers_offset_update: the header offsets move with the data."""
        s.network_header += off
        if s.transport_header is not None:
            s.transport_header += off
        if s.mac_header is not None:
            s.mac_header += off
        if s.ip_summed == CHECKSUM_PARTIAL:
            s.csum_start += off

    @staticmethod
    def _copy_header_fields(n: Skb, src: Skb) -> None:
        """__copy_skb_header: the header offsets (same headroom, so the same values)."""
        n.mac_header = src.mac_header
        n.network_header = src.network_header
        n.transport_header = src.transport_header
        n.cb_layer = src.cb_layer  # the 48 bytes of cb[] are copied too
        n.cb = dict(src.cb)
        n.ip_summed = src.ip_summed
        n.csum_start = src.csum_start
        n.csum_offset = src.csum_offset

    def _copy_gso(self, n: Skb, src: Skb) -> None:
        """skb_copy_header copies skb_shinfo's gso_size, gso_segs and gso_type."""
        nb, sb = self.buf(n), self.buf(src)
        nb.gso_size, nb.gso_segs, nb.gso_type = sb.gso_size, sb.gso_segs, sb.gso_type

    def op_pskb_expand_head(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        if s.users != 1:
            return self._shared_bug(op, s)
        res = self._expand(s, op.nhead or 0, op.ntail or 0)
        if not res.ok:
            return self._step(
                op,
                s.name,
                "null",
                msg(
                    "pskb_expand_head fails with -ENOMEM ({detail}); the skb is unchanged.",
                    detail=res.detail,
                ),
                mark="null",
            )
        return self._step(
            op,
            s.name,
            "ok",
            msg(
                "pskb_expand_head copies head..tail into a new buffer with {op_nhead_or_0} more bytes in front and {op_ntail_or_0} behind: {detail}",
                op_nhead_or_0=op.nhead or 0,
                op_ntail_or_0=op.ntail or 0,
                detail=res.detail,
            ),
        )

    def _room_to_pull(
        self, op: Op, s: Skb, eat: int, no_memory: Callable[[Text], Message]
    ) -> Step | Expanded | None:
        """__pskb_pull_tail's first move: make a shared head private and, when the pulled bytes
        do not fit (``eat > 0``), grow it by eat + 128. None when nothing had to change; a Step
        when the op ends here (a shared skb is a BUG, no memory a NULL); else what
        pskb_expand_head did."""
        if eat <= 0 and not self.skb_cloned(s):
            return None
        if s.users != 1:
            return self._shared_bug(op, s, msg("__pskb_pull_tail must expand the head"))
        res = self._expand(s, 0, eat + 128 if eat > 0 else 0)
        if not res.ok:
            return self._step(op, s.name, "null", no_memory(res.detail), mark="null")
        return res

    def _pull_tail(self, s: Skb, delta: int) -> Text:
        """__pskb_pull_tail's copy, once the head has room and is private: move ``delta`` paged
        bytes (all of them, in every caller modelled here) behind the linear data."""
        b = self.buf(s)
        t0 = s.tail
        self._write_region(b, s.tail, s.tail + delta, "from frags", "payload")
        nfr = len(b.frags)
        for f in b.frags:
            self.pages[f.page] -= 1
        b.frags = []
        members = list(b.frag_list)
        for m in members:
            self._release(self.skbs[m], "consumed")
        b.frag_list = []
        s.tail += delta
        s.data_len = 0
        gone = msg("{nfr} frag page reference(s)", nfr=nfr)
        if members:
            gone += msg(" and the frag_list skb(s) {join} (consume_skb)", join=", ".join(members))
        return msg(
            "tail {t0} → {tail}, data_len {delta} → 0; it releases {gone}",
            t0=t0,
            tail=s.tail,
            delta=delta,
            gone=gone,
        )

    def op_skb_linearize(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        if not s.data_len:
            return self._step(
                op,
                s.name,
                "ok",
                msg("skb_linearize: the skb is already linear (data_len 0); it returns 0."),
            )
        delta = s.data_len
        tail0, end0 = s.tail, s.end
        eat = tail0 + delta - end0
        pre: Text = ""
        room = self._room_to_pull(
            op,
            s,
            eat,
            lambda detail: msg(
                "__pskb_pull_tail cannot grow the head ({detail}); skb_linearize returns -ENOMEM and the skb is unchanged.",
                detail=detail,
            ),
        )
        if isinstance(room, Step):
            return room
        if room is not None:
            if eat > 0:
                pre = msg(
                    "The {delta} paged bytes do not fit: eat = tail {tail0} + {delta} − end {end0} = {eat} > 0, so __pskb_pull_tail calls pskb_expand_head(0, eat + 128 = {ntail}) — 128 spare bytes for later growth: {detail} ",
                    delta=delta,
                    tail0=tail0,
                    end0=end0,
                    eat=eat,
                    ntail=eat + 128,
                    detail=room.detail,
                )
            else:
                pre = msg(
                    "The data is shared with a clone, so it is made private first: {detail} ",
                    detail=room.detail,
                )
        moved = self._pull_tail(s, delta)
        text = msg(
            "{pre}skb_linearize → __pskb_pull_tail(data_len {delta}) copies the paged bytes behind the linear data: {moved}. len stays {len}. truesize is not reduced.",
            pre=pre,
            delta=delta,
            moved=moved,
            len=s.len,
        )
        return self._step(op, s.name, "ok", text)

    def _condense(self, s: Skb) -> Text:
        """skb_condense (net/core/skbuff.c:6656), which ___pskb_trim runs on skbs no socket owns."""
        if s.data_len:
            room = s.end - s.tail
            if s.data_len > room:
                return msg(
                    " skb_condense: the {data_len} paged bytes do not fit the {room} bytes between tail and end, so the frags stay and truesize is unchanged.",
                    data_len=s.data_len,
                    room=room,
                )
            if self.skb_cloned(s):
                return msg(" skb_condense: the head is shared with a clone, so nothing is pulled.")
            moved = self._pull_tail(s, s.data_len)
            pulled: Text = msg(
                "the paged bytes fit the head, so __pskb_pull_tail copies them in ({moved}); ",
                moved=moved,
            )
        else:
            pulled = ""
        t0 = s.truesize
        s.truesize = s.end + TRUESIZE_OVERHEAD
        return msg(
            " No socket owns the skb, so ___pskb_trim ends with skb_condense: {pulled}truesize is re-evaluated as SKB_TRUESIZE(end) = {end} + 576 = {truesize} (was {t0}).",
            pulled=pulled,
            end=s.end,
            truesize=s.truesize,
            t0=t0,
        )

    def op_skb_header_release(self, op: Op) -> Step:
        s = self.skbs[op.skb]
        b = self.buf(s)
        notes: tuple[Text, ...] = ()
        if (b.dataref & DATAREF_MASK) != 1:
            notes = (
                msg(
                    "The data is already shared; __skb_header_release uses atomic_set and would overwrite the count. Callers only use it on a private skb."
                ),
            )
        s.nohdr = True
        b.dataref = 1 + (1 << DATAREF_SHIFT)
        text = msg(
            "__skb_header_release sets nohdr and dataref = 1 + (1 << 16) = 0x10001: this skb now counts only as a payload reference. A clone made from it may push its own headers into the shared headroom, because skb_header_cloned() compares all references (low 16 bits) with payload-only ones (high 16 bits)."
        )
        return self._step(op, s.name, "ok", text, notes=notes)

    # -- freeing -------------------------------------------------------------------------------
    def _drop_data_ref(self, b: Buffer, s: Skb) -> Text:
        """skb_release_data's dataref handling for a cloned skb; frees the head at zero."""
        sub = (1 << DATAREF_SHIFT) + 1 if s.nohdr else 1
        d0 = b.dataref & DATAREF_MASK
        b.dataref -= sub
        if b.dataref & DATAREF_MASK:
            return msg(
                "{id}'s dataref {d0} → {b_dataref_dataref_mask}, still used by another skb",
                id=b.id,
                d0=d0,
                b_dataref_dataref_mask=b.dataref & DATAREF_MASK,
            )
        return msg("{id}'s dataref {d0} → 0: ", id=b.id, d0=d0) + self._free_head(b)

    def _free_head(self, b: Buffer) -> Text:
        b.freed = True
        b.dataref = 0
        parts = [
            msg(
                "head {id} ({nbytes} bytes, {where}) is freed",
                id=b.id,
                nbytes=b.nbytes,
                where=b.where,
            )
        ]
        if b.frags:
            for f in b.frags:
                self.pages[f.page] -= 1
            parts.append(msg("{n_frags} frag page reference(s) dropped", n_frags=len(b.frags)))
        for m in b.frag_list:
            ms = self.skbs[m]
            self._release(ms, ms.status if ms.status in ("dropped", "consumed") else "consumed")
        if b.frag_list:
            parts.append(msg("frag_list {join} released", join=", ".join(b.frag_list)))
        return join(msg(", "), parts)

    def _release(self, s: Skb, how: str) -> Text:
        """Drop one user; on the last, release data and the sk_buff (kfree_skbmem)."""
        s.users -= 1
        if s.users > 0:
            return msg(
                "users {s_users_1} → {users}; someone else still holds '{name}', nothing is freed",
                s_users_1=s.users + 1,
                users=s.users,
                name=s.name,
            )
        s.status = how
        b = self.buf(s)
        if s.cloned:
            data = self._drop_data_ref(b, s)
        else:
            data = self._free_head(b)
        mem: Text = ""
        if s.pair is not None:
            self.fclone_refs[s.pair] -= 1
            ref = self.fclone_refs[s.pair]
            mem = msg("; fclone_ref → {ref}", ref=ref) + (
                msg(", the fclone pair goes back to skbuff_fclone_cache")
                if ref == 0
                else msg(", its companion is free again")
            )
        return msg("users 1 → 0: {data}{mem}", data=data, mem=mem)

    def _free_op(self, op: Op, how: str, reason: str | None = None) -> Step:
        s = self.skbs[op.skb]
        last = s.users == 1
        if how == "dropped":
            reason = reason or "NOT_SPECIFIED"
            if reason == "CONSUMED":
                how = "consumed"
            elif last:
                s.drop_reason = reason
        res = self._release(s, how)
        if op.op == "kfree_skb":
            value = DROP_REASONS.index(reason or "NOT_SPECIFIED") + 1
            name = "SKB_CONSUMED" if reason == "CONSUMED" else f"SKB_DROP_REASON_{reason}"
            call = (
                msg("kfree_skb_reason(skb, {name} = {value})", name=name, value=value)
                if op.reason
                else msg("kfree_skb → kfree_skb_reason(skb, SKB_DROP_REASON_NOT_SPECIFIED = 2)")
            )
            if not last:
                text = msg(
                    "{call}: skb_unref finds other users ({res}), so __kfree_skb_reason returns early: no tracepoint fires and the reason is not recorded anywhere.",
                    call=call,
                    res=res,
                )
            elif reason == "CONSUMED":
                text = msg(
                    "{call}: {res}. With SKB_CONSUMED, __kfree_skb_reason fires skb:consume_skb instead of skb:kfree_skb: this is the normal end of a packet, not a drop.",
                    call=call,
                    res=res,
                )
            else:
                text = msg(
                    "{call}: {res}. It fires the skb:kfree_skb tracepoint with reason {reason}, so drop monitors (dropwatch, perf, `perf trace -e skb:kfree_skb`) count a dropped packet and can say why.",
                    call=call,
                    res=res,
                    reason=reason or "",
                )
        elif not last:
            text = msg(
                "consume_skb: skb_unref finds other users ({res}), so it returns before the tracepoint: nothing is freed or traced yet.",
                res=res,
            )
        else:
            text = msg(
                "consume_skb: {res}. It fires skb:consume_skb instead of skb:kfree_skb: the packet was used normally, so drop monitors ignore it.",
                res=res,
            )
        return self._step(op, s.name, "ok", text, mark="free" if last else None)

    def op_kfree_skb(self, op: Op) -> Step:
        return self._free_op(op, "dropped", op.reason)

    def op_consume_skb(self, op: Op) -> Step:
        return self._free_op(op, "consumed")
