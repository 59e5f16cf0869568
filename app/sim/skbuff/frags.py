"""Paged data: page frags, and GRO merging a segment into the packet it holds.

Follows Linux 6.4: ``skb_add_rx_frag`` (net/core/skbuff.c:851) and ``skb_fill_page_desc``
(include/linux/skbuff.h:2488) append to ``skb_shinfo(skb)->frags[]``; ``skb_gro_receive``
(net/core/gro.c:153) merges a segment into the held packet: into frags[] when the segment's
headers are all linear, by stealing a page-fragment head, else by chaining it on frag_list;
``skb_gro_receive_list`` (net/ipv4/udp_offload.c:429) always chains.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.sim.core import msg
from app.sim.skbuff.free import release
from app.sim.skbuff.ops import Op
from app.sim.skbuff.skb import (
    DATAREF_MASK,
    DATAREF_SHIFT,
    MAX_SKB_FRAGS,
    PAGE_SIZE,
    SKB_STRUCT,
    TRUESIZE_OVERHEAD,
    Frag,
    Skb,
    Step,
    Text,
    World,
    grew,
    make_step,
    null_step,
)
from app.sim.skbuff.sources import SOURCES

# 6.4's skb_gro_receive_list refuses p->len + skb->len >= 65536; skb_gro_receive compares
# p->len + skb_gro_len(skb) with dev->gro_ipv4_max_size, GRO_LEGACY_MAX_SIZE (65536) by default.
GRO_MAX_SIZE = 65536
HALF_PAGE_TRUESIZE = PAGE_SIZE // 2


def default_frag_truesize(size: int) -> int:
    """Default truesize charged for an RX frag: half a page (igb/ixgbe style), else whole pages."""
    if size <= HALF_PAGE_TRUESIZE:
        return HALF_PAGE_TRUESIZE
    return -(-size // PAGE_SIZE) * PAGE_SIZE


def _frag_overflow(w: World, op: Op, s: Skb, fn: str) -> Step:
    """An 18th frag: nothing in skb_fill_page_desc checks the index."""
    b = w.buf(s)
    i = len(b.frags)
    if b.head_frag or b.where.startswith("pages"):
        where = msg(
            "past the end of the head buffer. This head was carved from a page ({where}), not a slab object, so there is no slab redzone behind it and KASAN does not flag the write: it silently overwrites whatever the page holds next, typically another packet's buffer",
            where=b.where,
        )
        bug = f"frags[{i}] written past the head: silent memory corruption (no KASAN report)"
    else:
        where = msg(
            "past the end of the {where} slab object that holds the head, so a KASAN kernel reports a slab-out-of-bounds write; without KASAN it silently corrupts the neighbouring object",
            where=b.where,
        )
        bug = f"BUG: KASAN: slab-out-of-bounds in {fn} (frags[{i}])"
    text = msg(
        "The skb already has MAX_SKB_FRAGS = {max_skb_frags} frags. {fn} → skb_fill_page_desc does not check the index: frags[{i}] would lie just after skb_shared_info's array, which ends exactly at the end of the allocation — {where}. Callers stop before this: skb_gro_receive chains the segment on frag_list instead when its frags would not fit, and tcp_sendmsg_locked starts a new skb once sysctl_max_skb_frags is reached. The simulation treats it as fatal.",
        max_skb_frags=MAX_SKB_FRAGS,
        fn=fn,
        i=i,
        where=where,
    )
    return make_step(op, s.name, "skb_frag_overflow", text, bug=bug)


def _append_frag(
    w: World, s: Skb, offset: int, size: int, truesize: int
) -> tuple[str, int, int, int]:
    """__skb_fill_page_desc on frags[nr_frags] (a fresh page slice, one reference), then
    skb_len_add: len and data_len grow by ``size``, truesize by ``truesize``. Returns the page
    and len, data_len and truesize as they were."""
    page = w.next_id("page")
    w.pages[page] = 1
    w.buf(s).frags.append(Frag(page=page, offset=offset, size=size))
    l0, dl0, t0 = s.len, s.data_len, s.truesize
    s.len += size
    s.data_len += size
    s.truesize += truesize
    return page, l0, dl0, t0


def skb_add_rx_frag(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    b = w.buf(s)
    size = op.size or 0
    offset = op.offset or 0
    ts = op.truesize if op.truesize is not None else default_frag_truesize(size)
    if len(b.frags) >= MAX_SKB_FRAGS:
        return _frag_overflow(w, op, s, "skb_add_rx_frag")
    page, l0, dl0, t0 = _append_frag(w, s, offset, size, ts)
    ts_why = (
        "given"
        if op.truesize is not None
        else msg("default: half a 4 KiB page, as igb/ixgbe charge")
        if size <= HALF_PAGE_TRUESIZE
        else msg("default: the whole pages it spans")
    )
    text = msg(
        "skb_add_rx_frag attaches {size} bytes at offset {offset} of {page} as frags[{len_b_frags_1}]: nr_frags {len_b_frags_1} → {n_frags}, len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} → {truesize} (+{ts}, {ts_why}). The head is untouched; skb_tailroom is now 0.",
        size=size,
        offset=offset,
        page=page,
        len_b_frags_1=len(b.frags) - 1,
        n_frags=len(b.frags),
        ts=ts,
        ts_why=ts_why,
        **grew(s, l0, dl0, t0),
    )
    notes: list[Text] = []
    if s.origin == "tcp_stream_alloc_skb":
        notes.append(
            msg(
                "skb_add_rx_frag is a receive-side helper; on transmit tcp_sendmsg_locked copies into the socket's page frag and uses skb_fill_page_desc (charging truesize by the bytes copied)."
            )
        )
    if w.skb_cloned(s):
        notes.append(
            msg(
                "The skb_shared_info is shared with a clone, which now sees a frag its len does not count; drivers only add frags to private skbs."
            )
        )
    return make_step(op, s.name, "ok", text, notes=tuple(notes))


def skb_fill_page_desc(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    b = w.buf(s)
    size = op.size or 0
    offset = op.offset or 0
    if len(b.frags) >= MAX_SKB_FRAGS:
        return _frag_overflow(w, op, s, "skb_fill_page_desc")
    i = len(b.frags)
    page, l0, dl0, t0 = _append_frag(w, s, offset, size, size)
    seq_note: Text = ""
    if s.cb_layer == "TCP_SKB_CB" and "end_seq" in s.cb:
        e0 = s.cb["end_seq"]
        s.cb["end_seq"] = (e0 + size) & 0xFFFFFFFF
        seq_note = msg(
            " tcp_sendmsg_locked also advances write_seq and TCP_SKB_CB(skb)->end_seq: {e0} → {s_cb_end_seq}.",
            e0=e0,
            s_cb_end_seq=s.cb["end_seq"],
        )
    text = msg(
        "The transmit path copies {size} bytes of user data into the socket's page frag ({page}, offset {offset}); skb_copy_to_page_nocache accounts them with skb_len_add: len {l0} → {len}, data_len {dl0} → {data_len} and truesize {t0} → {truesize} all grow by the {size} bytes copied. skb_fill_page_desc then records the page as frags[{i}] (nr_frags {i} → {i_1}) and the page gets a reference. The head is untouched; skb_tailroom is now 0.{seq_note}",
        size=size,
        page=page,
        offset=offset,
        i=i,
        i_1=i + 1,
        seq_note=seq_note,
        **grew(s, l0, dl0, t0),
    )
    notes: tuple[Text, ...] = ()
    if w.skb_cloned(s):
        notes = (
            msg(
                "The skb_shared_info is shared with a clone, which now sees a frag its len does not count; tcp_sendmsg_locked only appends to skbs not yet sent."
            ),
        )
    return make_step(op, s.name, "ok", text, notes=notes)


def _gro_too_big(w: World, op: Op, p: Skb, total: int, what: Text) -> Step:
    return null_step(
        op,
        p.name,
        msg(
            "{what} = {total} ≥ 65536: {sources_op_op_function} returns -E2BIG and nothing changes; GRO flushes the held packet up the stack and this segment starts a new one.",
            what=what,
            total=total,
            sources_op_op_function=SOURCES[op.op].function,
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Gro:
    """One GRO merge in progress: held packet ``p``, segment ``s`` (its headers ``offset``
    bytes long), and ``lp``, NAPI_GRO_CB(p)->last, whose frags[] receive the payload."""

    p: Skb
    s: Skb
    lp: Skb
    offset: int
    headlen: int  # skb_headlen(s)
    into: Text  # how the narration names lp


@dataclass(frozen=True, slots=True, kw_only=True)
class _Merged:
    """What one of skb_gro_receive's three ways did: the words, and the truesize that moves
    to ``p`` (delta_truesize). ``chained``: the merge label, after which lp is p itself."""

    how: Text
    freed: Text
    delta: int
    chained: bool = False


def _gro_refused(w: World, op: Op, p: Skb, s: Skb, offset: int) -> Step | None:
    """What stops the merge before anything changes: a segment this model does not take, or
    -E2BIG when p->len + skb_gro_len(skb) reaches gro_ipv4_max_size."""
    sb = w.buf(s)
    headlen = s.len - s.data_len
    if sb.frag_list:
        return null_step(
            op,
            p.name,
            msg(
                "'{name}' already carries a frag_list; a segment fresh from the driver never does, so this merge is not modelled and nothing changes.",
                name=s.name,
            ),
        )
    # never past the segment's own length (a clone made before a frag was added shares
    # that frag in skb_shared_info but does not count it in its len)
    reach = min(s.len, headlen + (sb.frags[0].size if sb.frags else 0))
    if offset > reach:
        return null_step(
            op,
            p.name,
            msg(
                "The GRO header offset {offset} is beyond '{name}''s linear part and first frag ({reach} bytes); headers never extend that far, so nothing is merged.",
                offset=offset,
                name=s.name,
                reach=reach,
            ),
        )
    seg_len = s.len - offset  # skb_gro_len(): the payload after the parsed headers
    if p.len + seg_len >= GRO_MAX_SIZE:
        return _gro_too_big(
            w,
            op,
            p,
            p.len + seg_len,
            msg(
                "'{name}' len {len} + skb_gro_len('{name2}') {seg_len}",
                name=p.name,
                len=p.len,
                name2=s.name,
                seg_len=seg_len,
            ),
        )
    return None


def skb_gro_receive(w: World, op: Op) -> Step:
    """skb_gro_receive (net/core/gro.c:153): the size check, then the first of its three ways
    that fits: frags into lp's frags[], a stolen page-fragment head, else the frag_list."""
    p = w.skbs[op.skb]
    s = w.skbs[op.src or ""]
    offset = op.offset or 0
    refused = _gro_refused(w, op, p, s, offset)
    if refused is not None:
        return refused
    seg_len = s.len - offset
    pb = w.buf(p)
    lp = w.skbs[pb.frag_list[-1]] if pb.frag_list else p
    into = f"'{lp.name}'" + (
        "" if lp is p else msg(" (the last skb on '{name}''s frag_list)", name=p.name)
    )
    g = _Gro(p=p, s=s, lp=lp, offset=offset, headlen=s.len - s.data_len, into=into)
    lfrags, sfrags = len(w.buf(lp).frags), len(w.buf(s).frags)
    if g.headlen <= offset and lfrags + sfrags <= MAX_SKB_FRAGS:
        merged = _merge_frags(w, g)
    elif (
        g.headlen > offset
        and w.buf(s).head_frag
        and lfrags + 1 + sfrags <= MAX_SKB_FRAGS
        and not w.skb_cloned(s)
    ):
        merged = _steal_head(w, g)
    else:
        merged = _chain(w, g)
    return _gro_done(w, op, g, merged, seg_len)


