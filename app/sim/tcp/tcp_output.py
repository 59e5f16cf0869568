"""What leaves a socket, after ``net/ipv4/tcp_output.c``: the SYN (``tcp_connect``), ACKs
(``tcp_send_ack``, ``tcp_event_ack_sent``), new data and the FIN within cwnd and the peer's
window (``tcp_write_xmit``, ``tcp_send_fin``, Nagle and SWS avoidance), retransmissions
(``tcp_retransmit_skb``), probes (``tcp_xmit_probe_skb``, ``tcp_write_wakeup``) and the
active RST (``tcp_send_active_reset``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.i18n import Message, msg
from app.sim.core.tcp import TCP_INIT_CWND
from app.sim.tcp import sndbuf, tcp_sack, wire
from app.sim.tcp.sock import (
    ATO_MIN,
    PACING_UNSET,
    RTO_INIT,
    RTO_MAX,
    RTO_MIN,
    TIMEOUT_MIN,
    OutSeg,
    Seg,
    Sock,
)

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim


def transmit(
    sim: Sim,
    sk: Sock,
    flags: tuple[str, ...],
    seq: int,
    length: int,
    kind: str,
    src: str,
    text: Message,
) -> Seg:
    """__tcp_transmit_skb for a segment that is not a SYN: tcp_established_options and
    tcp_select_window (scaled by the window scale this side announced)."""
    options = wire.established_options(sim, sk)
    window, scaled = wire.select_window(sim, sk)
    return sim.xmit(sk.ep, flags, seq, sk.rcv_nxt, length, window, kind, src, text, options, scaled)


def connect_init(sim: Sim, sk: Sock, ts_recent: int | None) -> None:
    """tcp_connect_init: the MSS to announce, the initial window and the window scale
    (tcp_select_initial_window from the receive space; a socket whose SO_RCVBUF is set is
    clamped to it). ``ts_recent``: what tcp_twsk_unique copied from a timewait sock."""
    s = sim.p.sysctl
    sk.advmss = sim.p.mss
    sk.ts_recent = ts_recent or 0
    if sk.rcv_locked and sk.window_clamp == 0:
        sk.window_clamp = sk.full_space
    ts_hdr = wire.TCPOLEN_TSTAMP_ALIGNED if ts_recent is not None and s.tcp_timestamps else 0
    sk.rcv_wnd, sk.window_clamp, sk.rcv_wscale = wire.select_initial_window(
        sk.full_space,
        sk.advmss - ts_hdr,
        sk.window_clamp,
        bool(s.tcp_window_scaling),
        s.tcp_rmem[2],
    )
    sk.rcv_ssthresh = sk.rcv_wnd
    sk.rcv_mss = max(min(sk.advmss, sk.mss_cache, sk.rcv_wnd // 2, wire.TCP_MSS_DEFAULT), 88)


def sync_mss(sk: Sock) -> None:
    """tcp_sync_mss / tcp_current_mss: the payload of a full segment, the MTU's MSS within
    the peer's MSS option, less the timestamp option when it is used."""
    mss = min(sk.advmss, sk.mss_clamp) - (wire.TCPOLEN_TSTAMP_ALIGNED if sk.ts_ok else 0)
    sk.mss_cache = max(mss, 48)


def active_reset(sim: Sim, sk: Sock) -> None:
    """tcp_send_active_reset: RST+ACK at SND.NXT. It goes through __tcp_transmit_skb, which
    writes tcp_select_window() into every segment but a SYN: the RST advertises the window too."""
    transmit(
        sim,
        sk,
        ("RST", "ACK"),
        sk.snd_nxt,
        0,
        "rst",
        "tcp_send_active_reset",
        msg("{ep} sends RST+ACK seq={seq}.", ep=sk.ep.label, seq=sk.snd_nxt),
    )


