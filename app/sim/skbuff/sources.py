"""Where each op lives in Linux 6.4: the definition line of every function a step cites, and
the callers a scenario may name with ``via`` (net/core/skbuff.c, include/linux/skbuff.h and the
protocol and driver files that call them)."""

from __future__ import annotations

from app.sim.core import SourceRef
from app.sim.core.sources import LINUX_6_4

_src = LINUX_6_4.ref


SKBUFF_H = "include/linux/skbuff.h"
SKBUFF_C = "net/core/skbuff.c"
# Every line below is the definition line of the function in upstream Linux v6.4, the version
# the source links open (checked against the 6.4.6 tree by tests/sim/skbuff/test_skb_sources.py
# when the tree is present; net/ipv4/tcp_input.c lines after __tcp_oow_rate_limited are 6.4.4's
# minus 6, see app/sim/path/sources.py). The zerocopy, route and reassembly lines (issue 22 item
# 10) were read in the 6.4.4 tree: those in skbuff.c, skbuff.h, dst.h and route.c lie between
# lines checked equal to v6.4, so no stable change moved them. net/ipv4/ip_fragment.c (275, 411,
# 483), net/ipv4/ip_sockglue.c (1415) and skb_mark_for_recycle (skbuff.h 5122) were then checked
# in a v6.4 tree (snapshot julianw1010/WASP-linux-6.4.0, initial commit 6e5f9d87eda5: Makefile
# 6.4.0, tcp_ack at 3760 and sk_wait_data at 2947, so before any stable patch): each function is
# defined at the line cited, and the three files' blobs equal 6.4.4's (69c00ffd, 8e97d8d4,
# 0b404174); tests/sim/path/test_cited_lines.py checks the whole table there when it is present.
SOURCES: dict[str, SourceRef] = {
    "alloc_skb": _src("alloc_skb", SKBUFF_H, 1285),
    "alloc_skb_fclone": _src("alloc_skb_fclone", SKBUFF_H, 1335),
    "netdev_alloc_skb": _src("__netdev_alloc_skb", SKBUFF_C, 702),
    "napi_alloc_skb": _src("__napi_alloc_skb", SKBUFF_C, 776),
    "build_skb": _src("build_skb", SKBUFF_C, 469),
    "napi_build_skb": _src("napi_build_skb", SKBUFF_C, 537),
    "tcp_stream_alloc_skb": _src("tcp_stream_alloc_skb", "net/ipv4/tcp.c", 861),
    "skb_reserve": _src("skb_reserve", SKBUFF_H, 2735),
    "skb_put": _src("skb_put", SKBUFF_C, 2383),
    "skb_push": _src("skb_push", SKBUFF_C, 2404),
    "skb_pull": _src("skb_pull", SKBUFF_C, 2424),
    "skb_trim": _src("skb_trim", SKBUFF_C, 2463),
    "pskb_trim": _src("pskb_trim", SKBUFF_H, 3067),
    "skb_headroom": _src("skb_headroom", SKBUFF_H, 2696),
    "skb_tailroom": _src("skb_tailroom", SKBUFF_H, 2707),
    "skb_headlen": _src("skb_headlen", SKBUFF_H, 2405),
    "skb_add_rx_frag": _src("skb_add_rx_frag", SKBUFF_C, 851),
    "skb_fill_page_desc": _src("skb_fill_page_desc", SKBUFF_H, 2488),
    "skb_gro_receive": _src("skb_gro_receive", "net/core/gro.c", 153),
    "skb_gro_receive_list": _src("skb_gro_receive_list", "net/ipv4/udp_offload.c", 429),
    "skb_get": _src("skb_get", SKBUFF_H, 1885),
    "skb_set_owner_w": _src("skb_set_owner_w", "net/core/sock.c", 2454),
    "skb_clone": _src("skb_clone", SKBUFF_C, 1853),
    "skb_copy": _src("skb_copy", SKBUFF_C, 1933),
    "pskb_copy": _src("__pskb_copy_fclone", SKBUFF_C, 1972),
    "pskb_expand_head": _src("pskb_expand_head", SKBUFF_C, 2036),
    "skb_linearize": _src("skb_linearize", SKBUFF_H, 3730),
    "msg_zerocopy_realloc": _src("msg_zerocopy_realloc", SKBUFF_C, 1538),
    "skb_zerocopy_iter_stream": _src("skb_zerocopy_iter_stream", SKBUFF_C, 1682),
    "net_zcopy_put": _src("net_zcopy_put", SKBUFF_H, 1732),
    "__kfree_skb": _src("__kfree_skb", SKBUFF_C, 1026),
    "skb_dst_set_noref": _src("skb_dst_set_noref", SKBUFF_H, 1153),
    "skb_mark_for_recycle": _src("skb_mark_for_recycle", SKBUFF_H, 5122),
    "skb_dst_force": _src("skb_dst_force", "include/net/dst.h", 319),
    "skb_dst_drop": _src("skb_dst_drop", "include/net/dst.h", 279),
    "ip_frag_queue": _src("ip_frag_queue", "net/ipv4/ip_fragment.c", 275),
    "ip_frag_reasm": _src("ip_frag_reasm", "net/ipv4/ip_fragment.c", 411),
    "kfree_skb": _src("kfree_skb_reason", SKBUFF_C, 1061),
    "consume_skb": _src("consume_skb", SKBUFF_C, 1238),
    "__skb_header_release": _src("__skb_header_release", SKBUFF_H, 1970),
    "skb_reset_mac_header": _src("skb_reset_mac_header", SKBUFF_H, 2916),
    "skb_set_mac_header": _src("skb_set_mac_header", SKBUFF_H, 2921),
    "skb_reset_network_header": _src("skb_reset_network_header", SKBUFF_H, 2878),
    "skb_set_network_header": _src("skb_set_network_header", SKBUFF_H, 2883),
    "skb_reset_transport_header": _src("skb_reset_transport_header", SKBUFF_H, 2861),
    "skb_set_transport_header": _src("skb_set_transport_header", SKBUFF_H, 2866),
    "pskb_may_pull": _src("pskb_may_pull", SKBUFF_H, 2674),
    "ip_rcv_core": _src("ip_rcv_core", "net/ipv4/ip_input.c", 456),
    "tcp_v4_fill_cb": _src("tcp_v4_fill_cb", "net/ipv4/tcp_ipv4.c", 1950),
    "tcp_skb_entail": _src("tcp_skb_entail", "net/ipv4/tcp.c", 659),
    "tcp_set_skb_tso_segs": _src("tcp_set_skb_tso_segs", "net/ipv4/tcp_output.c", 1439),
    "__tcp_transmit_skb": _src("__tcp_transmit_skb", "net/ipv4/tcp_output.c", 1234),
    "tcp4_gro_complete": _src("tcp4_gro_complete", "net/ipv4/tcp_offload.c", 332),
    "skb_segment": _src("skb_segment", SKBUFF_C, 4355),
    "skb_partial_csum_set": _src("skb_partial_csum_set", SKBUFF_C, 5298),
    "tcp_v4_send_check": _src("tcp_v4_send_check", "net/ipv4/tcp_ipv4.c", 650),
    "igb_rx_checksum": _src("igb_rx_checksum", "drivers/net/ethernet/intel/igb/igb_main.c", 8674),
}

