"""Sharing and unsharing: references, clones, copies, a new head and linearizing.

Follows net/core/skbuff.c (Linux 6.4): ``skb_get`` and ``skb_set_owner_w`` (net/core/sock.c),
``skb_clone`` (skbuff.c:1853, with the fclone companion), ``skb_copy`` (skbuff.c:1933) and
``__pskb_copy_fclone`` (skbuff.c:1972), ``pskb_expand_head`` (skbuff.c:2036),
``__pskb_pull_tail`` behind ``skb_linearize`` (include/linux/skbuff.h), ``skb_condense`` and
``__skb_header_release`` (the dataref split that lets a clone push its own headers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.sim.core import Message, msg
from app.sim.core.i18n import join
from app.sim.skbuff.alloc import HeadAlloc, head_align, kmalloc_reserve, new_buffer, new_skb
from app.sim.skbuff.free import drop_data_ref, release
from app.sim.skbuff.ops import Op
from app.sim.skbuff.skb import (
    CHECKSUM_PARTIAL,
    DATAREF_MASK,
    DATAREF_SHIFT,
    TRUESIZE_OVERHEAD,
    Frag,
    Skb,
    Step,
    Text,
    World,
    copy_regions,
    make_step,
    null_step,
    write_region,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Expanded:
    """What pskb_expand_head did: ``ok`` False means -ENOMEM with the skb unchanged."""

    ok: bool
    detail: Text


def skb_get(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    s.users += 1
    return make_step(
        op,
        s.name,
        "ok",
        msg(
            "skb_get takes another reference on the sk_buff itself: users {s_users_1} → {users}. Nothing is copied; the skb is now skb_shared(), so it must not be modified in place.",
            s_users_1=s.users - 1,
            users=s.users,
        ),
    )


def skb_set_owner_w(w: World, op: Op) -> Step:
    """skb_set_owner_w (net/core/sock.c) sets the destructor sock_wfree. TCP does not call it:
    __tcp_transmit_skb (net/ipv4/tcp_output.c) writes the same charge inline, with skb_orphan
    first and the destructor tcp_wfree (__sock_wfree for a pure ACK), the one TCP Small Queues
    counts on. A scenario names that caller with ``via``; the step then says tcp_wfree."""
    s = w.skbs[op.skb]
    s.has_sk = True
    after = msg(
        "From now on code that reallocates the head (pskb_expand_head, ___pskb_trim) must not change truesize."
    )
    if op.via == "__tcp_transmit_skb":
        text = msg(
            "__tcp_transmit_skb charges '{name}' to the sending socket, doing the work of skb_set_owner_w inline after pushing the TCP header: skb_orphan, skb->sk = sk, skb->destructor = tcp_wfree (a data segment; a pure ACK gets __sock_wfree), and sk_wmem_alloc += {truesize}, the truesize tcp_wfree gives back when the skb is freed. {after}",
            name=s.name,
            truesize=s.truesize,
            after=after,
        )
        notes: tuple[Text, ...] = (
            msg(
                "skb_set_owner_w itself (net/core/sock.c) would set the destructor sock_wfree; TCP sets tcp_wfree so TCP Small Queues can send more of this socket's data when the clone is freed."
            ),
        )
        return make_step(op, s.name, "ok", text, notes=notes)
    text = msg(
        "skb_set_owner_w charges '{name}' to the sending socket: skb->sk = sk, the destructor (sock_wfree) will give the {truesize} bytes of truesize back to sk_wmem_alloc when the skb is freed. {after}",
        name=s.name,
        truesize=s.truesize,
        after=after,
    )
    return make_step(op, s.name, "ok", text)


def skb_clone(w: World, op: Op) -> Step:
    src = w.skbs[op.src or "skb"]
    b = w.buf(src)
    fast = src.fclone == "orig" and src.pair is not None and w.fclone_refs[src.pair] == 1
    n = clone_skb(src, op.skb)
    if fast:
        if src.pair is None:
            raise RuntimeError("internal: a fast clone without its fclone pair")
        w.fclone_refs[src.pair] = 2
        n.fclone, n.pair = "clone", src.pair
        how = msg(
            "'{name}' is an fclone orig with fclone_ref 1, so the companion sk_buff already allocated next to it is used: no allocation, fclone_ref 1 → 2.",
            name=src.name,
        )
    else:
        n.fclone = "unavailable"
        why = (
            msg("is an fclone orig whose companion is busy (fclone_ref 2)")
            if src.fclone == "orig"
            else msg("has no fclone companion")
        )
        how = msg(
            "'{name}' {why}, so the new sk_buff comes from skbuff_cache (fclone = unavailable).",
            name=src.name,
            why=why,
        )
    src.cloned = True
    n.cloned = True
    d0 = b.dataref & DATAREF_MASK
    b.dataref += 1
    w.skbs[n.name] = n
    hdr: Text = ""
    if src.nohdr:
        hdr = msg(
            " Because '{name}' released its header (nohdr), the clone's hdr_len is its headroom ({data}) and dataref's payload-only count stays at {b_dataref_dataref_shift_dataref}: the clone may write headers.",
            name=src.name,
            data=src.data,
            b_dataref_dataref_shift_dataref=b.dataref >> DATAREF_SHIFT & DATAREF_MASK,
        )
    text = msg(
        "skb_clone makes '{name}' share '{name2}''s head buffer {id} and frags: {how} Both get cloned = 1; dataref {d0} → {b_dataref_dataref_mask}. The clone has users 1 and no socket.{hdr}",
        name=n.name,
        name2=src.name,
        id=b.id,
        how=how,
        d0=d0,
        b_dataref_dataref_mask=b.dataref & DATAREF_MASK,
        hdr=hdr,
    )
    return make_step(op, n.name, "ok", text, mark="clone")


def _copy_head(w: World, op: Op, size: int, nomem: Message) -> tuple[Skb, Skb, HeadAlloc] | Step:
    """What skb_copy and __pskb_copy_fclone share: __alloc_skb a private ``size``-byte head
    (NULL beyond KMALLOC_MAX_SIZE, narrated by ``nomem``), skb_copy_header, the same headroom
    and len. Returns (source, copy, its allocation)."""
    src = w.skbs[op.src or "skb"]
    alloc = kmalloc_reserve(size)
    if alloc is None:
        return null_step(op, src.name, nomem)
    n = new_skb(w, op.skb, alloc, origin=op.op)
    copy_header_fields(n, src)
    copy_gso(w, n, src)
    n.data = src.data
    n.len = src.len
    return src, n, alloc


def skb_copy(w: World, op: Op) -> Step:
    src = w.skbs[op.src or "skb"]
    size = src.end + src.data_len
    made = _copy_head(
        w,
        op,
        size,
        msg(
            "skb_copy needs a {size}-byte head, beyond KMALLOC_MAX_SIZE; it returns NULL.",
            size=size,
        ),
    )
    if isinstance(made, Step):
        return made
    src, n, alloc = made
    nb = w.buf(n)
    n.tail = src.data + src.len
    nb.regions = copy_regions(w.buf(src).regions, 0, src.tail, 0)
    if src.data_len:
        write_region(nb, src.tail, n.tail, "paged data", "payload")
    text = msg(
        "skb_copy allocates a private, fully linear copy '{name}': end + data_len = {end} + {data_len} = {size}, re-rounded by kmalloc_reserve to {where} ({nbytes} bytes) → end {end2}. It reserves the same headroom ({data}), skb_put()s len {len} and copies headroom and data (paged bytes included). truesize = {truesize}; dataref 1; nothing is shared.",
        name=n.name,
        end=src.end,
        data_len=src.data_len,
        size=size,
        where=alloc.where,
        nbytes=alloc.nbytes,
        end2=n.end,
        data=n.data,
        len=n.len,
        truesize=n.truesize,
    )
    return make_step(op, n.name, "ok", text, mark="clone")


def pskb_copy(w: World, op: Op) -> Step:
    src = w.skbs[op.src or "skb"]
    headlen = src.len - src.data_len
    size = src.data + headlen
    made = _copy_head(
        w,
        op,
        size,
        msg(
            "pskb_copy needs a {size}-byte head, beyond KMALLOC_MAX_SIZE; it returns NULL.",
            size=size,
        ),
    )
    if isinstance(made, Step):
        return made
    src, n, alloc = made
    sb, nb = w.buf(src), w.buf(n)
    n.tail = src.data + headlen
    n.data_len = src.data_len
    n.truesize += src.data_len
    nb.regions = copy_regions(sb.regions, src.data, src.tail, 0)
    for f in sb.frags:
        nb.frags.append(Frag(page=f.page, offset=f.offset, size=f.size))
        w.pages[f.page] += 1
    for m in sb.frag_list:
        w.skbs[m].users += 1
        nb.frag_list.append(m)
    shared: Text = ""
    if sb.frags:
        shared = msg(
            " Its {n_frags} frag(s) are shared, not copied: each page gets a reference (skb_frag_ref).",
            n_frags=len(sb.frags),
        )
    if sb.frag_list:
        shared += msg(" The frag_list skbs are shared too (skb_clone_fraglist: users + 1).")
    text = msg(
        "pskb_copy gives '{name}' a private head for headroom + headlen = {data} + {headlen} = {size} bytes, re-rounded to {where} ({nbytes} bytes) → end {end}, and copies only the linear data.{shared} len {len}, data_len {data_len}, truesize = end + 576 + data_len = {truesize}.",
        name=n.name,
        data=src.data,
        headlen=headlen,
        size=size,
        where=alloc.where,
        nbytes=alloc.nbytes,
        end=n.end,
        shared=shared,
        len=n.len,
        data_len=n.data_len,
        truesize=n.truesize,
    )
    return make_step(op, n.name, "ok", text, mark="clone")


def clone_skb(src: Skb, name: str) -> Skb:
    """__skb_clone's new sk_buff: ``src``'s data (same buffer, pointers and lengths, no
    reference taken here), its header fields and C(pp_recycle); which sk_buff it is (fclone)
    is the caller's."""
    n = Skb(
        name=name,
        buffer=src.buffer,
        end=src.end,
        truesize=src.truesize,
        data=src.data,
        tail=src.tail,
        len=src.len,
        data_len=src.data_len,
        origin="skb_clone",
    )
    copy_header_fields(n, src)
    n.pp_recycle = src.pp_recycle
    return n


