"""The send buffer, as Linux 6.4 bounds it: ``sk_sndbuf`` against ``sk_wmem_queued``, the
truesize of every skb in the write and retransmission queues.

- Size: ``tcp_init_sock`` (net/ipv4/tcp.c line 458) starts sk_sndbuf at ``tcp_wmem[1]``;
  once the connection is established ``tcp_init_buffer_space`` (net/ipv4/tcp_input.c line
  535) grows it with ``tcp_sndbuf_expand`` (line 400) unless SO_SNDBUF locked it, and so does
  ``tcp_new_space`` (line 5474) after an ACK frees space while cwnd is not full
  (``tcp_should_expand_sndbuf``, line 5439). SO_SNDBUF (``sk_setsockopt``, net/core/sock.c
  line 1141) doubles its value, at least SOCK_MIN_SNDBUF, and sets SOCK_SNDBUF_LOCK
  (app.sim.tcp.sock.so_sndbuf).
- Charges: ``tcp_stream_alloc_skb`` (net/ipv4/tcp.c line 861) gives a new skb the truesize
  of its head, :data:`SKB_BASE`; ``tcp_skb_entail`` (line 659) adds it to sk_wmem_queued and
  every byte copied in adds one more (``skb_copy_to_page_nocache``, include/net/sock.h line
  2289). ``tso_fragment`` (net/ipv4/tcp_output.c line 2121), which cuts the front of an skb
  off to send it, and ``tcp_fragment`` (line 1527) each add a new head; ACKed skbs are freed
  and a partly ACKed one is trimmed (``tcp_clean_rtx_queue``, net/ipv4/tcp_input.c line
  3238; ``tcp_tso_acked``, line 3196; ``tcp_trim_head``, tcp_output.c line 1663).
- Limits: ``tcp_sendmsg_locked`` (net/ipv4/tcp.c line 1217) starts a new skb only while
  ``sk_stream_memory_free`` holds (line 1320; include/net/sock.h line 1382: sk_wmem_queued <
  sk_sndbuf, and ``tcp_stream_memory_free``, net/ipv4/tcp_ipv4.c line 3088: fewer unsent
  bytes than tcp_notsent_lowat); else it waits (``sk_stream_wait_memory``, net/core/stream.c
  line 118), or returns what it copied or EAGAIN when non-blocking. The writer is woken by
  ``sk_stream_write_space`` (stream.c line 30) once ``__sk_stream_is_writeable`` (sock.h line
  1397) holds: the free space is at least half of what is queued. ``tcp_check_space``
  (tcp_input.c line 5496) calls it when SOCK_NOSPACE is set, after an ACK
  (``tcp_data_snd_check``, line 5508) and after new data is sent (``tcp_event_new_data_sent``,
  tcp_output.c line 85).

Approximations (the counts the scripts need, not every byte of memory): the skb sizes are
those of an x86_64 build (:data:`SKB_BASE`); the SYN's and a FIN's own skbs are not
charged; the retransmission queue is split only where a retransmission or loss probe starts
and ends (``tcp_fragment``), not where SACK blocks cut it (``tcp_match_skb_to_sack``), and
SACKed skbs are never merged (``tcp_shift_skb_data``); ``tcp_fragment``'s refusal when the
queue is far over sk_sndbuf and memory pressure (``tcp_wmem_schedule``, tcp_mem) are left
out; only an ACK that makes the socket writeable wakes a blocked writer (arriving data,
``sk_data_ready``, does not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.core.tcp import TCP_INIT_CWND
from app.sim.tcp.sock import SKB_STRUCT, Skb, Sock, TxSkb, so_sndbuf

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim

# MAX_TCP_HEADER (include/net/tcp.h line 56): L1_CACHE_ALIGN(128 + MAX_HEADER), MAX_HEADER =
# LL_MAX_HEADER 128 + 48 (include/linux/netdevice.h lines 155, 170: x86_64 configs)
MAX_TCP_HEADER = 320
SHINFO = 320  # SKB_DATA_ALIGN(sizeof(struct skb_shared_info)), x86_64
# tcp_stream_alloc_skb(sk, 0, …): alloc_skb_fclone(MAX_TCP_HEADER) takes its head from the
# small-head cache (net/core/skbuff.c line 566: SKB_HEAD_ALIGN(320) = 640 bytes), whose
# skb_end_offset is 640 - SHINFO = 320; skb->truesize = SKB_TRUESIZE(320)
# (include/linux/skbuff.h line 272) = 320 + SKB_STRUCT + SHINFO
SKB_BASE = 320 + SKB_STRUCT + SHINFO


def memory_free(sim: Sim, sk: Sock, wake: int = 0) -> bool:
    """__sk_stream_memory_free (include/net/sock.h line 1382): sk_wmem_queued below
    sk_sndbuf, and tcp_stream_memory_free (net/ipv4/tcp_ipv4.c line 3088): the unsent bytes
    (write_seq - snd_nxt), doubled when ``wake``, below tcp_notsent_lowat."""
    if sk.wmem_queued >= sk.sndbuf:
        return False
    notsent = max(0, sk.write_seq - sk.snd_nxt)
    return (notsent << wake) < sim.p.sysctl.tcp_notsent_lowat


def is_writeable(sim: Sim, sk: Sock) -> bool:
    """__sk_stream_is_writeable(sk, 1) (include/net/sock.h line 1397): the free space
    (sk_stream_wspace, sk_sndbuf - sk_wmem_queued) is at least half of what is queued
    (sk_stream_min_wspace), and memory is free. tcp_poll's POLLOUT (net/ipv4/tcp.c line 565)."""
    room = sk.sndbuf - sk.wmem_queued
    return room >= sk.wmem_queued >> 1 and memory_free(sim, sk, 1)