# Callers a scenario may name with "via", shown in the narration with the file and line where
# the caller is defined (Linux 6.4).
CALLERS: dict[str, tuple[str, int]] = {
    "eth_type_trans": ("net/ethernet/eth.c", 155),
    "ip_rcv_core": ("net/ipv4/ip_input.c", 456),
    "ip_local_deliver_finish": ("net/ipv4/ip_input.c", 227),
    "tcp_v4_rcv": ("net/ipv4/tcp_ipv4.c", 1976),
    "tcp_rcv_established": ("net/ipv4/tcp_input.c", 5847),
    "tcp_data_queue": ("net/ipv4/tcp_input.c", 5009),
    "tcp_sendmsg_locked": ("net/ipv4/tcp.c", 1217),
    "tcp_skb_entail": ("net/ipv4/tcp.c", 659),
    "tcp_recvmsg_locked": ("net/ipv4/tcp.c", 2419),
    "tcp_eat_recv_skb": ("net/ipv4/tcp.c", 1635),
    "__tcp_transmit_skb": ("net/ipv4/tcp_output.c", 1234),
    "__tcp_retransmit_skb": ("net/ipv4/tcp_output.c", 3141),
    "tcp_clean_rtx_queue": ("net/ipv4/tcp_input.c", 3238),
    "__ip_queue_xmit": ("net/ipv4/ip_output.c", 454),
    "ip_finish_output2": ("net/ipv4/ip_output.c", 195),
    "neigh_hh_output": ("include/net/neighbour.h", 491),
    "eth_header": ("net/ethernet/eth.c", 79),
    "igb_clean_rx_irq": ("drivers/net/ethernet/intel/igb/igb_main.c", 8883),
    "igb_build_skb": ("drivers/net/ethernet/intel/igb/igb_main.c", 8558),
    "igb_construct_skb": ("drivers/net/ethernet/intel/igb/igb_main.c", 8506),
    "igb_clean_tx_irq": ("drivers/net/ethernet/intel/igb/igb_main.c", 8246),
    "napi_gro_receive": ("net/core/gro.c", 648),
    "dev_gro_receive": ("net/core/gro.c", 482),
    "napi_skb_finish": ("net/core/gro.c", 621),
    "tcp_gro_receive": ("net/ipv4/tcp_offload.c", 180),
    "udp_gro_receive_segment": ("net/ipv4/udp_offload.c", 457),
    "skb_gro_receive": ("net/core/gro.c", 153),
    "napi_consume_skb": (SKBUFF_C, 1300),
    "igb_process_skb_fields": ("drivers/net/ethernet/intel/igb/igb_main.c", 8799),
    "__netif_receive_skb_core": ("net/core/dev.c", 5281),
    "ip_rcv": ("net/ipv4/ip_input.c", 560),
    "tcp_drop_reason": ("net/ipv4/tcp_input.c", 4711),
    "__dev_queue_xmit": ("net/core/dev.c", 4150),
    "validate_xmit_skb": ("net/core/dev.c", 3643),
    "ip_route_input_slow": ("net/ipv4/route.c", 2220),
    "ip_defrag": ("net/ipv4/ip_fragment.c", 483),
    "ip_frag_queue": ("net/ipv4/ip_fragment.c", 275),
    "ipv4_pktinfo_prepare": ("net/ipv4/ip_sockglue.c", 1415),
}
KNOWN_CALLERS: dict[str, str] = {name: f"{path}:{line}" for name, (path, line) in CALLERS.items()}

# Callers that use the unchecked double-underscore variant of the op they are shown with.
UNCHECKED_CALLERS: dict[str, str] = {
    "ip_local_deliver_finish": "__skb_pull",
    "tcp_rcv_established": "__skb_pull",
    "tcp_data_queue": "__skb_pull",
    "neigh_hh_output": "__skb_push",
    "igb_build_skb": "__skb_put",
    "igb_construct_skb": "__skb_put",
}
