"""One version cited: every Linux line the packet-path and sk_buff explainers cite is upstream
v6.4's (the version their source links open on elixir), kept here as the checked table.

The table was first read in 6.4.4 stable code, whose lines differ from v6.4 in two files (issue
22): in net/ipv4/tcp_input.c every function after ``__tcp_oow_rate_limited`` is 6 lines lower in
6.4.4 (``tcp_ack`` 3766 vs 3760), and in net/core/sock.c ``sk_wait_data`` and
``sock_def_readable`` are 11 lines lower (2958 vs 2947). Every entry is now checked as it stands
in a v6.4 tree (tests/linux_v64.py) when that tree is on the machine. A new citation must be added
here after it is checked; a frame that cites a function missing from this table fails.
"""

from __future__ import annotations

import re

import pytest

from app.sim.path import EXPLAINER as PATH
from app.sim.path.sources import SOURCES as PATH_SOURCES
from app.sim.skbuff.explainer import SkbExplainer
from app.sim.skbuff.sources import CALLERS
from app.sim.skbuff.sources import SOURCES as SKB_SOURCES
from tests.linux_v64 import require_v6_4, v6_4_file

# (function, file, v6.4 line of its definition)
CHECKED: frozenset[tuple[str, str, int]] = frozenset(
    {
        ("igb_tso", "drivers/net/ethernet/intel/igb/igb_main.c", 5972),
        ("igb_tx_map", "drivers/net/ethernet/intel/igb/igb_main.c", 6198),
        ("igb_xmit_frame_ring", "drivers/net/ethernet/intel/igb/igb_main.c", 6451),
        ("igb_xmit_frame", "drivers/net/ethernet/intel/igb/igb_main.c", 6550),
        ("igb_msix_ring", "drivers/net/ethernet/intel/igb/igb_main.c", 7078),
        ("igb_ring_irq_enable", "drivers/net/ethernet/intel/igb/igb_main.c", 8177),
        ("igb_poll", "drivers/net/ethernet/intel/igb/igb_main.c", 8203),
        ("igb_clean_tx_irq", "drivers/net/ethernet/intel/igb/igb_main.c", 8246),
        ("igb_construct_skb", "drivers/net/ethernet/intel/igb/igb_main.c", 8506),
        ("igb_build_skb", "drivers/net/ethernet/intel/igb/igb_main.c", 8558),
        ("igb_rx_checksum", "drivers/net/ethernet/intel/igb/igb_main.c", 8674),
        ("igb_process_skb_fields", "drivers/net/ethernet/intel/igb/igb_main.c", 8799),
        ("igb_clean_rx_irq", "drivers/net/ethernet/intel/igb/igb_main.c", 8883),
        ("loopback_xmit", "drivers/net/loopback.c", 69),
        ("veth_forward_skb", "drivers/net/veth.c", 306),
        ("veth_xmit", "drivers/net/veth.c", 333),
        ("vxlan_build_skb", "drivers/net/vxlan/vxlan_core.c", 2107),
        ("vxlan_xmit_one", "drivers/net/vxlan/vxlan_core.c", 2377),
        ("vxlan_xmit", "drivers/net/vxlan/vxlan_core.c", 2680),
        ("napi_schedule", "include/linux/netdevice.h", 488),
        ("dev_queue_xmit", "include/linux/netdevice.h", 3086),
        ("dev_hard_header", "include/linux/netdevice.h", 3132),
        ("____dev_forward_skb", "include/linux/netdevice.h", 4027),
        ("skb_gso_segment", "include/linux/netdevice.h", 4860),
        ("netdev_start_xmit", "include/linux/netdevice.h", 4926),
        ("nf_hook", "include/linux/netfilter.h", 212),
        ("NF_HOOK_COND", "include/linux/netfilter.h", 283),
        ("NF_HOOK", "include/linux/netfilter.h", 297),
        ("NF_HOOK_LIST", "include/linux/netfilter.h", 308),
        ("alloc_skb", "include/linux/skbuff.h", 1285),
        ("alloc_skb_fclone", "include/linux/skbuff.h", 1335),
        ("skb_get", "include/linux/skbuff.h", 1885),
        ("__skb_header_release", "include/linux/skbuff.h", 1970),
        ("skb_headlen", "include/linux/skbuff.h", 2405),
        ("skb_fill_page_desc", "include/linux/skbuff.h", 2488),
        ("pskb_may_pull", "include/linux/skbuff.h", 2674),
        ("skb_headroom", "include/linux/skbuff.h", 2696),
        ("skb_tailroom", "include/linux/skbuff.h", 2707),
        ("skb_reserve", "include/linux/skbuff.h", 2735),
        ("skb_reset_transport_header", "include/linux/skbuff.h", 2861),
        ("skb_set_transport_header", "include/linux/skbuff.h", 2866),
        ("skb_reset_network_header", "include/linux/skbuff.h", 2878),
        ("skb_set_network_header", "include/linux/skbuff.h", 2883),
        ("skb_reset_mac_header", "include/linux/skbuff.h", 2916),
        ("skb_set_mac_header", "include/linux/skbuff.h", 2921),
        ("pskb_trim", "include/linux/skbuff.h", 3067),
        ("skb_cow_head", "include/linux/skbuff.h", 3621),
        ("skb_linearize", "include/linux/skbuff.h", 3730),
        ("dst_output", "include/net/dst.h", 456),
        ("dst_input", "include/net/dst.h", 466),
        ("gro_normal_list", "include/net/gro.h", 429),
        ("gro_normal_one", "include/net/gro.h", 441),
        ("icmp_send", "include/net/icmp.h", 41),
        ("ip_decrease_ttl", "include/net/ip.h", 403),
        ("neigh_event_send", "include/net/neighbour.h", 472),
        ("neigh_hh_output", "include/net/neighbour.h", 491),
        ("neigh_output", "include/net/neighbour.h", 531),
        ("tcp_checksum_complete", "include/net/tcp.h", 1397),
        ("__local_bh_enable_ip", "kernel/softirq.c", 373),
        ("do_softirq", "kernel/softirq.c", 459),
        ("__do_softirq", "kernel/softirq.c", 528),
        ("br_netif_receive_skb", "net/bridge/br_input.c", 27),
        ("br_pass_frame_up", "net/bridge/br_input.c", 33),
        ("br_handle_frame_finish", "net/bridge/br_input.c", 74),
        ("nf_hook_bridge_pre", "net/bridge/br_input.c", 248),
        ("br_handle_frame", "net/bridge/br_input.c", 320),
        ("br_nf_pre_routing_finish", "net/bridge/br_netfilter_hooks.c", 353),
        ("br_nf_pre_routing", "net/bridge/br_netfilter_hooks.c", 478),
        ("ip_sabotage_in", "net/bridge/br_netfilter_hooks.c", 866),
        ("__dev_forward_skb2", "net/core/dev.c", 2118),
        ("__dev_forward_skb", "net/core/dev.c", 2131),
        ("__skb_gso_segment", "net/core/dev.c", 3365),
        ("xmit_one", "net/core/dev.c", 3567),
        ("dev_hard_start_xmit", "net/core/dev.c", 3584),
        ("validate_xmit_skb", "net/core/dev.c", 3643),
        ("validate_xmit_skb_list", "net/core/dev.c", 3698),
        ("__dev_xmit_skb", "net/core/dev.c", 3779),
        ("__dev_queue_xmit", "net/core/dev.c", 4150),
        ("____napi_schedule", "net/core/dev.c", 4332),
        ("napi_schedule_rps", "net/core/dev.c", 4599),
        ("enqueue_to_backlog", "net/core/dev.c", 4663),
        ("netif_rx_internal", "net/core/dev.c", 4930),
        ("__netif_rx", "net/core/dev.c", 4970),
        ("__netif_receive_skb_core", "net/core/dev.c", 5281),
        ("__netif_receive_skb_one_core", "net/core/dev.c", 5485),
        ("__netif_receive_skb_list_ptype", "net/core/dev.c", 5525),
        ("__netif_receive_skb_list_core", "net/core/dev.c", 5545),
        ("__netif_receive_skb", "net/core/dev.c", 5587),
        ("__netif_receive_skb_list", "net/core/dev.c", 5612),
        ("netif_receive_skb_list_internal", "net/core/dev.c", 5698),
        ("netif_receive_skb", "net/core/dev.c", 5746),
        ("process_backlog", "net/core/dev.c", 5915),
        ("__napi_schedule", "net/core/dev.c", 5972),
        ("napi_schedule_prep", "net/core/dev.c", 5991),
        ("__napi_schedule_irqoff", "net/core/dev.c", 6024),
        ("napi_complete_done", "net/core/dev.c", 6033),
        ("__napi_poll", "net/core/dev.c", 6484),
        ("napi_poll", "net/core/dev.c", 6555),
        ("net_rx_action", "net/core/dev.c", 6661),
        ("skb_mac_gso_segment", "net/core/gro.c", 125),
        ("skb_gro_receive", "net/core/gro.c", 153),
        ("napi_gro_complete", "net/core/gro.c", 295),
        ("__napi_gro_flush_chain", "net/core/gro.c", 331),
        ("napi_gro_flush", "net/core/gro.c", 353),
        ("gro_list_prepare", "net/core/gro.c", 366),
        ("gro_flush_oldest", "net/core/gro.c", 463),
        ("dev_gro_receive", "net/core/gro.c", 482),
        ("napi_skb_finish", "net/core/gro.c", 621),
        ("napi_gro_receive", "net/core/gro.c", 648),
        ("neigh_probe", "net/core/neighbour.c", 1055),
        ("__neigh_event_send", "net/core/neighbour.c", 1160),
        ("__neigh_update", "net/core/neighbour.c", 1286),
        ("neigh_update", "net/core/neighbour.c", 1474),
        ("neigh_hh_init", "net/core/neighbour.c", 1513),
        ("neigh_resolve_output", "net/core/neighbour.c", 1532),
        ("build_skb", "net/core/skbuff.c", 469),
        ("__napi_build_skb", "net/core/skbuff.c", 513),
        ("napi_build_skb", "net/core/skbuff.c", 537),
        ("__netdev_alloc_skb", "net/core/skbuff.c", 702),
        ("__napi_alloc_skb", "net/core/skbuff.c", 776),
        ("skb_add_rx_frag", "net/core/skbuff.c", 851),
        ("kfree_skb_reason", "net/core/skbuff.c", 1061),
        ("__kfree_skb", "net/core/skbuff.c", 1026),
        ("msg_zerocopy_realloc", "net/core/skbuff.c", 1538),
        ("skb_zerocopy_iter_stream", "net/core/skbuff.c", 1682),
        ("net_zcopy_put", "include/linux/skbuff.h", 1732),
        ("skb_dst_set_noref", "include/linux/skbuff.h", 1153),
        ("skb_mark_for_recycle", "include/linux/skbuff.h", 5122),
        ("skb_dst_drop", "include/net/dst.h", 279),
        ("skb_dst_force", "include/net/dst.h", 319),
        ("ip_frag_queue", "net/ipv4/ip_fragment.c", 275),
        ("ip_frag_reasm", "net/ipv4/ip_fragment.c", 411),
        ("ip_defrag", "net/ipv4/ip_fragment.c", 483),
        ("ipv4_pktinfo_prepare", "net/ipv4/ip_sockglue.c", 1415),
        ("kfree_skb_list_reason", "net/core/skbuff.c", 1096),
        ("consume_skb", "net/core/skbuff.c", 1238),
        ("napi_consume_skb", "net/core/skbuff.c", 1300),
        ("skb_clone", "net/core/skbuff.c", 1853),
        ("skb_copy", "net/core/skbuff.c", 1933),
        ("__pskb_copy_fclone", "net/core/skbuff.c", 1972),
        ("pskb_expand_head", "net/core/skbuff.c", 2036),
        ("skb_put", "net/core/skbuff.c", 2383),
        ("skb_push", "net/core/skbuff.c", 2404),
        ("skb_pull", "net/core/skbuff.c", 2424),
        ("skb_trim", "net/core/skbuff.c", 2463),
        ("skb_segment", "net/core/skbuff.c", 4355),
        ("skb_partial_csum_set", "net/core/skbuff.c", 5298),
        ("skb_scrub_packet", "net/core/skbuff.c", 5763),
        ("skb_set_owner_w", "net/core/sock.c", 2454),
        ("sk_wait_data", "net/core/sock.c", 2947),
        ("sock_def_readable", "net/core/sock.c", 3273),
        ("eth_header", "net/ethernet/eth.c", 79),
        ("eth_type_trans", "net/ethernet/eth.c", 155),
        ("eth_header_cache", "net/ethernet/eth.c", 229),
        ("inet_gso_segment", "net/ipv4/af_inet.c", 1347),
        ("inet_gro_receive", "net/ipv4/af_inet.c", 1455),
        ("inet_gro_complete", "net/ipv4/af_inet.c", 1620),
        ("arp_send_dst", "net/ipv4/arp.c", 301),
        ("arp_solicit", "net/ipv4/arp.c", 333),
        ("arp_process", "net/ipv4/arp.c", 698),
        ("arp_rcv", "net/ipv4/arp.c", 963),
        ("__icmp_send", "net/ipv4/icmp.c", 587),
        ("ip_forward_finish", "net/ipv4/ip_forward.c", 65),
        ("ip_forward", "net/ipv4/ip_forward.c", 86),
        ("ip_protocol_deliver_rcu", "net/ipv4/ip_input.c", 187),
        ("ip_local_deliver_finish", "net/ipv4/ip_input.c", 227),
        ("ip_local_deliver", "net/ipv4/ip_input.c", 242),
        ("ip_rcv_finish_core", "net/ipv4/ip_input.c", 317),
        ("ip_rcv_finish", "net/ipv4/ip_input.c", 435),
        ("ip_rcv_core", "net/ipv4/ip_input.c", 456),
        ("ip_rcv", "net/ipv4/ip_input.c", 560),
        ("ip_sublist_rcv_finish", "net/ipv4/ip_input.c", 574),
        ("ip_list_rcv_finish", "net/ipv4/ip_input.c", 593),
        ("ip_sublist_rcv", "net/ipv4/ip_input.c", 633),
        ("ip_list_rcv", "net/ipv4/ip_input.c", 642),
        ("__ip_local_out", "net/ipv4/ip_output.c", 99),
        ("ip_local_out", "net/ipv4/ip_output.c", 120),
        ("ip_finish_output2", "net/ipv4/ip_output.c", 195),
        ("__ip_finish_output", "net/ipv4/ip_output.c", 289),
        ("ip_finish_output", "net/ipv4/ip_output.c", 310),
        ("ip_output", "net/ipv4/ip_output.c", 422),
        ("__ip_queue_xmit", "net/ipv4/ip_output.c", 454),
        ("ip_queue_xmit", "net/ipv4/ip_output.c", 545),
        ("iptunnel_xmit", "net/ipv4/ip_tunnel_core.c", 50),
        ("ipt_do_table", "net/ipv4/netfilter/ip_tables.c", 223),
        ("ip_error", "net/ipv4/route.c", 941),
        ("ip_route_input_slow", "net/ipv4/route.c", 2220),
        ("ip_route_input_noref", "net/ipv4/route.c", 2484),
        ("tcp_skb_entail", "net/ipv4/tcp.c", 659),
        ("tcp_push", "net/ipv4/tcp.c", 702),
        ("tcp_stream_alloc_skb", "net/ipv4/tcp.c", 861),
        ("tcp_sendmsg_locked", "net/ipv4/tcp.c", 1217),
        ("tcp_sendmsg", "net/ipv4/tcp.c", 1482),
        ("tcp_eat_recv_skb", "net/ipv4/tcp.c", 1635),
        ("tcp_recvmsg_locked", "net/ipv4/tcp.c", 2419),
        ("tcp_recvmsg", "net/ipv4/tcp.c", 2660),
        ("tcp_event_data_recv", "net/ipv4/tcp_input.c", 774),
        ("tcp_clean_rtx_queue", "net/ipv4/tcp_input.c", 3238),
        ("tcp_ack", "net/ipv4/tcp_input.c", 3760),
        ("tcp_drop_reason", "net/ipv4/tcp_input.c", 4711),
        ("tcp_queue_rcv", "net/ipv4/tcp_input.c", 4934),
        ("tcp_data_ready", "net/ipv4/tcp_input.c", 5003),
        ("tcp_data_queue", "net/ipv4/tcp_input.c", 5009),
        ("__tcp_ack_snd_check", "net/ipv4/tcp_input.c", 5517),
        ("tcp_validate_incoming", "net/ipv4/tcp_input.c", 5706),
        ("tcp_rcv_established", "net/ipv4/tcp_input.c", 5847),
        ("tcp_v4_send_check", "net/ipv4/tcp_ipv4.c", 650),
        ("tcp_v4_send_reset", "net/ipv4/tcp_ipv4.c", 677),
        ("tcp_v4_do_rcv", "net/ipv4/tcp_ipv4.c", 1701),
        ("tcp_v4_early_demux", "net/ipv4/tcp_ipv4.c", 1771),
        ("tcp_add_backlog", "net/ipv4/tcp_ipv4.c", 1810),
        ("tcp_v4_fill_cb", "net/ipv4/tcp_ipv4.c", 1950),
        ("tcp_v4_rcv", "net/ipv4/tcp_ipv4.c", 1976),
        ("tcp4_gso_segment", "net/ipv4/tcp_offload.c", 30),
        ("tcp_gso_segment", "net/ipv4/tcp_offload.c", 55),
        ("tcp_gro_receive", "net/ipv4/tcp_offload.c", 180),
        ("tcp4_gro_receive", "net/ipv4/tcp_offload.c", 319),
        ("tcp4_gro_complete", "net/ipv4/tcp_offload.c", 332),
        ("__tcp_transmit_skb", "net/ipv4/tcp_output.c", 1234),
        ("tcp_transmit_skb", "net/ipv4/tcp_output.c", 1414),
        ("tcp_set_skb_tso_segs", "net/ipv4/tcp_output.c", 1439),
        ("tcp_tso_segs", "net/ipv4/tcp_output.c", 1990),
        ("tcp_write_xmit", "net/ipv4/tcp_output.c", 2601),
        ("__tcp_push_pending_frames", "net/ipv4/tcp_output.c", 2867),
        ("__tcp_retransmit_skb", "net/ipv4/tcp_output.c", 3141),
        ("udp_set_csum", "net/ipv4/udp.c", 878),
        ("skb_gro_receive_list", "net/ipv4/udp_offload.c", 429),
        ("udp_gro_receive_segment", "net/ipv4/udp_offload.c", 457),
        ("udp_tunnel_xmit_skb", "net/ipv4/udp_tunnel_core.c", 153),
        ("nf_hook_slow", "net/netfilter/core.c", 619),
        ("nf_conntrack_in", "net/netfilter/nf_conntrack_core.c", 1966),
        ("ipv4_conntrack_in", "net/netfilter/nf_conntrack_proto.c", 203),
        ("nf_nat_packet", "net/netfilter/nf_nat_core.c", 675),
        ("nf_nat_inet_fn", "net/netfilter/nf_nat_core.c", 713),
        ("nf_nat_masquerade_ipv4", "net/netfilter/nf_nat_masquerade.c", 28),
        ("nf_nat_ipv4_manip_pkt", "net/netfilter/nf_nat_proto.c", 353),
        ("nf_nat_ipv4_out", "net/netfilter/nf_nat_proto.c", 718),
        ("nft_do_chain", "net/netfilter/nf_tables_core.c", 253),
        ("masquerade_tg", "net/netfilter/xt_MASQUERADE.c", 35),
        ("sch_direct_xmit", "net/sched/sch_generic.c", 314),
        ("qdisc_restart", "net/sched/sch_generic.c", 388),
        ("__qdisc_run", "net/sched/sch_generic.c", 410),
        ("pfifo_fast_enqueue", "net/sched/sch_generic.c", 721),
        ("pfifo_fast_dequeue", "net/sched/sch_generic.c", 743),
    }
)


