"""MSG_ZEROCOPY (issue 22 item 10): the ubuf_info's references and the completion on the error
queue follow net/core/skbuff.c (Linux 6.4) msg_zerocopy_realloc / msg_zerocopy_alloc,
skb_zerocopy_iter_stream → skb_zcopy_set, net_zcopy_put, and skb_release_data →
skb_zcopy_clear → msg_zerocopy_callback → __msg_zerocopy_callback."""

from __future__ import annotations

from typing import Any

from app.sim.skbuff.scenarios import ZEROCOPY_SEND
from tests.sim.skbuff.skbhelp import skb, trace_of

SEND: list[dict[str, Any]] = [
    {"op": "tcp_stream_alloc_skb", "size": 0},
    {"op": "tcp_skb_entail", "seq": 1000},
    {"op": "msg_zerocopy_realloc", "size": 1448},
    {"op": "skb_zerocopy_iter_stream", "size": 1448, "offset": 100},
]


def test_the_user_pages_become_frags_and_truesize_grows_by_whole_pages() -> None:
    """__zerocopy_sg_from_iter: len/data_len + bytes, truesize + PAGE_ALIGN(bytes + offset);
    1448 bytes starting 100 bytes into a page fit one page (4096)."""
    t = trace_of(*SEND)
    before, after = skb(t, frame=2), skb(t)
    assert after["len"] - before["len"] == 1448 == after["data_len"]
    assert after["truesize"] - before["truesize"] == 4096
    assert [(f["offset"], f["size"]) for f in after["frags"]] == [(100, 1448)]
    # 4000 bytes at offset 100 span two pages: two frags, 8192 bytes of truesize
    t2 = trace_of(*SEND[:3], {"op": "skb_zerocopy_iter_stream", "size": 4000, "offset": 100})
    s2 = skb(t2)
    assert [(f["offset"], f["size"]) for f in s2["frags"]] == [(100, 3996), (0, 4)]
    assert s2["truesize"] - skb(t2, frame=2)["truesize"] == 8192


def test_skb_zcopy_set_takes_a_reference_and_sets_the_shared_frag_flags() -> None:
    t = trace_of(*SEND)
    assert t.frames[2].state["uargs"] == [{"name": "ubuf0", "id": 0, "len": 1, "refcnt": 1}]
    s = skb(t)
    assert s["uarg"] == {"name": "ubuf0", "id": 0, "len": 1, "refcnt": 2}
    assert {"SKBFL_ZEROCOPY_ENABLE", "SKBFL_SHARED_FRAG", "SKBFL_DONT_ORPHAN"} <= set(
        s["shinfo_flags"]
    )
    # a fragless skb is pure zerocopy (tcp_sendmsg_locked)
    assert "SKBFL_PURE_ZEROCOPY" in s["shinfo_flags"]


def test_the_completion_waits_for_the_last_data_reference() -> None:
    """The walkthrough: the clone's free (TX completion) leaves dataref 1 and no notification;
    only __kfree_skb of the retransmit-queue skb queues [0, 0] on the error queue."""
    t = trace_of(*ZEROCOPY_SEND["ops"])
    refcnt = [f.state["uargs"][0]["refcnt"] if f.state["uargs"] else None for f in t.frames]
    put = next(f.index for f in t.frames if f.op == "net_zcopy_put")
    assert refcnt[put - 1] == 2 and refcnt[put] == 1
    clone_freed = next(f for f in t.frames if f.op == "consume_skb")
    assert clone_freed.state["errqueue"] == []
    assert skb(t, "skb", clone_freed.index)["dataref"] == 1
    assert "skb_zcopy_clear" in clone_freed.narration.render()
    last = t.frames[-1]
    assert last.op == "__kfree_skb"
    assert last.state["errqueue"] == ["zerocopy [0, 0]"]
    assert last.state["uargs"][0]["refcnt"] == 0
    assert last.state["pages"]["upage1"]["refs"] == 0


def test_a_second_send_extends_the_same_ubuf_info() -> None:
    """msg_zerocopy_realloc on the tail skb's uarg whose ids end at sk_zckey: len + 1 and one
    more reference for the call (SOCK_STREAM), no new ubuf_info."""
    t = trace_of(
        *SEND,
        {"op": "net_zcopy_put"},
        {"op": "msg_zerocopy_realloc", "size": 1000},
        {"op": "skb_zerocopy_iter_stream", "size": 1000, "offset": 2048},
    )
    assert [u["name"] for u in t.frames[-1].state["uargs"]] == ["ubuf0"]
    u = skb(t)["uarg"]
    assert u == {"name": "ubuf0", "id": 0, "len": 2, "refcnt": 2}


def test_iter_stream_without_a_zerocopy_send_returns_without_change() -> None:
    t = trace_of(
        {"op": "tcp_stream_alloc_skb", "size": 0},
        {"op": "skb_zerocopy_iter_stream", "size": 100},
    )
    assert t.frames[-1].result == "null"
    assert skb(t)["len"] == 0 and skb(t)["uarg"] is None
