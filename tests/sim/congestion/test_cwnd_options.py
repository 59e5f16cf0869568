"""The options: a RED/ECN bottleneck and CWR, a receive-window limit, the SYN handshake."""

from __future__ import annotations

import random
from typing import Any

import pytest

from app.sim.congestion import ecn, red, rwnd
from app.sim.congestion.engine import Engine
from app.sim.congestion.flow import CA_CWR, CA_OPEN, CA_RECOVERY, Flow
from app.sim.congestion.params import dump as dump_params
from app.sim.congestion.params import parse
from app.sim.congestion.reno import Reno
from app.sim.congestion.run import run
from app.sim.congestion.scenarios import PRESETS
from app.sim.core.errors import ParamError
from tests.native import pure_python

ECN_LINK = {
    "rate_mbps": 10,
    "rtt_ms": 40,
    "buffer_bdp": 8,
    "aqm": "red-ecn",
    "red_min_packets": 10,
    "red_max_packets": 40,
    "red_max_p": 0.02,
}


def _preset(slug: str) -> dict[str, Any]:
    return dict(next(p for p in PRESETS if p.slug == slug).params)


def _events(tr: Any, kind: str, flow: int = 0) -> list[dict[str, Any]]:
    return [e for e in tr.series["flows"][flow]["events"] if e["type"] == kind]


# -- RED (include/net/red.h, net/sched/sch_red.c) ---------------------------------------------


def test_tc_red_eval_ewma_picks_the_smallest_wlog_that_absorbs_the_burst() -> None:
    """iproute2's tc_red_eval_ewma: min 10, burst 20 packets needs W = 1/16 (a burst of 20 into
    an empty queue must not lift qavg past min: 11 ≤ (1 − (1 − W)^20)/W first holds at 1/16)."""
    assert red.tc_red_eval_ewma(10, 20) == 4
    assert red.Red(10, 40, 0.02, True, random.Random(0)).wlog == 4  # burst (2·10 + 40)/3 = 20


def test_red_calc_qavg_is_an_ewma_and_decays_when_idle() -> None:
    """red_calc_qavg: qavg += (backlog − qavg)·2^−Wlog per enqueue; after an idle period of m
    packet times, qavg·(1 − W)^m (red_calc_qavg_from_idle_time)."""
    q = red.Red(10, 40, 0.02, True, random.Random(0))
    w = 1 / 16
    expect = 0.0
    for backlog in (0, 5, 30, 30, 12, 0, 50):
        expect = expect + (backlog - expect) * w
        assert q.calc_qavg(backlog, 0.0) == pytest.approx(expect)
    assert q.calc_qavg(0, 10.0) == pytest.approx(expect * (1 - w) ** 10)


def test_red_action_thresholds_and_what_enqueue_does_with_a_mark() -> None:
    """red_action: below min never marks (qcount = −1), at/above max always (RED_HARD_MARK);
    red_enqueue marks an ECT packet only with the ecn flag, otherwise drops it."""
    q = red.Red(10, 40, 0.02, True, random.Random(0))
    assert q.action(9.99) == red.RED_DONT_MARK and q.qcount == -1
    assert q.action(40) == red.RED_HARD_MARK and q.qcount == -1
    q.qavg = 100.0
    assert q.enqueue(100, 0.0, ect=True) == red.MARK
    assert q.enqueue(100, 0.0, ect=False) == red.DROP
    plain = red.Red(10, 40, 0.02, False, random.Random(0))
    plain.qavg = 100.0
    assert plain.enqueue(100, 0.0, ect=True) == red.DROP
    assert (q.forced_mark, q.forced_drop, plain.forced_drop) == (1, 1, 1)


class _FixedRandom(random.Random):
    def random(self) -> float:
        return 0.5


