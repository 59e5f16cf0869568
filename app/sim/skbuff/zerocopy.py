"""MSG_ZEROCOPY on TCP: the user's pages become the skb's frags, and a completion on the
socket's error queue says when they may be reused.

Follows Linux 6.4: ``tcp_sendmsg_locked`` (net/ipv4/tcp.c:1217) takes a ``ubuf_info`` from
``msg_zerocopy_realloc`` (net/core/skbuff.c:1538, allocating with ``msg_zerocopy_alloc``: id
``sk_zckey++``, refcnt 1 for the call itself), marks a fragless skb ``SKBFL_PURE_ZEROCOPY``
and calls ``skb_zerocopy_iter_stream`` (skbuff.c:1682): ``__zerocopy_sg_from_iter`` pins the
user pages as frags (truesize + PAGE_ALIGN(bytes + offset)) and ``skb_zcopy_set`` takes a
reference for the skb's skb_shared_info. The call drops its own reference at the end
(``net_zcopy_put``). When skb_release_data finally frees the data, ``skb_zcopy_clear`` →
``msg_zerocopy_callback`` (skbuff.c:1658) drops the last reference and
``__msg_zerocopy_callback`` queues the notification on ``sk->sk_error_queue``.
"""

from __future__ import annotations

from app.sim.core import msg
from app.sim.skbuff.ops import Op
from app.sim.skbuff.skb import (
    MAX_SKB_FRAGS,
    PAGE_SIZE,
    Buffer,
    Frag,
    Step,
    Text,
    Uarg,
    World,
    grew,
    make_step,
    null_step,
)

# SKBFL_ZEROCOPY_FRAG (ZEROCOPY_ENABLE | SHARED_FRAG) | SKBFL_DONT_ORPHAN: msg_zerocopy_alloc's
# uarg->flags, which skb_zcopy_init ORs into skb_shinfo(skb)->flags.
UARG_FLAGS = ("SKBFL_ZEROCOPY_ENABLE", "SKBFL_SHARED_FRAG", "SKBFL_DONT_ORPHAN")
ALL_ZEROCOPY = frozenset({*UARG_FLAGS, "SKBFL_PURE_ZEROCOPY", "SKBFL_MANAGED_FRAG_REFS"})
BYTE_LIMIT = 1 << 19  # msg_zerocopy_realloc: "limit to a few TSO"


def msg_zerocopy_realloc(w: World, op: Op) -> Step:
    """A send of ``size`` bytes with MSG_ZEROCOPY: extend the uarg the tail skb already has when
    its id range ends at sk_zckey (a TCP socket then takes one more reference), else allocate."""
    s = w.skbs[op.skb]
    size = op.size or 0
    b = w.buf(s)
    cur = w.uargs.get(b.uarg) if b.uarg else None
    if cur is not None and cur.id + cur.len == w.zckey and cur.bytelen + size <= BYTE_LIMIT:
        cur.len += 1
        cur.bytelen += size
        cur.refcnt += 1
        w.zckey += 1
        w.held_uarg = cur.name
        text = msg(
            "tcp_sendmsg_locked is called with MSG_ZEROCOPY for {size} bytes. '{name}' already carries ubuf_info {uarg} and its ids end at sk_zckey, so msg_zerocopy_realloc extends it: len {len0} → {len} (ids {lo}..{hi}), bytelen {bytelen}, sk_zckey → {zckey}, and it takes a reference for this call: refcnt {r0} → {refcnt}.",
            size=size,
            name=s.name,
            uarg=cur.name,
            len0=cur.len - 1,
            len=cur.len,
            lo=cur.id,
            hi=cur.id + cur.len - 1,
            bytelen=cur.bytelen,
            zckey=w.zckey,
            r0=cur.refcnt - 1,
            refcnt=cur.refcnt,
        )
        return make_step(op, s.name, "ok", text)
    name = f"ubuf{w.zckey}"
    u = Uarg(name=name, id=w.zckey, len=1, bytelen=size)
    w.uargs[name] = u
    w.zckey += 1
    w.held_uarg = name
    text = msg(
        "tcp_sendmsg_locked is called with MSG_ZEROCOPY for {size} bytes. msg_zerocopy_realloc finds no ubuf_info to extend and calls msg_zerocopy_alloc: a struct ubuf_info_msgzc {uarg} lives in the cb[] of a small skb of its own (sock_omalloc), charged to the user's locked-memory limit (mm_account_pinned_pages). It gets id = sk_zckey = {id} (sk_zckey → {zckey}), callback msg_zerocopy_callback, flags SKBFL_ZEROCOPY_FRAG | SKBFL_DONT_ORPHAN, and refcnt 1: the reference this call holds until it returns. No skb points to it yet.",
        size=size,
        uarg=name,
        id=u.id,
        zckey=w.zckey,
    )
    return make_step(op, s.name, "ok", text)


