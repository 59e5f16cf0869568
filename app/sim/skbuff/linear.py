"""The linear area: moving data and tail inside the head, header offsets and pulling paged
bytes into the head.

Follows include/linux/skbuff.h and net/core/skbuff.c (Linux 6.4): ``skb_reserve``,
``skb_put``/``skb_push``/``skb_pull`` (skbuff.c:2383-2424, with ``skb_over_panic`` and
``skb_under_panic``), ``skb_trim`` and ``pskb_trim`` (``___pskb_trim``), the
``skb_reset_*_header``/``skb_set_*_header`` offsets, ``pskb_may_pull`` (``__pskb_pull_tail``)
and the ``skb_headroom``/``skb_tailroom``/``skb_headlen`` queries.
"""

from __future__ import annotations

from app.sim.core import msg
from app.sim.skbuff.free import release
from app.sim.skbuff.ops import Op
from app.sim.skbuff.share import condense, eat_paged, expand, room_to_pull, shared_bug
from app.sim.skbuff.skb import Frag, Skb, Step, Text, World, make_step, null_step, write_region

U16 = 0xFFFF
HEADER_LABELS = frozenset(
    "eth ethernet mac vlan ip ipv4 ipv6 ip6 tcp udp icmp icmpv6 arp gre vxlan geneve "
    "hdr hdrs header headers mpls".split()
)


def _label_kind(label: str, default: str) -> str:
    return "header" if label.strip().lower() in HEADER_LABELS else default


def _panic_line(kind: str, s: Skb, sz: int, data: int, length: int, tail: int) -> str:
    return (
        f"skbuff: {kind}: text:<caller> len:{length} put:{sz} head:<head> "
        f"data:<head+{data}> tail:{tail:#x} end:{s.end:#x} dev:<NULL>"
    )


