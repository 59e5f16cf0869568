"""Preset scenarios for the sk_buff explainer, each with a lesson in content/skb-<slug>.md.

Numbers follow the facts sheet: §1.5 for allocation, §2.1 for where skb->data points on RX
and §2.3 for the TCP transmit header pushes (32-byte TCP header with timestamps, 20-byte IP,
14-byte Ethernet, leaving 254 bytes of headroom).
"""

from __future__ import annotations

from typing import Any

from app.sim.core import Preset, msg

MSS = 1448  # 1500-byte MTU minus 20 IP, 32 TCP (with timestamps)


def _tx_headers(skb: str, tcp_via: str) -> list[dict[str, Any]]:
    return [
        {"op": "skb_push", "skb": skb, "len": 32, "label": "TCP", "via": tcp_via},
        {"op": "skb_push", "skb": skb, "len": 20, "label": "IP", "via": "__ip_queue_xmit"},
        {"op": "skb_push", "skb": skb, "len": 14, "label": "eth", "via": "neigh_hh_output"},
    ]


TCP_TRANSMIT: dict[str, Any] = {
    "ops": [
        {"op": "tcp_stream_alloc_skb", "size": 0, "via": "tcp_sendmsg_locked"},
        {"op": "skb_add_rx_frag", "size": MSS, "truesize": MSS, "via": "tcp_sendmsg_locked"},
        {"op": "__skb_header_release", "via": "tcp_skb_entail"},
        {"op": "skb_clone", "from": "skb", "skb": "clone1", "via": "__tcp_transmit_skb"},
        *_tx_headers("clone1", "__tcp_transmit_skb"),
        {"op": "skb_headroom", "skb": "clone1"},
        {"op": "consume_skb", "skb": "clone1", "via": "napi_consume_skb"},
    ]
}

RX_FRAME: dict[str, Any] = {
    "ops": [
        {"op": "napi_alloc_skb", "len": 1514, "via": "igb_clean_rx_irq"},
        {"op": "skb_put", "len": 1514, "label": "frame", "via": "igb_clean_rx_irq"},
        {"op": "skb_pull", "len": 14, "via": "eth_type_trans"},
        {"op": "skb_pull", "len": 20, "via": "ip_local_deliver_finish"},
        {"op": "skb_pull", "len": 32, "via": "tcp_rcv_established"},
        {"op": "skb_headlen"},
        {"op": "consume_skb"},
    ]
}

CLONE_RETRANSMIT: dict[str, Any] = {
    "ops": [
        {"op": "tcp_stream_alloc_skb", "size": 0, "via": "tcp_sendmsg_locked"},
        {"op": "skb_add_rx_frag", "size": MSS, "truesize": MSS, "via": "tcp_sendmsg_locked"},
        {"op": "__skb_header_release", "via": "tcp_skb_entail"},
        {"op": "skb_clone", "from": "skb", "skb": "clone1", "via": "__tcp_transmit_skb"},
        *_tx_headers("clone1", "__tcp_transmit_skb"),
        {"op": "consume_skb", "skb": "clone1", "via": "napi_consume_skb"},
        {"op": "skb_clone", "from": "skb", "skb": "clone2", "via": "__tcp_retransmit_skb"},
        *_tx_headers("clone2", "__tcp_transmit_skb"),
        {"op": "consume_skb", "skb": "clone2", "via": "napi_consume_skb"},
    ]
}

GRO_LINEARIZE: dict[str, Any] = {
    "ops": [
        {"op": "napi_alloc_skb", "len": 256, "via": "igb_construct_skb"},
        {"op": "skb_put", "len": 66, "label": "headers", "via": "igb_construct_skb"},
        {"op": "skb_add_rx_frag", "size": MSS, "offset": 66, "via": "igb_construct_skb"},
        {"op": "skb_add_rx_frag", "size": MSS, "offset": 2048, "via": "skb_gro_receive"},
        {"op": "napi_alloc_skb", "skb": "seg2", "len": 256, "via": "igb_construct_skb"},
        {"op": "skb_put", "skb": "seg2", "len": 66, "label": "headers", "via": "igb_construct_skb"},
        {
            "op": "skb_add_rx_frag",
            "skb": "seg2",
            "size": MSS,
            "offset": 66,
            "via": "igb_construct_skb",
        },
        {
            "op": "skb_gro_receive_list",
            "skb": "skb",
            "from": "seg2",
            "offset": 66,
            "via": "napi_gro_receive",
        },
        {"op": "skb_linearize"},
        {"op": "skb_tailroom"},
        {"op": "consume_skb"},
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
        title=msg("GRO frag_list and skb_linearize"),
        params=GRO_LINEARIZE,
        lesson="skb-gro-linearize",
    ),
    Preset(
        slug="panic",
        title=msg("skb_put past the end: skb_over_panic"),
        params=PANIC,
        lesson="skb-panic",
    ),
)
DEFAULT_PRESET = "tcp-transmit"