def write_space(sim: Sim, sk: Sock) -> None:
    """sk_stream_write_space (net/core/stream.c line 30): once writeable, clear SOCK_NOSPACE
    and wake a writer sleeping in sk_stream_wait_memory."""
    if not is_writeable(sim, sk):
        return
    sk.nospace = False
    if not sk.write_wake and sk.ep.blocked is not None and sk.ep.blocked.call == "send":
        sim.note(
            msg(
                "The send buffer has room again ({q} of {b} bytes queued): the waiting "
                "writer is woken.",
                q=sk.wmem_queued,
                b=sk.sndbuf,
            ),
            "sk_stream_write_space",
        )
    sk.write_wake = True


def _roundup_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def sndbuf_expand(sim: Sim, sk: Sock) -> None:
    """tcp_sndbuf_expand (net/ipv4/tcp_input.c line 400): room for twice max(cwnd,
    TCP_INIT_CWND, reordering + 1) segments, each as a non-GSO skb would take it (the MSS
    plus MAX_TCP_HEADER and the shared info, rounded up to a power of two, plus struct
    sk_buff); CUBIC has no sndbuf_expand hook, so the factor is 2. At most tcp_wmem[2];
    never shrinks."""
    per_mss = max(sk.mss_clamp, sk.mss_cache) + MAX_TCP_HEADER + SHINFO
    per_mss = _roundup_pow2(per_mss) + SKB_STRUCT
    nr_segs = max(TCP_INIT_CWND, sk.cwnd, sk.reordering + 1)
    sndmem = 2 * nr_segs * per_mss
    if sk.sndbuf < sndmem:
        sk.sndbuf = min(sndmem, sim.p.sysctl.tcp_wmem[2])


def init_buffer_space(sim: Sim, sk: Sock) -> None:
    """tcp_init_buffer_space's send side (net/ipv4/tcp_input.c line 541): expand the send
    buffer at establishment unless SO_SNDBUF locked it."""
    if not sk.sndbuf_locked:
        sndbuf_expand(sim, sk)


def check_space(sim: Sim, sk: Sock) -> None:
    """tcp_check_space (net/ipv4/tcp_input.c line 5496) with SOCK_NOSPACE set: tcp_new_space
    (line 5474) expands the buffer when tcp_should_expand_sndbuf (line 5439) allows it (not
    locked, cwnd not full), then sk_stream_write_space."""
    from app.sim.tcp.tcp_sack import packets_in_flight  # (tcp_sack imports this module's users)

    if not sk.nospace or not sk.held:
        return
    if not sk.sndbuf_locked and packets_in_flight(sk) < sk.cwnd:
        sndbuf_expand(sim, sk)
    write_space(sim, sk)


def set_sndbuf(sim: Sim, sk: Sock, val: int) -> None:
    """SO_SNDBUF on a live socket (net/core/sock.c line 1141): lock the size, then
    sk_write_space wakes a writer if it grew."""
    sk.sndbuf = so_sndbuf(val)
    sk.sndbuf_locked = True
    write_space(sim, sk)


# --- the charges ------------------------------------------------------------------------------
def entail(sk: Sock) -> Skb:
    """tcp_stream_alloc_skb + tcp_skb_entail: a new, empty skb at the queue's end."""
    sk.wmem_queued += SKB_BASE
    return Skb(sk.data_end, truesize=SKB_BASE)


def charge(sk: Sock, skb: Skb, n: int) -> None:
    """skb_copy_to_page_nocache: ``n`` bytes copied into ``skb``."""
    skb.truesize += n
    sk.wmem_queued += n


def sent(sk: Sock, skb: Skb | None, start: int, end: int) -> None:
    """One packet of ``start`` to ``end`` left from the head skb (tcp_write_xmit). If the
    skb holds more, tso_fragment cut the packet off its front: a new head for the rest; the
    part sent joins the retransmission queue (tcp_event_new_data_sent)."""
    if skb is None or end <= start:
        return
    rest = skb.end - end
    if rest > 0:
        truesize = skb.truesize - rest
        skb.truesize = SKB_BASE + rest
        sk.wmem_queued += SKB_BASE
    else:
        truesize = skb.truesize
    sk.txq.append(TxSkb(start, end, truesize))


def split(sk: Sock, seq: int) -> None:
    """tcp_fragment in the retransmission queue (net/ipv4/tcp_output.c line 1527): the skb
    holding ``seq`` keeps its front; a new skb, with a head of its own, takes the rest."""
    for i, t in enumerate(sk.txq):
        if t.seq < seq < t.end:
            rest = t.end - seq
            t.truesize -= rest
            t.end = seq
            sk.txq.insert(i + 1, TxSkb(seq, seq + rest, SKB_BASE + rest))
            sk.wmem_queued += SKB_BASE
            return


def acked(sk: Sock, ack: int) -> None:
    """tcp_clean_rtx_queue: free the skbs ``ack`` covers; trim the ACKed front of one that
    holds more than one segment (tcp_tso_acked → tcp_trim_head: its truesize drops by the
    bytes trimmed)."""
    freed = 0
    while sk.txq and sk.txq[0].end <= ack:
        freed += sk.txq.pop(0).truesize
    head = sk.txq[0] if sk.txq else None
    if head is not None and head.seq < ack and head.end - head.seq > sk.mss_cache:
        cut = ack - head.seq
        head.seq = ack
        head.truesize -= cut
        freed += cut
    sk.wmem_queued -= freed


def purge(sk: Sock) -> None:
    """tcp_write_queue_purge: both queues are gone."""
    sk.txq = []
    sk.wq = []
    sk.wmem_queued = 0