def _cited_now() -> set[tuple[str, str, int]]:
    return (
        {(r.function, r.path, r.line) for r in PATH_SOURCES.values()}
        | {(r.function, r.path, r.line) for r in SKB_SOURCES.values()}
        | {(name, path, line) for name, (path, line) in CALLERS.items()}
    )


def test_tables_cite_only_checked_lines() -> None:
    """Every (function, file, line) the two explainers' tables cite is in the checked table."""
    assert sorted(_cited_now() - CHECKED) == []


def test_v6_4_lines_of_tcp_input_and_sock() -> None:
    """The lines the v6.4 review named: tcp_input.c after __tcp_oow_rate_limited and sock.c's
    sk_wait_data / sock_def_readable are v6.4's, not 6.4.4's."""
    lines = {(f, p): n for f, p, n in _cited_now()}
    assert lines["tcp_ack", "net/ipv4/tcp_input.c"] == 3760
    assert lines["tcp_validate_incoming", "net/ipv4/tcp_input.c"] == 5706
    assert lines["sock_def_readable", "net/core/sock.c"] == 3273
    assert lines["sk_wait_data", "net/core/sock.c"] == 2947
    # before __tcp_oow_rate_limited nothing moved
    assert lines["tcp_event_data_recv", "net/ipv4/tcp_input.c"] == 774
    assert lines["tcp_clean_rtx_queue", "net/ipv4/tcp_input.c"] == 3238
    # skb_set_owner_w sits before the 11 lines 6.4.4 added at sock_i_ino (2553): not moved
    assert lines["skb_set_owner_w", "net/core/sock.c"] == 2454


