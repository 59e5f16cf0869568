"""_skb_refdst and IPv4 reassembly (issue 22 item 10), after Linux 6.4: skb_dst_set_noref
(include/linux/skbuff.h), skb_dst_force / skb_dst_drop (include/net/dst.h), ip_frag_queue and
ip_frag_reasm (net/ipv4/ip_fragment.c) with inet_frag_reasm_prepare / _finish
(net/ipv4/inet_fragment.c)."""

from __future__ import annotations

from app.sim.skbuff.scenarios import IP_DEFRAG
from tests.sim.skbuff.skbhelp import skb, trace_of


def test_noref_force_and_drop() -> None:
    """A borrowed route becomes refcounted only through skb_dst_force; a clone copies it as it
    is (skb_dst_copy); skb_dst_drop clears it either way."""
    t = trace_of(
        {"op": "alloc_skb", "size": 256},
        {"op": "skb_dst_set_noref"},
        {"op": "skb_clone", "from": "skb", "skb": "c"},
        {"op": "skb_dst_force"},
        {"op": "skb_dst_drop", "skb": "c"},
    )
    assert skb(t, "skb", 1)["dst"] == "noref"
    assert skb(t, "c", 2)["dst"] == "noref"
    assert skb(t, "skb", 3)["dst"] == "ref" and skb(t, "c", 3)["dst"] == "noref"
    assert skb(t, "c")["dst"] is None and skb(t, "skb")["dst"] == "ref"


def test_a_queued_fragment_loses_its_borrowed_route_and_its_ip_header() -> None:
    t = trace_of(*IP_DEFRAG["ops"])
    i = next(f.index for f in t.frames if f.op == "ip_frag_queue")
    before, after = skb(t, "frag1", i - 1), skb(t, "frag1", i)
    assert before["dst"] == "noref" and after["dst"] is None
    assert after["data"] - before["data"] == 20 and before["len"] - after["len"] == 20


def test_reassembly_makes_the_last_fragment_the_head_with_a_frag_list() -> None:
    """The in-order case: frag2 (just received) becomes the head over frag1's buffer, a clone
    of frag2 is chained; len 1500 + 528, truesize 2304 + 1280 = 3584 (the truesize measured
    on a real kernel for a 2000-byte UDP datagram over MTU 1500, content/skb-kernel-check.md)."""
    t = trace_of(*IP_DEFRAG["ops"])
    i = next(f.index for f in t.frames if f.op == "ip_frag_reasm")
    frag1_buf = skb(t, "frag1", i - 1)["buffer"]
    head = skb(t, "frag2", i)
    assert head["buffer"] == frag1_buf and head["frag_list"] == ["fp"]
    assert (head["len"], head["data_len"], head["truesize"]) == (2028, 528, 3584)
    assert head["data"] == head["network_header"]  # the IP header pushed back
    assert head["dst"] == "noref"  # _skb_refdst restored after ip_frag_reasm
    assert skb(t, "frag1", i)["status"] == "consumed"
    fp = skb(t, "fp", i)
    assert fp["status"] == "in_frag_list" and fp["len"] == 528 and fp["dst"] is None
    assert t.frames[i].state["buffers"][frag1_buf]["dataref"] == 1
    # one consume_skb frees the head and the whole frag_list
    last = t.frames[-1].state
    assert {s["name"]: s["status"] for s in last["skbs"]}["fp"] == "consumed"
    assert all(b["freed"] for b in last["buffers"].values())


def test_page_pool_recycles_only_at_the_last_data_reference() -> None:
    """skb_mark_for_recycle (include/linux/skbuff.h) sets pp_recycle; a clone copies it
    (__skb_clone); skb_release_data clears it on an skb that does not drop the data last, and
    skb_free_head returns a page-fragment head to the page_pool (page_pool_return_skb_page)."""
    from app.sim.skbuff.scenarios import PAGE_POOL_RX

    t = trace_of(*PAGE_POOL_RX["ops"])
    i = next(f.index for f in t.frames if f.op == "skb_mark_for_recycle")
    assert skb(t, "skb", i)["pp_recycle"] and not skb(t, "skb", i - 1)["pp_recycle"]
    first, last = (f for f in t.frames if f.op == "consume_skb")
    assert skb(t, "clone1", first.index)["pp_recycle"]
    assert not skb(t, "skb", first.index)["pp_recycle"]
    assert not first.state["buffers"]["buf1"]["freed"]
    assert "page_pool_return_skb_page" in last.narration.render()
    assert "page_pool_return_skb_page" not in first.narration.render()
    # a slab head is never offered to the page_pool
    t2 = trace_of(
        {"op": "alloc_skb", "size": 100}, {"op": "skb_mark_for_recycle"}, {"op": "consume_skb"}
    )
    assert "page_pool_return_skb_page" not in t2.frames[-1].narration.render()
