"""IP input and forwarding: from the core receive functions to TCP, or back out of a NIC.

Mirrors net/core/dev.c (``netif_receive_skb_list_internal``, ``__netif_receive_skb_list_core``,
``__netif_receive_skb_one_core``, ``__netif_receive_skb_core``), net/ipv4/ip_input.c
(``ip_list_rcv``, ``ip_rcv``, ``ip_rcv_core``, ``ip_rcv_finish_core``, ``ip_local_deliver``,
``ip_local_deliver_finish``), net/ipv4/route.c (``ip_route_input_noref``, the route cache),
include/net/dst.h (``dst_input``), the early demux in net/ipv4/tcp_ipv4.c, and
net/ipv4/ip_forward.c (``ip_forward``, ``ip_forward_finish``) with include/net/ip.h
(``ip_decrease_ttl``) and include/net/icmp.h (``icmp_send`` for an expired TTL).
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.dev_tx import dev_queue_xmit_nic
from app.sim.path.ip_output import finish_output, neigh_cached
from app.sim.path.skb import IP_HLEN
from app.sim.path.tcp_rcv import tcp_rcv
from app.sim.path.walk import Seg, Walk


def deliver_list(w: Walk, batch: list[Seg]) -> None:
    t, s = w.t, w.s
    base = len(t.stack)
    t.enter(
        "netif_receive_skb_list_internal",
        msg("netif_receive_skb_list_internal: RPS is off, so the whole list stays on this CPU."),
        layer="core",
    )
    t.enter(
        "__netif_receive_skb_list",
        msg("__netif_receive_skb_list: none is pfmemalloc; one sublist."),
        layer="core",
    )
    t.enter(
        "__netif_receive_skb_list_core",
        msg(
            "__netif_receive_skb_list_core runs __netif_receive_skb_core on each skb and "
            "groups them by protocol handler."
        ),
        layer="core",
    )
    for seg in batch:
        t.cur = seg.skb
        t.packet = seg.index
        s.set_header(seg.skb, "network")
        t.leaf(
            "__netif_receive_skb_core",
            msg(
                "__netif_receive_skb_core: network_header reset to data (the IP header). "
                "No packet taps, no tc ingress, no rx_handler on {dev}; ETH_P_IP → "
                "ip_list_rcv.",
                dev=t.dev or "eth0",
            ),
            layer="core",
        )
    t.enter(
        "__netif_receive_skb_list_ptype",
        msg("__netif_receive_skb_list_ptype calls IPv4's list handler, ip_list_rcv."),
        layer="core",
    )
    t.enter(
        "ip_list_rcv",
        msg(
            "ip_list_rcv, the list form of ip_rcv: ip_rcv_core on each skb, then one "
            "PRE_ROUTING pass for the sublist."
        ),
        layer="ip",
    )
    alive: list[Seg] = []
    for seg in batch:
        t.cur = seg.skb
        t.packet = seg.index
        if w.p.drop == "checksum" and seg.index == 0 and w.p.device == "nic":
            t.enter(
                "ip_rcv_core",
                msg(
                    "ip_rcv_core recomputes the IPv4 header checksum: it does not match, "
                    "so the packet is dropped (IPSTATS InCsumErrors)."
                ),
                layer="ip",
                mark="csum",
            )
            w.drop("IP_CSUM")
            t.leave()
            continue
        s.set_header(seg.skb, "transport", s.data(seg.skb) + IP_HLEN)
        t.leaf(
            "ip_rcv_core",
            msg(
                "ip_rcv_core checks version and ihl (pskb_may_pull for the header) and "
                "always recomputes the IPv4 header checksum with ip_fast_csum: the NIC's "
                "CHECKSUM_UNNECESSARY covers only TCP's checksum. It trims link padding to "
                "tot_len, sets transport_header = network_header + 20 and calls skb_orphan, "
                "which finds no owner: a received frame belongs to no socket yet. data "
                "still points at the IP header."
            ),
            layer="ip",
        )
        alive.append(seg)
    if not alive:
        t.unwind(base)
        return
    t.enter(
        "ip_sublist_rcv",
        msg("ip_sublist_rcv runs PRE_ROUTING over the sublist."),
        layer="ip",
    )
    kept: list[Seg] = []
    for seg in alive:
        t.cur = seg.skb
        t.packet = seg.index
        if w.hook("PRE_ROUTING", "NF_HOOK_LIST"):
            kept.append(seg)
    if kept:
        t.enter(
            "ip_list_rcv_finish",
            msg("ip_list_rcv_finish routes each skb and groups them by route."),
            layer="ip",
        )
        for seg in kept:
            t.cur = seg.skb
            t.packet = seg.index
            route(w)
        t.enter(
            "ip_sublist_rcv_finish",
            msg("ip_sublist_rcv_finish calls dst_input on each skb in turn."),
            layer="ip",
        )
        d = len(t.stack)
        for seg in kept:
            t.cur = seg.skb
            t.packet = seg.index
            dst_input(w, seg)
            t.unwind(d)
    t.unwind(base)


def deliver_one(w: Walk, seg: Seg, dev: str | None = None) -> None:
    """__netif_receive_skb down to ip_rcv and TCP, one skb (no list, no GRO)."""
    t, s = w.t, w.s
    t.enter(
        "__netif_receive_skb",
        msg("__netif_receive_skb → __netif_receive_skb_one_core (not a pfmemalloc skb)."),
        layer="core",
    )
    t.enter(
        "__netif_receive_skb_one_core",
        msg("__netif_receive_skb_one_core calls the core, then the protocol's func."),
        layer="core",
    )
    s.set_header(seg.skb, "network")
    t.leaf(
        "__netif_receive_skb_core",
        msg(
            "__netif_receive_skb_core on {dev}: network_header reset to data (IP header); "
            "no taps, no tc ingress, no rx_handler; ETH_P_IP → ip_rcv.",
            dev=dev or t.dev or "lo",
        ),
        layer="core",
    )
    s.set_header(seg.skb, "transport", s.data(seg.skb) + IP_HLEN)
    t.enter(
        "ip_rcv",
        msg(
            "ip_rcv → ip_rcv_core checks the header and sets transport_header = "
            "network_header + 20 (data still at the IP header), then PRE_ROUTING."
        ),
        layer="ip",
    )
    owner = s.orphan(seg.skb)
    if owner is not None:
        text = msg(
            "ip_rcv_core: version 4, ihl 5, and the IPv4 header checksum recomputed with "
            "ip_fast_csum: ok. Only the TCP checksum is skipped (CHECKSUM_PARTIAL from the "
            "sender); the IP header checksum always runs. Then skb_orphan: the skb still "
            "belonged to the sender's socket, so {destructor} runs now and gives its "
            "truesize back to that socket's sk_wmem_alloc.",
            destructor=owner[1],
        )
    else:
        text = msg(
            "ip_rcv_core: version 4, ihl 5, and the IPv4 header checksum recomputed with "
            "ip_fast_csum: ok. Only the TCP checksum is skipped (CHECKSUM_PARTIAL from the "
            "sender); the IP header checksum always runs. skb_orphan finds no owner: "
            "loopback_xmit already orphaned the skb."
        )
    t.leaf("ip_rcv_core", text, layer="ip")
    if not w.hook("PRE_ROUTING", "NF_HOOK"):
        return
    t.enter(
        "ip_rcv_finish",
        msg("ip_rcv_finish: l3mdev hook, then ip_rcv_finish_core and dst_input."),
        layer="ip",
    )
    route(w)
    dst_input(w, seg)


def route(w: Walk) -> None:
    """ip_rcv_finish_core: early demux, else a route lookup (a drop for want of a route
    happens later, in ip_error)."""
    t = w.t
    if w.p.drop == "no_socket":
        t.enter(
            "ip_rcv_finish_core",
            msg(
                "ip_rcv_finish_core: early demux finds no socket for the 4-tuple, so "
                "ip_route_input_noref looks the route up: the destination is a local "
                "address (RTN_LOCAL), input function ip_local_deliver."
            ),
            layer="ip",
        )
        t.leaf(
            "ip_route_input_noref",
            msg("ip_route_input_noref: a local route, found in the local table."),
            layer="route",
        )
        t.leave()
        return
    if w.p.path == "forward":
        t.enter(
            "ip_rcv_finish_core",
            msg(
                "ip_rcv_finish_core: early demux finds no local socket for this "
                "destination, so the route is looked up."
            ),
            layer="ip",
        )
        if w.p.drop == "no_route":
            t.leaf(
                "ip_route_input_noref",
                msg(
                    "ip_route_input_noref → ip_route_input_slow: the FIB has no route to "
                    "the destination (no default route). It still returns a route: "
                    "RTN_UNREACHABLE, whose input function is ip_error."
                ),
                layer="route",
            )
        else:
            t.leaf(
                "ip_route_input_noref",
                msg(
                    "ip_route_input_noref: the destination is not local and forwarding is "
                    "on, so the route's input function is ip_forward, out through eth1."
                ),
                layer="route",
            )
        t.leave()
        return
    t.enter(
        "ip_rcv_finish_core",
        msg(
            "ip_rcv_finish_core: early demux (tcp_v4_early_demux) finds the established "
            "socket by its 4-tuple and attaches it and its cached input route to the "
            "skb, so no FIB lookup is needed."
        ),
        layer="ip",
    )
    if t.cur is not None:
        w.s.set_owner(t.cur, "receiver", "sock_edemux")
    t.leaf(
        "tcp_v4_early_demux",
        msg(
            "tcp_v4_early_demux: socket found; skb->sk = the receiving socket with "
            "destructor sock_edemux (a reference, not a memory charge); sk_rx_dst reused."
        ),
        layer="tcp",
    )
    t.leave()


def dst_input(w: Walk, seg: Seg) -> None:
    t = w.t
    t.leaf(
        "dst_input",
        msg("dst_input (inline) calls the route's input function."),
        layer="ip",
    )
    if w.p.path == "forward":
        if w.p.drop == "no_route":
            t.enter(
                "ip_error",
                msg(
                    "ip_error: the route's error is ENETUNREACH. Forwarding is on, so it "
                    "sends ICMP network unreachable to the sender (rate-limited per "
                    "peer) and drops the packet."
                ),
                layer="ip",
            )
            w.drop("IP_INNOROUTES")
            t.leave()
            return
        forward(w, seg)
        return
    local_deliver(w, seg)


def local_deliver(w: Walk, seg: Seg) -> None:
    t, s = w.t, w.s
    t.enter(
        "ip_local_deliver",
        msg(
            "ip_local_deliver: the packet is for this host and not a fragment, so no "
            "reassembly. LOCAL_IN comes next."
        ),
        layer="ip",
    )
    if not w.hook("LOCAL_IN", "NF_HOOK"):
        return
    s.pull(seg.skb, IP_HLEN)
    t.enter(
        "ip_local_deliver_finish",
        msg(
            "ip_local_deliver_finish: __skb_pull(20) moves data past the IP header: data "
            "now points at the TCP header, len {len}.",
            len=s.length(seg.skb),
        ),
        layer="ip",
    )
    t.enter(
        "ip_protocol_deliver_rcu",
        msg("ip_protocol_deliver_rcu: protocol 6 → tcp_v4_rcv."),
        layer="ip",
    )
    tcp_rcv(w, seg)


def forward(w: Walk, seg: Seg) -> None:
    t, s = w.t, w.s
    ttl = 1 if w.p.drop == "ttl" else 64
    if ttl <= 1:
        t.enter(
            "ip_forward",
            msg(
                "ip_forward: pkt_type is PACKET_HOST and no socket owns the skb, but the "
                "TTL is 1: forwarding would make it 0."
            ),
            layer="ip",
            mark="ttl",
        )
        t.leaf(
            "icmp_send",
            msg(
                "icmp_send (inline __icmp_send) answers with ICMP time exceeded (this is "
                "what traceroute listens for)."
            ),
            layer="ip",
        )
        w.drop("IP_INHDR")
        return
    t.enter(
        "ip_forward",
        msg(
            "ip_forward: pkt_type is PACKET_HOST, TTL 64 > 1, and the packet fits the "
            "outgoing MTU (a GRO packet is checked per segment). skb_cow makes sure the "
            "header is private with 16 bytes of link headroom ({h} free).",
            h=s.data(seg.skb),
        ),
        layer="ip",
    )
    t.leaf(
        "ip_decrease_ttl",
        msg(
            "ip_decrease_ttl: TTL 64 → 63, and the IP checksum is patched incrementally "
            "instead of being recomputed."
        ),
        layer="ip",
    )
    if not w.hook("FORWARD", "NF_HOOK"):
        return
    t.enter(
        "ip_forward_finish",
        msg("ip_forward_finish counts the packet as forwarded and calls dst_output."),
        layer="ip",
    )
    t.leaf(
        "dst_output",
        msg("dst_output (inline) calls ip_output for the eth1 route."),
        layer="ip",
    )
    t.enter(
        "ip_output",
        msg("ip_output sets skb->dev = eth1 and runs POST_ROUTING."),
        layer="ip",
    )
    if not w.hook("POST_ROUTING", "NF_HOOK_COND"):
        return
    finish_output(w, seg.skb)
    neigh_cached(w, seg.skb)
    d = len(t.stack)
    dev_queue_xmit_nic(w, seg.skb, "eth1")
    t.unwind(d)
