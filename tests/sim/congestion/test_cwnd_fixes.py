"""Issue #11: RTT samples with timestamps, the receiver's initial quick ACKs, BBR's citations."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from app.sim.congestion import bbr as B
from app.sim.congestion import cubic as C
from app.sim.congestion import run, sources
from app.sim.congestion.engine import Engine, tsecr_rtt_us
from app.sim.congestion.flow import CA_LOSS, Flow, initial_quickacks, initial_rcv_wnd
from app.sim.congestion.params import parse
from app.sim.core.sources import SourceRef
from app.sim.core.tcp import rto_jiffies_s
from tests.linux_v64 import require_v6_4, v6_4_file
from tests.native import pure_python

LINK = {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1}


def _until(eng: Engine, t: float, done: Callable[[], bool], step: float = 0.0005) -> float:
    """Walk the engine in small steps from ``t`` until ``done()`` is true; the time reached."""
    while not done():
        t += step
        eng.run(until=t)
        if t > eng.end:
            raise AssertionError("the condition never became true")
    return t


def after_rto_ack(cc: str) -> tuple[Engine, float, float]:
    """One ``cc`` flow black-holed at 2 s until its loss probe is lost too, then the path is
    restored: the RTO fires, resends the head, and the walk stops at the first ACK that
    moves snd_una. Returns the engine, the RTO it backed off to, and the time."""
    eng = Engine(parse({"link": LINK, "flows": [{"cc": cc}], "duration_s": 6, "seed": 0}))
    f = eng.flows[0]
    eng.run(until=2.0)
    limit = eng.limit_time
    eng.limit_time = -1.0  # every packet offered is dropped
    t = _until(eng, 2.0, lambda: f.tlps == 1)
    eng.limit_time = limit
    t = _until(eng, t, lambda: f.rtos == 1)
    doubled = f.rto_s
    una = f.snd_una
    assert f.backoff == 1 and f.ca_state == CA_LOSS  # the timer backed off
    t = _until(eng, t, lambda: f.snd_una > una)
    return eng, doubled, t


def test_tsecr_sample_is_whole_milliseconds() -> None:
    """tcp_ack_update_rtt: delta = tcp_time_stamp − TSecr in 1 ms ticks (TCP_TS_HZ), at least
    one tick, times 1000 µs."""
    assert tsecr_rtt_us(2.0809, 2.0001) == 80_000
    assert tsecr_rtt_us(2.0801, 2.0009) == 80_000
    assert tsecr_rtt_us(1.0004, 1.0001) == 1_000  # same tick: delta 0 counts as 1


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_ack_of_a_retransmission_samples_rtt_from_tsecr(cc: str) -> None:
    """tcp_ack_update_rtt (net/ipv4/tcp_input.c) with timestamps: the ACK that advances snd_una
    over the RTO's retransmission takes the RTT from TSecr (whole ms), recomputes the RTO
    (tcp_set_rto), so the doubled RTO is gone, and clears icsk_backoff; the same sample is
    rs.rtt_us (BBR) and pkts_acked's (CUBIC's delay_min, reset by the Loss state)."""
    eng, doubled, _ = after_rto_ack(cc)
    f = eng.flows[0]
    m = f.last_rtt_us
    assert m % 1000 == 0 and 40_000 <= m <= 200_000
    assert f.backoff == 0
    assert f.rto_s == rto_jiffies_s((f.srtt_us >> 3) + f.rttvar_us) < doubled
    ca = f.ca
    if isinstance(ca, C.Cubic):
        assert ca.delay_min == m
    if isinstance(ca, B.Bbr):
        assert f.rs.rtt_us == m


def test_rto_after_a_sampled_retransmission_is_not_doubled_again() -> None:
    """tcp_ack_update_rtt resets the backoff on a valid sample, while tcp_enter_loss's
    "already reduced" test reads icsk_retransmits, which only snd_una moving clears."""
    eng, _, _ = after_rto_ack("reno")
    f = eng.flows[0]
    assert f.icsk_retransmits == 0 and f.backoff == 0


def test_initial_receive_window_and_quick_acks() -> None:
    """tcp_select_initial_window (via tcp_openreq_init_rwin) offers tcp_full_space() = 65536
    bytes rounded down to whole segments, at most 65535; tcp_incr_quickack then allows
    rcv_wnd / (2 · rcv_mss) quick ACKs, between 2 and TCP_MAX_QUICKACKS = 16."""
    assert initial_rcv_wnd(1448) == 65160 == 45 * 1448
    assert initial_quickacks(1448) == 16  # 65160 / 2896 = 22, capped at 16
    assert initial_rcv_wnd(536) == 65392 and initial_quickacks(536) == 16
    assert initial_rcv_wnd(9000) == 63000 and initial_quickacks(9000) == 3
    assert initial_rcv_wnd(4000) == 64000 and initial_quickacks(4000) == 8


@pure_python  # replaces/overrides a method compiled code calls directly
def test_receiver_acks_the_first_16_segments_at_once() -> None:
    """tcp_incr_quickack (net/ipv4/tcp_input.c): with the default 65160-byte window the
    receiver ACKs each of the first 16 segments at once, then every second segment
    (__tcp_ack_snd_check) or after the delayed-ACK timer."""
    eng = Engine(parse({"link": LINK, "flows": [{"cc": "reno"}], "duration_s": 1, "seed": 0}))
    f = eng.flows[0]
    assert f.quick == 16
    acked: list[int] = []
    on_ack = eng.on_ack

    def record(f: Flow, now: float, ack_no: int, sacked: int, pkt: tuple[object, ...]) -> None:
        acked.append(ack_no)
        on_ack(f, now, ack_no, sacked, pkt)

    eng.on_ack = record  # type: ignore[method-assign]
    eng.run(until=0.3)
    assert acked[:16] == list(range(1, 17))
    assert acked[16] - acked[15] == 2
    assert f.quick == 0


def _all_refs() -> list[SourceRef]:
    refs: list[SourceRef] = []
    for value in vars(sources).values():
        if isinstance(value, SourceRef):
            refs.append(value)
        elif isinstance(value, dict):
            refs += [v for v in value.values() if isinstance(v, SourceRef)]
    return refs


def test_cited_lines_are_the_definitions_in_linux_6_4() -> None:
    """Every SourceRef in the citation table names the line where its function is defined in
    Linux 6.4 (checked in the source tree when it is available)."""
    require_v6_4()
    for ref in _all_refs():
        line = v6_4_file(ref.path)[ref.line - 1]
        assert re.match(rf"^\w.*[ *]{ref.function}\(", line), (ref, line)


def test_bbr_recovery_exit_cites_its_own_restore() -> None:
    """tcp_end_cwnd_reduction (net/ipv4/tcp_input.c) returns at once for an ops table with
    cong_control, so BBR leaving Recovery cites bbr_set_cwnd_to_recover_or_restore, where its
    saved cwnd comes back; Reno and CUBIC cite tcp_end_cwnd_reduction."""
    detail = {"cwnd": 10, "ssthresh": 5, "cwnd_before": 7}
    bbr = sources.for_event("recovery_exit", "bbr", detail)
    assert bbr is not None and bbr.function == "bbr_set_cwnd_to_recover_or_restore"
    assert bbr.path == "net/ipv4/tcp_bbr.c" and bbr.line == 479
    for cc in ("reno", "cubic"):
        ref = sources.for_event("recovery_exit", cc, detail)
        assert ref is not None and ref.function == "tcp_end_cwnd_reduction"
    tr = run(
        parse(
            {
                "link": {"rate_mbps": 20, "rtt_ms": 40, "buffer_bdp": 1},
                "flows": [{"cc": "bbr"}],
                "duration_s": 2,
            }
        )
    )
    exits = [fr for fr in tr.frames if fr.op == "recovery_exit"]
    assert exits and all(fr.source == bbr for fr in exits)


def test_long_term_rate_cites_bbr_lt_bw_interval_done() -> None:
    """The long-term ("policer") rate takes over in bbr_lt_bw_interval_done
    (net/ipv4/tcp_bbr.c): two lossy intervals delivering the same rate. That is what such a
    step cites, not bbr_reset_probe_bw_mode."""
    ref = sources.for_event(
        "bbr_mode", "bbr", {"from": "PROBE_BW", "to": "PROBE_BW", "lt_bw_mbps": 4.2}
    )
    assert ref is not None and ref.function == "bbr_lt_bw_interval_done" and ref.line == 657
    other = sources.for_event("bbr_mode", "bbr", {"from": "DRAIN", "to": "PROBE_BW"})
    assert other is not None and other.function == "bbr_reset_probe_bw_mode"


def test_bbr_rto_zeroes_full_bw_but_keeps_full_pipe() -> None:
    """bbr_set_state (net/ipv4/tcp_bbr.c) on entering Loss zeroes full_bw and ends the round,
    but leaves full_bw_reached alone: a flow whose pipe was judged full does not go back to
    Startup, and the RTO's narration no longer says full-pipe detection restarts."""
    ca = B.Bbr(random.Random(0))
    f = Flow(index=0, cc_name="bbr", ca=ca, start=0.0, rtt=0.04, mss=1448)
    f.min_rtt_us = 40_000
    ca.init(f, 0.0)
    ca.full_bw, ca.full_bw_cnt, ca.full_bw_reached, ca.round_start = 5000, 3, 1, 0
    ca.set_state(f, CA_LOSS, 1.0)
    assert (ca.full_bw, ca.full_bw_reached, ca.round_start) == (0, 1, 1)
    note = ca.rto_note(f, 100)
    assert "restarts full-pipe detection" not in note and "full_bw" in note
