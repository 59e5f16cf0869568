"""Preset scenarios for the sk_buff explainer, each with a lesson in content/skb-<slug>.md.

Numbers follow the facts sheet: §1.5 for allocation, §2.1 for where skb->data points on RX
and §2.3 for the TCP transmit header pushes (32-byte TCP header with timestamps, 20-byte IP,
14-byte Ethernet, leaving 254 bytes of headroom).
"""

from __future__ import annotations

from typing import Any

from app.sim.core import Preset, msg

MSS = 1448  # 1500-byte MTU minus 20 IP, 32 TCP (with timestamps)
# igb's default (build_skb) receive path on 4 KiB pages: a half-page (2048-byte) buffer per frame
# (igb_rx_pg_size / 2) with IGB_SKB_PAD = igb_compute_pad(1536) = SKB_WITH_OVERHEAD(2048) - 1536
# = 192 bytes of headroom in front of the frame (drivers/net/ethernet/intel/igb/igb.h).
IGB_HALF_PAGE = 2048
IGB_SKB_PAD = 192
IGB_RX_HDR_LEN = 256  # legacy-rx: napi_alloc_skb(IGB_RX_HDR_LEN) for the headers
FRAME = 1514  # Ethernet 14 + IP 20 + TCP 32 + 1448 payload (FCS stripped by the NIC)
HDRS = 66  # what eth_get_headlen finds for Ethernet + IPv4 + TCP with timestamps
WRITE_SEQ = 1000  # tp->write_seq when the skb is queued (any value; ISNs are random)
RCV_SEQ = 5000  # the received segment's sequence number


def _tx_headers(skb: str, tcp_via: str, *, owner: bool = False) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = [
        {"op": "skb_push", "skb": skb, "len": 32, "label": "TCP", "via": tcp_via},
    ]
    if owner:
        ops.append({"op": "skb_set_owner_w", "skb": skb, "via": "__tcp_transmit_skb"})
    ops += [
        {"op": "skb_push", "skb": skb, "len": 20, "label": "IP", "via": "__ip_queue_xmit"},
        {"op": "skb_push", "skb": skb, "len": 14, "label": "eth", "via": "neigh_hh_output"},
    ]
    return ops


def _tcp_queue_skb() -> list[dict[str, Any]]:
    """tcp_sendmsg_locked: a new skb is entailed (header released) before data is copied in."""
    return [
        {"op": "tcp_stream_alloc_skb", "size": 0, "via": "tcp_sendmsg_locked"},
        {"op": "tcp_skb_entail", "seq": WRITE_SEQ, "via": "tcp_sendmsg_locked"},
        {"op": "skb_fill_page_desc", "size": MSS, "via": "tcp_sendmsg_locked"},
    ]


TCP_TRANSMIT: dict[str, Any] = {
    "ops": [
        *_tcp_queue_skb(),
        {"op": "skb_clone", "from": "skb", "skb": "clone1", "via": "__tcp_transmit_skb"},
        *_tx_headers("clone1", "__tcp_transmit_skb", owner=True),
        {"op": "skb_headroom", "skb": "clone1"},
        {"op": "consume_skb", "skb": "clone1", "via": "napi_consume_skb"},
    ]
}

RX_FRAME: dict[str, Any] = {
    "ops": [
        {"op": "napi_build_skb", "size": IGB_HALF_PAGE, "via": "igb_build_skb"},
        {"op": "skb_reserve", "len": IGB_SKB_PAD, "via": "igb_build_skb"},
        {"op": "skb_put", "len": FRAME, "label": "frame", "via": "igb_build_skb"},
        {"op": "skb_pull", "len": 14, "via": "eth_type_trans"},
        {"op": "skb_pull", "len": 20, "via": "ip_local_deliver_finish"},
        {"op": "skb_pull", "len": 32, "via": "tcp_rcv_established"},
        {"op": "skb_headlen"},
        {"op": "consume_skb"},
    ]
}

CLONE_RETRANSMIT: dict[str, Any] = {
    "ops": [
        *_tcp_queue_skb(),
        {"op": "skb_clone", "from": "skb", "skb": "clone1", "via": "__tcp_transmit_skb"},
        *_tx_headers("clone1", "__tcp_transmit_skb"),
        {"op": "consume_skb", "skb": "clone1", "via": "napi_consume_skb"},
        {"op": "skb_clone", "from": "skb", "skb": "clone2", "via": "__tcp_retransmit_skb"},
        *_tx_headers("clone2", "__tcp_transmit_skb"),
        {"op": "consume_skb", "skb": "clone2", "via": "napi_consume_skb"},
    ]
}


