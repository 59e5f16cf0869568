"""The packet walks: which Linux 6.4 functions run, in which context, and what each does to the
sk_buff. Numbers follow the Stepscope facts sheet §2 (paths) and §5 (NAPI and GRO).

Simplifications, each said in a frame's words where it shows: every frame of a NIC burst is in
the RX ring before the interrupt; the socket is never owned by the reader when a segment
arrives (so tcp_add_backlog is not taken); tcp_queue_rcv always queues the skb itself instead
of coalescing it into the queue's tail; the time limit of net_rx_action never expires.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.sim.core.i18n import Message, msg
from app.sim.path.engine import HeldView, NapiView, Tracer
from app.sim.path.params import MSS, PathParams
from app.sim.path.skb import (
    ETH_HLEN,
    GRO_MAX_SIZE,
    IGB_RX_HDR_LEN,
    IGB_SKB_PAD,
    IP_HLEN,
    TCP_HLEN,
    PathSkbs,
)

NETDEV_BUDGET = 300
WEIGHT = 64
GRO_NORMAL_BATCH = 8
MAX_GRO_SKBS = 8
GRO_HASH_BUCKETS = 8
NETDEV_MAX_BACKLOG = 1000
HDRS = IP_HLEN + TCP_HLEN  # the GRO offset of a TCP/IPv4 segment, from the IP header
FRAME = ETH_HLEN + HDRS  # 66 bytes of headers on the wire


@dataclass(slots=True)
class Seg:
    """One received TCP segment (or the GRO packet it became)."""

    skb: str
    flow: int
    payload: int
    psh: bool
    index: int
    segs: int = 1


@dataclass(slots=True)
class Held:
    seg: Seg
    bucket: int
    length: int  # p->len (IP header onward)


class Walk:
    """Builds the frames of one run into a :class:`Tracer`."""

    def __init__(self, p: PathParams, t: Tracer, skbs: PathSkbs) -> None:
        self.p = p
        self.t = t
        self.s = skbs
        self.n = 0  # skb names
        self.held: list[Held] = []
        self.rx_list: list[Seg] = []
        self.delivered: list[Seg] = []
        self.scheduled = False
        self.sent: list[str] = []  # skbs handed to the NIC, freed on TX completion

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    # -- helpers -------------------------------------------------------------------------------
    def here(
        self, text: Message, layer: str, *, result: str = "ok", mark: str | None = None
    ) -> None:
        """A frame about the function already on top of the stack."""
        t = self.t
        fn = t.stack.pop()
        t.enter(fn, text, layer=layer, result=result, mark=mark)

    def hook(self, hook: str, macro: str) -> bool:
        """A netfilter hook; False when the params make it drop the packet here."""
        t = self.t
        if self.p.drop == "netfilter" and self.p.hook == hook:
            t.enter(
                macro,
                msg(
                    "{macro} runs the {hook} hook. A rule in this chain returns DROP.",
                    macro=macro,
                    hook=hook,
                ),
                layer="netfilter",
                hook=hook,
            )
            t.leaf(
                "nf_hook_slow",
                msg(
                    "nf_hook_slow walks the hook's entries in priority order; the filter "
                    "table's verdict is NF_DROP, so it frees the packet itself and returns "
                    "-EPERM. The okfn after the hook never runs."
                ),
                layer="netfilter",
                hook=hook,
            )
            self.drop("NETFILTER_DROP", hook=hook)
            t.leave()
            return False
        t.leaf(
            macro,
            msg(
                "{macro} runs the {hook} hook: nf_hook_slow calls each registered function "
                "(conntrack, then the filter and nat chains); with no matching rule every "
                "verdict is NF_ACCEPT and the packet continues to the okfn.",
                macro=macro,
                hook=hook,
            ),
            layer="netfilter",
            hook=hook,
        )
        return True

    def drop(self, reason: str, hook: str | None = None) -> None:
        t = self.t
        t.counters["dropped"] += 1
        if t.cur is None:
            raise RuntimeError("internal: t.cur is unset here")
        self.s.free(t.cur, consume=False)
        t.leaf(
            "kfree_skb_reason",
            msg(
                "kfree_skb_reason frees the skb with drop reason SKB_DROP_REASON_{reason}; the "
                "skb:kfree_skb tracepoint reports that reason (dropwatch, perf and pwru read "
                "it).",
                reason=reason,
            ),
            layer="core",
            hook=hook,
            result="drop",
            mark="drop",
            drop=reason,
        )

    # ==========================================================================================
    # TX: the TCP sender down to ip_finish_output2
    # ==========================================================================================
    def tcp_send(self, i: int, payload: int, mss: int) -> str | None:
        """From write() to ip_finish_output2; returns the clone that goes on, None if dropped."""
        t, s = self.t, self.s
        t.context = "process"
        t.packet = i
        orig = self.name("skb")
        t.enter(
            "tcp_sendmsg",
            msg(
                "The application writes {bytes} bytes. tcp_sendmsg takes the socket lock and "
                "calls tcp_sendmsg_locked.",
                bytes=payload,
            ),
            layer="socket",
        )
        t.enter(
            "tcp_sendmsg_locked",
            msg(
                "tcp_sendmsg_locked needs a new skb at the tail of the write queue (the "
                "previous one is already sent)."
            ),
            layer="tcp",
        )
        s.tcp_stream_alloc(orig)
        t.cur = orig
        t.leaf(
            "tcp_stream_alloc_skb",
            msg(
                "tcp_stream_alloc_skb allocates an fclone skb whose head holds no data, only "
                "MAX_TCP_HEADER (320) bytes of headroom: data = tail = 320. Every header will "
                "be pushed in front of data later."
            ),
            layer="tcp",
        )
        s.copy_user_data(orig, payload)
        self.here(
            msg(
                "The {bytes} bytes are copied from user memory into page fragments "
                "(skb_copy_to_page_nocache into sk_page_frag): len = data_len = {bytes}, the "
                "linear head stays empty.",
                bytes=payload,
            ),
            "tcp",
        )
        s.header_release(orig)
        t.leaf(
            "tcp_skb_entail",
            msg(
                "tcp_skb_entail puts the skb on sk_write_queue and calls __skb_header_release: "
                "from now on only clones write headers into its headroom. The original stays "
                "queued until it is acknowledged."
            ),
            layer="tcp",
        )
        t.enter(
            "tcp_push",
            msg("tcp_push marks the end of the write (PSH) and pushes pending frames."),
            layer="tcp",
        )
        t.enter(
            "__tcp_push_pending_frames",
            msg("__tcp_push_pending_frames calls tcp_write_xmit with the current MSS."),
            layer="tcp",
        )
        segs = -(-payload // mss)
        s.set_gso(orig, mss if segs > 1 else 0, segs)
        t.enter(
            "tcp_write_xmit",
            msg(
                "tcp_write_xmit checks the congestion window, the receive window, pacing and "
                "TSQ, and sets the TSO segment count: {segs} segment(s) of at most {mss} bytes "
                "(gso_size {gso}). One skb goes down however many segments it holds.",
                segs=segs,
                mss=mss,
                gso=mss if segs > 1 else 0,
            ),
            layer="tcp",
        )
        clone = self.name("clone")
        s.clone(orig, clone)
        t.cur = clone
        t.enter(
            "__tcp_transmit_skb",
            msg(
                "__tcp_transmit_skb clones the skb, because the queued original must survive "
                "for retransmission. The clone uses the fclone companion allocated with it: "
                "no allocation, dataref 1 → 2."
            ),
            layer="tcp",
        )
        s.push(clone, TCP_HLEN, "TCP")
        s.set_header(clone, "transport")
        self.here(
            msg(
                "skb_push(32) makes room for the TCP header with the timestamp option and "
                "transport_header is set there. Ports, seq, ack, flags and window are written; "
                "the checksum is left to the NIC (CHECKSUM_PARTIAL)."
            ),
            "tcp",
        )
        s.push(clone, IP_HLEN, "IP")
        s.set_header(clone, "network")
        t.enter(
            "__ip_queue_xmit",
            msg(
                "__ip_queue_xmit (ip_queue_xmit's body) finds the route cached on the socket, "
                "so there is no FIB lookup. skb_push(20) for the IPv4 header, network_header "
                "set, then TTL, protocol and addresses are written."
            ),
            layer="ip",
        )
        t.enter(
            "ip_local_out",
            msg("ip_local_out runs __ip_local_out, then dst_output if the hook let it pass."),
            layer="ip",
        )
        t.enter(
            "__ip_local_out",
            msg(
                "__ip_local_out sets tot_len and computes the IP header checksum, then calls "
                "nf_hook for LOCAL_OUT."
            ),
            layer="ip",
        )
        if not self.hook("LOCAL_OUT", "nf_hook"):
            return None
        t.leave()
        t.leaf(
            "dst_output",
            msg("dst_output (inline) calls the route's output function, ip_output."),
            layer="ip",
        )
        t.enter(
            "ip_output",
            msg("ip_output sets skb->dev to the route's device and runs POST_ROUTING."),
            layer="ip",
        )
        if not self.hook("POST_ROUTING", "NF_HOOK_COND"):
            return None
        self.finish_output(clone)
        return clone

    def finish_output(self, skb: str) -> None:
        t = self.t
        t.enter(
            "ip_finish_output",
            msg("ip_finish_output runs the cgroup BPF egress program (none here)."),
            layer="ip",
        )
        gso = self.s.gso[skb][1] > 1
        if gso:
            text = msg(
                "__ip_finish_output: the skb is GSO, so each future segment is checked against "
                "the MTU (skb_gso_validate_network_len), not the skb's length; they fit."
            )
        else:
            text = msg(
                "__ip_finish_output: {len} bytes fit the device MTU; no fragmentation.",
                len=self.s.length(skb),
            )
        t.enter("__ip_finish_output", text, layer="ip")
        t.enter(
            "ip_finish_output2",
            msg(
                "ip_finish_output2 checks headroom for the link header (LL_RESERVED_SPACE, 16 "
                "bytes; {headroom} are free, so no reallocation) and looks up the next hop's "
                "neighbour entry.",
                headroom=self.s.data(skb),
            ),
            layer="neigh",
        )

    def neigh_cached(self, skb: str) -> None:
        t, s = self.t, self.s
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

    # ==========================================================================================
    # TX on the NIC
    # ==========================================================================================
    def dev_queue_xmit_nic(self, skb: str, dev: str) -> None:
        t, s = self.t, self.s
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
        queued = self.p.qdisc_queued
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
        gso_sw = not self.p.tso and s.gso[skb][1] > 1
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
            self.hard_start(skb)
            self.igb_send(skb, tso=s.gso[skb][1] > 1)
            self.sent = [skb]
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
        self.gso_segment(skb)
        segs = list(self.sent)
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
            self.igb_send(seg, tso=False)
            t.unwind(d)

    def gso_segment(self, skb: str) -> None:
        """validate_xmit_skb → skb_gso_segment → ... → skb_segment: one skb per MSS."""
        t, s = self.t, self.s
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
                "but the last, and sets the checksums.",
                mss=mss,
            ),
            layer="tcp",
        )
        self.sent = []
        left = total
        for k in range(count):
            name = self.name("seg")
            size = min(mss, left)
            left -= size
            s.alloc_skb(name, headroom + FRAME)
            s.reserve(name, headroom)
            s.put(name, FRAME, "headers")
            s.set_header(name, "mac")
            s.set_header(name, "network", headroom + ETH_HLEN)
            s.set_header(name, "transport", headroom + ETH_HLEN + IP_HLEN)
            s.add_frag(name, size, size)
            self.sent.append(name)
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
        self.here(
            msg(
                "validate_xmit_skb consume_skb()s the original GSO clone: its job is done, "
                "dataref on the write-queue skb's head falls back to 1 (the segments hold the "
                "pages through their own frag references)."
            ),
            "dev",
        )
        t.unwind(len(t.stack) - 2)  # back in sch_direct_xmit

    def igb_send(self, skb: str, *, tso: bool) -> None:
        t, s = self.t, self.s
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

    def hard_start(self, skb: str) -> None:
        t = self.t
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

    def tx_completion(self, skb: str) -> None:
        """A later NAPI poll frees the sent clone."""
        t, s = self.t, self.s
        t.context = "softirq"
        t.stack = ["__do_softirq", "net_rx_action", "__napi_poll", "igb_poll"]
        sent = self.sent or [skb]
        for done in sent:
            s.free(done)
        t.cur = sent[-1]
        if sent == [skb]:
            text = msg(
                "Later the NIC reports the descriptors done; igb_poll's igb_clean_tx_irq "
                "unmaps them and frees the clone (napi_consume_skb): dataref falls back to 1. "
                "The original stays on the write queue until the peer ACKs it."
            )
        else:
            text = msg(
                "Later the NIC reports the descriptors done; igb_clean_tx_irq unmaps them and "
                "frees the {n} segments (napi_consume_skb). The original stays on the write "
                "queue until the peer ACKs it.",
                n=len(sent),
            )
        t.leaf("igb_clean_tx_irq", text, layer="driver")
        t.stack = []
        self.sent = []

    def walk_tx_nic(self) -> None:
        p, t = self.p, self.t
        for i in range(p.packets):
            clone = self.tcp_send(i, p.payload_bytes, MSS)
            if clone is None:
                t.stack = []
                continue
            if p.neigh == "arp" and i == 0:
                self.neigh_arp(clone)
            else:
                self.neigh_cached(clone)
                self.dev_queue_xmit_nic(clone, "eth0")
                t.stack = []
            self.tx_completion(clone)

    def neigh_arp(self, skb: str) -> None:
        t, s = self.t, self.s
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
        self.dev_queue_xmit_nic(skb, "eth0")
        t.stack = []

    # ==========================================================================================
    # RX on the NIC: IRQ, NAPI, driver, GRO
    # ==========================================================================================
    def walk_rx_nic(self) -> None:
        p, t = self.p, self.t
        segs = self.make_segments()
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
        self.irq(len(segs))
        pending = list(segs)
        self.scheduled = True
        while self.scheduled:
            self.net_rx_action(pending)
        t.napi = napi
        self.readers()
        del p

    def make_segments(self) -> list[Seg]:
        p = self.p
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

    def bucket(self, flow: int) -> int:
        return 0 if self.p.same_bucket else flow % GRO_HASH_BUCKETS

    def irq(self, frames: int) -> None:
        t = self.t
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

    def net_rx_action(self, pending: list[Seg]) -> None:
        t = self.t
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
            work = self.poll(pending)
            napi["budget"] -= work
            if work < WEIGHT:
                t.stack = ["__do_softirq", "net_rx_action"]
                t.cur = None
                self.here(
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
                self.here(
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

    def poll(self, pending: list[Seg]) -> int:
        t = self.t
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
            self.rx_one(seg, depth)
            napi["work"] += 1
            t.unwind(depth)
        work = napi["work"]
        t.cur = None
        if work >= WEIGHT:
            t.unwind(depth - 1)
            self.here(
                msg(
                    "64 packets done, the weight is used up: igb_poll returns 64 without "
                    "completing NAPI, so the interrupt stays off."
                ),
                "driver",
            )
            t.unwind(depth - 2)
            self.here(
                msg(
                    "work == weight: the instance stays scheduled. __napi_poll flushes only "
                    "GRO packets older than this jiffy (napi_gro_flush with flush_old, HZ "
                    "1000), so packets held now stay held, then passes rx_list up with "
                    "gro_normal_list and puts the instance on the repoll list."
                ),
                "napi",
                mark="repoll",
            )
            if self.rx_list:
                self.gro_normal_list()
            return work
        t.unwind(depth - 1)
        self.here(
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
        if self.held:
            t.enter(
                "napi_gro_flush",
                msg(
                    "napi_gro_flush completes the {n} held packet(s), oldest first.",
                    n=len(self.held),
                ),
                layer="gro",
            )
            d = len(t.stack)
            for h in sorted(self.held, key=lambda h: h.bucket):
                self.held.remove(h)
                self.sync_held()
                self.complete(h.seg, d)
                t.unwind(d)
            t.leave()
        if self.rx_list:
            self.gro_normal_list()
        t.unwind(depth - 1)
        napi["irq_enabled"] = True
        self.scheduled = False
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

    def rx_one(self, seg: Seg, depth: int) -> None:
        t, s, p = self.t, self.s, self.p
        name = self.name("rx")
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
            self.here(
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
            self.here(
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
            self.checksum_drop(seg, depth)
            return
        self.gro(seg)

    def checksum_drop(self, seg: Seg, depth: int) -> None:
        """A frame whose IPv4 header checksum is wrong: GRO refuses it, ip_rcv_core drops it."""
        t = self.t
        t.enter(
            "napi_gro_receive",
            msg("napi_gro_receive hands the skb to dev_gro_receive."),
            layer="gro",
        )
        t.enter("dev_gro_receive", msg("dev_gro_receive calls inet_gro_receive."), layer="gro")
        t.leaf(
            "inet_gro_receive",
            msg(
                "inet_gro_receive recomputes the IPv4 header checksum (ip_fast_csum): it is "
                "wrong (a bit flipped on the way), so the packet is not aggregated and is "
                "flagged flush."
            ),
            layer="gro",
            mark="csum",
        )
        t.leave()
        t.enter(
            "napi_skb_finish",
            msg("napi_skb_finish: GRO_NORMAL, the skb goes to rx_list as it is."),
            layer="gro",
        )
        self.to_rx_list(seg)
        t.unwind(depth)

    # -- GRO -----------------------------------------------------------------------------------
    def sync_held(self) -> None:
        napi = self.t.napi
        if napi is None:
            return
        held: list[HeldView] = [
            {"bucket": h.bucket, "flow": h.seg.flow, "segs": h.seg.segs, "len": h.length}
            for h in self.held
        ]
        napi["held"] = held

    def gro(self, seg: Seg) -> None:
        t, s = self.t, self.s
        b = self.bucket(seg.flow)
        t.enter(
            "napi_gro_receive",
            msg(
                "napi_gro_receive starts GRO: the GRO offset is reset to skb->data. GRO reads "
                "headers through that offset and never moves skb->data."
            ),
            layer="gro",
        )
        s.set_header(seg.skb, "network")
        in_bucket = [h for h in self.held if h.bucket == b]
        t.enter(
            "dev_gro_receive",
            msg(
                "dev_gro_receive: bucket = hash & 7 = {b}, which holds {n} packet(s). "
                "gro_list_prepare marks those with the same device and MAC header as "
                "possible matches; network_header is set at data.",
                b=b,
                n=len(in_bucket),
            ),
            layer="gro",
        )
        s.set_header(seg.skb, "transport", s.data(seg.skb) + IP_HLEN)
        t.enter(
            "inet_gro_receive",
            msg(
                "inet_gro_receive checks the IPv4 header (version 4, ihl 5, no fragment, "
                "checksum), keeps as matches only packets with the same addresses, TTL, TOS "
                "and DF, moves the GRO offset past 20 bytes and calls the TCP handler."
            ),
            layer="gro",
        )
        t.enter(
            "tcp4_gro_receive",
            msg(
                "tcp4_gro_receive: the NIC already validated the checksum "
                "(CHECKSUM_UNNECESSARY), so nothing is summed; on to tcp_gro_receive."
            ),
            layer="gro",
        )
        match = next((h for h in in_bucket if h.seg.flow == seg.flow), None)
        result = self.tcp_gro_receive(seg, match)
        t.unwind(len(t.stack) - 2)  # back in dev_gro_receive
        self.dev_gro_finish(seg, b, match, result)
        t.unwind(len(t.stack) - 1)  # back in napi_gro_receive
        if result == "merged":
            t.enter(
                "napi_skb_finish",
                msg(
                    "napi_skb_finish: GRO_MERGED_FREE. Only the sk_buff shell of the merged "
                    "segment is freed; its data now belongs to the held packet."
                ),
                layer="gro",
            )
            t.cur = match.seg.skb if match is not None else None
        elif result in ("normal", "normal_pp"):
            t.enter(
                "napi_skb_finish",
                msg("napi_skb_finish: GRO_NORMAL, so gro_normal_one puts the skb on rx_list."),
                layer="gro",
            )
            self.to_rx_list(seg)
        else:
            t.enter(
                "napi_skb_finish",
                msg("napi_skb_finish: GRO_HELD, nothing to do; the skb waits in its bucket."),
                layer="gro",
                result="held",
            )

    def tcp_gro_receive(self, seg: Seg, match: Held | None) -> str:
        """Returns "held", "normal", "merged", "merged_flush", "flush_new" (p flushed, skb held)
        or "normal_pp" (p flushed, skb normal)."""
        t, s = self.t, self.s
        t.cur = seg.skb
        if match is None:
            if seg.psh:
                t.enter(
                    "tcp_gro_receive",
                    msg(
                        "tcp_gro_receive: no held packet of this flow. The segment has PSH, "
                        "and PSH forces a flush, so it is not held: it goes up as it is."
                    ),
                    layer="gro",
                    mark="flush",
                )
                return "normal"
            t.enter(
                "tcp_gro_receive",
                msg(
                    "tcp_gro_receive: no held packet of this flow, no PSH/URG/RST/SYN/FIN: "
                    "nothing forces a flush, so the segment will be held to absorb the next "
                    "ones."
                ),
                layer="gro",
            )
            return "held"
        p = match.seg
        mss = s.gso[p.skb][0]
        too_big = match.length + seg.payload >= GRO_MAX_SIZE
        if seg.payload > mss:
            t.enter(
                "tcp_gro_receive",
                msg(
                    "tcp_gro_receive: this segment ({len}) is longer than the held packet's "
                    "gso_size ({mss}); it cannot be merged. The held packet is flushed and "
                    "this one takes its place.",
                    len=seg.payload,
                    mss=mss,
                ),
                layer="gro",
                mark="flush",
            )
            return "normal_pp" if seg.psh else "flush_new"
        t.enter(
            "tcp_gro_receive",
            msg(
                "tcp_gro_receive finds the held packet of this flow: same ports, flags apart "
                "from PSH/FIN/CWR, same ack and options, seq contiguous with its end, length "
                "≤ its gso_size {mss}. Nothing sets flush, so skb_gro_receive merges.",
                mss=mss,
            ),
            layer="gro",
            notes=(
                msg(
                    "Linux 6.12 moved the IP-level flush checks (TTL, TOS, DF, IP ID) from "
                    "inet_gro_receive into tcp_gro_receive (gro_receive_network_flush); the "
                    "rules are the same."
                ),
            ),
        )
        if too_big:
            t.leaf(
                "skb_gro_receive",
                msg(
                    "skb_gro_receive refuses: the held packet ({plen}) plus {len} would reach "
                    "gro_max_size 65536 (-E2BIG). The held packet is flushed and this segment "
                    "is held in its place.",
                    plen=match.length,
                    len=seg.payload,
                ),
                layer="gro",
                mark="flush",
            )
            return "normal_pp" if seg.psh else "flush_new"
        t.cur = p.skb
        last = s.last.get(p.skb, p.skb)  # NAPI_GRO_CB(p)->last: where frags are added
        went = s.gro_merge(p.skb, seg.skb, HDRS, seg.payload)
        p.segs += 1
        match.length += seg.payload
        self.sync_held()
        if went == "frags" and last != p.skb:
            text = msg(
                "skb_gro_receive merges into {last}, the last skb on the held skb's frag_list "
                "(NAPI_GRO_CB(p)->last): the segment's payload becomes a page fragment of "
                "{last} ({n} there now; the headers are skipped, not copied) and the held skb "
                "grows: len {len}, {segs} segments. The segment's own sk_buff will be freed.",
                last=last,
                n=s.last_frags[p.skb],
                len=s.length(p.skb),
                segs=p.segs,
            )
        elif went == "frags":
            text = msg(
                "skb_gro_receive merges: the segment's payload becomes one more page fragment "
                "of the held skb (frags[], {nr} now; the headers are skipped, not copied) and "
                "the held skb grows: len {len}, {segs} segments. The segment's own sk_buff "
                "will be freed.",
                nr=s.frags(p.skb),
                len=s.length(p.skb),
                segs=p.segs,
            )
        else:
            text = msg(
                "skb_gro_receive: frags[] already has MAX_SKB_FRAGS (17) entries, so the "
                "whole segment skb (headers pulled) is chained on the held skb's frag_list "
                "instead; len {len}, {segs} segments.",
                len=s.length(p.skb),
                segs=p.segs,
            )
        t.leaf("skb_gro_receive", text, layer="gro", result="merged")
        t.cur = p.skb
        short = seg.payload < mss
        if seg.psh or short:
            why = "PSH" if seg.psh else "a segment shorter than gso_size"
            self.here(
                msg(
                    "After merging, {why} forces a flush: the held packet is returned to "
                    "dev_gro_receive to be completed now.",
                    why=why,
                ),
                "gro",
                mark="flush",
            )
            return "merged_flush"
        return "merged"

    def dev_gro_finish(self, seg: Seg, b: int, match: Held | None, result: str) -> None:
        t = self.t
        d = len(t.stack)
        if result in ("merged_flush", "flush_new", "normal_pp") and match is not None:
            self.held.remove(match)
            self.sync_held()
            self.complete(match.seg, d)
            t.unwind(d)
        if result == "merged" or result == "merged_flush":
            return
        if result in ("held", "flush_new"):
            in_bucket = [h for h in self.held if h.bucket == b]
            t.cur = seg.skb
            if len(in_bucket) >= MAX_GRO_SKBS:
                oldest = in_bucket[0]
                t.enter(
                    "gro_flush_oldest",
                    msg(
                        "Bucket {b} already holds MAX_GRO_SKBS = 8 packets: gro_flush_oldest "
                        "completes the oldest (flow {flow}) to make room.",
                        b=b,
                        flow=oldest.seg.flow,
                    ),
                    layer="gro",
                    mark="flush",
                )
                self.held.remove(oldest)
                self.sync_held()
                self.complete(oldest.seg, len(t.stack))
                t.unwind(d)
            t.cur = seg.skb
            self.s.set_gso(seg.skb, seg.payload, 0)
            self.held.append(Held(seg=seg, bucket=b, length=self.s.length(seg.skb)))
            self.sync_held()
            self.here(
                msg(
                    "dev_gro_receive holds the skb in bucket {b}: count 1, gso_size = its "
                    "payload ({mss}) and age = now. Result GRO_HELD.",
                    b=b,
                    mss=seg.payload,
                ),
                "gro",
                result="held",
            )

    def complete(self, seg: Seg, depth: int) -> None:
        """napi_gro_complete: fix the headers of a GRO packet and pass it to rx_list."""
        t, s = self.t, self.s
        t.cur = seg.skb
        t.packet = seg.index
        if seg.segs == 1:
            s.set_gso(seg.skb, 0, 0)
            t.enter(
                "napi_gro_complete",
                msg(
                    "napi_gro_complete: the packet absorbed nothing (count 1), so it is sent "
                    "up as a plain segment with gso_size cleared."
                ),
                layer="gro",
            )
        else:
            s.set_gso(seg.skb, s.gso[seg.skb][0], seg.segs)
            t.enter(
                "napi_gro_complete",
                msg(
                    "napi_gro_complete: the packet holds {segs} segments ({len} bytes from "
                    "the IP header).",
                    segs=seg.segs,
                    len=s.length(seg.skb),
                ),
                layer="gro",
            )
            t.leaf(
                "inet_gro_complete",
                msg("inet_gro_complete rewrites the IP tot_len and header checksum."),
                layer="gro",
            )
            t.leaf(
                "tcp4_gro_complete",
                msg(
                    "tcp4_gro_complete sets the TCP pseudo-header checksum and gso_type "
                    "TCPV4; gso_segs = {segs}, gso_size = {mss}. To the stack it is one "
                    "large TCP segment.",
                    segs=seg.segs,
                    mss=s.gso[seg.skb][0],
                ),
                layer="gro",
            )
        self.to_rx_list(seg)
        t.unwind(depth)

    def to_rx_list(self, seg: Seg) -> None:
        t = self.t
        napi = t.napi
        if napi is None:
            raise RuntimeError("internal: napi is unset here")
        self.rx_list.append(seg)
        napi["rx_count"] += seg.segs
        t.cur = seg.skb
        t.enter(
            "gro_normal_one",
            msg(
                "gro_normal_one appends the skb to napi->rx_list: rx_count {n} (segments, "
                "not skbs). At gro_normal_batch = 8 the list is passed up at once.",
                n=napi["rx_count"],
            ),
            layer="gro",
        )
        if napi["rx_count"] >= GRO_NORMAL_BATCH:
            self.gro_normal_list()

    def gro_normal_list(self) -> None:
        t = self.t
        napi = t.napi
        if napi is None:
            raise RuntimeError("internal: napi is unset here")
        batch = list(self.rx_list)
        self.rx_list.clear()
        count = napi["rx_count"]
        napi["rx_count"] = 0
        if not batch:
            return
        t.cur = batch[0].skb
        t.enter(
            "gro_normal_list",
            msg(
                "gro_normal_list passes {n} skb(s) ({segs} segments) up the stack as one "
                "list and resets rx_count.",
                n=len(batch),
                segs=count,
            ),
            layer="gro",
            mark="deliver",
        )
        self.deliver_list(batch)
        t.leave()

    # ==========================================================================================
    # Delivery: list receive, IP, TCP
    # ==========================================================================================
    def deliver_list(self, batch: list[Seg]) -> None:
        t, s = self.t, self.s
        base = len(t.stack)
        t.enter(
            "netif_receive_skb_list_internal",
            msg(
                "netif_receive_skb_list_internal: RPS is off, so the whole list stays on this CPU."
            ),
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
            if self.p.drop == "checksum" and seg.index == 0 and self.p.device == "nic":
                t.enter(
                    "ip_rcv_core",
                    msg(
                        "ip_rcv_core recomputes the IPv4 header checksum: it does not match, "
                        "so the packet is dropped (IPSTATS InCsumErrors)."
                    ),
                    layer="ip",
                    mark="csum",
                )
                self.drop("IP_CSUM")
                t.leave()
                continue
            s.set_header(seg.skb, "transport", s.data(seg.skb) + IP_HLEN)
            t.leaf(
                "ip_rcv_core",
                msg(
                    "ip_rcv_core checks version, ihl and checksum (pskb_may_pull for the "
                    "header), trims link padding to tot_len and sets transport_header = "
                    "network_header + 20. data still points at the IP header."
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
            if self.hook("PRE_ROUTING", "NF_HOOK_LIST"):
                kept.append(seg)
        if kept:
            t.enter(
                "ip_list_rcv_finish",
                msg("ip_list_rcv_finish routes each skb and groups them by route."),
                layer="ip",
            )
            routed: list[Seg] = []
            for seg in kept:
                t.cur = seg.skb
                t.packet = seg.index
                if self.route(seg):
                    routed.append(seg)
            if routed:
                t.enter(
                    "ip_sublist_rcv_finish",
                    msg("ip_sublist_rcv_finish calls dst_input on each skb in turn."),
                    layer="ip",
                )
                d = len(t.stack)
                for seg in routed:
                    t.cur = seg.skb
                    t.packet = seg.index
                    self.dst_input(seg)
                    t.unwind(d)
        t.unwind(base)

    def route(self, seg: Seg) -> bool:
        """ip_rcv_finish_core; False when the packet is dropped there."""
        t = self.t
        if self.p.drop == "no_socket":
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
            return True
        if self.p.path == "forward":
            t.enter(
                "ip_rcv_finish_core",
                msg(
                    "ip_rcv_finish_core: early demux finds no local socket for this "
                    "destination, so the route is looked up."
                ),
                layer="ip",
            )
            if self.p.drop == "no_route":
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
            return True
        t.enter(
            "ip_rcv_finish_core",
            msg(
                "ip_rcv_finish_core: early demux (tcp_v4_early_demux) finds the established "
                "socket by its 4-tuple and attaches it and its cached input route to the "
                "skb, so no FIB lookup is needed."
            ),
            layer="ip",
        )
        t.leaf(
            "tcp_v4_early_demux",
            msg("tcp_v4_early_demux: socket found, skb->sk set, sk_rx_dst reused."),
            layer="tcp",
        )
        t.leave()
        return True

    def dst_input(self, seg: Seg) -> None:
        t = self.t
        t.leaf(
            "dst_input",
            msg("dst_input (inline) calls the route's input function."),
            layer="ip",
        )
        if self.p.path == "forward":
            if self.p.drop == "no_route":
                t.enter(
                    "ip_error",
                    msg(
                        "ip_error: the route's error is ENETUNREACH. Forwarding is on, so it "
                        "sends ICMP network unreachable to the sender (rate-limited per "
                        "peer) and drops the packet."
                    ),
                    layer="ip",
                )
                self.drop("IP_INNOROUTES")
                t.leave()
                return
            self.forward(seg)
            return
        self.local_deliver(seg)

    def local_deliver(self, seg: Seg) -> None:
        t, s = self.t, self.s
        t.enter(
            "ip_local_deliver",
            msg(
                "ip_local_deliver: the packet is for this host and not a fragment, so no "
                "reassembly. LOCAL_IN comes next."
            ),
            layer="ip",
        )
        if not self.hook("LOCAL_IN", "NF_HOOK"):
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
        self.tcp_rcv(seg)

    def tcp_rcv(self, seg: Seg) -> None:
        t, s, p = self.t, self.s, self.p
        if p.drop == "no_socket":
            t.enter(
                "tcp_v4_rcv",
                msg(
                    "tcp_v4_rcv: the header is sane, but __inet_lookup_skb finds no socket for "
                    "the 4-tuple (nobody listens on the port): goto no_tcp_socket."
                ),
                layer="tcp",
                mark="rst",
            )
            t.leaf(
                "tcp_v4_send_reset",
                msg(
                    "The checksum is fine, so tcp_v4_send_reset answers with a RST (seq "
                    "taken from the segment's ack, or ack = seq + len) through the per-netns "
                    "control socket."
                ),
                layer="tcp",
            )
            self.drop("NO_SOCKET")
            return
        t.enter(
            "tcp_v4_rcv",
            msg(
                "tcp_v4_rcv: pskb_may_pull for the 32-byte header (doff 8), checksum already "
                "validated, socket taken from skb->sk (early demux), TCP_SKB_CB filled (seq, "
                "end_seq, flags). The reader is not holding the socket lock, so the segment is "
                "processed now: tcp_v4_do_rcv. data stays at the TCP header."
            ),
            layer="tcp",
        )
        t.enter(
            "tcp_v4_do_rcv",
            msg("tcp_v4_do_rcv: state ESTABLISHED → tcp_rcv_established."),
            layer="tcp",
        )
        if p.fast_path:
            t.enter(
                "tcp_rcv_established",
                msg(
                    "tcp_rcv_established (tcp_probe fires here): header prediction holds: "
                    "flags and header length match pred_flags, seq == rcv_nxt, the window did "
                    "not change. Fast path for data."
                ),
                layer="tcp",
                notes=(
                    msg(
                        "If the skb's truesize is larger than the socket's sk_forward_alloc "
                        "(as for the first data segment of a new connection), the fast path "
                        "jumps to step5 and the data goes through tcp_ack and tcp_data_queue "
                        "instead; the kernel check saw exactly that."
                    ),
                ),
            )
            s.pull(seg.skb, TCP_HLEN)
            self.here(
                msg(
                    "Fast path: __skb_pull(32) drops the TCP header; data now points at the "
                    "payload, len {len}.",
                    len=s.length(seg.skb),
                ),
                "tcp",
            )
            self.queue_rcv(seg)
            t.leaf(
                "tcp_event_data_recv",
                msg("tcp_event_data_recv updates the delayed-ACK estimator and receive buffer."),
                layer="tcp",
            )
            t.leaf(
                "__tcp_ack_snd_check",
                msg(
                    "__tcp_ack_snd_check: ACK now if more than one full segment is unacked, "
                    "else arm the delayed-ACK timer."
                ),
                layer="tcp",
            )
            self.data_ready(seg)
            return
        t.enter(
            "tcp_rcv_established",
            msg(
                "tcp_rcv_established (tcp_probe fires here): header prediction fails (the "
                "segment advertises a new window), so the slow path runs."
            ),
            layer="tcp",
        )
        t.leaf(
            "tcp_validate_incoming",
            msg("tcp_validate_incoming: PAWS timestamp and sequence window checks pass."),
            layer="tcp",
        )
        t.leaf(
            "tcp_ack",
            msg("tcp_ack processes the ACK field and the window update."),
            layer="tcp",
        )
        s.pull(seg.skb, TCP_HLEN)
        t.enter(
            "tcp_data_queue",
            msg(
                "tcp_data_queue: __skb_pull(32) (th->doff × 4): data now points at the "
                "payload, len {len}. seq == rcv_nxt, so it is in order.",
                len=s.length(seg.skb),
            ),
            layer="tcp",
        )
        self.queue_rcv(seg)
        self.data_ready(seg)

    def queue_rcv(self, seg: Seg) -> None:
        t, s = self.t, self.s
        t.counters["receive_queue"] += 1
        t.leaf(
            "tcp_queue_rcv",
            msg(
                "tcp_queue_rcv appends the skb to sk_receive_queue (queue length {n}) and "
                "charges its truesize {ts} to the socket; rcv_nxt advances by {len}. (The "
                "kernel first tries tcp_try_coalesce into the queue's tail skb; this model "
                "always queues.)",
                n=t.counters["receive_queue"],
                ts=s.view(seg.skb)["truesize"],
                len=s.length(seg.skb),
            ),
            layer="tcp",
        )
        self.delivered.append(seg)

    def data_ready(self, seg: Seg) -> None:
        t = self.t
        t.enter(
            "tcp_data_ready",
            msg("tcp_data_ready: enough bytes are queued (≥ SO_RCVLOWAT 1), call sk_data_ready."),
            layer="tcp",
        )
        t.leaf(
            "sock_def_readable",
            msg(
                "sock_def_readable (sk->sk_data_ready) wakes the task sleeping in recv() on "
                "the socket's wait queue (EPOLLIN for epoll). It runs later, in process "
                "context."
            ),
            layer="socket",
            mark="wake",
        )
        del seg

    def readers(self) -> None:
        t, s = self.t, self.s
        if not self.delivered:
            return
        t.context = "process"
        t.napi = None
        t.stack = []
        t.ns = "ns2" if self.p.device == "veth" else t.ns
        t.enter(
            "tcp_recvmsg",
            msg("The reader wakes up in tcp_recvmsg and takes the socket lock."),
            layer="socket",
        )
        for seg in self.delivered:
            t.cur = seg.skb
            t.packet = seg.index
            n = s.length(seg.skb)
            t.counters["receive_queue"] -= 1
            t.counters["delivered_bytes"] += n
            s.free(seg.skb)
            t.leaf(
                "tcp_recvmsg_locked",
                msg(
                    "tcp_recvmsg_locked copies {n} bytes from the skb to user memory "
                    "(skb_copy_datagram_msg) and frees it: a consumed skb, not a drop.",
                    n=n,
                ),
                layer="socket",
            )
        t.stack = []
        self.delivered.clear()

    # ==========================================================================================
    # Forwarding
    # ==========================================================================================
    def forward(self, seg: Seg) -> None:
        t, s = self.t, self.s
        ttl = 1 if self.p.drop == "ttl" else 64
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
            self.drop("IP_INHDR")
            return
        t.enter(
            "ip_forward",
            msg(
                "ip_forward: pkt_type is PACKET_HOST, TTL 64 > 1, and the packet fits the "
                "outgoing MTU (a GRO packet is checked per segment). skb_cow makes sure the header is private with 16 "
                "bytes of link headroom ({h} free).",
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
        if not self.hook("FORWARD", "NF_HOOK"):
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
        if not self.hook("POST_ROUTING", "NF_HOOK_COND"):
            return
        self.finish_output(seg.skb)
        self.neigh_cached(seg.skb)
        d = len(t.stack)
        self.dev_queue_xmit_nic(seg.skb, "eth1")
        t.unwind(d)

    # ==========================================================================================
    # Loopback and veth: run to completion through the backlog NAPI
    # ==========================================================================================
    def walk_local(self) -> None:
        p, t = self.p, self.t
        veth = p.device == "veth"
        mss = MSS if veth else 65483  # loopback MTU 65536 - 20 - 32 - 1 rounding in tcp_mtu_to_mss
        if p.drop == "backlog_full":
            t.counters["backlog"] = NETDEV_MAX_BACKLOG + 1
        for i in range(p.packets):
            t.ns = "ns1" if veth else "host"
            t.dev = "veth0" if veth else "lo"
            clone = self.tcp_send(i, p.payload_bytes, mss)
            if clone is None:
                t.stack = []
                continue
            top = len(t.stack)  # ip_finish_output2 is on top
            self.neigh_cached(clone)
            if not self.local_xmit(clone, veth):
                t.stack = []
                continue
            t.unwind(top + 1)  # back in __dev_queue_xmit
            self.softirq_on_bh_enable(top)
            self.backlog_poll([Seg(skb=clone, flow=0, payload=p.payload_bytes, psh=True, index=i)])
            t.stack = []
            t.napi = None
            self.readers()

    def local_xmit(self, skb: str, veth: bool) -> bool:
        """__dev_queue_xmit on a noqueue device down to enqueue_to_backlog."""
        t, s = self.t, self.s
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
        self.hard_start(skb)
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
                    "timestamp (skb_scrub_packet)."
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
            t.enter(
                "loopback_xmit",
                msg(
                    "loopback_xmit orphans the skb (the sender's socket no longer pays for it) "
                    "and turns the transmitted frame around."
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
            self.drop("CPU_BACKLOG")
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

    def softirq_on_bh_enable(self, top: int) -> None:
        t = self.t
        t.cur = t.cur
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
        del top

    def backlog_poll(self, segs: list[Seg]) -> None:
        t = self.t
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
            self.deliver_one(seg)
            t.unwind(d)

    def deliver_one(self, seg: Seg, dev: str | None = None) -> None:
        """__netif_receive_skb down to ip_rcv and TCP, one skb (no list, no GRO)."""
        t, s = self.t, self.s
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
        t.leaf(
            "ip_rcv_core",
            msg("ip_rcv_core: version 4, ihl 5, checksum (skipped for loopback traffic) ok."),
            layer="ip",
        )
        if not self.hook("PRE_ROUTING", "NF_HOOK"):
            return
        t.enter(
            "ip_rcv_finish",
            msg("ip_rcv_finish: l3mdev hook, then ip_rcv_finish_core and dst_input."),
            layer="ip",
        )
        self.route(seg)
        self.dst_input(seg)

    # ==========================================================================================
    # A container's packet: veth → bridge (br_netfilter) → forward → MASQUERADE → NIC
    # ==========================================================================================
    def walk_bridge_nat(self) -> None:
        p, t, s = self.p, self.t, self.s
        t.ns = "container"
        t.dev = "eth0"
        clone = self.tcp_send(0, p.payload_bytes, MSS)
        if clone is None:
            raise RuntimeError("internal: clone is unset here")
        top = len(t.stack)
        self.neigh_cached(clone)
        s.set_header(clone, "mac")
        t.enter(
            "__dev_queue_xmit",
            msg(
                "In the container, eth0 is one end of a veth pair; noqueue, so straight to "
                "the driver."
            ),
            layer="dev",
        )
        self.hard_start(clone)
        t.enter(
            "veth_xmit",
            msg("veth_xmit: the peer is vethA in the host namespace, a port of bridge docker0."),
            layer="driver",
        )
        t.enter("veth_forward_skb", msg("veth_forward_skb: __dev_forward_skb."), layer="driver")
        t.enter(
            "__dev_forward_skb",
            msg("__dev_forward_skb scrubs the skb for the host namespace."),
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
        self.softirq_on_bh_enable(top)
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
        t.enter(
            "ip_rcv",
            msg("ip_rcv → ip_rcv_core (checks pass), then the IPv4 PRE_ROUTING hook."),
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
        self.finish_output(clone)
        self.neigh_cached(clone)
        self.dev_queue_xmit_nic(clone, "eth0")
        t.stack = []
        self.tx_completion(clone)

    # ==========================================================================================
    # VXLAN: inner frame, then outer VXLAN/UDP/IP/Ethernet headers in the headroom
    # ==========================================================================================
    def walk_vxlan(self) -> None:
        p, t, s = self.p, self.t, self.s
        t.dev = "vxlan0"
        clone = self.tcp_send(0, p.payload_bytes, MSS - 50)
        if clone is None:
            raise RuntimeError("internal: clone is unset here")
        self.neigh_cached(clone)
        s.set_header(clone, "mac")
        t.enter(
            "__dev_queue_xmit",
            msg(
                "__dev_queue_xmit on vxlan0 (noqueue). The skb is a whole inner Ethernet "
                "frame now; inner offsets are remembered (inner_mac/network/transport)."
            ),
            layer="dev",
        )
        self.hard_start(clone)
        t.enter(
            "vxlan_xmit",
            msg(
                "vxlan_xmit looks the inner destination MAC up in the VXLAN FDB: it lives "
                "behind the remote VTEP 192.0.2.20."
            ),
            layer="vxlan",
        )
        t.enter(
            "vxlan_xmit_one",
            msg(
                "vxlan_xmit_one routes the outer packet to 192.0.2.20 (out of eth0) and picks "
                "the outer UDP source port from the inner flow's hash, so ECMP and RSS spread "
                "tunnelled flows."
            ),
            layer="vxlan",
        )
        s.push(clone, 8, "vxlan")
        t.leaf(
            "vxlan_build_skb",
            msg(
                "vxlan_build_skb: skb_cow_head asks for 52 bytes of headroom (16 link + 16 "
                "VXLAN/UDP + 20 IP); {h} are free, so no copy. It marks the skb as "
                "encapsulated and __skb_push(8)es the VXLAN header (VNI).",
                h=s.data(clone) + 8,
            ),
            layer="vxlan",
        )
        s.push(clone, 8, "UDP")
        s.set_header(clone, "transport")
        t.enter(
            "udp_tunnel_xmit_skb",
            msg(
                "udp_tunnel_xmit_skb __skb_push(8)es the outer UDP header (port 4789) and "
                "resets transport_header to it; udp_set_csum fills the checksum."
            ),
            layer="vxlan",
        )
        s.push(clone, IP_HLEN, "IP")
        s.set_header(clone, "network")
        t.enter(
            "iptunnel_xmit",
            msg(
                "iptunnel_xmit scrubs the skb, skb_push(20)es the outer IPv4 header (protocol "
                "UDP, DF copied) and resets network_header, then ip_local_out."
            ),
            layer="vxlan",
        )
        t.enter(
            "ip_local_out",
            msg("ip_local_out for the outer packet."),
            layer="ip",
        )
        t.enter(
            "__ip_local_out",
            msg("__ip_local_out: outer tot_len and checksum; LOCAL_OUT for the outer packet."),
            layer="ip",
        )
        self.hook("LOCAL_OUT", "nf_hook")
        t.leave()
        t.dev = "eth0"
        t.enter(
            "ip_output",
            msg("ip_output: skb->dev = eth0; POST_ROUTING."),
            layer="ip",
        )
        self.hook("POST_ROUTING", "NF_HOOK_COND")
        self.finish_output(clone)
        self.neigh_cached(clone)
        self.dev_queue_xmit_nic(clone, "eth0")
        t.stack = []
        self.tx_completion(clone)

    def run(self) -> None:
        p = self.p
        if p.scenario == "bridge_nat":
            self.walk_bridge_nat()
        elif p.scenario == "vxlan":
            self.walk_vxlan()
        elif p.device != "nic":
            self.walk_local()
        elif p.path == "tx":
            self.walk_tx_nic()
        else:
            self.walk_rx_nic()