def test_red_mark_probability_spreads_marks_with_qcount() -> None:
    """red_mark_probability: with qavg fixed between the thresholds, a packet is marked once
    max_p·(qavg − min)/(max − min)·qcount ≥ qR; qR is drawn on entering the band and after
    each mark (red_random), so with pb = 0.05 and qR = 0.5 every 11th packet is marked."""
    q = red.Red(0, 10, 0.1, True, _FixedRandom())
    marks = [q.action(5.0) == red.RED_PROB_MARK for _ in range(33)]
    assert [i for i, m in enumerate(marks) if m] == [10, 20, 30]


# -- ECN end to end -----------------------------------------------------------------------------


def test_ecn_preset_marks_instead_of_dropping_and_enters_cwr() -> None:
    """With tcp_ecn = 1 and RED's ecn flag the flow never loses a packet: every reduction is
    tcp_enter_cwr on an ECE ACK, the CWR state appears in ca_state, and the RTT stays near the
    base RTT where the same drop-tail buffer holds ~300 ms (the bufferbloat preset)."""
    tr = run(_preset("ecn-red"))
    s = tr.summary
    assert s["drops"] == 0 and s["retransmits"] == 0 and s["ce_marks"] > 0
    assert s["red"]["prob_drop"] == s["red"]["forced_drop"] == 0
    cwr = _events(tr, "cwr")
    assert cwr and len(cwr) == len(_events(tr, "cwr_exit")) == s["flows"][0]["cwr_entries"]
    assert not _events(tr, "loss") and "CWR" in tr.series["flows"][0]["ca_state"]
    assert any(f.mark == "cwr" for f in tr.frames)
    bloat = run(_preset("bufferbloat"))
    assert s["rtt_mean_ms"] < 60 < 200 < bloat.summary["rtt_mean_ms"]
    assert s["goodput_mbps"] > 0.97 * bloat.summary["goodput_mbps"]


def test_red_runs_are_deterministic_per_seed() -> None:
    """RED draws from the run's random.Random(seed): the same seed gives the same marks and
    trace, another seed other marks."""
    raw = {"link": ECN_LINK, "flows": [{"cc": "cubic", "tcp_ecn": 1}], "duration_s": 8}
    a, b = run(raw), run(raw)
    assert a.summary == b.summary and a.series == b.series
    c = run({**raw, "seed": 7})
    assert c.summary["red"] != a.summary["red"] or c.series != a.series