def _legacy_rx(skb: str, frag_offset: int) -> list[dict[str, Any]]:
    """igb legacy-rx (igb_construct_skb): headers copied into a small head, payload left as a
    half-page frag; then eth_type_trans pulls the Ethernet header before GRO."""
    return [
        {"op": "napi_alloc_skb", "skb": skb, "len": IGB_RX_HDR_LEN, "via": "igb_construct_skb"},
        {"op": "skb_put", "skb": skb, "len": HDRS, "label": "headers", "via": "igb_construct_skb"},
        {
            "op": "skb_add_rx_frag",
            "skb": skb,
            "size": MSS,
            "offset": frag_offset,
            "via": "igb_construct_skb",
        },
        {"op": "skb_pull", "skb": skb, "len": 14, "via": "eth_type_trans"},
    ]


GRO_LINEARIZE: dict[str, Any] = {
    "ops": [
        *_legacy_rx("skb", HDRS),
        *_legacy_rx("seg2", IGB_HALF_PAGE + HDRS),
        {
            "op": "skb_gro_receive",
            "skb": "skb",
            "from": "seg2",
            "offset": HDRS - 14,
            "via": "tcp_gro_receive",
        },
        {"op": "skb_linearize"},
        {"op": "skb_tailroom"},
        {"op": "consume_skb"},
    ]
}

RX_HEADERS: dict[str, Any] = {
    "ops": [
        {"op": "napi_build_skb", "size": IGB_HALF_PAGE, "via": "igb_build_skb"},
        {"op": "skb_reserve", "len": IGB_SKB_PAD, "via": "igb_build_skb"},
        {"op": "skb_put", "len": FRAME, "label": "frame", "via": "igb_build_skb"},
        {"op": "igb_rx_checksum", "via": "igb_process_skb_fields"},
        {"op": "skb_reset_mac_header", "via": "eth_type_trans"},
        {"op": "skb_pull", "len": 14, "via": "eth_type_trans"},
        {"op": "skb_reset_network_header", "via": "__netif_receive_skb_core"},
        {"op": "ip_rcv_core", "len": 20, "via": "ip_rcv"},
        {"op": "skb_pull", "len": 20, "via": "ip_local_deliver_finish"},
        {
            "op": "tcp_v4_fill_cb",
            "seq": RCV_SEQ,
            "len": 32,
            "flags": "ACK|PSH",
            "via": "tcp_v4_rcv",
        },
        {"op": "skb_pull", "len": 32, "via": "tcp_data_queue"},
        {"op": "kfree_skb", "reason": "TCP_OLD_DATA", "via": "tcp_drop_reason"},
    ]
}

GSO_SEGS = 3  # one skb carrying three MSS of payload (tcp_sendmsg_locked's size_goal allows it)
GSO_TRANSMIT: dict[str, Any] = {
    "ops": [
        {"op": "tcp_stream_alloc_skb", "size": 0, "via": "tcp_sendmsg_locked"},
        {"op": "tcp_skb_entail", "seq": WRITE_SEQ, "via": "tcp_sendmsg_locked"},
        {"op": "skb_fill_page_desc", "size": GSO_SEGS * MSS, "via": "tcp_sendmsg_locked"},
        {"op": "tcp_set_skb_tso_segs", "mss": MSS},
        {"op": "skb_clone", "from": "skb", "skb": "clone1", "via": "__tcp_transmit_skb"},
        {"op": "skb_push", "skb": "clone1", "len": 32, "label": "TCP", "via": "__tcp_transmit_skb"},
        {"op": "skb_reset_transport_header", "skb": "clone1", "via": "__tcp_transmit_skb"},
        {"op": "tcp_v4_send_check", "skb": "clone1", "via": "__tcp_transmit_skb"},
        {"op": "__tcp_transmit_skb", "skb": "clone1"},
        {"op": "skb_push", "skb": "clone1", "len": 20, "label": "IP", "via": "__ip_queue_xmit"},
        {"op": "skb_reset_network_header", "skb": "clone1", "via": "__ip_queue_xmit"},
        {"op": "skb_push", "skb": "clone1", "len": 14, "label": "eth", "via": "neigh_hh_output"},
        {"op": "skb_reset_mac_header", "skb": "clone1", "via": "__dev_queue_xmit"},
        {"op": "skb_segment", "skb": "clone1", "via": "validate_xmit_skb"},
        {"op": "consume_skb", "skb": "clone1", "via": "validate_xmit_skb"},
    ]
}

