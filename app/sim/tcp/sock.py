"""The kernel objects of one TCP connection, and the segments between them.

Each endpoint owns the objects Linux would: a listener (``TCP_LISTEN``, ``struct
inet_connection_sock`` with its accept and SYN queues, include/net/inet_connection_sock.h),
request socks (``TCP_NEW_SYN_RECV``, ``struct request_sock``, include/net/request_sock.h), full
sockets (``struct tcp_sock``, include/linux/tcp.h), and a timewait mini-socket (``struct
inet_timewait_sock``, include/net/inet_timewait_sock.h) whose ``tw_substate`` is
``TCP_FIN_WAIT2`` or ``TCP_TIME_WAIT``. There is one 4-tuple (client port to server port), so
each endpoint's established-hash slot (``ehash``) holds at most one object. Constants are
include/net/tcp.h's, in ms (CONFIG_HZ=1000).

Segments carry the options and windows 6.4 writes (app.sim.tcp.wire: MSS, SACK-permitted,
timestamps, window scale, SACK and D-SACK blocks; ``tcp_select_window``).

Simplifications (each keeps the state machine faithful, not every byte): sequence numbers are
not wrapped mod 2**32; no PAWS rejection (timestamps are echoed and give RTT samples, but an
old TSval is not dropped); the sender keeps a SACK scoreboard and detects loss with RACK (or
NewReno's duplicate ACKs without SACK), the tail loss probe and the RTO, and recovers with
PRR and CUBIC's ssthresh (app.sim.tcp.tcp_sack, tcp_recovery, tcp_input_loss: no undo, no
F-RTO); cwnd grows only while it limits the sender (tcp_is_cwnd_limited) and restarts after
an idle RTO (tcp_cwnd_restart); data leaves in MSS segments, grouped into the TSO packets 6.4
would send only to decide PSH (see app.sim.tcp.tcp_output.push); the send buffer counts each
skb's truesize against sk_sndbuf, and a write blocks on it (app.sim.tcp.sndbuf); the receive
buffer is not autotuned (see app.sim.tcp.wire).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.core.events import Timer
from app.sim.core.i18n import Message, msg
from app.sim.core.tcp import (
    TCP_DELACK_MAX_S,
    TCP_DELACK_MIN_S,
    TCP_INFINITE_SSTHRESH,
    TCP_INIT_CWND,
    TCP_RTO_MAX_US,
    TCP_RTO_MIN_US,
    TCP_TIMEOUT_INIT_S,
    TCP_TIMEWAIT_LEN_S,
    RttEstimator,
)
from app.sim.tcp.options import TcpOption
from app.sim.tcp.params import Call, TcpParams
from app.sim.tcp.state import SegmentState, TimerState

if TYPE_CHECKING:
    from app.sim.tcp.driver import Sim

# The endpoints' roles as the narration names them: catalog words, so a Chinese sentence says
# 客户端/服务端 (the data keys stay the plain ``client``/``server``).
ROLE_WORDS: dict[str, Message] = {"client": msg("client"), "server": msg("server")}

# --- constants (include/net/tcp.h, CONFIG_HZ=1000), in ms --------------------------------------
# (the values shared with the other TCP models are app.sim.core.tcp's, converted)
RTO_INIT = TCP_TIMEOUT_INIT_S * 1000  # TCP_TIMEOUT_INIT: 1000 ms
RTO_MIN = TCP_RTO_MIN_US / 1000  # TCP_RTO_MIN: 200 ms
RTO_MAX = TCP_RTO_MAX_US / 1000  # TCP_RTO_MAX: 120 s
RTO_FALLBACK = 3000.0  # TCP_TIMEOUT_FALLBACK
TIMEOUT_MIN = 2.0  # TCP_TIMEOUT_MIN: 2 jiffies
TIMEWAIT_LEN = TCP_TIMEWAIT_LEN_S * 1000  # TCP_TIMEWAIT_LEN: 60 s
ATO_MIN = TCP_DELACK_MIN_S * 1000  # TCP_ATO_MIN = TCP_DELACK_MIN: 40 ms
DELACK_MAX = TCP_DELACK_MAX_S * 1000  # TCP_DELACK_MAX: 200 ms
MAX_QUICKACKS = 16  # TCP_MAX_QUICKACKS
INVALID_RATELIMIT = 500.0  # net.ipv4.tcp_invalid_ratelimit
TS_OFFSET = {"client": 1_000_000, "server": 2_000_000}  # see app.sim.tcp.wire
TW_ISN_GAP = 65535 + 2  # tcp_timewait_state_process: isn = tw_snd_nxt + 65535 + 2

RFC_NAME = {
    "CLOSE": "CLOSED",
    "LISTEN": "LISTEN",
    "SYN_SENT": "SYN_SENT",
    "SYN_RECV": "SYN_RECEIVED",
    "NEW_SYN_RECV": "SYN_RECEIVED",
    "ESTABLISHED": "ESTABLISHED",
    "FIN_WAIT1": "FIN_WAIT_1",
    "FIN_WAIT2": "FIN_WAIT_2",
    "CLOSE_WAIT": "CLOSE_WAIT",
    "CLOSING": "CLOSING",
    "LAST_ACK": "LAST_ACK",
    "TIME_WAIT": "TIME_WAIT",
}
RFC_STATES = frozenset(RFC_NAME.values())
LINUX_STATES = frozenset("TCP_" + s for s in RFC_NAME)

EV_ARRIVE, EV_TIMER, EV_CALL = 0, 1, 2


ACK_PUSHED = 1  # ICSK_ACK_PUSHED (include/net/inet_connection_sock.h)
ACK_PUSHED2 = 2  # ICSK_ACK_PUSHED2
TCP_HEADER = 20  # sizeof(struct tcphdr)
PACING_UNSET = 2**64 - 1  # sk_pacing_rate = ~0UL (sock_init_data, net/core/sock.c line 3435)


class Seg:
    """A segment on the wire."""

    __slots__ = (
        "ack",
        "arrive_ms",
        "dst",
        "flags",
        "id",
        "kind",
        "length",
        "lost",
        "nth",
        "options",
        "psh",
        "scaled",
        "sent_ms",
        "seq",
        "src",
        "window",
    )

    def __init__(
        self,
        *,
        id: int,
        src: str,
        dst: str,
        flags: tuple[str, ...],
        seq: int,
        ack: int,
        length: int,
        window: int,
        kind: str,
        sent_ms: float,
        options: tuple[TcpOption, ...] = (),
        scaled: int | None = None,
    ) -> None:
        self.id = id
        self.src = src
        self.dst = dst
        self.flags = flags
        self.seq = seq
        self.ack = ack
        self.length = length
        self.window = window  # the 16-bit header field
        self.scaled = window if scaled is None else scaled  # the bytes it means
        self.options = options
        self.kind = kind
        self.sent_ms = sent_ms
        self.nth = 0
        self.lost = False
        self.arrive_ms: float | None = None
        # PSH: the sender marks the segment that ends what was written so far (tcp_push,
        # tcp_mark_push); kept apart from ``flags`` (the pictures draw the flags)
        self.psh = False

    @property
    def syn(self) -> bool:
        return "SYN" in self.flags

    @property
    def fin(self) -> bool:
        return "FIN" in self.flags

    @property
    def rst(self) -> bool:
        return "RST" in self.flags

    @property
    def has_ack(self) -> bool:
        return "ACK" in self.flags

    def opt(self, kind: str) -> TcpOption | None:
        return next((o for o in self.options if o.kind == kind), None)

    @property
    def tsval(self) -> int | None:
        o = self.opt("TS")
        return o.values[0] if o is not None else None

    @property
    def tsecr(self) -> int | None:
        o = self.opt("TS")
        return o.values[1] if o is not None else None

    @property
    def end_seq(self) -> int:
        return self.seq + self.length + (1 if self.syn else 0) + (1 if self.fin else 0)

    def as_state(self) -> SegmentState:
        return {
            "id": self.id,
            "src": self.src,
            "dst": self.dst,
            "nth": self.nth,
            "flags": list(self.flags),
            "seq": self.seq,
            "ack": self.ack if self.has_ack else 0,
            "len": self.length,
            "window": self.window,
            "window_scaled": self.scaled,
            "options": [o.text() for o in self.options],
            "lost": self.lost,
            "sent_ms": self.sent_ms,
            "arrive_ms": self.arrive_ms,
            "kind": self.kind,
        }


class SockRtt(RttEstimator):
    """The socket's RTT estimator, which also keeps the smallest sample: ``tcp_min_rtt``
    (tcp_update_rtt_min, net/ipv4/tcp_input.c line 3071; a windowed minimum in Linux, kept
    over the whole connection here). U32_MAX (``~0U``) until the first sample."""

    __slots__ = ("min_us",)

    def __init__(self) -> None:
        super().__init__()
        self.min_us = 0xFFFFFFFF

    def sample(self, m: int, snd_una: int, snd_nxt: int) -> None:
        self.min_us = min(self.min_us, m)
        super().sample(m, snd_una, snd_nxt)


class Skb:
    """One unsent skb of the write queue: where it ends and whether ``tcp_mark_push`` has
    marked it PSH. It starts where the previous one ends (the first at SND.NXT). Linux never
    sends a segment across two skbs; when it sends part of one (tso_fragment, tcp_fragment),
    the part left keeps the PSH mark and the part sent loses it. ``truesize``: skb->truesize,
    the memory it charges to sk_wmem_queued (app.sim.tcp.sndbuf)."""

    __slots__ = ("end", "psh", "truesize")

    def __init__(self, end: int, psh: bool = False, truesize: int = 0) -> None:
        self.end = end
        self.psh = psh
        self.truesize = truesize


class TxSkb:
    """One skb of the retransmission queue as the send buffer counts it: the bytes it holds
    (``seq`` to ``end``) and its truesize (app.sim.tcp.sndbuf). The model's segments
    (:class:`OutSeg`) stay MSS-sized; these only keep sk_wmem_queued."""

    __slots__ = ("end", "seq", "truesize")

    def __init__(self, seq: int, end: int, truesize: int) -> None:
        self.seq = seq
        self.end = end
        self.truesize = truesize


class OutSeg:
    """One transmitted, not yet acknowledged segment in the retransmission queue."""

    __slots__ = (
        "end",
        "fin",
        "first_ms",
        "length",
        "lost",
        "psh",
        "retrans",
        "rexmit",
        "sacked",
        "sent_ms",
        "seq",
        "syn",
        "tx",
    )

    def __init__(self, seq: int, length: int, syn: bool, fin: bool, now: float) -> None:
        self.seq = seq
        self.length = length
        self.syn = syn
        self.fin = fin
        self.end = seq + length + (1 if syn else 0) + (1 if fin else 0)
        self.first_ms = now
        self.sent_ms = now  # the last transmission (tcp_skb_timestamp_us)
        self.retrans = 0  # transmissions after the first (TCPCB_EVER_RETRANS when > 0)
        self.lost = False  # TCPCB_LOST
        self.sacked = False  # TCPCB_SACKED_ACKED
        self.rexmit = False  # TCPCB_SACKED_RETRANS: a retransmission in flight
        self.psh = False  # it ended a PSH-marked skb: a retransmission carries PSH again
        # the order of its last transmission among the socket's (Sock.tx_count): RACK's
        # tie-break between transmissions at one instant of the model's clock
        self.tx = 0


# SK_WMEM_MAX (include/net/sock.h line 2889), net.core.wmem_max's default: SO_SNDBUF's cap
WMEM_MAX = 212992
SKB_STRUCT = 256  # SKB_DATA_ALIGN(sizeof(struct sk_buff)): 232 bytes on x86_64, 64-aligned
# TCP_SKB_MIN_TRUESIZE * 2 (include/net/sock.h lines 2540-2542)
SOCK_MIN_SNDBUF = 2 * (2048 + SKB_STRUCT)


def so_sndbuf(val: int) -> int:
    """sk_setsockopt's SO_SNDBUF (net/core/sock.c line 1141): at most net.core.wmem_max,
    doubled (for the skbs' overhead), at least SOCK_MIN_SNDBUF."""
    return max(min(val, WMEM_MAX) * 2, SOCK_MIN_SNDBUF)


def receive_space(p: TcpParams) -> tuple[bool, int]:
    """(SOCK_RCVBUF_LOCK, tcp_full_space): SO_RCVBUF (the model's ``rcvbuf``, the space the
    window may offer) locks the buffer; else sk_rcvbuf is tcp_rmem[1] and the space
    tcp_win_from_space of it (half, with tcp_adv_win_scale 1)."""
    if p.rcvbuf is not None:
        return True, p.rcvbuf
    rmem1 = p.sysctl.tcp_rmem[1]
    return False, rmem1 - (rmem1 >> 1)


class Obj:
    """A kernel object with timers: listener, request sock, socket or timewait sock."""

    kind = "sock"

    def __init__(self, sim: Sim, ep: Endpoint, state: str) -> None:
        self.sim = sim
        self.ep = ep
        self.state = state
        self.timers: dict[str, Timer] = {}
        self.oow_last: float | None = None  # last_oow_ack_time
        sim.obj_ids += 1
        self.id = sim.obj_ids

    def timer(self, name: str) -> Timer:
        t = self.timers.get(name)
        if t is None:
            t = Timer(self.sim.q, EV_TIMER, (self, name))
            self.timers[name] = t
        return t

    def arm(self, name: str, at: float) -> None:
        self.timer(name).arm(at)

    def stop(self, name: str) -> None:
        t = self.timers.get(name)
        if t is not None:
            t.stop()

    def stop_all(self) -> None:
        for t in self.timers.values():
            t.stop()

    def armed(self) -> list[TimerState]:
        return [
            {"name": n, "deadline_ms": round(t.deadline, 3)}
            for n, t in sorted(self.timers.items())
            if t.deadline is not None
        ]

    def oow_limited(self, now: float) -> bool:
        """__tcp_oow_rate_limited: at most one out-of-window reply per tcp_invalid_ratelimit."""
        if self.oow_last is not None and 0 <= now - self.oow_last < INVALID_RATELIMIT:
            return True
        self.oow_last = now
        return False


class Listener(Obj):
    kind = "listener"

    def __init__(self, sim: Sim, ep: Endpoint, backlog: int, queued: int, half_open: int):
        super().__init__(sim, ep, "LISTEN")
        self.backlog = backlog  # sk_max_ack_backlog
        self.accept_q: list[Sock] = []
        self.phantom_accept = queued  # other clients' connections waiting in the accept queue
        self.reqs: list[Req] = []
        self.phantom_syn = half_open  # half-open requests from a SYN flood
        self.cookies: dict[int, Seg] = {}  # cookie ISN -> the SYN it answered
        self.held = True
        self.rcv_locked, self.full_space = receive_space(sim.p)

    @property
    def ack_backlog(self) -> int:
        return len(self.accept_q) + self.phantom_accept

    @property
    def qlen(self) -> int:
        return len(self.reqs) + self.phantom_syn

    def acceptq_full(self) -> bool:
        return self.ack_backlog > self.backlog  # sk_acceptq_is_full: strictly greater

    def reqsk_queue_full(self) -> bool:
        return self.qlen >= self.backlog  # inet_csk_reqsk_queue_is_full


class Req(Obj):
    kind = "request_sock"

    def __init__(self, sim: Sim, ep: Endpoint, lsn: Listener, iss: int, irs: int, wnd: int):
        super().__init__(sim, ep, "NEW_SYN_RECV")
        self.listener = lsn
        self.iss = iss
        self.irs = irs
        self.rcv_nxt = irs + 1
        self.snd_wnd = wnd
        self.num_timeout = 0
        self.num_retrans = 0  # SYN-ACK retransmissions (timer and retransmitted SYNs)
        self.snt_synack = sim.now  # the first SYN-ACK's send time
        self.acked = False
        self.born_ms = sim.now
        # what tcp_conn_request / tcp_openreq_init_rwin negotiated from the SYN
        self.advmss = sim.p.mss
        self.mss_clamp = 536
        self.ts_ok = False
        self.sack_ok = False
        self.wscale_ok = False
        self.snd_wscale = 0
        self.rcv_wscale = 0
        self.ts_recent = 0
        self.ts_off = 0
        self.ecn_ok = False
        self.rcv_wnd = 0  # rsk_rcv_wnd, bytes
        self.window_clamp = 0  # rsk_window_clamp


class TimeWait(Obj):
    kind = "timewait_sock"

    def __init__(self, sim: Sim, ep: Endpoint, sk: Sock, substate: str) -> None:
        super().__init__(sim, ep, "TIME_WAIT")
        self.substate = substate
        self.snd_nxt = sk.snd_nxt
        self.rcv_nxt = sk.rcv_nxt
        self.rcv_wnd = sk.receive_window()  # tw_rcv_wnd = tcp_receive_window()
        self.rcv_wscale = sk.rcv_wscale
        self.ts_ok = sk.ts_ok
        self.ts_recent = sk.ts_recent
        self.ts_off = sk.ts_off
        self.iss = sk.iss
        self.irs = sk.irs


class Sock(Obj):
    kind = "sock"
    # Loss recovery's undo state, empty until an RTO (instances assign their own)
    # tp->retrans_stamp (include/linux/tcp.h:369), one field for undo (tcp_packet_delayed)
    # and for retransmits_timed_out's start: the TS clock (ms, without the offset) of the SYN
    # (tcp_connect, net/ipv4/tcp_output.c:3858) or of the first retransmission, read from the
    # skb after __tcp_transmit_skb moved its stamp to now (tcp_retransmit_skb,
    # net/ipv4/tcp_output.c:3277). Not set by a loss probe; cleared (None for 0) only when the
    # SYN is acknowledged (tcp_clean_rtx_queue, net/ipv4/tcp_input.c:3320), SYN_RECV becomes
    # ESTABLISHED (6559), or tcp_fastretrans_alert runs in Open (2982), tcp_try_to_open
    # (2702) or tcp_is_non_sack_preventing_reopen (2526) find nothing retransmitted.
    retrans_stamp: int | None = None
    # the undo state of a loss episode (tcp_init_undo, net/ipv4/tcp_input.c:2089):
    # undo_marker (snd_una then; None for 0), undo_retrans (retransmissions not yet shown
    # needless by a D-SACK; -1 for none), prior_ssthresh (tcp_current_ssthresh then), and
    # tp->frto (F-RTO running in Loss, tcp_enter_loss)
    undo_marker: int | None = None
    undo_retrans: int = -1
    prior_ssthresh: int = 0
    frto: bool = False
    rcv_tsecr: int = 0  # tp->rx_opt.rcv_tsecr of the ACK being processed, less ts_off

    def __init__(self, sim: Sim, ep: Endpoint) -> None:
        super().__init__(sim, ep, "CLOSE")
        self.held = True  # the script holds a descriptor
        self.dead = False  # SOCK_DEAD: orphaned by close()
        self.ever_connected = False
        self.iss = 0
        self.irs = 0
        self.snd_una = 0
        self.snd_nxt = 0
        self.write_seq = 0  # next sequence number to queue (data end, + 1 once a FIN is queued)
        self.fin_queued = False
        self.rcv_nxt = 0
        self.rcv_wup = 0
        self.rcv_wnd = 0  # the window last advertised, in bytes
        self.max_window = 0  # the largest window the peer offered (see snd_wnd)
        self.snd_wnd = 0  # the peer's window, in bytes (scaled)
        # the write queue's unsent skbs (tcp_sendmsg_locked) and tp->pushed_seq (tcp_mark_push)
        self.wq: list[Skb] = []
        self.pushed_seq = 0
        # the send buffer (app.sim.tcp.sndbuf): the retransmission queue's skbs, sk_sndbuf,
        # SOCK_SNDBUF_LOCK, sk_wmem_queued, SOCK_NOSPACE, and a writer woken by
        # sk_stream_write_space
        self.txq: list[TxSkb] = []
        wmem = sim.p.sysctl.tcp_wmem
        self.sndbuf_locked = sim.p.sndbuf is not None
        self.sndbuf = wmem[1] if sim.p.sndbuf is None else so_sndbuf(sim.p.sndbuf)
        self.wmem_queued = 0
        self.nospace = False
        self.write_wake = False
        self.gso_segs = 0  # tp->gso_segs (tcp_xmit_size_goal)
        self.pacing_rate = PACING_UNSET  # sk_pacing_rate, bytes per second
        # tcp_cwnd_validate's record of how much of cwnd the sender used
        self.is_cwnd_limited = False
        self.lsndtime = 0.0  # tp->lsndtime: the last data sent (tcp_event_data_sent)
        self.max_packets_out = 0
        self.cwnd_usage_seq = 0
        self.snd_wl1 = 0
        self.recv_q = 0
        self.ooo: list[tuple[int, int, bool]] = []
        self.rtx: list[OutSeg] = []
        self.rcv_shut = False
        self.snd_shut = False
        self.sock_done = False
        self.syn_retrans = 0  # retransmissions of our SYN (or SYN-ACK) in the handshake  # SOCK_DONE: the peer's FIN arrived (recv returns 0 first)
        self.err: str | None = None
        self.rtt = SockRtt()
        self.rto = RTO_INIT
        self.rtx_after = 0.0  # the retransmit timer's interval when it is not the RTO (else 0)
        self.backoff = 0
        self.retransmits = 0
        self.cwnd = TCP_INIT_CWND
        # congestion control and loss recovery (tcp_sock's fields; app.sim.tcp.tcp_sack,
        # tcp_recovery, tcp_input_loss)
        self.ssthresh = TCP_INFINITE_SSTHRESH
        self.snd_cwnd_cnt = 0
        self.prior_cwnd = 0
        self.prr_delivered = 0
        self.prr_out = 0
        self.cubic_w_max = 0  # CUBIC's last_max_cwnd
        self.reordering = 3  # net.ipv4.tcp_reordering
        self.reord_seen = 0
        self.reno_sacked = 0  # sacked_out without SACK: duplicate ACKs counted
        self.reno_delivered = 0  # tp->delivered's share from those duplicate ACKs
        self.lost_count = 0  # tp->lost: segments ever marked lost
        self.rack_mstamp_us = 0
        self.rack_tx = 0  # the reference's transmission order (OutSeg.tx), for ties
        self.tx_count = 0  # transmissions of data so far (OutSeg.tx)
        self.rack_rtt_us = 0
        self.rack_advanced = False
        self.reo_wnd_steps = 1
        self.quick = 0
        self.ato = 0.0
        self.pingpong = False
        # icsk_ack.pending's ICSK_ACK_PUSHED (1) and ICSK_ACK_PUSHED2 (2), set by
        # tcp_measure_rcv_mss for a small segment, cleared when an ACK goes out
        self.ack_pushed = 0
        self.last_seg_size = 0  # icsk_ack.last_seg_size
        self.ack_sched = False
        self.ack_now = False
        self.lrcvtime = 0.0
        self.rcv_tstamp = 0.0
        self.probes_out = 0
        self.keepalive = False
        self.linger0 = False
        self.nodelay = False  # TCP_NODELAY: tp->nonagle's TCP_NAGLE_OFF (no Nagle test)
        self.nonblock = False
        self.listener: Listener | None = None
        self.init_options(sim, ep)

    def init_options(self, sim: Sim, ep: Endpoint) -> None:
        """The receive space and the option state of a fresh socket (a child's is copied from
        its request sock by make_child)."""
        p = sim.p
        self.rcv_locked, self.full_space = receive_space(p)
        self.advmss = p.mss
        self.mss_clamp = 536  # TCP_MSS_DEFAULT until the peer's MSS option
        self.mss_cache = 536
        self.rcv_mss = 536
        self.ts_ok = False
        self.sack_ok = False
        self.wscale_ok = False
        self.snd_wscale = 0
        self.rcv_wscale = 0
        self.ts_recent = 0
        self.ts_off = TS_OFFSET[ep.name]
        self.window_clamp = 0
        self.rcv_ssthresh = 0
        self.sacks: list[tuple[int, int]] = []  # selective_acks, most recent first
        self.dsack: tuple[int, int] | None = None  # duplicate_sack[0] while rx_opt.dsack
        self.ecn_ok = False
        self.ca_state = "Open"  # icsk_ca_state: Open, Disorder, Recovery or Loss (RTO)
        self.high_seq = 0  # where Recovery or Loss ends
        self.tlp_high_seq = 0
        self.tlp_retrans = False

    # --- derived -------------------------------------------------------------------------
    @property
    def snd_wnd(self) -> int:
        return self._snd_wnd

    @snd_wnd.setter
    def snd_wnd(self, wnd: int) -> None:
        """Every window the socket takes also raises tp->max_window (tcp_ack_update_window,
        net/ipv4/tcp_input.c line 3552; tcp_create_openreq_child and
        tcp_rcv_synsent_state_process for the SYN's)."""
        self._snd_wnd = wnd
        if wnd > self.max_window:
            self.max_window = wnd

    def receive_window(self) -> int:
        """tcp_receive_window: what is left of the last advertised window."""
        return max(0, self.rcv_wup + self.rcv_wnd - self.rcv_nxt)

    @property
    def packets_out(self) -> int:
        return len(self.rtx)

    @property
    def data_end(self) -> int:
        return self.write_seq - (1 if self.fin_queued else 0)

    def unsent(self) -> int:
        return max(0, self.data_end - max(self.snd_nxt, self.iss + 1))

    def has_unsent(self) -> bool:
        """Data or a queued FIN not sent yet."""
        return self.unsent() > 0 or (self.fin_queued and self.snd_nxt < self.write_seq)


class Endpoint:
    def __init__(self, sim: Sim, name: str, peer: str, iss: int) -> None:
        self.sim = sim
        self.name = name
        self.label = ROLE_WORDS[name]  # the narration's word for this endpoint
        self.peer = peer
        self.iss_base = iss
        self.iss_count = 0
        self.listener: Listener | None = None
        self.ehash: Sock | Req | TimeWait | None = None
        self.fd: Sock | None = None  # the connection socket the script holds
        self.waiting: list[Call] = []
        self.blocked: Call | None = None
        # a send() that blocked: its size and the bytes it has still to copy
        self.send_total = 0
        self.send_left = 0
        self.sent = 0  # segments sent so far (for nth)

    def next_iss(self) -> int:
        iss = self.iss_base + self.iss_count * 1_000_000
        self.iss_count += 1
        return iss

    def objects(self) -> list[Obj]:
        objs: list[Obj] = []
        if self.listener is not None:
            objs.append(self.listener)
            objs.extend(self.listener.reqs)
        if self.ehash is not None and self.ehash not in objs:
            objs.append(self.ehash)
        if self.fd is not None and self.fd not in objs:
            objs.append(self.fd)
        return objs