def copy_header_fields(n: Skb, src: Skb) -> None:
    """__copy_skb_header: the header offsets (same headroom, so the same values)."""
    n.mac_header = src.mac_header
    n.network_header = src.network_header
    n.transport_header = src.transport_header
    n.cb_layer = src.cb_layer  # the 48 bytes of cb[] are copied too
    n.cb = dict(src.cb)
    n.ip_summed = src.ip_summed
    n.csum_start = src.csum_start
    n.csum_offset = src.csum_offset
    n.dst = src.dst  # skb_dst_copy: a NOREF route stays borrowed, a refcounted one gets dst_clone


def copy_gso(w: World, n: Skb, src: Skb) -> None:
    """skb_copy_header copies skb_shinfo's gso_size, gso_segs and gso_type."""
    nb, sb = w.buf(n), w.buf(src)
    nb.gso_size, nb.gso_segs, nb.gso_type = sb.gso_size, sb.gso_segs, sb.gso_type


def shared_bug(w: World, op: Op, s: Skb, why: Text = "") -> Step:
    extra = f" ({why})" if why else ""
    return make_step(
        op,
        s.name,
        "pskb_expand_head_shared",
        msg(
            "pskb_expand_head starts with BUG_ON(skb_shared(skb)): users is {users}, not 1{extra}. Reallocating the head under another holder of this sk_buff would pull the data out from under it, so the kernel stops with 'kernel BUG at net/core/skbuff.c'.",
            users=s.users,
            extra=extra,
        ),
        bug="kernel BUG at net/core/skbuff.c (pskb_expand_head: skb_shared)",
    )


