"""Parameter validation: every bad field is named with a human message; dump round-trips."""

from __future__ import annotations

import re

import pytest
from cwndhelp import raw

from app.sim.congestion import dump, parse
from app.sim.congestion.params import MAX_PACKET_EVENTS, CwndParams
from app.sim.core import ParamError


def issues(r: object) -> dict[tuple[str | int, ...], str]:
    with pytest.raises(ParamError) as e:
        parse(r)
    return {i.loc: i.msg for i in e.value.issues}


def test_parse_the_api_example() -> None:
    """The issue's example request parses with its defaults."""
    p = parse(
        {
            "link": {"rate_mbps": 100, "rtt_ms": 40, "buffer_packets": 333},
            "flows": [{"cc": "cubic", "start_s": 0}],
            "duration_s": 60,
            "mss": 1448,
            "seed": 0,
        }
    )
    assert isinstance(p, CwndParams)
    assert p.sample_ms == 10 and p.wire_bytes == 1500
    assert p.buffer_limit_packets == 333
    assert p.bdp_packets == pytest.approx(333.33, abs=0.01)


@pytest.mark.parametrize(
    "r",
    [
        raw("cubic"),
        raw(
            ["bbr", "reno"],
            link={"rate_mbps": 10, "rtt_ms": 20, "buffer_bdp": 2.5, "loss_rate": 0.01},
        ),
        {
            "link": {"rate_mbps": 0.1, "rtt_ms": 200, "buffer_bytes": 15000},
            "flows": [{"cc": "reno", "start_s": 1.5, "rtt_ms": 80}],
            "duration_s": 10,
        },
    ],
)
def test_dump_round_trips(r: dict[str, object]) -> None:
    """parse(dump(p)) == p, and dump gives JSON-shaped values."""
    p = parse(r)
    assert parse(dump(p)) == p
    assert dump(parse(dump(p))) == dump(p)


def test_buffer_forms() -> None:
    """buffer_bytes counts whole 1500-byte packets; buffer_bdp rounds the BDP in packets."""
    assert (
        parse(
            raw("cubic", link={"rate_mbps": 100, "rtt_ms": 40, "buffer_bytes": 4000})
        ).buffer_limit_packets
        == 2
    )
    assert (
        parse(
            raw("cubic", link={"rate_mbps": 100, "rtt_ms": 40, "buffer_bdp": 0.5})
        ).buffer_limit_packets
        == 167
    )
    assert (
        parse(
            raw("cubic", link={"rate_mbps": 0.1, "rtt_ms": 10, "buffer_bdp": 1})
        ).buffer_limit_packets
        == 1
    )  # never below one packet


def test_non_positive_rate_names_the_field() -> None:
    """rate_mbps 0 → ("link","rate_mbps"), with the value given."""
    got = issues(raw("cubic", link={"rate_mbps": 0, "rtt_ms": 40, "buffer_packets": 10}))
    assert got == {("link", "rate_mbps"): "rate_mbps must be > 0 Mbit/s; you gave 0"}


def test_rate_out_of_range() -> None:
    """Rates outside 0.1 Mbit/s – 10 Gbit/s are refused."""
    for rate in (0.05, 20_000):
        got = issues(raw("cubic", link={"rate_mbps": rate, "rtt_ms": 40, "buffer_packets": 10}))
        assert "0.1 Mbit/s – 10 Gbit/s" in got[("link", "rate_mbps")]


def test_flow_count_limits() -> None:
    """No flows, or more than 16, are refused."""
    assert ("flows",) in issues({**raw("cubic"), "flows": []})
    msg = issues({**raw("cubic"), "flows": [{"cc": "reno"}] * 17})[("flows",)]
    assert "at most 16" in msg and "17" in msg


def test_unknown_cc_lists_valid_ones() -> None:
    """An unknown cc names the flow and lists reno, cubic, bbr."""
    got = issues({**raw("cubic"), "flows": [{"cc": "cubic"}, {"cc": "vegas"}]})
    assert list(got) == [("flows", 1, "cc")]
    assert "reno, cubic, bbr" in got[("flows", 1, "cc")] and "vegas" in got[("flows", 1, "cc")]


@pytest.mark.parametrize("duration", [0, -1, 601])
def test_duration_limits(duration: float) -> None:
    """duration_s must be in (0, 600]."""
    assert ("duration_s",) in issues(raw("cubic", duration=duration))


