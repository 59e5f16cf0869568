"""Allocating an sk_buff and its head: kmalloc sizing and the allocators that use it.

Follows net/core/skbuff.c (Linux 6.4): ``kmalloc_reserve`` (skbuff.c:557) with
``kmalloc_size_roundup`` (mm/slab_common.c:743), ``__alloc_skb`` behind ``alloc_skb`` and
``alloc_skb_fclone`` (include/linux/skbuff.h), ``__netdev_alloc_skb`` and ``__napi_alloc_skb``
(page-fragment heads for receive), ``build_skb``/``napi_build_skb`` (an sk_buff around a buffer
the driver filled) and ``tcp_stream_alloc_skb`` (net/ipv4/tcp.c). Numbers are x86-64 with SLUB
and 4 KiB pages: NET_SKB_PAD 64, NET_IP_ALIGN 0, MAX_TCP_HEADER 320.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.sim.core import msg
from app.sim.skbuff.ops import Op
from app.sim.skbuff.skb import (
    CHECKSUM_PARTIAL,
    PAGE_SIZE,
    SHINFO,
    SMP_CACHE_BYTES,
    TRUESIZE_OVERHEAD,
    Buffer,
    Skb,
    Step,
    Text,
    World,
    make_step,
    null_step,
)

SMALL_HEAD_CACHE_SIZE = 640  # SKB_SMALL_HEAD_CACHE_SIZE = SKB_HEAD_ALIGN(MAX_TCP_HEADER)
NET_SKB_PAD = 64
NET_IP_ALIGN = 0
MAX_TCP_HEADER = 320
KMALLOC_BUCKETS = (8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)
KMALLOC_MAX_CACHE_SIZE = 8192
KMALLOC_MAX_SIZE = PAGE_SIZE << 10  # 4 MiB
NAPI_SMALL_FRAG = 1024
SMALL_FRAG_END = NAPI_SMALL_FRAG - SHINFO  # SKB_WITH_OVERHEAD(1024) = 704
PAGE_HEAD_MAX = PAGE_SIZE - SHINFO  # SKB_WITH_OVERHEAD(PAGE_SIZE) = 3776
# Kernels newer than 6.4: the 6.12 small-head cache holds 704 bytes, so data areas up to 384 fit.
SMALL_HEAD_6_12_DATA = 384


# ---- allocation arithmetic (pure) ------------------------------------------------------------
def data_align(x: int) -> int:
    """SKB_DATA_ALIGN: round up to SMP_CACHE_BYTES (64)."""
    return -(-x // SMP_CACHE_BYTES) * SMP_CACHE_BYTES


def head_align(x: int) -> int:
    """SKB_HEAD_ALIGN: aligned data area plus the aligned skb_shared_info."""
    return data_align(x) + SHINFO


def get_order(size: int) -> int:
    """get_order(): the smallest page order whose block holds ``size`` bytes."""
    order = 0
    while (PAGE_SIZE << order) < size:
        order += 1
    return order


def kmalloc_size_roundup(size: int) -> int:
    """kmalloc_size_roundup() (mm/slab_common.c:743) for SLUB on x86-64 with 4 KiB pages."""
    if size == 0:
        return 0
    if size > KMALLOC_MAX_CACHE_SIZE:
        return PAGE_SIZE << get_order(size)
    return next(b for b in KMALLOC_BUCKETS if b >= size)


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadAlloc:
    """Where a head buffer came from and how many bytes were really allocated."""

    where: str
    nbytes: int

    @property
    def end(self) -> int:
        return self.nbytes - SHINFO


def kmalloc_reserve(size: int) -> HeadAlloc | None:
    """kmalloc_reserve() (net/core/skbuff.c:557): small-head cache, kmalloc bucket or pages."""
    obj = head_align(size)
    if obj <= SMALL_HEAD_CACHE_SIZE:
        return HeadAlloc(where="skbuff_small_head", nbytes=SMALL_HEAD_CACHE_SIZE)
    got = kmalloc_size_roundup(obj)
    if got > KMALLOC_MAX_SIZE:
        return None
    if got > KMALLOC_MAX_CACHE_SIZE:
        return HeadAlloc(where=f"pages order {get_order(got)}", nbytes=got)
    name = f"kmalloc-{got // 1024}k" if got >= 1024 else f"kmalloc-{got}"
    return HeadAlloc(where=name, nbytes=got)


# ---- the allocators --------------------------------------------------------------------------


def new_buffer(w: World, alloc: HeadAlloc, *, head_frag: bool = False) -> Buffer:
    """A fresh head buffer (dataref 1) of ``alloc``'s size, skb_shared_info at its end."""
    b = Buffer(
        id=w.next_id("buf"),
        nbytes=alloc.nbytes,
        end=alloc.end,
        where=alloc.where,
        head_frag=head_frag,
    )
    w.buffers[b.id] = b
    return b


