"""The rest of the sk_buff article (seed sections 3-5): header offsets, cb[], GSO, checksum
fields and drop reasons, each against the Linux 6.4 function named in the docstring."""

from __future__ import annotations

from typing import Any

from skbhelp import skb, trace_of

A1500 = {"op": "alloc_skb", "size": 1500}


def frag(size: int, **kw: Any) -> dict[str, Any]:
    return {"op": "skb_add_rx_frag", "size": size, **kw}


# ---- header offsets -------------------------------------------------------------------------
def test_new_skb_header_offsets() -> None:
    """__finalize_skb_around: mac_header and transport_header unset (~0), network_header 0."""
    s = skb(trace_of(A1500))
    assert (s["mac_header"], s["network_header"], s["transport_header"]) == (None, 0, None)


def test_reset_and_set_headers_follow_data() -> None:
    """skb_reset_*_header store data - head; skb_set_*_header add a (signed) offset; the
    offsets stay put while skb_pull moves data (eth_type_trans / ip_rcv_core order)."""
    t = trace_of(
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 66},
        {"op": "skb_reset_mac_header"},
        {"op": "skb_pull", "len": 14},
        {"op": "skb_reset_network_header"},
        {"op": "skb_set_transport_header", "offset": 20},
        {"op": "skb_set_mac_header", "skb": "skb", "offset": -14},
    )
    s = skb(t)
    assert (s["mac_header"], s["network_header"], s["transport_header"]) == (64, 78, 98)
    assert s["data"] == 78


def test_pskb_expand_head_shifts_header_offsets() -> None:
    """pskb_expand_head → skb_headers_offset_update: set header offsets move by nhead."""
    t = trace_of(
        A1500,
        {"op": "skb_put", "len": 40},
        {"op": "skb_reset_transport_header"},
        {"op": "pskb_expand_head", "nhead": 64},
    )
    s = skb(t)
    assert (s["transport_header"], s["network_header"], s["mac_header"]) == (64, 64, None)


def test_clone_copies_header_offsets() -> None:
    """__skb_clone → __copy_skb_header copies mac/network/transport offsets."""
    t = trace_of(A1500, {"op": "skb_reset_mac_header"}, {"op": "skb_clone", "skb": "c"})
    assert skb(t, "c")["mac_header"] == 0


def test_pskb_may_pull_pulls_only_what_is_asked() -> None:
    """pskb_may_pull: true at once if len <= headlen; false if len > skb->len; otherwise
    __pskb_pull_tail(len - headlen) copies that many paged bytes into the head."""
    base = [
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 14},
        frag(1000),
        frag(500),
    ]
    t = trace_of(*base, {"op": "pskb_may_pull", "len": 54})
    s = skb(t)
    assert (s["tail"], s["data_len"], s["nr_frags"], s["len"]) == (64 + 54, 1460, 2, 1514)
    assert (s["frags"][0]["offset"], s["frags"][0]["size"]) == (40, 960)
    t2 = trace_of(*base, {"op": "pskb_may_pull", "len": 1100})
    s2 = skb(t2)  # the whole first frag and 86 bytes of the second
    assert (s2["nr_frags"], s2["frags"][0]["size"], s2["data_len"]) == (1, 414, 414)
    assert t2.frames[-1].state["pages"]["page1"]["refs"] == 0
    t3 = trace_of(*base, {"op": "pskb_may_pull", "len": 1515})
    assert t3.frames[-1].result == "null" and skb(t3)["data_len"] == 1500
    t4 = trace_of(*base, {"op": "pskb_may_pull", "len": 14})
    assert t4.frames[-1].state["changed"] == []


# ---- cb[48] ---------------------------------------------------------------------------------
def rx_to_ip() -> list[dict[str, Any]]:
    return [
        {"op": "napi_alloc_skb", "len": 256},
        {"op": "skb_put", "len": 66},
        frag(1448),
        {"op": "skb_pull", "len": 14},
        {"op": "skb_reset_network_header"},
    ]


