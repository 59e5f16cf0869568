"""The reviewer's TCP findings (issue 25, 1-3), each pinned to the kernel function it follows."""

from __future__ import annotations

from tcphelp import EX, OPEN, c, returns, run, run_preset, segments, transitions


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


def test_delayed_ack_capped_by_srtt() -> None:
    """tcp_send_delayed_ack: once srtt is known, ato is capped at max(srtt, TCP_DELACK_MIN).
    100-byte writes every 100 ms on a 20 ms path: every delayed ACK waits 40 ms (srtt 20 ms is
    below TCP_DELACK_MIN), where an uncapped ato grew to 80, 180 and 200 ms."""
    script = [*OPEN, *[c(100 * i, "client", "send", bytes=100) for i in range(1, 31)]]
    tr = run({"script": script, "until_ms": 3500})
    waits = [
        round(t["deadline_ms"] - f.state["t_ms"], 3)
        for f in tr.frames
        if any(getattr(n, "id", "") == "{ep} delays its ACK by {t} ms." for n in f.notes)
        for obj in f.state["endpoints"]["server"]["linux"]
        for t in obj["timers"]
        if t["name"] == "delack"
    ]
    assert len(waits) >= 10
    assert set(waits) == {40.0}


def test_time_wait_takeover_with_timestamps() -> None:
    """tcp_twsk_unique (called by __inet_check_established from tcp_v4_connect with no twp):
    with timestamps (6.4's default) connect() from the bound port takes the 4-tuple over at
    once with write_seq = tw_snd_nxt + 65535 + 2; without timestamps it fails."""
    tr = run_preset("time-wait-takeover")
    assert [r for _, r in returns(tr, "client", "connect")] == ["0", "0"]
    syns = [s for s in segments(tr, "client") if s["flags"] == ["SYN"]]
    fin = next(s for s in segments(tr, "client") if "FIN" in s["flags"])
    assert syns[-1]["sent_ms"] == 30_000.0
    assert syns[-1]["seq"] == fin["seq"] + 1 + 65537  # tw_snd_nxt is past the FIN
    ended = [t for t in transitions(tr) if t["object"] == "timewait_sock"]
    assert ended[-1]["to_state"] == "TCP_CLOSE"
    assert ended[-1]["function"] == "tcp_v4_connect"

    off = run_preset("time-wait")
    assert EX.preset("time-wait").params["sysctl"] == {"tcp_timestamps": 0}  # type: ignore[union-attr]
    assert (30_000.0, "EADDRNOTAVAIL") in returns(off, "client", "connect")


def test_active_reset_carries_the_window() -> None:
    """tcp_send_active_reset → __tcp_transmit_skb: a non-SYN segment carries
    tcp_select_window(), so the abort's RST advertises the same window as the ACK before it."""
    segs = segments(run_preset("abort"), "client")
    rst = next(i for i, s in enumerate(segs) if "RST" in s["flags"])
    before = [s for s in segs[:rst] if "SYN" not in s["flags"]]
    assert segs[rst]["window"] > 0
    assert segs[rst]["window"] == before[-1]["window"]


def test_embryonic_reset_is_dropped_by_tcp_check_req() -> None:
    """tcp_check_req: a RST in the window drops the request sock itself (embryonic reset);
    reqsk_timer_handler only drops a request whose SYN-ACK retries ran out."""
    script = [
        c(0, "server", "listen"),
        c(0, "client", "connect", nonblock=True),
        c(5, "client", "close"),
    ]
    tr = run({"script": script, "until_ms": 500})
    assert [s["flags"] for s in segments(tr, "client")][-1] == ["RST"]
    ends = [
        t["function"]
        for t in transitions(tr)
        if t["object"] == "request_sock" and t["to_state"] == "TCP_CLOSE"
    ]
    assert ends == ["tcp_check_req"]
