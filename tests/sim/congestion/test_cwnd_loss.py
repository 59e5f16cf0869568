"""Issue #11: F-RTO and undo after a timeout, RACK's reorder timer, SACK compression at the
receiver, and the slow-start rounds (app/sim/congestion/loss.py)."""

from __future__ import annotations

from typing import Any

import pytest

from app.sim.congestion import loss, sources
from app.sim.congestion.engine import Engine
from app.sim.congestion.flow import CA_LOSS, CA_OPEN, CA_RECOVERY, Flow
from app.sim.congestion.params import dump, parse
from app.sim.congestion.run import run as run_trace
from app.sim.congestion.scenarios import PRESETS
from app.sim.core.errors import ParamError
from tests.native import pure_python
from tests.sim.congestion.test_cwnd_fixes import _until, after_rto_ack

LINK = {"rate_mbps": 10, "rtt_ms": 40, "buffer_bdp": 1}


def _engine(cc: str, link: dict[str, Any] | None = None, **extra: Any) -> Engine:
    raw = {"link": link or LINK, "flows": [{"cc": cc}], "duration_s": 6, "seed": 0, **extra}
    return Engine(parse(raw))


def _kinds(f: Flow, since: float) -> list[str]:
    return [e["type"] for e in f.events if e["t"] >= since]


# -- F-RTO: a real loss ----------------------------------------------------------------------


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_frto_sends_new_data_on_the_first_ack_after_a_timeout(cc: str) -> None:
    """tcp_process_loss step 2.b + tcp_xmit_recovery(REXMIT_NEW): the first ACK after the RTO
    that moves snd_una moves high_seq to snd_nxt and sends new data instead of retransmitting;
    cwnd is 1 + 1 (tcp_slow_start for the one segment ACKed) and nothing else is in flight (the
    rest is marked lost), so exactly two new segments leave and no retransmission."""
    eng, _, t = after_rto_ack(cc)
    f = eng.flows[0]
    rto = [e for e in f.events if e["type"] == "rto"][-1]
    step = [e for e in f.events if e["type"] == "frto"]
    assert f.ca_state == CA_LOSS and f.frto
    assert len(step) == 1 and step[0]["detail"]["step"] == "2b" and step[0]["detail"]["sent"] == 2
    assert step[0]["t"] > rto["t"]
    high = step[0]["detail"]["high_seq"]
    assert f.snd_nxt == high + 2 and f.high_seq == high
    # the timer's retransmission of the head is ACKed and no other is outstanding
    assert all(sent is None for sent in f.holes.values())


@pytest.mark.parametrize("cc", ["reno", "cubic", "bbr"])
def test_frto_step_3a_confirms_the_loss_and_retransmission_goes_on(cc: str) -> None:
    """tcp_process_loss step 3.a: once new data is out, the next ACK only SACKs it while the
    holes remain, so F-RTO turns off (the loss was real), the lost segments are retransmitted,
    and Loss ends only when the new data is ACKed too (high_seq moved in step 2.b)."""
    eng, _, t = after_rto_ack(cc)
    f = eng.flows[0]
    high = f.high_seq
    retx = f.retransmits
    t = _until(eng, t, lambda: not f.frto)
    step = [e for e in f.events if e["type"] == "frto"]
    assert [e["detail"]["step"] for e in step] == ["2b", "3a"]
    assert f.ca_state == CA_LOSS and f.undos == 0
    _until(eng, t, lambda: f.retransmits > retx)
    _until(eng, t, lambda: f.ca_state != CA_LOSS)
    assert f.snd_una >= high
    exit_ = [e for e in f.events if e["type"] == "recovery_exit"][-1]
    assert exit_["t"] > step[1]["t"]


