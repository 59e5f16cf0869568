"""Hypothesis: geometry invariants hold in every frame of random op sequences; runs are pure."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.sim.skbuff import parse, run
from app.sim.skbuff.skb import BUG_RESULTS

ALLOCS = st.one_of(
    st.builds(lambda n: {"op": "alloc_skb", "size": n}, st.integers(0, 9000)),
    st.builds(lambda n: {"op": "alloc_skb_fclone", "size": n}, st.integers(0, 9000)),
    st.builds(lambda n: {"op": "netdev_alloc_skb", "len": n}, st.integers(0, 9000)),
    st.builds(lambda n: {"op": "napi_alloc_skb", "len": n}, st.integers(0, 9000)),
    st.builds(lambda n: {"op": "tcp_stream_alloc_skb", "size": n}, st.integers(0, 3000)),
    st.builds(lambda n: {"op": "napi_build_skb", "size": n}, st.integers(384, 8192)),
    st.builds(lambda n: {"op": "build_skb", "size": n}, st.integers(384, 8192)),
)
SMALL = st.integers(0, 2000)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    ops: list[dict[str, Any]] = [draw(ALLOCS)]
    names = ["skb"]
    for i in range(draw(st.integers(0, 25))):
        target = draw(st.sampled_from(names))
        kind = draw(
            st.sampled_from(
                [
                    "skb_reserve",
                    "skb_put",
                    "skb_push",
                    "skb_pull",
                    "skb_trim",
                    "pskb_trim",
                    "skb_add_rx_frag",
                    "skb_get",
                    "skb_clone",
                    "skb_copy",
                    "pskb_copy",
                    "pskb_expand_head",
                    "skb_linearize",
                    "kfree_skb",
                    "consume_skb",
                    "__skb_header_release",
                    "skb_tailroom",
                    "alloc",
                    "skb_gro_receive_list",
                    "skb_gro_receive",
                    "skb_fill_page_desc",
                    "skb_set_owner_w",
                    "pskb_may_pull",
                    "skb_reset_network_header",
                    "skb_set_mac_header",
                    "ip_rcv_core",
                    "tcp_v4_fill_cb",
                    "skb_reset_mac_header",
                    "skb_reset_transport_header",
                    "tcp4_gro_complete",
                    "skb_segment",
                    "tcp_set_skb_tso_segs",
                    "__tcp_transmit_skb",
                    "skb_partial_csum_set",
                ]
            )
        )
        if kind in (
            "skb_put",
            "skb_push",
            "skb_pull",
            "skb_trim",
            "pskb_trim",
            "skb_reserve",
            "pskb_may_pull",
        ):
            ops.append({"op": kind, "skb": target, "len": draw(SMALL)})
        elif kind == "tcp_set_skb_tso_segs":
            ops.append({"op": kind, "skb": target, "mss": draw(st.integers(1, 3000))})
        elif kind == "skb_partial_csum_set":
            start, off = draw(st.integers(0, 200)), draw(st.integers(0, 40))
            ops.append({"op": kind, "skb": target, "start": start, "offset": off})
        elif kind == "tcp_v4_fill_cb":
            ops.append({"op": kind, "skb": target, "seq": draw(st.integers(0, 2**32 - 1))})
        elif kind == "skb_set_mac_header":
            ops.append({"op": kind, "skb": target, "offset": draw(st.integers(-100, 100))})
        elif kind in ("skb_add_rx_frag", "skb_fill_page_desc"):
            ops.append({"op": kind, "skb": target, "size": draw(st.integers(0, 4096))})
        elif kind in ("skb_clone", "skb_copy", "pskb_copy"):
            new = f"n{i}"
            ops.append({"op": kind, "from": target, "skb": new})
            names.append(new)
        elif kind == "pskb_expand_head":
            ops.append(
                {
                    "op": kind,
                    "skb": target,
                    "nhead": draw(st.integers(0, 512)),
                    "ntail": draw(st.integers(0, 512)),
                }
            )
        elif kind == "alloc":
            a = dict(draw(ALLOCS))
            a["skb"] = f"n{i}"
            ops.append(a)
            names.append(f"n{i}")
        elif kind in ("skb_gro_receive_list", "skb_gro_receive"):
            other = draw(st.sampled_from(names))
            if other != target:
                off = draw(st.integers(0, 120))
                ops.append({"op": kind, "skb": target, "from": other, "offset": off})
        else:
            ops.append({"op": kind, "skb": target})
    return {"ops": ops}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_geometry_invariants(raw: dict[str, Any]) -> None:
    """0 ≤ data ≤ tail ≤ end; len = tail − data + data_len; headroom = data; skb_tailroom rule;
    truesize ≥ end + 576 without frags on live unowned skbs — in every frame until an unchecked
    skb_reserve overrun."""
    trace = run(parse(raw))
    owned = any(op["op"] == "skb_set_owner_w" for op in raw["ops"])
    for fr in trace.frames:
        if fr.mark == "overrun":
            break
        for s in fr.state["skbs"]:
            assert 0 <= s["data"] <= s["tail"] <= s["end"], s
            assert s["len"] == s["tail"] - s["data"] + s["data_len"], s
            assert s["headroom"] == s["data"]
            assert s["headlen"] == s["len"] - s["data_len"]
            expect_tail = 0 if s["data_len"] > 0 else s["end"] - s["tail"]
            assert s["tailroom"] == expect_tail
            # pskb_expand_head does not grow truesize of a socket-owned skb (skb->sk set), and
            # clones copy that truesize: the bound holds only in scenarios without owners.
            if not s["frags"] and not s["frag_list"] and s["status"] == "live" and not owned:
                assert s["truesize"] >= s["end"] + 576, s
            assert s["nr_frags"] <= 17
        for b in fr.state["buffers"].values():
            assert b["end"] == b["size"] - 320
    ended = trace.ended_early
    assert (ended is None) == (trace.frames[-1].result not in BUG_RESULTS)
    if ended is None:
        assert len(trace.frames) == len(raw["ops"])


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_runs_are_deterministic(raw: dict[str, Any]) -> None:
    """run(params) is pure: the same params give equal traces."""
    p = parse(raw)
    assert run(p) == run(p)
    assert run(parse(raw)) == run(p)


def test_gro_offset_never_reaches_past_a_clones_length() -> None:
    """A clone taken before a frag was added shares that frag in skb_shared_info but not in its
    len: a GRO header offset past its len merges nothing (it once made len −1; found by
    test_geometry_invariants)."""
    ops = [
        {"op": "alloc_skb", "size": 0},
        {"op": "skb_clone", "from": "skb", "skb": "n0"},
        {"op": "skb_add_rx_frag", "skb": "skb", "size": 1},
        {"op": "pskb_trim", "skb": "skb", "len": 0},
        {"op": "skb_gro_receive", "skb": "skb", "from": "n0", "offset": 1},
    ]
    last = run(parse({"ops": ops})).frames[-1]
    assert last.mark == "null"
    assert all(s["len"] >= 0 and s["data_len"] >= 0 for s in last.state["skbs"])