def _merge_frags(w: World, g: _Gro) -> _Merged:
    """``headlen <= offset``: every header is linear, so the segment's frags move to lp's
    frags[] (the first advanced past the header bytes it held); GRO_MERGED_FREE."""
    s, sb, lb = g.s, w.buf(g.s), w.buf(g.lp)
    eat = g.offset - g.headlen
    n0 = len(lb.frags)
    moved = sb.frags
    if moved and eat:
        moved[0].offset += eat
        moved[0].size -= eat
    lb.frags.extend(moved)
    sb.frags = []
    new_ts = s.end + TRUESIZE_OVERHEAD
    delta = s.truesize - new_ts
    s.truesize = new_ts
    s.len -= s.data_len
    s.data_len = 0
    how = (
        msg(
            "All of '{name}''s headers are in its linear part (headlen {headlen} ≤ offset {offset}), so its {n_moved} page frag(s) move into {into}'s frags[] (nr_frags {n0} → {n_frags}) without copying",
            name=s.name,
            headlen=g.headlen,
            offset=g.offset,
            n_moved=len(moved),
            into=g.into,
            n0=n0,
            n_frags=len(lb.frags),
        )
        + (msg("; the first is advanced by {eat} header bytes", eat=eat) if eat else "")
        + msg(
            ". '{name}' keeps only its head: its truesize becomes SKB_TRUESIZE(end) = {new_ts}, and the other {delta} bytes of truesize move with the pages.",
            name=s.name,
            new_ts=new_ts,
            delta=delta,
        )
    )
    freed = (
        msg(
            " napi_skb_finish then frees the emptied '{name}' and its head (GRO_MERGED_FREE): ",
            name=s.name,
        )
        + release(w, s, "consumed")
        + msg(".")
    )
    return _Merged(how=how, freed=freed, delta=delta)


