"""NAPI and the backlog: the interrupt, ``net_rx_action``, the driver's poll and
``process_backlog``, and the whole NIC receive walk.

Mirrors drivers/net/ethernet/intel/igb/igb_main.c (``igb_msix_ring``, ``igb_poll``,
``igb_clean_rx_irq``, ``igb_build_skb`` / ``igb_construct_skb``), net/core/dev.c
(``napi_schedule_prep``, ``____napi_schedule``, ``net_rx_action``, ``__napi_poll``,
``napi_complete_done``, ``process_backlog``), kernel/softirq.c (``__do_softirq``,
``__local_bh_enable_ip``: the receive side run on the sender's stack), net/core/skbuff.c
(``napi_build_skb``, ``__napi_alloc_skb``, ``skb_add_rx_frag``) and net/ethernet/eth.c
(``eth_type_trans``).
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.engine import NapiView
from app.sim.path.gro import checksum_drop, complete, gro, gro_normal_list, sync_held
from app.sim.path.ip_input import deliver_one
from app.sim.path.skb import ETH_HLEN, IGB_RX_HDR_LEN, IGB_SKB_PAD
from app.sim.path.tcp_rcv import readers
from app.sim.path.walk import FRAME, NETDEV_BUDGET, WEIGHT, Seg, Walk


def walk_rx_nic(w: Walk) -> None:
    t = w.t
    segs = make_segments(w)
    napi: NapiView = {
        "budget": NETDEV_BUDGET,
        "weight": WEIGHT,
        "work": 0,
        "polls": 0,
        "rx_count": 0,
        "ring": len(segs),
        "irq_enabled": True,
        "held": [],
    }
    t.napi = napi
    irq(w, len(segs))
    pending = list(segs)
    w.scheduled = True
    while w.scheduled:
        net_rx_action(w, pending)
    t.napi = napi
    readers(w)


def make_segments(w: Walk) -> list[Seg]:
    p = w.p
    out: list[Seg] = []
    per_flow = [0] * p.flows
    for i in range(p.packets):
        per_flow[i % p.flows] += 1
    seen = [0] * p.flows
    for i in range(p.packets):
        f = i % p.flows
        seen[f] += 1
        last = seen[f] == per_flow[f]
        psh = p.psh == "every" or (p.psh == "last" and last)
        size = p.last_bytes if last and p.last_bytes else p.payload_bytes
        out.append(Seg(skb="", flow=f, payload=size, psh=psh, index=i))
    return out


def irq(w: Walk, frames: int) -> None:
    t = w.t
    t.context = "hardirq"
    t.stack = []
    t.cur = None
    t.dev = "eth0"
    t.enter(
        "igb_msix_ring",
        msg(
            "The NIC has DMA'd {n} frame(s) into the RX ring and raises its MSI-X "
            "interrupt. The handler does no packet work: it only schedules NAPI.",
            n=frames,
        ),
        layer="irq",
    )
    if t.napi is None:
        raise RuntimeError("internal: t.napi is unset here")
    t.napi["irq_enabled"] = False
    t.leaf(
        "napi_schedule_prep",
        msg(
            "napi_schedule (inline) → napi_schedule_prep sets NAPI_STATE_SCHED; the "
            "queue's interrupt stays masked while NAPI polls (igb re-arms it at the end)."
        ),
        layer="napi",
    )
    t.enter(
        "__napi_schedule",
        msg("__napi_schedule disables local interrupts and calls ____napi_schedule."),
        layer="napi",
    )
    t.leaf(
        "____napi_schedule",
        msg(
            "____napi_schedule adds the NAPI instance to this CPU's softnet_data "
            "poll_list and raises NET_RX_SOFTIRQ."
        ),
        layer="napi",
    )
    t.stack = []


def net_rx_action(w: Walk, pending: list[Seg]) -> None:
    t = w.t
    napi = t.napi
    if napi is None:
        raise RuntimeError("internal: napi is unset here")
    t.context = "softirq"
    t.stack = []
    t.cur = None
    napi["budget"] = NETDEV_BUDGET
    t.enter(
        "__do_softirq",
        msg(
            "On the way out of the interrupt (irq_exit), __do_softirq runs the pending "
            "softirqs with interrupts enabled."
        ),
        layer="softirq",
        notes=(
            msg(
                "Newer kernels run this loop in handle_softirqs, called by __do_softirq; "
                "the kernel check (Linux 6.18) shows handle_softirqs in its stacks."
            ),
        ),
    )
    t.enter(
        "net_rx_action",
        msg(
            "net_rx_action takes the poll_list. budget = netdev_budget = 300 packets for "
            "this whole run, over every NAPI instance on the CPU; time limit 2 jiffies."
        ),
        layer="napi",
        notes=(
            msg(
                "Linux 6.12 keeps netdev_budget, netdev_budget_usecs and "
                "gro_normal_batch in struct net_hotdata (same values: 300, 2 jiffies, 8) "
                "and net_rx_action takes no argument."
            ),
        ),
    )
    while True:
        work = poll(w, pending)
        napi["budget"] -= work
        if work < WEIGHT:
            t.stack = ["__do_softirq", "net_rx_action"]
            t.cur = None
            w.here(
                msg(
                    "The poll list is empty: net_rx_action returns with {left} of its 300 "
                    "budget unused.",
                    left=napi["budget"],
                ),
                "napi",
            )
            t.stack = []
            return
        if napi["budget"] <= 0:
            t.counters["time_squeeze"] += 1
            t.stack = ["__do_softirq", "net_rx_action"]
            t.cur = None
            w.here(
                msg(
                    "budget is {left} ≤ 0: net_rx_action stops (time_squeeze {sq}). The "
                    "NAPI instance stays on poll_list and NET_RX_SOFTIRQ is raised again; "
                    "__do_softirq restarts it or leaves it to ksoftirqd. A poll may use "
                    "its whole weight even when less budget was left, so one run can "
                    "handle a little more than 300.",
                    left=napi["budget"],
                    sq=t.counters["time_squeeze"],
                ),
                "napi",
                mark="budget",
            )
            t.stack = []
            return


def poll(w: Walk, pending: list[Seg]) -> int:
    t = w.t
    napi = t.napi
    if napi is None:
        raise RuntimeError("internal: napi is unset here")
    napi["polls"] += 1
    napi["work"] = 0
    t.stack = ["__do_softirq", "net_rx_action"]
    t.cur = None
    t.enter(
        "__napi_poll",
        msg(
            "__napi_poll (through napi_poll) calls the driver's poll with weight 64. Poll "
            "number {n}; budget left {left}.",
            n=napi["polls"],
            left=napi["budget"],
        ),
        layer="napi",
    )
    t.enter(
        "igb_poll",
        msg(
            "igb_poll first cleans completed TX descriptors (igb_clean_tx_irq), then "
            "receives with igb_clean_rx_irq(budget 64)."
        ),
        layer="driver",
    )
    t.enter(
        "igb_clean_rx_irq",
        msg(
            "igb_clean_rx_irq reads descriptors while fewer than 64 packets are done and "
            "the next descriptor has a length ({ring} frames wait).",
            ring=len(pending),
        ),
        layer="driver",
    )
    depth = len(t.stack)
    while pending and napi["work"] < WEIGHT:
        seg = pending.pop(0)
        napi["ring"] = len(pending)
        rx_one(w, seg, depth)
        napi["work"] += 1
        t.unwind(depth)
    work = napi["work"]
    t.cur = None
    if work >= WEIGHT:
        t.unwind(depth - 1)
        w.here(
            msg(
                "64 packets done, the weight is used up: igb_poll returns 64 without "
                "completing NAPI, so the interrupt stays off."
            ),
            "driver",
        )
        t.unwind(depth - 2)
        w.here(
            msg(
                "work == weight: the instance stays scheduled. __napi_poll flushes only "
                "GRO packets older than this jiffy (napi_gro_flush with flush_old, HZ "
                "1000), so packets held now stay held, then passes rx_list up with "
                "gro_normal_list and puts the instance on the repoll list."
            ),
            "napi",
            mark="repoll",
        )
        if w.rx_list:
            gro_normal_list(w)
        return work
    t.unwind(depth - 1)
    w.here(
        msg(
            "igb_clean_rx_irq found no more descriptors after {work} packet(s); igb_poll "
            "completes NAPI.",
            work=work,
        ),
        "driver",
    )
    t.enter(
        "napi_complete_done",
        msg(
            "napi_complete_done({work}): with gro_flush_timeout 0 every held GRO packet "
            "is completed now (napi_gro_flush), rx_list is passed up (gro_normal_list), "
            "and NAPI_STATE_SCHED is cleared.",
            work=work,
        ),
        layer="napi",
    )
    if w.held:
        t.enter(
            "napi_gro_flush",
            msg(
                "napi_gro_flush completes the {n} held packet(s), oldest first.",
                n=len(w.held),
            ),
            layer="gro",
        )
        d = len(t.stack)
        for h in sorted(w.held, key=lambda h: h.bucket):
            w.held.remove(h)
            sync_held(w)
            complete(w, h.seg, d)
            t.unwind(d)
        t.leave()
    if w.rx_list:
        gro_normal_list(w)
    t.unwind(depth - 1)
    napi["irq_enabled"] = True
    w.scheduled = False
    t.cur = None
    t.leaf(
        "igb_ring_irq_enable",
        msg(
            "napi_complete_done returned true, so igb_ring_irq_enable re-arms the queue's "
            "interrupt: the next frame raises an IRQ again."
        ),
        layer="driver",
    )
    return work


def rx_one(w: Walk, seg: Seg, depth: int) -> None:
    t, s, p = w.t, w.s, w.p
    name = w.name("rx")
    seg.skb = name
    t.dev = "eth0"
    t.packet = seg.index
    t.cur = name
    frame = FRAME + seg.payload
    if p.rx_mode == "build_skb":
        s.napi_build_skb(name)
        t.enter(
            "igb_build_skb",
            msg(
                "Frame {i}: {len} bytes in a 2048-byte half page. igb builds the skb "
                "around that buffer: no copy.",
                i=seg.index,
                len=frame,
            ),
            layer="driver",
        )
        t.leaf(
            "napi_build_skb",
            msg(
                "napi_build_skb wraps the half page: end = SKB_WITH_OVERHEAD(2048) = 1728, "
                "truesize = SKB_TRUESIZE(1728) = 2304, head_frag = 1. The sk_buff itself "
                "comes from the per-CPU NAPI cache."
            ),
            layer="driver",
        )
        s.reserve(name, IGB_SKB_PAD)
        s.put(name, frame, "frame")
        s.set_header(name, "mac")
        w.here(
            msg(
                "skb_reserve({pad}) skips the headroom igb left in front of the frame "
                "(igb_skb_pad = 1728 − 1536), and __skb_put({len}) covers the frame: data "
                "points at the Ethernet header, len {len}.",
                pad=IGB_SKB_PAD,
                len=frame,
            ),
            "driver",
        )
        t.leave()
    else:
        s.napi_alloc_skb(name, IGB_RX_HDR_LEN)
        t.enter(
            "igb_construct_skb",
            msg(
                "Frame {i} (legacy-rx): igb copies only the headers into a small skb and "
                "attaches the payload as a page fragment.",
                i=seg.index,
            ),
            layer="driver",
        )
        t.leaf(
            "__napi_alloc_skb",
            msg(
                "napi_alloc_skb(256): 256 + NET_SKB_PAD 64 = 320 ≤ 704, so the head is a "
                "1 KiB page fragment: end 704, data = tail = 64."
            ),
            layer="driver",
        )
        s.put(name, FRAME, "headers")
        s.set_header(name, "mac")
        w.here(
            msg(
                "eth_get_headlen finds 66 bytes of Ethernet, IP and TCP headers; they are "
                "copied into the head (__skb_put(66))."
            ),
            "driver",
        )
        s.add_frag(name, seg.payload, 2048, offset=FRAME)
        t.leaf(
            "skb_add_rx_frag",
            msg(
                "skb_add_rx_frag attaches the {n} payload bytes left in the half page as "
                "frags[0], charging truesize 2048.",
                n=seg.payload,
            ),
            layer="driver",
        )
        t.leave()
    t.enter(
        "igb_process_skb_fields",
        msg(
            "igb_process_skb_fields copies what the descriptor says into the skb: the RSS "
            "hash, CHECKSUM_UNNECESSARY (the NIC verified the TCP checksum), VLAN, and the "
            "protocol via eth_type_trans."
        ),
        layer="driver",
    )
    s.pull(name, ETH_HLEN)
    t.leaf(
        "eth_type_trans",
        msg(
            "eth_type_trans sets skb->dev, resets mac_header to data and pulls 14 bytes: "
            "data now points at the IP header, len {len}. pkt_type is PACKET_HOST (our "
            "MAC); it returns protocol 0x0800.",
            len=s.length(name),
        ),
        layer="link",
    )
    t.leave()
    if p.drop == "checksum" and seg.index == 0:
        checksum_drop(w, seg, depth)
        return
    gro(w, seg)


def softirq_on_bh_enable(w: Walk) -> None:
    t = w.t
    t.enter(
        "__local_bh_enable_ip",
        msg(
            "Back in __dev_queue_xmit, rcu_read_unlock_bh re-enables bottom halves. "
            "NET_RX_SOFTIRQ is pending, so __local_bh_enable_ip runs it right here, on "
            "the sender's stack: the receive side runs to completion before write() "
            "returns."
        ),
        layer="softirq",
    )
    t.enter("do_softirq", msg("do_softirq switches to the softirq stack."), layer="softirq")
    t.context = "softirq"
    t.enter(
        "__do_softirq",
        msg("__do_softirq runs NET_RX_SOFTIRQ's handler."),
        layer="softirq",
    )
    t.enter(
        "net_rx_action",
        msg("net_rx_action: budget 300; the backlog instance is on poll_list."),
        layer="napi",
    )


def backlog_poll(w: Walk, segs: list[Seg]) -> None:
    t = w.t
    t.enter(
        "__napi_poll",
        msg("__napi_poll calls the backlog's poll function, process_backlog, weight 64."),
        layer="napi",
    )
    t.enter(
        "process_backlog",
        msg(
            "process_backlog sets weight = dev_rx_weight (64), splices input_pkt_queue "
            "into process_queue and hands each skb to __netif_receive_skb."
        ),
        layer="napi",
    )
    d = len(t.stack)
    for seg in segs:
        t.counters["backlog"] -= 1
        t.cur = seg.skb
        t.packet = seg.index
        deliver_one(w, seg)
        t.unwind(d)
