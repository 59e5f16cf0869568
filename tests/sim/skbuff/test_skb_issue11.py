"""Issue #11 (sk_buff parts): each test follows the Linux 6.4 function named in its docstring."""

from __future__ import annotations

from typing import Any

import pytest
from skbhelp import skb, trace_of

from app.sim.core import ParamError
from app.sim.skbuff import parse
from app.sim.skbuff.machine import SkbMachine
from app.sim.skbuff.ops import Op
from app.sim.skbuff.scenarios import PRESETS

A1500 = {"op": "alloc_skb", "size": 1500}


def frag(size: int, **kw: Any) -> dict[str, Any]:
    return {"op": "skb_add_rx_frag", "size": size, **kw}


def source_of(frame: Any) -> str:
    assert frame.source is not None
    return str(frame.source.function)


def legacy_rx(name: str) -> list[dict[str, Any]]:
    """igb_construct_skb: napi_alloc_skb(256), 66 header bytes, a 1448-byte half-page frag."""
    return [
        {"op": "napi_alloc_skb", "skb": name, "len": 256},
        {"op": "skb_put", "skb": name, "len": 66},
        frag(1448, skb=name),
        {"op": "skb_pull", "skb": name, "len": 14},
    ]


def build_rx(name: str) -> list[dict[str, Any]]:
    """igb_build_skb: napi_build_skb(2048), skb_reserve(192), __skb_put(1514), eth pull."""
    return [
        {"op": "napi_build_skb", "skb": name, "size": 2048},
        {"op": "skb_reserve", "skb": name, "len": 192},
        {"op": "skb_put", "skb": name, "len": 1514},
        {"op": "skb_pull", "skb": name, "len": 14},
    ]


# ---- 1. pskb_trim ---------------------------------------------------------------------------
def test_pskb_trim_on_clone_unclones_then_trims() -> None:
    """___pskb_trim: a cloned skb gets pskb_expand_head(0, 0) (a private head) and IS trimmed;
    the clone keeps the old head with dataref 1."""
    t = trace_of(
        A1500,
        {"op": "skb_put", "len": 100},
        frag(1000),
        {"op": "skb_clone", "skb": "c"},
        {"op": "pskb_trim", "len": 500},
    )
    last = t.frames[-1]
    assert last.result == "ok" and last.mark is None
    s, c = skb(t, "skb"), skb(t, "c")
    assert s["len"] == 500 and s["buffer"] != c["buffer"]
    assert (c["len"], c["dataref"], s["dataref"]) == (1100, 1, 1)
    assert not s["cloned"]


def test_pskb_trim_condenses_unowned_skb() -> None:
    """___pskb_trim ends with skb_condense when skb->sk is NULL: 256-byte NAPI skb + 66-byte put
    + 1448-byte frag trimmed to 100 is pulled linear and truesize = SKB_TRUESIZE(704) = 1280."""
    t = trace_of(
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 66},
        frag(1448),
        {"op": "pskb_trim", "len": 100},
    )
    s = skb(t)
    assert (s["len"], s["data_len"], s["nr_frags"], s["tail"]) == (100, 0, 0, 64 + 100)
    assert s["truesize"] == 704 + 576 == 1280
    assert t.frames[-1].state["pages"]["page1"]["refs"] == 0


def test_pskb_trim_socket_owned_skips_condense() -> None:
    """___pskb_trim calls skb_condense only if !skb->sk: an owned skb keeps its frag and 3328."""
    t = trace_of(
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 66},
        frag(1448),
        {"op": "skb_set_owner_w"},
        {"op": "pskb_trim", "len": 100},
    )
    s = skb(t)
    assert (s["len"], s["data_len"], s["nr_frags"], s["truesize"]) == (100, 34, 1, 1280 + 2048)