def _steal_head(w: World, g: _Gro) -> _Merged:
    """``skb->head_frag``: the head is part of a page, so the bytes after the headers become
    a frag of lp, followed by the segment's own frags; GRO_MERGED_FREE_STOLEN_HEAD."""
    p, s, sb, lb = g.p, g.s, w.buf(g.s), w.buf(g.lp)
    first = g.headlen - g.offset
    page = w.next_id("page")
    w.pages[page] = 1
    n0 = len(lb.frags)
    lb.frags.append(Frag(page=page, offset=s.data + g.offset, size=first))
    lb.frags.extend(sb.frags)
    nmoved = len(sb.frags)
    sb.frags = []
    delta = s.truesize - SKB_STRUCT
    s.truesize = SKB_STRUCT
    sb.stolen_by = p.name
    sb.freed = True
    sb.dataref = 0
    how = (
        msg(
            "'{name}''s payload is in its head (headlen {headlen} > offset {offset}) and the head is a page fragment (head_frag), so GRO steals the head: the {first} bytes after the headers become a frag of {into} ({page} = {id}'s page, offset {s_data_offset})",
            name=s.name,
            headlen=g.headlen,
            offset=g.offset,
            first=first,
            into=g.into,
            page=page,
            id=sb.id,
            s_data_offset=s.data + g.offset,
        )
        + (msg(", followed by its {nmoved} frag(s)", nmoved=nmoved) if nmoved else "")
        + msg(
            " (nr_frags {n0} → {n_frags}). '{name}' keeps truesize SKB_DATA_ALIGN(sizeof(struct sk_buff)) = {skb_struct}; the other {delta} bytes move with the page.",
            n0=n0,
            n_frags=len(lb.frags),
            name=s.name,
            skb_struct=SKB_STRUCT,
            delta=delta,
        )
    )
    s.users -= 1
    s.status = "consumed"
    if s.pair is not None:
        w.fclone_refs[s.pair] -= 1
    freed = msg(
        " napi_skb_finish frees only the sk_buff (napi_skb_free_stolen_head): its head lives on inside '{name}'.",
        name=p.name,
    )
    return _Merged(how=how, freed=freed, delta=delta)


