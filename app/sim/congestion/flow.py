"""One TCP bulk flow: the sender's ``tcp_sock`` fields we model and its receiver's ACK state.

Sequence numbers count whole segments (every segment is a full MSS; a bulk sender never has a
short one). The sender keeps the counters Linux keeps (``packets_out`` = ``snd_nxt - snd_una``,
``sacked_out``, ``lost_out``, ``retrans_out``) and ``tcp_packets_in_flight`` is built from them as
in include/net/tcp.h. Because the simulated path never reorders, the SACK scoreboard can be kept
as counts plus the few holes the sender has marked lost (``holes``), instead of a per-segment
queue.

A flow *is* an :class:`~app.sim.core.tcp.RttEstimator` (srtt, mdev, rttvar, rto), so its RTT
estimator is the shared one (``tcp_rtt_estimator`` then ``__tcp_set_rto``; ``icsk_backoff``
doubles the RTO on each timeout). Its three timers (retransmission, delayed ACK, pacing) are
lazy :class:`~app.sim.core.events.Timer` entries in the engine's event queue.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Final

from app.sim.congestion.narration import Narration as Narration  # a stored trace's old path
from app.sim.core.events import EventQueue, Timer
from app.sim.core.i18n import Message
from app.sim.core.tcp import TCP_INFINITE_SSTHRESH as TCP_INFINITE_SSTHRESH
from app.sim.core.tcp import TCP_INIT_CWND, RttEstimator

if TYPE_CHECKING:
    from app.sim.congestion.reno import CongControl, CongestionOps

# enum tcp_ca_state (include/uapi/linux/tcp.h)
CA_OPEN: Final = 0
CA_DISORDER: Final = 1
CA_CWR: Final = 2
CA_RECOVERY: Final = 3
CA_LOSS: Final = 4
CA_NAMES = ("Open", "Disorder", "CWR", "Recovery", "Loss")

# Event kinds in the engine's queue (``kind`` of an EventQueue entry)
EV_ACK: Final = 0
EV_PACE: Final = 1
EV_DELACK: Final = 2
EV_RTO: Final = 3
EV_SAMPLE: Final = 4
EV_START: Final = 5
EV_COMPACK: Final = 6  # the receiver's compressed-SACK timer (tcp_compressed_ack_kick)

TCP_MAX_QUICKACKS: Final = 16  # include/net/tcp.h
TCP_RMEM_DEFAULT: Final = 131072  # net.ipv4.tcp_rmem[1]: a new socket's sk_rcvbuf
TCP_ADV_WIN_SCALE: Final = 1  # net.ipv4.tcp_adv_win_scale in 6.4: half the buffer is window
JIFFIES_BASE: Final = 1 << 20  # keeps jiffies non-zero: CUBIC treats epoch_start == 0 as "no epoch"
SND_CWND_CLAMP: Final = 0xFFFFFFFF

# A data segment as the sender transmitted it (what tcp_skb_cb and tcp_rate_skb_sent keep):
# (seq, sent at, is a retransmission, tp->delivered, delivered_mstamp, first_tx_mstamp,
# app_limited)
Pkt = tuple[int, float, bool, int, float, float, int]
DUPTHRESH: Final = 3  # net.ipv4.tcp_reordering: RACK skips its reorder window once this many SACKed


class RateSample:
    """struct rate_sample (include/net/tcp.h), filled by the engine as tcp_rate_gen does.

    Only the fields BBR reads are kept (not prior_mstamp or is_retrans). ``is_ack_delayed``
    stays False: tcp_rate_gen sets it only for an ACK of a runt (sub-MSS) segment, and a bulk
    sender's segments are full."""

    __slots__ = (
        "prior_delivered",
        "delivered",
        "interval_us",
        "rtt_us",
        "losses",
        "acked_sacked",
        "prior_in_flight",
        "is_app_limited",
        "is_ack_delayed",
    )

    def __init__(self) -> None:
        self.prior_delivered = 0
        self.delivered = -1
        self.interval_us = -1
        self.rtt_us = -1
        self.losses = 0
        self.acked_sacked = 0
        self.prior_in_flight = 0
        self.is_app_limited = False
        self.is_ack_delayed = False


