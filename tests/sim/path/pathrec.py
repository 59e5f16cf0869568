"""Path recordings the tests write themselves: stacks shaped like ``stepscope record path``
output (innermost function first, offsets stripped, the compiler's suffixes kept) for a TCP
segment sent over veth, one received on a NIC through NAPI and GRO, one sent out of a NIC and
freed on TX completion, and one dropped for want of a socket. Function names come from the
path explainer's walks, plus what a real stack has around them (the syscall entry, the
socket layer) and without what the compiler inlines (``xmit_one``, ``dst_output``)."""

from __future__ import annotations

from typing import Any

SYSCALL_SEND = [
    "tcp_sendmsg",
    "inet_sendmsg",
    "sock_sendmsg",
    "__sys_sendto",
    "__x64_sys_sendto",
    "do_syscall_64",
    "entry_SYSCALL_64_after_hwframe",
]
# __tcp_transmit_skb down to ip_finish_output2, innermost first (__ip_finish_output inlined)
IP_OUT = [
    "ip_finish_output2",
    "ip_finish_output",
    "ip_output",
    "ip_local_out",
    "__ip_queue_xmit",
    "__tcp_transmit_skb",
    "tcp_write_xmit",
    "__tcp_push_pending_frames",
    "tcp_push",
    "tcp_sendmsg_locked",
    *SYSCALL_SEND,
]
BACKLOG_RX = [
    "__netif_receive_skb_one_core",
    "__netif_receive_skb",
    "process_backlog",
    "__napi_poll",
    "net_rx_action",
    "__do_softirq",
    "do_softirq.part.0",
    "__local_bh_enable_ip",
    "__dev_queue_xmit",
    *IP_OUT,
]
TCP_IN = [
    "tcp_rcv_established",
    "tcp_v4_do_rcv",
    "tcp_v4_rcv",
    "ip_protocol_deliver_rcu",
    "ip_local_deliver_finish",
    "ip_local_deliver",
    "ip_rcv_finish",
    "ip_rcv",
]
NIC_RX = [
    "__netif_receive_skb_list_core",
    "netif_receive_skb_list_internal",
    "napi_complete_done",
    "igb_poll",
    "__napi_poll",
    "net_rx_action",
    "__do_softirq",
    "irq_exit_rcu",
    "common_interrupt",
    "asm_common_interrupt",
]


def event(t_ms: float, kind: str, stack: list[str], **fields: str) -> dict[str, Any]:
    return {"t_ms": t_ms, "event": kind, "fields": fields, "stack": stack}


def veth_tx(t: float = 0.0, skb: str = "ffff888004a1c000") -> list[dict[str, Any]]:
    """A segment written in ns1 and read in ns2: the whole receive runs in the sender's call."""
    return [
        event(t, "net:net_dev_queue", ["__dev_queue_xmit", *IP_OUT], skbaddr=skb, len="1066",
              name="veth0"),
        event(t + 0.002, "net:net_dev_start_xmit", ["dev_hard_start_xmit", "__dev_queue_xmit",
              *IP_OUT], skbaddr=skb, len="1066", name="veth0"),
        event(t + 0.009, "net:netif_receive_skb", ["__netif_receive_skb_core.constprop.0",
              *BACKLOG_RX], skbaddr=skb, len="1052", name="veth1"),
        event(t + 0.015, "sock:sk_data_ready", ["sock_def_readable", "tcp_data_ready", *TCP_IN,
              *BACKLOG_RX], skaddr="ffff888003f40000", family="AF_INET", protocol="IPPROTO_TCP"),
    ]  # fmt: skip


def nic_rx(t: float = 1.0, skb: str = "ffff888005b2d100") -> list[dict[str, Any]]:
    """A segment from the wire: the IRQ's softirq, NAPI, GRO's list, IP and TCP."""
    return [
        event(t, "net:netif_receive_skb", ["__netif_receive_skb_core.constprop.0", *NIC_RX],
              skbaddr=skb, len="1052", name="eth0"),
        event(t + 0.004, "sock:sk_data_ready", ["sock_def_readable", "tcp_data_ready", *TCP_IN,
              "ip_sublist_rcv_finish", "ip_list_rcv_finish.constprop.0", "ip_sublist_rcv",
              "ip_list_rcv", *NIC_RX], skaddr="ffff888003f41000", family="AF_INET",
              protocol="IPPROTO_TCP"),
    ]  # fmt: skip


def nic_tx(t: float = 2.0, skb: str = "ffff888006c3e200") -> list[dict[str, Any]]:
    """A segment out of the NIC (qdisc, driver) and freed when the NIC reports it sent."""
    start = ["dev_hard_start_xmit", "sch_direct_xmit", "__dev_queue_xmit", *IP_OUT]
    done = [
        "napi_consume_skb",
        "igb_clean_tx_irq",
        "igb_poll",
        "__napi_poll",
        "net_rx_action",
        "__do_softirq",
        "irq_exit_rcu",
        "common_interrupt",
        "asm_common_interrupt",
    ]
    return [
        event(t, "net:net_dev_queue", ["__dev_queue_xmit", *IP_OUT], skbaddr=skb, len="1066",
              name="eth0"),
        event(t + 0.003, "net:net_dev_start_xmit", start, skbaddr=skb, len="1066", name="eth0"),
        event(t + 0.2, "skb:consume_skb", done, skbaddr=skb),
    ]  # fmt: skip


def nic_drop(t: float = 3.0, skb: str = "ffff888006c3e200") -> list[dict[str, Any]]:
    """A segment for a port nobody listens on: tcp_v4_rcv finds no socket and drops it (the
    same address as the TX skb freed before: the slab hands it out again)."""
    free = [
        "kfree_skb_reason",
        "tcp_v4_rcv",
        "ip_protocol_deliver_rcu",
        "ip_local_deliver_finish",
        "ip_local_deliver",
        "ip_sublist_rcv_finish",
        "ip_sublist_rcv",
        "ip_list_rcv",
        *NIC_RX,
    ]
    return [
        event(t, "net:netif_receive_skb", ["__netif_receive_skb_core.constprop.0", *NIC_RX],
              skbaddr=skb, len="60", name="eth0"),
        event(t + 0.01, "skb:kfree_skb", free, skbaddr=skb, location="tcp_v4_rcv+0x7e",
              protocol="2048", reason="NO_SOCKET"),
    ]  # fmt: skip


def recording(*groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "path",
        "kernel": {"release": "6.4.0-test", "machine": "x86_64"},
        "events": [e for g in groups for e in g],
    }
