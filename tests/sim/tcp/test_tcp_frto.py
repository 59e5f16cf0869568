"""F-RTO and undo after a retransmission timeout, as Linux 6.4 runs them (tcp_frto = 2):
tcp_enter_loss arms F-RTO and saves the undo state (tcp_init_undo); tcp_process_loss sends new
data on the first ACK (step 2.b, REXMIT_NEW in tcp_xmit_recovery), undoes with
tcp_try_undo_loss(sk, true) when never-retransmitted data is acknowledged (step 3.b), and
falls back to conventional recovery on a duplicate ACK or SACK (step 3.a); with timestamps,
tcp_packet_delayed lets tcp_try_undo_loss(sk, false) undo at once (tcp_may_undo); without
F-RTO the D-SACKs undo later (undo_retrans, tcp_try_undo_dsack); tcp_undo_cwnd_reduction gives
cwnd back through CUBIC's undo_cwnd (tcp_reno_undo_cwnd).

The scenarios are the spurious-rto preset (a queue holds the client's segments for 270 ms)
with its knobs changed, the project's packetdrill example content/packetdrill/spurious-rto.pkt,
and scripts of this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tcphelp import EX, run, segments

from app.sim.core.errors import ParamError
from app.sim.core.i18n import Message
from app.sim.core.trace import Trace
from app.sim.tcp.packetdrill.parser import parse
from app.sim.tcp.packetdrill.runner import DEFAULT_TOLERANCE_US, MAX_EVENTS, Runner
from app.sim.tcp.params import parse as parse_params
from app.sim.tcp.sock import Sock
from app.sim.tcp.state import TcpState
from tests.pdscripts import OPEN_SACK

EXAMPLE = Path(__file__).resolve().parents[3] / "content" / "packetdrill" / "spurious-rto.pkt"


def spurious(**sysctl: Any) -> Trace[TcpState, None]:
    p = EX.preset("spurious-rto")
    assert p is not None
    raw = dict(p.params)
    return run({**raw, "sysctl": {**raw["sysctl"], **sysctl}})


def notes(tr: Trace[TcpState, None]) -> list[tuple[float, str]]:
    """(time, message id) of every narration note, and of the messages nested in one."""
    out = []
    for f in tr.frames:
        for n in f.notes:
            out.append((f.state["t_ms"], n.id))
            out += [(f.state["t_ms"], v.id) for v in n.params.values() if isinstance(v, Message)]
    return out


def undo_times(tr: Trace[TcpState, None], function: str) -> list[float]:
    return [f.state["t_ms"] for f in tr.frames if f.source and f.source.function == function]


def client_data(tr: Trace[TcpState, None], after: float) -> list[tuple[float, int, str]]:
    """(time, seq, kind) of the client's data segments sent from ``after`` on."""
    return [
        (s["sent_ms"], s["seq"], s["kind"])
        for s in segments(tr, "client")
        if s["len"] and s["sent_ms"] >= after
    ]


def cwnd_at(tr: Trace[TcpState, None], t: float) -> int:
    return [f.state["endpoints"]["client"]["cwnd"] for f in tr.frames if f.state["t_ms"] <= t][-1]


def test_frto_sends_new_data_and_undoes_on_an_ack_of_never_retransmitted_data() -> None:
    """tcp_process_loss step 2.b: the first ACK after the RTO (of the retransmitted 1001)
    sends new data (5345, 6805) instead of retransmitting 2461; the next ACK covers 2461, never
    retransmitted (FLAG_ORIG_SACK_ACKED): tcp_try_undo_loss(sk, true) restores cwnd 10."""
    tr = spurious()
    rto = undo_times(tr, "tcp_retransmit_timer")
    assert rto == [312.0]
    assert cwnd_at(tr, 312.0) == 1
    sent = client_data(tr, 312.0)
    assert sent[0] == (312.0, 1001, "retransmit")
    assert [(t, seq) for t, seq, _ in sent[1:3]] == [(340.0, 5345), (340.0, 6805)]
    assert not [s for s in sent[1:] if s[2] == "retransmit"]  # nothing else resent
    assert undo_times(tr, "tcp_process_loss") == [340.0]
    assert undo_times(tr, "tcp_try_undo_loss") == [340.0]
    undo = next(f for f in tr.frames if f.source and f.source.function == "tcp_try_undo_loss")
    assert [n.params.get("cw") for n in undo.notes if "undone" in n.id] == [10]
    assert undo.state["endpoints"]["client"]["cwnd"] == 11  # slow start's +1 on that ACK


def test_without_frto_loss_recovery_resends_and_only_d_sacks_undo_later() -> None:
    """tcp_frto = 0: the first ACK makes Loss resend 2461 and 3921 (REXMIT_LOST), cwnd grows
    from 1 in slow start; when D-SACKs have reported every retransmission (undo_retrans 0)
    tcp_try_undo_dsack restores cwnd, 20 ms later than F-RTO did."""
    tr = spurious(tcp_frto=0)
    sent = client_data(tr, 312.0)
    assert [(t, seq, k) for t, seq, k in sent[:3]] == [
        (312.0, 1001, "retransmit"),
        (340.0, 2461, "retransmit"),
        (340.0, 3921, "retransmit"),
    ]
    assert undo_times(tr, "tcp_process_loss") == []
    assert cwnd_at(tr, 359.0) == 4
    ids = notes(tr)
    dsack_undo = [t for t, i in ids if i.startswith("D-SACKs show")]
    assert dsack_undo == [360.0]
    assert cwnd_at(tr, 360.0) >= 10


