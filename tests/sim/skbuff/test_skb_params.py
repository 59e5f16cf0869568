"""Validation of raw ops (app/sim/skbuff/ops.py): every issue reported with its loc."""

from __future__ import annotations

from typing import Any

import pytest

from app.sim.core import ParamError
from app.sim.skbuff import dump, parse
from app.sim.skbuff.scenarios import PRESETS


def issues(raw: Any) -> list[tuple[tuple[Any, ...], str]]:
    with pytest.raises(ParamError) as exc:
        parse(raw)
    return [(i.loc, i.msg) for i in exc.value.issues]


A = {"op": "alloc_skb", "size": 100}


def test_not_an_object() -> None:
    """Params that are not an object are refused at the root."""
    assert issues([1, 2])[0][0] == ()


def test_ops_missing_or_not_list() -> None:
    """ "ops" missing or not a list → loc ("ops",)."""
    assert issues({})[0][0] == ("ops",)
    loc, msg = issues({"ops": "alloc_skb"})[0]
    assert loc == ("ops",) and "list" in msg


def test_too_many_ops() -> None:
    """More than 500 ops → one issue at ("ops",) naming the limit and the count."""
    ((loc, msg),) = issues({"ops": [A] + [{"op": "skb_headroom"}] * 600})
    assert loc == ("ops",) and "500" in msg and "601" in msg


def test_unknown_op_lists_valid_ones() -> None:
    """An unknown op name points at ("ops", i, "op") and lists valid names."""
    loc, msg = issues({"ops": [A, {"op": "skb_shove", "len": 1}]})[0]
    assert loc == ("ops", 1, "op") and "skb_put" in msg


def test_missing_required_field() -> None:
    """A missing required field is reported at its own loc."""
    loc, msg = issues({"ops": [A, {"op": "skb_put"}]})[0]
    assert loc == ("ops", 1, "len") and '"len"' in msg


@pytest.mark.parametrize("bad", [True, "10", 1.5, None])
def test_wrong_type(bad: Any) -> None:
    """Integer fields reject bools, strings, floats and null."""
    loc, msg = issues({"ops": [A, {"op": "skb_put", "len": bad}]})[0]
    assert loc == ("ops", 1, "len") and "whole number" in msg


def test_negative_len() -> None:
    """Negative sizes are refused with the value echoed back."""
    loc, msg = issues({"ops": [A, {"op": "skb_pull", "len": -4}]})[0]
    assert loc == ("ops", 1, "len") and msg == "len must be ≥ 0; you gave -4."


def test_size_cap() -> None:
    """alloc sizes beyond what fits in 4 MiB (KMALLOC_MAX_SIZE) are refused."""
    loc, msg = issues({"ops": [{"op": "alloc_skb", "size": 4 * 1024 * 1024}]})[0]
    assert loc == ("ops", 0, "size") and "4193984" in msg
    parse({"ops": [{"op": "alloc_skb", "size": 4193984}]})


def test_unknown_extra_field() -> None:
    """Unknown fields on an op are refused at ("ops", i, field)."""
    loc, msg = issues({"ops": [A, {"op": "skb_put", "len": 1, "colour": "red"}]})[0]
    assert loc == ("ops", 1, "colour") and "label" in msg


def test_unknown_skb_reference() -> None:
    """An op naming an skb no earlier op created is refused."""
    loc, msg = issues({"ops": [A, {"op": "skb_put", "skb": "nope", "len": 1}]})[0]
    assert loc == ("ops", 1, "skb") and "'nope'" in msg
    loc, _ = issues({"ops": [A, {"op": "skb_clone", "from": "ghost"}]})[0]
    assert loc == ("ops", 1, "from")


def test_first_op_must_create() -> None:
    """The first op must allocate an skb."""
    found = issues({"ops": [{"op": "skb_put", "len": 1}]})
    assert found[0][0] == ("ops", 0, "op") and "first op" in found[0][1]


def test_duplicate_and_bad_names() -> None:
    """New skb names must be unique identifiers; labels are at most 16 chars."""
    assert issues({"ops": [A, A]})[0][0] == ("ops", 1, "skb")
    assert issues({"ops": [{"op": "alloc_skb", "size": 1, "skb": "Bad-Name"}]})[0][0] == (
        "ops",
        0,
        "skb",
    )
    loc, msg = issues({"ops": [A, {"op": "skb_put", "len": 1, "label": "x" * 17}]})[0]
    assert loc == ("ops", 1, "label") and "16" in msg


def test_collects_all_issues() -> None:
    """Several problems in one request are all reported."""
    found = issues({"ops": [A, {"op": "skb_put", "len": -1}, {"op": "skb_push"}, {"op": "x"}]})
    assert [loc for loc, _ in found] == [("ops", 1, "len"), ("ops", 2, "len"), ("ops", 3, "op")]


def test_auto_names_and_round_trip() -> None:
    """Derived skbs get clone1/copy1 names; parse(dump(p)) == p."""
    p = parse(
        {
            "ops": [
                A,
                {"op": "skb_clone"},
                {"op": "skb_copy"},
                {"op": "skb_clone", "from": "clone1"},
                {"op": "skb_put", "len": 3, "label": "TCP", "via": "tcp_v4_rcv"},
            ]
        }
    )
    assert [o.skb for o in p.ops] == ["skb", "clone1", "copy1", "clone2", "skb"]
    assert parse(dump(p)) == p


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.slug)
def test_presets_round_trip(preset: Any) -> None:
    """Every preset parses and survives dump → parse unchanged."""
    p = parse(preset.params)
    assert parse(dump(p)) == p


def test_at_most_16_skbs_per_scenario() -> None:
    """A scenario may create 16 skbs; the op that would create a 17th is refused, naming it."""
    from app.sim.core import ParamError
    from app.sim.skbuff import parse
    from app.sim.skbuff.ops import MAX_SKBS

    ok = [{"op": "alloc_skb", "size": 100}] + [{"op": "skb_clone"}] * (MAX_SKBS - 1)
    assert len(parse({"ops": ok}).ops) == MAX_SKBS
    try:
        parse({"ops": [*ok, {"op": "skb_copy"}]})
    except ParamError as exc:
        assert [i.loc for i in exc.issues] == [("ops", MAX_SKBS, "op")]
        assert "at most 16 skbs" in exc.issues[0].msg
    else:
        raise AssertionError("a 17th skb was accepted")
