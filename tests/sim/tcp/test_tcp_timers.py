"""Timers: RTO backoff and its bounds, SYN-ACK retries, delayed ACK, FIN_WAIT2 and TIME_WAIT."""

from __future__ import annotations

from pathlib import Path

import pytest
from tcphelp import OPEN, c, returns, run, segments, transitions

from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import run as run_script
from app.sim.tcp.sock import RTO_INIT, RTO_MAX, RTO_MIN


def test_rto_backoff_doubles_caps_and_gives_up() -> None:
    """The first resend of a lone lost segment is the tail loss probe (tcp_send_loss_probe,
    SACK being on); after it tcp_retransmit_timer doubles the RTO up to TCP_RTO_MAX (120 s);
    tcp_write_timeout gives up when retransmits_timed_out(tcp_retries2 = 15) with an RTO_MIN
    base: 924.6 s after retrans_stamp, the first retransmission by tcp_retransmit_skb (the
    loss probe does not set it)."""
    tr = run(
        {
            "script": [*OPEN, c(100, "client", "send", bytes=500), c(100, "client", "recv")],
            "network": [{"drop": {"from": "client", "nth": 3, "count": 100}}],
            "until_ms": 1_200_000,
        }
    )
    sends = [
        (f.state["segment"], f.source.function if f.source else "")
        for f in tr.frames
        if f.state["segment"] is not None and f.state["segment"]["len"] == 500
    ]
    assert [fn for _, fn in sends[:3]] == [
        "tcp_write_xmit",
        "tcp_send_loss_probe",
        "tcp_retransmit_skb",
    ]
    times = [s["sent_ms"] for s, _ in sends]
    gaps = [b - a for a, b in zip(times[1:], times[2:], strict=False)]
    assert 200 <= gaps[0] < 1000  # srtt-based RTO, at least TCP_RTO_MIN
    for g1, g2 in zip(gaps, gaps[1:], strict=False):
        assert g2 == pytest.approx(min(2 * g1, RTO_MAX))
    assert max(gaps) == RTO_MAX
    ((t_err, err),) = returns(tr, "client", "recv")
    assert err == "ETIMEDOUT"
    assert t_err >= times[2] + 924_600 and t_err - times[2] < 924_600 + RTO_MAX


def test_give_up_counts_from_the_first_retransmission() -> None:
    """retransmits_timed_out measures from tp->retrans_stamp, which tcp_retransmit_skb sets
    to the skb's stamp after __tcp_transmit_skb moved it to now: the first retransmission,
    not the segment's first send (nor the loss probe, __tcp_retransmit_skb alone). With
    tcp_retries2 = 2 the budget is (2^3 - 1) x TCP_RTO_MIN = 1400 ms: the third
    retransmission still goes, though it is more than 1400 ms after the first send."""
    raw = {
        "script": [*OPEN, c(100, "client", "send", bytes=500), c(100, "client", "recv")],
        "network": [{"drop": {"from": "client", "nth": 3, "count": 100}}],
        "sysctl": {"tcp_retries2": 2},
        "until_ms": 60_000,
    }
    tr = run(raw)
    sends = [
        (f.state["segment"]["sent_ms"], f.source.function if f.source else "")
        for f in tr.frames
        if f.state["segment"] is not None and f.state["segment"]["len"] == 500
    ]
    first = sends[0][0]
    rtx = [t for t, fn in sends if fn == "tcp_retransmit_skb"]
    budget = ((2 << 2) - 1) * RTO_MIN
    assert sends[1][1] == "tcp_send_loss_probe" and sends[1][0] < rtx[0]
    assert len(rtx) >= 2
    assert int(rtx[-1]) - int(first) >= budget  # counted from the first send it would stop
    assert int(rtx[-1]) - int(rtx[0]) < budget
    ((t_err, err),) = returns(tr, "client", "recv")
    assert err == "ETIMEDOUT" and int(t_err) - int(rtx[0]) >= budget
    assert t_err - rtx[-1] == pytest.approx(2 * (rtx[-1] - rtx[-2]))  # the next expiry


def test_syn_give_up_counts_from_the_syn() -> None:
    """tcp_connect sets retrans_stamp when the SYN leaves, so a SYN that is never answered
    gives up (tcp_syn_retries 6, the default; an RTO base of TCP_TIMEOUT_INIT) after the six
    retransmissions, (2^7 - 1) x 1 s after the SYN."""
    tr = run(
        {
            "script": [c(0, "server", "listen"), c(5, "client", "connect")],
            "network": [{"drop": {"from": "client", "nth": 1, "count": 100}}],
            "until_ms": 200_000,
        }
    )
    syns = [s["sent_ms"] for s in segments(tr, "client") if s["flags"] == ["SYN"]]
    assert len(syns) == 7
    ((t_err, err),) = returns(tr, "client", "connect")
    assert err == "ETIMEDOUT" and t_err - syns[0] == ((2 << 6) - 1) * RTO_INIT