def test_timestamps_prove_the_timeout_spurious_at_the_first_ack() -> None:
    """tcp_timestamps = 1 (6.4's default): the first ACK echoes the original's TSval (50 ms),
    before retrans_stamp (312 ms): tcp_packet_delayed, so tcp_may_undo and
    tcp_try_undo_loss(sk, false) undo before F-RTO sends anything."""
    tr = spurious(tcp_timestamps=1)
    assert undo_times(tr, "tcp_try_undo_loss") == [340.0]
    assert undo_times(tr, "tcp_process_loss") == []
    ids = [i for _, i in notes(tr) if i.startswith("The ACK echoes a timestamp")]
    assert len(ids) == 1
    first_after_rto = client_data(tr, 312.0)[1]
    assert first_after_rto[2] != "retransmit"


def test_a_first_timeout_in_recovery_does_not_arm_frto_a_repeated_one_does() -> None:
    """tcp_enter_loss: F-RTO only when no recovery was under way (new_recovery), or for a
    repeated timeout (icsk_retransmits, RFC 5682 3.2): here the sack-recovery preset's
    retransmission and everything after it are lost; the RTO in Recovery (297 ms) leaves F-RTO
    off, the next one (737 ms) arms it."""
    p = EX.preset("sack-recovery")
    assert p is not None
    raw = dict(p.params)
    drop = {"drop": {"from": "client", "nth": 21, "count": 30}}
    tr = run({**raw, "network": [*raw["network"], drop], "until_ms": 1000})
    assert undo_times(tr, "tcp_retransmit_timer")[:1] == [297.0]
    armed = [t for t, i in notes(tr) if i.startswith("tcp_enter_loss arms F-RTO")]
    assert armed == [737.0]


def drive(text: str) -> tuple[Any, Sock]:
    runner = Runner(parse(text), DEFAULT_TOLERANCE_US, MAX_EVENTS)
    res = runner.run()
    sk = runner.sim.ep.fd
    assert isinstance(sk, Sock)
    return res, sk


def test_the_example_script_passes_and_fails_where_frto_is_off() -> None:
    """content/packetdrill/spurious-rto.pkt (no SACK, no timestamps) passes on the model; with
    tcp_frto = 0 the line that expects F-RTO's new data gets the retransmission of 1001."""
    text = EXAMPLE.read_text()
    res, sk = drive(text)
    assert res.verdict.passed, [(r.line, r.status) for r in res.lines if r.status != "match"]
    assert sk.ca_state == "Open" and sk.undo_marker is None  # tp->frto itself stays set
    off, sk = drive("`sysctl -q net.ipv4.tcp_frto=0`\n" + text)
    lines = ("`sysctl -q net.ipv4.tcp_frto=0`\n" + text).split("\n")
    assert off.verdict.line is not None and "> P. 2001:3001" in lines[off.verdict.line - 1]
    bad = next(r for r in off.lines if r.line == off.verdict.line)
    assert bad.got is not None and bad.got["seq"] == 1001
    assert (sk.cwnd, sk.ssthresh) != (11, 2147483647)


STEP_3A = (
    "`sysctl -q net.ipv4.tcp_early_retrans=0`"
    + OPEN_SACK
    + """   +0 write(4, ..., 2000) = 2000
   +0 > P. 1:2001(2000) ack 1
    * > . 1:1001(1000) ack 1
0.600 write(4, ..., 2000) = 2000
// the retransmission is acknowledged: F-RTO sends new data (cwnd 2)
 +.01 < . 1:1(0) ack 1001 win 500
   +0 > P. 2001:4001(2000) ack 1
// the new data is SACKed but 1001:2001 is still missing: the loss was real
 +.04 < . 1:1(0) ack 1001 win 500 <sack 2001:3001,nop,nop>
   +0 > P. 1001:2001(1000) ack 1
"""
)


def test_a_sack_after_the_new_data_shows_the_loss_was_real() -> None:
    """tcp_process_loss step 3.a: after F-RTO's new data, an ACK that SACKs it without
    covering 1001:2001 clears tp->frto; conventional loss recovery resends 1001:2001
    (tcp_xmit_retransmit_queue) and nothing is undone."""
    res, sk = drive(STEP_3A)
    assert res.verdict.passed, [
        (r.line, [m.render() for m in r.reasons]) for r in res.lines if r.status == "mismatch"
    ]
    assert not sk.frto
    assert sk.undo_marker is not None  # the episode's undo state stays; nothing was undone
    assert sk.ssthresh == 7  # CUBIC's 10 × 717/1024, kept


@pytest.mark.parametrize(
    ("value", "ok"), [(0, True), (2, True), (255, True), (256, False), (-1, False)]
)
def test_tcp_frto_takes_6_4_s_u8_range(value: int, ok: bool) -> None:
    """net.ipv4.tcp_frto is a u8 (proc_dou8vec_minmax without bounds); 6.4's default is 2."""
    raw = {"script": [], "sysctl": {"tcp_frto": value}}
    if ok:
        assert parse_params(raw).sysctl.tcp_frto == value
    else:
        with pytest.raises(ParamError):
            parse_params(raw)
    assert parse_params({"script": []}).sysctl.tcp_frto == 2
