"""Every Linux 6.4 function the packet-path explainer cites, with its file and the line of its
definition in the upstream v6.4 tree, the version the source links open on elixir. Most lines
were read in the 6.4.4 stable code, whose net code matches v6.4 line for line except two files:
in net/ipv4/tcp_input.c every function after ``__tcp_oow_rate_limited`` sits 6 lines lower in
6.4.4 (``tcp_ack`` 3760 in v6.4, 3766 in 6.4.4), and in net/core/sock.c ``sk_wait_data`` and
``sock_def_readable`` sit 11 lines lower; the lines below are v6.4's. One table so a test can
check each name really appears at its line (tests/sim/path/test_path_params.py) and another
keeps the checked table (tests/sim/path/test_cited_lines.py).

Macros and inline helpers from headers are cited at their definition too (``NF_HOOK`` and
``nf_hook`` at the CONFIG_NETFILTER variants).
"""

from __future__ import annotations

from app.sim.core.sources import LINUX_6_4, SourceRef


def _r(function: str, path: str, line: int) -> SourceRef:
    return SourceRef(function=function, path=path, line=line, project=LINUX_6_4)


_ALL: tuple[SourceRef, ...] = (
    _r("tcp_sendmsg", "net/ipv4/tcp.c", 1482),
    _r("tcp_sendmsg_locked", "net/ipv4/tcp.c", 1217),
    _r("tcp_stream_alloc_skb", "net/ipv4/tcp.c", 861),
    _r("tcp_skb_entail", "net/ipv4/tcp.c", 659),
    _r("tcp_push", "net/ipv4/tcp.c", 702),
    _r("__tcp_push_pending_frames", "net/ipv4/tcp_output.c", 2867),
    _r("tcp_write_xmit", "net/ipv4/tcp_output.c", 2601),
    _r("tcp_transmit_skb", "net/ipv4/tcp_output.c", 1414),
    _r("__tcp_transmit_skb", "net/ipv4/tcp_output.c", 1234),
    _r("tcp_tso_segs", "net/ipv4/tcp_output.c", 1990),
    _r("tcp_set_skb_tso_segs", "net/ipv4/tcp_output.c", 1439),
    _r("ip_queue_xmit", "net/ipv4/ip_output.c", 545),
    _r("__ip_queue_xmit", "net/ipv4/ip_output.c", 454),
    _r("ip_local_out", "net/ipv4/ip_output.c", 120),
    _r("__ip_local_out", "net/ipv4/ip_output.c", 99),
    _r("ip_output", "net/ipv4/ip_output.c", 422),
    _r("ip_finish_output", "net/ipv4/ip_output.c", 310),
    _r("__ip_finish_output", "net/ipv4/ip_output.c", 289),
    _r("ip_finish_output2", "net/ipv4/ip_output.c", 195),
    _r("neigh_output", "include/net/neighbour.h", 531),
    _r("neigh_hh_output", "include/net/neighbour.h", 491),
    _r("neigh_event_send", "include/net/neighbour.h", 472),
    _r("__neigh_event_send", "net/core/neighbour.c", 1160),
    _r("neigh_resolve_output", "net/core/neighbour.c", 1532),
    _r("neigh_probe", "net/core/neighbour.c", 1055),
    _r("arp_solicit", "net/ipv4/arp.c", 333),
    _r("arp_send_dst", "net/ipv4/arp.c", 301),
    _r("neigh_update", "net/core/neighbour.c", 1474),
    _r("__neigh_update", "net/core/neighbour.c", 1286),
    _r("neigh_hh_init", "net/core/neighbour.c", 1513),
    _r("arp_process", "net/ipv4/arp.c", 698),
    _r("arp_rcv", "net/ipv4/arp.c", 963),
    _r("dev_hard_header", "include/linux/netdevice.h", 3132),
    _r("eth_header", "net/ethernet/eth.c", 79),
    _r("eth_header_cache", "net/ethernet/eth.c", 229),
    _r("dev_queue_xmit", "include/linux/netdevice.h", 3086),
    _r("__dev_queue_xmit", "net/core/dev.c", 4150),
    _r("__dev_xmit_skb", "net/core/dev.c", 3779),
    _r("__qdisc_run", "net/sched/sch_generic.c", 410),
    _r("qdisc_restart", "net/sched/sch_generic.c", 388),
    _r("sch_direct_xmit", "net/sched/sch_generic.c", 314),
    _r("pfifo_fast_enqueue", "net/sched/sch_generic.c", 721),
    _r("pfifo_fast_dequeue", "net/sched/sch_generic.c", 743),
    _r("validate_xmit_skb", "net/core/dev.c", 3643),
    _r("dev_hard_start_xmit", "net/core/dev.c", 3584),
    _r("xmit_one", "net/core/dev.c", 3567),
    _r("netdev_start_xmit", "include/linux/netdevice.h", 4926),
    _r("igb_xmit_frame", "drivers/net/ethernet/intel/igb/igb_main.c", 6550),
    _r("igb_xmit_frame_ring", "drivers/net/ethernet/intel/igb/igb_main.c", 6451),
    _r("igb_tso", "drivers/net/ethernet/intel/igb/igb_main.c", 5972),
    _r("igb_tx_map", "drivers/net/ethernet/intel/igb/igb_main.c", 6198),
    _r("igb_msix_ring", "drivers/net/ethernet/intel/igb/igb_main.c", 7078),
    _r("igb_poll", "drivers/net/ethernet/intel/igb/igb_main.c", 8203),
    _r("igb_clean_rx_irq", "drivers/net/ethernet/intel/igb/igb_main.c", 8883),
    _r("igb_build_skb", "drivers/net/ethernet/intel/igb/igb_main.c", 8558),
    _r("igb_construct_skb", "drivers/net/ethernet/intel/igb/igb_main.c", 8506),
    _r("igb_process_skb_fields", "drivers/net/ethernet/intel/igb/igb_main.c", 8799),
    _r("igb_rx_checksum", "drivers/net/ethernet/intel/igb/igb_main.c", 8674),
    _r("igb_ring_irq_enable", "drivers/net/ethernet/intel/igb/igb_main.c", 8177),
    _r("igb_clean_tx_irq", "drivers/net/ethernet/intel/igb/igb_main.c", 8246),
    _r("napi_build_skb", "net/core/skbuff.c", 537),
    _r("__napi_build_skb", "net/core/skbuff.c", 513),
    _r("__napi_alloc_skb", "net/core/skbuff.c", 776),
    _r("skb_add_rx_frag", "net/core/skbuff.c", 851),
    _r("napi_schedule", "include/linux/netdevice.h", 488),
    _r("napi_schedule_prep", "net/core/dev.c", 5991),
    _r("__napi_schedule", "net/core/dev.c", 5972),
    _r("__napi_schedule_irqoff", "net/core/dev.c", 6024),
    _r("____napi_schedule", "net/core/dev.c", 4332),
    _r("net_rx_action", "net/core/dev.c", 6661),
    _r("napi_poll", "net/core/dev.c", 6555),
    _r("__napi_poll", "net/core/dev.c", 6484),
    _r("napi_complete_done", "net/core/dev.c", 6033),
    _r("__do_softirq", "kernel/softirq.c", 528),
    _r("do_softirq", "kernel/softirq.c", 459),
    _r("__local_bh_enable_ip", "kernel/softirq.c", 373),
    _r("eth_type_trans", "net/ethernet/eth.c", 155),
    _r("napi_gro_receive", "net/core/gro.c", 648),
    _r("dev_gro_receive", "net/core/gro.c", 482),
    _r("gro_list_prepare", "net/core/gro.c", 366),
    _r("inet_gro_receive", "net/ipv4/af_inet.c", 1455),
    _r("tcp4_gro_receive", "net/ipv4/tcp_offload.c", 319),
    _r("tcp_gro_receive", "net/ipv4/tcp_offload.c", 180),
    _r("skb_gro_receive", "net/core/gro.c", 153),
    _r("napi_skb_finish", "net/core/gro.c", 621),
    _r("napi_gro_complete", "net/core/gro.c", 295),
    _r("inet_gro_complete", "net/ipv4/af_inet.c", 1620),
    _r("tcp4_gro_complete", "net/ipv4/tcp_offload.c", 332),
    _r("gro_flush_oldest", "net/core/gro.c", 463),
    _r("napi_gro_flush", "net/core/gro.c", 353),
    _r("__napi_gro_flush_chain", "net/core/gro.c", 331),
    _r("gro_normal_one", "include/net/gro.h", 441),
    _r("gro_normal_list", "include/net/gro.h", 429),
    _r("netif_receive_skb_list_internal", "net/core/dev.c", 5698),
    _r("__netif_receive_skb_list", "net/core/dev.c", 5612),
    _r("__netif_receive_skb_list_core", "net/core/dev.c", 5545),
    _r("__netif_receive_skb_list_ptype", "net/core/dev.c", 5525),
    _r("__netif_receive_skb_core", "net/core/dev.c", 5281),
    _r("__netif_receive_skb_one_core", "net/core/dev.c", 5485),
    _r("__netif_receive_skb", "net/core/dev.c", 5587),
    _r("netif_receive_skb", "net/core/dev.c", 5746),
    _r("ip_list_rcv", "net/ipv4/ip_input.c", 642),
    _r("ip_sublist_rcv", "net/ipv4/ip_input.c", 633),
    _r("ip_list_rcv_finish", "net/ipv4/ip_input.c", 593),
    _r("ip_sublist_rcv_finish", "net/ipv4/ip_input.c", 574),
    _r("ip_rcv", "net/ipv4/ip_input.c", 560),
    _r("ip_rcv_core", "net/ipv4/ip_input.c", 456),
    _r("ip_rcv_finish", "net/ipv4/ip_input.c", 435),
    _r("ip_rcv_finish_core", "net/ipv4/ip_input.c", 317),
    _r("tcp_v4_early_demux", "net/ipv4/tcp_ipv4.c", 1771),
    _r("ip_route_input_noref", "net/ipv4/route.c", 2484),
    _r("ip_route_input_slow", "net/ipv4/route.c", 2220),
    _r("ip_error", "net/ipv4/route.c", 941),
    _r("dst_input", "include/net/dst.h", 466),
    _r("dst_output", "include/net/dst.h", 456),
    _r("ip_local_deliver", "net/ipv4/ip_input.c", 242),
    _r("ip_local_deliver_finish", "net/ipv4/ip_input.c", 227),
    _r("ip_protocol_deliver_rcu", "net/ipv4/ip_input.c", 187),
    _r("tcp_v4_rcv", "net/ipv4/tcp_ipv4.c", 1976),
    _r("tcp_v4_do_rcv", "net/ipv4/tcp_ipv4.c", 1701),
    _r("tcp_add_backlog", "net/ipv4/tcp_ipv4.c", 1810),
    _r("tcp_v4_send_reset", "net/ipv4/tcp_ipv4.c", 677),
    _r("tcp_rcv_established", "net/ipv4/tcp_input.c", 5847),
    _r("tcp_queue_rcv", "net/ipv4/tcp_input.c", 4934),
    _r("tcp_data_queue", "net/ipv4/tcp_input.c", 5009),
    _r("tcp_data_ready", "net/ipv4/tcp_input.c", 5003),
    _r("tcp_ack", "net/ipv4/tcp_input.c", 3760),
    _r("tcp_validate_incoming", "net/ipv4/tcp_input.c", 5706),
    _r("tcp_event_data_recv", "net/ipv4/tcp_input.c", 774),
    _r("__tcp_ack_snd_check", "net/ipv4/tcp_input.c", 5517),
    _r("sock_def_readable", "net/core/sock.c", 3273),
    _r("tcp_recvmsg", "net/ipv4/tcp.c", 2660),
    _r("tcp_recvmsg_locked", "net/ipv4/tcp.c", 2419),
    _r("sk_wait_data", "net/core/sock.c", 2947),
    _r("nf_hook_slow", "net/netfilter/core.c", 619),
    _r("nf_hook", "include/linux/netfilter.h", 212),
    _r("NF_HOOK", "include/linux/netfilter.h", 297),
    _r("NF_HOOK_LIST", "include/linux/netfilter.h", 308),
    _r("NF_HOOK_COND", "include/linux/netfilter.h", 283),
    _r("kfree_skb_reason", "net/core/skbuff.c", 1061),
    _r("kfree_skb_list_reason", "net/core/skbuff.c", 1096),
    _r("ip_forward", "net/ipv4/ip_forward.c", 86),
    _r("ip_forward_finish", "net/ipv4/ip_forward.c", 65),
    _r("ip_decrease_ttl", "include/net/ip.h", 403),
    _r("icmp_send", "include/net/icmp.h", 41),
    _r("__icmp_send", "net/ipv4/icmp.c", 587),
    _r("loopback_xmit", "drivers/net/loopback.c", 69),
    _r("__netif_rx", "net/core/dev.c", 4970),
    _r("netif_rx_internal", "net/core/dev.c", 4930),
    _r("enqueue_to_backlog", "net/core/dev.c", 4663),
    _r("napi_schedule_rps", "net/core/dev.c", 4599),
    _r("process_backlog", "net/core/dev.c", 5915),
    _r("veth_xmit", "drivers/net/veth.c", 333),
    _r("veth_forward_skb", "drivers/net/veth.c", 306),
    _r("__dev_forward_skb", "net/core/dev.c", 2131),
    _r("__dev_forward_skb2", "net/core/dev.c", 2118),
    _r("____dev_forward_skb", "include/linux/netdevice.h", 4027),
    _r("skb_scrub_packet", "net/core/skbuff.c", 5763),
    _r("br_handle_frame", "net/bridge/br_input.c", 320),
    _r("br_handle_frame_finish", "net/bridge/br_input.c", 74),
    _r("br_pass_frame_up", "net/bridge/br_input.c", 33),
    _r("br_netif_receive_skb", "net/bridge/br_input.c", 27),
    _r("nf_hook_bridge_pre", "net/bridge/br_input.c", 248),
    _r("br_nf_pre_routing", "net/bridge/br_netfilter_hooks.c", 478),
    _r("br_nf_pre_routing_finish", "net/bridge/br_netfilter_hooks.c", 353),
    _r("ip_sabotage_in", "net/bridge/br_netfilter_hooks.c", 866),
    _r("nf_conntrack_in", "net/netfilter/nf_conntrack_core.c", 1966),
    _r("ipv4_conntrack_in", "net/netfilter/nf_conntrack_proto.c", 203),
    _r("nf_nat_ipv4_out", "net/netfilter/nf_nat_proto.c", 718),
    _r("nf_nat_inet_fn", "net/netfilter/nf_nat_core.c", 713),
    _r("nf_nat_masquerade_ipv4", "net/netfilter/nf_nat_masquerade.c", 28),
    _r("masquerade_tg", "net/netfilter/xt_MASQUERADE.c", 35),
    _r("nf_nat_packet", "net/netfilter/nf_nat_core.c", 675),
    _r("nf_nat_ipv4_manip_pkt", "net/netfilter/nf_nat_proto.c", 353),
    _r("vxlan_xmit", "drivers/net/vxlan/vxlan_core.c", 2680),
    _r("vxlan_xmit_one", "drivers/net/vxlan/vxlan_core.c", 2377),
    _r("vxlan_build_skb", "drivers/net/vxlan/vxlan_core.c", 2107),
    _r("udp_tunnel_xmit_skb", "net/ipv4/udp_tunnel_core.c", 153),
    _r("iptunnel_xmit", "net/ipv4/ip_tunnel_core.c", 50),
    _r("skb_cow_head", "include/linux/skbuff.h", 3621),
    _r("udp_set_csum", "net/ipv4/udp.c", 878),
    _r("skb_gso_segment", "include/linux/netdevice.h", 4860),
    _r("tcp_gso_segment", "net/ipv4/tcp_offload.c", 55),
    _r("__skb_gso_segment", "net/core/dev.c", 3365),
    _r("skb_mac_gso_segment", "net/core/gro.c", 125),
    _r("inet_gso_segment", "net/ipv4/af_inet.c", 1347),
    _r("tcp4_gso_segment", "net/ipv4/tcp_offload.c", 30),
    _r("skb_segment", "net/core/skbuff.c", 4355),
    _r("validate_xmit_skb_list", "net/core/dev.c", 3698),
    _r("tcp_checksum_complete", "include/net/tcp.h", 1397),
    _r("ipt_do_table", "net/ipv4/netfilter/ip_tables.c", 223),
    _r("nft_do_chain", "net/netfilter/nf_tables_core.c", 253),
)