def skb_reserve(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    n = op.len or 0
    d0, t0 = s.data, s.tail
    s.data += n
    s.tail += n
    notes: list[Text] = []
    mark = None
    if s.len:
        notes.append(
            msg(
                "skb_reserve is meant for an empty buffer; on one holding data it just slides the window over bytes that are not the packet any more."
            )
        )
    text = msg(
        "skb_reserve moves data and tail together by {n}: data {d0} → {data}, tail {t0} → {tail}. headroom is now {data}; len stays {len}.",
        n=n,
        d0=d0,
        data=s.data,
        t0=t0,
        tail=s.tail,
        len=s.len,
    )
    if s.tail > s.end:
        mark = "overrun"
        text += msg(
            " Nothing checks the size: tail ({tail}) is now past end ({end}), into skb_shared_info. The next skb_put will hit skb_over_panic.",
            tail=s.tail,
            end=s.end,
        )
    return make_step(op, s.name, "ok", text, notes=tuple(notes), mark=mark)


def skb_put(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    n = op.len or 0
    if s.data_len:
        return make_step(
            op,
            s.name,
            "skb_put_nonlinear",
            msg(
                "skb_put starts with SKB_LINEAR_ASSERT: the skb is nonlinear (data_len {data_len}), so BUG_ON fires — 'kernel BUG at net/core/skbuff.c'. Appending to the linear tail would put bytes in front of the paged data, out of order.",
                data_len=s.data_len,
            ),
            bug="kernel BUG at net/core/skbuff.c (SKB_LINEAR_ASSERT in skb_put)",
        )
    new_tail = s.tail + n
    if new_tail > s.end:
        line = _panic_line("skb_over_panic", s, n, s.data, s.len + n, new_tail)
        return make_step(
            op,
            s.name,
            "skb_over_panic",
            msg(
                'skb_put({n}) moves tail {tail} → {new_tail}, past end {end} (tailroom was only {s_end_s_tail}). skb_over_panic → skb_panic prints the geometry with pr_emerg and calls BUG(): the kernel oopses instead of overwriting skb_shared_info. Printed: "{line}".',
                n=n,
                tail=s.tail,
                new_tail=new_tail,
                end=s.end,
                s_end_s_tail=s.end - s.tail,
                line=line,
            ),
            bug=line,
        )
    b = w.buf(s)
    t0, l0 = s.tail, s.len
    s.tail = new_tail
    s.len += n
    label = op.label or "data"
    write_region(b, t0, new_tail, label, _label_kind(label, "payload"))
    notes = []
    if w.skb_cloned(s):
        notes.append(
            msg(
                "This skb's data is shared with a clone; real code makes it private first (skb_cow_data or pskb_expand_head) before writing."
            )
        )
    text = msg(
        "skb_put extends the data area by {n} bytes at the tail and returns the old tail for the caller to fill: tail {t0} → {tail}, len {l0} → {len}, tailroom {s_end_t0} → {s_end_s_tail}.",
        n=n,
        t0=t0,
        tail=s.tail,
        l0=l0,
        len=s.len,
        s_end_t0=s.end - t0,
        s_end_s_tail=s.end - s.tail,
    )
    return make_step(op, s.name, "ok", text, notes=tuple(notes))


def skb_push(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    n = op.len or 0
    new_data = s.data - n
    if new_data < 0:
        line = _panic_line("skb_under_panic", s, n, new_data, s.len + n, s.tail)
        return make_step(
            op,
            s.name,
            "skb_under_panic",
            msg(
                'skb_push({n}) would move data {data} → {new_data}, in front of head: only {data} bytes of headroom exist. skb_under_panic → skb_panic prints the geometry and calls BUG(). Callers that are unsure use skb_cow_head() first. Printed: "{line}".',
                n=n,
                data=s.data,
                new_data=new_data,
                line=line,
            ),
            bug=line,
        )
    b = w.buf(s)
    d0, l0 = s.data, s.len
    s.data = new_data
    s.len += n
    label = op.label or "hdr"
    write_region(b, new_data, d0, label, _label_kind(label, "header"))
    notes = []
    if w.skb_header_cloned(s):
        notes.append(
            msg(
                "The header bytes are shared with another skb (skb_header_cloned); real code calls skb_cow_head() first so it does not scribble on them."
            )
        )
    elif w.skb_cloned(s):
        notes.append(
            msg(
                "The data is shared, but the other holders only reference the payload (the dataref split set by __skb_header_release), so writing headers into the headroom is safe — that is why TCP releases headers on queued skbs."
            )
        )
    text = msg(
        "skb_push prepends {n} bytes: data {d0} → {data}, len {l0} → {len}, headroom {d0} → {data}. The caller writes the {label} header at the new data.",
        n=n,
        d0=d0,
        data=s.data,
        l0=l0,
        len=s.len,
        label=label,
    )
    return make_step(op, s.name, "ok", text, notes=tuple(notes))


def skb_pull(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    n = op.len or 0
    if n > s.len:
        return null_step(
            op,
            s.name,
            msg(
                "skb_pull({n}) asks for more than len {len}: skb_pull_inline returns NULL and leaves the skb unchanged (no panic). Callers treat this as a truncated packet.",
                n=n,
                len=s.len,
            ),
        )
    if s.len - n < s.data_len:
        return make_step(
            op,
            s.name,
            "__skb_pull",
            msg(
                "Only {s_len_s_data_len} bytes are linear (headlen) but skb_pull({n}) goes past them into paged data (data_len {data_len}). __skb_pull sees len < data_len after subtracting and calls BUG(). Code that may cross into frags uses pskb_may_pull()/pskb_pull(), which copy paged bytes into the head first.",
                s_len_s_data_len=s.len - s.data_len,
                n=n,
                data_len=s.data_len,
            ),
            bug="kernel BUG at include/linux/skbuff.h (__skb_pull)",
        )
    d0, l0 = s.data, s.len
    s.data += n
    s.len -= n
    text = msg(
        "skb_pull removes {n} bytes from the front: data {d0} → {data}, len {l0} → {len}, headroom {d0} → {data}. The bytes stay in the buffer; they are just in front of data now, and the function returns the new data pointer.",
        n=n,
        d0=d0,
        data=s.data,
        l0=l0,
        len=s.len,
    )
    return make_step(op, s.name, "ok", text)


def linear_trim(s: Skb, n: int) -> Text:
    l0, t0 = s.len, s.tail
    s.len = n
    s.tail = s.data + n
    return msg("len {l0} → {len}, tail {t0} → {tail}", l0=l0, len=s.len, t0=t0, tail=s.tail)


def skb_trim(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    n = op.len or 0
    if s.len <= n:
        return make_step(
            op,
            s.name,
            "ok",
            msg(
                "skb_trim({n}) only shortens: len is already {len}, nothing changes.",
                n=n,
                len=s.len,
            ),
        )
    if s.data_len:
        return make_step(
            op,
            s.name,
            "ok",
            msg(
                "skb_trim({n}) on a nonlinear skb (data_len {data_len}): __skb_set_length hits WARN_ON(skb_is_nonlinear) and returns without trimming. len stays {len}. Paged skbs need pskb_trim.",
                n=n,
                data_len=s.data_len,
                len=s.len,
            ),
            mark="warn",
            notes=(msg("The WARN prints a stack trace once but does not stop the kernel."),),
        )
    what = linear_trim(s, n)
    return make_step(
        op,
        s.name,
        "ok",
        msg(
            "skb_trim cuts the linear data to {n} bytes by moving tail back: {what}.",
            n=n,
            what=what,
        ),
    )


def pskb_trim(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    n = op.len or 0
    if s.len <= n:
        return make_step(
            op,
            s.name,
            "ok",
            msg("pskb_trim({n}): len is already {len}, nothing to trim.", n=n, len=s.len),
        )
    if not s.data_len:
        what = linear_trim(s, n)
        return make_step(
            op,
            s.name,
            "ok",
            msg("pskb_trim({n}) on a linear skb is a plain __skb_trim: {what}.", n=n, what=what),
        )
    pre: Text = ""
    if w.skb_cloned(s):
        if s.users != 1:
            return shared_bug(w, op, s, msg("___pskb_trim must unclone first"))
        res = expand(w, s, 0, 0)
        if not res.ok:
            return null_step(
                op,
                s.name,
                msg(
                    "___pskb_trim needs a private copy but pskb_expand_head fails with -ENOMEM ({detail}); pskb_trim returns the error and the skb is unchanged.",
                    detail=res.detail,
                ),
            )
        pre = msg(
            "The data was shared, so ___pskb_trim first unclones it: {detail} ",
            detail=res.detail,
        )
    b = w.buf(s)
    l0, dl0 = s.len, s.data_len
    offset = s.len - s.data_len
    keep: list[Frag] = []
    dropped = 0
    for f in b.frags:
        if offset >= n:  # everything from here on lies beyond the new length
            w.pages[f.page] -= 1
            dropped += 1
            continue
        if offset + f.size >= n:  # the frag that reaches the new length is cut to it
            f.size = n - offset
        offset += f.size
        keep.append(f)
    b.frags = keep
    for member in list(b.frag_list):
        m = w.skbs[member]
        if offset >= n:
            b.frag_list.remove(member)
            release(w, m, "consumed")
            continue
        if offset + m.len > n and not m.data_len:
            linear_trim(m, n - offset)
        offset += m.len
    if n > s.len - s.data_len:
        s.data_len -= s.len - n
        s.len = n
    else:
        s.len = n
        s.data_len = 0
        s.tail = s.data + n
    text = msg(
        "{pre}pskb_trim({n}) → ___pskb_trim walks the frags: keeps what lies below {n}, shrinks the frag that crosses it and drops {dropped} frag(s) beyond (put_page). len {l0} → {len}, data_len {dl0} → {data_len}.",
        pre=pre,
        n=n,
        dropped=dropped,
        l0=l0,
        len=s.len,
        dl0=dl0,
        data_len=s.data_len,
    )
    if s.has_sk:
        text += msg(
            " skb->sk is set, so skb_condense is skipped and truesize stays {truesize}: the socket's accounting must not change under it.",
            truesize=s.truesize,
        )
    else:
        text += condense(w, s)
    return make_step(op, s.name, "ok", text)


def _header_op(w: World, op: Op, which: str, offset: int | None) -> Step:
    s = w.skbs[op.skb]
    field = f"{which}_header"
    old: int | None = getattr(s, field)
    raw = s.data + (offset or 0)
    value = raw & U16
    setattr(s, field, value)
    was = msg("unset (~0)") if old is None else str(old)
    if offset is None:
        what = msg(
            "skb_reset_{field} records data − head: {field} {was} → {value}",
            field=field,
            was=was,
            value=value,
        )
    else:
        what = msg(
            "skb_set_{field}({offset}) records data − head + {offset} = {data} + {offset}: {field} {was} → {value}",
            field=field,
            offset=offset,
            data=s.data,
            was=was,
            value=value,
        )
    rel = value - s.data
    where = (
        msg("at data")
        if rel == 0
        else msg("{rel} bytes after data", rel=rel)
        if rel > 0
        else msg("{rel} bytes in front of data (already pulled)", rel=-rel)
    )
    text = msg(
        "{what}. The offset is counted from head, not from data, so it stays valid while later pulls and pushes move data; the {which} header now starts {where}.",
        what=what,
        which=which,
        where=where,
    )
    notes: tuple[Text, ...] = ()
    mark = None
    if raw < 0 or raw > U16:
        mark = "warn"
        notes = (
            msg(
                "data + offset = {raw} does not fit the u16 field; the kernel stores {value}, and skb_{which}_header() would point at the wrong bytes.",
                raw=raw,
                value=value,
                which=which,
            ),
        )
    return make_step(op, s.name, "ok", text, notes=notes, mark=mark)


def skb_reset_mac_header(w: World, op: Op) -> Step:
    return _header_op(w, op, "mac", None)


def skb_reset_network_header(w: World, op: Op) -> Step:
    return _header_op(w, op, "network", None)


def skb_reset_transport_header(w: World, op: Op) -> Step:
    return _header_op(w, op, "transport", None)


def skb_set_mac_header(w: World, op: Op) -> Step:
    return _header_op(w, op, "mac", op.offset or 0)


def skb_set_network_header(w: World, op: Op) -> Step:
    return _header_op(w, op, "network", op.offset or 0)


def skb_set_transport_header(w: World, op: Op) -> Step:
    return _header_op(w, op, "transport", op.offset or 0)


def pskb_may_pull(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    n = op.len or 0
    headlen = s.len - s.data_len
    if n <= headlen:
        return make_step(
            op,
            s.name,
            "ok",
            msg(
                "pskb_may_pull({n}): the first {n} bytes are already in the linear area (headlen {headlen}), so it returns true at once and nothing moves.",
                n=n,
                headlen=headlen,
            ),
        )
    if n > s.len:
        return null_step(
            op,
            s.name,
            msg(
                "pskb_may_pull({n}): the packet has only {len} bytes, so it returns false (pskb_may_pull_reason gives SKB_DROP_REASON_PKT_TOO_SMALL); the caller drops the packet. The skb is unchanged.",
                n=n,
                len=s.len,
            ),
        )
    delta = n - headlen
    eat = s.tail + delta - s.end
    pre: Text = ""
    room = room_to_pull(
        w,
        op,
        s,
        eat,
        lambda detail: msg(
            "__pskb_pull_tail cannot grow the head ({detail}): pskb_may_pull returns false (SKB_DROP_REASON_NOMEM).",
            detail=detail,
        ),
    )
    if isinstance(room, Step):
        return room
    if room is not None:
        pre = (
            msg(
                "eat = tail + {delta} − end = {eat} > 0, so the head first grows by eat + 128: ",
                delta=delta,
                eat=eat,
            )
            if eat > 0
            else msg("The head is shared with a clone, so it is made private first: ")
        ) + f"{room.detail} "
    b = w.buf(s)
    t0 = s.tail
    write_region(b, s.tail, s.tail + delta, "pulled", "payload")
    s.tail += delta
    s.data_len -= delta
    how = eat_paged(w, s, delta)
    text = msg(
        "{pre}pskb_may_pull({n}): only {headlen} bytes are linear, so __pskb_pull_tail({delta}) copies the next {delta} paged bytes behind them: tail {t0} → {tail}, data_len → {data_len}, len stays {len}; {how}. It returns true: the caller may now read {n} bytes at data.",
        pre=pre,
        n=n,
        headlen=headlen,
        delta=delta,
        t0=t0,
        tail=s.tail,
        data_len=s.data_len,
        len=s.len,
        how=how,
    )
    return make_step(op, s.name, "ok", text)


def skb_headroom(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    return make_step(
        op,
        s.name,
        "ok",
        msg("skb_headroom = data − head = {data} bytes free in front of the data.", data=s.data),
    )


def skb_tailroom(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    if s.data_len:
        text = msg(
            "skb_tailroom is 0: the skb is nonlinear (data_len {data_len}), and bytes appended to the head would land before the paged data. (end − tail would be {s_end_s_tail}.)",
            data_len=s.data_len,
            s_end_s_tail=s.end - s.tail,
        )
    else:
        text = msg(
            "skb_tailroom = end − tail = {end} − {tail} = {s_end_s_tail} bytes.",
            end=s.end,
            tail=s.tail,
            s_end_s_tail=s.end - s.tail,
        )
    return make_step(op, s.name, "ok", text)


def skb_headlen(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    return make_step(
        op,
        s.name,
        "ok",
        msg(
            "skb_headlen = len − data_len = {len} − {data_len} = {s_len_s_data_len} bytes in the linear area (tail − data).",
            len=s.len,
            data_len=s.data_len,
            s_len_s_data_len=s.len - s.data_len,
        ),
    )


def skb_mark_for_recycle(w: World, op: Op) -> Step:
    """include/linux/skbuff.h:5122: pp_recycle = 1 (a page_pool driver, after building the skb
    around one of its pool's pages)."""
    s = w.skbs[op.skb]
    b = w.buf(s)
    s.pp_recycle = True
    if b.head_frag:
        text = msg(
            "The driver took this head's page from its page_pool and marks the skb with skb_mark_for_recycle: pp_recycle = 1. When the last reference to the data goes, skb_free_head will give the page back to the pool instead of the page allocator, and the pool's pages stay DMA-mapped."
        )
    else:
        text = msg(
            "skb_mark_for_recycle sets pp_recycle = 1, but this head is a slab object, not a page_pool page: skb_free_head only tries the page_pool for page-fragment heads (head_frag), so it will be kfree()d as usual."
        )
    return make_step(op, s.name, "ok", text)