def test_skb_condense_leaves_frags_that_do_not_fit() -> None:
    """skb_condense returns early (truesize unchanged) when data_len > end - tail."""
    t = trace_of(
        {"op": "alloc_skb", "size": 0},
        {"op": "skb_put", "len": 300},
        frag(1000),
        {"op": "pskb_trim", "len": 1200},
    )
    s = skb(t)  # end 320, tail 300: 20 bytes of room for 900 paged bytes
    assert (s["len"], s["data_len"], s["nr_frags"], s["truesize"]) == (1200, 900, 1, 896 + 2048)


def test_pskb_trim_frag_ending_exactly_at_len_is_kept() -> None:
    """___pskb_trim only skips frags whose end < len; one ending at len is kept whole."""
    t = trace_of(
        A1500,
        {"op": "skb_set_owner_w"},
        frag(100),
        frag(100),
        {"op": "pskb_trim", "len": 100},
    )
    s = skb(t)
    assert (s["nr_frags"], s["data_len"], s["frags"][0]["size"]) == (1, 100, 100)


def test_pskb_expand_head_enomem_leaves_skb() -> None:
    """pskb_expand_head returns -ENOMEM (skb unchanged) when kmalloc_reserve cannot serve it."""
    big = 4 * 1024 * 1024 - 320
    t = trace_of({"op": "alloc_skb", "size": big}, {"op": "pskb_expand_head", "nhead": 64})
    assert t.frames[-1].result == "null" and skb(t)["data"] == 0 and skb(t)["buffer"] == "buf1"


# ---- 2. frag overflow -----------------------------------------------------------------------
def test_frag_overflow_on_page_frag_head_is_not_a_kasan_report() -> None:
    """skb_fill_page_desc has no bounds check; a head carved from a page fragment
    (__napi_alloc_skb) has no slab redzone, so an 18th frag is silent corruption."""
    t = trace_of({"op": "napi_alloc_skb", "len": 256}, *[frag(100)] * 18)
    last = t.frames[-1]
    assert t.ended_early == "skb_frag_overflow"
    assert "KASAN" in last.state["bug"]["message"] and "no KASAN" in last.state["bug"]["message"]
    assert "frag_list" in str(last.narration) and "E2BIG" not in str(last.narration)


def test_frag_overflow_on_slab_head_is_slab_out_of_bounds() -> None:
    """An 18th frag on a kmalloc-2k head writes past the slab object: KASAN slab-out-of-bounds."""
    t = trace_of(A1500, *[frag(100)] * 18)
    assert "slab-out-of-bounds" in t.frames[-1].state["bug"]["message"]


# ---- 5. driver receive allocation -----------------------------------------------------------
def test_napi_build_skb_sizes_around_the_buffer() -> None:
    """napi_build_skb → __finalize_skb_around: end = frag_size - 320, truesize = SKB_TRUESIZE(end),
    head_frag = 1 (igb's half page: end 1728, truesize 2304)."""
    t = trace_of({"op": "napi_build_skb", "size": 2048})
    s = skb(t)
    assert (s["end"], s["truesize"], s["data"], s["tail"], s["len"]) == (1728, 2304, 0, 0, 0)
    assert t.frames[-1].state["buffers"]["buf1"]["head_frag"] is True
    assert source_of(t.frames[-1]) == "napi_build_skb"


def test_build_skb_minimum_size_is_refused() -> None:
    """build_skb's frag_size must leave room for skb_shared_info: 383 is refused at "size"."""
    with pytest.raises(ParamError) as exc:
        parse({"ops": [{"op": "build_skb", "size": 383}]})
    assert exc.value.issues[0].loc == ("ops", 0, "size")


def test_netdev_alloc_skb_adds_only_net_skb_pad() -> None:
    """__netdev_alloc_skb: len += NET_SKB_PAD only; netdev_alloc_skb(1500) → 1564 → page frag of
    1600 + 320, end 1600, truesize 2176, headroom 64 (facts sheet §1.5)."""
    t = trace_of({"op": "netdev_alloc_skb", "len": 1500})
    s = skb(t)
    assert (s["end"], s["truesize"], s["headroom"], s["tailroom"]) == (1600, 2176, 64, 1536)
    assert "NET_IP_ALIGN 0" not in str(t.frames[0].narration)