def test_frto_is_off_for_a_first_timeout_during_fast_recovery() -> None:
    """tcp_enter_loss: F-RTO runs only if the timeout starts a new recovery or repeats one
    (``new_recovery || icsk_retransmits``): an RTO that interrupts Recovery retransmits at
    once, with no new data."""
    eng = _engine("reno", link={"rate_mbps": 20, "rtt_ms": 40, "buffer_bdp": 1}, duration_s=4)
    f = eng.flows[0]
    t = _until(eng, 0.0, lambda: f.ca_state == CA_RECOVERY, step=0.001)
    eng.limit_time = -1.0  # from now every packet is dropped: the retransmissions too
    t = _until(eng, t, lambda: f.rtos == 1, step=0.002)
    assert not f.frto and f.ca_state == CA_LOSS
    rto = [e for e in f.events if e["type"] == "rto"][0]
    assert rto["detail"]["ssthresh"] is not None  # ssthresh kept from the recovery


# -- undo -------------------------------------------------------------------------------------


def _spike(cc: str, extra_s: float = 0.6) -> tuple[Engine, Flow]:
    """A flow whose path gets ``extra_s`` slower each way at 2 s (a route change): nothing is
    lost, but no ACK comes for longer than the RTO. The flow starts established (no SYN
    round trip) so the spike meets it where this scenario was designed: one RTO, then the
    undo (with the handshake's later start the RTO backs off once more before the echo)."""
    eng = _engine(cc, connect="established")
    f = eng.flows[0]
    eng.run(until=2.0)
    f.owd += extra_s
    eng.run(until=4.0)
    return eng, f


@pytest.mark.parametrize("cc", ["reno", "cubic"])
def test_spurious_timeout_is_undone_from_the_timestamp_echo(cc: str) -> None:
    """tcp_try_undo_loss via tcp_may_undo/tcp_packet_delayed: an ACK after the RTO that moves
    snd_una and echoes a TSval older than the retransmission proves the originals arrived;
    tcp_undo_cwnd_reduction gives cwnd = tcp_reno_undo_cwnd = max(cwnd, prior_cwnd) and
    ssthresh = prior_ssthresh = max(ssthresh, 3/4 cwnd) from before the timeout."""
    eng, f = _spike(cc)
    rto = next(e for e in f.events if e["type"] == "rto")
    undo = next(e for e in f.events if e["type"] == "undo")
    assert f.rtos == 1 and f.undos == 1
    assert undo["t"] > rto["t"] and undo["detail"]["how"] == "timestamp"
    before = rto["detail"]["cwnd_before"]
    assert undo["detail"]["cwnd"] == before
    ss_before = next(
        e["state"]["ssthresh"] for e in reversed(f.events) if e["t"] < rto["t"]
    )  # the flow's ssthresh before the timeout, from the last snapshot
    assert undo["detail"]["ssthresh"] == max(ss_before, (before >> 1) + (before >> 2))
    assert undo["state"]["ca_state"] == "Open"
    assert f.frto is False and f.undo_marker is False


def test_bbr_undo_keeps_cwnd_and_restores_its_own() -> None:
    """bbr_undo_cwnd returns the current cwnd (tcp_bbr.c); BBR then restores its saved cwnd
    itself when the state leaves Loss (bbr_set_cwnd_to_recover_or_restore)."""
    eng = _engine("bbr")
    f = eng.flows[0]
    eng.run(until=2.0)
    f.owd += 0.6
    t = _until(eng, 2.0, lambda: f.undos == 1)
    undo = next(e for e in f.events if e["type"] == "undo")
    rto = next(e for e in f.events if e["type"] == "rto")
    assert undo["detail"]["cwnd"] == undo["detail"]["cwnd_before"] == 1
    assert f.cwnd >= rto["detail"]["cwnd_before"] - 1 and f.ca_state == CA_OPEN
    assert t < 4.0