class Flow(RttEstimator):
    """Mutable per-flow state. Only the engine and the congestion-control hooks touch it.

    ``queue`` is the engine's event queue the flow's timers live in (a flow made on its own,
    as in unit tests, gets a private one).
    """

    __slots__ = (
        # identity and path
        "index",
        "cc_name",
        "ca",
        "start",
        "rtt",
        "owd",
        "mss",
        "paced",
        "cong_control",
        # send sequence space and windows
        "snd_una",
        "snd_nxt",
        "cwnd",
        "ssthresh",
        "snd_cwnd_cnt",
        "cwnd_clamp",
        "sacked_out",
        "retrans_out",
        "holes",
        "hole_heap",
        "rtxq",
        "undetected",
        "sacked_set",
        "ca_state",
        "high_seq",
        "prior_cwnd",
        "prr_delivered",
        "prr_out",
        # retransmission timer (the RTT estimator's fields come from RttEstimator)
        "backoff",
        "icsk_retransmits",
        "rto_deadline",
        "rto_timer",
        "tlp_deadline",
        "tlp_high_seq",
        "min_rtt_us",
        "rack_xmit",
        # delivery-rate sampling (tcp_rate.c)
        "delivered",
        "delivered_mstamp",
        "first_tx_mstamp",
        "app_limited",
        "lost",
        # pacing (internal TCP pacing, tcp_output.c)
        "pacing_rate",
        "wstamp",
        "pace_timer",
        "rs",
        "data_segs_out",
        # receiver
        "rcv_nxt",
        "ooo",
        "ackq",
        "ack_armed",
        "rcv_pending",
        "rcv_pending_pkt",
        "rcv_deadline",
        "delack_timer",
        "quick",
        # statistics and outputs
        "retransmits",
        "drops",
        "rtos",
        "events",
        "epochs",
        "series",
        "last_sample_delivered",
        "rtt_samples",
        "last_rtt_us",
        "events_dropped",
        "max_events",
        "loss_events",
        "tlps",
        # F-RTO, undo, RACK's reorder timer, slow-start rounds, SACK compression (loss.py)
        "frto",
        "frto_new",
        "undo_marker",
        "prior_ssthresh",
        "retrans_stamp",
        "undo_undetected",
        "reo_deadline",
        "reo_wait",
        "round_next",
        "round_count",
        "round_cwnd",
        "round_delivered",
        "comp_nr",
        "comp_delay",
        "comp_count",
        "comp_rcv_nxt",
        "comp_dupacks",
        "comp_deadline",
        "comp_pkt",
        "comp_timer",
        "comp_acks",
        "comp_told",
        "sacks_compressed",
        "reo_timeouts",
        "undos",
        # options (ecn.py, rwnd.py, the handshake in Engine.start_flow)
        "ecn_ok",
        "ecn_queue_cwr",
        "ecn_demand_cwr",
        "ecn_seen",
        "ce_marks",
        "ece_acks",
        "cwr_entries",
        "rwnd",
        "is_cwnd_limited",
        "max_packets_out",
        "cwnd_usage_seq",
        "rwnd_limited_since",
        "rwnd_limited_s",
        "established",
        "syn_rtt_us",
    )

    def __init__(
        self,
        *,
        index: int,
        cc_name: str,
        ca: CongestionOps,
        start: float,
        rtt: float,
        mss: int,
        queue: EventQueue | None = None,
    ) -> None:
        super().__init__()  # srtt, mdev, rttvar, rtt_seq = 0; rto = TCP_TIMEOUT_INIT
        self.index = index
        self.cc_name = cc_name
        self.ca = ca
        self.start = start
        self.rtt = rtt
        self.owd = rtt / 2  # all propagation delay sits after the bottleneck, split evenly
        self.mss = mss
        # sk_pacing_status == SK_PACING_NEEDED: the algorithm's init sets it (bbr_init does)
        self.paced = False
        # the ops table's cong_control hook, kept here because every ACK asks for it
        self.cong_control: CongControl | None = ca.cong_control
        q = EventQueue() if queue is None else queue
        self._init_send()
        self._init_timers(q)
        self._init_rate(q)
        self._init_receiver(q, mss)
        self._init_stats()
        self._init_loss(q)
        self._init_options()

    def _init_send(self) -> None:
        """struct tcp_sock's send side: sequence space, cwnd, the SACK scoreboard, PRR."""
        self.snd_una = 0
        self.snd_nxt = 0
        self.cwnd = TCP_INIT_CWND
        self.ssthresh = TCP_INFINITE_SSTHRESH
        self.snd_cwnd_cnt = 0
        self.cwnd_clamp = SND_CWND_CLAMP
        self.sacked_out = 0
        self.retrans_out = 0
        # seq -> None (marked lost, waiting for retransmission) or the retransmission's time.
        # len(holes) is lost_out.
        self.holes: dict[int, float | None] = {}
        self.hole_heap: list[int] = []
        self.rtxq: list[int] = []
        self.undetected: deque[tuple[Any, ...]] = deque()  # dropped, not yet marked lost
        self.sacked_set: set[int] = set()
        self.ca_state = CA_OPEN
        self.high_seq = 0
        self.prior_cwnd = 0
        self.prr_delivered = 0
        self.prr_out = 0

    def _init_timers(self, q: EventQueue) -> None:
        """struct inet_connection_sock's retransmission timer (icsk_retransmit_timer,
        icsk_backoff, icsk_retransmits), the loss probe and RACK's newest delivery."""
        self.backoff = 0  # icsk_backoff: RTO doublings since the last valid RTT sample
        self.icsk_retransmits = 0  # RTOs since snd_una last advanced (tcp_enter_loss asks)
        self.rto_deadline = 0.0
        # One retransmission timer per flow (icsk_retransmit_timer), lazily in the event queue:
        # it serves the RTO (rto_deadline) and the tail loss probe (tlp_deadline, 0 when none is
        # scheduled), as Linux's one timer serves ICSK_TIME_RETRANS and ICSK_TIME_LOSS_PROBE.
        # The engine keeps those two deadlines itself and uses the Timer for its queue entry.
        self.rto_timer = Timer(q, EV_RTO, self.index)
        self.tlp_deadline = 0.0
        self.tlp_high_seq = 0  # snd_nxt after the last probe; outstanding while snd_una < it
        self.min_rtt_us = 0xFFFFFFFF
        self.rack_xmit = -1.0

    def _init_rate(self, q: EventQueue) -> None:
        """Delivery-rate sampling (tcp_rate.c's tcp_sock fields) and internal pacing
        (sk_pacing_rate, tcp_wstamp_ns)."""
        start = self.start
        self.delivered = 0
        self.delivered_mstamp = start
        self.first_tx_mstamp = start
        self.app_limited = 0
        self.lost = 0
        self.pacing_rate: int | float = 0.0  # bytes per second (sk_pacing_rate)
        self.wstamp = start  # tcp_wstamp_ns, in seconds
        self.pace_timer = Timer(q, EV_PACE, self.index)  # wakes the sender at wstamp
        self.rs = RateSample()
        self.data_segs_out = 0

    def _init_receiver(self, q: EventQueue, mss: int) -> None:
        """The receiver: rcv_nxt, the out-of-order set, icsk_ack (delayed ACK, quick ACKs)
        and the ACKs on their way back."""
        self.rcv_nxt = 0
        self.ooo: set[int] = set()
        # ACKs on their way back, in arrival order: (time, ack, sacked count, trigger segment)
        self.ackq: deque[tuple[Any, ...]] = deque()
        self.ack_armed = False  # the head of ackq has an entry in the event heap
        self.rcv_pending = False
        self.rcv_pending_pkt: tuple[Any, ...] | None = None
        self.rcv_deadline = 0.0  # when the pending delayed ACK is due (icsk_ack.timeout)
        self.delack_timer = Timer(q, EV_DELACK, self.index)
        # icsk_ack.quick: the first data segment sets it (tcp_incr_quickack); each immediate
        # ACK uses one up
        self.quick = initial_quickacks(mss)

    def _init_stats(self) -> None:
        """Statistics and outputs: counters, events, series."""
        self.retransmits = 0
        self.drops = 0
        self.rtos = 0
        self.events: list[dict[str, Any]] = []
        self.events_dropped = 0
        self.max_events = MAX_EVENTS_PER_FLOW
        self.loss_events = 0
        self.tlps = 0
        self.epochs: list[dict[str, Any]] = []
        self.series: dict[str, list[Any]] = {}
        self.last_sample_delivered = 0
        self.last_rtt_us = -1  # the latest RTT sample, recorded at every sample tick
        self.rtt_samples: list[int] = []
        self.reo_timeouts = 0
        self.undos = 0

    def _init_loss(self, q: EventQueue) -> None:
        """F-RTO and undo (tcp_sock's frto, undo_marker, prior_ssthresh, retrans_stamp), RACK's
        reorder timer, slow-start rounds and the receiver's SACK compression."""
        # F-RTO and undo (tcp_enter_loss / tcp_process_loss / tcp_undo_cwnd_reduction)
        self.frto = False  # tp->frto: F-RTO is running for this Loss episode
        self.frto_new = False  # REXMIT_NEW: this ACK sends new data, not retransmissions
        self.undo_marker = False  # tp->undo_marker != 0: the reduction may still be undone
        self.prior_ssthresh = 0  # tcp_current_ssthresh before the reduction (0: none)
        self.retrans_stamp = 0.0  # when the first retransmission of this episode left (0: none)
        self.undo_undetected: list[tuple[Any, ...]] = []  # drops the RTO marked, for an undo
        # RACK's reorder timer (ICSK_TIME_REO_TIMEOUT on the retransmission timer)
        self.reo_deadline = 0.0
        self.reo_wait = -1.0  # set by rack_mark_lost: the longest wait left in the window
        # slow-start rounds (a round ends when a segment sent after its start is delivered)
        self.round_next = 1  # tp->delivered a segment must have been sent at to end the round
        self.round_count = 0
        self.round_cwnd = TCP_INIT_CWND
        self.round_delivered = 0
        # the receiver's SACK compression (__tcp_ack_snd_check, tcp_compressed_ack_kick)
        self.comp_nr = 0  # net.ipv4.tcp_comp_sack_nr (0: off); the engine sets it
        self.comp_delay = 0.0  # min(tcp_comp_sack_delay_ns, 5 % of the receiver's RTT), s
        self.comp_count = 0  # tp->compressed_ack: segments not yet ACKed
        self.comp_rcv_nxt = -1  # tp->compressed_ack_rcv_nxt
        self.comp_dupacks = 0  # tp->dup_ack_counter
        self.comp_deadline = 0.0  # when the compressed-ACK timer fires (0: not armed)
        self.comp_pkt: tuple[Any, ...] | None = None  # the newest segment held back
        self.comp_timer = Timer(q, EV_COMPACK, self.index)
        # compressed ACKs on their way to the sender: (arrival time, segments it covers)
        self.comp_acks: deque[tuple[float, int]] = deque()
        self.comp_told = -1  # the loss episode (loss_events + rtos) last narrated
        self.sacks_compressed = 0  # ACKs the receiver did not send (TCPAckCompressed)

    def _init_options(self) -> None:
        """The options: ECN (tp->ecn_flags), the receive window and tcp_cwnd_validate's
        fields, the handshake."""
        # ECN (ecn.py): tp->ecn_flags' TCP_ECN_OK (negotiated in the handshake) and
        # TCP_ECN_QUEUE_CWR on the sender; TCP_ECN_DEMAND_CWR and TCP_ECN_SEEN on the receiver
        self.ecn_ok = False
        self.ecn_queue_cwr = False
        self.ecn_demand_cwr = False
        self.ecn_seen = False
        self.ce_marks = 0  # data segments that arrived with CE set
        self.ece_acks = 0  # ACKs that reached the sender with ECE set
        self.cwr_entries = 0
        # flow control (rwnd.py): the receiver's advertised window in segments (0: no limit),
        # and tcp_cwnd_validate's is_cwnd_limited / max_packets_out / cwnd_usage_seq
        self.rwnd = 0
        self.is_cwnd_limited = True
        self.max_packets_out = 0
        self.cwnd_usage_seq = 0
        self.rwnd_limited_since = -1.0  # when the window last started to bind (-1: it does not)
        self.rwnd_limited_s = 0.0  # time the flow spent window-limited (tcpi_rwnd_limited)
        # the handshake: whether the SYN has gone (the flow's next EV_START is the SYN-ACK's
        # arrival) and the RTT the SYN-ACK measured (µs)
        self.established = False
        self.syn_rtt_us = 0

    # -- helpers used by the congestion-control hooks -------------------------------------

    def in_flight(self) -> int:
        """tcp_packets_in_flight: packets_out - (sacked_out + lost_out) + retrans_out."""
        return self.snd_nxt - self.snd_una - self.sacked_out - len(self.holes) + self.retrans_out

    def event(self, kind: str, t: float, detail: dict[str, Any], text: Message) -> None:
        """Record a notable moment: its numbers (``detail``), our sentence, and a snapshot.

        The event's ``text`` is the sentence in English (what the JSON API gives), as a
        :class:`Narration` that keeps the message so a step or a chart can show it in the
        reader's language."""
        if len(self.events) >= self.max_events:
            self.events_dropped += 1
            return
        state = {
            "cwnd": self.cwnd,
            "ssthresh": None if self.ssthresh >= TCP_INFINITE_SSTHRESH else self.ssthresh,
            "inflight": self.in_flight(),
            "srtt_ms": round(self.srtt_us / 8000, 3),
            "ca_state": CA_NAMES[self.ca_state],
        }
        self.events.append(
            {
                "t": round(t, 6),
                "type": kind,
                "detail": detail,
                "text": Narration(text),
                "state": state,
            }
        )

    def rtt_estimator(self, m: int) -> None:
        """tcp_rtt_estimator (tcp_input.c:828) then tcp_set_rto: the shared estimator, with
        this flow's snd_una/snd_nxt deciding when a round trip has passed.

        rttvar never drops below the 200 ms floor inside one RTT, so the RTO is about
        srtt + max(4·mdev, 200 ms), not max(200 ms, srtt + 4·rttvar).
        """
        self.sample(m, self.snd_una, self.snd_nxt)