def expand(w: World, s: Skb, nhead: int, ntail: int) -> Expanded:
    """pskb_expand_head's effect. Fails (ok False, skb unchanged) only when the head would
    exceed KMALLOC_MAX_SIZE."""
    osize = s.end
    size = osize + nhead + ntail
    alloc = kmalloc_reserve(size)
    if alloc is None:
        return Expanded(
            ok=False,
            detail=msg(
                "a {head_align}-byte head exceeds KMALLOC_MAX_SIZE", head_align=head_align(size)
            ),
        )
    old = w.buf(s)
    was_cloned = w.skb_cloned(s)
    new = new_buffer(w, alloc)
    new.regions = copy_regions(old.regions, 0, s.tail, nhead)
    new.frags = [Frag(page=f.page, offset=f.offset, size=f.size) for f in old.frags]
    new.frag_list = list(old.frag_list)
    new.gso_size, new.gso_segs, new.gso_type = old.gso_size, old.gso_segs, old.gso_type
    if was_cloned:
        for f in old.frags:
            w.pages[f.page] += 1
        for m in old.frag_list:
            w.skbs[m].users += 1
        s.buffer = new.id
        old_desc = drop_data_ref(w, old, s)
    else:
        old.freed = True
        old.dataref = 0
        old_desc = msg("the old head {old_id} is freed (frags move to the new one)", old_id=old.id)
        s.buffer = new.id
    s.data += nhead
    s.tail += nhead
    shift_headers(s, nhead)
    s.end = new.end
    s.cloned = False
    s.nohdr = False
    if not s.has_sk:
        s.truesize += new.end - osize
        grow = msg(
            " truesize += {new_end_osize} → {truesize} (no owning socket).",
            new_end_osize=new.end - osize,
            truesize=s.truesize,
        )
    else:
        grow = msg(
            " truesize is unchanged: skb->sk is set, so the skb is charged to a socket and pskb_expand_head leaves truesize alone."
        )
    return Expanded(
        ok=True,
        detail=(
            msg(
                "new size {osize} + {nhead} + {ntail} = {size} → {where} ({nbytes} bytes), end {osize} → {new_end}, data and tail shift by {nhead}, dataref 1 on {new_id}; {old_desc}.{grow}",
                osize=osize,
                nhead=nhead,
                ntail=ntail,
                size=size,
                where=alloc.where,
                nbytes=alloc.nbytes,
                new_end=new.end,
                new_id=new.id,
                old_desc=old_desc,
                grow=grow,
            )
        ),
    )