def test_cwr_takes_ssthresh_from_the_algorithm_and_ends_at_ssthresh() -> None:
    """tcp_init_cwnd_reduction asks the ssthresh hook (CUBIC: cwnd·717/1024, at least 2; Reno:
    cwnd/2), and tcp_end_cwnd_reduction sets cwnd = ssthresh when CWR ends."""
    for cc, cut in (
        ("cubic", lambda w: max(w * 717 // 1024, 2)),
        ("reno", lambda w: max(w // 2, 2)),
    ):
        tr = run({"link": ECN_LINK, "flows": [{"cc": cc, "tcp_ecn": 1}], "duration_s": 10})
        cwr = _events(tr, "cwr")
        assert len(cwr) >= 3
        for e in cwr:
            assert e["detail"]["ssthresh"] == cut(e["detail"]["cwnd"]), e
            assert e["state"]["ca_state"] == "CWR"
        for e in _events(tr, "cwr_exit"):
            assert e["detail"]["cwnd"] == e["detail"]["ssthresh"]
            assert e["state"]["ca_state"] == "Open"


def test_without_ecn_red_drops_what_it_would_mark() -> None:
    """With the default tcp_ecn = 2 the SYN does not ask, nothing is ECT, and red_enqueue
    drops instead of marking: losses and fast recovery, no CWR."""
    tr = run({"link": ECN_LINK, "flows": [{"cc": "cubic"}], "duration_s": 10})
    s = tr.summary
    assert s["ce_marks"] == 0 and s["red"]["prob_mark"] == s["red"]["forced_mark"] == 0
    assert s["drops"] == s["red"]["prob_drop"] + s["red"]["forced_drop"] > 0
    assert _events(tr, "loss") and not _events(tr, "cwr")


def test_bbr_enters_cwr_but_its_cwnd_ignores_the_marks() -> None:
    """tcp_cong_control hands BBR's ACKs to bbr_main (no PRR), bbr_ssthresh keeps ssthresh and
    tcp_end_cwnd_reduction returns at once for cong_control: CWR shows, cwnd is BBR's own."""
    tr = run({"link": ECN_LINK, "flows": [{"cc": "bbr", "tcp_ecn": 1}], "duration_s": 10})
    evs = tr.series["flows"][0]["events"]
    cwr = [i for i, e in enumerate(evs) if e["type"] == "cwr"]
    assert cwr
    for i in cwr:
        e = evs[i]
        assert e["state"]["cwnd"] == e["detail"]["cwnd"]
        assert e["detail"]["ssthresh"] == evs[i - 1]["state"]["ssthresh"]  # bbr_ssthresh
    for e in _events(tr, "cwr_exit"):
        assert e["detail"]["cwnd"] == e["detail"]["cwnd_before"]


class _MarkOnce(red.Red):
    """A RED that marks the first ECT packet it sees and passes every other."""

    def enqueue(self, backlog: int, idle_slots: float, ect: bool) -> int:
        if ect and not self.prob_mark:
            self.prob_mark += 1
            return red.MARK
        return red.PASS


def _ecn_engine() -> tuple[Engine, Flow]:
    eng = Engine(parse({"link": ECN_LINK, "flows": [{"cc": "reno", "tcp_ecn": 1}]}))
    eng.red = _MarkOnce(10, 40, 0.02, True, random.Random(0))
    eng.run(until=0.0)  # the SYN
    f = eng.flows[0]
    f.quick = 0
    return eng, f


@pure_python  # replaces/overrides a method compiled code calls directly
def test_receiver_echoes_ece_until_a_segment_with_cwr_arrives() -> None:
    """__tcp_ecn_check_ce: a CE segment sets TCP_ECN_DEMAND_CWR and quick-ACK mode (2), so it
    is ACKed at once with ECE (tcp_ecn_send) and so is every ACK after it; tcp_ecn_accept_cwr
    clears the demand when a segment with CWR arrives (tcp_enter_cwr queues the flag on the
    next new segment, tcp_ecn_queue_cwr)."""
    eng, f = _ecn_engine()
    ecn.send_new(eng, eng.red, f, 1, 0.05)  # type: ignore[arg-type]
    assert f.ecn_demand_cwr and f.ce_marks == 1 and f.quick == 1
    assert f.ackq[-1][2] & ecn.ECE_BIT
    ecn.send_new(eng, eng.red, f, 2, 0.06)  # type: ignore[arg-type]
    assert all(a[2] & ecn.ECE_BIT for a in f.ackq)
    f.snd_una = 1
    ecn.enter_cwr(eng, f, 0.1)
    assert f.ca_state == CA_CWR and f.ecn_queue_cwr and f.ssthresh == max(f.prior_cwnd // 2, 2)
    n = len(f.ackq)
    ecn.send_new(eng, eng.red, f, 1, 0.1)  # type: ignore[arg-type]
    assert not f.ecn_queue_cwr and not f.ecn_demand_cwr
    assert len(f.ackq) == n + 1 and not f.ackq[-1][2] & ecn.ECE_BIT  # ICSK_ACK_NOW, no ECE


@pure_python  # replaces/overrides a method compiled code calls directly
def test_cwr_ends_only_beyond_high_seq() -> None:
    """tcp_fastretrans_alert: CWR is held until an ACK goes *beyond* high_seq (snd_una ==
    high_seq is not enough, so the CWR flag has reached the receiver); then cwnd = ssthresh."""
    eng, f = _ecn_engine()
    f.snd_nxt = 100
    f.cwnd = 40
    ecn.enter_cwr(eng, f, 0.1)
    assert (f.high_seq, f.ssthresh) == (100, 20)
    f.snd_nxt = 130
    f.snd_una = 100
    ecn.alert(eng, f, 0.2, False)
    assert f.ca_state == CA_CWR
    f.snd_una = 101
    ecn.alert(eng, f, 0.2, False)
    assert f.ca_state == CA_OPEN and f.cwnd == 20


@pure_python  # replaces/overrides a method compiled code calls directly
def test_a_loss_during_cwr_enters_recovery_without_a_second_cut() -> None:
    """tcp_enter_recovery: tcp_in_cwnd_reduction is true in CWR, so tcp_init_cwnd_reduction is
    skipped: ssthresh, prior_cwnd and high_seq stay those of the CWR."""
    eng, f = _ecn_engine()
    f.snd_nxt = 100
    f.cwnd = 40
    ecn.enter_cwr(eng, f, 0.1)
    f.snd_nxt = 120
    f.holes = {50: None}
    f.snd_una = 50
    ecn.alert(eng, f, 0.15, True)
    assert f.ca_state == CA_RECOVERY
    assert (f.ssthresh, f.prior_cwnd, f.high_seq) == (20, 40, 100)
    assert f.events[-1]["type"] == "recovery_enter" and f.events[-1]["detail"]["from_cwr"] == 1


# -- receive window (tcp_snd_wnd_test, tcp_is_cwnd_limited) -------------------------------------


def test_rwnd_preset_is_limited_by_the_receive_window() -> None:
    """tcp_write_xmit sends only within snd_una + snd_wnd: in flight never exceeds the window
    (131072 bytes = 90 segments of 1448), so the rate is window/RTT ≈ 25.7 Mbit/s on a
    50 Mbit/s link, with no queue and no loss."""
    tr = run(_preset("rwnd-limit"))
    f = tr.series["flows"][0]
    s = tr.summary["flows"][0]
    assert s["rwnd_segments"] == 131072 // 1448 == 90
    assert max(f["inflight"]) == 90 and s["drops"] == 0
    assert s["goodput_mbps"] == pytest.approx(90 * 1448 * 8 / 0.0405 / 1e6, rel=0.03)
    assert _events(tr, "rwnd_limited") and s["rwnd_limited_s"] > 9


def test_slow_start_stops_at_twice_the_window_when_not_cwnd_limited() -> None:
    """tcp_is_cwnd_limited: in slow start cwnd may grow while it is below twice the most
    packets out (max_packets_out, tcp_cwnd_validate); a window of 45 segments caps Reno's cwnd
    at 90, then it never grows again."""
    link = {"rate_mbps": 50, "rtt_ms": 40, "buffer_bdp": 1}
    tr = run({"link": link, "flows": [{"cc": "reno", "rwnd_bytes": 65160}], "duration_s": 5})
    f = tr.series["flows"][0]
    assert max(f["cwnd"]) == f["cwnd"][-1] == 90 and max(f["inflight"]) == 45
    assert f["ssthresh"][-1] is None


def test_tcp_is_cwnd_limited() -> None:
    """include/net/tcp.h: true when the window was used; in slow start also while cwnd <
    2·max_packets_out; otherwise false."""
    f = Flow(index=0, cc_name="reno", ca=Reno(), start=0.0, rtt=0.04, mss=1448)
    f.is_cwnd_limited = False
    f.max_packets_out = 30
    f.cwnd = 59
    assert rwnd.tcp_is_cwnd_limited(f)
    f.cwnd = 60
    assert not rwnd.tcp_is_cwnd_limited(f)
    f.ssthresh = 50
    f.cwnd = 55  # congestion avoidance: only is_cwnd_limited counts
    assert not rwnd.tcp_is_cwnd_limited(f)
    f.is_cwnd_limited = True
    assert rwnd.tcp_is_cwnd_limited(f)


def test_a_window_above_cwnd_changes_nothing() -> None:
    """A receive window that never binds leaves the run as without one (tcp_snd_wnd_test
    always passes and the flow stays cwnd-limited)."""
    link = {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1}
    a = run({"link": link, "flows": [{"cc": "cubic"}], "duration_s": 10})
    b = run({"link": link, "flows": [{"cc": "cubic", "rwnd_bytes": 1 << 24}], "duration_s": 10})
    assert a.series["flows"][0]["cwnd"] == b.series["flows"][0]["cwnd"]
    assert b.summary["flows"][0]["rwnd_limited_s"] == 0


# -- the handshake ------------------------------------------------------------------------------


def test_new_scenarios_start_with_the_handshake() -> None:
    """connect defaults to "handshake"; the SYN leaves at start_s and data one RTT later."""
    p = parse(
        {"link": {"rate_mbps": 10, "rtt_ms": 120, "buffer_bdp": 1}, "flows": [{"cc": "reno"}]}
    )
    assert p.connect == "handshake"
    tr = run({**dump_params(p), "duration_s": 2})
    syn, start = tr.series["flows"][0]["events"][:2]
    assert (syn["type"], syn["t"], start["type"], start["t"]) == ("syn", 0.0, "start", 0.12)
    assert tr.series["flows"][0]["t"][0] >= 0.12


def test_the_syn_rtt_is_the_first_sample() -> None:
    """tcp_ack_update_rtt on the SYN-ACK, then tcp_rtt_estimator's first-sample rule (srtt = m,
    mdev_us = 2m, rttvar_us = max(mdev_us, 200 ms)) and __tcp_set_rto: RTO = m + max(2m,
    200 ms); cwnd = IW10 from tcp_init_transfer."""
    for rtt_ms, rto_ms in ((40, 240), (120, 360)):
        link = {"rate_mbps": 10, "rtt_ms": rtt_ms, "buffer_bdp": 1}
        tr = run({"link": link, "flows": [{"cc": "cubic"}], "duration_s": 1})
        start = _events(tr, "start")[0]
        assert start["detail"] == {"cwnd": 10, "rtt_ms": rtt_ms, "rto_ms": rto_ms}
        assert start["state"]["srtt_ms"] == rtt_ms


def test_a_late_syn_waits_in_the_queue_and_measures_it() -> None:
    """A SYN sent behind a standing queue waits its turn: its RTT sample (and so the new flow's
    first srtt) includes the queueing delay, and data starts when the SYN-ACK is back."""
    link = {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 8}
    flows = [{"cc": "cubic"}, {"cc": "cubic", "start_s": 5}]
    tr = run({"link": link, "flows": flows, "duration_s": 6})
    syn = _events(tr, "syn", 1)[0]
    start = _events(tr, "start", 1)[0]
    assert syn["detail"]["queue_ms"] > 20
    assert syn["detail"]["rtt_ms"] == pytest.approx(40 + syn["detail"]["queue_ms"], abs=0.01)
    assert start["t"] == pytest.approx(5 + syn["detail"]["rtt_ms"] / 1e3, abs=1e-6)
    assert start["detail"]["rtt_ms"] == pytest.approx(syn["detail"]["rtt_ms"], abs=0.01)


# -- parameters -----------------------------------------------------------------------------


def test_option_parameters_round_trip_and_are_checked() -> None:
    """parse(dump(p)) == p with every option set; bad values are named."""
    raw = {
        "link": ECN_LINK,
        "flows": [{"cc": "cubic", "tcp_ecn": 1, "rwnd_bytes": 100_000}],
        "connect": "established",
    }
    p = parse(raw)
    assert parse(dump_params(p)) == p and p.flows[0].tcp_ecn == 1
    bad = {
        "link": {**ECN_LINK, "aqm": "codel", "red_min_packets": 20, "red_max_packets": 10},
        "flows": [{"cc": "cubic", "tcp_ecn": 3, "rwnd_bytes": 100}],
        "connect": "tfo",
    }
    with pytest.raises(ParamError) as exc:
        parse(bad)
    locs = {issue.loc for issue in exc.value.issues}
    assert {
        ("link", "aqm"),
        ("link", "red_max_packets"),
        ("flows", 0, "tcp_ecn"),
        ("connect",),
    } <= locs
    with pytest.raises(ParamError) as exc:
        parse({"link": ECN_LINK, "flows": [{"cc": "cubic", "rwnd_bytes": 100}]})
    assert {i.loc for i in exc.value.issues} == {("flows", 0, "rwnd_bytes")}
