"""TCP receive: from ``tcp_v4_rcv`` to the reader's ``recvmsg``.

Mirrors net/ipv4/tcp_ipv4.c (``tcp_v4_rcv``, ``tcp_v4_do_rcv``, the socket lookup and the
``no_tcp_socket`` reset), net/ipv4/tcp_input.c (``tcp_rcv_established``: header prediction,
``tcp_queue_rcv``, ``tcp_event_data_recv``, ``tcp_data_ready``), net/core/sock.c
(``sock_def_readable``) and net/ipv4/tcp.c (``tcp_recvmsg``).
"""

from __future__ import annotations

from app.sim.core.i18n import msg
from app.sim.path.skb import TCP_HLEN
from app.sim.path.walk import Seg, Walk


def tcp_rcv(w: Walk, seg: Seg) -> None:
    t, s, p = w.t, w.s, w.p
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
        w.drop("NO_SOCKET")
        return
    s.orphan(seg.skb)
    t.enter(
        "tcp_v4_rcv",
        msg(
            "tcp_v4_rcv: pskb_may_pull for the 32-byte header (doff 8), checksum already "
            "validated, socket taken from skb->sk (early demux: skb_steal_sock clears "
            "skb->sk and the destructor), TCP_SKB_CB filled (seq, end_seq, flags). The reader is not holding the socket lock, so the segment is "
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
        w.here(
            msg(
                "Fast path: __skb_pull(32) drops the TCP header; data now points at the "
                "payload, len {len}.",
                len=s.length(seg.skb),
            ),
            "tcp",
        )
        queue_rcv(w, seg)
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
        data_ready(w)
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
    queue_rcv(w, seg)
    data_ready(w)


def queue_rcv(w: Walk, seg: Seg) -> None:
    t, s = w.t, w.s
    t.counters["receive_queue"] += 1
    s.set_owner(seg.skb, "receiver", "sock_rfree")
    t.leaf(
        "tcp_queue_rcv",
        msg(
            "tcp_queue_rcv appends the skb to sk_receive_queue (queue length {n}) and "
            "charges its truesize {ts} to the socket with skb_set_owner_r (skb->sk = the "
            "receiving socket, destructor sock_rfree, sk_rmem_alloc += truesize); "
            "rcv_nxt advances by {len}. (The "
            "kernel first tries tcp_try_coalesce into the queue's tail skb; this model "
            "always queues.)",
            n=t.counters["receive_queue"],
            ts=s.view(seg.skb)["truesize"],
            len=s.length(seg.skb),
        ),
        layer="tcp",
    )
    w.delivered.append(seg)


def data_ready(w: Walk) -> None:
    t = w.t
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


def readers(w: Walk) -> None:
    t, s = w.t, w.s
    if not w.delivered:
        return
    t.context = "process"
    t.napi = None
    t.stack = []
    t.ns = "ns2" if w.p.device == "veth" else t.ns
    t.enter(
        "tcp_recvmsg",
        msg("The reader wakes up in tcp_recvmsg and takes the socket lock."),
        layer="socket",
    )
    for seg in w.delivered:
        t.cur = seg.skb
        t.packet = seg.index
        n = s.length(seg.skb)
        t.counters["receive_queue"] -= 1
        t.counters["delivered_bytes"] += n
        s.orphan(seg.skb)  # sock_rfree, as the skb is freed
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
    w.delivered.clear()
