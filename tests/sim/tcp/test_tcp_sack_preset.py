"""The sack-recovery preset and its lesson: one segment lost in a window, the SACK blocks, RACK's
loss marking, the retransmission and PRR's cwnd, as 6.4 does them; and what tcp_sack=0
changes (tcp_add_reno_sack, tcp_newreno_mark_lost)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tcphelp import EX, c, run, run_preset

from app.sim.core.trace import Trace
from app.sim.tcp.state import TcpState

CONTENT = Path(__file__).resolve().parents[3] / "content"
OPEN = [c(0, "server", "listen"), c(0, "server", "accept"), c(0, "client", "connect")]


def client_data(tr: Trace[TcpState, None]) -> list[tuple[int, dict[str, Any]]]:
    return [
        (f.index, dict(f.state["segment"]))
        for f in tr.frames
        if f.state["segment"] is not None
        and f.state["segment"]["src"] == "client"
        and f.state["segment"]["len"]
    ]


def retransmissions(tr: Trace[TcpState, None]) -> list[tuple[float, int]]:
    return [(s["sent_ms"], s["seq"]) for _, s in client_data(tr) if s["kind"] == "retransmit"]


def test_the_preset_loses_one_segment_and_resends_it_once_after_three_sacks() -> None:
    tr = run_preset("sack-recovery")
    lost = [s for _, s in client_data(tr) if s["lost"]]
    assert [s["seq"] for s in lost] == [5345]
    assert retransmissions(tr) == [(70.0, 5345)]
    blocks = [
        o
        for f in tr.frames
        if f.state["segment"] and f.state["segment"]["src"] == "server"
        for o in f.state["segment"]["options"]
        if o.startswith("sack ")
    ]
    assert blocks[0] == "sack 6793:8241" and len(blocks) >= 3
    assert tr.frames[-1].state["endpoints"]["client"]["cwnd"] == 9  # CUBIC: 13 * 717 / 1024


def test_the_lessons_steps_show_what_they_say() -> None:
    """Each ``## Step N`` of the lesson (both languages) sits on the frame it describes."""
    tr = run_preset("sack-recovery")
    src = {f.index: (f.source.function if f.source else None) for f in tr.frames}
    seg = {f.index: f.state["segment"] for f in tr.frames}
    checks = {
        16: lambda i: seg[i] is not None and seg[i]["lost"] and seg[i]["seq"] == 5345,
        32: lambda i: seg[i] is not None and "sack 6793:8241" in seg[i]["options"],
        56: lambda i: (
            src[i] == "tcp_sacktag_write_queue"
            and any("RACK" in n.render() for n in tr.frames[i].notes)
        ),
        57: lambda i: seg[i] is not None and seg[i]["kind"] == "retransmit",
        62: lambda i: tr.frames[i].state["endpoints"]["client"]["cwnd"] == 11,
        81: lambda i: seg[i] is not None and seg[i]["src"] == "server" and seg[i]["ack"] == 27065,
        92: lambda i: src[i] == "tcp_end_cwnd_reduction",
    }
    for lesson in (CONTENT / "tcp-sack-recovery.md", CONTENT / "zh-CN" / "tcp-sack-recovery.md"):
        text = lesson.read_text(encoding="utf-8")
        steps = [
            int(n)
            for n in re.findall(r"^## (?:Step (\d+)|第 (\d+) 步)", text, re.M)
            for n in n
            if n
        ]
        assert sorted(steps) == sorted(checks), lesson.name
        for i in steps:
            assert checks[i](i), (lesson.name, i)


def _two(sack: int, drops: tuple[int, ...]) -> Trace[TcpState, None]:
    return run(
        {
            "script": [*OPEN, c(50, "client", "send", bytes=28960), c(50, "server", "recv")],
            "network": [{"drop": {"from": "client", "nth": n}} for n in drops],
            "until_ms": 300,
            "sysctl": {"tcp_sack": sack},
        }
    )


def test_without_sack_newreno_resends_one_hole_per_round_trip() -> None:
    """Two segments lost in one window: the SACK scoreboard shows both holes and RACK marks
    both, resent together; NewReno (tcp_newreno_mark_lost) marks the head after three
    duplicates and the next hole only after the partial ACK, one RTT (20 ms) later."""
    assert retransmissions(_two(1, (6, 9))) == [(70.0, 5345), (70.0, 9689)]
    assert retransmissions(_two(0, (6, 9))) == [(70.0, 5345), (90.0, 9689)]


def test_reno_duplicate_acks_are_delivered_segments_for_prr() -> None:
    """tcp_add_reno_sack counts each duplicate ACK with tcp_count_delivered, so tcp_ack's
    tcp_newly_delivered hands it to tcp_cwnd_reduction: without SACK, PRR lowers cwnd to
    ssthresh (9) on the duplicates, before the cumulative ACK; and recovery is held until
    an ACK passes high_seq (27065)."""
    tr = _two(0, (6,))
    client = [
        (f.state["t_ms"], f.state["endpoints"]["client"]["cwnd"])
        for f in tr.frames
        if f.state["delivered"] is not None and f.state["delivered"]["dst"] == "client"
    ]
    dup_cwnds = [cw for t, cw in client if t == 90.0][:-1]
    assert min(dup_cwnds) == 9
    ended = [
        f.state["t_ms"]
        for f in tr.frames
        if f.source and f.source.function == "tcp_end_cwnd_reduction"
    ]
    assert ended == [130.0]
    assert retransmissions(tr) == [(70.0, 5345)]


def test_new_data_sent_earlier_in_an_instant_does_not_make_a_retransmission_look_older() -> None:
    """tcp_rack_detect_loss: new data sent for the first ACKs of an instant, then the
    retransmission for a later ACK of the same instant; when the new data is SACKed, the
    retransmission was sent after it (the kernel's µs clock says so), so it is not lost
    again: one retransmission only."""
    tr = run(
        {
            "script": [*OPEN, c(50, "client", "send", bytes=43440), c(50, "server", "recv")],
            "network": [{"drop": {"from": "client", "nth": 6}}],
            "until_ms": 300,
        }
    )
    assert [r for r in retransmissions(tr) if r[1] == 5345] == [(70.0, 5345)]
    assert EX.preset("sack-recovery") is not None
