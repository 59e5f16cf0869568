"""IP output and the neighbour layer: from ``ip_finish_output`` to a frame with its link header.

Mirrors net/ipv4/ip_output.c (``ip_finish_output``, ``__ip_finish_output``,
``ip_finish_output2``), include/net/neighbour.h (``neigh_output``, ``neigh_hh_output``: the
cached hardware header) and, on first use, net/core/neighbour.c (``__neigh_event_send``, the
queued skb and ``__neigh_update``), net/ipv4/arp.c (``arp_solicit``, ``arp_process``) and
net/ethernet/eth.c (``eth_header``).
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.dev_tx import dev_queue_xmit_nic
from app.sim.path.skb import ETH_HLEN
from app.sim.path.walk import Walk


def finish_output(w: Walk, skb: str) -> None:
    t = w.t
    t.enter(
        "ip_finish_output",
        msg("ip_finish_output runs the cgroup BPF egress program (none here)."),
        layer="ip",
    )
    gso = w.s.gso[skb][1] > 1
    if gso:
        text = msg(
            "__ip_finish_output: the skb is GSO, so each future segment is checked against "
            "the MTU (skb_gso_validate_network_len), not the skb's length; they fit."
        )
    else:
        text = msg(
            "__ip_finish_output: {len} bytes fit the device MTU; no fragmentation.",
            len=w.s.length(skb),
        )
    t.enter("__ip_finish_output", text, layer="ip")
    t.enter(
        "ip_finish_output2",
        msg(
            "ip_finish_output2 checks headroom for the link header (LL_RESERVED_SPACE, 16 "
            "bytes; {headroom} are free, so no reallocation) and looks up the next hop's "
            "neighbour entry.",
            headroom=w.s.data(skb),
        ),
        layer="neigh",
    )


def neigh_cached(w: Walk, skb: str) -> None:
    t, s = w.t, w.s
    t.leaf(
        "neigh_output",
        msg(
            "neigh_output: the entry is NUD_CONNECTED and has a cached hardware header "
            "(hh_len 14), so the fast path is taken."
        ),
        layer="neigh",
    )
    s.push(skb, ETH_HLEN, "eth")
    t.leaf(
        "neigh_hh_output",
        msg(
            "neigh_hh_output copies the cached Ethernet header (16 bytes, HH_DATA_MOD "
            "aligned) in front of the IP header and __skb_push(14)es it: data now points "
            "at the Ethernet header."
        ),
        layer="neigh",
    )


def neigh_arp(w: Walk, skb: str) -> None:
    t, s = w.t, w.s
    t.leaf(
        "neigh_output",
        msg(
            "neigh_output: the neighbour entry for the gateway was just created "
            "(NUD_NONE) and has no cached header, so it calls n->output, "
            "neigh_resolve_output."
        ),
        layer="neigh",
    )
    t.enter(
        "neigh_resolve_output",
        msg("neigh_resolve_output first asks neigh_event_send whether the address is known."),
        layer="neigh",
    )
    t.leaf(
        "neigh_event_send",
        msg("neigh_event_send (inline): the state is not valid, so __neigh_event_send."),
        layer="neigh",
    )
    t.enter(
        "__neigh_event_send",
        msg(
            "__neigh_event_send moves the entry to NUD_INCOMPLETE, queues our skb on its "
            "arp_queue (up to 64 KiB of skbs wait there) and starts resolution."
        ),
        layer="neigh",
    )
    t.enter(
        "neigh_probe",
        msg("neigh_probe calls the ARP solicit function."),
        layer="neigh",
    )
    t.enter(
        "arp_solicit",
        msg("arp_solicit builds a broadcast request: who has the gateway's address?"),
        layer="neigh",
    )
    t.leaf(
        "arp_send_dst",
        msg(
            "arp_send_dst creates the ARP request skb and sends it with dev_queue_xmit, "
            "like any frame. Our TCP skb is still waiting in arp_queue; tcp_sendmsg "
            "returns to the application as if it had been sent."
        ),
        layer="neigh",
    )
    t.stack = []
    # the reply arrives: softirq
    t.context = "softirq"
    t.stack = [
        "__do_softirq",
        "net_rx_action",
        "__napi_poll",
        "igb_poll",
        "napi_complete_done",
        "gro_normal_list",
        "netif_receive_skb_list_internal",
        "__netif_receive_skb_list",
        "__netif_receive_skb_list_core",
        "__netif_receive_skb_list_ptype",
    ]
    t.enter(
        "arp_rcv",
        msg(
            "The ARP reply arrives through NAPI like any frame. ARP has no list handler, "
            "so __netif_receive_skb_list_ptype calls arp_rcv for it."
        ),
        layer="neigh",
    )
    t.enter(
        "arp_process",
        msg("arp_process sees a reply for our pending entry and calls neigh_update."),
        layer="neigh",
    )
    t.enter(
        "__neigh_update",
        msg(
            "__neigh_update (neigh_update's body) stores the MAC address, moves the entry "
            "to NUD_REACHABLE and sends everything queued in arp_queue through n->output."
        ),
        layer="neigh",
    )
    t.enter(
        "neigh_resolve_output",
        msg(
            "neigh_resolve_output again, now in softirq context on the ARP reply's "
            "stack: the address is known."
        ),
        layer="neigh",
    )
    t.leaf(
        "neigh_hh_init",
        msg(
            "neigh_hh_init fills the header cache (eth_header_cache) so later packets "
            "take neigh_hh_output."
        ),
        layer="neigh",
    )
    t.leaf(
        "dev_hard_header",
        msg("dev_hard_header (inline) calls the device's header_ops->create."),
        layer="neigh",
    )
    s.push(skb, ETH_HLEN, "eth")
    t.leaf(
        "eth_header",
        msg(
            "eth_header skb_push(14)es and writes destination MAC, source MAC and type "
            "0x0800: data now points at the Ethernet header."
        ),
        layer="neigh",
    )
    dev_queue_xmit_nic(w, skb, "eth0")
    t.stack = []