def new_skb(
    w: World,
    name: str,
    alloc: HeadAlloc,
    *,
    fclone: str = "none",
    origin: str,
    head_frag: bool = False,
) -> Skb:
    """__alloc_skb's sk_buff around a new head: data = tail = 0, truesize SKB_TRUESIZE(end);
    ``fclone="orig"`` takes the first half of an skbuff_fclone_cache pair."""
    b = new_buffer(w, alloc, head_frag=head_frag)
    s = Skb(name=name, buffer=b.id, end=b.end, truesize=b.end + TRUESIZE_OVERHEAD, origin=origin)
    if fclone == "orig":
        s.fclone = "orig"
        s.pair = w.next_id("fc")
        w.fclone_refs[s.pair] = 1
    w.skbs[name] = s
    return s


def _alloc_narr(call: Text, size: int, alloc: HeadAlloc) -> Text:
    obj = head_align(size)
    if alloc.where == "skbuff_small_head":
        how = msg(
            "SKB_HEAD_ALIGN({size}) = {data_align} + 320 = {obj} bytes fits the 640-byte skbuff_small_head cache",
            size=size,
            data_align=data_align(size),
            obj=obj,
        )
    else:
        how = msg(
            "SKB_HEAD_ALIGN({size}) = {data_align} + 320 = {obj} bytes is served by {where} ({nbytes} bytes)",
            size=size,
            data_align=data_align(size),
            obj=obj,
            where=alloc.where,
            nbytes=alloc.nbytes,
        )
    slack = alloc.end - size
    return msg(
        "{call} sizes the head with kmalloc_reserve: {how}. skb_shared_info takes the last 320 bytes, so end = {end}; the {slack} bytes of rounding slack become tailroom. truesize = end + 576 = {alloc_end_truesize_overhead}.",
        call=call,
        how=how,
        end=alloc.end,
        slack=slack,
        alloc_end_truesize_overhead=alloc.end + TRUESIZE_OVERHEAD,
    )


def _alloc_notes(size: int) -> tuple[Text, ...]:
    if data_align(size) <= SMALL_HEAD_6_12_DATA:
        return (
            msg(
                "Linux 6.12 grows the small-head cache to 704 bytes (it must also fit GRO_MAX_HEAD + NET_SKB_PAD), so a data area this small gets end = 384 and truesize = 960 there."
            ),
        )
    return ()


def _kmalloc_or_null(w: World, op: Op, size: int) -> HeadAlloc | Step:
    alloc = kmalloc_reserve(size)
    if alloc is None:
        return null_step(
            op,
            op.skb,
            msg(
                "A {head_align}-byte head is larger than KMALLOC_MAX_SIZE (4 MiB); the allocation fails and {op} returns NULL.",
                head_align=head_align(size),
                op=op.op,
            ),
        )
    return alloc


def alloc_skb(w: World, op: Op) -> Step:
    size = op.size or 0
    alloc = _kmalloc_or_null(w, op, size)
    if isinstance(alloc, Step):
        return alloc
    new_skb(w, op.skb, alloc, origin="alloc_skb")
    text = _alloc_narr(msg("alloc_skb({size}) → __alloc_skb", size=size), size, alloc) + msg(
        " data = tail = 0: headroom 0, len 0."
    )
    return make_step(op, op.skb, "ok", text, notes=_alloc_notes(size))


def alloc_skb_fclone(w: World, op: Op) -> Step:
    size = op.size or 0
    alloc = _kmalloc_or_null(w, op, size)
    if isinstance(alloc, Step):
        return alloc
    new_skb(w, op.skb, alloc, fclone="orig", origin="alloc_skb_fclone")
    text = _alloc_narr(f"alloc_skb_fclone({size})", size, alloc) + msg(
        " The sk_buff comes from skbuff_fclone_cache as the first half of a pair (fclone = orig, fclone_ref 1): a later skb_clone can use the companion without allocating."
    )
    return make_step(op, op.skb, "ok", text, notes=_alloc_notes(size))


