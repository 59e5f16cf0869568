"""``record path --port/--dst``: which recorded packets belong to the flow.

The path tracepoints (``net:net_dev_queue``, ``net:netif_receive_skb``,
``skb:consume_skb``/``kfree_skb``, ``sock:sk_data_ready``) print an skb address but no port or
address, so the flow is found through the TCP tracepoints that print both, recorded alongside
(``IDENTITY``; not written to the output) and matched with :func:`app.record.filters.matches`:

1. **By skb address** (exact). ``tcp:tcp_probe`` fires in ``tcp_rcv_established`` for the
   segment being received; where its format prints ``skbaddr`` (this 6.18 kernel's does; v6.4's
   does not: its format ends with ``sock_cookie``, and there every path is matched by CPU) the received
   skb is the flow's, and so is every path event of that skb's life (its
   ``netif_receive_skb`` came before, its free after). ``tcp:tcp_send_reset`` and
   ``tcp:tcp_bad_csum`` name the received skb the same way. ``skb:kfree_skb``'s ``rx_sk``
   (newer kernels) is compared with the flow's sockets (``skaddr`` of the flow's
   ``tcp_probe``/``tcp_retransmit_skb``/``tcp_send_reset``).
2. **By CPU context** (what causality allows where no address is printed). A transmitted skb
   is a *clone* of the write queue's (``tcp_transmit_skb``), so no tracepoint ever prints the
   address ``net_dev_queue`` sees beside a port: ``tcp_retransmit_skb``'s ``skbaddr`` is the
   original. Sending in response to an ACK happens inside that ACK's processing
   (``tcp_rcv_established`` → ``tcp_data_snd_check`` → … → ``dev_queue_xmit``) on the same
   CPU and in the same task, so an skb whose life starts with ``net_dev_queue`` on a CPU whose
   latest TCP event was the flow's, in the task that queues it, is kept
   (``sock:inet_sock_set_state`` counts as a TCP event: a ``connect`` says whose SYN follows). Likewise, without ``skbaddr`` in ``tcp_probe``, a received skb whose
   ``netif_receive_skb`` is followed on its CPU by the flow's ``tcp_probe`` before the next
   packet arrives there. Sends from ``sendmsg`` in process context before any ACK of the flow
   was seen on that CPU are not attributed (the recorder says how many packets it kept).
3. ``sock:sk_data_ready`` prints no socket: kept when it follows a kept packet on its CPU.

An skb's life ends at its free event or, once ``tcp_probe`` delivered it, at the next
``net_dev_queue``/``netif_receive_skb`` of its (reused) address, or when an address that was
received is queued for sending again by anything but forwarding (``ip_forward``, a bridge):
TCP frees consumed skbs through paths with no tracepoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.record.filters import FlowFilter, matches

# Tracepoints that print the flow's ports/addresses and an skb or socket address
IDENTITY = (
    "sock:inet_sock_set_state",
    "tcp:tcp_probe",
    "tcp:tcp_retransmit_skb",
    "tcp:tcp_send_reset",
    "tcp:tcp_bad_csum",
)
RX_NAMING = ("tcp:tcp_probe", "tcp:tcp_send_reset", "tcp:tcp_bad_csum")  # skbaddr: received
STARTS = ("net:net_dev_queue", "net:netif_receive_skb")
FREES = ("skb:consume_skb", "skb:kfree_skb")


@dataclass
class Life:
    """One skb's life: its path events (indices into the recorded list)."""

    events: list[int] = field(default_factory=list)
    first: str = ""  # the event that started it
    cpu: int = -1
    tied: bool = False
    delivered: bool = False  # tcp_probe saw it: its address is free for the next skb
    waiting_probe: bool = False  # received, no skbaddr in tcp_probe: the next TCP event decides


@dataclass
class Matched:
    keep: list[int]  # indices of the path events kept, in order
    packets: int  # skb lives seen
    kept_packets: int
    by_address: int  # lives tied by an skb or socket address
    skbaddr_in_probe: bool  # tcp_probe printed skbaddr (exact RX matching)


@dataclass
class _State:
    flt: FlowFilter
    lives: list[Life] = field(default_factory=list)
    live: dict[str, int] = field(default_factory=dict)  # skbaddr -> its life
    # the CPU's latest TCP event: the flow's or not, and the task it ran in
    flow_cpu: dict[int, tuple[bool, int]] = field(default_factory=dict)
    waiting: dict[int, list[int]] = field(default_factory=dict)  # cpu -> lives waiting a probe
    sockets: set[str] = field(default_factory=set)
    by_address: set[int] = field(default_factory=set)
    skbaddr_in_probe: bool = False


