"""The qdisc and device TX: from ``__dev_queue_xmit`` to the wire and the TX completion.

Mirrors net/core/dev.c (``__dev_queue_xmit``, ``__dev_xmit_skb``, ``dev_hard_start_xmit``,
``validate_xmit_skb``, ``__skb_gso_segment``), net/sched/sch_generic.c (``pfifo_fast_enqueue``,
``__qdisc_run``, ``qdisc_restart``, ``sch_direct_xmit``), include/linux/netdevice.h
(``netdev_start_xmit``), software GSO in net/ipv4/af_inet.c, net/ipv4/tcp_offload.c and
net/core/skbuff.c (``inet_gso_segment``, ``tcp_gso_segment``, ``skb_segment``), and the igb
driver's transmit side in drivers/net/ethernet/intel/igb/igb_main.c (``igb_xmit_frame_ring``,
``igb_tso``, ``igb_tx_map``, ``igb_clean_tx_irq``).
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.skb import ETH_HLEN, IP_HLEN
from app.sim.path.walk import FRAME, Walk


def dev_queue_xmit_nic(w: Walk, skb: str, dev: str) -> None:
    t, s = w.t, w.s
    t.dev = dev
    s.set_header(skb, "mac")
    t.enter(
        "__dev_queue_xmit",
        msg(
            "__dev_queue_xmit resets mac_header to data, runs tc egress (nothing attached) "
            "and picks TX queue {q} of {dev}. Its qdisc is pfifo_fast (under mq).",
            q=0,
            dev=dev,
        ),
        layer="dev",
    )
    queued = w.p.qdisc_queued
    if queued == 0:
        t.enter(
            "__dev_xmit_skb",
            msg(
                "__dev_xmit_skb: pfifo_fast is lockless and empty, and may be bypassed "
                "(TCQ_F_CAN_BYPASS): the skb skips enqueue and goes straight to "
                "sch_direct_xmit."
            ),
            layer="qdisc",
        )
    else:
        t.counters["qdisc"] = queued + 1
        t.enter(
            "__dev_xmit_skb",
            msg(
                "__dev_xmit_skb: the qdisc already holds {queued} packet(s), so no bypass: "
                "the skb is enqueued behind them.",
                queued=queued,
            ),
            layer="qdisc",
        )
        t.leaf(
            "pfifo_fast_enqueue",
            msg(
                "pfifo_fast_enqueue puts the skb in band 1 (TOS 0 maps to the middle "
                "band): qdisc length {n}.",
                n=queued + 1,
            ),
            layer="qdisc",
        )
        t.enter(
            "__qdisc_run",
            msg(
                "__qdisc_run dequeues and sends until the queue is empty or its quota "
                "(dev_tx_weight 64) is used."
            ),
            layer="qdisc",
        )
        t.enter(
            "qdisc_restart",
            msg(
                "qdisc_restart sends the {queued} packet(s) ahead of ours first, one "
                "sch_direct_xmit each.",
                queued=queued,
            ),
            layer="qdisc",
        )
        t.counters["qdisc"] = 1
        t.leaf(
            "pfifo_fast_dequeue",
            msg("pfifo_fast_dequeue hands out our skb, the last one queued."),
            layer="qdisc",
        )
        t.counters["qdisc"] = 0
    gso_sw = not w.p.tso and s.gso[skb][1] > 1
    if not gso_sw:
        t.enter(
            "sch_direct_xmit",
            msg(
                "sch_direct_xmit calls validate_xmit_skb (the device does TSO and "
                "checksums, so nothing is segmented in software), takes the TX queue lock "
                "and calls dev_hard_start_xmit."
            ),
            layer="qdisc",
        )
        hard_start(w)
        igb_send(w, skb, tso=s.gso[skb][1] > 1)
        w.sent = [skb]
        return
    t.enter(
        "sch_direct_xmit",
        msg(
            "sch_direct_xmit validates the skb before taking the TX queue lock. TSO is "
            "off on {dev} (ethtool -K {dev} tso off), but GSO is on: the large skb is "
            "segmented now, in software, as late as possible.",
            dev=dev,
        ),
        layer="qdisc",
    )
    gso_segment(w, skb)
    segs = list(w.sent)
    t.enter(
        "dev_hard_start_xmit",
        msg(
            "dev_hard_start_xmit walks the list of {n} segments, one xmit_one each.",
            n=len(segs),
        ),
        layer="dev",
    )
    d = len(t.stack)
    for seg in segs:
        t.cur = seg
        t.enter(
            "xmit_one",
            msg("xmit_one: taps see this segment, then netdev_start_xmit."),
            layer="dev",
        )
        t.leaf(
            "netdev_start_xmit",
            msg("netdev_start_xmit (inline) calls the driver's ndo_start_xmit."),
            layer="dev",
        )
        igb_send(w, seg, tso=False)
        t.unwind(d)


def gso_segment(w: Walk, skb: str) -> None:
    """validate_xmit_skb → skb_gso_segment → ... → skb_segment: one skb per MSS."""
    t, s = w.t, w.s
    mss, count = s.gso[skb]
    total = s.length(skb) - FRAME
    headroom = s.data(skb)
    t.enter(
        "validate_xmit_skb_list",
        msg("validate_xmit_skb_list runs validate_xmit_skb on the skb."),
        layer="dev",
    )
    t.enter(
        "validate_xmit_skb",
        msg(
            "validate_xmit_skb: netif_needs_gso is true (the device lacks TSO for this "
            "skb), so skb_gso_segment."
        ),
        layer="dev",
    )
    t.leaf(
        "skb_gso_segment",
        msg("skb_gso_segment (inline) → __skb_gso_segment for the transmit path."),
        layer="dev",
    )
    t.enter(
        "__skb_gso_segment",
        msg("__skb_gso_segment checks the checksum state and calls skb_mac_gso_segment."),
        layer="dev",
    )
    t.enter(
        "skb_mac_gso_segment",
        msg(
            "skb_mac_gso_segment pulls the 14-byte MAC header and calls the IPv4 offload's "
            "gso_segment."
        ),
        layer="dev",
    )
    t.enter(
        "inet_gso_segment",
        msg("inet_gso_segment pulls the 20-byte IP header and calls TCP's gso_segment."),
        layer="ip",
    )
    t.enter(
        "tcp4_gso_segment",
        msg("tcp4_gso_segment prepares the checksum and calls tcp_gso_segment."),
        layer="tcp",
    )
    t.enter(
        "tcp_gso_segment",
        msg(
            "tcp_gso_segment pulls the 32-byte TCP header and asks skb_segment for pieces "
            "of {mss} bytes; afterwards it fixes each piece's seq, clears FIN/PSH on all "
            "but the last, and sets the checksums. The destructor is tcp_wfree, so each "
            "segment gets skb->sk and tcp_wfree too and sk_wmem_alloc is adjusted by the "
            "truesize difference: the socket still pays for every piece.",
            mss=mss,
        ),
        layer="tcp",
    )
    w.sent = []
    left = total
    for k in range(count):
        name = w.name("seg")
        size = min(mss, left)
        left -= size
        s.alloc_skb(name, headroom + FRAME)
        s.reserve(name, headroom)
        s.put(name, FRAME, "headers")
        s.set_header(name, "mac")
        s.set_header(name, "network", headroom + ETH_HLEN)
        s.set_header(name, "transport", headroom + ETH_HLEN + IP_HLEN)
        s.add_frag(name, size, size)
        owner = s.owner.get(skb)
        if owner is not None:  # tcp_gso_segment: copy_destructor (gso_skb's is tcp_wfree)
            s.set_owner(name, *owner)
        w.sent.append(name)
        t.cur = name
        if k == 0:
            t.leaf(
                "skb_segment",
                msg(
                    "skb_segment, segment 1 of {n}: __alloc_skb(0 + 66 + headroom {h}) "
                    "gives a small head; skb_reserve({h}) and __skb_put(66) hold a copy of "
                    "the Ethernet, IP and TCP headers, and frags[0] references {size} "
                    "bytes of the original pages (no payload copy). truesize adds "
                    "data_len.",
                    n=count,
                    h=headroom,
                    size=size,
                ),
                layer="core",
            )
    t.leaf(
        "skb_segment",
        msg(
            "skb_segment made {n} segments ({mss} bytes each, the last {last}); each has "
            "its own head and shares the payload pages.",
            n=count,
            mss=mss,
            last=size,
        ),
        layer="core",
    )
    t.unwind(len(t.stack) - 5)  # back in validate_xmit_skb
    t.cur = skb
    s.free(skb)
    w.here(
        msg(
            "validate_xmit_skb consume_skb()s the original GSO clone: its job is done, "
            "dataref on the write-queue skb's head falls back to 1 (the segments hold the "
            "pages through their own frag references)."
        ),
        "dev",
    )
    t.unwind(len(t.stack) - 2)  # back in sch_direct_xmit


def igb_send(w: Walk, skb: str, *, tso: bool) -> None:
    t, s = w.t, w.s
    segs = s.gso[skb][1]
    t.enter(
        "igb_xmit_frame",
        msg("igb_xmit_frame (ndo_start_xmit) picks the TX ring for the queue."),
        layer="driver",
    )
    t.enter(
        "igb_xmit_frame_ring",
        msg("igb_xmit_frame_ring reserves descriptors for the head and each frag."),
        layer="driver",
    )
    if tso:
        t.leaf(
            "igb_tso",
            msg(
                "igb_tso writes a context descriptor: MSS {mss}, header length 66. The NIC "
                "will cut this {len}-byte skb into {segs} frames, copying the headers and "
                "fixing seq, IP id, lengths and checksums for each. Without TSO, "
                "validate_xmit_skb would have split it in software (skb_gso_segment) just "
                "before the driver.",
                mss=s.gso[skb][0],
                len=s.length(skb),
                segs=segs,
            ),
            layer="driver",
        )
    t.leaf(
        "igb_tx_map",
        msg(
            "igb_tx_map DMA-maps the linear headers and every page fragment, writes one "
            "data descriptor per piece and bumps the tail register: the NIC fetches and "
            "sends. The skb stays referenced by the ring until the NIC reports completion."
        ),
        layer="driver",
    )


def hard_start(w: Walk) -> None:
    t = w.t
    t.enter(
        "dev_hard_start_xmit",
        msg("dev_hard_start_xmit sends the skb (a list of one) with xmit_one."),
        layer="dev",
    )
    t.enter(
        "xmit_one",
        msg(
            "xmit_one gives a copy to packet taps if any (tcpdump sees the frame here) "
            "and calls netdev_start_xmit."
        ),
        layer="dev",
    )
    t.leaf(
        "netdev_start_xmit",
        msg("netdev_start_xmit (inline) calls the driver's ndo_start_xmit."),
        layer="dev",
    )


def tx_completion(w: Walk, skb: str) -> None:
    """A later NAPI poll frees the sent clone."""
    t, s = w.t, w.s
    t.context = "softirq"
    t.stack = ["__do_softirq", "net_rx_action", "__napi_poll", "igb_poll"]
    sent = w.sent or [skb]
    for done in sent:
        s.orphan(done)  # the destructor runs as the skb is freed
        s.free(done)
    t.cur = sent[-1]
    if sent == [skb]:
        text = msg(
            "Later the NIC reports the descriptors done; igb_poll's igb_clean_tx_irq "
            "unmaps them and frees the clone (napi_consume_skb): dataref falls back to 1. "
            "Its destructor, tcp_wfree, gives its truesize back to sk_wmem_alloc, so TSQ "
            "lets the socket send more. The original stays on the write queue until the "
            "peer ACKs it."
        )
    else:
        text = msg(
            "Later the NIC reports the descriptors done; igb_clean_tx_irq unmaps them and "
            "frees the {n} segments (napi_consume_skb); each one's tcp_wfree gives its "
            "truesize back to sk_wmem_alloc. The original stays on the write queue until "
            "the peer ACKs it.",
            n=len(sent),
        )
    t.leaf("igb_clean_tx_irq", text, layer="driver")
    t.stack = []
    w.sent = []
