"""Loopback and veth: one walk is both sides, the sender's TX runs the receiver's RX.

Mirrors drivers/net/loopback.c (``loopback_xmit``), drivers/net/veth.c (``veth_xmit``,
``veth_forward_skb``), net/core/dev.c (``__dev_forward_skb``, ``__netif_rx``,
``enqueue_to_backlog`` and its ``netdev_max_backlog`` drop) and net/ethernet/eth.c
(``eth_type_trans``); the receive half is the backlog NAPI of app.sim.path.napi.
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.dev_tx import hard_start
from app.sim.path.ip_output import neigh_cached
from app.sim.path.napi import backlog_poll, softirq_on_bh_enable
from app.sim.path.params import MSS
from app.sim.path.skb import ETH_HLEN
from app.sim.path.socket_tx import tcp_send
from app.sim.path.tcp_rcv import readers
from app.sim.path.walk import NETDEV_MAX_BACKLOG, Seg, Walk


def walk_local(w: Walk) -> None:
    p, t = w.p, w.t
    veth = p.device == "veth"
    mss = MSS if veth else 65483  # loopback MTU 65536 - 20 - 32 - 1 rounding in tcp_mtu_to_mss
    if p.drop == "backlog_full":
        t.counters["backlog"] = NETDEV_MAX_BACKLOG + 1
    for i in range(p.packets):
        t.ns = "ns1" if veth else "host"
        t.dev = "veth0" if veth else "lo"
        clone = tcp_send(w, i, p.payload_bytes, mss)
        if clone is None:
            t.stack = []
            continue
        top = len(t.stack)  # ip_finish_output2 is on top
        neigh_cached(w, clone)
        if not local_xmit(w, clone, veth):
            t.stack = []
            continue
        t.unwind(top + 1)  # back in __dev_queue_xmit
        softirq_on_bh_enable(w)
        backlog_poll(w, [Seg(skb=clone, flow=0, payload=p.payload_bytes, psh=True, index=i)])
        t.stack = []
        t.napi = None
        readers(w)


def local_xmit(w: Walk, skb: str, veth: bool) -> bool:
    """__dev_queue_xmit on a noqueue device down to enqueue_to_backlog."""
    t, s = w.t, w.s
    s.set_header(skb, "mac")
    dev = "veth0" if veth else "lo"
    t.enter(
        "__dev_queue_xmit",
        msg(
            "__dev_queue_xmit on {dev}: the device is IFF_NO_QUEUE, so its qdisc is "
            "noqueue (no enqueue function) and the skb goes straight to the driver after "
            "validate_xmit_skb. A GSO skb stays whole: {dev} accepts TSO.",
            dev=dev,
        ),
        layer="dev",
    )
    t.leaf(
        "validate_xmit_skb",
        msg("validate_xmit_skb: features cover GSO and checksum offload; nothing to do."),
        layer="dev",
    )
    hard_start(w)
    if veth:
        t.enter(
            "veth_xmit",
            msg(
                "veth_xmit finds the peer, veth1, in namespace ns2. No XDP program and GRO "
                "is off on veth by default, so no veth NAPI: the skb is forwarded to the "
                "peer's receive path directly."
            ),
            layer="driver",
        )
        t.enter(
            "veth_forward_skb",
            msg("veth_forward_skb: __dev_forward_skb, then __netif_rx."),
            layer="driver",
        )
        t.enter(
            "__dev_forward_skb",
            msg("__dev_forward_skb → __dev_forward_skb2 with the MTU check on."),
            layer="core",
        )
        t.enter(
            "__dev_forward_skb2",
            msg("__dev_forward_skb2 calls ____dev_forward_skb, then eth_type_trans."),
            layer="core",
        )
        t.leaf(
            "____dev_forward_skb",
            msg(
                "____dev_forward_skb checks the frame fits veth1's MTU, then scrubs it: "
                "crossing into another namespace clears the route, conntrack, mark and "
                "timestamp (skb_scrub_packet). Scrubbing does not orphan: skb->sk is still "
                "the sender's socket in ns1, and its sk_wmem_alloc still counts the skb "
                "until ip_rcv_core in ns2 calls skb_orphan."
            ),
            layer="core",
        )
        t.ns = "ns2"
        t.dev = "veth1"
        s.pull(skb, ETH_HLEN)
        t.leaf(
            "eth_type_trans",
            msg(
                "eth_type_trans sets skb->dev = veth1, resets mac_header and pulls 14: "
                "data points at the IP header again, as on a real NIC."
            ),
            layer="link",
        )
        t.leave(2)
    else:
        s.orphan(skb)
        t.enter(
            "loopback_xmit",
            msg(
                "loopback_xmit calls skb_orphan: tcp_wfree runs and gives the truesize back "
                "to the sender's sk_wmem_alloc, and skb->sk is cleared (the sender's socket "
                "no longer pays for it). Then it turns the transmitted frame around."
            ),
            layer="driver",
        )
        s.pull(skb, ETH_HLEN)
        t.leaf(
            "eth_type_trans",
            msg(
                "eth_type_trans resets mac_header and pulls the 14-byte Ethernet header "
                "just pushed: data is back at the IP header."
            ),
            layer="link",
        )
    t.enter(
        "__netif_rx",
        msg("__netif_rx → netif_rx_internal: the skb enters the receive side."),
        layer="core",
    )
    t.enter(
        "netif_rx_internal",
        msg("netif_rx_internal: RPS off, so this CPU's backlog queue."),
        layer="core",
    )
    qlen = t.counters["backlog"]
    if qlen > NETDEV_MAX_BACKLOG:
        t.enter(
            "enqueue_to_backlog",
            msg(
                "enqueue_to_backlog: input_pkt_queue already holds {q} skbs, more than "
                "netdev_max_backlog (1000). The skb is dropped and softnet_data.dropped "
                "counts it (the second column of /proc/net/softnet_stat). TCP will "
                "retransmit.",
                q=qlen,
            ),
            layer="core",
            mark="drop",
        )
        w.drop("CPU_BACKLOG")
        return False
    t.counters["backlog"] = qlen + 1
    t.enter(
        "enqueue_to_backlog",
        msg(
            "enqueue_to_backlog: queue length {q} ≤ 1000, so the skb is appended to this "
            "CPU's input_pkt_queue.",
            q=qlen,
        ),
        layer="core",
    )
    if qlen == 0:
        t.enter(
            "napi_schedule_rps",
            msg(
                "The queue was empty, so the backlog NAPI instance is scheduled "
                "(napi_schedule_rps → __napi_schedule_irqoff)."
            ),
            layer="napi",
        )
        t.enter(
            "__napi_schedule_irqoff",
            msg("__napi_schedule_irqoff → ____napi_schedule."),
            layer="napi",
        )
        t.leaf(
            "____napi_schedule",
            msg(
                "____napi_schedule puts softnet_data.backlog on poll_list and raises "
                "NET_RX_SOFTIRQ. Nothing runs it yet: bottom halves are disabled."
            ),
            layer="napi",
        )
    return True