def test_rx_frame_preset_uses_build_skb() -> None:
    """The rx-frame preset models igb's default path (napi_build_skb + __skb_put), not
    __napi_alloc_skb(1514) + skb_put."""
    p = next(x for x in PRESETS if x.slug == "rx-frame")
    ops = [o["op"] for o in p.params["ops"]]
    assert ops[:3] == ["napi_build_skb", "skb_reserve", "skb_put"]


# ---- 6. TCP GRO -----------------------------------------------------------------------------
def test_skb_gro_receive_moves_frags() -> None:
    """skb_gro_receive (headlen <= offset): the segment's frags move into p's frags[]; its
    truesize drops to SKB_TRUESIZE(end) and the rest moves to p; napi_skb_finish frees it."""
    t = trace_of(
        *legacy_rx("skb"),
        *legacy_rx("seg2"),
        {"op": "skb_gro_receive", "from": "seg2", "offset": 52},
    )
    p, s = skb(t, "skb"), skb(t, "seg2")
    assert (p["len"], p["data_len"], p["nr_frags"], p["frag_list"]) == (2948, 2896, 2, [])
    assert p["truesize"] == 3328 + (3328 - 1280)
    assert s["status"] == "consumed" and t.frames[-1].state["pages"]["page2"]["refs"] == 1
    assert source_of(t.frames[-1]) == "skb_gro_receive"


def test_skb_gro_receive_steals_page_frag_head() -> None:
    """skb_gro_receive (skb->head_frag, payload in the head): the head page becomes a frag of p
    at data + offset; the segment keeps truesize SKB_DATA_ALIGN(sizeof(sk_buff)) = 256."""
    t = trace_of(
        *build_rx("skb"),
        *build_rx("seg2"),
        {"op": "skb_gro_receive", "from": "seg2", "offset": 52},
    )
    p = skb(t, "skb")
    assert (p["len"], p["nr_frags"], p["frags"][0]["size"]) == (2948, 1, 1448)
    assert p["frags"][0]["offset"] == 192 + 14 + 52
    assert p["truesize"] == 2304 + (2304 - 256)
    st = t.frames[-1].state
    assert st["buffers"]["buf2"]["stolen_by"] == "skb" and skb(t, "seg2")["status"] == "consumed"


def test_skb_gro_receive_chains_when_frags_are_full() -> None:
    """skb_gro_receive falls back to frag_list ("merge") when nr_frags would exceed 17."""
    t = trace_of(
        *legacy_rx("skb"),
        *[frag(10)] * 16,
        *legacy_rx("seg2"),
        {"op": "skb_gro_receive", "from": "seg2", "offset": 52},
    )
    p, s = skb(t, "skb"), skb(t, "seg2")
    assert p["nr_frags"] == 17 and p["frag_list"] == ["seg2"]
    assert s["status"] == "in_frag_list" and p["len"] == 1500 + 160 + 1448
    assert t.ended_early is None


def test_gro_size_checks_gro_len_vs_len_before_pull() -> None:
    """skb_gro_receive compares p->len + skb_gro_len (after headers) with 65536;
    skb_gro_receive_list compares p->len + skb->len before its skb_pull."""
    ops = [
        {"op": "alloc_skb", "size": 64000},
        {"op": "skb_put", "len": 64000},
        {"op": "alloc_skb", "skb": "b", "size": 1600},
        {"op": "skb_put", "skb": "b", "len": 1600},
    ]
    tcp = trace_of(*ops, {"op": "skb_gro_receive", "from": "b", "offset": 100})
    udp = trace_of(*ops, {"op": "skb_gro_receive_list", "from": "b", "offset": 100})
    assert tcp.frames[-1].result == "ok" and skb(tcp, "skb")["len"] == 65500
    assert udp.frames[-1].result == "null" and skb(udp, "skb")["len"] == 64000