def test_frto_step_3b_undoes_on_a_sack_of_never_retransmitted_data() -> None:
    """tcp_process_loss step 3.b: a SACK (no cumulative progress) for a segment sent before the
    timeout and never retransmitted sets FLAG_ORIG_SACK_ACKED, so the timeout was spurious:
    tcp_try_undo_loss(sk, true). RACK then looks again at the drops (rack.advanced) and marks
    the ones sent a reorder window before the SACKed one lost: a fast recovery starts."""
    eng, _, t = after_rto_ack("reno")
    f = eng.flows[0]
    rto = next(e for e in f.events if e["type"] == "rto")
    seq = max(f.holes)  # the black hole swallowed it; pretend it arrived, only late
    assert f.holes[seq] is None
    sent = rto["t"] - 0.05
    pkt = (seq, sent, False, 0, sent, sent, 0)
    episodes = f.loss_events
    eng.on_ack(f, t + 0.001, f.snd_una, f.sacked_out + 1, pkt)
    undo = next(e for e in f.events if e["type"] == "undo")
    assert undo["detail"]["how"] == "frto"
    assert undo["detail"]["cwnd"] == rto["detail"]["cwnd_before"]
    assert f.ca_state == CA_RECOVERY and f.loss_events == episodes + 1


# -- RACK's reorder timer ---------------------------------------------------------------------


def test_reorder_timer_marks_the_loss_before_the_next_ack() -> None:
    """tcp_rack_mark_lost arms ICSK_TIME_REO_TIMEOUT for the wait left in the reorder window
    (min_rtt/4 less how much earlier the segment went than the newest delivered one, in
    jiffies, + TCP_TIMEOUT_MIN); tcp_rack_reo_timeout then marks it lost and starts Recovery
    with no further ACK. On 1 Mbit/s a segment takes 12 ms and min_rtt/4 is 25 ms, so the
    first two SACKs after a drop are inside the window."""
    link = {"rate_mbps": 1, "rtt_ms": 100, "buffer_bdp": 1, "loss_rate": 0.02}
    eng = _engine("reno", link=link, duration_s=10)
    f = eng.flows[0]
    armed: list[tuple[float, float]] = []
    t = 0.0
    while not f.reo_timeouts:
        before = f.reo_deadline
        t += 0.0005
        eng.run(until=t)
        if f.reo_deadline and f.reo_deadline != before:
            armed.append((t, f.reo_deadline))
        assert t < 10, "no reorder timeout"
    ev = next(e for e in f.events if e["type"] == "reo_timeout")
    # it fired at the deadline last armed, which lies within min_rtt/4 + 1 jiffy + 2 ms of it
    t_arm, deadline = armed[-1]
    assert ev["t"] == pytest.approx(deadline, abs=1e-6)
    window = f.min_rtt_us / 4e6
    assert 0 < deadline - t_arm <= window + 0.0035
    assert ev["detail"]["lost"] >= 1
    kinds = _kinds(f, ev["t"])
    assert kinds[:3] == ["reo_timeout", "loss", "recovery_enter"]
    src = sources.for_event("reo_timeout", "reno", ev["detail"])
    assert src is not None and src.function == "tcp_rack_reo_timeout"


def test_reorder_wait_is_the_longest_left() -> None:
    """tcp_rack_detect_loss records the maximum remaining time over the segments still in the
    window: the one sent last before the newest delivery waits longest."""
    und = [(5, 1.000, False), (6, 1.004, False), (9, 1.020, False)]
    assert loss.reo_wait(und, rx=1.010, reo=0.010) == pytest.approx(0.004)
    assert loss.reo_wait(und, rx=0.999, reo=0.010) == -1.0


# -- SACK compression -------------------------------------------------------------------------


