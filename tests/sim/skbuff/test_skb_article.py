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
