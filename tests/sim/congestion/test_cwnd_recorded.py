"""The recorded-cwnd overlay (app.sim.congestion.recorded) and the sawtooth numbers both of its
sides are measured with (app.sim.congestion.sawtooth), on recordings the tests make: hand-made
series with numbers worked out below, and recordings made from the model's own CUBIC and Reno
runs, whose multiplicative decrease must come out as the algorithm's in both columns."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from app.sim.congestion import parse, run
from app.sim.congestion.params import MAX_PACKET_EVENTS
from app.sim.congestion.recorded import MAX_FRAMES, RecordedParams, recorded_trace
from app.sim.congestion.sawtooth import Reduction, Series, measure, reductions
from app.sim.core import ParamError

LINK = {"rate_mbit": 20, "rtt_ms": 40, "buffer_bytes": 100_000, "mtu": 1500}


def _model_run(cc: str, sample_ms: float) -> dict[str, Any]:
    raw = {
        "link": {"rate_mbps": 20, "rtt_ms": 40, "buffer_bytes": 100_000},
        "flows": [{"cc": cc}],
        "duration_s": 20,
        "sample_ms": sample_ms,
    }
    flow: dict[str, Any] = run(parse(raw)).series["flows"][0]
    return flow


def _as_probe(cwnd: int, ssthresh: int | None, ca_state: str) -> int | None:
    """What tcp_probe prints as ssthresh: tcp_current_ssthresh (include/net/tcp.h)."""
    if ssthresh is None or ca_state in ("CWR", "Recovery"):
        return ssthresh
    return max(ssthresh, (cwnd >> 1) + (cwnd >> 2))


@functools.cache
def _recording(cc: str, view: str) -> dict[str, Any]:
    """A cwnd recording of the model's own run, sampled every 2 ms (the overlay's model side
    samples every 5 ms): ssthresh as tcp_probe reports it ("probe") or the raw snd_ssthresh."""
    flow = _model_run(cc, 2)
    t0 = flow["t"][0]
    points = []
    for t, c, s, st, r in zip(
        flow["t"], flow["cwnd"], flow["ssthresh"], flow["ca_state"], flow["srtt_ms"], strict=True
    ):
        ss = _as_probe(c, s, st) if view == "probe" else s
        points.append(
            {
                "t_ms": round((t - t0) * 1000 + 5000.0, 3),  # recorded 5 s after tracing began
                "cwnd": c,
                "ssthresh": 2147483647 if ss is None else ss,  # tcp_probe's unset value
                "srtt_us": round(r * 1000),
            }
        )
    return {
        "kind": "cwnd",
        "link": dict(LINK),
        "kernel": {"release": "6.4.0-test", "machine": "x86_64"},
        "sysctls": {"net.ipv4.tcp_congestion_control": cc},
        "duration_ms": 20_000,
        "flows": [
            {"cc": "cubic", "src": "10.0.0.1:5201", "dst": "10.0.0.2:40000", "series": points[:3]},
            {"cc": cc, "src": "10.0.0.1:40312", "dst": "10.0.0.2:5201", "series": points},
        ],
    }


@pytest.mark.parametrize(("cc", "beta"), [("cubic", 0.7), ("reno", 0.5)])
@pytest.mark.parametrize("view", ["probe", "raw"])
def test_decrease_is_the_algorithms_in_both_columns(cc: str, beta: float, view: str) -> None:
    trace = recorded_trace(_recording(cc, view), {})
    metrics = trace.summary["metrics"]
    assert trace.summary["flow"] == 1  # the flow with the most samples, not iperf3's control one
    for side in ("machine", "model"):
        m = metrics[side]
        assert m["decrease"] == pytest.approx(beta, abs=0.05), (side, m)
        assert m["reductions"] >= 3, (side, m)
    machine, model = metrics["machine"], metrics["model"]
    assert machine["reductions"] == model["reductions"]
    # the same run seen twice: the same sawtooth, within the two sampling periods
    assert machine["period_s"] == pytest.approx(model["period_s"], rel=0.05)
    assert machine["peak"] == pytest.approx(model["peak"], rel=0.05)
    assert machine["first_loss_s"] == pytest.approx(model["first_loss_s"], abs=0.02)
    assert machine["srtt_mean_ms"] == pytest.approx(model["srtt_mean_ms"], rel=0.05)


def test_frames_step_through_time_with_every_reduction() -> None:
    trace = recorded_trace(_recording("cubic", "probe"), {})
    frames = trace.frames
    assert 60 < len(frames) <= MAX_FRAMES
    times = [f.time for f in frames]
    assert times == sorted(times)
    kinds = [f.state["kind"] for f in frames]
    assert kinds.count("machine") == trace.summary["metrics"]["machine"]["reductions"]
    assert kinds.count("model") == trace.summary["metrics"]["model"]["reductions"]
    first = next(f for f in frames if f.state["kind"] == "machine")
    assert first.mark == "loss" and first.source is not None
    assert first.state["factor"] == pytest.approx(0.7, abs=0.05)
    words = first.narration.render()
    assert "machine reduces its window" in words and "0.7" in words
    # values at the cursor: both sides, sample-and-hold
    mid = frames[len(frames) // 2].state
    assert mid["machine"]["cwnd"] is not None and mid["model"]["cwnd"] is not None
    assert isinstance(trace.params, RecordedParams) and trace.params.cc == "cubic"
    series = trace.series
    assert [str(f["label"]) for f in series["flows"]] == ["machine", "model"]
    assert len(series["flows"][0]["t"]) == len(_recording("cubic", "probe")["flows"][1]["series"])


def test_hand_made_series_with_ssthresh() -> None:
    """Slow start to 80, a loss to ssthresh 56 (× 0.7), congestion avoidance where tcp_probe's
    ¾ cwnd lifts ssthresh to 60 (not a reduction), then a loss to 40 (× 0.5)."""
    s = Series(
        t=[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        cwnd=[10, 20, 40, 80, 60, 56, 60, 70, 80, 40],
        ssthresh=[None, None, None, None, 56, 56, 56, 56, 60, 40],
        srtt=[40, 40, 50, 60, 60, 50, 50, 55, 60, 60],
    )
    assert reductions(s) == (
        Reduction(t=4, before=80, after=56),
        Reduction(t=9, before=80, after=40),
    )
    m = measure(s)
    assert m.decrease == pytest.approx(0.6)
    assert m.peak == 80  # the reductions after the first
    assert m.period == 5
    assert m.first_loss == 4
    assert m.srtt_mean == pytest.approx(52.5)


def test_hand_made_series_without_ssthresh_uses_cwnd() -> None:
    s = Series(
        t=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        cwnd=[10, 20, 40, 80, 40, 41, 42, 43, 44, 45, 20, 21],
        ssthresh=[None] * 12,
        srtt=[None, 10, 10, 10, 10, 10, 20, 20, 20, 20, 20, None],
    )
    m = measure(s)
    assert m.reductions == (
        Reduction(t=5, before=80, after=40),
        Reduction(t=11, before=45, after=20),
    )
    assert m.decrease == pytest.approx((0.5 + 20 / 45) / 2)
    assert m.peak == 45 and m.period == 6 and m.first_loss == 4
    assert m.srtt_mean == pytest.approx(15.0)  # five seconds at 10 ms, five at 20 ms


def test_hystart_setting_ssthresh_is_not_a_reduction() -> None:
    s = Series(t=[0, 1, 2], cwnd=[50, 60, 61], ssthresh=[None, 60, 60], srtt=[1, 1, 1])
    assert reductions(s) == ()
    assert measure(s).decrease is None and measure(s).period is None


def test_a_series_needs_one_value_per_time() -> None:
    with pytest.raises(ValueError):
        Series(t=[0, 1], cwnd=[1], ssthresh=[None, None], srtt=[None, None])


def test_overrides_change_the_model() -> None:
    rec = _recording("cubic", "probe")
    trace = recorded_trace(rec, {"rate_mbit": 10, "cc": "reno", "duration_ms": 5000})
    p = trace.params
    assert (p.rate_mbit, p.cc, p.duration_ms) == (10, "reno", 5000)
    assert p.model.link.rate_mbps == 10 and p.model.flows[0].cc == "reno"
    assert p.model.duration_s == 5
    assert trace.summary["metrics"]["model"]["decrease"] == pytest.approx(0.5, abs=0.05)


def test_a_recording_without_link_gets_it_estimated() -> None:
    rec = {**_recording("cubic", "probe"), "link": None}
    trace = recorded_trace(rec, {})
    p = trace.params
    assert set(p.estimated) == {"rate_mbit", "rtt_ms", "buffer_bytes"}
    assert p.rate_mbit == pytest.approx(20, rel=0.15)
    assert p.rtt_ms == pytest.approx(40, rel=0.1)
    assert p.buffer_bytes == pytest.approx(100_000, rel=0.25)
    assert "estimated" in trace.frames[0].narration.render()
    # an override replaces an estimate
    assert recorded_trace(rec, {"rtt_ms": 30}).params.estimated == ("rate_mbit", "buffer_bytes")


def test_a_long_fast_recording_runs_as_much_of_the_model_as_the_limit_allows() -> None:
    """60 s at 1 Gbit/s is over the model's work limit: without a duration of the user's the
    model runs the part that fits and says so; asked for all of it, the field is named."""
    rec = {**_recording("cubic", "probe"), "duration_ms": 60_000}
    rec["link"] = {**LINK, "rate_mbit": 1000, "buffer_bytes": 5_000_000}
    trace = recorded_trace(rec, {})
    p = trace.params
    assert p.shortened and 100 <= p.duration_ms < 60_000
    assert p.model.estimated_events <= MAX_PACKET_EVENTS
    assert trace.summary["shortened"] is True
    assert "first" in trace.frames[0].narration.render()
    with pytest.raises(ParamError) as err:
        recorded_trace(rec, {"duration_ms": 60_000})
    assert [i.loc for i in err.value.issues] == [("duration_ms",)]
    assert not recorded_trace(_recording("cubic", "probe"), {}).params.shortened


@pytest.mark.parametrize(
    ("overrides", "loc"),
    [
        ({"rate_mbit": "fast"}, ("rate_mbit",)),
        ({"rate_mbit": -1}, ("rate_mbit",)),
        ({"rate_mbit": 1e9}, ("rate_mbit",)),
        ({"rtt_ms": 0}, ("rtt_ms",)),
        ({"buffer_bytes": 10}, ("buffer_bytes",)),
        ({"cc": "vegas"}, ("cc",)),
        ({"cc": 3}, ("cc",)),
        ({"duration_ms": -5}, ("duration_ms",)),
        ({"duration_ms": 600_000, "rate_mbit": 10_000}, ("duration_ms",)),
        ({"flow": 2}, ("flow",)),
        ({"flow": "first"}, ("flow",)),
        ({"colour": "red"}, ("colour",)),
    ],
)
def test_bad_overrides_name_the_field(overrides: dict[str, Any], loc: tuple[str, ...]) -> None:
    with pytest.raises(ParamError) as err:
        recorded_trace(_recording("cubic", "probe"), overrides)
    assert [i.loc for i in err.value.issues] == [loc]


def test_bad_recordings_name_the_field() -> None:
    rec = _recording("reno", "probe")
    cases: list[tuple[dict[str, Any], tuple[str | int, ...]]] = [
        ({**rec, "flows": []}, ("flows",)),
        ({**rec, "link": {**LINK, "rtt_ms": -3}}, ("link", "rtt_ms")),
        ({**rec, "flows": [{"cc": "reno", "series": []}]}, ("flows", 0, "series")),
        ({**rec, "flows": [{"cc": "reno", "series": [{"t_ms": 0, "cwnd": "x"}]}]},
         ("flows", 0, "series", 0, "cwnd")),
        ({**rec, "flows": [{"cc": "reno", "series": [7]}]}, ("flows", 0, "series", 0)),
        ({**rec, "flows": [{"cc": "htcp", "series": [{"t_ms": 0, "cwnd": 10}]}]},
         ("flows", 0, "cc")),
    ]  # fmt: skip
    for bad, loc in cases:
        with pytest.raises(ParamError) as err:
            recorded_trace(bad, {})
        assert [i.loc for i in err.value.issues] == [loc], bad
    with pytest.raises(ParamError):
        recorded_trace(rec, ["rate_mbit"])  # type: ignore[arg-type]
