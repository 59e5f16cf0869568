"""The three-way handshake before a flow's data (``connect = "handshake"``).

The client's ``tcp_connect`` (tcp_output.c:3834) sends the SYN at ``start_s`` (an ECN-setup SYN
with ECE and CWR when ``tcp_ecn = 1``, ``tcp_ecn_send_syn``). The SYN waits behind whatever is
queued at the bottleneck, then crosses the path; the SYN-ACK comes back on the ACK path. On the
client, ``tcp_rcv_synsent_state_process`` (tcp_input.c:6182) runs ``tcp_ack``: the SYN is the
segment ``tcp_clean_rtx_queue`` removes, so ``tcp_ack_update_rtt`` (:3087) has its first RTT
sample, which ``tcp_rtt_estimator`` (:828) takes whole (srtt = m, mdev = m/2, rttvar at least
200 ms, so RTO = m + max(2m, 200 ms)). (``tcp_synack_rtt_meas`` is the server's side: its first
sample is the SYN-ACK's, from the handshake's final ACK.) ``tcp_finish_connect`` (:6064) →
``tcp_init_transfer`` (:6036) then sets cwnd to ``tcp_init_cwnd``: TCP_INIT_CWND = 10 segments,
and the algorithm's ``init`` runs. The client's third ACK leaves with (just before) the first
data, so data starts one round trip after ``start_s``.

The SYN and SYN-ACK are 60-byte packets: their serialisation is left out and they are never
dropped (a lost SYN waits 1 s, TCP_TIMEOUT_INIT, for its retransmission; the tcp explainer shows
that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.sim.congestion.flow import EV_START, Flow
from app.sim.core.i18n import Param, msg

if TYPE_CHECKING:
    from app.sim.congestion.engine import Engine


def send_syn(eng: Engine, f: Flow, now: float) -> None:
    """tcp_connect: the SYN leaves now; the flow is established when the SYN-ACK arrives."""
    queue_wait = max(0.0, eng.last_dep - now)
    rtt_us = int((f.rtt + queue_wait) * 1e6)
    f.syn_rtt_us = rtt_us
    f.established = True
    arrive = now + rtt_us / 1e6
    nums: dict[str, Param] = {
        "flow": f.index,
        "wait": f"{queue_wait * 1e3:.2f}",
        "rtt": f"{rtt_us / 1e3:.2f}",
    }
    f.event(
        "syn",
        now,
        {"rtt_ms": rtt_us / 1e3, "queue_ms": queue_wait * 1e3, "ecn": int(f.ecn_ok)},
        (
            msg(
                "flow {flow} sends its SYN, asking for ECN (ECE and CWR set, tcp_ecn = 1; the "
                "receiver's default tcp_ecn = 2 accepts). It waits {wait} ms in the queue; the "
                "SYN-ACK arrives {rtt} ms after the SYN left, which is the first RTT sample. "
                "No data can go before it",
                **nums,
            )
            if f.ecn_ok
            else msg(
                "flow {flow} sends its SYN. It waits {wait} ms in the queue; the SYN-ACK "
                "arrives {rtt} ms after the SYN left, which is the first RTT sample. No data "
                "can go before it",
                **nums,
            )
        ),
    )
    eng.push_event(arrive, EV_START, f.index)