def test_the_give_up_packetdrill_script_passes_on_the_model() -> None:
    """tests/sim/tcp/pkt/retries2-give-up.pkt (also run on a real kernel: content/
    tcp-packetdrill-kernel-check.md): with tcp_retries2 = 1 the second retransmission goes
    and the socket is still alive at 1.2 s; ETIMEDOUT by 2.6 s."""
    script = parse((Path(__file__).parent / "pkt" / "retries2-give-up.pkt").read_text())
    res = run_script(script)
    assert res.verdict.passed, res.verdict
    times = [ln.t_ms for ln in res.lines if ln.kind == "packet"]
    write, rtx1, rtx2 = times[-3:]
    assert rtx2 - rtx1 == 2 * (rtx1 - write)  # one backoff apart: no give-up at rtx2


def test_synack_retries_then_request_dropped() -> None:
    """reqsk_timer_handler resends the SYN-ACK after 1, 2, 4, 8, 16 s (tcp_synack_retries 5)
    and drops the request sock 32 s after the last one (63 s in all)."""
    tr = run(
        {
            "script": [c(0, "server", "listen"), c(0, "client", "connect", nonblock=True)],
            "network": [{"drop": {"from": "client", "nth": 2, "count": 100}}],
            "until_ms": 70_000,
        }
    )
    synacks = [s["sent_ms"] - 10 for s in segments(tr, "server") if s["flags"] == ["SYN", "ACK"]]
    # timer-driven ones only: the client's own SYN retransmits also trigger immediate resends
    timer_ones = [t for t in synacks if t in (1000, 3000, 7000, 15000, 31000)]
    assert timer_ones == [1000, 3000, 7000, 15000, 31000]
    drop = next(
        f.state["t_ms"]
        for f in tr.frames
        for t in f.state["transitions"]
        if t["object"] == "request_sock" and t["to_state"] == "TCP_CLOSE"
    )
    assert drop == 10 + 63_000


def test_delayed_ack_of_a_fin() -> None:
    """A FIN moves the receiver to CLOSE_WAIT in pingpong mode (tcp_fin), so its ACK waits for
    the delayed-ACK timer unless data or a FIN goes out first. tcp_send_delayed_ack uses ato as
    it is: TCP_ATO_MIN (40 ms) once data came in, still 0 when none did (the next tick, 1 ms)."""
    for script, wait in (
        ([*OPEN, c(50, "client", "send", bytes=100), c(100, "client", "close")], 40),
        ([*OPEN, c(100, "client", "close")], 1),
    ):
        tr = run({"script": script, "until_ms": 1000})
        fin = next(s for s in segments(tr, "client") if "FIN" in s["flags"])
        ack = next(s for s in segments(tr, "server") if s["kind"] == "delayed_ack")
        assert ack["sent_ms"] - fin["arrive_ms"] == pytest.approx(wait)


def test_first_data_is_acked_at_once() -> None:
    """tcp_event_data_recv enters quickack mode on the first data: no delayed ACK."""
    tr = run({"script": [*OPEN, c(100, "client", "send", bytes=100)], "until_ms": 1000})
    ack = [s for s in segments(tr, "server") if s["ack"] == 1101][0]
    assert ack["kind"] == "ack" and ack["sent_ms"] == 110


def test_orphan_fin_wait2_times_out_after_fin_timeout() -> None:
    """An orphaned FIN_WAIT2 lives as a timewait sock (substate FIN_WAIT2) for tcp_fin_timeout
    (60 s) when the peer never sends its FIN; then it is freed."""
    tr = run({"script": [*OPEN, c(100, "client", "close")], "until_ms": 70_000})
    tw = [
        t for t in transitions(tr) if t["endpoint"] == "client" and t["object"] == "timewait_sock"
    ]
    assert tw[0]["rfc_to"] == "FIN_WAIT_2"
    born = next(
        f.state["t_ms"]
        for f in tr.frames
        for t in f.state["transitions"]
        if t is not None and t["object"] == "timewait_sock" and t["to_state"] == "TCP_TIME_WAIT"
    )
    assert tw[-1]["to_state"] == "TCP_CLOSE" and tw[-1]["function"] == "tw_timer_handler"
    freed = next(
        f.state["t_ms"]
        for f in tr.frames
        for t in f.state["transitions"]
        if t["object"] == "timewait_sock" and t["to_state"] == "TCP_CLOSE"
    )
    assert freed - born == pytest.approx(60_000)


