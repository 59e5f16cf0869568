"""What the protocols keep in an sk_buff: cb[], GSO and checksum fields, and cutting a GSO
packet back into segments.

Follows the callers in Linux 6.4: ``ip_rcv_core`` (net/ipv4/ip_input.c:456, IPCB in cb[]),
``tcp_v4_fill_cb`` (net/ipv4/tcp_ipv4.c:1950) and ``tcp_skb_entail`` (net/ipv4/tcp.c:659,
TCP_SKB_CB), ``tcp_set_skb_tso_segs`` (net/ipv4/tcp_output.c:1439) and the GSO fields
``__tcp_transmit_skb`` (tcp_output.c:1234) copies from it into skb_shinfo, ``tcp4_gro_complete``
(net/ipv4/tcp_offload.c:332), ``skb_segment`` (net/core/skbuff.c:4355), and the checksum fields
set by ``skb_partial_csum_set`` (skbuff.c:5298), ``tcp_v4_send_check`` and igb's
``igb_rx_checksum``.
"""

from __future__ import annotations

from dataclasses import replace

from app.sim.core import msg
from app.sim.core.i18n import join
from app.sim.skbuff.alloc import kmalloc_reserve, new_skb
from app.sim.skbuff.linear import U16, pskb_may_pull
from app.sim.skbuff.ops import MAX_SKBS, TCP_FLAGS, Op
from app.sim.skbuff.share import copy_header_fields
from app.sim.skbuff.skb import (
    CHECKSUM_NAMES,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    DATAREF_MASK,
    DATAREF_SHIFT,
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

TCPHDR = {flag: 1 << bit for bit, flag in enumerate(TCP_FLAGS)}  # TCPHDR_FIN 0x01 .. CWR 0x80
SKB_IIF = 2  # the receiving device's ifindex in the walkthroughs (eth0 is usually 2)
TCP_CHECK_OFFSET = 16  # offsetof(struct tcphdr, check)


def ip_rcv_core(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    ihl = op.len if op.len is not None else 20
    pulled = pskb_may_pull(w, replace(op, op="pskb_may_pull", len=ihl, via=None))
    if pulled.result != "ok":
        return make_step(
            op,
            s.name,
            pulled.result,
            msg(
                "ip_rcv_core first needs the {ihl}-byte IP header in the linear area: {pulled_narration} The packet is dropped (kfree_skb_reason).",
                ihl=ihl,
                pulled_narration=pulled.narration,
            ),
            mark=pulled.mark,
            bug=pulled.bug,
        )
    th0 = s.transport_header
    s.transport_header = s.network_header + ihl
    s.cb_layer = "IPCB"
    s.cb = {"iif": SKB_IIF, "flags": 0, "opt.optlen": ihl - 20}
    was = "unset" if th0 is None else str(th0)
    text = msg(
        "ip_rcv_core checks the IP header with pskb_may_pull({ihl}) (here: {pulled_narration}) and sets transport_header = network_header + ihl*4 = {network_header} + {ihl} = {transport_header} (was {was}); data stays at the IP header. It then clears IPCB(skb), the struct inet_skb_parm that the IP layer lays over cb[0..], and stores iif = skb->skb_iif ({skb_iif}). Only the IP layer reads cb[] now; the next layer will reuse the same 48 bytes for its own struct.",
        ihl=ihl,
        pulled_narration=pulled.narration,
        network_header=s.network_header,
        transport_header=s.transport_header,
        was=was,
        skb_iif=SKB_IIF,
    )
    return make_step(op, s.name, "ok", text)


def tcp_v4_fill_cb(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    seq = op.seq or 0
    doff = op.len if op.len is not None else 32
    flags = (op.flags or "ACK").split("|")
    fbyte = sum(TCPHDR[f] for f in flags)
    syn, fin = int("SYN" in flags), int("FIN" in flags)
    payload = s.len - doff
    end_seq = (seq + syn + fin + payload) & 0xFFFFFFFF
    moved: Text = ""
    iif = s.cb.get("iif") if s.cb_layer == "IPCB" else None
    if iif is not None:
        moved = msg(
            "IPCB starts at cb[0], exactly where TCP_SKB_CB puts seq, so it first memmove()s the IP layer's inet_skb_parm (iif {iif}) into TCP_SKB_CB(skb)->header.h4, further inside cb[]. ",
            iif=iif,
        )
    s.cb_layer = "TCP_SKB_CB"
    s.cb = {
        "seq": seq,
        "end_seq": end_seq,
        "tcp_flags": fbyte,
        "sacked": 0,
    }
    if iif is not None:
        s.cb["header.h4.iif"] = iif
    notes: tuple[Text, ...] = ()
    if payload < 0:
        notes = (
            msg(
                "len {len} is shorter than the {doff}-byte TCP header; tcp_v4_rcv's pskb_may_pull(doff*4) would have dropped this packet first.",
                len=s.len,
                doff=doff,
            ),
        )
    text = msg(
        "tcp_v4_fill_cb: {moved}Then it fills TCP_SKB_CB(skb): seq = {seq}, end_seq = seq + SYN {syn} + FIN {fin} + len {len} − doff*4 {doff} = {end_seq}, tcp_flags = {join} ({fbyte:#04x}), sacked = 0. From here on TCP works with these numbers instead of re-reading the header.",
        moved=moved,
        seq=seq,
        syn=syn,
        fin=fin,
        len=s.len,
        doff=doff,
        end_seq=end_seq,
        join="|".join(flags),
        fbyte=fbyte,
    )
    return make_step(op, s.name, "ok", text, notes=notes)


def tcp_skb_entail(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    seq = op.seq or 0
    s.cb_layer = "TCP_SKB_CB"
    s.cb = {"seq": seq, "end_seq": seq, "tcp_flags": TCPHDR["ACK"], "sacked": 0}
    b = w.buf(s)
    s.nohdr = True
    b.dataref = 1 + (1 << DATAREF_SHIFT) if (b.dataref & DATAREF_MASK) == 1 else b.dataref
    text = msg(
        "tcp_skb_entail stamps TCP_SKB_CB(skb) before any data is copied: seq = end_seq = write_seq = {seq}, tcp_flags = ACK, sacked = 0. It calls __skb_header_release (nohdr, dataref 0x10001) and queues the skb on sk_write_queue, charging its truesize ({truesize}) to sk_wmem_queued. Each copy into the skb advances end_seq by the bytes copied.",
        seq=seq,
        truesize=s.truesize,
    )
    return make_step(op, s.name, "ok", text)


def tcp_set_skb_tso_segs(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    mss = op.mss or 0
    if s.len <= mss:
        segs, size = 1, 0
        how = msg(
            "len {len} ≤ mss {mss}: one segment, tcp_gso_size = 0 (not GSO)", len=s.len, mss=mss
        )
    else:
        segs, size = -(-s.len // mss), mss
        how = msg(
            "len {len} > mss {mss}: tcp_gso_segs = DIV_ROUND_UP({len}, {mss}) = {segs}, tcp_gso_size = {mss}",
            len=s.len,
            mss=mss,
            segs=segs,
        )
    if s.cb_layer != "TCP_SKB_CB":
        s.cb_layer, s.cb = "TCP_SKB_CB", {}
    s.cb["tcp_gso_segs"] = segs
    s.cb["tcp_gso_size"] = size
    text = msg(
        "tcp_set_skb_tso_segs records in TCP_SKB_CB how many wire segments this skb stands for: {how}. tcp_skb_pcount() reads it for cwnd accounting, and __tcp_transmit_skb copies it into skb_shinfo(skb)->gso_segs / gso_size (with gso_type = sk->sk_gso_type) when it sends the clone.",
        how=how,
    )
    return make_step(op, s.name, "ok", text)


def tcp_transmit_gso(w: World, op: Op) -> Step:
    """__tcp_transmit_skb's last touches before ip_queue_xmit: gso_type = sk->sk_gso_type,
    gso_segs = tcp_skb_pcount(), gso_size = tcp_skb_mss(), then memset(skb->cb, 0, ...)."""
    s = w.skbs[op.skb]
    if s.cb_layer != "TCP_SKB_CB" or "tcp_gso_segs" not in s.cb:
        return null_step(
            op,
            s.name,
            msg(
                "__tcp_transmit_skb copies tcp_skb_pcount() and tcp_skb_mss() from TCP_SKB_CB into skb_shinfo, but '{name}''s cb[] holds no tcp_gso_segs: call tcp_set_skb_tso_segs first (tcp_write_xmit does, through tcp_init_tso_segs).",
                name=s.name,
            ),
        )
    b = w.buf(s)
    segs, size = s.cb["tcp_gso_segs"], s.cb.get("tcp_gso_size", 0)
    b.gso_type = ("SKB_GSO_TCPV4",)
    b.gso_segs = segs
    b.gso_size = size
    s.cb_layer, s.cb = None, {}
    shared = (
        msg(
            " skb_shinfo lives at the end of the head buffer, so '{others}' sees the same values: a clone shares them.",
            others=", ".join(
                o.name for o in w.skbs.values() if o is not s and o.buffer == s.buffer
            ),
        )
        if any(o is not s and o.buffer == s.buffer for o in w.skbs.values())
        else ""
    )
    text = msg(
        "__tcp_transmit_skb fills skb_shinfo for the layers below: gso_type = sk->sk_gso_type (SKB_GSO_TCPV4), gso_segs = tcp_skb_pcount() = {segs}, gso_size = tcp_skb_mss() = {size}. From here on this is one {len}-byte GSO packet that stands for {segs} wire segments. Then it clears cb[] (memset for struct inet_skb_parm): TCP's private fields are gone and the IP layer starts from zeros.{shared}",
        segs=segs,
        size=size,
        len=s.len,
        shared=shared,
    )
    return make_step(op, s.name, "ok", text)


def tcp4_gro_complete(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    b = w.buf(s)
    if s.transport_header is None:
        return null_step(
            op,
            s.name,
            msg(
                "tcp4_gro_complete reads tcp_hdr(skb), but transport_header is unset; in the kernel inet_gro_receive has set it (skb_set_transport_header) by now. Set it first."
            ),
        )
    count = max(s.gro_count, 1)
    t0 = b.gso_type
    if "SKB_GSO_TCPV4" not in b.gso_type:
        b.gso_type = (*b.gso_type, "SKB_GSO_TCPV4")
    b.gso_segs = count
    s.ip_summed = CHECKSUM_PARTIAL
    s.csum_start = s.transport_header
    s.csum_offset = TCP_CHECK_OFFSET
    s.gro_count = 0
    text = msg(
        "GRO flushes '{name}': napi_gro_complete → inet_gro_complete → tcp4_gro_complete seeds th->check with the pseudo-header sum and ORs SKB_GSO_TCPV4 into gso_type ({join_t0_or_none} → {join}); tcp_gro_complete sets gso_segs = NAPI_GRO_CB(skb)->count = {count} and makes the checksum CHECKSUM_PARTIAL with csum_start = transport header ({csum_start}) and csum_offset = offsetof(struct tcphdr, check) = 16. gso_size stays {gso_size}: the stack now sees one {len}-byte GSO packet that can be cut back into {gso_size}-byte segments (skb_segment) if it is forwarded.",
        name=s.name,
        join_t0_or_none="|".join(t0) or "none",
        join="|".join(b.gso_type),
        count=count,
        csum_start=s.csum_start,
        gso_size=b.gso_size,
        len=s.len,
    )
    return make_step(op, s.name, "ok", text)


def _segment_frags(
    w: World, frags: list[Frag], i: int, pos: int, lo: int, hi: int, out: list[Frag]
) -> tuple[int, int]:
    """skb_segment's inner loop: reference (skb_frag_ref) the slices of ``frags`` that cover
    payload bytes [lo, hi) into ``out``; frags[i] starts at byte ``pos``. Returns where the
    next segment resumes (i, pos)."""
    while pos < hi and i < len(frags):
        f = frags[i]
        nf = Frag(page=f.page, offset=f.offset, size=f.size)
        w.pages[f.page] += 1
        if pos < lo:
            nf.offset += lo - pos
            nf.size -= lo - pos
        if pos + f.size <= hi:
            i += 1
            pos += f.size
            out.append(nf)
        else:
            nf.size -= pos + f.size - hi
            out.append(nf)
            break
    return i, pos


def gso_pull(s: Skb, thlen: int) -> int | Text:
    """What inet_gso_segment (net/ipv4/af_inet.c) and tcp_gso_segment
    (net/ipv4/tcp_offload.c) pull before skb_segment: data goes to the end of the TCP header,
    transport_header + thlen. Returns the bytes pulled, or why the skb cannot be segmented."""
    if s.network_header is None or s.transport_header is None:
        return msg(
            "inet_gso_segment reads the IPv4 header at network_header and tcp_gso_segment the TCP header at transport_header; one of them is unset, so there is nothing to segment by (skb_reset_network_header / skb_set_transport_header first)."
        )
    end = s.transport_header + thlen
    if not (s.network_header <= s.transport_header and s.data <= end):
        return msg(
            "data ({data}) is already past the end of the TCP header ({end}): the GSO layers would pull the IP and TCP headers to reach the payload, and here they are behind data.",
            data=s.data,
            end=end,
        )
    if end > s.tail:
        return msg(
            "The IP and TCP headers end at {end}, past the linear area (tail {tail}); tcp_gso_segment's pskb_may_pull would have to pull them in first, which is not modelled.",
            end=end,
            tail=s.tail,
        )
    return end - s.data


def skb_segment(w: World, op: Op) -> Step:
    head = w.skbs[op.skb]
    hb = w.buf(head)
    mss = hb.gso_size

    def refuse(why: Text) -> Step:
        return null_step(op, head.name, why)

    if mss == 0:
        return refuse(
            msg(
                "skb_segment cuts an skb into gso_size pieces, but '{name}''s skb_shinfo gso_size is 0: it is not a GSO packet.",
                name=head.name,
            )
        )
    if head.mac_header is None or head.mac_header > head.data:
        return refuse(
            msg(
                "skb_segment copies the headers from skb_mac_header() up to data, so the mac header must be set and in front of data (skb_reset_mac_header)."
            )
        )
    if hb.frag_list:
        return refuse(
            msg("This skb has a frag_list; segmenting frag_list GSO packets is not modelled.")
        )
    pulled = gso_pull(head, op.len if op.len is not None else 32)
    if not isinstance(pulled, int):
        return refuse(pulled)
    head.data += pulled  # inet_gso_segment's __skb_pull(ihl), tcp_gso_segment's (thlen)
    head.len -= pulled
    doffset = head.data - head.mac_header
    headroom = head.mac_header
    d0 = head.data
    head.data = head.mac_header  # __skb_push(head_skb, doffset)
    head.len += doffset
    total = head.len
    headlen = head.len - head.data_len
    nseg = -(-(total - doffset) // mss)
    if len(w.skbs) + nseg > MAX_SKBS:
        head.data, head.len = d0 - pulled, head.len - doffset + pulled
        return refuse(
            msg(
                "{nseg} segments would exceed the {max_skbs_sim} skbs one scenario may show.",
                nseg=nseg,
                max_skbs_sim=MAX_SKBS,
            )
        )
    names: list[str] = []
    offset, pos, i = doffset, headlen, 0
    frags = hb.frags
    while offset < total:
        ln = min(mss, total - offset)
        hsize = max(0, headlen - offset)
        hsize = min(hsize, ln)
        alloc = kmalloc_reserve(hsize + doffset + headroom)
        if alloc is None:  # bounded by the head, which was allocated
            raise RuntimeError("internal: a segment head larger than its original head")
        name = f"{head.name}_s{len(names) + 1}"
        n = new_skb(w, name, alloc, origin="skb_segment")
        nb = w.buf(n)
        copy_header_fields(n, head)
        n.data = headroom
        n.tail = headroom + doffset + hsize
        nb.regions = copy_regions(hb.regions, head.mac_header, d0, 0)
        if hsize:
            write_region(nb, headroom + doffset, n.tail, "data", "payload")
        i, pos = _segment_frags(w, frags, i, pos, offset, offset + ln, nb.frags)
        n.data_len = ln - hsize
        n.len = doffset + hsize + n.data_len
        n.truesize += n.data_len
        names.append(name)
        offset += ln
    shown = join(
        msg(", "),
        (
            msg(
                "{name} (len {len}, {n} frag(s))",
                name=m,
                len=w.skbs[m].len,
                n=len(w.buf(w.skbs[m]).frags),
            )
            for m in names
        ),
    )
    pull_text: Text = (
        msg(
            "First, as on the way down from __skb_gso_segment, inet_gso_segment pulls the IP header and tcp_gso_segment the {thlen}-byte TCP header: data moves {pulled} bytes to the payload. ",
            thlen=op.len if op.len is not None else 32,
            pulled=pulled,
        )
        if pulled
        else ""
    )
    text = pull_text + msg(
        "skb_segment (reached from validate_xmit_skb → skb_gso_segment → tcp_gso_segment when the device cannot do TSO) cuts '{name}' into gso_size = {mss}-byte pieces. It pushes data back to the mac header (doffset = {doffset} header bytes), then for each piece allocates a small head (__alloc_skb(hsize + doffset + headroom {headroom})), copies the {doffset} header bytes into it and points frags at the same pages (skb_frag_ref, no payload copy): {shown}. Each segment's truesize counts its own head plus the paged bytes it references. tcp_gso_segment then rewrites every copy's sequence number and checksum, and the caller consume_skb()s the original.",
        name=head.name,
        mss=mss,
        doffset=doffset,
        headroom=headroom,
        shown=shown,
    )
    return make_step(op, head.name, "ok", text, mark="clone")


def skb_partial_csum_set(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    start, off = op.start or 0, op.offset or 0
    csum_end = start + off + 2
    csum_start = s.data + start
    headlen = s.len - s.data_len
    if csum_start >= U16 or csum_end > headlen:
        return null_step(
            op,
            s.name,
            msg(
                "skb_partial_csum_set({start}, {off}): the 2-byte checksum field would end at {csum_end}, past the {headlen} linear bytes (or csum_start {csum_start} does not fit 16 bits). It prints 'bad partial csum' and returns false; nothing changes.",
                start=start,
                off=off,
                csum_end=csum_end,
                headlen=headlen,
                csum_start=csum_start,
            ),
        )
    s.ip_summed = CHECKSUM_PARTIAL
    s.csum_start = csum_start
    s.csum_offset = off
    s.transport_header = csum_start
    text = msg(
        "skb_partial_csum_set({start}, {off}) asks the device to finish a checksum: ip_summed = CHECKSUM_PARTIAL, csum_start = headroom {data} + {start} = {csum_start} (from head), csum_offset = {off}, and transport_header = csum_start. The device sums from csum_start to the end and stores the result at csum_start + csum_offset = {csum_start_off}.",
        start=start,
        off=off,
        data=s.data,
        csum_start=csum_start,
        csum_start_off=csum_start + off,
    )
    return make_step(op, s.name, "ok", text)


def tcp_v4_send_check(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    if s.transport_header is None:
        return null_step(
            op,
            s.name,
            msg(
                "tcp_v4_send_check uses skb_transport_header(), which is unset here; __tcp_transmit_skb calls skb_reset_transport_header right after pushing the TCP header."
            ),
        )
    s.csum_start = s.transport_header
    s.csum_offset = TCP_CHECK_OFFSET
    state = CHECKSUM_NAMES[s.ip_summed]
    text = msg(
        "tcp_v4_send_check → __tcp_v4_send_check writes the pseudo-header sum into th->check and sets csum_start = transport header − head = {csum_start}, csum_offset = offsetof(struct tcphdr, check) = 16. ip_summed is {state}",
        csum_start=s.csum_start,
        state=state,
    ) + (
        msg(": the NIC (or skb_checksum_help) adds the TCP header and payload to finish it.")
        if s.ip_summed == CHECKSUM_PARTIAL
        else "."
    )
    return make_step(op, s.name, "ok", text)


def igb_rx_checksum(w: World, op: Op) -> Step:
    s = w.skbs[op.skb]
    before = CHECKSUM_NAMES[s.ip_summed]
    s.ip_summed = CHECKSUM_UNNECESSARY
    text = msg(
        "igb_rx_checksum: the descriptor says the NIC verified the TCP/UDP checksum (E1000_RXD_STAT_TCPCS), so ip_summed {before} → CHECKSUM_UNNECESSARY and the stack will not sum the payload again. On a checksum error bit it would leave CHECKSUM_NONE and let the stack verify (and drop with SKB_DROP_REASON_TCP_CSUM).",
        before=before,
    )
    return make_step(op, s.name, "ok", text)
