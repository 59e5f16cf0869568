"""Per-op semantics against the facts sheet §1.6 (Linux 6.4 net/core/skbuff.c, skbuff.h)."""

from __future__ import annotations

from typing import Any

from skbhelp import skb, trace_of

A1500 = {"op": "alloc_skb", "size": 1500}
R64 = {"op": "skb_reserve", "len": 64}


def frag(size: int = 1000, **kw: Any) -> dict[str, Any]:
    return {"op": "skb_add_rx_frag", "size": size, **kw}


def test_skb_reserve_moves_data_and_tail() -> None:
    """skb_reserve: data += len, tail += len, len unchanged."""
    s = skb(trace_of(A1500, R64))
    assert (s["data"], s["tail"], s["len"], s["headroom"], s["tailroom"]) == (64, 64, 0, 64, 1664)


def test_skb_reserve_past_end_is_unchecked() -> None:
    """skb_reserve has no checks: tail may pass end (frame marked "overrun")."""
    t = trace_of({"op": "alloc_skb", "size": 0}, {"op": "skb_reserve", "len": 400})
    assert t.frames[-1].result == "ok" and t.frames[-1].mark == "overrun"
    assert skb(t)["tail"] == 400 and t.ended_early is None


def test_skb_put_extends_tail() -> None:
    """skb_put: tail += len, len += len; the region is recorded as payload."""
    t = trace_of(A1500, R64, {"op": "skb_put", "len": 100, "label": "payload"})
    s = skb(t)
    assert (s["tail"], s["len"], s["tailroom"]) == (164, 100, 1564)
    assert s["regions"] == [{"start": 64, "end": 164, "label": "payload", "kind": "payload"}]
    assert t.frames[-1].state["changed"] == ["len", "headlen", "tailroom", "tail"]
    changed = [f.name for f in t.frames[-1].fields if f.changed]
    assert changed == ["len", "headlen", "tailroom", "tail"]


def test_skb_put_exactly_to_end_is_fine() -> None:
    """skb_put up to tail == end does not panic (the check is tail > end)."""
    t = trace_of(A1500, {"op": "skb_put", "len": 1728})
    assert t.ended_early is None and skb(t)["tailroom"] == 0


def test_skb_put_past_end_panics() -> None:
    """skb_put making tail > end → skb_over_panic, state unchanged, scenario ends."""
    t = trace_of(A1500, R64, {"op": "skb_put", "len": 1665}, {"op": "skb_headroom"})
    assert t.ended_early == "skb_over_panic" and len(t.frames) == 3
    last = t.frames[-1]
    assert last.result == "skb_over_panic" and last.mark == "panic"
    assert skb(t)["tail"] == 64 and "skb_over_panic" in last.state["bug"]["message"]


def test_skb_put_on_nonlinear_bugs() -> None:
    """skb_put on a nonlinear skb trips SKB_LINEAR_ASSERT before any size check."""
    t = trace_of(A1500, frag(), {"op": "skb_put", "len": 1})
    assert t.ended_early == "skb_put_nonlinear"


def test_skb_push_and_under_panic() -> None:
    """skb_push: data -= len, len += len; pushing past head → skb_under_panic."""
    t = trace_of(A1500, R64, {"op": "skb_push", "len": 14, "label": "eth"})
    s = skb(t)
    assert (s["data"], s["len"], s["headroom"]) == (50, 14, 50)
    assert s["regions"][0]["kind"] == "header"
    t2 = trace_of(A1500, R64, {"op": "skb_push", "len": 65})
    assert t2.ended_early == "skb_under_panic" and skb(t2)["data"] == 64


def test_skb_pull_and_null() -> None:
    """skb_pull: data += len, len -= len; len > skb->len returns NULL and changes nothing."""
    t = trace_of(A1500, R64, {"op": "skb_put", "len": 100}, {"op": "skb_pull", "len": 14})
    s = skb(t)
    assert (s["data"], s["len"], s["tail"]) == (78, 86, 164)
    assert s["regions"][0]["start"] == 64  # pulled bytes stay in the buffer
    t2 = trace_of(A1500, {"op": "skb_put", "len": 10}, {"op": "skb_pull", "len": 11})
    assert t2.frames[-1].result == "null" and t2.frames[-1].mark == "null"
    assert t2.ended_early is None and skb(t2)["len"] == 10


def test_skb_pull_into_paged_data_bugs() -> None:
    """__skb_pull: pulling past headlen of a nonlinear skb → BUG even though len ≤ skb->len."""
    t = trace_of(A1500, {"op": "skb_put", "len": 10}, frag(), {"op": "skb_pull", "len": 11})
    assert t.ended_early == "__skb_pull"