def test_gro_preset_uses_skb_gro_receive() -> None:
    """The gro-linearize preset merges the TCP segment with skb_gro_receive, not the UDP-only
    skb_gro_receive_list."""
    p = next(x for x in PRESETS if x.slug == "gro-linearize")
    ops = [o["op"] for o in p.params["ops"]]
    assert "skb_gro_receive" in ops and "skb_gro_receive_list" not in ops


# ---- 8. transmit side -----------------------------------------------------------------------
def test_skb_fill_page_desc_charges_bytes_copied() -> None:
    """tcp_sendmsg_locked: skb_copy_to_page_nocache adds copy to len/data_len/truesize
    (skb_len_add) and skb_fill_page_desc records the frag."""
    t = trace_of(
        {"op": "tcp_stream_alloc_skb", "size": 0}, {"op": "skb_fill_page_desc", "size": 1448}
    )
    s = skb(t)
    assert (s["len"], s["data_len"], s["truesize"], s["nr_frags"]) == (1448, 1448, 896 + 1448, 1)
    assert source_of(t.frames[-1]) == "skb_fill_page_desc"


@pytest.mark.parametrize("slug", ["tcp-transmit", "clone-retransmit"])
def test_tx_presets_do_not_use_rx_helpers(slug: str) -> None:
    """Transmit presets attach payload with skb_fill_page_desc, never skb_add_rx_frag."""
    p = next(x for x in PRESETS if x.slug == slug)
    ops = [o["op"] for o in p.params["ops"]]
    assert "skb_fill_page_desc" in ops and "skb_add_rx_frag" not in ops


def test_socket_owned_clone_keeps_truesize_on_expand() -> None:
    """pskb_expand_head changes truesize only if !skb->sk; __tcp_transmit_skb sets skb->sk on
    the clone, so expanding the clone's head leaves its truesize alone."""
    m = SkbMachine()
    for op in (
        Op(op="tcp_stream_alloc_skb", size=0),
        Op(op="__skb_header_release"),
        Op(op="skb_fill_page_desc", size=1448),
        Op(op="skb_clone", src="skb", skb="clone1"),
        Op(op="skb_set_owner_w", skb="clone1"),
        Op(op="pskb_expand_head", skb="clone1", nhead=64),
    ):
        assert m.apply(op).result == "ok"
    c = m.skbs["clone1"]
    assert c.truesize == 896 + 1448 and c.end == 704 and c.data == 320 + 64
    m2 = SkbMachine()
    for op in (
        Op(op="tcp_stream_alloc_skb", size=0),
        Op(op="skb_clone", src="skb", skb="clone1"),
        Op(op="pskb_expand_head", skb="clone1", nhead=64),
    ):
        m2.apply(op)
    assert m2.skbs["clone1"].truesize == 896 + (704 - 320)


def test_skb_set_owner_w_destructor_follows_the_caller() -> None:
    """skb_set_owner_w (net/core/sock.c) sets sock_wfree; __tcp_transmit_skb does the charge
    inline with tcp_wfree: the step names the destructor of the caller the scenario gives."""
    tcp = trace_of(
        {"op": "alloc_skb", "size": 1500},
        {"op": "skb_set_owner_w", "via": "__tcp_transmit_skb"},
    ).frames[-1]
    text = tcp.narration.render()
    notes = " ".join(n.render() for n in tcp.notes)
    assert "skb->destructor = tcp_wfree" in text and "destructor (sock_wfree)" not in text
    assert "__sock_wfree" in text  # a pure ACK's destructor
    assert "sock_wfree" in notes and "skb_set_owner_w" in notes
    plain = trace_of({"op": "alloc_skb", "size": 1500}, {"op": "skb_set_owner_w"}).frames[-1]
    plain_text = plain.narration.render()
    assert "destructor (sock_wfree)" in plain_text and "tcp_wfree" not in plain_text