UDP_FRAME = 1242  # Ethernet 14 + IP 20 + UDP 8 + 1200 bytes of datagram


def _udp_rx(skb: str) -> list[dict[str, Any]]:
    """igb_build_skb around one received UDP frame, then eth_type_trans."""
    return [
        {"op": "napi_build_skb", "skb": skb, "size": IGB_HALF_PAGE, "via": "igb_build_skb"},
        {"op": "skb_reserve", "skb": skb, "len": IGB_SKB_PAD, "via": "igb_build_skb"},
        {"op": "skb_put", "skb": skb, "len": UDP_FRAME, "label": "frame", "via": "igb_build_skb"},
        {"op": "skb_pull", "skb": skb, "len": 14, "via": "eth_type_trans"},
    ]


DROP_VS_CONSUME: dict[str, Any] = {
    "ops": [
        *_udp_rx("skb"),
        *_udp_rx("seg2"),
        {
            "op": "skb_gro_receive_list",
            "skb": "skb",
            "from": "seg2",
            "offset": 28,
            "via": "udp_gro_receive_segment",
        },
        {"op": "skb_clone", "from": "skb", "skb": "clone1"},
        {"op": "kfree_skb", "skb": "skb", "reason": "NETFILTER_DROP"},
        {"op": "consume_skb", "skb": "clone1"},
    ]
}


def _gro_rx(skb: str, frag_offset: int) -> list[dict[str, Any]]:
    """igb legacy-rx with the checksum the NIC verified, then the headers GRO records."""
    rx = _legacy_rx(skb, frag_offset)
    return [
        *rx[:3],
        {"op": "igb_rx_checksum", "skb": skb, "via": "igb_process_skb_fields"},
        rx[3],
    ]


GRO_FORWARD: dict[str, Any] = {
    "ops": [
        *_gro_rx("skb", HDRS),
        {"op": "skb_reset_network_header", "via": "dev_gro_receive"},
        {"op": "skb_set_transport_header", "offset": 20},  # inet_gro_receive
        *_gro_rx("seg2", IGB_HALF_PAGE + HDRS),
        {
            "op": "skb_gro_receive",
            "skb": "skb",
            "from": "seg2",
            "offset": HDRS - 14,
            "via": "tcp_gro_receive",
        },
        {"op": "tcp4_gro_complete"},
        {"op": "skb_push", "len": 14, "label": "eth", "via": "neigh_hh_output"},
        {"op": "skb_reset_mac_header", "via": "__dev_queue_xmit"},
        {"op": "skb_segment", "via": "validate_xmit_skb"},
        {"op": "consume_skb", "via": "validate_xmit_skb"},
    ]
}

ZEROCOPY_SEND: dict[str, Any] = {
    "ops": [
        {"op": "tcp_stream_alloc_skb", "size": 0, "via": "tcp_sendmsg_locked"},
        {"op": "tcp_skb_entail", "seq": WRITE_SEQ, "via": "tcp_sendmsg_locked"},
        {"op": "msg_zerocopy_realloc", "size": MSS, "via": "tcp_sendmsg_locked"},
        {"op": "skb_zerocopy_iter_stream", "size": MSS, "offset": 0, "via": "tcp_sendmsg_locked"},
        {"op": "skb_clone", "from": "skb", "skb": "clone1", "via": "__tcp_transmit_skb"},
        *_tx_headers("clone1", "__tcp_transmit_skb", owner=True),
        {"op": "net_zcopy_put", "via": "tcp_sendmsg_locked"},
        {"op": "consume_skb", "skb": "clone1", "via": "napi_consume_skb"},
        {"op": "__kfree_skb", "via": "tcp_clean_rtx_queue"},
    ]
}

# A 2000-byte UDP datagram sent over veth with MTU 1500 (the check in content/skb-kernel-check.md):
# ip_do_fragment sends a 1500-byte fragment (IP 20 + UDP 8 + 1472) from an alloc_skb(1531)
# head and a 548-byte one (IP 20 + 528) from alloc_skb(579), each with LL_RESERVED_SPACE = 16
# bytes of headroom; the veth peer receives the sender's skbs themselves.
FRAG_SIZES = ((1531, 1500), (579, 548))


def _fragment(name: str, alloc: int, size: int) -> list[dict[str, Any]]:
    return [
        {"op": "alloc_skb", "skb": name, "size": alloc},
        {"op": "skb_reserve", "skb": name, "len": 16},
        {"op": "skb_put", "skb": name, "len": size, "label": "IP fragment"},
        {"op": "skb_reset_network_header", "skb": name, "via": "__netif_receive_skb_core"},
        {"op": "skb_dst_set_noref", "skb": name, "via": "ip_route_input_slow"},
    ]


