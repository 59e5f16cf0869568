"""Random scripts: the simulation never crashes, stays deterministic, and never leaves an
endpoint in an impossible state."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tcphelp import EX

from app.sim.tcp.params import CALLS, HOWS
from app.sim.tcp.sock import LINUX_STATES, RFC_STATES
from app.sim.tcp.state import TcpState


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    call = draw(st.sampled_from(CALLS))
    d: dict[str, Any] = {
        "t_ms": draw(st.integers(0, 3000)),
        "endpoint": draw(st.sampled_from(["client", "server"])),
        "call": call,
    }
    if call == "send":
        d["bytes"] = draw(st.integers(1, 6000))
    if call == "shutdown":
        d["how"] = draw(st.sampled_from(HOWS))
    if call == "connect":
        d["nonblock"] = draw(st.booleans())
        d["keepalive"] = draw(st.booleans())
    if call == "listen" and draw(st.booleans()):
        d["backlog"] = draw(st.integers(0, 3))
        d["queued"] = draw(st.integers(0, 3))
        d["half_open"] = draw(st.integers(0, 4))
    return d


@st.composite
def net_events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["drop", "delay", "duplicate", "reorder"]))
    body: dict[str, Any] = {
        "from": draw(st.sampled_from(["client", "server"])),
        "nth": draw(st.integers(1, 12)),
    }
    if kind == "drop":
        body["count"] = draw(st.integers(1, 4))
    if kind == "delay":
        body["ms"] = draw(st.integers(1, 3000))
    return {kind: body}


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    script = draw(st.lists(calls(), max_size=14))
    # most interesting runs need a listener and a connect: add them often
    if draw(st.booleans()):
        script = [
            {"t_ms": 0, "endpoint": "server", "call": "listen"},
            {"t_ms": 0, "endpoint": "client", "call": "connect"},
            *script,
        ]
    return {
        "script": script,
        "network": draw(st.lists(net_events(), max_size=4)),
        "until_ms": draw(st.sampled_from([2000, 20_000, 200_000])),
        "rcvbuf": draw(st.sampled_from([65535, 3000, 500])),
        "mss": draw(st.sampled_from([1000, 536])),
        "sysctl": {"tcp_keepalive_time_s": 5, "tcp_keepalive_intvl_s": 2},
    }


def check_frame(st_: TcpState) -> None:
    t = st_["t_ms"]
    for name, e in st_["endpoints"].items():
        assert e["rfc"] in RFC_STATES, (name, e["rfc"])
        objs = e["linux"]
        kinds = [o["object"] for o in objs]
        assert kinds.count("listener") <= 1 and kinds.count("timewait_sock") <= 1
        for o in objs:
            assert o["state"] in LINUX_STATES
            for tm in o["timers"]:
                assert tm["deadline_ms"] >= t - 1e-6
            if o["object"] == "sock" and o["state"] == "TCP_CLOSE":
                assert o["held_by_app"], "a closed, unheld socket must have been freed"
            if o["object"] == "listener":
                assert o["state"] == "TCP_LISTEN"
            if o["object"] == "request_sock":
                assert o["state"] == "TCP_NEW_SYN_RECV"
        states = {o["state"] for o in objs}
        if e["rfc"] == "TIME_WAIT":
            assert any(o["tw_substate"] == "TCP_TIME_WAIT" for o in objs)
        if e["rfc"] == "LISTEN":
            assert "listener" in kinds
        if e["rfc"] == "SYN_RECEIVED":
            assert "TCP_NEW_SYN_RECV" in states or "TCP_SYN_RECV" in states
        if e["rfc"] not in ("CLOSED", "LISTEN", "TIME_WAIT", "SYN_RECEIVED", "FIN_WAIT_2"):
            assert "TCP_" + e["rfc"].replace("FIN_WAIT_", "FIN_WAIT") in states
        if e["snd_una"] is not None and e["snd_nxt"] is not None:
            assert e["snd_una"] <= e["snd_nxt"]
        assert e["recv_queue"] >= 0 and e["send_queue"] >= 0 and e["unsent"] >= 0
        assert e["unsent"] <= e["send_queue"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_scripts_never_crash_or_break_invariants(raw: dict[str, Any]) -> None:
    """Any valid script runs to the end; every frame passes the consistency checks."""
    p = EX.parse(raw)
    tr = EX.run(p)
    assert tr.frames
    for f in tr.frames:
        check_frame(f.state)
    times = [f.state["t_ms"] for f in tr.frames]
    assert times == sorted(times)
    assert times[-1] <= p.until_ms


@settings(max_examples=25, deadline=None)
@given(scenarios())
def test_random_scripts_are_deterministic(raw: dict[str, Any]) -> None:
    """The same params always give the same public JSON."""
    p = EX.parse(raw)
    assert EX.public_json(EX.run(p)) == EX.public_json(EX.run(p))


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_random_round_trip(raw: dict[str, Any]) -> None:
    """parse(dump(parse(raw))) == parse(raw)."""
    p = EX.parse(raw)
    assert EX.parse(EX.dump(p)) == p
