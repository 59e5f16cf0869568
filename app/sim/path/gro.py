"""GRO: segments merged into one large skb per flow, held in gro_hash buckets and handed
up in batches on ``napi->rx_list``.

Mirrors net/core/gro.c (``napi_gro_receive``, ``dev_gro_receive``, ``skb_gro_receive``,
``napi_gro_complete``, ``gro_flush_oldest``), include/net/gro.h (``gro_normal_one``,
``gro_normal_list``), net/ipv4/af_inet.c (``inet_gro_receive``, ``inet_gro_complete``) and
net/ipv4/tcp_offload.c (``tcp4_gro_receive``, ``tcp_gro_receive``, ``tcp4_gro_complete``).
"""

from __future__ import annotations

from app.sim.core.i18n import join, msg
from app.sim.path.engine import HeldView
from app.sim.path.ip_input import deliver_list
from app.sim.path.skb import GRO_MAX_SIZE, IP_HLEN
from app.sim.path.walk import (
    GRO_HASH_BUCKETS,
    GRO_NORMAL_BATCH,
    HDRS,
    MAX_GRO_SKBS,
    Held,
    Seg,
    Walk,
)


def bucket(w: Walk, flow: int) -> int:
    return 0 if w.p.same_bucket else flow % GRO_HASH_BUCKETS


def sync_held(w: Walk) -> None:
    napi = w.t.napi
    if napi is None:
        return
    held: list[HeldView] = [
        {"bucket": h.bucket, "flow": h.seg.flow, "segs": h.seg.segs, "len": h.length}
        for h in w.held
    ]
    napi["held"] = held


def gro(w: Walk, seg: Seg) -> None:
    t, s = w.t, w.s
    b = bucket(w, seg.flow)
    t.enter(
        "napi_gro_receive",
        msg(
            "napi_gro_receive starts GRO: the GRO offset is reset to skb->data. GRO reads "
            "headers through that offset and never moves skb->data."
        ),
        layer="gro",
    )
    s.set_header(seg.skb, "network")
    in_bucket = [h for h in w.held if h.bucket == b]
    t.enter(
        "dev_gro_receive",
        msg(
            "dev_gro_receive: bucket = hash & 7 = {b}, which holds {n} packet(s). "
            "gro_list_prepare marks those with the same device and MAC header as "
            "possible matches; network_header is set at data.",
            b=b,
            n=len(in_bucket),
        ),
        layer="gro",
    )
    s.set_header(seg.skb, "transport", s.data(seg.skb) + IP_HLEN)
    t.enter(
        "inet_gro_receive",
        msg(
            "inet_gro_receive checks the IPv4 header (version 4, ihl 5, no fragment, "
            "checksum). A held packet with another protocol or address stops being a "
            "match (same_flow = 0); one whose TTL, TOS or DF bit differs stays a match but "
            "gets flush set, so it is completed instead of merged. Then it moves the GRO "
            "offset past 20 bytes and calls the TCP handler."
        ),
        layer="gro",
    )
    t.enter(
        "tcp4_gro_receive",
        msg(
            "tcp4_gro_receive: the NIC already validated the checksum "
            "(CHECKSUM_UNNECESSARY), so nothing is summed; on to tcp_gro_receive."
        ),
        layer="gro",
    )
    match = next((h for h in in_bucket if h.seg.flow == seg.flow), None)
    base = len(t.stack) - 4  # napi_gro_receive's depth
    result, went = tcp_gro_receive(w, seg, match)
    # inet_gro_receive and tcp4_gro_receive have returned: back in dev_gro_receive, which
    # completes a flushed packet (napi_gro_complete) and holds or passes the skb
    t.unwind(base + 2)
    dev_gro_finish(w, seg, b, match, result)
    # dev_gro_receive has returned: napi_skb_finish(napi, skb, dev_gro_receive(napi, skb))
    t.unwind(base + 1)
    napi_skb_finish(w, seg, match, result, went)