def _identity(st: _State, ev: dict[str, Any]) -> None:
    f: dict[str, str] = ev["fields"]
    name, cpu = ev["event"], int(ev.get("cpu", -1))
    mine = matches(st.flt, f) and _prints_flow(f)
    if name == "tcp:tcp_probe" and "skbaddr" in f:
        st.skbaddr_in_probe = True
    st.flow_cpu[cpu] = (mine, int(ev.get("pid", -1)))
    for life in st.waiting.pop(cpu, []):  # received on this CPU, delivered to this socket
        if name == "tcp:tcp_probe" and mine:
            st.lives[life].tied = True
    if not mine:
        return
    if f.get("skaddr"):
        st.sockets.add(f["skaddr"])
    addr = f.get("skbaddr", "")
    if name in RX_NAMING and addr in st.live:
        life = st.live[addr]
        st.lives[life].tied = True
        st.by_address.add(life)
        if name == "tcp:tcp_probe":
            st.lives[life].delivered = True


def _prints_flow(f: dict[str, str]) -> bool:
    """The event printed a port or address at all (else ``matches`` keeps it by default)."""
    keys = ("src", "dest", "saddr", "daddr", "sport", "dport")
    return any(f.get(k) for k in keys)


FORWARDING = ("ip_forward", "ip6_forward", "br_forward", "br_handle_frame")


def _reused(life: Life, ev: dict[str, Any], events: Sequence[dict[str, Any]]) -> bool:
    """A start event of an address whose skb was delivered (``tcp_probe``), or a send of one
    that was received and is not forwarded (its stack has no forwarding function): a new skb."""
    name = ev["event"]
    if name not in STARTS:
        return False
    if life.delivered:
        return True
    received = any(events[i]["event"] == "net:netif_receive_skb" for i in life.events)
    stack = ev.get("stack") or []
    forwarded = any(f in FORWARDING for f in stack)
    return name == "net:net_dev_queue" and received and not forwarded


def _path_event(st: _State, i: int, ev: dict[str, Any], events: Sequence[dict[str, Any]]) -> None:
    f: dict[str, str] = ev["fields"]
    name, cpu = ev["event"], int(ev.get("cpu", -1))
    addr = f.get("skbaddr", "")
    n = st.live.get(addr)
    if n is not None and _reused(st.lives[n], ev, events):
        del st.live[addr]  # its address reused without a free event
        n = None
    if n is None:
        n = len(st.lives)
        life = Life(first=name, cpu=cpu)
        if name == "net:net_dev_queue" and st.flow_cpu.get(cpu) == (True, ev.get("pid", -1)):
            life.tied = True  # sent while this CPU (and task) handled the flow's segment
        if name == "net:netif_receive_skb":
            st.waiting.setdefault(cpu, []).append(n)
            st.flow_cpu[cpu] = (False, -1)  # a new packet is being handled on this CPU
        st.lives.append(life)
        if addr:
            st.live[addr] = n
    st.lives[n].events.append(i)
    if name == "skb:kfree_skb" and f.get("rx_sk") in st.sockets:
        st.lives[n].tied = True
        st.by_address.add(n)
    if name in FREES and addr in st.live:
        del st.live[addr]


def select(events: Sequence[dict[str, Any]], flt: FlowFilter) -> Matched:
    """The path events of the flow among ``events`` (path and identity events in time order,
    each ``{"event", "fields", "cpu"}``); see the module docstring."""
    st = _State(flt)
    order: list[int] = []  # the path events (wake-ups included), in time order
    for i, ev in enumerate(events):
        name = ev["event"]
        if name in IDENTITY:
            _identity(st, ev)
            continue
        if name != "sock:sk_data_ready":
            _path_event(st, i, ev, events)
        order.append(i)
    owner = {i: n for n, life in enumerate(st.lives) for i in life.events}
    keep: list[int] = []
    last_kept: dict[int, bool] = {}
    for i in order:
        ev = events[i]
        cpu = int(ev.get("cpu", -1))
        if i in owner:
            ok = st.lives[owner[i]].tied
            last_kept[cpu] = ok
        else:  # a wake-up right after a kept packet on its CPU
            ok = last_kept.get(cpu, False)
        if ok:
            keep.append(i)
    tied = [life for life in st.lives if life.tied]
    return Matched(
        keep=keep,
        packets=len(st.lives),
        kept_packets=len(tied),
        by_address=len(st.by_address),
        skbaddr_in_probe=st.skbaddr_in_probe,
    )
