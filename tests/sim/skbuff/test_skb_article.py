"""The rest of the sk_buff article (seed sections 3-5): header offsets, cb[], GSO, checksum
fields and drop reasons, each against the Linux 6.4 function named in the docstring."""

from __future__ import annotations

from typing import Any

from skbhelp import skb, trace_of

A1500 = {"op": "alloc_skb", "size": 1500}


def frag(size: int, **kw: Any) -> dict[str, Any]:
    return {"op": "skb_add_rx_frag", "size": size, **kw}


# ---- header offsets -------------------------------------------------------------------------
def test_new_skb_header_offsets() -> None:
    """__finalize_skb_around: mac_header and transport_header unset (~0), network_header 0."""
    s = skb(trace_of(A1500))
    assert (s["mac_header"], s["network_header"], s["transport_header"]) == (None, 0, None)


def test_reset_and_set_headers_follow_data() -> None:
    """skb_reset_*_header store data - head; skb_set_*_header add a (signed) offset; the
    offsets stay put while skb_pull moves data (eth_type_trans / ip_rcv_core order)."""
    t = trace_of(
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 66},
        {"op": "skb_reset_mac_header"},
        {"op": "skb_pull", "len": 14},
        {"op": "skb_reset_network_header"},
        {"op": "skb_set_transport_header", "offset": 20},
        {"op": "skb_set_mac_header", "skb": "skb", "offset": -14},
    )
    s = skb(t)
    assert (s["mac_header"], s["network_header"], s["transport_header"]) == (64, 78, 98)
    assert s["data"] == 78


def test_pskb_expand_head_shifts_header_offsets() -> None:
    """pskb_expand_head → skb_headers_offset_update: set header offsets move by nhead."""
    t = trace_of(
        A1500,
        {"op": "skb_put", "len": 40},
        {"op": "skb_reset_transport_header"},
        {"op": "pskb_expand_head", "nhead": 64},
    )
    s = skb(t)
    assert (s["transport_header"], s["network_header"], s["mac_header"]) == (64, 64, None)


def test_clone_copies_header_offsets() -> None:
    """__skb_clone → __copy_skb_header copies mac/network/transport offsets."""
    t = trace_of(A1500, {"op": "skb_reset_mac_header"}, {"op": "skb_clone", "skb": "c"})
    assert skb(t, "c")["mac_header"] == 0


def test_pskb_may_pull_pulls_only_what_is_asked() -> None:
    """pskb_may_pull: true at once if len <= headlen; false if len > skb->len; otherwise
    __pskb_pull_tail(len - headlen) copies that many paged bytes into the head."""
    base = [
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 14},
        frag(1000),
        frag(500),
    ]
    t = trace_of(*base, {"op": "pskb_may_pull", "len": 54})
    s = skb(t)
    assert (s["tail"], s["data_len"], s["nr_frags"], s["len"]) == (64 + 54, 1460, 2, 1514)
    assert (s["frags"][0]["offset"], s["frags"][0]["size"]) == (40, 960)
    t2 = trace_of(*base, {"op": "pskb_may_pull", "len": 1100})
    s2 = skb(t2)  # the whole first frag and 86 bytes of the second
    assert (s2["nr_frags"], s2["frags"][0]["size"], s2["data_len"]) == (1, 414, 414)
    assert t2.frames[-1].state["pages"]["page1"]["refs"] == 0
    t3 = trace_of(*base, {"op": "pskb_may_pull", "len": 1515})
    assert t3.frames[-1].result == "null" and skb(t3)["data_len"] == 1500
    t4 = trace_of(*base, {"op": "pskb_may_pull", "len": 14})
    assert t4.frames[-1].state["changed"] == []