def napi_skb_finish(w: Walk, seg: Seg, match: Held | None, result: str, went: str) -> None:
    """napi_skb_finish (net/core/gro.c): what happens to the skb given dev_gro_receive's
    result. A merge that stole the skb's head or moved its frags returns GRO_MERGED_FREE (the
    shell is freed); a merge that chained the whole skb on frag_list returns GRO_MERGED."""
    t = w.t
    if result in ("merged", "merged_flush"):
        t.cur = match.seg.skb if match is not None else None
        if went == "frag_list":
            text = msg(
                "napi_skb_finish: GRO_MERGED. skb_gro_receive chained the whole segment skb "
                "on the held packet's frag_list, so NAPI_GRO_CB(skb)->free stays 0 and "
                "nothing is freed: the skb lives on inside the GRO packet."
            )
        elif w.p.rx_mode == "build_skb":
            text = msg(
                "napi_skb_finish: GRO_MERGED_FREE. skb_gro_receive stole the segment's head "
                "(head_frag: its page became a fragment of the held packet) and set "
                "NAPI_GRO_CB(skb)->free = NAPI_GRO_FREE_STOLEN_HEAD, so "
                "napi_skb_free_stolen_head frees only the sk_buff shell (back to the NAPI "
                "cache). No packet of this flow is left in the bucket."
            )
        else:
            text = msg(
                "napi_skb_finish: GRO_MERGED_FREE. skb_gro_receive moved the segment's page "
                "fragments to the held packet and set NAPI_GRO_CB(skb)->free = "
                "NAPI_GRO_FREE, so the rest of the skb (its small head and the sk_buff) is "
                "freed."
            )
        if result == "merged_flush":
            text = join(
                " ",
                (
                    text,
                    msg(
                        "The held packet it merged into was completed and passed up by "
                        "dev_gro_receive, so bucket {b} holds nothing of this flow now.",
                        b=bucket(w, seg.flow),
                    ),
                ),
            )
        t.enter("napi_skb_finish", text, layer="gro")
    elif result in ("normal", "normal_pp"):
        t.enter(
            "napi_skb_finish",
            msg("napi_skb_finish: GRO_NORMAL, so gro_normal_one puts the skb on rx_list."),
            layer="gro",
        )
        to_rx_list(w, seg)
    else:
        t.cur = seg.skb
        t.enter(
            "napi_skb_finish",
            msg("napi_skb_finish: GRO_HELD, nothing to do; the skb waits in its bucket."),
            layer="gro",
            result="held",
        )


def checksum_drop(w: Walk, seg: Seg, depth: int) -> None:
    """A frame whose IPv4 header checksum is wrong: GRO refuses it, ip_rcv_core drops it."""
    t = w.t
    t.enter(
        "napi_gro_receive",
        msg("napi_gro_receive hands the skb to dev_gro_receive."),
        layer="gro",
    )
    t.enter("dev_gro_receive", msg("dev_gro_receive calls inet_gro_receive."), layer="gro")
    t.leaf(
        "inet_gro_receive",
        msg(
            "inet_gro_receive recomputes the IPv4 header checksum (ip_fast_csum): it is "
            "wrong (a bit flipped on the way), so the packet is not aggregated and is "
            "flagged flush."
        ),
        layer="gro",
        mark="csum",
    )
    t.leave()
    t.enter(
        "napi_skb_finish",
        msg("napi_skb_finish: GRO_NORMAL, the skb goes to rx_list as it is."),
        layer="gro",
    )
    to_rx_list(w, seg)
    t.unwind(depth)