def _chain(w: World, g: _Gro) -> _Merged:
    """The ``merge:`` label: pull the headers off the segment and link it on p's frag_list
    after NAPI_GRO_CB(p)->last; its socket ownership and all its truesize move to p."""
    p, s, sb, lb = g.p, g.s, w.buf(g.s), w.buf(g.lp)
    offset, headlen = g.offset, g.headlen
    full = len(lb.frags) + len(sb.frags) + (0 if headlen <= offset else 1)
    why = (
        msg(
            "{into} already has {n_frags} frags and {full} would exceed MAX_SKB_FRAGS = {max_skb_frags}",
            into=g.into,
            n_frags=len(lb.frags),
            full=full,
            max_skb_frags=MAX_SKB_FRAGS,
        )
        if full > MAX_SKB_FRAGS
        else msg(
            "the payload sits in '{name}''s head, which is not a page fragment (head_frag 0), so it cannot become a frag",
            name=s.name,
        )
    )
    eat = max(0, offset - headlen)
    if eat and sb.frags:
        sb.frags[0].offset += eat
        sb.frags[0].size -= eat
        s.data_len -= eat
        s.len -= eat
    pull = min(offset, headlen)
    s.data += pull
    s.len -= pull
    delta = s.truesize
    w.buf(p).frag_list.append(s.name)
    s.status = "in_frag_list"
    s.owner = p.name
    s.has_sk = False
    s.nohdr = True
    sb.dataref = 1 + (1 << DATAREF_SHIFT) if (sb.dataref & DATAREF_MASK) == 1 else sb.dataref
    how = msg(
        "Its frags cannot be merged ({why}), so skb_gro_receive falls back to chaining: it pulls the {offset} header bytes off '{name}', links it on '{name2}''s frag_list (after NAPI_GRO_CB(p)->last), marks its header released and drops its destructor; all of its truesize ({delta}) moves to '{name2}'.",
        why=why,
        offset=offset,
        name=s.name,
        name2=p.name,
        delta=delta,
    )
    freed = msg(
        " '{name}' now belongs to '{name2}' (GRO_MERGED, not freed).",
        name=s.name,
        name2=p.name,
    )
    return _Merged(how=how, freed=freed, delta=delta, chained=True)


