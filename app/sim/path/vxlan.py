"""An overlay: VXLAN. The inner frame is built as usual, then the outer VXLAN, UDP, IPv4 and
Ethernet headers are pushed into its headroom and it leaves by the underlay's NIC.

Mirrors drivers/net/vxlan/vxlan_core.c (``vxlan_xmit``, ``vxlan_xmit_one``,
``vxlan_build_skb``), net/ipv4/udp_tunnel_core.c (``udp_tunnel_xmit_skb``),
net/ipv4/ip_tunnel_core.c (``iptunnel_xmit``) and net/ipv4/ip_output.c for the outer packet.
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.dev_tx import dev_queue_xmit_nic, hard_start, tx_completion
from app.sim.path.ip_output import finish_output, neigh_cached
from app.sim.path.params import MSS
from app.sim.path.skb import IP_HLEN
from app.sim.path.socket_tx import tcp_send
from app.sim.path.walk import Walk


def walk_vxlan(w: Walk) -> None:
    p, t, s = w.p, w.t, w.s
    t.dev = "vxlan0"
    clone = tcp_send(w, 0, p.payload_bytes, MSS - 50)
    if clone is None:
        raise RuntimeError("internal: clone is unset here")
    neigh_cached(w, clone)
    s.set_header(clone, "mac")
    t.enter(
        "__dev_queue_xmit",
        msg(
            "__dev_queue_xmit on vxlan0 (noqueue). The skb is a whole inner Ethernet "
            "frame now; mac_header is reset to its Ethernet header."
        ),
        layer="dev",
    )
    hard_start(w)
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
    free = s.data(clone)
    s.reset_inner_headers(clone)
    inner = s.view(clone)
    s.push(clone, 8, "vxlan")
    t.leaf(
        "vxlan_build_skb",
        msg(
            "vxlan_build_skb: skb_cow_head asks for 52 bytes of headroom (16 link + 16 "
            "VXLAN/UDP + 20 IP); {h} are free, so no copy. iptunnel_handle_offloads finds "
            "skb->encapsulation still 0, so skb_reset_inner_headers copies the inner "
            "frame's offsets (inner_mac_header {m}, inner_network_header {n}, "
            "inner_transport_header {tr}), encapsulation becomes 1 and gso_type gains "
            "SKB_GSO_UDP_TUNNEL. Then __skb_push(8) for the VXLAN header (VNI).",
            h=free,
            m=inner["inner_mac_header"] or 0,
            n=inner["inner_network_header"] or 0,
            tr=inner["inner_transport_header"] or 0,
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
    w.hook("LOCAL_OUT", "nf_hook")
    t.leave()
    t.dev = "eth0"
    t.enter(
        "ip_output",
        msg("ip_output: skb->dev = eth0; POST_ROUTING."),
        layer="ip",
    )
    w.hook("POST_ROUTING", "NF_HOOK_COND")
    finish_output(w, clone)
    neigh_cached(w, clone)
    dev_queue_xmit_nic(w, clone, "eth0")
    t.stack = []
    tx_completion(w, clone)