def test_fin_timeout_sysctl_shortens_fin_wait2() -> None:
    """tcp_fin_time is tcp_fin_timeout (here 10 s), at least 3.5 RTO."""
    tr = run(
        {
            "script": [*OPEN, c(100, "client", "close")],
            "sysctl": {"tcp_fin_timeout_s": 10},
            "until_ms": 20_000,
        }
    )
    ends = [
        f.state["t_ms"]
        for f in tr.frames
        for t in f.state["transitions"]
        if t["object"] == "timewait_sock"
    ]
    assert ends[1] - ends[0] == pytest.approx(10_000)


def test_time_wait_lasts_timewait_len() -> None:
    """A timewait sock in substate TIME_WAIT is freed TCP_TIMEWAIT_LEN (60 s) later."""
    tr = run(
        {
            "script": [
                *OPEN,
                c(100, "client", "close"),
                c(100, "server", "recv"),
                c(200, "server", "close"),
            ],
            "until_ms": 61_000,
        }
    )
    fin = [s for s in segments(tr, "server") if "FIN" in s["flags"]][0]
    freed = next(
        f.state["t_ms"]
        for f in tr.frames
        for t in f.state["transitions"]
        if t["function"] == "tw_timer_handler"
    )
    assert freed == pytest.approx(fin["arrive_ms"] + 60_000)


def test_retransmitted_handshake_falls_back_to_3s_rto() -> None:
    """tcp_init_metrics: without timestamps, no RTT sample from a retransmitted SYN (Karn) sets
    the RTO to TCP_TIMEOUT_FALLBACK, 3 s (RFC 6298 5.7); tcp_init_transfer starts cwnd at 1
    after more than one retransmission. A clean handshake keeps its measured RTO."""
    from tcphelp import EX, run_preset

    def EX_PRESET(slug: str) -> dict[str, object]:  # noqa: N802
        p = EX.preset(slug)
        assert p is not None
        return dict(p.params)

    raw = dict(EX_PRESET("accept-queue-full"))
    raw["sysctl"] = {"tcp_timestamps": 0}
    last = run(raw).frames[-1].state["endpoints"]["client"]
    assert last["rto_ms"] == 3000 and last["cwnd"] == 1
    # with timestamps (6.4's default) tcp_ack_update_rtt takes the sample from the SYN-ACK's
    # TSecr instead (RFC 7323: an echoed timestamp is unambiguous); cwnd is 1 all the same
    with_ts = run_preset("accept-queue-full").frames[-1].state["endpoints"]["client"]
    assert with_ts["rto_ms"] is not None and 200 <= with_ts["rto_ms"] < 1000
    assert with_ts["cwnd"] == 1
    clean = run_preset("handshake").frames[-1].state["endpoints"]["client"]
    assert clean["rto_ms"] is not None and 200 <= clean["rto_ms"] < 1000
    assert clean["cwnd"] is not None and clean["cwnd"] >= 10


def test_long_fin_timeout_keeps_the_full_socket_first() -> None:
    """tcp_fin_timeout above TCP_TIMEWAIT_LEN: the orphaned FIN_WAIT2 socket stays a full
    socket on the keepalive timer for tmo - 60 s, then becomes a timewait sock for the rest
    (__tcp_close / tcp_keepalive_timer), 120 s in all here."""
    tr = run(
        {
            "script": [*OPEN, c(100, "client", "close")],
            "sysctl": {"tcp_fin_timeout_s": 120},
            "until_ms": 130_000,
        }
    )
    sock = [t for t in transitions(tr) if t["endpoint"] == "client" and t["object"] == "sock"]
    fw2 = next(t for t in sock if t["to_state"] == "TCP_FIN_WAIT2")
    t_fw2 = next(f.state["t_ms"] for f in tr.frames if fw2 in f.state["transitions"])
    tw_times = [
        f.state["t_ms"]
        for f in tr.frames
        for t in f.state["transitions"]
        if t["endpoint"] == "client" and t["object"] == "timewait_sock"
    ]
    assert tw_times[0] - t_fw2 == pytest.approx(60_000)
    assert tw_times[-1] - t_fw2 == pytest.approx(120_000)