def test_buffer_spec_needs_exactly_one() -> None:
    """Zero or two buffer fields are an error; so is a zero-packet buffer."""
    none = issues(raw("cubic", link={"rate_mbps": 10, "rtt_ms": 40}))
    two = issues(
        raw("cubic", link={"rate_mbps": 10, "rtt_ms": 40, "buffer_packets": 5, "buffer_bdp": 1})
    )
    assert "exactly one" in none[("link", "buffer_packets")]
    assert "buffer_packets, buffer_bdp" in two[("link", "buffer_packets")]
    assert ("link", "buffer_packets") in issues(
        raw("cubic", link={"rate_mbps": 10, "rtt_ms": 40, "buffer_packets": 0})
    )
    assert ("link", "buffer_bytes") in issues(
        raw("cubic", link={"rate_mbps": 10, "rtt_ms": 40, "buffer_bytes": 100})
    )


def test_types_are_checked_and_bool_is_not_a_number() -> None:
    """Wrong types are named; true is not a rate."""
    got = issues(
        {
            **raw("cubic", link={"rate_mbps": True, "rtt_ms": "40", "buffer_packets": 2.5}),
            "seed": "x",
        }
    )
    assert got[("link", "rate_mbps")] == "rate_mbps must be a number; you gave a boolean"
    assert "the text '40'" in got[("link", "rtt_ms")]
    assert "whole number" in got[("link", "buffer_packets")]
    assert ("seed",) in got


def test_unknown_fields_are_refused() -> None:
    """Typos at any level are reported where they are."""
    got = issues(
        {
            **raw("cubic"),
            "duration": 5,
            "link": {**raw("cubic")["link"], "delay_ms": 3},
            "flows": [{"cc": "cubic", "start": 1}],
        }
    )
    assert set(got) == {("duration",), ("link", "delay_ms"), ("flows", 0, "start")}


def test_start_after_end_is_refused() -> None:
    """A flow must start before the run ends."""
    r = raw("cubic", duration=5)
    r["flows"][0]["start_s"] = 5
    assert ("flows", 0, "start_s") in issues(r)


def test_large_scenarios_are_refused_with_a_way_to_shrink_them() -> None:
    """Beyond ~20 M packet events: a 422-style error that says how to shrink the scenario."""
    got = issues(
        raw("cubic", duration=600, link={"rate_mbps": 10_000, "rtt_ms": 40, "buffer_bdp": 1})
    )
    msg = got[("duration_s",)]
    assert "million packet events" in msg and "Shorten duration_s to ≤" in msg
    assert "lower link.rate_mbps to ≤" in msg
    # the suggested sizes fit
    assert (
        parse(
            raw("cubic", duration=0.9, link={"rate_mbps": 10_000, "rtt_ms": 40, "buffer_bdp": 1})
        ).estimated_events
        <= MAX_PACKET_EVENTS
    )


def test_sample_count_is_bounded() -> None:
    """sample_ms too small for the duration is refused with the smallest allowed value."""
    got = issues(raw("cubic", duration=600, sample_ms=1))
    assert "sample_ms ≥ 10" in got[("sample_ms",)]


def test_bbr_events_count_more_so_no_allowed_run_costs_more_than_a_few_seconds() -> None:
    """BBR's per-packet pacing and model updates make its events dearer (1.5×; 3× beside a RED
    queue, whose marks it ignores): a 16-flow mixed run with BBR on a RED/ECN link at 10 Gbit/s
    (14 s of CPU when it was counted like CUBIC) is refused with advice, and the advised
    duration fits the limit."""
    link = {"rate_mbps": 10_000, "rtt_ms": 1, "buffer_bdp": 4, "loss_rate": 0.02, "aqm": "red-ecn"}
    mixed = [{"cc": cc, "tcp_ecn": 1} for cc in ("cubic", "reno", "bbr", "cubic") * 4]
    raw_run = {"link": link, "flows": mixed, "duration_s": 1.6}
    got = issues(raw_run)[("duration_s",)]
    assert "BBR's counted ×3" in got
    advised = float(re.search(r"duration_s to ≤ ([0-9.]+) s", got).group(1))  # type: ignore[union-attr]
    fits = parse({**raw_run, "duration_s": advised})
    assert fits.estimated_events <= MAX_PACKET_EVENTS
    cubic_only = parse({**raw_run, "flows": [{"cc": "cubic"}] * 16, "duration_s": advised})
    assert fits.estimated_events == pytest.approx(3 * cubic_only.estimated_events, rel=1e-6)
    droptail = parse(
        {**raw_run, "link": {**link, "aqm": "droptail"}, "duration_s": advised, "flows": mixed}
    )
    assert droptail.estimated_events == pytest.approx(1.5 * cubic_only.estimated_events, rel=1e-6)
