"""Freeing: ``kfree_skb_reason``/``consume_skb`` and what they release (net/core/skbuff.c).

``skb_unref`` drops one user; the last one releases the data (``skb_release_data``: the
dataref count, the frag pages, the frag_list skbs, then the head) and the sk_buff itself
(``kfree_skbmem``, which returns an fclone pair to skbuff_fclone_cache once both halves are
free). ``kfree_skb_reason`` (skbuff.c:1061) records an ``enum skb_drop_reason`` and fires the
skb:kfree_skb tracepoint; ``consume_skb`` (skbuff.c:1238) fires skb:consume_skb instead.
"""

from __future__ import annotations

from app.sim.core import msg
from app.sim.core.i18n import join
from app.sim.skbuff.ops import DROP_REASONS, Op
from app.sim.skbuff.skb import (
    DATAREF_MASK,
    DATAREF_SHIFT,
    Buffer,
    Skb,
    Step,
    Text,
    World,
    make_step,
)
from app.sim.skbuff.zerocopy import zcopy_clear


def drop_data_ref(w: World, b: Buffer, s: Skb) -> Text:
    """skb_release_data's dataref handling for a cloned skb; frees the head at zero."""
    sub = (1 << DATAREF_SHIFT) + 1 if s.nohdr else 1
    d0 = b.dataref & DATAREF_MASK
    b.dataref -= sub
    if b.dataref & DATAREF_MASK:
        recycle: Text = ""
        if s.pp_recycle:
            s.pp_recycle = False
            recycle = msg(
                "; skb_release_data clears this skb's pp_recycle, so only the skb that drops the data last returns the page to the page_pool"
            )
        still = msg(
            "{id}'s dataref {d0} → {b_dataref_dataref_mask}, still used by another skb",
            id=b.id,
            d0=d0,
            b_dataref_dataref_mask=b.dataref & DATAREF_MASK,
        )
        still = still + recycle
        if b.uarg is None:
            return still
        return still + msg(
            " (skb_release_data returns before skb_zcopy_clear: {uarg} keeps its reference, and the user pages stay pinned, while that skb lives)",
            uarg=b.uarg,
        )
    return msg("{id}'s dataref {d0} → 0: ", id=b.id, d0=d0) + free_head(w, b, s)


def free_head(w: World, b: Buffer, s: Skb | None = None) -> Text:
    zc = zcopy_clear(w, b)
    b.freed = True
    b.dataref = 0
    if b.head_frag and s is not None and s.pp_recycle:
        head = msg(
            "skb_free_head sees pp_recycle on a page-fragment head: page_pool_return_skb_page finds the page's pp_magic and hands {id} back to its page_pool (page_pool_put_full_page: the pool's direct cache when this is the pool's own NAPI context, its ptr_ring otherwise). No put_page: the driver's next refill takes the page back with its DMA mapping",
            id=b.id,
        )
    else:
        head = msg(
            "head {id} ({nbytes} bytes, {where}) is freed",
            id=b.id,
            nbytes=b.nbytes,
            where=b.where,
        )
    parts: list[Text] = [head]
    if b.frags:
        for f in b.frags:
            w.pages[f.page] -= 1
        parts.append(msg("{n_frags} frag page reference(s) dropped", n_frags=len(b.frags)))
    for m in b.frag_list:
        ms = w.skbs[m]
        release(w, ms, ms.status if ms.status in ("dropped", "consumed") else "consumed")
    if b.frag_list:
        parts.append(msg("frag_list {join} released", join=", ".join(b.frag_list)))
    done = join(msg(", "), parts)
    return done if zc is None else zc + msg(" Then ") + done


def release(w: World, s: Skb, how: str) -> Text:
    """Drop one user; on the last, release data and the sk_buff (kfree_skbmem)."""
    s.users -= 1
    if s.users > 0:
        return msg(
            "users {s_users_1} → {users}; someone else still holds '{name}', nothing is freed",
            s_users_1=s.users + 1,
            users=s.users,
            name=s.name,
        )
    s.status = how
    b = w.buf(s)
    if s.cloned:
        data = drop_data_ref(w, b, s)
    else:
        data = free_head(w, b, s)
    mem: Text = ""
    if s.pair is not None:
        w.fclone_refs[s.pair] -= 1
        ref = w.fclone_refs[s.pair]
        mem = msg("; fclone_ref → {ref}", ref=ref) + (
            msg(", the fclone pair goes back to skbuff_fclone_cache")
            if ref == 0
            else msg(", its companion is free again")
        )
    return msg("users 1 → 0: {data}{mem}", data=data, mem=mem)


def _free_op(w: World, op: Op, how: str, reason: str | None = None) -> Step:
    s = w.skbs[op.skb]
    last = s.users == 1
    if how == "dropped":
        reason = reason or "NOT_SPECIFIED"
        if reason == "CONSUMED":
            how = "consumed"
        elif last:
            s.drop_reason = reason
    res = release(w, s, how)
    if op.op == "kfree_skb":
        value = DROP_REASONS.index(reason or "NOT_SPECIFIED") + 1
        name = "SKB_CONSUMED" if reason == "CONSUMED" else f"SKB_DROP_REASON_{reason}"
        call = (
            msg("kfree_skb_reason(skb, {name} = {value})", name=name, value=value)
            if op.reason
            else msg("kfree_skb → kfree_skb_reason(skb, SKB_DROP_REASON_NOT_SPECIFIED = 2)")
        )
        if not last:
            text = msg(
                "{call}: skb_unref finds other users ({res}), so __kfree_skb_reason returns early: no tracepoint fires and the reason is not recorded anywhere.",
                call=call,
                res=res,
            )
        elif reason == "CONSUMED":
            text = msg(
                "{call}: {res}. With SKB_CONSUMED, __kfree_skb_reason fires skb:consume_skb instead of skb:kfree_skb: this is the normal end of a packet, not a drop.",
                call=call,
                res=res,
            )
        else:
            text = msg(
                "{call}: {res}. It fires the skb:kfree_skb tracepoint with reason {reason}, so drop monitors (dropwatch, perf, `perf trace -e skb:kfree_skb`) count a dropped packet and can say why.",
                call=call,
                res=res,
                reason=reason or "",
            )
    elif not last:
        text = msg(
            "consume_skb: skb_unref finds other users ({res}), so it returns before the tracepoint: nothing is freed or traced yet.",
            res=res,
        )
    else:
        text = msg(
            "consume_skb: {res}. It fires skb:consume_skb instead of skb:kfree_skb: the packet was used normally, so drop monitors ignore it.",
            res=res,
        )
    return make_step(op, s.name, "ok", text, mark="free" if last else None)


def kfree_skb_nocheck(w: World, op: Op) -> Step:
    """__kfree_skb (skbuff.c:1026): skb_release_all then kfree_skbmem, with no users check
    and no tracepoint; callers (tcp_wmem_free_skb) hold the only reference."""
    s = w.skbs[op.skb]
    extra: Text = ""
    if s.users != 1:
        extra = msg(
            " users is {users}, but __kfree_skb does not look: the other holders now point to freed memory.",
            users=s.users,
        )
        s.users = 1
    res = release(w, s, "consumed")
    text = msg(
        "__kfree_skb frees without skb_unref and without a tracepoint (neither skb:kfree_skb nor skb:consume_skb): {res}.{extra}",
        res=res,
        extra=extra,
    )
    return make_step(op, s.name, "ok", text, mark="free")


def kfree_skb(w: World, op: Op) -> Step:
    return _free_op(w, op, "dropped", op.reason)


def consume_skb(w: World, op: Op) -> Step:
    return _free_op(w, op, "consumed")