def test_ip_rcv_core_sets_transport_header_and_ipcb() -> None:
    """ip_rcv_core: pskb_may_pull(ihl*4), transport_header = network_header + ihl*4,
    memset(IPCB) and IPCB(skb)->iif = skb->skb_iif."""
    t = trace_of(*rx_to_ip(), {"op": "ip_rcv_core"})
    s = skb(t)
    assert (s["network_header"], s["transport_header"], s["data"]) == (78, 98, 78)
    assert s["cb"]["layer"] == "IPCB" and s["cb"]["fields"]["iif"] == 2


def test_tcp_v4_fill_cb_moves_ipcb_and_computes_end_seq() -> None:
    """tcp_v4_fill_cb: IPCB moves to header.h4; end_seq = seq + syn + fin + len - doff*4."""
    t = trace_of(
        *rx_to_ip(),
        {"op": "ip_rcv_core"},
        {"op": "skb_pull", "len": 20},
        {"op": "tcp_v4_fill_cb", "seq": 4294967000, "flags": "ack|fin"},
    )
    cb = skb(t)["cb"]
    assert cb["layer"] == "TCP_SKB_CB" and cb["fields"]["header.h4.iif"] == 2
    # len 1480 at the TCP header: 1448 payload + FIN, wrapping modulo 2^32
    assert cb["fields"]["end_seq"] == (4294967000 + 1 + 1448) % 2**32
    assert cb["fields"]["tcp_flags"] == 0x11 and cb["fields"]["sacked"] == 0


def test_tcp_skb_entail_then_copy_advances_end_seq() -> None:
    """tcp_skb_entail: seq = end_seq = write_seq, tcp_flags ACK; tcp_sendmsg_locked adds each
    copy to end_seq; skb_clone copies cb[] (__copy_skb_header)."""
    t = trace_of(
        {"op": "tcp_stream_alloc_skb", "size": 0},
        {"op": "tcp_skb_entail", "seq": 1000},
        {"op": "skb_fill_page_desc", "size": 1448},
        {"op": "skb_clone", "skb": "c"},
    )
    o, c = skb(t, "skb"), skb(t, "c")
    assert o["cb"]["fields"] == {"seq": 1000, "end_seq": 2448, "tcp_flags": 0x10, "sacked": 0}
    assert c["cb"] == o["cb"] and o["dataref_nohdr"] == 1


def test_tcp_flags_and_seq_are_validated() -> None:
    """Params: flags are TCP flag names, seq is a u32."""
    import pytest

    from app.sim.core import ParamError
    from app.sim.skbuff import parse

    with pytest.raises(ParamError) as exc:
        parse(
            {
                "ops": [
                    A1500,
                    {"op": "tcp_v4_fill_cb", "seq": 2**32, "flags": "ACK|BOGUS"},
                ]
            }
        )
    assert {i.loc for i in exc.value.issues} == {("ops", 1, "seq"), ("ops", 1, "flags")}


# ---- GSO and checksum offload ---------------------------------------------------------------
def gro_pair() -> list[dict[str, Any]]:
    """Two legacy-rx igb segments merged by skb_gro_receive, headers set as inet_gro_receive does."""
    out: list[dict[str, Any]] = []
    for name, off in (("skb", 66), ("seg2", 2048 + 66)):
        out += [
            {"op": "napi_alloc_skb", "skb": name, "len": 256},
            {"op": "skb_put", "skb": name, "len": 66},
            frag(1448, skb=name, offset=off),
            {"op": "skb_reset_mac_header", "skb": name},
            {"op": "skb_pull", "skb": name, "len": 14},
            {"op": "skb_reset_network_header", "skb": name},
            {"op": "skb_set_transport_header", "skb": name, "offset": 20},
        ]
    return [*out, {"op": "skb_gro_receive", "from": "seg2", "offset": 52}]


def test_tcp_set_skb_tso_segs() -> None:
    """tcp_set_skb_tso_segs: pcount = DIV_ROUND_UP(len, mss) and tcp_gso_size = mss when
    len > mss; one segment and tcp_gso_size 0 otherwise."""
    base = [{"op": "tcp_stream_alloc_skb", "size": 0}, {"op": "skb_fill_page_desc", "size": 4000}]
    cb = skb(trace_of(*base, {"op": "tcp_set_skb_tso_segs", "mss": 1448}))["cb"]["fields"]
    assert (cb["tcp_gso_segs"], cb["tcp_gso_size"]) == (3, 1448)
    cb = skb(trace_of(*base, {"op": "tcp_set_skb_tso_segs", "mss": 4000}))["cb"]["fields"]
    assert (cb["tcp_gso_segs"], cb["tcp_gso_size"]) == (1, 0)