def tcp_gro_receive(w: Walk, seg: Seg, match: Held | None) -> tuple[str, str]:
    """Returns the result, one of "held", "normal", "merged", "merged_flush", "flush_new" (p
    flushed, skb held) or "normal_pp" (p flushed, skb normal), and where a merge put the
    segment ("frags" or "frag_list"; "" when nothing merged)."""
    t, s = w.t, w.s
    t.cur = seg.skb
    if match is None:
        if seg.psh:
            t.enter(
                "tcp_gro_receive",
                msg(
                    "tcp_gro_receive: no held packet of this flow. The segment has PSH, "
                    "and PSH forces a flush, so it is not held: it goes up as it is."
                ),
                layer="gro",
                mark="flush",
            )
            return "normal", ""
        t.enter(
            "tcp_gro_receive",
            msg(
                "tcp_gro_receive: no held packet of this flow, no PSH/URG/RST/SYN/FIN: "
                "nothing forces a flush, so the segment will be held to absorb the next "
                "ones."
            ),
            layer="gro",
        )
        return "held", ""
    p = match.seg
    mss = s.gso[p.skb][0]
    too_big = match.length + seg.payload >= GRO_MAX_SIZE
    if seg.payload > mss:
        t.enter(
            "tcp_gro_receive",
            msg(
                "tcp_gro_receive: this segment ({len}) is longer than the held packet's "
                "gso_size ({mss}); it cannot be merged. The held packet is flushed and "
                "this one takes its place.",
                len=seg.payload,
                mss=mss,
            ),
            layer="gro",
            mark="flush",
        )
        return "normal_pp" if seg.psh else "flush_new", ""
    t.enter(
        "tcp_gro_receive",
        msg(
            "tcp_gro_receive finds the held packet of this flow: same ports, flags apart "
            "from PSH/FIN/CWR, same ack and options, seq contiguous with its end, length "
            "≤ its gso_size {mss}. Nothing sets flush, so skb_gro_receive merges.",
            mss=mss,
        ),
        layer="gro",
        notes=(
            msg(
                "Linux 6.12 moved the IP-level flush checks (TTL, TOS, DF, IP ID) from "
                "inet_gro_receive into tcp_gro_receive (gro_receive_network_flush); the "
                "rules are the same."
            ),
        ),
    )
    if too_big:
        t.leaf(
            "skb_gro_receive",
            msg(
                "skb_gro_receive refuses: the held packet ({plen}) plus {len} would reach "
                "gro_max_size 65536 (-E2BIG). The held packet is flushed and this segment "
                "is held in its place.",
                plen=match.length,
                len=seg.payload,
            ),
            layer="gro",
            mark="flush",
        )
        return "normal_pp" if seg.psh else "flush_new", ""
    t.cur = p.skb
    last = s.last.get(p.skb, p.skb)  # NAPI_GRO_CB(p)->last: where frags are added
    went = s.gro_merge(p.skb, seg.skb, HDRS, seg.payload)
    p.segs += 1
    match.length += seg.payload
    sync_held(w)
    if went == "frags" and last != p.skb:
        text = msg(
            "skb_gro_receive merges into {last}, the last skb on the held skb's frag_list "
            "(NAPI_GRO_CB(p)->last): the segment's payload becomes a page fragment of "
            "{last} ({n} there now; the headers are skipped, not copied) and the held skb "
            "grows: len {len}, {segs} segments. The segment's own sk_buff will be freed.",
            last=last,
            n=s.last_frags[p.skb],
            len=s.length(p.skb),
            segs=p.segs,
        )
    elif went == "frags":
        text = msg(
            "skb_gro_receive merges: the segment's payload becomes one more page fragment "
            "of the held skb (frags[], {nr} now; the headers are skipped, not copied) and "
            "the held skb grows: len {len}, {segs} segments. The segment's own sk_buff "
            "will be freed.",
            nr=s.frags(p.skb),
            len=s.length(p.skb),
            segs=p.segs,
        )
    else:
        text = msg(
            "skb_gro_receive: frags[] already has MAX_SKB_FRAGS (17) entries, so the "
            "whole segment skb (headers pulled) is chained on the held skb's frag_list "
            "instead; len {len}, {segs} segments.",
            len=s.length(p.skb),
            segs=p.segs,
        )
    t.leaf("skb_gro_receive", text, layer="gro", result="merged")
    t.cur = p.skb
    short = seg.payload < mss
    if seg.psh or short:
        why = "PSH" if seg.psh else "a segment shorter than gso_size"
        w.here(
            msg(
                "After merging, {why} forces a flush: the held packet is returned to "
                "dev_gro_receive to be completed now.",
                why=why,
            ),
            "gro",
            mark="flush",
        )
        return "merged_flush", went
    return "merged", went