def test_skb_trim_linear_and_nonlinear() -> None:
    """skb_trim: shortens a linear skb; on a nonlinear one it WARNs and does nothing."""
    s = skb(trace_of(A1500, {"op": "skb_put", "len": 100}, {"op": "skb_trim", "len": 40}))
    assert (s["len"], s["tail"]) == (40, 40)
    t = trace_of(A1500, {"op": "skb_put", "len": 100}, frag(), {"op": "skb_trim", "len": 40})
    assert t.frames[-1].mark == "warn" and skb(t)["len"] == 1100


def test_pskb_trim_drops_frags() -> None:
    """___pskb_trim: keeps frags below len, shrinks the crossing one, drops the rest (socket-owned
    skb, so skb_condense does not run)."""
    t = trace_of(
        A1500,
        {"op": "skb_put", "len": 100},
        frag(1000),
        frag(1000),
        {"op": "skb_set_owner_w"},
        {"op": "pskb_trim", "len": 600},
    )
    s = skb(t)
    assert (s["len"], s["data_len"], s["nr_frags"]) == (600, 500, 1)
    assert s["frags"][0]["size"] == 500 and s["truesize"] == 2304 + 2048 + 2048
    assert t.frames[-1].state["pages"]["page2"]["refs"] == 0


def test_queries_report_values() -> None:
    """skb_headroom/skb_tailroom/skb_headlen are read-only; tailroom is 0 when nonlinear."""
    t = trace_of(
        A1500,
        R64,
        {"op": "skb_put", "len": 10},
        frag(),
        {"op": "skb_tailroom"},
        {"op": "skb_headlen"},
        {"op": "skb_headroom"},
    )
    assert "0" in t.frames[4].narration and skb(t)["tailroom"] == 0
    assert "10 bytes" in t.frames[5].narration and "64 bytes" in t.frames[6].narration
    assert all(f.state["changed"] == [] for f in t.frames[4:])


def test_skb_add_rx_frag_accounting_and_default_truesize() -> None:
    """skb_add_rx_frag: len, data_len grow by size; truesize by truesize (default half page)."""
    s = skb(trace_of(A1500, frag(1448), frag(3000), frag(10, truesize=10)))
    assert (s["len"], s["data_len"], s["nr_frags"]) == (4458, 4458, 3)
    assert s["truesize"] == 2304 + 2048 + 4096 + 10


def test_skb_add_rx_frag_overflow() -> None:
    """An 18th frag (MAX_SKB_FRAGS = 17) is a fatal skb_frag_overflow."""
    t = trace_of(A1500, *[frag(100)] * 18)
    assert t.ended_early == "skb_frag_overflow" and len(t.frames) == 19
    assert skb(t)["nr_frags"] == 17


def test_skb_gro_receive_list_chains() -> None:
    """skb_gro_receive_list: head len/data_len/truesize grow by the other; the other is owned."""
    t = trace_of(
        A1500,
        {"op": "skb_put", "len": 100},
        {"op": "alloc_skb", "skb": "b", "size": 1500},
        {"op": "skb_put", "skb": "b", "len": 200},
        {"op": "skb_gro_receive_list", "from": "b", "offset": 50},
    )
    h, b = skb(t, "skb"), skb(t, "b")
    assert (h["len"], h["data_len"], h["truesize"], h["frag_list"]) == (250, 150, 4608, ["b"])
    assert b["status"] == "in_frag_list"
    t2 = trace_of(
        A1500,
        {"op": "alloc_skb", "skb": "b", "size": 10},
        {"op": "skb_gro_receive_list", "from": "b"},
        {"op": "skb_put", "skb": "b", "len": 1},
    )
    assert t2.ended_early == "use_after_free"


def test_skb_get_and_kfree_keeps_skb() -> None:
    """skb_get: users++; kfree_skb with users 2 only drops a reference."""
    t = trace_of(A1500, {"op": "skb_get"}, {"op": "kfree_skb"})
    s = skb(t)
    assert (s["users"], s["status"]) == (1, "live")


def test_skb_clone_fclone_fast_path() -> None:
    """skb_clone of an fclone orig with fclone_ref 1 uses the companion; a second clone cannot."""
    t = trace_of({"op": "alloc_skb_fclone", "size": 100}, {"op": "skb_clone"}, {"op": "skb_clone"})
    c1, c2, o = skb(t, "clone1"), skb(t, "clone2"), skb(t, "skb")
    assert (c1["fclone"], c2["fclone"]) == ("clone", "unavailable")
    assert o["dataref"] == 3 and o["cloned"] and c1["cloned"] and c1["buffer"] == o["buffer"]
    assert t.frames[1].mark == "clone" and t.frames[1].state["primary"] == "clone1"


