"""Structural sharing between frames (app.sim.core.share): equal parts held once, values equal."""

from __future__ import annotations

import pickle
from typing import Any

from app.sim.core.share import share
from app.sim.core.trace import Field
from app.sim.tcp.explainer import TcpExplainer


def test_equal_parts_are_the_old_objects_and_the_value_is_unchanged() -> None:
    old: dict[str, Any] = {"a": {"x": 1, "q": [1, 2]}, "b": {"y": [3, 4]}, "t": 1.0}
    new: dict[str, Any] = {"a": {"x": 1, "q": [1, 2]}, "b": {"y": [3, 5]}, "t": 2.0}
    copy = pickle.loads(pickle.dumps(new))
    got = share(new, old)
    assert got == copy
    assert got["a"] is old["a"]  # equal: shared
    assert got["b"] is not old["b"] and got["b"]["y"] is not old["b"]["y"]  # changed: its own
    assert share((Field(name="t", value=1),), (Field(name="t", value=1),))[0] is not None


def test_different_shapes_are_left_alone() -> None:
    assert share([1, 2, 3], [1, 2]) == [1, 2, 3]
    assert share({"a": 1}, None) == {"a": 1}
    assert share({"a": 1}, [1]) == {"a": 1}
    assert share(1, True) == 1 and share(1, True) is not True  # type differs: no swap


def test_a_long_tcp_trace_holds_its_repeated_state_once() -> None:
    ex = TcpExplainer()
    raw = dict(next(p for p in ex.presets if p.slug == "keepalive").params)
    raw.update(network=[], until_ms=120_000)
    raw["sysctl"] = {"tcp_keepalive_time_s": 1, "tcp_keepalive_intvl_s": 1}
    trace = ex.run(ex.parse(raw))
    frames = trace.frames
    assert len(frames) > 100
    shared = sum(
        1
        for a, b in zip(frames, frames[1:], strict=False)
        if b.state["endpoints"]["server"] is a.state["endpoints"]["server"]
    )
    assert shared > len(frames) // 2
    # pickled once: far smaller than the frames pickled one by one
    whole = len(pickle.dumps(frames))
    apart = sum(len(pickle.dumps(f)) for f in frames)
    assert whole * 2 < apart