SOURCES: dict[str, SourceRef] = {ref.function: ref for ref in _ALL}

# The two differences between v6.4 and 6.4.4 in the files cited, each one stable backport whose
# diff names both blobs (read in the stored stable@vger.kernel.org / netdev archives; the
# post-image blob is the 6.4.4 file's, `git rev-parse` in the 6.4.4 tree):
# - net/ipv4/tcp_input.c: "[PATCH 6.4 694/800] tcp: annotate data races in
#   __tcp_oow_rate_limited()" (upstream 998127cdb469), index bf8b22218dd46..57f1e4883b761,
#   hunks @@ -3590,8 +3590,11 @@ and @@ -3600,7 +3603,10 @@: +6 lines inside the function that
#   starts at 3590 in both, so every function defined after it is 6 lines lower in 6.4.4.
# - net/core/sock.c: "netlink: Add __sock_i_ino() for __netlink_diag_dump()", index
#   6e5662ca00fe..4a0edccf8606, hunk @@ -2550,13 +2550,24 @@: +11 lines at sock_i_ino (2553),
#   so functions after it move 11 (sk_wait_data, sock_def_readable) and those before it do
#   not (skb_set_owner_w stays at 2454).
TCP_INPUT_SHIFT_FROM = 3590
SOCK_C_SHIFT_FROM = 2553


def line_in_644(function: str, path: str, line: int) -> int:
    """Where a v6.4 citation sits in the 6.4.4 stable code (the tree the facts were read in)."""
    if path == "net/ipv4/tcp_input.c" and line > TCP_INPUT_SHIFT_FROM:
        return line + 6
    if path == "net/core/sock.c" and line > SOCK_C_SHIFT_FROM:
        return line + 11
    return line


def src(function: str) -> SourceRef:
    """The citation of ``function`` (a KeyError names a function missing from the table)."""
    return SOURCES[function]
