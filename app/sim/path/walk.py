"""The walk core: what every stage of the packet path shares. A :class:`Walk` holds one run's
params, its :class:`~app.sim.path.engine.Tracer` and its sk_buffs, plus the NAPI/GRO state the
receive stages pass along (GRO's held packets, napi->rx_list, the segments delivered). The stages
are functions of a ``Walk`` in their own modules, each named after the kernel file(s) it follows;
app.sim.path.walks is the table of whole walks.

Two pieces every stage uses live here: a netfilter hook (``NF_HOOK`` / ``nf_hook`` in
include/linux/netfilter.h, ``nf_hook_slow`` in net/netfilter/core.c) and a drop
(``kfree_skb_reason`` in net/core/skbuff.c). Numbers follow the Stepscope facts sheet §2 (paths)
and §5 (NAPI and GRO).

Simplifications, each said in a frame's words where it shows: every frame of a NIC burst is in
the RX ring before the interrupt; the socket is never owned by the reader when a segment
arrives (so tcp_add_backlog is not taken); tcp_queue_rcv always queues the skb itself instead
of coalescing it into the queue's tail; the time limit of net_rx_action never expires.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.sim.core.i18n import Message, join, msg
from app.sim.path.engine import Tracer
from app.sim.path.params import PathParams
from app.sim.path.skb import (
    ETH_HLEN,
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


# What nf_hook_slow calls at each IPv4 hook, in priority order (enum nf_ip_hook_priorities in
# include/uapi/linux/netfilter_ipv4.h; the entries registered by nf_defrag_ipv4, nf_conntrack's
# ipv4_conntrack_ops, nf_nat's nf_nat_ipv4_ops and the iptable_* tables).
HOOK_ENTRIES: dict[str, Message] = {
    "PRE_ROUTING": msg(
        "defrag (ipv4_conntrack_defrag, −400), the raw table (−300), conntrack "
        "(ipv4_conntrack_in, −200), the mangle table (−150) and DNAT (the nat table, −100). "
        "There is no filter table at PRE_ROUTING."
    ),
    "LOCAL_IN": msg(
        "the mangle table (−150), the filter table (0), SNAT (the nat table, 100) and, "
        "last, conntrack's confirm (ipv4_confirm, INT_MAX), which inserts a new connection "
        "into the conntrack table."
    ),
    "FORWARD": msg(
        "the mangle table (−150) and the filter table (0); conntrack and NAT register "
        "nothing at FORWARD."
    ),
    "LOCAL_OUT": msg(
        "defrag (−400), the raw table (−300), conntrack (ipv4_conntrack_local, −200), the "
        "mangle table (−150), DNAT (the nat table, −100) and the filter table (0)."
    ),
    "POST_ROUTING": msg(
        "the mangle table (−150), SNAT (the nat table, 100) and, last, conntrack's confirm "
        "(ipv4_confirm, INT_MAX). There is no filter table at POST_ROUTING."
    ),
}
# Which table holds the DROP rule of a netfilter-drop walk: filter where there is one.
DROP_TABLE: dict[str, Message] = {
    "PRE_ROUTING": msg("A DROP rule in the raw table returns NF_DROP."),
    "LOCAL_IN": msg("A DROP rule in the filter table returns NF_DROP."),
    "FORWARD": msg("A DROP rule in the filter table returns NF_DROP."),
    "LOCAL_OUT": msg("A DROP rule in the filter table returns NF_DROP."),
    "POST_ROUTING": msg("A DROP rule in the mangle table returns NF_DROP."),
}


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
    """One run's state, shared by the stages that build its frames into a :class:`Tracer`."""

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
                join(
                    " ",
                    (
                        msg("nf_hook_slow walks the hook's entries in priority order:"),
                        HOOK_ENTRIES[hook],
                        DROP_TABLE[hook],
                        msg(
                            "On NF_DROP nf_hook_slow frees the packet itself and returns "
                            "-EPERM. The okfn after the hook never runs."
                        ),
                    ),
                ),
                layer="netfilter",
                hook=hook,
            )
            self.drop("NETFILTER_DROP", hook=hook)
            t.leave()
            return False
        t.leaf(
            macro,
            join(
                " ",
                (
                    msg(
                        "{macro} runs the {hook} hook: nf_hook_slow calls the functions "
                        "registered there in priority order (nf_ip_hook_priorities; this "
                        "is a host with conntrack and iptables' raw, mangle, nat and "
                        "filter tables loaded):",
                        macro=macro,
                        hook=hook,
                    ),
                    HOOK_ENTRIES[hook],
                    msg(
                        "With no matching rule every verdict is NF_ACCEPT and the packet "
                        "continues to the okfn."
                    ),
                ),
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
