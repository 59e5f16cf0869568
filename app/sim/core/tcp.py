"""TCP constants and the RTT estimator shared by every TCP model (congestion control, the
connection state machine, packet paths). Values are Linux 6.4's with ``CONFIG_HZ=1000``.

``tcp_rtt_estimator`` follows ``tcp_rtt_estimator`` (net/ipv4/tcp_input.c) then
``tcp_set_rto``/``__tcp_set_rto`` (include/net/tcp.h): srtt is kept ×8 and mdev ×4 in µs, rttvar
never drops below the 200 ms floor within one RTT, and the RTO is rounded up to whole jiffies
and bounded to ``TCP_RTO_MAX``.
"""

from __future__ import annotations

from typing import Final

try:  # mypyc reads this decorator; mypy_extensions comes with mypy, a test dependency
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover - only the app installed: nothing is compiled
    from app.sim.native import mypyc_attr


HZ: Final = 1000  # jiffies per second (CONFIG_HZ_1000)

# include/net/tcp.h
TCP_RTO_MIN_US: Final = 200_000  # TCP_RTO_MIN = HZ/5
TCP_RTO_MAX_US: Final = 120_000_000  # TCP_RTO_MAX = 120*HZ
TCP_TIMEOUT_INIT_S: Final = 1.0  # TCP_TIMEOUT_INIT = 1*HZ: the RTO before any RTT sample (RFC 6298)
TCP_TIMEOUT_MIN_S: Final = 2 / HZ  # TCP_TIMEOUT_MIN = 2 jiffies
TCP_DELACK_MIN_S: Final = 0.040  # TCP_DELACK_MIN = HZ/25 (also TCP_ATO_MIN)
TCP_DELACK_MAX_S: Final = 0.200  # TCP_DELACK_MAX = HZ/5
TCP_INIT_CWND: Final = 10  # TCP_INIT_CWND (RFC 6928's IW10)
TCP_INFINITE_SSTHRESH: Final = 0x7FFFFFFF
TCP_SYN_RETRIES: Final = 6  # net.ipv4.tcp_syn_retries
TCP_SYNACK_RETRIES: Final = 5  # net.ipv4.tcp_synack_retries
TCP_FIN_TIMEOUT_S: Final = 60.0  # net.ipv4.tcp_fin_timeout (TCP_FIN_TIMEOUT = TCP_TIMEWAIT_LEN)
TCP_TIMEWAIT_LEN_S: Final = 60.0  # TCP_TIMEWAIT_LEN = 60*HZ
TCP_KEEPALIVE_TIME_S: Final = 7200.0  # net.ipv4.tcp_keepalive_time
TCP_KEEPALIVE_INTVL_S: Final = 75.0  # net.ipv4.tcp_keepalive_intvl
TCP_KEEPALIVE_PROBES: Final = 9  # net.ipv4.tcp_keepalive_probes
TCP_RETRIES2: Final = 15  # net.ipv4.tcp_retries2


def rto_jiffies_s(rto_us: int) -> float:
    """An RTO in µs as the kernel keeps it: rounded up to whole jiffies, at most TCP_RTO_MAX."""
    if rto_us > TCP_RTO_MAX_US:
        rto_us = TCP_RTO_MAX_US
    return -(-rto_us // 1000) / HZ


@mypyc_attr(allow_interpreted_subclasses=True)  # app.sim.tcp's SockRtt stays interpreted
class RttEstimator:
    """The RTT fields of ``tcp_sock`` (srtt_us ×8, mdev_us ×4, mdev_max_us, rttvar_us,
    rtt_seq) and the RTO they give (``rto_s``), updated by :meth:`sample`."""

    __slots__ = ("mdev_max_us", "mdev_us", "rto_s", "rtt_seq", "rttvar_us", "srtt_us")

    def __init__(self) -> None:
        self.srtt_us = 0
        self.mdev_us = 0
        self.mdev_max_us = 0
        self.rttvar_us = 0
        self.rtt_seq = 0
        self.rto_s = TCP_TIMEOUT_INIT_S

    def sample(self, m: int, snd_una: int, snd_nxt: int) -> None:
        """Feed one RTT sample ``m`` (µs). ``snd_una``/``snd_nxt`` decide when a round trip
        has passed (``after(tp->snd_una, tp->rtt_seq)``), which decays rttvar toward mdev_max."""
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
            if snd_una > self.rtt_seq:
                if self.mdev_max_us < self.rttvar_us:
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2
                self.rtt_seq = snd_nxt
                self.mdev_max_us = TCP_RTO_MIN_US
        else:  # the first sample
            srtt = m << 3
            self.mdev_us = m << 1
            self.rttvar_us = self.mdev_max_us = max(self.mdev_us, TCP_RTO_MIN_US)
            self.rtt_seq = snd_nxt
        self.srtt_us = srtt if srtt > 0 else 1
        self.rto_s = rto_jiffies_s((self.srtt_us >> 3) + self.rttvar_us)

    @property
    def srtt_ms(self) -> float:
        return self.srtt_us / 8000