def ss_or_none(tp: Flow) -> int | None:
    """ssthresh for a trace: None while it is still the initial "infinite" value."""
    return None if tp.ssthresh >= TCP_INFINITE_SSTHRESH else tp.ssthresh


def initial_rcv_wnd(mss: int) -> int:
    """The receive window the receiver offers in its SYN-ACK, in bytes: tcp_openreq_init_rwin
    (net/ipv4/tcp_minisocks.c) passes tcp_full_space(), the default 128 KiB buffer less the
    tcp_adv_win_scale share (65536 bytes), to tcp_select_initial_window
    (net/ipv4/tcp_output.c), which rounds it down to whole segments of ``mss`` (the MSS less the
    timestamp option) and caps it at 65535. For a 1448-byte MSS: 45 × 1448 = 65160 bytes."""
    space = TCP_RMEM_DEFAULT - (TCP_RMEM_DEFAULT >> TCP_ADV_WIN_SCALE)  # tcp_win_from_space
    if space > mss:
        space -= space % mss
    return min(space, 0xFFFF)


def initial_quickacks(mss: int) -> int:
    """tcp_incr_quickack (net/ipv4/tcp_input.c) on the first data segment (tcp_event_data_recv):
    rcv_wnd / (2 · rcv_mss) quick ACKs, at least 2, at most TCP_MAX_QUICKACKS. rcv_mss is the
    segment size by then (tcp_measure_rcv_mss runs first), so a 1448-byte MSS gives
    min(65160 / 2896, 16) = 16."""
    quick = initial_rcv_wnd(mss) // (2 * mss)
    return min(quick if quick else 2, TCP_MAX_QUICKACKS)


def sk_pacing_rate(tp: Flow) -> float:
    """sk_pacing_rate in bytes per second.

    An ops table with ``cong_control`` (BBR) sets it itself; for the others tcp_cong_control
    calls tcp_update_pacing_rate: 200 % of cwnd/srtt in slow start (below ssthresh/2), else
    120 %. For reno and cubic the rate is only advisory (no fq qdisc, so nothing enforces it).
    """
    if tp.cong_control is not None:
        return tp.pacing_rate
    if not tp.srtt_us:
        return 0.0
    ratio = 200 if tp.cwnd < tp.ssthresh // 2 else 120
    return tp.mss * ratio / 100 * max(tp.cwnd, tp.snd_nxt - tp.snd_una) / (tp.srtt_us / 8e6)


MAX_EVENTS_PER_FLOW: Final = 4000
MAX_EVENTS_TOTAL: Final = 8000  # per run: a flow keeps max(500, 8000 / flows); the rest are counted