def ack_sent(sim: Sim, sk: Sock) -> None:
    """tcp_event_ack_sent: the ACK went out, the delayed ACK is cancelled."""
    sk.ack_sched = False
    sk.ack_now = False
    sk.ack_pushed = 0  # inet_csk_clear_xmit_timer(ICSK_TIME_DACK) clears icsk_ack.pending
    sk.stop("delack")
    if sk.quick:
        sk.quick -= 1
        if sk.quick == 0:
            sk.ato = ATO_MIN


def slow_start_after_idle_check(sim: Sim, sk: Sock) -> None:
    """tcp_slow_start_after_idle_check (include/net/tcp.h line 1420), when an skb joins an
    empty write queue (tcp_skb_entail) or the peer's window changes with data waiting
    (tcp_ack_update_window): with tcp_slow_start_after_idle, nothing in flight and no data
    sent for more than an RTO, tcp_cwnd_restart (tcp_output.c line 142) sets ssthresh to
    tcp_current_ssthresh and halves cwnd once per RTO of idleness, down to no less than the
    initial window."""
    if not sim.p.sysctl.tcp_slow_start_after_idle or sk.rtx:
        return
    delta = sim.now - sk.lsndtime
    if delta <= sk.rto:
        return
    restart = min(TCP_INIT_CWND, sk.cwnd)
    cwnd = sk.cwnd
    # tcp_current_ssthresh (include/net/tcp.h line 1260): outside CWR/Recovery, at least 3/4 cwnd
    if sk.ca_state not in ("CWR", "Recovery"):
        sk.ssthresh = max(sk.ssthresh, (cwnd >> 1) + (cwnd >> 2))
    delta -= sk.rto
    while delta > 0 and cwnd > restart:
        cwnd >>= 1
        delta -= sk.rto
    if max(cwnd, restart) != sk.cwnd:
        sim.note(
            msg(
                "Idle for more than an RTO: the congestion window restarts at {n} segments.",
                n=max(cwnd, restart),
            ),
            "tcp_cwnd_restart",
        )
    sk.cwnd = max(cwnd, restart)


def data_sent(sim: Sim, sk: Sock) -> None:
    """tcp_event_data_sent (__tcp_transmit_skb, for a segment with payload, after
    tcp_event_ack_sent): lsndtime is now; a reply that leaves within ato of the last segment
    received (now - lrcvtime < ato) puts the socket in ping-pong (interactive) mode,
    inet_csk_enter_pingpong_mode; TCP_PINGPONG_THRESH is 1 in 6.4. With ato still 0 (no
    data received yet) this never happens."""
    sk.lsndtime = sim.now
    if not sk.pingpong and sim.now - sk.lrcvtime < sk.ato:
        sk.pingpong = True
        sim.note(
            msg(
                "{ep} replies within {t} ms of the last segment it received: ping-pong "
                "(interactive) mode; its ACKs now wait to ride on its replies.",
                ep=sk.ep.label,
                t=round(sk.ato, 3),
            ),
            "tcp_event_data_sent",
        )


def send_ack(sim: Sim, sk: Sock, kind: str, src: str) -> None:
    win = wire.raw_select_window(sim, sk)
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
    transmit(sim, sk, ("ACK",), sk.snd_nxt, 0, kind, src, texts.get(kind, texts["ack"]))
    ack_sent(sim, sk)