def test_skb_clone_of_plain_skb_is_unavailable() -> None:
    """skb_clone of a non-fclone skb allocates from skbuff_cache (fclone unavailable)."""
    t = trace_of(A1500, {"op": "skb_clone", "skb": "c"})
    assert skb(t, "c")["fclone"] == "unavailable" and skb(t, "c")["dataref"] == 2


def test_fclone_companion_reusable_after_clone_freed() -> None:
    """Freeing the fclone companion drops fclone_ref to 1, so the next clone is fast again."""
    t = trace_of(
        {"op": "tcp_stream_alloc_skb", "size": 0},
        {"op": "skb_clone"},
        {"op": "consume_skb", "skb": "clone1"},
        {"op": "skb_clone"},
    )
    assert skb(t, "clone2")["fclone"] == "clone"
    assert skb(t, "clone1")["status"] == "consumed" and skb(t, "skb")["dataref"] == 2


def test_skb_copy_is_linear_and_rerounded() -> None:
    """skb_copy: size end + data_len re-rounded by kmalloc_reserve; same headroom; linear."""
    t = trace_of(A1500, R64, {"op": "skb_put", "len": 100}, frag(1000), {"op": "skb_copy"})
    c = skb(t, "copy1")
    assert (c["end"], c["alloc"]) == (3776, "kmalloc-4k")  # 1728 + 1000 = 2728 → 4096
    assert (c["headroom"], c["len"], c["data_len"], c["nr_frags"], c["dataref"]) == (
        64,
        1100,
        0,
        0,
        1,
    )
    assert c["tail"] == 64 + 1100 and c["truesize"] == 3776 + 576


def test_pskb_copy_shares_frags() -> None:
    """pskb_copy: new head of headroom + headlen (re-rounded); frags shared with page refs."""
    t = trace_of(A1500, R64, {"op": "skb_put", "len": 100}, frag(1000), {"op": "pskb_copy"})
    c = skb(t, "copy1")
    assert (c["alloc"], c["end"], c["headroom"], c["len"], c["data_len"]) == (
        "skbuff_small_head",
        320,
        64,
        1100,
        1000,
    )
    assert c["frags"][0]["refs"] == 2 and c["truesize"] == 320 + 576 + 1000
    assert c["buffer"] != skb(t, "skb")["buffer"]


def test_pskb_expand_head() -> None:
    """pskb_expand_head: re-rounded head, data shifted by nhead, truesize grows (no socket)."""
    t = trace_of(
        A1500, {"op": "skb_put", "len": 100}, {"op": "pskb_expand_head", "nhead": 64, "ntail": 0}
    )
    s = skb(t)
    assert (s["data"], s["tail"], s["end"], s["alloc"]) == (64, 164, 3776, "kmalloc-4k")
    assert s["truesize"] == 3776 + 576 and s["regions"][0]["start"] == 64
    assert t.frames[-1].state["buffers"]["buf1"]["freed"]


def test_pskb_expand_head_on_clone_keeps_old_buffer() -> None:
    """pskb_expand_head on a cloned skb drops one dataref on the old buffer and gets its own."""
    t = trace_of(
        A1500,
        frag(100),
        {"op": "skb_clone", "skb": "c"},
        {"op": "pskb_expand_head", "skb": "c", "nhead": 32},
    )
    c, o = skb(t, "c"), skb(t, "skb")
    assert c["buffer"] != o["buffer"] and (c["dataref"], o["dataref"]) == (1, 1)
    assert not c["cloned"] and c["frags"][0]["refs"] == 2


def test_pskb_expand_head_shared_bugs() -> None:
    """pskb_expand_head with users != 1 hits BUG_ON(skb_shared(skb))."""
    t = trace_of(A1500, {"op": "skb_get"}, {"op": "pskb_expand_head", "nhead": 64})
    assert t.ended_early == "pskb_expand_head_shared"


def test_skb_linearize_expands_by_eat_plus_128() -> None:
    """skb_linearize → __pskb_pull_tail: eat > 0 expands by eat + 128, frags consumed."""
    t = trace_of(
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 66},
        frag(1448),
        frag(1448),
        {"op": "skb_linearize"},
    )
    s = skb(t)
    # eat = 130 + 2896 - 704 = 2322; new size 704 + 2450 = 3154 → 3200 + 320 → kmalloc-4k
    assert (s["end"], s["alloc"], s["tail"], s["data_len"], s["nr_frags"]) == (
        3776,
        "kmalloc-4k",
        130 + 2896,
        0,
        0,
    )
    assert s["truesize"] == 1280 + 4096 + (3776 - 704)
    assert t.frames[-1].state["pages"]["page1"]["refs"] == 0