def test_tcp4_gro_complete_makes_a_gso_packet() -> None:
    """dev_gro_receive sets gso_size = skb_gro_len of the held skb; tcp4_gro_complete adds
    SKB_GSO_TCPV4, gso_segs = NAPI_GRO_CB(skb)->count and CHECKSUM_PARTIAL at the TCP check."""
    t = trace_of(*gro_pair(), {"op": "tcp4_gro_complete"})
    s = skb(t)
    assert (s["gso_size"], s["gso_segs"], s["gso_type"]) == (1448, 2, ["SKB_GSO_TCPV4"])
    assert (s["ip_summed"], s["csum_start"], s["csum_offset"]) == ("CHECKSUM_PARTIAL", 98, 16)


def test_skb_segment_shares_pages_and_copies_headers() -> None:
    """skb_segment: doffset = data - mac_header header bytes are copied into a new head per
    gso_size piece; payload frags are shared (skb_frag_ref); truesize += data_len."""
    t = trace_of(
        *gro_pair(),
        {"op": "tcp4_gro_complete"},
        {"op": "skb_pull", "len": 52},  # inet_gso_segment / tcp_gso_segment pull IP and TCP
        {"op": "skb_segment"},
    )
    last = t.frames[-1]
    assert last.result == "ok"
    s1, s2 = skb(t, "skb_s1"), skb(t, "skb_s2")
    for seg in (s1, s2):
        # __alloc_skb(0 + 66 + 64): SKB_HEAD_ALIGN(130) = 192 + 320 → small head, end 320
        assert (seg["len"], seg["data_len"], seg["headroom"], seg["end"]) == (1514, 1448, 64, 320)
        assert seg["truesize"] == 896 + 1448 and seg["nr_frags"] == 1
        assert seg["ip_summed"] == "CHECKSUM_PARTIAL" and seg["gso_size"] == 0
    assert last.state["pages"]["page1"]["refs"] == 2 and last.state["pages"]["page2"]["refs"] == 2
    assert skb(t, "skb")["data"] == 64  # pushed back to the mac header


def test_skb_segment_needs_gso() -> None:
    """skb_segment on a non-GSO skb (gso_size 0) does nothing."""
    t = trace_of(A1500, {"op": "skb_reset_mac_header"}, {"op": "skb_segment"})
    assert t.frames[-1].result == "null"


def test_skb_partial_csum_set() -> None:
    """skb_partial_csum_set: CHECKSUM_PARTIAL, csum_start = headroom + start, csum_offset = off,
    transport_header = csum_start; refused when start + off + 2 > headlen."""
    base = [A1500, {"op": "skb_reserve", "len": 64}, {"op": "skb_put", "len": 60}]
    s = skb(trace_of(*base, {"op": "skb_partial_csum_set", "start": 20, "offset": 16}))
    assert (s["ip_summed"], s["csum_start"], s["csum_offset"], s["transport_header"]) == (
        "CHECKSUM_PARTIAL",
        84,
        16,
        84,
    )
    t = trace_of(*base, {"op": "skb_partial_csum_set", "start": 50, "offset": 16})
    assert t.frames[-1].result == "null" and skb(t)["ip_summed"] == "CHECKSUM_NONE"


def test_tx_checksum_path() -> None:
    """tcp_stream_alloc_skb sets CHECKSUM_PARTIAL; __tcp_v4_send_check points csum_start at the
    transport header and csum_offset at tcphdr.check (16); pskb_expand_head shifts csum_start."""
    t = trace_of(
        {"op": "tcp_stream_alloc_skb", "size": 0},
        {"op": "skb_push", "len": 32},
        {"op": "skb_reset_transport_header"},
        {"op": "tcp_v4_send_check"},
        {"op": "pskb_expand_head", "nhead": 64},
    )
    s = skb(t)
    assert (s["ip_summed"], s["csum_start"], s["csum_offset"]) == ("CHECKSUM_PARTIAL", 352, 16)