def shift_headers(s: Skb, off: int) -> None:
    """skb_headers_offset_update: the header offsets move with the data."""
    s.network_header += off
    if s.transport_header is not None:
        s.transport_header += off
    if s.mac_header is not None:
        s.mac_header += off
    if s.ip_summed == CHECKSUM_PARTIAL:
        s.csum_start += off


def pskb_expand_head(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    if s.users != 1:
        return shared_bug(w, op, s)
    res = expand(w, s, op.nhead or 0, op.ntail or 0)
    if not res.ok:
        return null_step(
            op,
            s.name,
            msg(
                "pskb_expand_head fails with -ENOMEM ({detail}); the skb is unchanged.",
                detail=res.detail,
            ),
        )
    return make_step(
        op,
        s.name,
        "ok",
        msg(
            "pskb_expand_head copies head..tail into a new buffer with {op_nhead_or_0} more bytes in front and {op_ntail_or_0} behind: {detail}",
            op_nhead_or_0=op.nhead or 0,
            op_ntail_or_0=op.ntail or 0,
            detail=res.detail,
        ),
    )


def room_to_pull(
    w: World, op: Op, s: Skb, eat: int, no_memory: Callable[[Text], Message]
) -> Step | Expanded | None:
    """__pskb_pull_tail's first move: make a shared head private and, when the pulled bytes
    do not fit (``eat > 0``), grow it by eat + 128. None when nothing had to change; a Step
    when the op ends here (a shared skb is a BUG, no memory a NULL); else what
    pskb_expand_head did."""
    if eat <= 0 and not w.skb_cloned(s):
        return None
    if s.users != 1:
        return shared_bug(w, op, s, msg("__pskb_pull_tail must expand the head"))
    res = expand(w, s, 0, eat + 128 if eat > 0 else 0)
    if not res.ok:
        return null_step(op, s.name, no_memory(res.detail))
    return res


def eat_paged(w: World, s: Skb, delta: int) -> Text:
    """__pskb_pull_tail's bookkeeping after the copy: drop or advance the frags (and then
    frag_list skbs) that held the first ``delta`` paged bytes."""
    b = w.buf(s)
    left = delta
    keep: list[Frag] = []
    dropped = 0
    for f in b.frags:
        if left >= f.size:
            left -= f.size
            w.pages[f.page] -= 1
            dropped += 1
        else:
            if left:
                f.offset += left
                f.size -= left
                left = 0
            keep.append(f)
    b.frags = keep
    released: list[str] = []
    for m in list(b.frag_list):
        if left <= 0:
            break
        ms = w.skbs[m]
        if left >= ms.len:
            left -= ms.len
            b.frag_list.remove(m)
            release(w, ms, "consumed")
            released.append(m)
        else:
            take = min(left, ms.len - ms.data_len)
            ms.data += take
            ms.len -= take
            left -= take
            if left:
                eat_paged(w, ms, left)
                ms.len -= left
                ms.data_len -= left
                left = 0
    parts = [msg("{dropped} frag(s) fully copied are released", dropped=dropped)]
    if keep and delta:
        parts.append(msg("the next frag now starts after the copied bytes"))
    if released:
        parts.append(msg("frag_list skb(s) {join} are consumed", join=", ".join(released)))
    return join(msg("; "), parts)


def pull_tail(w: World, s: Skb, delta: int) -> Text:
    """__pskb_pull_tail's copy, once the head has room and is private: move ``delta`` paged
    bytes (all of them, in every caller modelled here) behind the linear data; the frags and
    frag_list skbs that held them go as :func:`eat_paged` says."""
    b = w.buf(s)
    t0 = s.tail
    write_region(b, s.tail, s.tail + delta, "from frags", "payload")
    nfr = len(b.frags)
    members = list(b.frag_list)
    eat_paged(w, s, delta)
    s.tail += delta
    s.data_len = 0
    gone = msg("{nfr} frag page reference(s)", nfr=nfr)
    if members:
        gone += msg(" and the frag_list skb(s) {join} (consume_skb)", join=", ".join(members))
    return msg(
        "tail {t0} → {tail}, data_len {delta} → 0; it releases {gone}",
        t0=t0,
        tail=s.tail,
        delta=delta,
        gone=gone,
    )


def skb_linearize(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    if not s.data_len:
        return make_step(
            op,
            s.name,
            "ok",
            msg("skb_linearize: the skb is already linear (data_len 0); it returns 0."),
        )
    delta = s.data_len
    tail0, end0 = s.tail, s.end
    eat = tail0 + delta - end0
    pre: Text = ""
    room = room_to_pull(
        w,
        op,
        s,
        eat,
        lambda detail: msg(
            "__pskb_pull_tail cannot grow the head ({detail}); skb_linearize returns -ENOMEM and the skb is unchanged.",
            detail=detail,
        ),
    )
    if isinstance(room, Step):
        return room
    if room is not None:
        if eat > 0:
            pre = msg(
                "The {delta} paged bytes do not fit: eat = tail {tail0} + {delta} − end {end0} = {eat} > 0, so __pskb_pull_tail calls pskb_expand_head(0, eat + 128 = {ntail}) — 128 spare bytes for later growth: {detail} ",
                delta=delta,
                tail0=tail0,
                end0=end0,
                eat=eat,
                ntail=eat + 128,
                detail=room.detail,
            )
        else:
            pre = msg(
                "The data is shared with a clone, so it is made private first: {detail} ",
                detail=room.detail,
            )
    moved = pull_tail(w, s, delta)
    text = msg(
        "{pre}skb_linearize → __pskb_pull_tail(data_len {delta}) copies the paged bytes behind the linear data: {moved}. len stays {len}. truesize is not reduced.",
        pre=pre,
        delta=delta,
        moved=moved,
        len=s.len,
    )
    return make_step(op, s.name, "ok", text)


def condense(w: World, s: Skb) -> Text:
    """skb_condense (net/core/skbuff.c:6656), which ___pskb_trim runs on skbs no socket owns."""
    if s.data_len:
        room = s.end - s.tail
        if s.data_len > room:
            return msg(
                " skb_condense: the {data_len} paged bytes do not fit the {room} bytes between tail and end, so the frags stay and truesize is unchanged.",
                data_len=s.data_len,
                room=room,
            )
        if w.skb_cloned(s):
            return msg(" skb_condense: the head is shared with a clone, so nothing is pulled.")
        moved = pull_tail(w, s, s.data_len)
        pulled: Text = msg(
            "the paged bytes fit the head, so __pskb_pull_tail copies them in ({moved}); ",
            moved=moved,
        )
    else:
        pulled = ""
    t0 = s.truesize
    s.truesize = s.end + TRUESIZE_OVERHEAD
    return msg(
        " No socket owns the skb, so ___pskb_trim ends with skb_condense: {pulled}truesize is re-evaluated as SKB_TRUESIZE(end) = {end} + 576 = {truesize} (was {t0}).",
        pulled=pulled,
        end=s.end,
        truesize=s.truesize,
        t0=t0,
    )


def skb_header_release(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    b = w.buf(s)
    notes: tuple[Text, ...] = ()
    if (b.dataref & DATAREF_MASK) != 1:
        notes = (
            msg(
                "The data is already shared; __skb_header_release uses atomic_set and would overwrite the count. Callers only use it on a private skb."
            ),
        )
    s.nohdr = True
    b.dataref = 1 + (1 << DATAREF_SHIFT)
    text = msg(
        "__skb_header_release sets nohdr and dataref = 1 + (1 << 16) = 0x10001: this skb now counts only as a payload reference. A clone made from it may push its own headers into the shared headroom, because skb_header_cloned() compares all references (low 16 bits) with payload-only ones (high 16 bits)."
    )
    return make_step(op, s.name, "ok", text, notes=notes)
