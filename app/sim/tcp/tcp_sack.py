"""The sender's SACK scoreboard, after ``net/ipv4/tcp_input.c``: the SACK blocks of an
incoming ACK tag the retransmission queue (``tcp_sacktag_write_queue``, ``tcp_sacktag_one``),
a first block below the ACK or inside the second is a D-SACK (``tcp_check_dsack``), a newly
SACKed hole below the highest SACK raises ``reordering`` (``tcp_check_sack_reordering``), and
without SACK each duplicate ACK counts as one SACKed segment (``tcp_add_reno_sack``,
``tcp_remove_reno_sacks``). The counters of ``include/net/tcp.h`` (sacked_out, lost_out,
retrans_out, ``tcp_packets_in_flight``) are read from the queue's per-segment marks.

The model's queue holds one segment (at most one MSS) per entry, so a block tags whole
entries and nothing is split or shifted (``tcp_match_skb_to_sack``, ``tcp_shift_skb_data``):
the counts are the same. D-SACK blocks are recognised and left out of the tagging; they
count retransmissions shown needless (undo_retrans, for ``tcp_may_undo`` in Loss), but Recovery's
D-SACK undo (``tcp_try_undo_dsack``) is not modelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import tcp_recovery
from app.sim.tcp.sock import OutSeg, Seg, Sock

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim

# net/ipv4/tcp_input.c's FLAG_* bits (v6.4 lines 86-108)
FLAG_DATA = 0x01
FLAG_WIN_UPDATE = 0x02
FLAG_DATA_ACKED = 0x04
FLAG_RETRANS_DATA_ACKED = 0x08
FLAG_SYN_ACKED = 0x10
FLAG_DATA_SACKED = 0x20
FLAG_LOST_RETRANS = 0x80
FLAG_ORIG_SACK_ACKED = 0x200
FLAG_SND_UNA_ADVANCED = 0x400
FLAG_DSACKING_ACK = 0x800
FLAG_SET_XMIT_TIMER = 0x1000
FLAG_ACKED = FLAG_DATA_ACKED | FLAG_SYN_ACKED
FLAG_NOT_DUP = FLAG_DATA | FLAG_WIN_UPDATE | FLAG_ACKED
FLAG_CA_ALERT = FLAG_DATA_SACKED | FLAG_DSACKING_ACK
FLAG_FORWARD_PROGRESS = FLAG_ACKED | FLAG_DATA_SACKED

TCP_MAX_REORDERING = 300  # net.ipv4.tcp_max_reordering


def sacked_out(sk: Sock) -> int:
    """tp->sacked_out: SACKed segments, or (without SACK) the duplicate ACKs counted."""
    if not sk.sack_ok:
        return sk.reno_sacked
    return sum(1 for o in sk.rtx if o.sacked)


def lost_out(sk: Sock) -> int:
    """tp->lost_out: segments marked TCPCB_LOST."""
    return sum(1 for o in sk.rtx if o.lost)


def retrans_out(sk: Sock) -> int:
    """tp->retrans_out: retransmissions in flight (TCPCB_SACKED_RETRANS)."""
    return sum(1 for o in sk.rtx if o.rexmit)


def packets_in_flight(sk: Sock) -> int:
    """tcp_packets_in_flight (include/net/tcp.h:1222): packets_out - (sacked_out + lost_out) +
    retrans_out."""
    return len(sk.rtx) - (sacked_out(sk) + lost_out(sk)) + retrans_out(sk)


def highest_sack_seq(sk: Sock) -> int:
    """tcp_highest_sack_seq (include/net/tcp.h:1960): the start of the segment after the highest SACKed one (snd_una
    when nothing is SACKed, snd_nxt when the highest SACKed is the last)."""
    top = None
    for i, o in enumerate(sk.rtx):
        if o.sacked:
            top = i
    if top is None:
        return sk.snd_una
    return sk.rtx[top + 1].seq if top + 1 < len(sk.rtx) else sk.snd_nxt


def mark_skb_lost(sk: Sock, o: OutSeg) -> bool:
    """tcp_mark_skb_lost (net/ipv4/tcp_input.c:1085): a SACKed segment is never lost; a lost retransmission is lost again
    (TCPCB_SACKED_RETRANS cleared); else TCPCB_LOST is set. True when it changed anything."""
    if o.sacked:
        return False
    if o.lost:
        if o.rexmit:
            o.rexmit = False
            sk.lost_count += 1
            return True
        return False
    o.lost = True
    sk.lost_count += 1
    return True


def check_sack_reordering(sk: Sock, low_seq: int) -> None:
    """tcp_check_sack_reordering (net/ipv4/tcp_input.c:1032): data delivered below the highest SACK without a
    retransmission is reordering; ``reordering`` grows to the distance in segments."""
    fack = highest_sack_seq(sk)
    if low_seq >= fack:
        return
    metric = fack - low_seq
    mss = sk.mss_cache
    if metric > sk.reordering * mss and mss:
        sk.reordering = min((metric + mss - 1) // mss, TCP_MAX_REORDERING)
    sk.reord_seen += 1


def blocks(seg: Seg) -> list[tuple[int, int]]:
    o = seg.opt("sack")
    if o is None:
        return []
    return list(zip(o.values[::2], o.values[1::2], strict=True))


def check_dsack(sim: Sim, sk: Sock, sp: list[tuple[int, int]], ack: int) -> bool:
    """tcp_check_dsack (net/ipv4/tcp_input.c:1249): the first block is a D-SACK when it lies below the ACK, or inside the
    second block."""
    s0, e0 = sp[0]
    if s0 < ack:
        pass
    elif len(sp) > 1:
        s1, e1 = sp[1]
        if e0 > e1 or s0 < s1:
            return False
    else:
        return False
    sim.note(
        msg("The ACK carries a D-SACK for {a}-{b}: the peer got that data twice.", a=s0, b=e0),
        "tcp_check_dsack",
    )
    return True


def dsack_undo_retrans(sk: Sock, block: tuple[int, int], prior_snd_una: int) -> None:
    """A D-SACK shows retransmissions needless: undo_retrans counts down by the segments it
    covers, for a block at or below snd_una (tcp_check_dsack's count of tcp_dsack_seen's
    segments, at line 1280 of v6.4's net/ipv4/tcp_input.c) or over retransmitted segments above it
    (tcp_sacktag_one, line 1355); only above the undo marker. tcp_dsack_seen's check of the
    D-SACKed count against total_retrans (a dubious D-SACK is skipped) is not modelled."""
    start, end = block
    if sk.undo_marker is None or sk.undo_retrans <= 0 or end <= sk.undo_marker:
        return
    if end <= prior_snd_una:
        mss = max(sk.mss_cache, 1)
        dup = max(1, -(-(end - start) // mss))
    else:
        marker = sk.undo_marker
        dup = sum(1 for o in sk.rtx if o.retrans and start <= o.seq and marker < o.end <= end)
    sk.undo_retrans = max(0, sk.undo_retrans - dup)


def sacktag_one(sim: Sim, sk: Sock, o: OutSeg, state: dict[str, int]) -> None:
    """tcp_sacktag_one (net/ipv4/tcp_input.c:1345) for a segment newly inside a SACK block: RACK advances, a lost
    segment is no longer lost (a lost retransmission no longer in flight), a never
    retransmitted one below the highest SACK is reordering; TCPCB_SACKED_ACKED is set."""
    if o.end <= sk.snd_una or o.sacked:
        return
    tcp_recovery.rack_advance(sim, sk, o.retrans > 0, o.tx, o.sent_ms)
    if o.rexmit:
        if o.lost:
            o.lost = False
            o.rexmit = False
    else:
        if o.retrans == 0:
            if o.seq < highest_sack_seq(sk) and o.seq < state["reord"]:
                state["reord"] = o.seq
            if o.end <= sk.high_seq:
                state["flag"] |= FLAG_ORIG_SACK_ACKED
        o.lost = False
    o.sacked = True
    state["flag"] |= FLAG_DATA_SACKED
    state["delivered"] += 1


def sacktag_write_queue(sim: Sim, sk: Sock, seg: Seg, prior_snd_una: int) -> tuple[int, int]:
    """tcp_sacktag_write_queue (net/ipv4/tcp_input.c:1809): tag the segments each valid block covers (blocks at or below
    snd_una are skipped, a D-SACK is not tagged), then check reordering (not in Loss).
    Returns (flags, newly SACKed segments)."""
    sp = blocks(seg)
    state = {"flag": 0, "reord": sk.snd_nxt, "delivered": 0}
    if not sp:
        return 0, 0
    found_dup = check_dsack(sim, sk, sp, seg.ack)
    if found_dup:
        state["flag"] |= FLAG_DSACKING_ACK
        dsack_undo_retrans(sk, sp[0], prior_snd_una)
    if not sk.rtx:
        return state["flag"], 0
    used = [
        (s, e)
        for i, (s, e) in enumerate(sp)
        if not (i == 0 and found_dup) and e > prior_snd_una and s < e <= sk.snd_nxt
    ]
    for s, e in sorted(used):
        for o in sk.rtx:
            if s <= o.seq and o.end <= e:
                sacktag_one(sim, sk, o, state)
    if state["delivered"]:
        sim.note(
            msg(
                "SACK: {n} more segment(s) reached the peer out of order; {s} SACKed in all.",
                n=state["delivered"],
                s=sacked_out(sk),
            ),
            "tcp_sacktag_write_queue",
        )
    if sk.ca_state != "Loss":
        prior = sk.reordering
        check_sack_reordering(sk, state["reord"])
        if sk.reordering != prior:
            sim.note(
                msg(
                    "A hole below the highest SACK was filled by its first transmission: "
                    "reordering, now {r} segments.",
                    r=sk.reordering,
                ),
                "tcp_check_sack_reordering",
            )
    return state["flag"], state["delivered"]


def add_reno_sack(sk: Sock, num_dupack: int) -> int:
    """tcp_add_reno_sack (net/ipv4/tcp_input.c:2040): without SACK a duplicate ACK counts as one SACKed segment (at most
    packets_out - 1, tcp_limit_reno_sacked; more would be reordering). Returns delivered."""
    if not num_dupack:
        return 0
    prior = sk.reno_sacked
    sk.reno_sacked += num_dupack
    limit_reno_sacked(sk)
    delivered = max(0, sk.reno_sacked - prior)
    sk.reno_delivered += delivered  # tcp_count_delivered: tcp_ack's tcp_newly_delivered sees it
    return delivered


def limit_reno_sacked(sk: Sock) -> None:
    """tcp_limit_reno_sacked (net/ipv4/tcp_input.c:2007) /
    tcp_check_reno_reordering (net/ipv4/tcp_input.c:2025): sacked_out + the holes (at least
    one) never exceed packets_out; when they would, that is reordering."""
    holes = min(max(lost_out(sk), 1), len(sk.rtx))
    if sk.reno_sacked + holes > len(sk.rtx):
        sk.reno_sacked = len(sk.rtx) - holes
        sk.reordering = min(len(sk.rtx), TCP_MAX_REORDERING)
        sk.reord_seen += 1


def remove_reno_sacks(sk: Sock, acked: int) -> int:
    """tcp_remove_reno_sacks (net/ipv4/tcp_input.c:2058): a cumulative ACK fills one hole; the rest of what it acked had
    already been counted by duplicate ACKs. Returns the segments it newly delivered."""
    delivered = 0
    if acked > 0:
        delivered = max(acked - sk.reno_sacked, 1)
        if acked - 1 >= sk.reno_sacked:
            sk.reno_sacked = 0
        else:
            sk.reno_sacked -= acked - 1
    return delivered
