"""stepscope record files (schema 1): nesting measured before parsing, each field checked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.recordings import recording
from app.recordings.parse import parse
from app.sim.core import ParamError


def base(kind: str = "tcp", **extra: Any) -> dict[str, Any]:
    return {"format": "stepscope-recording", "schema": 1, "kind": kind, "events": [], **extra}


def issues(value: Any) -> list[tuple[str, str]]:
    body = value if isinstance(value, bytes) else json.dumps(value).encode()
    with pytest.raises(ParamError) as caught:
        parse(body, "recording")
    return [(".".join(map(str, i.loc)), i.msg) for i in caught.value.issues]


def test_nesting_is_measured_on_the_bytes_ignoring_strings() -> None:
    assert recording.nesting(b'{"a": [1, {"b": "[[[[[[[[[[["}]}') == 3
    assert recording.nesting(b'["\\"[[[", [[]]]') == 3
    assert recording.nesting(b"[" * 100_000) == 100_000  # no recursion: a count


def test_deep_json_is_refused_before_it_is_parsed() -> None:
    ((loc, text),) = issues(b"[" * 200_000 + b"]" * 200_000)
    assert loc == "" and "200000 levels" in text and "at most 8" in text


def test_each_field_is_named() -> None:
    bad = base(
        "cwnd",
        schema=1,
        link={"rate_mbit": "fast"},
        filter={"port": 70000},
        events=[
            {"t_ms": 5, "event": "tcp:tcp_probe", "fields": {"snd_cwnd": 10}},
            {"t_ms": 1, "event": "sched:sched_switch", "fields": {}},
            {"t_ms": 2, "event": "tcp:tcp_probe", "fields": {}, "stack": ["f"] * 65},
        ],
    )
    locs = {loc for loc, _ in issues(bad)}
    assert {
        "link.rate_mbit",
        "filter.port",
        "events.0.fields.snd_cwnd",
        "events.1.t_ms",
        "events.1.event",
        "events.2.stack",
    } <= locs


def test_format_schema_and_kind_are_required() -> None:
    locs = {loc for loc, _ in issues({"format": "x", "schema": 2, "kind": "tcp", "events": []})}
    assert locs == {"format", "schema"}
    assert {loc for loc, _ in issues(base("nope"))} == {"kind"}


def test_limits_of_fields_and_events() -> None:
    many = {f"f{i}": "1" for i in range(65)}
    ((loc, text),) = issues(
        base("tcp", events=[{"t_ms": 0, "event": "tcp:tcp_send_reset", "fields": many}])
    )
    assert loc == "events.0.fields" and "64" in text
    body = (
        b'{"format":"stepscope-recording","schema":1,"kind":"tcp","events":['
        + b",".join([b"{}"] * (recording.MAX_EVENTS + 1))
        + b"]}"
    )
    ((loc, text),) = issues(body)
    assert loc == "events" and "200000" in text


def test_lone_surrogates_and_huge_numbers_are_named() -> None:
    text = json.dumps(base("tcp", tool="x")).replace('"x"', '"\\ud800"').encode()
    assert [loc for loc, _ in issues(text)] == ["tool"]
    huge = json.dumps(base("tcp")).replace('"schema": 1', '"schema": 1' + "0" * 400).encode()
    assert issues(huge)  # a clear 422, never an OverflowError


def test_not_json_names_the_line() -> None:
    ((loc, text),) = issues(b'{\n"format": ,}')
    assert loc == "line 2" and "line 2" in text
    ((loc, _),) = issues(b"\xff\xfe{}")
    assert loc == "byte 0"


def test_unknown_top_level_keys_are_left_out_and_meta_is_kept() -> None:
    value = base("path", surprise=1, kernel={"release": "6.4.0"}, notes=["lost 3 events"])
    out = parse(json.dumps(value).encode(), "recording")
    assert "surprise" not in out and out["kernel"] == {"release": "6.4.0"}
    assert out["notes"] == ["lost 3 events"]
    assert [loc for loc, _ in issues(base("path", notes="x"))] == ["notes"]
