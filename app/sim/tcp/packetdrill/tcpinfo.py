"""The TCP_INFO fields a script's ``%{ assert … }%`` lines may compare, as Linux 6.4 lays
them out and fills them.

``struct tcp_info`` (include/uapi/linux/tcp.h in v6.4): eight ``__u8`` (tcpi_state,
tcpi_ca_state at byte 1, …), then ``__u32`` fields from byte 8: tcpi_rto, tcpi_ato,
tcpi_snd_mss, tcpi_rcv_mss, tcpi_unacked (24), tcpi_sacked (28), tcpi_lost (32),
tcpi_retrans (36), tcpi_fackets, four times, tcpi_pmtu, tcpi_rcv_ssthresh, tcpi_rtt,
tcpi_rttvar, tcpi_snd_ssthresh (76), tcpi_snd_cwnd (80), tcpi_advmss, tcpi_reordering (88).
``tcp_get_info`` (net/ipv4/tcp.c) fills them for a connection from tp->reordering (line
3854), tcp_snd_cwnd(tp) (3855), icsk_ca_state (3869), tp->packets_out, sacked_out, lost_out,
retrans_out (3896-3900) and tp->snd_ssthresh (3911); app.sim.tcp.packetdrill.runner reads the
same fields of the model's socket.
"""

from __future__ import annotations

# field name → (byte offset in struct tcp_info, struct format of its type)
OFFSETS: dict[str, tuple[int, str]] = {
    "tcpi_ca_state": (1, "B"),
    "tcpi_unacked": (24, "I"),
    "tcpi_sacked": (28, "I"),
    "tcpi_lost": (32, "I"),
    "tcpi_retrans": (36, "I"),
    "tcpi_snd_ssthresh": (76, "I"),
    "tcpi_snd_cwnd": (80, "I"),
    "tcpi_reordering": (88, "I"),
}
# bytes of struct tcp_info to read: up to the end of tcpi_reordering (and then some)
INFO_LEN = 104

# enum tcp_ca_state (include/uapi/linux/tcp.h, v6.4 lines 184-210)
CA_STATES: dict[str, int] = {
    "TCP_CA_Open": 0,
    "TCP_CA_Disorder": 1,
    "TCP_CA_CWR": 2,
    "TCP_CA_Recovery": 3,
    "TCP_CA_Loss": 4,
}

__all__ = ["CA_STATES", "INFO_LEN", "OFFSETS"]