def dev_gro_finish(w: Walk, seg: Seg, b: int, match: Held | None, result: str) -> None:
    t = w.t
    d = len(t.stack)
    if result in ("merged_flush", "flush_new", "normal_pp") and match is not None:
        w.held.remove(match)
        sync_held(w)
        complete(w, match.seg, d)
        t.unwind(d)
    if result == "merged" or result == "merged_flush":
        return
    if result in ("held", "flush_new"):
        in_bucket = [h for h in w.held if h.bucket == b]
        t.cur = seg.skb
        if len(in_bucket) >= MAX_GRO_SKBS:
            oldest = in_bucket[0]
            t.enter(
                "gro_flush_oldest",
                msg(
                    "Bucket {b} already holds MAX_GRO_SKBS = 8 packets: gro_flush_oldest "
                    "completes the oldest (flow {flow}) to make room.",
                    b=b,
                    flow=oldest.seg.flow,
                ),
                layer="gro",
                mark="flush",
            )
            w.held.remove(oldest)
            sync_held(w)
            complete(w, oldest.seg, len(t.stack))
            t.unwind(d)
        t.cur = seg.skb
        w.s.set_gso(seg.skb, seg.payload, 0)
        w.held.append(Held(seg=seg, bucket=b, length=w.s.length(seg.skb)))
        sync_held(w)
        w.here(
            msg(
                "dev_gro_receive holds the skb in bucket {b}: count 1, gso_size = its "
                "payload ({mss}) and age = now. Result GRO_HELD.",
                b=b,
                mss=seg.payload,
            ),
            "gro",
            result="held",
        )


def complete(w: Walk, seg: Seg, depth: int) -> None:
    """napi_gro_complete: fix the headers of a GRO packet and pass it to rx_list."""
    t, s = w.t, w.s
    t.cur = seg.skb
    t.packet = seg.index
    if seg.segs == 1:
        s.set_gso(seg.skb, 0, 0)
        t.enter(
            "napi_gro_complete",
            msg(
                "napi_gro_complete: the packet absorbed nothing (count 1), so it is sent "
                "up as a plain segment with gso_size cleared."
            ),
            layer="gro",
        )
    else:
        s.set_gso(seg.skb, s.gso[seg.skb][0], seg.segs)
        t.enter(
            "napi_gro_complete",
            msg(
                "napi_gro_complete: the packet holds {segs} segments ({len} bytes from "
                "the IP header).",
                segs=seg.segs,
                len=s.length(seg.skb),
            ),
            layer="gro",
        )
        t.leaf(
            "inet_gro_complete",
            msg("inet_gro_complete rewrites the IP tot_len and header checksum."),
            layer="gro",
        )
        t.leaf(
            "tcp4_gro_complete",
            msg(
                "tcp4_gro_complete sets the TCP pseudo-header checksum and gso_type "
                "TCPV4; gso_segs = {segs}, gso_size = {mss}. To the stack it is one "
                "large TCP segment.",
                segs=seg.segs,
                mss=s.gso[seg.skb][0],
            ),
            layer="gro",
        )
    to_rx_list(w, seg)
    t.unwind(depth)


def to_rx_list(w: Walk, seg: Seg) -> None:
    t = w.t
    napi = t.napi
    if napi is None:
        raise RuntimeError("internal: napi is unset here")
    w.rx_list.append(seg)
    napi["rx_count"] += seg.segs
    t.cur = seg.skb
    t.enter(
        "gro_normal_one",
        msg(
            "gro_normal_one appends the skb to napi->rx_list: rx_count {n} (segments, "
            "not skbs). At gro_normal_batch = 8 the list is passed up at once.",
            n=napi["rx_count"],
        ),
        layer="gro",
    )
    if napi["rx_count"] >= GRO_NORMAL_BATCH:
        gro_normal_list(w)


def gro_normal_list(w: Walk) -> None:
    t = w.t
    napi = t.napi
    if napi is None:
        raise RuntimeError("internal: napi is unset here")
    batch = list(w.rx_list)
    w.rx_list.clear()
    count = napi["rx_count"]
    napi["rx_count"] = 0
    if not batch:
        return
    t.cur = batch[0].skb
    t.enter(
        "gro_normal_list",
        msg(
            "gro_normal_list passes {n} skb(s) ({segs} segments) up the stack as one "
            "list and resets rx_count.",
            n=len(batch),
            segs=count,
        ),
        layer="gro",
        mark="deliver",
    )
    deliver_list(w, batch)
    t.leave()
