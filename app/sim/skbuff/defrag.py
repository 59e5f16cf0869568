"""The route an skb carries (``_skb_refdst``) and IPv4 reassembly onto a frag_list.

Follows Linux 6.4. ``skb_dst_set_noref`` (include/linux/skbuff.h:1153) stores the route with the
``SKB_DST_NOREF`` bit: no reference is taken, which is only safe inside the RCU read section of
the receive path. ``skb_dst_force`` (include/net/dst.h:319) takes a real reference before the
skb outlives that section; ``skb_dst_drop`` (dst.h:279) lets the route go.

``ip_frag_queue`` (net/ipv4/ip_fragment.c:275) pulls a fragment's IP header, queues it in its
``ipq`` and, while the datagram is incomplete, drops its route (the fragment will wait past
the RCU section) and returns -EINPROGRESS. The fragment that completes the queue goes to
``ip_frag_reasm`` (ip_fragment.c:411) with its ``_skb_refdst`` set aside: the skb just received
becomes the head (``inet_frag_reasm_prepare``: a clone takes its place in the queue,
``skb_morph`` gives it the first fragment's data, the old head sk_buff is freed), and
``inet_frag_reasm_finish`` pushes the IP header back and links the other fragments on the
head's frag_list, unless ``skb_try_coalesce`` can merge them (never for a fragment whose head
is a kmalloc'ed, non-page-fragment buffer, as here).
"""

from __future__ import annotations

from app.sim.core import msg
from app.sim.skbuff.ops import MAX_SKBS, Op
from app.sim.skbuff.share import clone_skb, copy_header_fields
from app.sim.skbuff.skb import Skb, Step, Text, World, make_step, null_step

IHL = 20  # an IPv4 header without options


