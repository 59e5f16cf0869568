"""The receiver's SACK and D-SACK blocks, after ``net/ipv4/tcp_input.c``: which blocks the
next ACK reports (``tcp_sack_new_ofo_skb``, ``tcp_sack_remove``) and which range it reports
as received twice (``tcp_dsack_set``, ``tcp_dsack_extend``, and ``tcp_ofo_queue``'s D-SACK
for out-of-order data that in-order data covered again). app.sim.tcp.wire writes them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import msg
from app.sim.tcp import wire
from app.sim.tcp.sock import Sock

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def dsack_set(sim: Sim, sk: Sock, seq: int, end: int) -> None:
    """tcp_dsack_set: with SACK agreed (and tcp_dsack, 1), the next ACK reports the
    duplicate range as a D-SACK block, ahead of the SACK blocks."""
    if sk.sack_ok:
        sk.dsack = (seq, end)
        sim.note(
            msg("D-SACK: the next ACK reports {a}-{b} as received twice.", a=seq, b=end),
            "tcp_dsack_set",
        )


def sack_new_ofo(sk: Sock, seq: int, end: int) -> None:
    """tcp_sack_new_ofo_skb: extend the block the data touches and move it first (merging
    any it now meets, tcp_sack_maybe_coalesce), or put a new block first (at most
    TCP_NUM_SACKS)."""
    for i, (a, b) in enumerate(sk.sacks):
        if seq <= b and end >= a:  # tcp_sack_extend: touching or overlapping
            blk = (min(a, seq), max(b, end))
            rest = sk.sacks[:i] + sk.sacks[i + 1 :]
            merged = [r for r in rest if r[1] < blk[0] or r[0] > blk[1]]
            for r in rest:
                if r not in merged:
                    blk = (min(blk[0], r[0]), max(blk[1], r[1]))
            sk.sacks = [blk, *merged]
            return
    sk.sacks = [(seq, end), *sk.sacks][: wire.TCP_NUM_SACKS]


def sack_remove(sk: Sock) -> None:
    """tcp_sack_remove: blocks RCV.NXT has reached go; none when nothing is out of order."""
    if not sk.ooo:
        sk.sacks = []
        return
    sk.sacks = [(a, b) for a, b in sk.sacks if a > sk.rcv_nxt]


def dsack_extend(sim: Sim, sk: Sock, seq: int, end: int) -> None:
    """tcp_dsack_extend (v6.4 line 4460): a D-SACK block already pending grows to cover
    the range when it touches it (tcp_sack_extend), else the range becomes the block."""
    if sk.dsack is None:
        dsack_set(sim, sk, seq, end)
        return
    a, b = sk.dsack
    if seq <= b and a <= end:
        sk.dsack = (min(a, seq), max(b, end))


def ofo_dsack(sim: Sim, sk: Sock, seq: int, end: int, dsack_high: int) -> int:
    """tcp_ofo_queue's D-SACK (v6.4 line 4721): an out-of-order segment that starts below
    ``dsack_high`` (RCV.NXT when the in-order data arrived) was received twice. 6.4 reports
    it from its start up to the old ``dsack_high``, not to its own end: with 1001:3001 queued
    and 1:6001 arriving, the ACK carries the D-SACK 1001:6001 (a 2025 fix, "tcp: fix
    tcp_ofo_queue() to avoid including too much DUP SACK range", reports 1001:3001). Returns
    the new ``dsack_high``."""
    if seq >= dsack_high:
        return dsack_high
    dsack_extend(sim, sk, seq, dsack_high)
    return min(dsack_high, end)