def test_igb_rx_checksum_unnecessary() -> None:
    """igb_rx_checksum: a NIC-verified TCP checksum → CHECKSUM_UNNECESSARY (from NONE)."""
    t = trace_of({"op": "napi_build_skb", "size": 2048}, {"op": "igb_rx_checksum"})
    assert skb(t)["ip_summed"] == "CHECKSUM_UNNECESSARY"
    assert skb(trace_of({"op": "napi_build_skb", "size": 2048}))["ip_summed"] == "CHECKSUM_NONE"


# ---- kfree_skb vs consume_skb ---------------------------------------------------------------
def test_kfree_skb_reason_is_recorded() -> None:
    """kfree_skb_reason(skb, SKB_DROP_REASON_NO_SOCKET): skb:kfree_skb carries the reason
    (enum value 3 in 6.4's dropreason-core.h: NOT_DROPPED_YET 0, CONSUMED 1, NOT_SPECIFIED 2)."""
    t = trace_of(A1500, {"op": "kfree_skb", "reason": "SKB_DROP_REASON_NO_SOCKET"})
    s = skb(t)
    assert (s["status"], s["drop_reason"]) == ("dropped", "NO_SOCKET")
    assert "NO_SOCKET = 3" in str(t.frames[-1].narration)
    plain = trace_of(A1500, {"op": "kfree_skb"})
    assert skb(plain)["drop_reason"] == "NOT_SPECIFIED"


def test_kfree_skb_reason_consumed_is_a_consume() -> None:
    """__kfree_skb_reason: reason SKB_CONSUMED fires trace_consume_skb, not trace_kfree_skb."""
    t = trace_of(A1500, {"op": "kfree_skb", "reason": "SKB_CONSUMED"})
    s = skb(t)
    assert (s["status"], s["drop_reason"]) == ("consumed", None)


def test_no_tracepoint_while_other_users_remain() -> None:
    """kfree_skb_reason / consume_skb: skb_unref() comes first, so a non-final reference
    neither frees nor fires a tracepoint (and records no reason)."""
    t = trace_of(A1500, {"op": "skb_get"}, {"op": "kfree_skb", "reason": "TCP_CSUM"})
    s = skb(t)
    assert (s["status"], s["users"], s["drop_reason"]) == ("live", 1, None)
    assert "no tracepoint" in str(t.frames[-1].narration) and t.frames[-1].mark is None
    t2 = trace_of(A1500, {"op": "skb_get"}, {"op": "consume_skb"})
    assert skb(t2)["status"] == "live" and t2.frames[-1].mark is None


def test_unknown_drop_reason_refused() -> None:
    """Only Linux 6.4 drop reasons are accepted (loc points at "reason")."""
    import pytest

    from app.sim.core import ParamError
    from app.sim.skbuff import parse

    with pytest.raises(ParamError) as exc:
        parse({"ops": [A1500, {"op": "kfree_skb", "reason": "TOO_TIRED"}]})
    assert exc.value.issues[0].loc == ("ops", 1, "reason")


def test_skb_segment_pulls_ip_and_tcp_headers_as_tcp_gso_segment() -> None:
    """inet_gso_segment / tcp_gso_segment pull the IP and TCP headers before skb_segment: a GRO
    packet left at its IP header is cut into 2 × 1514 (doffset 66), not 1462-byte pieces and a
    stray header-only segment."""
    t = trace_of(*gro_pair(), {"op": "tcp4_gro_complete"}, {"op": "skb_segment"})
    assert t.frames[-1].result == "ok"
    assert "tcp_gso_segment" in t.frames[-1].narration.render()
    segs = [s["name"] for s in t.frames[-1].state["skbs"] if s["name"].startswith("skb_s")]
    assert len(segs) == 2
    for name in segs:
        assert skb(t, name)["len"] == 1514


def test_skb_segment_refuses_without_transport_header() -> None:
    """tcp_gso_segment reads the TCP header at transport_header: without one it is refused."""
    ops = [o for o in gro_pair() if o["op"] != "skb_set_transport_header"]
    ops = [o for o in ops if o["op"] != "skb_gro_receive"]
    t = trace_of(
        *ops,
        {"op": "skb_gro_receive", "from": "seg2", "offset": 52},
        {"op": "tcp4_gro_complete"},
        {"op": "skb_segment"},
    )
    assert t.frames[-1].result == "null"
    assert "transport_header" in t.frames[-1].narration.render()