def test_skb_linearize_in_place_when_room() -> None:
    """__pskb_pull_tail copies into existing tailroom when eat ≤ 0 and the skb is not cloned."""
    t = trace_of(A1500, {"op": "skb_put", "len": 10}, frag(100), {"op": "skb_linearize"})
    s = skb(t)
    assert (s["buffer"], s["tail"], s["end"], s["data_len"]) == ("buf1", 110, 1728, 0)


def test_kfree_vs_consume() -> None:
    """kfree_skb marks the skb dropped (drop tracepoint); consume_skb marks it consumed."""
    a = trace_of(A1500, {"op": "kfree_skb"})
    b = trace_of(A1500, {"op": "consume_skb"})
    assert skb(a)["status"] == "dropped" and skb(b)["status"] == "consumed"
    assert "kfree_skb" in a.frames[-1].narration and "consume_skb" in b.frames[-1].narration
    assert a.frames[-1].state["buffers"]["buf1"]["freed"] and a.frames[-1].mark == "free"


def test_free_of_clone_keeps_shared_head() -> None:
    """Freeing a clone only drops dataref; the head is freed with the last reference."""
    t = trace_of(A1500, {"op": "skb_clone"}, {"op": "kfree_skb", "skb": "clone1"})
    assert not t.frames[-1].state["buffers"]["buf1"]["freed"]
    assert skb(t, "skb")["dataref"] == 1
    t2 = trace_of(
        A1500, {"op": "skb_clone"}, {"op": "kfree_skb", "skb": "clone1"}, {"op": "kfree_skb"}
    )
    assert t2.frames[-1].state["buffers"]["buf1"]["freed"]


def test_use_after_free_ends_scenario() -> None:
    """Any op on a freed skb is a use_after_free outcome that ends the run."""
    t = trace_of(A1500, {"op": "kfree_skb"}, {"op": "skb_put", "len": 1}, {"op": "skb_headroom"})
    assert t.ended_early == "use_after_free" and len(t.frames) == 3
    assert t.frames[-1].mark == "panic"


def test_header_release_dataref_split() -> None:
    """__skb_header_release: dataref 0x10001; a clone makes it 0x10002 (2 refs, 1 payload-only)."""
    t = trace_of(
        {"op": "tcp_stream_alloc_skb", "size": 0},
        {"op": "__skb_header_release"},
        {"op": "skb_clone"},
        {"op": "skb_push", "skb": "clone1", "len": 32},
    )
    o = skb(t, "skb")
    assert (o["dataref"], o["dataref_nohdr"], o["nohdr"]) == (2, 1, True)
    assert not any("skb_cow_head" in n for n in t.frames[-1].notes)
    t2 = trace_of(A1500, {"op": "skb_clone"}, {"op": "skb_push", "skb": "clone1", "len": 0})
    assert any("skb_cow_head" in n for n in t2.frames[-1].notes)


def test_nohdr_orig_release_frees_head_after_clone() -> None:
    """skb_release_data subtracts 0x10001 for a nohdr skb, 1 for its clone; head freed at zero."""
    t = trace_of(
        {"op": "tcp_stream_alloc_skb", "size": 0},
        {"op": "__skb_header_release"},
        {"op": "skb_clone"},
        {"op": "consume_skb"},
        {"op": "consume_skb", "skb": "clone1"},
    )
    assert t.frames[3].state["buffers"]["buf1"]["freed"] is False
    assert t.frames[4].state["buffers"]["buf1"]["freed"] is True


def test_via_names_the_caller() -> None:
    """A "via" caller appears in the narration with its file location."""
    t = trace_of(
        A1500, {"op": "skb_put", "len": 20}, {"op": "skb_pull", "len": 14, "via": "eth_type_trans"}
    )
    assert "eth_type_trans (net/ethernet/eth.c:155)" in t.frames[-1].narration


def test_sources_cite_kernel_functions() -> None:
    """Every frame cites the modelled kernel function with a path and line."""
    t = trace_of(A1500, {"op": "skb_put", "len": 1})
    assert (t.frames[1].source.function, t.frames[1].source.path, t.frames[1].source.line) == (
        "skb_put",
        "net/core/skbuff.c",
        2383,
    )
    assert t.frames[0].source.line == 1285