IP_DEFRAG: dict[str, Any] = {
    "ops": [
        *_fragment("frag1", *FRAG_SIZES[0]),
        {"op": "ip_frag_queue", "skb": "frag1", "via": "ip_defrag"},
        *_fragment("frag2", *FRAG_SIZES[1]),
        {"op": "ip_frag_reasm", "skb": "frag2", "from": "frag1", "via": "ip_frag_queue"},
        {"op": "skb_pull", "skb": "frag2", "len": 20, "via": "ip_local_deliver_finish"},
        {"op": "skb_dst_drop", "skb": "frag2", "via": "ipv4_pktinfo_prepare"},
        {"op": "consume_skb", "skb": "frag2"},
    ]
}

# A page_pool driver with XDP support: one whole 4 KiB pool page per frame, XDP_PACKET_HEADROOM
# (256) in front of it.
PAGE_POOL_RX: dict[str, Any] = {
    "ops": [
        {"op": "napi_build_skb", "size": 4096},
        {"op": "skb_reserve", "len": 256},
        {"op": "skb_put", "len": FRAME, "label": "frame"},
        {"op": "skb_mark_for_recycle"},
        {"op": "skb_pull", "len": 14, "via": "eth_type_trans"},
        {"op": "skb_clone", "from": "skb", "skb": "clone1"},
        {"op": "consume_skb", "skb": "skb"},
        {"op": "consume_skb", "skb": "clone1"},
    ]
}

PANIC: dict[str, Any] = {
    "ops": [
        {"op": "alloc_skb", "size": 1500},
        {"op": "skb_reserve", "len": 64},
        {"op": "skb_put", "len": 1500, "label": "payload"},
        {"op": "skb_tailroom"},
        {"op": "skb_put", "len": 200, "label": "trailer"},
    ]
}

PRESETS: tuple[Preset, ...] = (
    Preset(
        slug="tcp-transmit",
        title=msg("A TCP segment on its way out"),
        params=TCP_TRANSMIT,
        lesson="skb-tcp-transmit",
    ),
    Preset(
        slug="rx-frame",
        title=msg("Receiving a frame: pulling headers off"),
        params=RX_FRAME,
        lesson="skb-rx-frame",
    ),
    Preset(
        slug="clone-retransmit",
        title=msg("Clones for transmit and retransmit"),
        params=CLONE_RETRANSMIT,
        lesson="skb-clone-retransmit",
    ),
    Preset(
        slug="gro-linearize",
        title=msg("TCP GRO merges frags, then skb_linearize"),
        params=GRO_LINEARIZE,
        lesson="skb-gro-linearize",
    ),
    Preset(
        slug="rx-headers",
        title=msg("Header offsets, cb[] and a drop reason on receive"),
        params=RX_HEADERS,
        lesson="skb-rx-headers",
    ),
    Preset(
        slug="gso-transmit",
        title=msg("TSO or GSO: one skb, three segments"),
        params=GSO_TRANSMIT,
        lesson="skb-gso-transmit",
    ),
    Preset(
        slug="drop-vs-consume",
        title=msg("kfree_skb_reason or consume_skb: who frees the frag_list"),
        params=DROP_VS_CONSUME,
        lesson="skb-drop-vs-consume",
    ),
    Preset(
        slug="gro-forward",
        title=msg("Forwarding a GRO packet: checksum states and skb_segment"),
        params=GRO_FORWARD,
        lesson="skb-gro-forward",
    ),
    Preset(
        slug="zerocopy-send",
        title=msg("MSG_ZEROCOPY: the user's pages on the wire, and when they are free again"),
        params=ZEROCOPY_SEND,
        lesson="skb-zerocopy-send",
    ),
    Preset(
        slug="ip-defrag",
        title=msg("IP reassembly: a borrowed route and a frag_list"),
        params=IP_DEFRAG,
        lesson="skb-ip-defrag",
    ),
    Preset(
        slug="page-pool-rx",
        title=msg("page_pool: the last skb to let go recycles the page"),
        params=PAGE_POOL_RX,
        lesson="skb-page-pool-rx",
    ),
    Preset(
        slug="panic",
        title=msg("skb_put past the end: skb_over_panic"),
        params=PANIC,
        lesson="skb-panic",
    ),
)
DEFAULT_PRESET = "tcp-transmit"
