"""The reviewer's TCP findings (issue 25, 1-3), each pinned to the kernel function it follows."""

from __future__ import annotations

from tcphelp import run_preset, segments


def test_synsent_unacceptable_ack_rearms_timer_to_timeout_min() -> None:
    """tcp_rcv_synsent_state_process: an unacceptable ACK before any retransmission re-arms the
    retransmit timer to TCP_TIMEOUT_MIN, so the SYN is resent 2 ms after the RST, not 1 s."""
    segs = segments(run_preset("challenge-ack"), "client")
    rst_t = next(s["sent_ms"] for s in segs if s["flags"] == ["RST"])
    syns = [s["sent_ms"] for s in segs if s["flags"] == ["SYN"]]
    assert syns[-1] - rst_t == 2.0
    tr = run_preset("challenge-ack")
    fns = [f.source.function for f in tr.frames if f.source is not None]
    assert "tcp_rcv_synsent_state_process" in fns