def skb_zerocopy_iter_stream(w: World, op: Op) -> Step:
    """Pin ``size`` bytes of user memory starting ``offset`` bytes into a page as frags, then
    skb_zcopy_set: the skb's skb_shared_info takes a reference on the call's uarg."""
    s = w.skbs[op.skb]
    b = w.buf(s)
    size = op.size or 0
    start = op.offset or 0
    u = w.uargs.get(w.held_uarg or "")
    if u is None or u.done:
        return null_step(
            op,
            s.name,
            msg(
                "skb_zerocopy_iter_stream needs the ubuf_info of a MSG_ZEROCOPY send (run msg_zerocopy_realloc first); tcp_sendmsg_locked copies into its page frag instead. Nothing changes."
            ),
        )
    if b.uarg is not None and b.uarg != u.name:
        return null_step(
            op,
            s.name,
            msg(
                "'{name}' already points to ubuf_info {other}, and an skb can point to only one: skb_zerocopy_iter_stream returns -EEXIST and tcp_sendmsg_locked starts a new skb.",
                name=s.name,
                other=b.uarg,
            ),
        )
    pages = -(-(start + size) // PAGE_SIZE)
    if len(b.frags) + pages > MAX_SKB_FRAGS:
        return null_step(
            op,
            s.name,
            msg(
                "The pages would need frags past MAX_SKB_FRAGS = {max}: __zerocopy_sg_from_iter returns -EMSGSIZE, nothing is pinned, and tcp_sendmsg_locked starts a new skb.",
                max=MAX_SKB_FRAGS,
            ),
        )
    pure = not s.len and not b.frags
    if pure and "SKBFL_PURE_ZEROCOPY" not in b.flags:
        b.flags.append("SKBFL_PURE_ZEROCOPY")
    n0 = len(b.frags)
    left, off = size, start
    while left:
        chunk = min(left, PAGE_SIZE - off)
        page = w.next_id("upage")
        w.pages[page] = 1
        b.frags.append(Frag(page=page, offset=off, size=chunk))
        left -= chunk
        off = 0
    truesize = pages * PAGE_SIZE  # PAGE_ALIGN(copied + start)
    l0, dl0, t0 = s.len, s.data_len, s.truesize
    s.len += size
    s.data_len += size
    s.truesize += truesize
    r0 = u.refcnt
    new_ref = b.uarg is None
    if new_ref:  # skb_zcopy_set: net_zcopy_get, then skb_zcopy_init
        u.refcnt += 1
        b.uarg = u.name
        b.flags.extend(f for f in UARG_FLAGS if f not in b.flags)
    seq: Text = ""
    if s.cb_layer == "TCP_SKB_CB" and "end_seq" in s.cb:
        e0 = s.cb["end_seq"]
        s.cb["end_seq"] = (e0 + size) & 0xFFFFFFFF
        seq = msg(" TCP_SKB_CB(skb)->end_seq {e0} → {e1}.", e0=e0, e1=s.cb["end_seq"])
    text = msg(
        "{pure}__zerocopy_sg_from_iter pins the user's own pages (iov_iter_get_pages2, one page reference each) and adds them as frags[{n0}..{n1}]: {size} bytes at offset {start}, nothing copied. len {l0} → {len}, data_len {dl0} → {data_len}, truesize {t0} → {truesize} (+PAGE_ALIGN({size} + {start}) = {pagebytes}).{ref}{seq}",
        pure=msg(
            "The skb has no data yet, so tcp_sendmsg_locked marks it SKBFL_PURE_ZEROCOPY (its pages are not charged to socket memory). "
        )
        if pure
        else "",
        n0=n0,
        n1=len(b.frags) - 1,
        size=size,
        start=start,
        pagebytes=truesize,
        ref=msg(
            " skb_zcopy_set points skb_shinfo(skb)->destructor_arg at {uarg} and takes a reference for it (refcnt {r0} → {r1}); its flags join the skb's: SKBFL_ZEROCOPY_ENABLE, SKBFL_SHARED_FRAG (someone else, the user, can write these pages) and SKBFL_DONT_ORPHAN.",
            uarg=u.name,
            r0=r0,
            r1=u.refcnt,
        )
        if new_ref
        else msg(" The skb already points to {uarg}; no new reference.", uarg=u.name),
        seq=seq,
        **grew(s, l0, dl0, t0),
    )
    notes = (
        msg(
            "SKBFL_SHARED_FRAG is also what sendfile and splice set (tcp_build_frag): the page belongs to the page cache or a pipe. If the device cannot checksum, skb_checksum_help first linearizes such an skb (skb_has_shared_frag), because a sum over a page that can still change may not match the bytes the NIC reads."
        ),
    )
    return make_step(op, s.name, "ok", text, notes=notes)


def net_zcopy_put(w: World, op: Op) -> Step:
    """tcp_sendmsg_locked returns: it drops the reference it held since msg_zerocopy_realloc."""
    s = w.skbs[op.skb]
    u = w.uargs.get(w.held_uarg or "")
    if u is None:
        return null_step(
            op,
            s.name,
            msg("No MSG_ZEROCOPY send is in progress (uarg is NULL): net_zcopy_put does nothing."),
        )
    w.held_uarg = None
    r0 = u.refcnt
    tail = uarg_put(w, u)
    text = msg(
        "tcp_sendmsg_locked returns to the user and drops the reference it has held since msg_zerocopy_realloc: net_zcopy_put → msg_zerocopy_callback, refcnt {r0} → {r1}. {tail}",
        r0=r0,
        r1=u.refcnt,
        tail=tail,
    )
    return make_step(op, s.name, "ok", text)


def uarg_put(w: World, u: Uarg) -> Text:
    """msg_zerocopy_callback: one reference less; at zero __msg_zerocopy_callback queues the
    completion [id, id + len - 1] on sk_error_queue (merged into a previous one it continues)."""
    u.refcnt -= 1
    if u.refcnt:
        return msg(
            "The skbs that point to {uarg} still hold it: no notification yet, and the user must not touch the buffer.",
            uarg=u.name,
        )
    u.done = True
    lo, hi = u.id, u.id + u.len - 1
    w.errqueue.append(f"zerocopy [{lo}, {hi}]")
    return msg(
        "That was the last reference: __msg_zerocopy_callback unaccounts the pinned pages and queues a notification on the socket's error queue (SO_EE_ORIGIN_ZEROCOPY, ee_info {lo}, ee_data {hi}); recvmsg(MSG_ERRQUEUE) reads it, and from then on the user may reuse the buffer of sends {lo}..{hi}.",
        lo=lo,
        hi=hi,
    )


def zcopy_clear(w: World, b: Buffer) -> Text | None:
    """skb_release_data's skb_zcopy_clear(skb, true) on the last data reference: the uarg's
    callback runs and the zerocopy flags go; None when the data carried no uarg."""
    if b.uarg is None:
        return None
    u = w.uargs[b.uarg]
    b.uarg = None
    b.flags = [f for f in b.flags if f not in ALL_ZEROCOPY]
    r0 = u.refcnt
    tail = uarg_put(w, u)
    return msg(
        "skb_zcopy_clear → msg_zerocopy_callback: {uarg} refcnt {r0} → {r1}. {tail}",
        uarg=u.name,
        r0=r0,
        r1=u.refcnt,
        tail=tail,
    )
