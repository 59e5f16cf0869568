"""Socket TX: the TCP sender from ``write()`` to the IP layer, and the whole NIC transmit walk.

Mirrors net/ipv4/tcp.c (``tcp_sendmsg``, ``tcp_sendmsg_locked``, ``tcp_stream_alloc_skb``,
``tcp_skb_entail``, ``tcp_push``), net/ipv4/tcp_output.c (``__tcp_push_pending_frames``,
``tcp_write_xmit``, ``__tcp_transmit_skb``: the clone that goes down while the original stays
queued) and the top of net/ipv4/ip_output.c (``__ip_queue_xmit``, ``ip_local_out``,
``ip_output``), with include/net/dst.h's ``dst_output``.
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.dev_tx import dev_queue_xmit_nic, tx_completion
from app.sim.path.ip_output import finish_output, neigh_arp, neigh_cached
from app.sim.path.params import MSS
from app.sim.path.skb import IP_HLEN, TCP_HLEN
from app.sim.path.walk import Walk


def tcp_send(w: Walk, i: int, payload: int, mss: int) -> str | None:
    """From write() to ip_finish_output2; returns the clone that goes on, None if dropped."""
    t, s = w.t, w.s
    t.context = "process"
    t.packet = i
    orig = w.name("skb")
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
    w.here(
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
            "queued until it is acknowledged; its truesize is charged to sk_wmem_queued, "
            "but skb->sk stays NULL: the socket owns the queue, not this skb."
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
    clone = w.name("clone")
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
    s.set_owner(clone, "sender", "tcp_wfree")
    w.here(
        msg(
            "skb_push(32) makes room for the TCP header with the timestamp option and "
            "transport_header is set there. The clone is then charged to the socket, "
            "skb_set_owner_w's work written out: skb_orphan, skb->sk = sk, skb->destructor "
            "= tcp_wfree, sk_wmem_alloc += truesize ({ts}). TSQ counts these bytes "
            "(tcp_small_queue_check); tcp_wfree gives them back when the skb is freed. "
            "Ports, seq, ack, flags and window are written; the checksum is left to the "
            "NIC (CHECKSUM_PARTIAL).",
            ts=s.view(clone)["truesize"],
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
    if not w.hook("LOCAL_OUT", "nf_hook"):
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
    if not w.hook("POST_ROUTING", "NF_HOOK_COND"):
        return None
    finish_output(w, clone)
    return clone


def walk_tx_nic(w: Walk) -> None:
    p, t = w.p, w.t
    for i in range(p.packets):
        clone = tcp_send(w, i, p.payload_bytes, MSS)
        if clone is None:
            t.stack = []
            continue
        if p.neigh == "arp" and i == 0:
            neigh_arp(w, clone)
        else:
            neigh_cached(w, clone)
            dev_queue_xmit_nic(w, clone, "eth0")
            t.stack = []
        tx_completion(w, clone)
