"""The public JSON (POST /api/v1/explainers/tcp/run) and the RFC/Linux separation."""

from __future__ import annotations

import json

import pytest
from tcphelp import EX, run_preset

from app.sim.core.i18n import Message
from app.sim.tcp.sock import LINUX_STATES, RFC_STATES


@pytest.mark.parametrize("slug", [p.slug for p in EX.presets])
def test_public_json_shape(slug: str) -> None:
    """Frames carry index, t_ms, event, states, linux_states, segment (or null) and errors,
    exactly as the issue's JSON API section lists; the body is JSON-serialisable."""
    body = EX.public_json(run_preset(slug))
    json.dumps(body)
    assert body["explainer"] == "tcp"
    for i, f in enumerate(body["frames"]):
        assert f["index"] == i
        assert {"index", "t_ms", "event", "states", "linux_states", "segment", "errors"} <= set(f)
        assert set(f["states"]) == {"client", "server"}
        assert set(f["linux_states"]) == {"client", "server"}
        seg = f["segment"]
        if seg is not None:
            assert {"from", "flags", "seq", "ack", "len", "lost"} <= set(seg)
            assert {"window", "window_scaled", "options"} <= set(seg)
            assert isinstance(seg["flags"], list) and seg["from"] in ("client", "server")
        for e in f["errors"]:
            assert e["errno"].startswith("E")


@pytest.mark.parametrize("slug", [p.slug for p in EX.presets])
def test_rfc_view_never_shows_linux_objects(slug: str) -> None:
    """states uses only RFC 9293 names; linux_states only the kernel's TCP_* names."""
    body = EX.public_json(run_preset(slug))
    for f in body["frames"]:
        for name in f["states"].values():
            assert name in RFC_STATES
            assert "NEW_SYN_RECV" not in name and not name.startswith("TCP_")
        for objs in f["linux_states"].values():
            for o in objs:
                assert o["state"] in LINUX_STATES
                assert o["object"] in ("listener", "request_sock", "sock", "timewait_sock")
                assert (o["tw_substate"] is not None) == (o["object"] == "timewait_sock")


def test_errors_are_frame_results_not_failures() -> None:
    """A refused connect is a frame whose result is the errno (a declared result kind)."""
    tr = run_preset("closed-port")
    results = [f.result for f in tr.frames]
    assert "econnrefused" in results
    keys = {k.key for k in EX.result_kinds}
    assert set(results) <= keys
    body = EX.public_json(tr)
    assert {"endpoint": "client", "call": "connect", "errno": "ECONNREFUSED"} in [
        e for f in body["frames"] for e in f["errors"]
    ]


def test_narration_is_messages_with_sources() -> None:
    """Every frame narrates with a Message whose placeholders are all filled, and every step
    after the opening frame cites a Linux 6.4 function."""
    for p in EX.presets:
        tr = run_preset(p.slug)
        for f in tr.frames:
            assert isinstance(f.narration, Message)
            for m in (f.narration, *f.notes):
                m.id.format_map(m.params)  # raises on a missing placeholder
        assert all(f.source is not None for f in tr.frames if f.op != "start")


def test_determinism() -> None:
    """Two runs of the same params give identical public JSON."""
    for slug in ("zero-window", "lost-last-ack", "simultaneous-open"):
        assert EX.public_json(run_preset(slug)) == EX.public_json(run_preset(slug))


def test_progress_is_reported_and_cancellable() -> None:
    """run() reports progress in the cost unit up to the total and lets Cancelled through."""
    from app.sim.core.explainer import Cancelled

    p = EX.parse(dict(EX.preset("zero-window").params))  # type: ignore[union-attr]
    seen: list[tuple[float, float]] = []
    EX.run(p, lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] == EX.cost(p)
    assert all(d <= t for d, t in seen)

    def stop(d: float, t: float) -> None:
        raise Cancelled

    with pytest.raises(Cancelled):
        EX.run(p, stop)