def _rx_alloc(w: World, op: Op, napi: bool) -> Step:
    want = op.len or 0
    # __napi_alloc_skb adds NET_SKB_PAD + NET_IP_ALIGN; __netdev_alloc_skb only NET_SKB_PAD.
    pad = NET_SKB_PAD + NET_IP_ALIGN if napi else NET_SKB_PAD
    padded = want + pad
    fn = "__napi_alloc_skb" if napi else "__netdev_alloc_skb"
    notes: tuple[Text, ...] = ()
    head_frag = True
    if napi and padded <= SMALL_FRAG_END:
        alloc = HeadAlloc(where="napi 1K frag", nbytes=NAPI_SMALL_FRAG)
        how = msg(
            "{padded} ≤ 704, so it takes a fixed 1 KiB page fragment (NAPI_HAS_SMALL_PAGE_FRAG): end = SKB_WITH_OVERHEAD(1024) = 704",
            padded=padded,
        )
    elif (not napi and padded <= SMALL_FRAG_END) or padded > PAGE_HEAD_MAX:
        got = _kmalloc_or_null(w, op, padded)
        if isinstance(got, Step):
            return got
        alloc = got
        head_frag = False
        why = "≤ 704" if padded <= SMALL_FRAG_END else msg("> 3776 (more than a page)")
        how = msg(
            "{padded} is {why}, so it falls back to __alloc_skb: SKB_HEAD_ALIGN({padded}) = {head_align} from {where} ({nbytes} bytes), end = {end}",
            padded=padded,
            why=why,
            head_align=head_align(padded),
            where=alloc.where,
            nbytes=alloc.nbytes,
            end=alloc.end,
        )
        if not napi:
            notes = (
                msg(
                    "Linux 6.12 moves this lower threshold to the small-head cache size (SKB_WITH_OVERHEAD(704) = 384)."
                ),
            )
    else:
        alloc = HeadAlloc(where="page_frag", nbytes=head_align(padded))
        how = msg(
            "704 < {padded} ≤ 3776, so the head is a page fragment of SKB_HEAD_ALIGN({padded}) = {data_align} + 320 = {nbytes} bytes (head_frag = 1), end = {end}",
            padded=padded,
            data_align=data_align(padded),
            nbytes=alloc.nbytes,
            end=alloc.end,
        )
    s = new_skb(w, op.skb, alloc, origin=op.op, head_frag=head_frag)
    s.data = s.tail = pad
    added = (
        msg("NET_SKB_PAD 64 + NET_IP_ALIGN 0 (x86-64)")
        if napi
        else msg("NET_SKB_PAD 64 (no NET_IP_ALIGN)")
    )
    text = msg(
        "{fn}(len {want}) adds {added} → {padded}. {how}. truesize = end + 576 = {truesize}. It then skb_reserve()s {pad}: data = tail = {pad}, headroom {pad}, tailroom {s_end_s_tail}.",
        fn=fn,
        want=want,
        added=added,
        padded=padded,
        how=how,
        truesize=s.truesize,
        pad=pad,
        s_end_s_tail=s.end - s.tail,
    )
    return make_step(op, op.skb, "ok", text, notes=notes)


def netdev_alloc_skb(w: World, op: Op) -> Step:
    return _rx_alloc(w, op, napi=False)


def napi_alloc_skb(w: World, op: Op) -> Step:
    return _rx_alloc(w, op, napi=True)


def _build(w: World, op: Op, napi: bool) -> Step:
    """build_skb/napi_build_skb: an sk_buff around a buffer the driver already filled."""
    frag_size = op.size or 0
    alloc = HeadAlloc(where="driver page frag", nbytes=frag_size)
    s = new_skb(w, op.skb, alloc, origin=op.op, head_frag=True)
    fn = "napi_build_skb" if napi else "build_skb"
    whence = (
        msg("from the per-CPU NAPI cache (napi_skb_cache_get)")
        if napi
        else msg("from skbuff_cache (kmem_cache_alloc)")
    )
    text = msg(
        "{fn}(data, frag_size {frag_size}) allocates only the sk_buff, {whence}; the head is the driver's receive buffer, which the NIC has already written. __finalize_skb_around puts skb_shared_info in its last 320 bytes: end = {frag_size} − 320 = {end}, truesize = SKB_TRUESIZE(end) = {end} + 576 = {truesize}. data = tail = 0 and head_frag = 1 (the head is part of a page). The driver then skb_reserve()s its headroom and __skb_put()s the frame length.",
        fn=fn,
        frag_size=frag_size,
        whence=whence,
        end=s.end,
        truesize=s.truesize,
    )
    return make_step(op, op.skb, "ok", text)


def build_skb(w: World, op: Op) -> Step:
    return _build(w, op, napi=False)


def napi_build_skb(w: World, op: Op) -> Step:
    return _build(w, op, napi=True)


def tcp_stream_alloc_skb(w: World, op: Op) -> Step:
    size = op.size or 0
    total = size + MAX_TCP_HEADER
    alloc = _kmalloc_or_null(w, op, total)
    if isinstance(alloc, Step):
        return alloc
    s = new_skb(w, op.skb, alloc, fclone="orig", origin="tcp_stream_alloc_skb")
    s.truesize = alloc.end + TRUESIZE_OVERHEAD  # SKB_TRUESIZE(skb_end_offset(skb))
    s.data = s.tail = MAX_TCP_HEADER
    s.ip_summed = CHECKSUM_PARTIAL
    text = msg(
        "tcp_stream_alloc_skb({size}) calls alloc_skb_fclone({size} + MAX_TCP_HEADER 320 = {total}): SKB_HEAD_ALIGN({total}) = {head_align} → {where} ({nbytes} bytes), end = {end}. It sets truesize = SKB_TRUESIZE(end) = {truesize} and reserves 320 bytes for the TCP, IP and link headers: headroom {data}, tailroom {s_end_s_tail}. User data will go into page frags. ip_summed = CHECKSUM_PARTIAL: the device (or skb_checksum_help) will finish the TCP checksum.",
        size=size,
        total=total,
        head_align=head_align(total),
        where=alloc.where,
        nbytes=alloc.nbytes,
        end=alloc.end,
        truesize=s.truesize,
        data=s.data,
        s_end_s_tail=s.end - s.tail,
    )
    return make_step(op, op.skb, "ok", text, notes=_alloc_notes(total))
