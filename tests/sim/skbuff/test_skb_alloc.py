"""Head sizing of every allocator against the facts sheet §1.4-1.5 truth tables."""

from __future__ import annotations

import pytest
from skbhelp import skb, trace_of

from app.sim.skbuff.alloc import kmalloc_reserve, kmalloc_size_roundup


@pytest.mark.parametrize(
    ("size", "end", "truesize", "where"),
    [
        (0, 320, 896, "skbuff_small_head"),
        (128, 320, 896, "skbuff_small_head"),
        (320, 320, 896, "skbuff_small_head"),
        (321, 704, 1280, "kmalloc-1k"),
        (1500, 1728, 2304, "kmalloc-2k"),
        (3000, 3776, 4352, "kmalloc-4k"),
        (4000, 7872, 8448, "kmalloc-8k"),
        (8000, 16064, 16640, "pages order 2"),
    ],
)
def test_alloc_skb_truth_table(size: int, end: int, truesize: int, where: str) -> None:
    """alloc_skb/__alloc_skb: kmalloc_reserve slack all becomes tailroom; truesize = end + 576."""
    s = skb(trace_of({"op": "alloc_skb", "size": size}))
    assert (s["end"], s["truesize"], s["alloc"]) == (end, truesize, where)
    assert (s["data"], s["tail"], s["len"], s["headroom"], s["tailroom"]) == (0, 0, 0, 0, end)
    assert s["alloc_bytes"] == end + 320


def test_alloc_skb_fclone_is_orig() -> None:
    """alloc_skb_fclone sizes like alloc_skb and marks the skb as an fclone orig."""
    s = skb(trace_of({"op": "alloc_skb_fclone", "size": 1500}))
    assert (s["end"], s["truesize"], s["fclone"]) == (1728, 2304, "orig")


def test_netdev_alloc_skb_1500() -> None:
    """__netdev_alloc_skb(1500): 1564 → page frag of 1920, end 1600, truesize 2176, headroom 64."""
    s = skb(trace_of({"op": "netdev_alloc_skb", "len": 1500}))
    assert (s["end"], s["truesize"], s["headroom"], s["tailroom"]) == (1600, 2176, 64, 1536)
    assert (s["alloc"], s["alloc_bytes"]) == ("page_frag", 1920)


def test_netdev_alloc_skb_small_uses_alloc_skb() -> None:
    """__netdev_alloc_skb with len + 64 ≤ 704 takes the __alloc_skb path (small-head cache)."""
    s = skb(trace_of({"op": "netdev_alloc_skb", "len": 100}))
    assert (s["alloc"], s["end"], s["headroom"], s["tailroom"]) == (
        "skbuff_small_head",
        320,
        64,
        256,
    )


def test_netdev_alloc_skb_large_uses_kmalloc() -> None:
    """__netdev_alloc_skb with len + 64 > 3776 falls back to __alloc_skb (kmalloc-8k here)."""
    s = skb(trace_of({"op": "netdev_alloc_skb", "len": 4000}))
    assert (s["alloc"], s["end"], s["truesize"], s["headroom"]) == ("kmalloc-8k", 7872, 8448, 64)


def test_napi_alloc_skb_256() -> None:
    """__napi_alloc_skb(256): 320 ≤ 704 → fixed 1 KiB frag: end 704, truesize 1280, headroom 64."""
    s = skb(trace_of({"op": "napi_alloc_skb", "len": 256}))
    assert (s["end"], s["truesize"], s["headroom"], s["tailroom"]) == (704, 1280, 64, 640)
    assert (s["alloc"], s["alloc_bytes"]) == ("napi 1K frag", 1024)


def test_napi_alloc_skb_page_frag_and_fallback() -> None:
    """__napi_alloc_skb: 704 < len+64 ≤ 3776 → page frag; larger → __alloc_skb."""
    mid = skb(trace_of({"op": "napi_alloc_skb", "len": 1514}))
    assert (mid["alloc"], mid["end"], mid["tailroom"]) == ("page_frag", 1600, 1536)
    big = skb(trace_of({"op": "napi_alloc_skb", "len": 9000}))
    assert big["alloc"] == "pages order 2" and big["headroom"] == 64


def test_tcp_stream_alloc_skb_zero() -> None:
    """tcp_stream_alloc_skb(0): alloc_skb_fclone(320) + reserve 320 → headroom 320, tailroom 0."""
    s = skb(trace_of({"op": "tcp_stream_alloc_skb", "size": 0}))
    assert (s["end"], s["headroom"], s["tailroom"], s["truesize"]) == (320, 320, 0, 896)
    assert s["fclone"] == "orig"


def test_kmalloc_size_roundup_buckets() -> None:
    """kmalloc_size_roundup: SLUB buckets 8..8192, then PAGE_SIZE << get_order."""
    assert [kmalloc_size_roundup(n) for n in (0, 1, 9, 97, 200, 513, 8192, 8193, 20000)] == [
        0,
        8,
        16,
        128,
        256,
        1024,
        8192,
        16384,
        32768,
    ]


def test_kmalloc_reserve_caps_at_4mib() -> None:
    """kmalloc_reserve: heads up to KMALLOC_MAX_SIZE (4 MiB) succeed, larger ones fail."""
    ok = kmalloc_reserve(4 * 1024 * 1024 - 320)
    assert ok is not None and ok.where == "pages order 10"
    assert kmalloc_reserve(4 * 1024 * 1024) is None


def test_small_head_note_mentions_6_12() -> None:
    """Alloc frames in the 6.12 small-head range carry the 704-byte cache note (facts §1.7)."""
    t = trace_of({"op": "alloc_skb", "size": 128})
    assert any("6.12" in n for n in t.frames[0].notes)
    assert not trace_of({"op": "alloc_skb", "size": 1500}).frames[0].notes
