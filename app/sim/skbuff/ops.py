"""Operation schema for the sk_buff explainer: which ops exist, what each takes, and the
frozen :class:`Op`/:class:`SkbParams` a scenario is made of (stdlib only).

A scenario is ``{"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_put", "len": 100}]}``.
Op names are the Linux 6.4 function names they model; :mod:`app.sim.skbuff.params` checks raw
ops against :data:`SPECS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.sim.core.i18n import Message, msg
from app.sim.skbuff.skb import SHINFO

MAX_OPS = 500
# Every frame draws every skb; past a handful the picture stops teaching and pages balloon.
MAX_SKBS = 16
MiB = 1024 * 1024
# KMALLOC_MAX_SIZE on x86-64 6.4 (page allocator, order 10): no head can be larger.
MAX_ALLOC_BYTES = 4 * MiB
# The largest data area whose SKB_HEAD_ALIGN still fits in MAX_ALLOC_BYTES.
MAX_HEAD_DATA = MAX_ALLOC_BYTES - SHINFO
MAX_FIELD = MAX_ALLOC_BYTES
# A frag must live in one page-frag chunk; sk_page_frag() hands out up to 32 KiB compound pages.
MAX_FRAG_SPAN = 32 * 1024
# build_skb()'s frag_size: the head must hold skb_shared_info (320) and at least a cache line.
MIN_BUILD_FRAG = SHINFO + 64
MAX_LABEL = 16
MAX_VIA = 48

NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,15}")
VIA_RE = re.compile(rf"[A-Za-z_][A-Za-z0-9_]{{0,{MAX_VIA - 1}}}")

CREATE, DERIVE, ACT, CHAIN = "create", "derive", "act", "chain"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpSpec:
    """What an op takes: its kind and its integer/str fields (besides skb and via)."""

    kind: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    # The largest value each integer field accepts, with the reason shown to the user.
    limits: tuple[tuple[str, int, Message], ...] = ()


def _alloc_limit(field: str, extra: int, why: Message) -> tuple[tuple[str, int, Message], ...]:
    return ((field, MAX_HEAD_DATA - extra, why),)


# TCP header flag bits in tcp[13] order (include/net/tcp.h TCPHDR_*).
TCP_FLAGS = ("FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR")
U32_MAX = 0xFFFFFFFF
# enum skb_drop_reason in Linux 6.4 (include/net/dropreason-core.h), without the
# SKB_DROP_REASON_ prefix; CONSUMED is SKB_CONSUMED (value 1), the rest follow from 2 in order.
DROP_REASONS: tuple[str, ...] = (
    "CONSUMED",
    *"""NOT_SPECIFIED NO_SOCKET PKT_TOO_SMALL TCP_CSUM SOCKET_FILTER UDP_CSUM NETFILTER_DROP
    OTHERHOST IP_CSUM IP_INHDR IP_RPFILTER UNICAST_IN_L2_MULTICAST XFRM_POLICY IP_NOPROTO
    SOCKET_RCVBUFF PROTO_MEM TCP_MD5NOTFOUND TCP_MD5UNEXPECTED TCP_MD5FAILURE SOCKET_BACKLOG
    TCP_FLAGS TCP_ZEROWINDOW TCP_OLD_DATA TCP_OVERWINDOW TCP_OFOMERGE TCP_RFC7323_PAWS
    TCP_INVALID_SEQUENCE TCP_RESET TCP_INVALID_SYN TCP_CLOSE TCP_FASTOPEN TCP_OLD_ACK
    TCP_TOO_OLD_ACK TCP_ACK_UNSENT_DATA TCP_OFO_QUEUE_PRUNE TCP_OFO_DROP IP_OUTNOROUTES
    BPF_CGROUP_EGRESS IPV6DISABLED NEIGH_CREATEFAIL NEIGH_FAILED NEIGH_QUEUEFULL NEIGH_DEAD
    TC_EGRESS QDISC_DROP CPU_BACKLOG XDP TC_INGRESS UNHANDLED_PROTO SKB_CSUM SKB_GSO_SEG
    SKB_UCOPY_FAULT DEV_HDR DEV_READY FULL_RING NOMEM HDR_TRUNC TAP_FILTER TAP_TXFILTER
    ICMP_CSUM INVALID_PROTO IP_INADDRERRORS IP_INNOROUTES PKT_TOO_BIG DUP_FRAG
    FRAG_REASM_TIMEOUT FRAG_TOO_FAR TCP_MINTTL IPV6_BAD_EXTHDR IPV6_NDISC_FRAG
    IPV6_NDISC_HOP_LIMIT IPV6_NDISC_BAD_CODE IPV6_NDISC_BAD_OPTIONS
    IPV6_NDISC_NS_OTHERHOST""".split(),
)

SPECS: dict[str, OpSpec] = {
    "alloc_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=_alloc_limit(
            "size", 0, msg("the head plus 320 bytes of skb_shared_info must fit 4 MiB")
        ),
    ),
    "alloc_skb_fclone": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=_alloc_limit(
            "size", 0, msg("the head plus 320 bytes of skb_shared_info must fit 4 MiB")
        ),
    ),
    "netdev_alloc_skb": OpSpec(
        kind=CREATE,
        required=("len",),
        limits=_alloc_limit("len", 64, msg("len + NET_SKB_PAD + 320 must fit 4 MiB")),
    ),
    "napi_alloc_skb": OpSpec(
        kind=CREATE,
        required=("len",),
        limits=_alloc_limit("len", 64, msg("len + NET_SKB_PAD + 320 must fit 4 MiB")),
    ),
    "build_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=(
            ("size", MAX_FRAG_SPAN, msg("a receive buffer is at most one 32 KiB page-frag chunk")),
        ),
    ),
    "napi_build_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=(
            ("size", MAX_FRAG_SPAN, msg("a receive buffer is at most one 32 KiB page-frag chunk")),
        ),
    ),
    "tcp_stream_alloc_skb": OpSpec(
        kind=CREATE,
        required=("size",),
        limits=_alloc_limit("size", 320, msg("size + MAX_TCP_HEADER + 320 must fit 4 MiB")),
    ),
    "skb_reserve": OpSpec(kind=ACT, required=("len",)),
    "skb_put": OpSpec(kind=ACT, required=("len",), optional=("label",)),
    "skb_push": OpSpec(kind=ACT, required=("len",), optional=("label",)),
    "skb_pull": OpSpec(kind=ACT, required=("len",)),
    "skb_trim": OpSpec(kind=ACT, required=("len",)),
    "pskb_trim": OpSpec(kind=ACT, required=("len",)),
    "skb_headroom": OpSpec(kind=ACT),
    "skb_tailroom": OpSpec(kind=ACT),
    "skb_headlen": OpSpec(kind=ACT),
    "skb_add_rx_frag": OpSpec(kind=ACT, required=("size",), optional=("offset", "truesize")),
    "skb_fill_page_desc": OpSpec(kind=ACT, required=("size",), optional=("offset",)),
    "skb_gro_receive": OpSpec(kind=CHAIN, required=("from",), optional=("offset",)),
    "skb_gro_receive_list": OpSpec(kind=CHAIN, required=("from",), optional=("offset",)),
    "skb_reset_mac_header": OpSpec(kind=ACT),
    "skb_set_mac_header": OpSpec(kind=ACT, required=("offset",)),
    "skb_reset_network_header": OpSpec(kind=ACT),
    "skb_set_network_header": OpSpec(kind=ACT, required=("offset",)),
    "skb_reset_transport_header": OpSpec(kind=ACT),
    "skb_set_transport_header": OpSpec(kind=ACT, required=("offset",)),
    "pskb_may_pull": OpSpec(kind=ACT, required=("len",)),
    "ip_rcv_core": OpSpec(kind=ACT, optional=("len",)),
    "tcp_v4_fill_cb": OpSpec(
        kind=ACT,
        required=("seq",),
        optional=("len", "flags"),
        limits=(("seq", U32_MAX, msg("a TCP sequence number is 32 bits")),),
    ),
    "tcp_skb_entail": OpSpec(
        kind=ACT,
        required=("seq",),
        limits=(("seq", U32_MAX, msg("a TCP sequence number is 32 bits")),),
    ),
    "tcp_set_skb_tso_segs": OpSpec(
        kind=ACT, required=("mss",), limits=(("mss", 65535, msg("an MSS fits 16 bits")),)
    ),
    "__tcp_transmit_skb": OpSpec(kind=ACT),
    "tcp4_gro_complete": OpSpec(kind=ACT),
    "skb_segment": OpSpec(
        kind=ACT,
        optional=("len",),
        limits=(("len", 60, msg("a TCP header is at most 60 bytes (doff 15)")),),
    ),
    "skb_partial_csum_set": OpSpec(
        kind=ACT,
        required=("start", "offset"),
        limits=(
            ("start", 65535, msg("start is a u16")),
            ("offset", 65535, msg("off is a u16")),
        ),
    ),
    "tcp_v4_send_check": OpSpec(kind=ACT),
    "igb_rx_checksum": OpSpec(kind=ACT),
    "skb_get": OpSpec(kind=ACT),
    "skb_set_owner_w": OpSpec(kind=ACT),
    "skb_clone": OpSpec(kind=DERIVE, optional=("from",)),
    "skb_copy": OpSpec(kind=DERIVE, optional=("from",)),
    "pskb_copy": OpSpec(kind=DERIVE, optional=("from",)),
    "pskb_expand_head": OpSpec(kind=ACT, optional=("nhead", "ntail")),
    "skb_linearize": OpSpec(kind=ACT),
    "msg_zerocopy_realloc": OpSpec(
        kind=ACT,
        required=("size",),
        limits=(("size", 1 << 19, msg("one ubuf_info covers at most 512 KiB (byte_limit)")),),
    ),
    "skb_zerocopy_iter_stream": OpSpec(
        kind=ACT,
        required=("size",),
        optional=("offset",),
        limits=(
            ("size", 65536, msg("one call pins at most 64 KiB here")),
            ("offset", 4095, msg("the offset into the first user page is below 4096")),
        ),
    ),
    "net_zcopy_put": OpSpec(kind=ACT),
    "skb_mark_for_recycle": OpSpec(kind=ACT),
    "skb_dst_set_noref": OpSpec(kind=ACT),
    "skb_dst_force": OpSpec(kind=ACT),
    "skb_dst_drop": OpSpec(kind=ACT),
    "ip_frag_queue": OpSpec(kind=ACT),
    "ip_frag_reasm": OpSpec(kind=CHAIN, required=("from",)),
    "__kfree_skb": OpSpec(kind=ACT),
    "kfree_skb": OpSpec(kind=ACT, optional=("reason",)),
    "consume_skb": OpSpec(kind=ACT),
    "__skb_header_release": OpSpec(kind=ACT),
}

OP_NAMES: tuple[str, ...] = tuple(SPECS)

# skb_set_*_header take a signed int offset relative to data.
SIGNED_OFFSET_OPS = frozenset(
    {"skb_set_mac_header", "skb_set_network_header", "skb_set_transport_header"}
)
CREATORS: tuple[str, ...] = tuple(n for n, s in SPECS.items() if s.kind == CREATE)
INT_FIELDS = ("size", "len", "offset", "truesize", "nhead", "ntail", "seq", "mss", "start")
STR_FIELDS = ("label", "flags", "reason")
DERIVE_PREFIX = {"skb_clone": "clone", "skb_copy": "copy", "pskb_copy": "copy"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """One validated op. ``src`` is the JSON field "from"; unused fields stay None."""

    op: str
    skb: str = "skb"
    src: str | None = None
    size: int | None = None
    len: int | None = None
    offset: int | None = None
    truesize: int | None = None
    nhead: int | None = None
    ntail: int | None = None
    label: str | None = None
    seq: int | None = None  # a TCP sequence number (u32)
    mss: int | None = None
    start: int | None = None  # skb_partial_csum_set's start, relative to data
    flags: str | None = None  # TCP header flags, e.g. "ACK|PSH"
    reason: str | None = None  # a drop reason, e.g. "NO_SOCKET" (enum skb_drop_reason)
    via: str | None = None  # optional caller name shown in the narration, e.g. "eth_type_trans"


@dataclass(frozen=True, slots=True, kw_only=True)
class SkbParams:
    """A whole scenario: the ops in order."""

    ops: tuple[Op, ...]
