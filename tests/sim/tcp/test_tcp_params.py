"""parse/dump and the 422-style errors of the TCP explainer's input."""

from __future__ import annotations

from typing import Any

import pytest
from tcphelp import EX, OPEN, c

from app.sim.core.errors import ParamError


def _issues(raw: Any) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(ParamError) as ei:
        EX.parse(raw)
    return [(i.loc, i.msg) for i in ei.value.issues]


def test_round_trip_presets() -> None:
    """parse(dump(p)) == p for every preset, and dump is JSON-shaped."""
    import json

    for pr in EX.presets:
        p = EX.parse(dict(pr.params))
        d = EX.dump(p)
        assert EX.parse(json.loads(json.dumps(d))) == p


def test_issue_example_parses() -> None:
    """The request body quoted in the issue's JSON API section is valid."""
    raw = {
        "script": [
            c(0, "server", "listen"),
            c(0, "client", "connect"),
            c(10, "client", "send", bytes=1000),
            c(20, "client", "shutdown", how="SHUT_WR"),
        ],
        "network": [{"drop": {"from": "client", "nth": 2}}],
        "until_ms": 200000,
    }
    p = EX.parse(raw)
    assert p.network[0].src == "client" and p.network[0].nth == 2


def test_unknown_call_names_entry_index() -> None:
    """An unknown call is reported at script.<index>.call."""
    issues = _issues({"script": [*OPEN, c(5, "client", "sendfile")]})
    assert issues == [(("script", 3, "call"), "unknown call 'sendfile'")]


def test_unknown_endpoint() -> None:
    """An endpoint other than client/server is reported with its index."""
    issues = _issues({"script": [c(0, "router", "listen")]})
    assert issues[0][0] == ("script", 0, "endpoint") and "unknown endpoint" in issues[0][1]


def test_negative_time() -> None:
    """A negative t_ms is refused."""
    assert _issues({"script": [c(-1, "client", "connect")]}) == [
        (("script", 0, "t_ms"), "negative time")
    ]


def test_too_many_events() -> None:
    """More than 1000 script events are refused as a whole."""
    issues = _issues({"script": [c(0, "client", "recv")] * 1001})
    assert issues[0][0] == ("script",) and "more than 1000" in issues[0][1]


def test_until_over_an_hour() -> None:
    """until_ms above one hour is refused."""
    issues = _issues({"script": [], "until_ms": 3_600_001})
    assert issues == [(("until_ms",), "over 1 hour (3600000 ms)")]


def test_every_issue_at_once() -> None:
    """Several problems are all reported in one ParamError."""
    issues = _issues(
        {
            "script": [c(-5, "nobody", "connect"), c(0, "client", "dance")],
            "network": [{"drop": {"from": "x", "nth": 0}}, {"teleport": {}}],
            "until_ms": 10**9,
        }
    )
    locs = [i[0] for i in issues]
    assert ("script", 0, "t_ms") in locs and ("script", 0, "endpoint") in locs
    assert ("script", 1, "call") in locs and ("until_ms",) in locs
    assert ("network", 0, "drop", "from") in locs and ("network", 0, "drop", "nth") in locs
    assert ("network", 1, "teleport") in locs


@pytest.mark.parametrize(
    ("entry", "loc"),
    [
        (c(0, "client", "send"), "bytes"),
        (c(0, "client", "close", bytes=3), "bytes"),
        (c(0, "client", "shutdown", how="SHUT_UP"), "how"),
        (c(0, "client", "connect", backlog=3), "backlog"),
        (c(0, "client", "listen", nonblock=True), "nonblock"),
        (c(0, "client", "connect", colour="red"), "colour"),
        ({"t_ms": "soon", "endpoint": "client", "call": "connect"}, "t_ms"),
    ],
)
def test_bad_fields(entry: dict[str, Any], loc: str) -> None:
    """Fields a call does not take, or with bad values, are named."""
    assert _issues({"script": [entry]})[0][0] == ("script", 0, loc)


def test_cost_limit_is_enforced() -> None:
    """parse refuses params whose cost exceeds limits.max_work."""
    raw = {"script": [c(0, "client", "send", bytes=10_000_000)] * 10, "mss": 64}
    issues = _issues(raw)
    assert issues[0][0] == ("script",) and "limit" in issues[0][1]


def test_cost_grows_with_work() -> None:
    """cost counts calls and data segments."""
    small = EX.parse({"script": OPEN})
    big = EX.parse({"script": [*OPEN, c(10, "client", "send", bytes=150_000)]})
    assert EX.cost(big) > EX.cost(small) + 300