def send_syn(sim: Sim, sk: Sock, retrans: bool) -> None:
    if not retrans:
        sk.rtx = [OutSeg(sk.iss, 0, True, False, sim.now)]
        sk.snd_nxt = sk.iss + 1
        if sk.state == "SYN_SENT":  # tcp_connect, net/ipv4/tcp_output.c line 3858
            sk.retrans_stamp = int(sim.now)
    flags: tuple[str, ...] = ("SYN", "ACK") if sk.state == "SYN_RECV" else ("SYN",)
    if sk.state == "SYN_SENT" and sim.p.sysctl.tcp_ecn == 1:
        flags = ("SYN", "ECE", "CWR")  # tcp_ecn_send_syn: ask for ECN
    elif sk.state == "SYN_RECV" and sk.ecn_ok:
        flags = ("SYN", "ECE", "ACK")
    ack = sk.rcv_nxt if sk.state == "SYN_RECV" else 0
    kind = "retransmit" if retrans else "syn"
    text = (
        msg("{ep} retransmits its SYN (attempt {n}).", ep=sk.ep.label, n=sk.retransmits)
        if retrans
        else msg("{ep} sends SYN seq={seq}.", ep=sk.ep.label, seq=sk.iss)
    )
    # a SYN carries tcp_syn_options and its window unscaled: min(rcv_wnd, 65535)
    win = min(sk.rcv_wnd, wire.U16_MAX)
    sim.xmit(
        sk.ep,
        flags,
        sk.iss,
        ack,
        0,
        win,
        kind,
        "tcp_retransmit_skb" if retrans else "tcp_connect",
        text,
        wire.syn_options(sim, sk),
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


def push(sim: Sim, sk: Sock, nagle: bool = True, one: bool = False, force: bool = False) -> bool:
    """tcp_write_xmit (net/ipv4/tcp_output.c line 2601): send new data (and a queued FIN)
    within cwnd and the peer's window, one TSO packet at a time (:func:`_next_packet`);
    arm the persist timer when a zero window stops it; after new data, schedule a tail loss
    probe (tcp_schedule_loss_probe). ``one``: tcp_push_one's single packet (push_one);
    ``force``: TCP_NAGLE_PUSH (__tcp_push_pending_frames from tcp_sendmsg_locked);
    ``nagle=False``: tcp_send_loss_probe's one packet, with no loss probe scheduled. True
    if it sent anything."""
    if sk.state in ("SYN_SENT", "SYN_RECV", "CLOSE", "LISTEN"):
        return False
    sent_any = False
    head = sk.has_unsent()  # tcp_push_pending_frames runs tcp_write_xmit only with a send head
    inflight = inflight0 = tcp_sack.packets_in_flight(sk)
    while True:
        # tcp_cwnd_test (net/ipv4/tcp_output.c:2038): packets in flight (sacked and lost ones out, retransmissions in)
        if inflight >= sk.cwnd:
            break
        # tcp_cwnd_test (line 2038): at most half of cwnd per packet, so that at least two
        # GSO packets are in flight
        quota = min(max(sk.cwnd >> 1, 1), sk.cwnd - inflight)
        # tcp_nagle_test: TCP_NAGLE_PUSH (force) or TCP_NAGLE_OFF (TCP_NODELAY) skip Nagle
        pkt = _next_packet(sim, sk, nagle and not force and not sk.nodelay, quota)
        if not pkt:
            break
        head_skb, start = (sk.wq[0] if sk.wq else None), sk.snd_nxt
        segs = [_send_new(sim, sk, n, fin) for n, fin in pkt]
        sndbuf.sent(sk, head_skb, start, start + sum(n for n, _ in pkt))
        sndbuf.check_space(sim, sk)  # tcp_event_new_data_sent (line 85)
        # __tcp_transmit_skb (line 1281): every GSO packet (tcp_skb_pcount > 1) gets PSH; a
        # one-segment packet has it only if it ends an skb tcp_mark_push marked (a part cut
        # off the front of an skb loses it: tso_fragment, line 2149)
        if len(segs) > 1 or sk.rtx[-1].psh:
            segs[-1].psh = segs[-1].length > 0
        inflight += len(segs)
        sent_any = True
        if not nagle or one:
            break  # tcp_send_loss_probe and tcp_push_one send one packet
    if head:
        limited = inflight >= sk.cwnd  # tcp_packets_in_flight >= cwnd
        if sent_any or limited:
            cwnd_validate(sk, limited)
    if sent_any and sk.ca_state in ("CWR", "Recovery"):
        sk.prr_out += inflight - inflight0  # new data counts for PRR too
    if sent_any and nagle:
        schedule_loss_probe(sim, sk, advancing_rto=False)
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
    return sent_any


def cwnd_validate(sk: Sock, limited: bool) -> None:
    """tcp_cwnd_validate (net/ipv4/tcp_output.c line 1870), at the end of tcp_write_xmit:
    remember whether the window was cwnd-limited, else the most packets out, once per
    window of data (cwnd_usage_seq): once a window's data is acknowledged (snd_una past
    cwnd_usage_seq), or when cwnd is full, or when more is out than recorded.
    tcp_cwnd_application_limited (slow start after an idle RTO) is left out."""
    if (
        sk.snd_una >= sk.cwnd_usage_seq
        or limited
        or (not sk.is_cwnd_limited and len(sk.rtx) > sk.max_packets_out)
    ):
        sk.is_cwnd_limited = limited
        sk.max_packets_out = len(sk.rtx)
        sk.cwnd_usage_seq = sk.snd_nxt


def _skb_end(sk: Sock, seq: int) -> int:
    """The end of the unsent skb that holds ``seq`` (no segment crosses two skbs)."""
    return next((b.end for b in sk.wq if b.end > seq), sk.data_end)


def _next_segment(
    sim: Sim, sk: Sock, start: int | None = None, nagle: bool = True
) -> tuple[int, bool] | None:
    """The next new segment at ``start`` (SND.NXT), as (bytes, FIN), or None when the
    window, Nagle or silly-window avoidance holds it back (tcp_write_xmit's
    tcp_snd_wnd_test, tcp_nagle_test). A segment ends at its skb's end."""
    mss = sk.mss_cache
    start = sk.snd_nxt if start is None else start
    data_left = sk.data_end - start
    wnd_end = sk.snd_una + sk.snd_wnd
    fin_pending = sk.fin_queued and start < sk.write_seq
    if data_left <= 0 and not fin_pending:
        return None
    whole = min(mss, max(data_left, 0), max(_skb_end(sk, start) - start, 0))
    n = min(whole, max(wnd_end - start, 0))
    fin = fin_pending and start + n == sk.data_end
    if n == 0 and not (fin and start + 1 <= wnd_end):
        return None
    if fin and n < data_left:
        fin = False
    if 0 < n < whole and sk.rtx:
        return None  # wait for more window rather than send a runt (SWS avoidance)
    last = start + n >= sk.data_end  # tcp_write_xmit: TCP_NAGLE_PUSH for all but the last skb
    if nagle and last and 0 < n < mss and not fin and any(0 < o.length < mss for o in sk.rtx):
        return None  # Nagle with Minshall's rule: one small segment in flight at a time
    return n, fin


def _next_packet(sim: Sim, sk: Sock, nagle: bool, quota: int) -> list[tuple[int, bool]]:
    """The segments of the next packet tcp_write_xmit hands down: one skb, or its front
    cut off by tso_fragment at ``min(cwnd_quota, tcp_tso_segs)`` segments
    (tcp_mss_split_point, line 2004), within the peer's window. The model still sends MSS
    segments; this says which of them one TSO packet holds."""
    first = _next_segment(sim, sk, None, nagle)
    if first is None:
        return []
    segs = [first]
    mss = sk.mss_cache
    start = sk.snd_nxt + first[0]
    skb_end = _skb_end(sk, sk.snd_nxt)
    limit = min(quota, tso_segs(sk, mss, sim.p.sysctl.tcp_min_tso_segs))
    while not segs[-1][1] and segs[-1][0] == mss and len(segs) < limit and start < skb_end:
        nxt = _next_segment(sim, sk, start, nagle)
        if nxt is None:
            break
        segs.append(nxt)
        start += nxt[0]
    return segs


# sk_gso_max_size: the device's GSO_LEGACY_MAX_SIZE (65536, include/linux/netdevice.h line
# 2363) less MAX_TCP_HEADER + 1 (sk_dst_gso_max_size, net/core/sock.c line 2356; 320 with
# LL_MAX_HEADER 128, the x86_64 configs' value)
GSO_MAX_SIZE = 65536 - (320 + 1)
GSO_MAX_SEGS = 65535  # GSO_MAX_SEGS, the device's gso_max_segs
PACING_SHIFT = 10  # sk_pacing_shift (sock_init_data, net/core/sock.c line 3436)
TSO_RTT_LOG = 9  # net.ipv4.tcp_tso_rtt_log (tcp_sk_init, net/ipv4/tcp_ipv4.c line 3242)
MIN_TSO_SEGS = 2  # net.ipv4.tcp_min_tso_segs' default (line 3241; Sysctls.tcp_min_tso_segs)
PACING_SS_RATIO = 200  # net.ipv4.tcp_pacing_ss_ratio (line 3246)
PACING_CA_RATIO = 120  # net.ipv4.tcp_pacing_ca_ratio (line 3247)


def tso_segs(sk: Sock, mss: int, min_tso_segs: int = MIN_TSO_SEGS) -> int:
    """tcp_tso_segs (line 1990) and tcp_tso_autosize (line 1970): how many segments one
    TSO packet may hold: the pacing rate's share of a 2^-10 s slot, plus sk_gso_max_size >>
    (min_rtt / 512 us), at most sk_gso_max_size, at least tcp_min_tso_segs."""
    nbytes = sk.pacing_rate >> PACING_SHIFT
    r = sk.rtt.min_us >> TSO_RTT_LOG
    if r < 32:
        nbytes += GSO_MAX_SIZE >> r
    nbytes = min(nbytes, GSO_MAX_SIZE)
    return min(max(nbytes // mss, min_tso_segs), GSO_MAX_SEGS)


def update_pacing_rate(sk: Sock) -> None:
    """tcp_update_pacing_rate (net/ipv4/tcp_input.c line 896): mss * cwnd / srtt scaled by
    200 % (tcp_pacing_ss_ratio) while cwnd is below half of ssthresh, else 120 %
    (tcp_pacing_ca_ratio), with max(cwnd, packets_out); no srtt leaves it unscaled. Called by
    tcp_cong_control after an ACK while data was out, and when a passive open completes."""
    ratio = PACING_SS_RATIO if sk.cwnd < sk.ssthresh // 2 else PACING_CA_RATIO
    rate = sk.mss_cache * ((1_000_000 // 100) << 3) * ratio
    rate *= max(sk.cwnd, len(sk.rtx))
    if sk.rtt.srtt_us:
        rate //= sk.rtt.srtt_us
    sk.pacing_rate = min(rate, PACING_UNSET)


def head_fits_window(sk: Sock) -> bool:
    """tcp_ack_probe's test: the send head's end is within the peer's window (the head is
    at most one MSS of the unsent data, and the FIN if it is queued right after it)."""
    n = min(sk.mss_cache, max(sk.data_end - sk.snd_nxt, 0), _skb_end(sk, sk.snd_nxt) - sk.snd_nxt)
    fin = 1 if sk.fin_queued and sk.snd_nxt + n == sk.data_end else 0
    return sk.snd_nxt + n + fin <= sk.snd_una + sk.snd_wnd


def _send_new(sim: Sim, sk: Sock, n: int, fin: bool) -> Seg:
    """Queue ``n`` new bytes (and the FIN) for retransmission, send them, arm the RTO
    (tcp_event_new_data_sent: when nothing was in flight, or over a loss probe). The
    segment that ends an skb takes its PSH mark along (retransmissions carry it)."""
    start = sk.snd_nxt
    o = OutSeg(start, n, False, fin, sim.now)
    sk.tx_count += 1
    o.tx = sk.tx_count
    prior = bool(sk.rtx)
    sk.rtx.append(o)
    sk.snd_nxt = o.end
    while sk.wq and sk.wq[0].end <= start + n:
        o.psh = sk.wq.pop(0).psh and n > 0
    flags = ("FIN", "ACK") if fin else ("ACK",)
    if fin and n:
        text = msg("{ep} sends {n} bytes with FIN, seq={seq}.", ep=sk.ep.label, n=n, seq=start)
    elif fin:
        text = msg("{ep} sends FIN seq={seq}.", ep=sk.ep.label, seq=start)
    else:
        text = msg("{ep} sends {n} bytes, seq={seq}.", ep=sk.ep.label, n=n, seq=start)
    seg = transmit(
        sim,
        sk,
        flags,
        start,
        n,
        "fin" if fin else "data",
        "tcp_send_fin" if fin and not n else "tcp_write_xmit",
        text,
    )
    ack_sent(sim, sk)
    if n:
        data_sent(sim, sk)
    sk.stop("probe0")
    if not prior or sk.timer("loss_probe").armed:
        rearm_rto(sim, sk)
    return seg


def rearm_rto(sim: Sim, sk: Sock) -> None:
    """tcp_rearm_rto: the retransmission timer from the head's last transmission (or from
    now when a loss probe just went out); stopped when nothing is in flight."""
    sk.stop("loss_probe")
    sk.stop("reo")  # the RTO, loss probe and RACK timers share icsk_retransmit_timer
    if not sk.rtx:
        sk.stop("retransmit")
        return
    sk.rtx_after = 0.0
    sk.arm("retransmit", sim.now + sk.rto)


def rto_delta(sim: Sim, sk: Sock) -> float:
    """tcp_rto_delta_us: how far in the future the RTO of the head segment is."""
    return sk.rtx[0].sent_ms + sk.rto - sim.now if sk.rtx else sk.rto


def schedule_loss_probe(sim: Sim, sk: Sock, advancing_rto: bool) -> bool:
    """tcp_schedule_loss_probe: with tcp_early_retrans 3 or 4, SACK agreed, data in flight
    and the state Open or CWR (not Disorder: something is SACKed or lost), arm the loss-probe timer (it replaces the RTO timer) for
    2 x srtt, plus TCP_RTO_MIN when one segment is out (a delayed ACK) or else 2 ms; 1 s
    with no RTT sample; never later than the RTO."""
    er = sim.p.sysctl.tcp_early_retrans
    if er not in (3, 4) or not sk.rtx or not sk.sack_ok or sk.ca_state not in ("Open", "CWR"):
        return False
    srtt8 = sk.rtt.srtt_us
    if srtt8:
        timeout = float(-(-(srtt8 >> 2) // 1000))  # usecs_to_jiffies rounds up
        timeout += RTO_MIN if len(sk.rtx) == 1 else TIMEOUT_MIN
    else:
        timeout = RTO_INIT
    delta = sk.rto if advancing_rto else rto_delta(sim, sk)
    if delta > 0:
        timeout = min(timeout, float(-(-delta // 1)))
    sk.stop("retransmit")
    sk.arm("loss_probe", sim.now + timeout)
    return True


def set_xmit_timer(sim: Sim, sk: Sock) -> None:
    """tcp_set_xmit_timer: after an ACK that acknowledged data, the loss probe if it may be
    scheduled, else the RTO."""
    if not schedule_loss_probe(sim, sk, advancing_rto=True):
        rearm_rto(sim, sk)


def send_loss_probe(sim: Sim, sk: Sock) -> None:
    """tcp_send_loss_probe: at most one probe outstanding; new data if the window allows,
    else the last segment in flight again. Then the RTO is re-armed (from now if a probe
    went out)."""
    if sk.tlp_high_seq:
        sk.stop("loss_probe")
        sk.arm("retransmit", sim.now + max(rto_delta(sim, sk), 1.0))
        return
    sk.tlp_retrans = False
    sent = False
    if sk.has_unsent() and head_fits_window(sk):
        sent = push(sim, sk, nagle=False)
        if not sent:
            sk.stop("loss_probe")
            sk.arm("retransmit", sim.now + max(rto_delta(sim, sk), 1.0))
            return
    else:
        tail = sk.rtx[-1]
        retransmit(sim, sk, tail, "tlp")
        sk.tlp_retrans = True
    sk.tlp_high_seq = sk.snd_nxt
    rearm_rto(sim, sk)


def process_tlp_ack(sk: Sock, ack: int, una_advanced: bool, dupack: bool) -> None:
    """tcp_process_tlp_ack: the probe's episode ends once an ACK covers it (or, for a
    retransmitted probe, goes past it, or is a pure duplicate: no loss)."""
    if not sk.tlp_high_seq or ack < sk.tlp_high_seq:
        return
    if not sk.tlp_retrans or ack > sk.tlp_high_seq or (not una_advanced and dupack):
        sk.tlp_high_seq = 0


def probe0_when(sk: Sock) -> float:
    """tcp_probe0_when: the persist timer's interval, backed off, at most TCP_RTO_MAX."""
    backoff: int = 2**sk.backoff
    return min(max(sk.rto, RTO_MIN) * backoff, RTO_MAX)


def xmit_probe(sim: Sim, sk: Sock, kind: str, src: str, text: Message) -> None:
    """A probe with SND.UNA - 1, which the peer can only answer with an ACK
    (tcp_xmit_probe_skb for the persist timer, tcp_write_wakeup for keepalive)."""
    transmit(sim, sk, ("ACK",), sk.snd_una - 1, 0, kind, src, text)
    ack_sent(sim, sk)
    sk.probes_out += 1


def xmit_retransmit_queue(sim: Sim, sk: Sock) -> None:
    """tcp_xmit_retransmit_queue (net/ipv4/tcp_output.c:3291): from the head, retransmit the segments marked lost that are
    neither SACKed nor already retransmitted, while cwnd leaves room and fewer
    retransmissions than losses are out; each counts for PRR (prr_out) during a reduction.
    Retransmitting the head re-arms the RTO (unless the RACK timer is pending)."""
    if not sk.rtx:
        return
    head = sk.rtx[0]
    rearm = False
    inflight = tcp_sack.packets_in_flight(sk)
    retrans, lost = tcp_sack.retrans_out(sk), tcp_sack.lost_out(sk)
    for o in list(sk.rtx):
        if sk.cwnd - inflight <= 0 or retrans >= lost:
            break
        if not o.lost or o.sacked or o.rexmit:
            continue
        retransmit(sim, sk, o, "loss")
        inflight += 1
        retrans += 1
        if sk.ca_state in ("CWR", "Recovery"):
            sk.prr_out += 1
        if o is head and not sk.timer("reo").armed:
            rearm = True
    if rearm:
        sk.stop("loss_probe")
        sk.rtx_after = 0.0
        sk.arm("retransmit", sim.now + sk.rto)


def retransmit(sim: Sim, sk: Sock, o: OutSeg, why: str) -> None:
    """tcp_retransmit_skb (net/ipv4/tcp_output.c:3261): the segment goes again and is a retransmission in flight
    (TCPCB_SACKED_RETRANS); a loss probe (tcp_send_loss_probe) only marks it ever
    retransmitted."""
    o.retrans += 1
    o.sent_ms = sim.now
    sk.tx_count += 1
    o.tx = sk.tx_count
    o.rexmit = why != "tlp"
    if why != "tlp":  # tcp_retransmit_skb's (a loss probe is __tcp_retransmit_skb alone)
        if sk.retrans_stamp is None:  # the skb's stamp after sending: now, in ms
            sk.retrans_stamp = int(sim.now)
        sk.undo_retrans = max(sk.undo_retrans, 0) + 1
    if o.syn:
        sk.syn_retrans += 1
        send_syn(sim, sk, retrans=True)
        return
    if o.length:  # tcp_fragment: the segment goes as an skb of its own (app.sim.tcp.sndbuf)
        sndbuf.split(sk, o.seq)
        sndbuf.split(sk, o.seq + o.length)
    flags: tuple[str, ...] = ("FIN", "ACK") if o.fin else ("ACK",)
    src = "tcp_send_loss_probe" if why == "tlp" else "tcp_retransmit_skb"
    seg = transmit(
        sim,
        sk,
        flags,
        o.seq,
        o.length,
        "retransmit",
        src,
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
    seg.psh = o.psh  # the skb's own flags: tcp_fragment left PSH on the part that ends it
    ack_sent(sim, sk)
    if o.length:
        data_sent(sim, sk)