@pytest.mark.parametrize("slug", [p.slug for p in PATH.presets])
def test_path_preset_cites_checked_lines(slug: str) -> None:
    """Each frame of a path preset cites a function of the checked table at its checked line."""
    preset = PATH.preset(slug)
    assert preset is not None
    for f in PATH.run(PATH.parse(dict(preset.params))).frames:
        assert f.source is not None
        assert (f.source.function, f.source.path, f.source.line) in CHECKED, f.source


def test_skb_presets_cite_checked_lines() -> None:
    """Each frame of every sk_buff preset cites a checked line (its op and its caller)."""
    skb = SkbExplainer()
    callers = {(n, p, line) for n, (p, line) in CALLERS.items()}
    assert callers <= CHECKED
    for preset in skb.presets:
        for f in skb.run(skb.parse(dict(preset.params))).frames:
            assert f.source is not None
            assert (f.source.function, f.source.path, f.source.line) in CHECKED, f.source


@pytest.mark.parametrize(
    ("function", "path", "line"), sorted(CHECKED, key=lambda c: (c[1], c[2])), ids=str
)
def test_checked_line_defines_function_in_v6_4(function: str, path: str, line: int) -> None:
    """In the v6.4 tree, the checked line of path begins the function's definition: the name
    and "(" at column 0 (not an indented call), and a "{" before any ";" (not a prototype)."""
    require_v6_4()
    lines = v6_4_file(path)
    text = lines[line - 1]
    assert re.search(rf"(^|[\s*]){re.escape(function)} ?\(", text), (path, line, text)
    assert not text.startswith(("\t", " ")), (path, line, text)
    rest = "\n".join(lines[line - 1 : line + 12])
    assert "{" in rest and (";" not in rest or rest.index("{") < rest.index(";")), (path, line)
