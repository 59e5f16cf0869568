"""An overlay: a container's packet through its veth pair, bridge ``docker0`` (with
br_netfilter), IPv4 forwarding and Docker's MASQUERADE, out of the host's NIC.

Mirrors drivers/net/veth.c, net/bridge/br_input.c (``br_handle_frame``,
``br_handle_frame_finish``, ``br_pass_frame_up``, ``br_netif_receive_skb``),
net/bridge/br_netfilter_hooks.c (``br_nf_pre_routing``, ``br_nf_pre_routing_finish``,
``ip_sabotage_in``), net/netfilter/nf_conntrack_proto.c (``ipv4_conntrack_in``),
net/ipv4/ip_forward.c and net/netfilter/nf_nat_proto.c / nf_nat_core.c (``nf_nat_ipv4_out``,
``nf_nat_inet_fn``, ``nf_nat_packet``, ``nf_nat_ipv4_manip_pkt``).
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.dev_tx import dev_queue_xmit_nic, hard_start, tx_completion
from app.sim.path.ip_output import finish_output, neigh_cached
from app.sim.path.napi import softirq_on_bh_enable
from app.sim.path.params import MSS
from app.sim.path.skb import ETH_HLEN, IP_HLEN
from app.sim.path.socket_tx import tcp_send
from app.sim.path.walk import Walk


def walk_bridge_nat(w: Walk) -> None:
    """The container writes; its segment crosses the veth pair, the bridge and the host's
    forwarding and NAT, then leaves by eth0."""
    t = w.t
    t.ns = "container"
    t.dev = "eth0"
    clone = tcp_send(w, 0, w.p.payload_bytes, MSS)
    if clone is None:
        raise RuntimeError("internal: clone is unset here")
    veth_to_backlog(w, clone)
    softirq_on_bh_enable(w)
    bridge_input(w, clone)
    bridge_up_and_forward(w, clone)
    masquerade(w)
    finish_output(w, clone)
    neigh_cached(w, clone)
    dev_queue_xmit_nic(w, clone, "eth0")
    t.stack = []
    tx_completion(w, clone)


def veth_to_backlog(w: Walk, clone: str) -> None:
    """The container's eth0 (a veth end, noqueue) hands the frame to its peer vethA in the
    host namespace, which queues it on the backlog; back in __dev_queue_xmit."""
    t, s = w.t, w.s
    top = len(t.stack)
    neigh_cached(w, clone)
    s.set_header(clone, "mac")
    t.enter(
        "__dev_queue_xmit",
        msg(
            "In the container, eth0 is one end of a veth pair; noqueue, so straight to the driver."
        ),
        layer="dev",
    )
    hard_start(w)
    t.enter(
        "veth_xmit",
        msg("veth_xmit: the peer is vethA in the host namespace, a port of bridge docker0."),
        layer="driver",
    )
    t.enter("veth_forward_skb", msg("veth_forward_skb: __dev_forward_skb."), layer="driver")
    t.enter(
        "__dev_forward_skb",
        msg(
            "__dev_forward_skb scrubs the skb for the host namespace (skb_scrub_packet). "
            "Scrubbing does not orphan: skb->sk is still the container's socket."
        ),
        layer="core",
    )
    t.ns = "host"
    t.dev = "vethA"
    s.pull(clone, ETH_HLEN)
    t.leaf(
        "eth_type_trans",
        msg(
            "eth_type_trans on vethA pulls 14: data at the IP header. The destination "
            "MAC is docker0's (the container's gateway), not vethA's, so pkt_type is "
            "PACKET_OTHERHOST for now."
        ),
        layer="link",
    )
    t.leave()
    t.enter("__netif_rx", msg("__netif_rx queues it on the backlog."), layer="core")
    t.counters["backlog"] = 1
    t.leaf(
        "enqueue_to_backlog",
        msg("enqueue_to_backlog: appended; the backlog NAPI is scheduled."),
        layer="core",
    )
    t.unwind(top + 1)  # back in __dev_queue_xmit


def bridge_input(w: Walk, clone: str) -> None:
    """process_backlog to br_handle_frame_finish: vethA is a bridge port, so the bridge and
    br_netfilter (the IPv4 PRE_ROUTING hooks on a bridged frame) see it first."""
    t, s = w.t, w.s
    t.enter(
        "__napi_poll",
        msg("__napi_poll → process_backlog."),
        layer="napi",
    )
    t.enter(
        "process_backlog",
        msg("process_backlog hands the skb to __netif_receive_skb."),
        layer="napi",
    )
    t.counters["backlog"] = 0
    t.enter(
        "__netif_receive_skb",
        msg("__netif_receive_skb → __netif_receive_skb_one_core."),
        layer="core",
    )
    t.enter(
        "__netif_receive_skb_one_core",
        msg("__netif_receive_skb_one_core → __netif_receive_skb_core."),
        layer="core",
    )
    s.set_header(clone, "network")
    t.enter(
        "__netif_receive_skb_core",
        msg(
            "__netif_receive_skb_core: vethA is a bridge port, so its rx_handler, "
            "br_handle_frame, gets the skb before any protocol."
        ),
        layer="core",
    )
    t.enter(
        "br_handle_frame",
        msg(
            "br_handle_frame: the destination MAC is the bridge's own address, so "
            "pkt_type becomes PACKET_HOST; the bridge PRE_ROUTING hook runs next."
        ),
        layer="bridge",
    )
    t.enter(
        "nf_hook_bridge_pre",
        msg("nf_hook_bridge_pre runs the NFPROTO_BRIDGE PRE_ROUTING hooks."),
        layer="bridge",
        hook="BR_PRE_ROUTING",
    )
    t.enter(
        "br_nf_pre_routing",
        msg(
            "br_nf_pre_routing (br_netfilter, bridge-nf-call-iptables = 1) checks the IPv4 "
            "header and runs the IPv4 PRE_ROUTING hooks on the bridged frame, so "
            "iptables rules see bridged traffic."
        ),
        layer="netfilter",
        hook="PRE_ROUTING",
    )
    t.leaf(
        "nf_hook_slow",
        msg("nf_hook_slow runs the IPv4 PRE_ROUTING entries: conntrack first."),
        layer="netfilter",
        hook="PRE_ROUTING",
    )
    t.leaf(
        "ipv4_conntrack_in",
        msg(
            "ipv4_conntrack_in → nf_conntrack_in finds the connection's entry (created by "
            "its SYN) and attaches it to the skb: ESTABLISHED."
        ),
        layer="netfilter",
        hook="PRE_ROUTING",
    )
    t.enter(
        "br_nf_pre_routing_finish",
        msg(
            "br_nf_pre_routing_finish: no DNAT changed the destination; back to the "
            "bridge's own code."
        ),
        layer="bridge",
    )
    t.enter(
        "br_handle_frame_finish",
        msg(
            "br_handle_frame_finish looks up the FDB: the destination is the bridge "
            "device itself (local), so the frame goes up, not out of another port."
        ),
        layer="bridge",
    )


def bridge_up_and_forward(w: Walk, clone: str) -> None:
    """br_pass_frame_up to ip_forward_finish: docker0 receives it as a host, ip_sabotage_in
    keeps the hooks from running twice, and the host forwards it."""
    t, s = w.t, w.s
    t.dev = "docker0"
    t.enter(
        "br_pass_frame_up",
        msg(
            "br_pass_frame_up sets skb->dev = docker0 and runs the bridge LOCAL_IN hook, "
            "then br_netif_receive_skb."
        ),
        layer="bridge",
        hook="BR_LOCAL_IN",
    )
    t.enter(
        "br_netif_receive_skb",
        msg("br_netif_receive_skb → netif_receive_skb: the receive path starts again."),
        layer="bridge",
    )
    t.enter(
        "netif_receive_skb",
        msg("netif_receive_skb on docker0."),
        layer="core",
    )
    t.enter(
        "__netif_receive_skb",
        msg("__netif_receive_skb → __netif_receive_skb_one_core."),
        layer="core",
    )
    t.enter(
        "__netif_receive_skb_one_core",
        msg("__netif_receive_skb_one_core → __netif_receive_skb_core → ip_rcv."),
        layer="core",
    )
    t.leaf(
        "__netif_receive_skb_core",
        msg("__netif_receive_skb_core on docker0: no rx_handler now; ETH_P_IP → ip_rcv."),
        layer="core",
    )
    s.set_header(clone, "transport", s.data(clone) + IP_HLEN)
    s.orphan(clone)
    t.enter(
        "ip_rcv",
        msg(
            "ip_rcv → ip_rcv_core (checks pass, the IPv4 header checksum recomputed), then "
            "the IPv4 PRE_ROUTING hook. ip_rcv_core's skb_orphan is where the container's "
            "socket lets go: until here, across veth and the bridge, skb->sk was that "
            "socket; now tcp_wfree runs and gives the truesize back (ip_forward drops an "
            "skb that still has skb->sk)."
        ),
        layer="ip",
    )
    t.leaf(
        "ip_sabotage_in",
        msg(
            "ip_sabotage_in, br_netfilter's first PRE_ROUTING entry, sees the hooks "
            "already ran while bridging: it calls ip_rcv_finish directly (NF_STOLEN) so "
            "the chain does not run twice."
        ),
        layer="netfilter",
        hook="PRE_ROUTING",
    )
    t.enter(
        "ip_rcv_finish",
        msg("ip_rcv_finish → ip_rcv_finish_core."),
        layer="ip",
    )
    t.leaf(
        "ip_route_input_noref",
        msg(
            "ip_route_input_noref: the destination is on the Internet, ip_forward is on "
            "(Docker sets it): route via the default gateway out of eth0."
        ),
        layer="route",
    )
    t.leaf("dst_input", msg("dst_input → ip_forward."), layer="ip")
    t.enter(
        "ip_forward",
        msg("ip_forward: TTL 64 > 1; skb_cow: the header is private and headroom ample."),
        layer="ip",
    )
    t.leaf(
        "ip_decrease_ttl",
        msg("ip_decrease_ttl: TTL 64 → 63, checksum patched."),
        layer="ip",
    )
    t.leaf(
        "NF_HOOK",
        msg(
            "NF_HOOK FORWARD: Docker's FORWARD chain (DOCKER-USER, DOCKER-ISOLATION, "
            "then ACCEPT for traffic leaving docker0) lets it through."
        ),
        layer="netfilter",
        hook="FORWARD",
    )
    t.enter(
        "ip_forward_finish",
        msg("ip_forward_finish → dst_output → ip_output."),
        layer="ip",
    )


def masquerade(w: Walk) -> None:
    """ip_output on eth0 and the POST_ROUTING nat hook: MASQUERADE's stored binding rewrites
    the source address in place."""
    t = w.t
    t.dev = "eth0"
    t.enter(
        "ip_output",
        msg("ip_output: skb->dev = eth0; POST_ROUTING runs the nat table."),
        layer="ip",
    )
    t.enter(
        "nf_nat_ipv4_out",
        msg(
            "nf_nat_ipv4_out (the POST_ROUTING nat hook) → nf_nat_inet_fn. The "
            "connection's first packet went through Docker's MASQUERADE rule, which chose "
            "eth0's address as the new source (nf_nat_masquerade_ipv4); that binding is "
            "stored in the conntrack entry."
        ),
        layer="netfilter",
        hook="POST_ROUTING",
    )
    t.enter(
        "nf_nat_inet_fn",
        msg("nf_nat_inet_fn: the entry has a source-NAT binding, so nf_nat_packet."),
        layer="netfilter",
        hook="POST_ROUTING",
    )
    t.leaf(
        "nf_nat_packet",
        msg("nf_nat_packet applies the stored source manipulation."),
        layer="netfilter",
        hook="POST_ROUTING",
    )
    t.leaf(
        "nf_nat_ipv4_manip_pkt",
        msg(
            "nf_nat_ipv4_manip_pkt rewrites the source 172.17.0.2 → 192.0.2.10 (and the "
            "port if it clashed) in place and patches the IP and TCP checksums "
            "incrementally. The skb's geometry does not change."
        ),
        layer="netfilter",
        hook="POST_ROUTING",
    )
    t.leave(2)
