"""What leaves a socket, after ``net/ipv4/tcp_output.c``: the SYN (``tcp_connect``), ACKs
(``tcp_send_ack``, ``tcp_event_ack_sent``), new data and the FIN within cwnd and the peer's
window (``tcp_write_xmit``, ``tcp_send_fin``, Nagle and SWS avoidance), retransmissions
(``tcp_retransmit_skb``), probes (``tcp_xmit_probe_skb``, ``tcp_write_wakeup``) and the
active RST (``tcp_send_active_reset``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import Message, msg
from app.sim.tcp.sock import (
    ATO_MIN,
    RTO_MAX,
    RTO_MIN,
    OutSeg,
    Sock,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def active_reset(sim: Sim, sk: Sock) -> None:
    """tcp_send_active_reset: RST+ACK at SND.NXT. It goes through __tcp_transmit_skb, which
    writes tcp_select_window() into every segment but a SYN: the RST advertises the window too."""
    sim.xmit(
        sk.ep,
        ("RST", "ACK"),
        sk.snd_nxt,
        sk.rcv_nxt,
        0,
        sk.adv_window(),
        "rst",
        "tcp_send_active_reset",
        msg("{ep} sends RST+ACK seq={seq}.", ep=sk.ep.label, seq=sk.snd_nxt),
    )


def ack_sent(sim: Sim, sk: Sock) -> None:
    """tcp_event_ack_sent: the ACK went out, the delayed ACK is cancelled."""
    sk.ack_sched = False
    sk.ack_now = False
    sk.stop("delack")
    if sk.quick:
        sk.quick -= 1
        if sk.quick == 0:
            sk.ato = ATO_MIN
    sk.rcv_wnd = sk.adv_window()
    sk.rcv_wup = sk.rcv_nxt


def send_ack(sim: Sim, sk: Sock, kind: str, src: str) -> None:
    win = sk.adv_window()
    texts = {
        "ack": msg("{ep} sends ACK ack={ack} win={win}.", ep=sk.ep.label, ack=sk.rcv_nxt, win=win),
        "delayed_ack": msg("{ep} sends its delayed ACK ack={ack}.", ep=sk.ep.label, ack=sk.rcv_nxt),
        "challenge_ack": msg(
            "{ep} sends a challenge ACK (RFC 5961) seq={seq} ack={ack}.",
            ep=sk.ep.label,
            seq=sk.snd_nxt,
            ack=sk.rcv_nxt,
        ),
        "dupack": msg("{ep} sends a duplicate ACK ack={ack}.", ep=sk.ep.label, ack=sk.rcv_nxt),
        "window_update": msg("{ep} sends a window update, win={win}.", ep=sk.ep.label, win=win),
    }
    sim.xmit(
        sk.ep,
        ("ACK",),
        sk.snd_nxt,
        sk.rcv_nxt,
        0,
        win,
        kind,
        src,
        texts.get(kind, texts["ack"]),
    )
    ack_sent(sim, sk)


def send_syn(sim: Sim, sk: Sock, retrans: bool) -> None:
    if not retrans:
        sk.rtx = [OutSeg(sk.iss, 0, True, False, sim.now)]
        sk.snd_nxt = sk.iss + 1
    flags: tuple[str, ...] = ("SYN", "ACK") if sk.state == "SYN_RECV" else ("SYN",)
    ack = sk.rcv_nxt if sk.state == "SYN_RECV" else 0
    kind = "retransmit" if retrans else "syn"
    text = (
        msg("{ep} retransmits its SYN (attempt {n}).", ep=sk.ep.label, n=sk.retransmits)
        if retrans
        else msg("{ep} sends SYN seq={seq}.", ep=sk.ep.label, seq=sk.iss)
    )
    sim.xmit(
        sk.ep,
        flags,
        sk.iss,
        ack,
        0,
        sk.adv_window(),
        kind,
        "tcp_retransmit_skb" if retrans else "tcp_connect",
        text,
    )
    if sk.state == "SYN_RECV":
        ack_sent(sim, sk)
    if not sk.timer("retransmit").armed:
        sk.rtx_after = 0.0
        sk.arm("retransmit", sim.now + sk.rto)


def send_fin(sim: Sim, sk: Sock) -> None:
    """tcp_send_fin: queue a FIN after the data; it goes out when the window allows."""
    if sk.fin_queued:
        return
    sk.fin_queued = True
    sk.write_seq += 1
    push(sim, sk)


def push(sim: Sim, sk: Sock) -> None:
    """tcp_write_xmit: send new data (and a queued FIN) within cwnd and the peer's window;
    arm the persist timer when a zero window stops it."""
    if sk.state in ("SYN_SENT", "SYN_RECV", "CLOSE", "LISTEN"):
        return
    sent_any = False
    while True:
        # retransmit segments marked lost first (after an RTO)
        lost = next((o for o in sk.rtx if o.lost), None)
        inflight = sum(1 for o in sk.rtx if not o.lost)
        if inflight >= sk.cwnd:
            break
        if lost is not None:
            lost.lost = False
            retransmit(sim, sk, lost, "loss")
            continue
        nxt = _next_segment(sim, sk)
        if nxt is None:
            break
        _send_new(sim, sk, *nxt)
        sent_any = True
    if not sent_any and not sk.rtx and sk.has_unsent() and not sk.timer("probe0").armed:
        when = probe0_when(sk)
        sk.arm("probe0", sim.now + when)
        sim.note(
            msg(
                "The peer's window is {w}: the persist timer is armed for {t} ms.",
                w=sk.snd_wnd,
                t=round(when, 3),
            ),
            "tcp_send_probe0",
        )


def _next_segment(sim: Sim, sk: Sock) -> tuple[int, bool] | None:
    """The next new segment at SND.NXT, as (bytes, FIN), or None when the window, Nagle or
    silly-window avoidance holds it back (tcp_write_xmit's tcp_snd_wnd_test, tcp_nagle_test)."""
    mss = sim.p.mss
    start = sk.snd_nxt
    data_left = sk.data_end - start
    wnd_end = sk.snd_una + sk.snd_wnd
    fin_pending = sk.fin_queued and start < sk.write_seq
    if data_left <= 0 and not fin_pending:
        return None
    n = min(mss, max(data_left, 0), max(wnd_end - start, 0))
    fin = fin_pending and start + n == sk.data_end
    if n == 0 and not (fin and start + 1 <= wnd_end):
        return None
    if fin and n < data_left:
        fin = False
    if 0 < n < mss and n < data_left and sk.rtx:
        return None  # wait for more window rather than send a runt (SWS avoidance)
    if 0 < n < mss and not fin and any(0 < o.length < mss for o in sk.rtx):
        return None  # Nagle with Minshall's rule: one small segment in flight at a time
    return n, fin


def _send_new(sim: Sim, sk: Sock, n: int, fin: bool) -> None:
    """Queue ``n`` new bytes (and the FIN) for retransmission, send them, arm the RTO."""
    start = sk.snd_nxt
    o = OutSeg(start, n, False, fin, sim.now)
    sk.rtx.append(o)
    sk.snd_nxt = o.end
    flags = ("FIN", "ACK") if fin else ("ACK",)
    if fin and n:
        text = msg("{ep} sends {n} bytes with FIN, seq={seq}.", ep=sk.ep.label, n=n, seq=start)
    elif fin:
        text = msg("{ep} sends FIN seq={seq}.", ep=sk.ep.label, seq=start)
    else:
        text = msg("{ep} sends {n} bytes, seq={seq}.", ep=sk.ep.label, n=n, seq=start)
    sim.xmit(
        sk.ep,
        flags,
        start,
        sk.rcv_nxt,
        n,
        sk.adv_window(),
        "fin" if fin else "data",
        "tcp_send_fin" if fin and not n else "tcp_write_xmit",
        text,
    )
    ack_sent(sim, sk)
    if not sk.timer("retransmit").armed:
        sk.stop("probe0")
        sk.rtx_after = 0.0
        sk.arm("retransmit", sim.now + sk.rto)


def probe0_when(sk: Sock) -> float:
    """tcp_probe0_when: the persist timer's interval, backed off, at most TCP_RTO_MAX."""
    backoff: int = 2**sk.backoff
    return min(max(sk.rto, RTO_MIN) * backoff, RTO_MAX)


def xmit_probe(sim: Sim, sk: Sock, kind: str, src: str, text: Message) -> None:
    """A probe with SND.UNA - 1, which the peer can only answer with an ACK
    (tcp_xmit_probe_skb for the persist timer, tcp_write_wakeup for keepalive)."""
    sim.xmit(sk.ep, ("ACK",), sk.snd_una - 1, sk.rcv_nxt, 0, sk.adv_window(), kind, src, text)
    ack_sent(sim, sk)
    sk.probes_out += 1


def retransmit(sim: Sim, sk: Sock, o: OutSeg, why: str) -> None:
    o.retrans += 1
    if sk.retrans_stamp is None:
        sk.retrans_stamp = o.first_ms
    if o.syn:
        sk.syn_retrans += 1
        send_syn(sim, sk, retrans=True)
        return
    flags: tuple[str, ...] = ("FIN", "ACK") if o.fin else ("ACK",)
    sim.xmit(
        sk.ep,
        flags,
        o.seq,
        sk.rcv_nxt,
        o.length,
        sk.adv_window(),
        "retransmit",
        "tcp_retransmit_skb",
        msg("{ep} retransmits its FIN, seq={seq}.", ep=sk.ep.label, seq=o.seq)
        if o.fin and not o.length
        else msg(
            "{ep} retransmits seq={seq} ({n} bytes and FIN).",
            ep=sk.ep.label,
            seq=o.seq,
            n=o.length,
        )
        if o.fin
        else msg("{ep} retransmits seq={seq} ({n} bytes).", ep=sk.ep.label, seq=o.seq, n=o.length),
    )
    ack_sent(sim, sk)