def _gro_done(w: World, op: Op, g: _Gro, merged: _Merged, seg_len: int) -> Step:
    """The ``done:`` label: p (and lp, when it is another skb) grow by the segment's payload
    and the truesize that moved; NAPI_GRO_CB(p)->count counts it."""
    p, s, offset = g.p, g.s, g.offset
    pb = w.buf(p)
    lp = p if merged.chained else g.lp
    delta = merged.delta
    l0, dl0, t0 = p.len, p.data_len, p.truesize
    held: Text = ""
    if p.gro_count == 0:
        p.gro_count = 1
        pb.gso_size = l0 - offset
        held = msg(
            " (When GRO held '{name}', dev_gro_receive set its gso_size = skb_gro_len = {pb_gso_size}.)",
            name=p.name,
            pb_gso_size=pb.gso_size,
        )
    p.gro_count += 1
    p.len += seg_len
    p.data_len += seg_len
    p.truesize += delta
    if lp is not p:
        lp.len += seg_len
        lp.data_len += seg_len
        lp.truesize += delta
    text = msg(
        "tcp_gro_receive has parsed '{name}''s headers ({offset} bytes, the GRO offset) and found it continues '{name2}''s flow. skb_gro_receive first checks the size: {l0} + {seg_len} < 65536 (gro_ipv4_max_size). {how} '{name2}': len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} → {truesize}; NAPI_GRO_CB(p)->count = {gro_count}.{freed}{held}",
        name=s.name,
        offset=offset,
        name2=p.name,
        seg_len=seg_len,
        how=merged.how,
        gro_count=p.gro_count,
        freed=merged.freed,
        held=held,
        **grew(p, l0, dl0, t0),
    )
    return make_step(op, p.name, "ok", text)


def skb_gro_receive_list(w: World, op: Op) -> Step:
    p = w.skbs[op.skb]
    s = w.skbs[op.src or ""]
    off = op.offset or 0
    if p.len + s.len >= GRO_MAX_SIZE:
        return _gro_too_big(
            w,
            op,
            p,
            p.len + s.len,
            msg(
                "'{name}' len {len} + '{name2}' len {len2} (headers included: the check comes before the pull)",
                name=p.name,
                len=p.len,
                name2=s.name,
                len2=s.len,
            ),
        )
    if off > s.len - s.data_len:
        return null_step(
            op,
            p.name,
            msg(
                "The GRO header offset {off} is beyond '{name}''s linear part ({s_len_s_data_len} bytes); nothing is merged.",
                off=off,
                name=s.name,
                s_len_s_data_len=s.len - s.data_len,
            ),
        )
    b = w.buf(p)
    s.data += off
    s.len -= off
    b.frag_list.append(s.name)
    s.status = "in_frag_list"
    s.owner = p.name
    s.has_sk = False
    l0, dl0, t0 = p.len, p.data_len, p.truesize
    p.len += s.len
    p.data_len += s.len
    p.truesize += s.truesize
    pulled = (
        msg(
            " It then pulls the {off}-byte GRO header offset from '{name}'.",
            off=off,
            name=s.name,
        )
        if off
        else ""
    )
    text = msg(
        "UDP fraglist GRO (udp_gro_receive_segment, on a device with NETIF_F_GRO_FRAGLIST; in 6.4 TCP never uses it): skb_gro_receive_list checks {l0} + {s_len_off} < 65536 and chains '{name}' onto '{name2}''s frag_list (after NAPI_GRO_CB(p)->last).{pulled} '{name2}' grows by the rest of it: len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} → {truesize}. '{name}' loses its destructor and now belongs to '{name2}'.",
        s_len_off=s.len + off,
        name=s.name,
        name2=p.name,
        pulled=pulled,
        **grew(p, l0, dl0, t0),
    )
    return make_step(op, p.name, "ok", text)