def skb_dst_set_noref(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    was = s.dst
    s.dst = "noref"
    text = msg(
        "The route lookup finds a cached input route and calls skb_dst_set_noref: _skb_refdst = the dst's address | SKB_DST_NOREF (bit 0). No reference is taken; that is safe because the whole receive path runs inside one RCU read section (WARN_ON if not), and the route cannot be freed before it ends.{was}",
        was=msg(" (The skb had a {was} route before.)", was=was) if was else "",
    )
    return make_step(op, s.name, "ok", text)


def skb_dst_force(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    if s.dst != "noref":
        text = msg(
            "skb_dst_force: the dst is {state}, so there is nothing to do.",
            state=msg("already refcounted") if s.dst == "ref" else msg("not set"),
        )
        return make_step(op, s.name, "ok", text)
    s.dst = "ref"
    text = msg(
        "skb_dst_force: the dst is not refcounted (SKB_DST_NOREF), and this skb is about to outlive the RCU read section (queued on a socket backlog, a qdisc, nf_queue). dst_hold_safe takes a real reference and _skb_refdst becomes the plain pointer; skb_dst_drop will release it later with dst_release."
    )
    return make_step(op, s.name, "ok", text)


def skb_dst_drop(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    was = s.dst
    s.dst = None
    if was is None:
        text = msg("skb_dst_drop: _skb_refdst is already 0; nothing to release.")
    elif was == "noref":
        text = msg(
            "skb_dst_drop: the route was only borrowed (SKB_DST_NOREF), so refdst_drop releases nothing; _skb_refdst = 0."
        )
    else:
        text = msg(
            "skb_dst_drop: the route was refcounted, so refdst_drop calls dst_release; _skb_refdst = 0."
        )
    return make_step(op, s.name, "ok", text)


def _pull_ip_header(s: Skb) -> bool:
    """ip_frag_queue's pskb_pull(skb, skb_network_offset(skb) + ihl); False when too short."""
    pull = s.data - s.network_header + IHL
    if s.len - s.data_len < pull:
        return False
    s.data += pull
    s.len -= pull
    return True


def ip_frag_queue(w: World, op: Op) -> Step:
    """A fragment that does not complete its datagram: queued, its route dropped."""
    s = w.skbs[op.skb]
    d0, l0 = s.data, s.len
    if not _pull_ip_header(s):
        return null_step(
            op,
            s.name,
            msg(
                "'{name}' holds no full IP header at network_header: pskb_pull fails, the queue is killed and the fragment dropped.",
                name=s.name,
            ),
        )
    had = s.dst
    s.dst = None
    text = msg(
        "ip_defrag → ip_frag_queue: the fragment's place comes from the IP header (offset, more-fragments bit); pskb_pull removes the {ihl}-byte header (data {d0} → {data}, len {l0} → {len}) and inet_frag_queue_insert puts '{name}' in the datagram's queue (struct ipq, keyed by source, destination, id and protocol), counting its truesize ({truesize}) against the fragment memory limit. The datagram is not complete yet, so the fragment will wait, perhaps for seconds, long after this RCU section ends: skb_dst_drop lets its route go and sets _skb_refdst = 0{noref}, and ip_defrag returns -EINPROGRESS.",
        ihl=IHL,
        d0=d0,
        data=s.data,
        l0=l0,
        len=s.len,
        name=s.name,
        truesize=s.truesize,
        noref=msg(" (the route was only borrowed, SKB_DST_NOREF, so nothing is released)")
        if had == "noref"
        else "",
    )
    return make_step(op, s.name, "ok", text)


def _fp_name(w: World) -> str:
    n = 1
    while (name := "fp" if n == 1 else f"fp{n}") in w.skbs:
        n += 1
    return name


def ip_frag_reasm(w: World, op: Op) -> Step:
    """The last fragment ``skb`` completes the queue whose first fragment is ``from``."""
    s = w.skbs[op.skb]
    head = w.skbs[op.src or ""]
    if len(w.skbs) >= MAX_SKBS:
        return null_step(
            op, s.name, msg("No room for the clone reassembly needs (at most 16 skbs here).")
        )
    if w.buf(head).frag_list or head.data_len:
        return null_step(
            op,
            s.name,
            msg(
                "'{name}' is not a plain queued fragment (it has paged data or a frag_list); this reassembly is not modelled and nothing changes.",
                name=head.name,
            ),
        )
    d0 = s.data
    if not _pull_ip_header(s):
        return null_step(
            op,
            s.name,
            msg("'{name}' holds no full IP header: the fragment is dropped.", name=s.name),
        )
    orefdst = s.dst
    sb, hb = w.buf(s), w.buf(head)
    # inet_frag_reasm_prepare: a clone of skb takes its place in the queue ...
    fp = clone_skb(s, _fp_name(w))
    fp.fclone, fp.cloned = "unavailable", True
    fp.dst = None  # _skb_refdst was set aside (0) while ip_frag_reasm runs
    w.skbs[fp.name] = fp
    sb.dataref += 1
    # ... skb_morph(skb, head): skb lets go of its own data and becomes a clone of head
    sb.dataref -= 1
    s.buffer, s.end = head.buffer, head.end
    s.data, s.tail, s.len, s.data_len = head.data, head.tail, head.len, head.data_len
    s.truesize = head.truesize
    copy_header_fields(s, head)
    s.pp_recycle = head.pp_recycle
    s.cloned = head.cloned = True
    hb.dataref += 1
    # ... and the old head sk_buff is consumed: its data reference goes, the data stays with skb
    hb.dataref -= 1
    head.users = 0
    head.status = "consumed"
    head_t = s.truesize
    # inet_frag_reasm_finish: push the IP header back, chain the clone on the frag_list
    s.data -= IHL
    s.len += IHL
    fp.status = "in_frag_list"
    fp.owner = s.name
    fp.has_sk = False
    hb.frag_list.append(fp.name)
    s.len += fp.len
    s.data_len += fp.len
    s.truesize += fp.truesize
    s.dst = orefdst
    text = msg(
        "'{name}' completes the datagram: ip_frag_queue pulls its {ihl}-byte header (data {d0} → {d1}), sets _skb_refdst aside and calls ip_frag_reasm, which makes the skb just received the head. inet_frag_reasm_prepare puts a clone '{fp}' of it in the queue, skb_morph makes '{name}' describe '{head}''s buffer {buf1}, and the sk_buff '{head}' is consumed. inet_frag_reasm_finish pushes the IP header back (data → {data}) and links '{fp}' on the frag_list (skb_try_coalesce fails: {fplen} bytes exceed the tailroom): len → {len}, data_len → {data_len}, truesize {t0} + {fpt} = {truesize}. The route comes back: {dst}.",
        name=s.name,
        ihl=IHL,
        d0=d0,
        d1=d0 + IHL,
        head=head.name,
        fp=fp.name,
        buf1=hb.id,
        data=s.data,
        fplen=fp.len,
        len=s.len,
        data_len=s.data_len,
        t0=head_t,
        fpt=fp.truesize,
        truesize=s.truesize,
        dst=_dst_words(orefdst),
    )
    return make_step(op, s.name, "ok", text)


def _dst_words(dst: str | None) -> Text:
    if dst == "noref":
        return msg("still NOREF, in the same RCU section")
    if dst == "ref":
        return msg("refcounted")
    return msg("none: the skb had no route")
