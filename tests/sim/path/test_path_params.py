"""Params, JSON shape, determinism, presets and the cited source lines of the path explainer."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.sim.core.errors import ParamError
from app.sim.path import EXPLAINER as E
from app.sim.path import params as P
from app.sim.path.sources import SOURCES


def test_defaults_and_round_trip() -> None:
    """parse(dump(p)) == p for the minimal input and every preset."""
    p = E.parse({"path": "rx", "device": "nic", "packets": 1, "payload_bytes": 1000})
    assert E.parse(E.dump(p)) == p
    for pr in E.presets:
        q = E.parse(dict(pr.params))
        assert E.parse(E.dump(q)) == q
        assert pr.lesson == f"path-{pr.slug}"
    assert E.preset(E.default_preset) is not None


@settings(max_examples=60, deadline=None)
@given(
    path=st.sampled_from(P.PATHS),
    device=st.sampled_from(P.DEVICES),
    packets=st.integers(1, 8),
    payload=st.integers(1, 1448),
)
def test_any_valid_input_runs(path: str, device: str, packets: int, payload: int) -> None:
    """Every accepted input runs, stays within its cost and round-trips."""
    raw = {"path": path, "device": device, "packets": packets, "payload_bytes": payload}
    try:
        p = E.parse(raw)
    except ParamError:
        assert path == "forward" and device != "nic"
        return
    assert E.parse(E.dump(p)) == p
    tr = E.run(p)
    assert 0 < len(tr.frames) <= E.cost(p)


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        ({"path": "up"}, ("path",)),
        ({"device": 3}, ("device",)),
        ({"packets": 0}, ("packets",)),
        ({"packets": True}, ("packets",)),
        ({"payload_bytes": 70000}, ("payload_bytes",)),
        ({"colour": "red"}, ("colour",)),
        ({"path": "forward", "device": "veth"}, ("device",)),
        ({"scenario": "gro_burst", "path": "tx"}, ("scenario",)),
        ({"drop": "netfilter"}, ("hook",)),
        ({"drop": "netfilter", "hook": "FORWARD"}, ("hook",)),
        ({"drop": "ttl"}, ("drop",)),
        ({"payload_bytes": 2000}, ("payload_bytes",)),
        ({"flows": 3}, ("flows",)),
        ({"scenario": "gro_burst", "packets": 1000}, ("packets",)),
        ({"tso": False}, ("tso",)),
        ({"last_bytes": 100}, ("last_bytes",)),
        ({"path": "tx", "qdisc_queued": 64}, ("qdisc_queued",)),
    ],
)
def test_bad_input_names_the_field(raw: dict[str, Any], loc: tuple[str, ...]) -> None:
    """Bad input raises ParamError whose issues point at the field to change (→ HTTP 422)."""
    with pytest.raises(ParamError) as err:
        E.parse(raw)
    assert loc in [i.loc for i in err.value.issues]


def test_every_problem_reported_at_once() -> None:
    """Several bad fields give several issues."""
    with pytest.raises(ParamError) as err:
        E.parse({"path": "x", "device": "y", "packets": -1})
    assert {i.loc for i in err.value.issues} == {("path",), ("device",), ("packets",)}


def test_not_an_object() -> None:
    """A list is refused as a whole."""
    with pytest.raises(ParamError):
        E.parse([1, 2])


def test_deterministic() -> None:
    """Two runs of the same params give identical public JSON."""
    p = E.parse({"path": "rx", "scenario": "gro_burst", "packets": 40, "flows": 3})
    assert E.public_json(E.run(p)) == E.public_json(E.run(p))


def test_cost_bounds_every_preset() -> None:
    """cost() is an upper bound of the frames a preset makes."""
    for pr in E.presets:
        p = E.parse(dict(pr.params))
        assert len(E.run(p).frames) <= E.cost(p) <= E.limits.max_work


@pytest.mark.parametrize(
    "raw",
    [
        {"path": "tx", "packets": 8, "payload_bytes": 64000, "tso": False, "neigh": "arp"},
        {"path": "tx", "device": "veth", "packets": 64, "payload_bytes": 64000},
        {"path": "forward", "packets": 8, "payload_bytes": 1448},
        {"path": "rx", "scenario": "gro_burst", "packets": 400, "flows": 16, "psh": "every"},
        {"path": "rx", "scenario": "gro_burst", "packets": 400, "flows": 9, "same_bucket": True},
    ],
)
def test_cost_bounds_large_runs(raw: dict[str, Any]) -> None:
    """cost() stays an upper bound at the large end of each walk."""
    p = E.parse(raw)
    assert len(E.run(p).frames) <= E.cost(p)


def test_progress_is_reported() -> None:
    """run() calls progress and ends at total."""
    calls: list[tuple[float, float]] = []
    p = E.parse({"path": "rx", "scenario": "gro_burst", "packets": 100})
    E.run(p, lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1]


def test_public_json_shape() -> None:
    """Frames carry function, path, line, layer, context, hook, stack and the skb fields."""
    out = E.public_json(E.run(E.parse({"path": "rx"})))
    assert out["explainer"] == "path"
    keys = {"function", "path", "line", "layer", "context", "hook", "stack", "skb"}
    skb_keys = {
        "head",
        "data",
        "tail",
        "end",
        "len",
        "data_len",
        "truesize",
        "headroom",
        "tailroom",
        "users",
        "dataref",
        "nr_frags",
        "mac_header",
        "network_header",
        "transport_header",
        "inner_mac_header",
        "inner_network_header",
        "inner_transport_header",
        "sk",
        "destructor",
    }
    for f in out["frames"]:
        assert keys <= set(f)
        assert f["context"] in ("process", "softirq", "hardirq")
        assert f["stack"][-1] == f["function"] or f["function"] not in f["stack"][:-1]
        assert isinstance(f["line"], int) and f["path"].endswith((".c", ".h"))
        if f["skb"] is not None:
            assert set(f["skb"]) == skb_keys
        assert isinstance(f["narration"], str) and f["narration"]


def test_stack_top_is_the_function() -> None:
    """Each frame's stack ends with its own function (outermost first)."""
    for pr in E.presets:
        for f in E.run(E.parse(dict(pr.params))).frames:
            assert f.state["stack"][-1] == f.state["function"]


def test_every_frame_cites_a_table_entry() -> None:
    """Frames cite only functions in the one table."""
    for pr in E.presets:
        for f in E.run(E.parse(dict(pr.params))).frames:
            assert f.source is not None and SOURCES[f.source.function] == f.source
