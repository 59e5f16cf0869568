"""One TCP bulk flow: the sender's ``tcp_sock`` fields we model and its receiver's ACK state.

Sequence numbers count whole segments (every segment is a full MSS; a bulk sender never has a
short one). The sender keeps the counters Linux keeps (``packets_out`` = ``snd_nxt - snd_una``,
``sacked_out``, ``lost_out``, ``retrans_out``) and ``tcp_packets_in_flight`` is built from them as
in include/net/tcp.h. Because the simulated path never reorders, the SACK scoreboard can be kept
as counts plus the few holes the sender has marked lost (``holes``), instead of a per-segment
queue.

The RTT estimator and RTO are Linux's (``tcp_rtt_estimator`` tcp_input.c:828, ``__tcp_set_rto``
include/net/tcp.h:699, min 200 ms, max 120 s, ``icsk_backoff`` doubling on each timeout).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.sim.congestion.reno import CongestionOps

# enum tcp_ca_state (include/uapi/linux/tcp.h)
CA_OPEN, CA_DISORDER, CA_CWR, CA_RECOVERY, CA_LOSS = range(5)
CA_NAMES = ("Open", "Disorder", "CWR", "Recovery", "Loss")

TCP_INIT_CWND = 10  # include/net/tcp.h:231
TCP_INFINITE_SSTHRESH = 0x7FFFFFFF  # include/net/tcp.h:1227
TCP_RTO_MIN_US = 200_000  # HZ/5
TCP_RTO_MAX_US = 120_000_000  # 120*HZ
TCP_DELACK_MIN_S = 0.040  # HZ/25 = TCP_ATO_MIN: the delayed-ACK timer
TCP_DEFAULT_INIT_RCVWND = 10  # initial receive window in segments -> quick ACKs
HZ = 1000  # jiffies per second (CONFIG_HZ_1000)
JIFFIES_BASE = 1 << 20  # keeps jiffies non-zero: CUBIC treats epoch_start == 0 as "no epoch"
SND_CWND_CLAMP = 0xFFFFFFFF
DUPTHRESH = 3  # net.ipv4.tcp_reordering: RACK skips its reorder window once this many SACKed


class Flow:
    """Mutable per-flow state. Only the engine and the congestion-control hooks touch it."""

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
        "is_bbr",
        "is_cubic",
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
        # RTT estimator and retransmission timer
        "srtt_us",
        "mdev_us",
        "mdev_max_us",
        "rttvar_us",
        "rtt_seq",
        "rto_s",
        "backoff",
        "rto_deadline",
        "rto_armed",
        "timer_at",
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
        "rate_delivered",
        "rate_interval_us",
        # pacing (internal TCP pacing, tcp_output.c)
        "pacing_rate",
        "wstamp",
        "pace_armed",
        "data_segs_out",
        # receiver
        "rcv_nxt",
        "ooo",
        "ackq",
        "ack_armed",
        "rcv_pending",
        "rcv_pending_pkt",
        "rcv_deadline",
        "delack_armed",
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
    )

    def __init__(
        self, *, index: int, cc_name: str, ca: CongestionOps, start: float, rtt: float, mss: int
    ) -> None:
        self.index = index
        self.cc_name = cc_name
        self.ca = ca
        self.start = start
        self.rtt = rtt
        self.owd = rtt / 2  # all propagation delay sits after the bottleneck, split evenly
        self.mss = mss
        self.is_bbr = cc_name == "bbr"
        self.is_cubic = cc_name == "cubic"
        self.paced = self.is_bbr  # BBR sets SK_PACING_NEEDED; reno/cubic are not paced

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

        self.srtt_us = 0  # << 3, as in tcp_sock
        self.mdev_us = 0  # << 2
        self.mdev_max_us = 0
        self.rttvar_us = 0
        self.rtt_seq = 0
        self.rto_s = 1.0  # TCP_TIMEOUT_INIT until the first sample
        self.backoff = 0
        self.rto_deadline = 0.0
        # One retransmission timer per flow (icsk_retransmit_timer), lazily in the event heap:
        # rto_armed says an entry is pending, at timer_at; it serves the RTO (rto_deadline) and
        # the tail loss probe (tlp_deadline, 0 when none is scheduled), as Linux's one timer
        # serves ICSK_TIME_RETRANS and ICSK_TIME_LOSS_PROBE.
        self.rto_armed = False
        self.timer_at = 0.0
        self.tlp_deadline = 0.0
        self.tlp_high_seq = 0  # snd_nxt after the last probe; outstanding while snd_una < it
        self.min_rtt_us = 0xFFFFFFFF
        self.rack_xmit = -1.0

        self.delivered = 0
        self.delivered_mstamp = start
        self.first_tx_mstamp = start
        self.app_limited = 0
        self.lost = 0
        self.rate_delivered = 0
        self.rate_interval_us = 0

        self.pacing_rate = 0.0  # bytes per second (sk_pacing_rate)
        self.wstamp = start  # tcp_wstamp_ns, in seconds
        self.pace_armed = False
        self.data_segs_out = 0

        self.rcv_nxt = 0
        self.ooo: set[int] = set()
        # ACKs on their way back, in arrival order: (time, ack, sacked count, trigger segment)
        self.ackq: deque[tuple[Any, ...]] = deque()
        self.ack_armed = False  # the head of ackq has an entry in the event heap
        self.rcv_pending = False
        self.rcv_pending_pkt: tuple[Any, ...] | None = None
        self.rcv_deadline = 0.0
        self.delack_armed = False
        # tcp_incr_quickack on the first data segment: rcv_wnd / (2 * rcv_mss) quick ACKs
        self.quick = TCP_DEFAULT_INIT_RCVWND // 2

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

    # -- helpers used by the congestion-control hooks -------------------------------------

    def in_flight(self) -> int:
        """tcp_packets_in_flight: packets_out - (sacked_out + lost_out) + retrans_out."""
        return self.snd_nxt - self.snd_una - self.sacked_out - len(self.holes) + self.retrans_out

    def in_slow_start(self) -> bool:
        return self.cwnd < self.ssthresh

    def event(self, kind: str, t: float, detail: dict[str, Any], text: str) -> None:
        """Record a notable moment: its numbers (``detail``), our sentence, and a snapshot."""
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
            {"t": round(t, 6), "type": kind, "detail": detail, "text": text, "state": state}
        )

    def rtt_estimator(self, m: int) -> None:
        """tcp_rtt_estimator (tcp_input.c:828) then tcp_set_rto: srtt is kept ×8, mdev ×4.

        rttvar never drops below the 200 ms floor inside one RTT, so the RTO is about
        srtt + max(4·mdev, 200 ms), not max(200 ms, srtt + 4·rttvar).
        """
        srtt = self.srtt_us
        if srtt:
            m -= srtt >> 3
            srtt += m
            if m < 0:
                m = -m - (self.mdev_us >> 2)
                if m > 0:
                    m >>= 3
            else:
                m -= self.mdev_us >> 2
            mdev = self.mdev_us + m
            self.mdev_us = mdev
            if mdev > self.mdev_max_us:
                self.mdev_max_us = mdev
                if mdev > self.rttvar_us:
                    self.rttvar_us = mdev
            if self.snd_una > self.rtt_seq:  # once per RTT, decay rttvar toward mdev_max
                if self.mdev_max_us < self.rttvar_us:
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2
                self.rtt_seq = self.snd_nxt
                self.mdev_max_us = TCP_RTO_MIN_US
        else:  # first sample
            srtt = m << 3
            self.mdev_us = m << 1
            self.rttvar_us = self.mdev_max_us = max(self.mdev_us, TCP_RTO_MIN_US)
            self.rtt_seq = self.snd_nxt
        self.srtt_us = srtt if srtt > 0 else 1
        # __tcp_set_rto, in whole jiffies (usecs_to_jiffies rounds up), bounded to TCP_RTO_MAX
        rto_us = (self.srtt_us >> 3) + self.rttvar_us
        if rto_us > TCP_RTO_MAX_US:
            rto_us = TCP_RTO_MAX_US
        self.rto_s = -(-rto_us // 1000) / HZ


MAX_EVENTS_PER_FLOW = 4000
MAX_EVENTS_TOTAL = 8000  # per run: a flow keeps max(500, 8000 / flows); the rest are counted