class _Recorder(Engine):
    """An engine that keeps every ACK the sender receives: (time, ack, sacked, segment)."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.log: list[tuple[float, int, int, int]] = []

    def on_ack(self, f: Flow, now: float, ack_no: int, sacked: int, pkt: tuple[Any, ...]) -> None:
        self.log.append((now, ack_no, sacked, pkt[0]))
        super().on_ack(f, now, ack_no, sacked, pkt)


def _one_drop(comp: int) -> _Recorder:
    """100 Mbit/s, one segment dropped at 1.5 s in the middle of a full window."""
    raw = {
        "link": {"rate_mbps": 100, "rtt_ms": 40, "buffer_bdp": 1},
        "flows": [{"cc": "cubic"}],
        "duration_s": 2,
        "seed": 0,
        "comp_sack_nr": comp,
    }
    eng = _Recorder(parse(raw))
    f = eng.flows[0]
    eng.run(until=1.5)
    lim = eng.limit_time
    eng.limit_time = -1.0
    nxt = f.snd_nxt
    _until(eng, 1.5, lambda: f.snd_nxt > nxt, step=0.00001)
    eng.limit_time = lim
    eng.run(until=2.0)
    return eng


@pure_python  # replaces/overrides a method compiled code calls directly
def test_receiver_compresses_sacks_after_three_dupacks() -> None:
    """__tcp_ack_snd_check: with out-of-order data queued the first TCP_FASTRETRANS_THRESH (3)
    duplicate ACKs go at once, then the receiver waits min(tcp_comp_sack_delay_ns = 1 ms,
    5 % of its 40 ms RTT) = 1 ms or tcp_comp_sack_nr segments; with tcp_comp_sack_nr = 0 every
    out-of-order segment is SACKed at once."""
    on = _one_drop(44)
    off = _one_drop(0)
    f_on, f_off = on.flows[0], off.flows[0]
    assert f_on.comp_delay == pytest.approx(1e-3)
    first = f_off.events and next(e for e in f_off.events if e["type"] == "loss")
    assert first
    dup_on = [a for a in on.log if a[2] > 0 and a[0] > 1.5]
    dup_off = [a for a in off.log if a[2] > 0 and a[0] > 1.5]
    # the first three SACKs each carry one more out-of-order segment, in both runs
    assert [a[2] for a in dup_on[:3]] == [1, 2, 3] == [a[2] for a in dup_off[:3]]
    # then compression: fewer ACKs, each carrying several segments, at most 44
    assert len(dup_on) < len(dup_off) / 2
    jumps = [b[2] - a[2] for a, b in zip(dup_on, dup_on[1:], strict=False) if b[1] == a[1]]
    assert max(jumps) > 1 and max(jumps) <= 44
    # and one ACK holds segments back for no more than the 1 ms delay (8 segments at 0.12 ms)
    assert max(jumps) <= 10
    assert f_on.sacks_compressed > 0 and f_off.sacks_compressed == 0
    told = [e for e in f_on.events if e["type"] == "sack_compressed"]
    assert told and told[0]["detail"]["comp_sack_nr"] == 44


def test_compression_delay_is_five_percent_of_a_short_rtt() -> None:
    """The delay is min(tcp_comp_sack_delay_ns, rtt/20): 0.5 ms on a 10 ms path, 1 ms on 40."""
    assert loss.comp_delay(10_000) == pytest.approx(0.0005)
    assert loss.comp_delay(40_000) == pytest.approx(0.001)


def test_comp_sack_nr_is_a_parameter() -> None:
    """comp_sack_nr defaults to the sysctl's 44, round-trips, and must be 0-255."""
    base = {"link": LINK, "flows": [{"cc": "reno"}]}
    assert parse(base).comp_sack_nr == 44
    p = parse({**base, "comp_sack_nr": 0})
    assert p.comp_sack_nr == 0 and parse(dump(p)) == p
    with pytest.raises(ParamError):
        parse({**base, "comp_sack_nr": 256})


# -- slow-start rounds ------------------------------------------------------------------------


def test_slow_start_preset_has_one_step_per_round() -> None:
    """A round ends when a segment sent after it began is delivered (bbr_update_bw's
    next_rtt_delivered marker); Reno's tcp_slow_start adds one segment per segment ACKed, so
    each round delivers the window it started with and doubles it: 10, 20, 40, 80; the fifth
    (from 160) is cut short by the first loss, detected before it doubles again."""
    preset = next(p for p in PRESETS if p.slug == "slow-start")
    tr = run_trace(preset.params)
    rounds = [f for f in tr.frames if f.op == "round"]
    starts = [f.state["cwnd_start"] for f in rounds]  # type: ignore[typeddict-item]
    assert starts == [10, 20, 40, 80]
    for fr in rounds:
        st: Any = fr.state
        assert st["delivered"] == st["cwnd_start"] and st["cwnd"] == 2 * st["cwnd_start"]
        assert fr.source is not None and fr.source.function == "tcp_slow_start"
    first_loss = next(f for f in tr.frames if f.op == "loss")
    assert all(f.index < first_loss.index for f in rounds)
    assert 160 < first_loss.state["cwnd"] < 320  # type: ignore[operator]
    gaps = [b.time - a.time for a, b in zip(rounds, rounds[1:], strict=False)]  # type: ignore[operator]
    assert all(0.04 <= g <= 0.06 for g in gaps)  # one round trip each: 40 ms + queueing


def test_rounds_are_bounded_and_stop_with_slow_start() -> None:
    """At most loss.MAX_ROUNDS per flow, only while the CC is in slow start (BBR: STARTUP)."""
    for slug in ("bbr-cycle", "cubic-lfn"):
        preset = next(p for p in PRESETS if p.slug == slug)
        tr = run_trace(preset.params)
        rounds = [f for f in tr.frames if f.op == "round"]
        assert 3 <= len(rounds) <= loss.MAX_ROUNDS
        end = next(f.index for f in tr.frames if f.op in ("hystart_exit", "bbr_mode", "loss"))
        assert all(f.index < end for f in rounds)


def test_slow_start_lesson_notes_sit_on_the_round_steps(client: Any) -> None:
    """The lesson's "## Step N" notes are keyed by frame index: the SYN note is on the SYN, each
    round note on a round step, the first-loss note on the loss step and the compression note on
    the compressed SACK (content/cwnd-slow-start.md, merged trace: SYN, start, four rounds)."""
    preset = next(p for p in PRESETS if p.slug == "slow-start")
    frames = run_trace(preset.params).frames
    for step, op, text in (
        (0, "syn", "The SYN."),
        (2, "round", "Round trip 1 ends"),
        (5, "round", "Round 4: 80 → 160"),
        (6, "loss", "The first loss arrives at cwnd 270"),
        (8, "sack_compressed", "SACK compression at the receiver"),
        (13, "recovery_exit", "Recovery ends at cwnd 68"),
    ):
        assert frames[step].op == op
        html = client.get(f"/explainers/cwnd/presets/slow-start?step={step}").text
        start = html.index(f'<template id="frame-{step}"')
        card = html[start : html.index("</template>", start)]
        assert text in card, (step, text)


_NOTED_OPS = ("round", "loss", "cwr", "hystart_exit")


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.slug)
def test_lesson_notes_sit_on_frames_that_carry_their_numbers(preset: Any) -> None:
    """Both languages note the same steps, every note is on a frame of the preset's trace, and a
    note on a round, loss, CWR or HyStart step quotes that frame's cwnd or ssthresh (notes are
    keyed by 0-based frame index, app/web/content.py)."""
    import re
    from pathlib import Path

    from app.web.content import parse_lesson

    root = Path(__file__).resolve().parents[3] / "content"
    frames = run_trace(preset.params).frames
    notes = {
        lang: parse_lesson(
            preset.lesson, (root / sub / f"{preset.lesson}.md").read_text()
        ).step_notes
        for lang, sub in (("en", ""), ("zh-CN", "zh-CN"))
    }
    assert notes["en"] and set(notes["en"]) == set(notes["zh-CN"])
    for step, html in (*notes["en"].items(), *notes["zh-CN"].items()):
        assert 0 <= step < len(frames), (preset.slug, step)
        f = frames[step]
        if f.op in _NOTED_OPS:
            quoted = {f.state["cwnd"], f.state["ssthresh"]} - {None}
            assert any(re.search(rf"(?<!\d)(?<!\d\.){n}(?!\d|\.\d)", html) for n in quoted), (
                step,
                f.op,
            )
