"""Behaviour of the packet-path walks against Linux 6.4 (facts sheet §2 and §5)."""

from __future__ import annotations

from typing import Any

import pytest

from app.sim.path import EXPLAINER as E
from app.sim.path.engine import PathState
from app.sim.path.skb import BUILD_SKB_END, IGB_SKB_PAD


def run(**raw: Any) -> list[PathState]:
    base: dict[str, Any] = {"path": "rx", "device": "nic", "packets": 1, "payload_bytes": 1000}
    base.update(raw)
    return [f.state for f in E.run(E.parse(base)).frames]


def names(states: list[PathState]) -> list[str]:
    return [s["function"] for s in states]


def first(states: list[PathState], fn: str) -> PathState:
    return next(s for s in states if s["function"] == fn)


def last(states: list[PathState], fn: str) -> PathState:
    return [s for s in states if s["function"] == fn][-1]


def in_order(seq: list[str], wanted: list[str]) -> bool:
    it = iter(seq)
    return all(any(x == w for x in it) for w in wanted)


def skb(st: PathState) -> dict[str, Any]:
    assert st["skb"] is not None
    return dict(st["skb"])


# -- RX on a NIC -------------------------------------------------------------------------------
def test_rx_nic_chain_order() -> None:
    """RX follows §2.1: IRQ → napi_schedule → net_rx_action → igb_poll → build → GRO → IP → TCP."""
    seq = names(run())
    assert in_order(
        seq,
        [
            "igb_msix_ring",
            "napi_schedule_prep",
            "____napi_schedule",
            "net_rx_action",
            "__napi_poll",
            "igb_poll",
            "igb_clean_rx_irq",
            "napi_build_skb",
            "eth_type_trans",
            "napi_gro_receive",
            "dev_gro_receive",
            "inet_gro_receive",
            "tcp4_gro_receive",
            "tcp_gro_receive",
            "gro_normal_one",
            "napi_complete_done",
            "gro_normal_list",
            "__netif_receive_skb_core",
            "ip_list_rcv",
            "ip_rcv_core",
            "NF_HOOK_LIST",
            "ip_rcv_finish_core",
            "ip_local_deliver",
            "ip_local_deliver_finish",
            "tcp_v4_rcv",
            "tcp_v4_do_rcv",
            "tcp_rcv_established",
            "tcp_queue_rcv",
            "tcp_data_ready",
            "sock_def_readable",
            "igb_ring_irq_enable",
            "tcp_recvmsg_locked",
        ],
    )


def test_rx_contexts_and_hooks() -> None:
    """The IRQ handler runs in hardirq, the stack work in softirq, the reader in process."""
    st = run()
    assert first(st, "igb_msix_ring")["context"] == "hardirq"
    assert first(st, "tcp_v4_rcv")["context"] == "softirq"
    assert first(st, "tcp_recvmsg_locked")["context"] == "process"
    hooks = [s["hook"] for s in st if s["hook"]]
    assert hooks == ["PRE_ROUTING", "LOCAL_IN"]


def test_rx_data_pointer_positions() -> None:
    """skb->data: Ethernet in the driver, IP after eth_type_trans, TCP after
    ip_local_deliver_finish, payload after the fast path's __skb_pull (§2.1 table)."""
    st = run(payload_bytes=1000)
    built = skb(st[names(st).index("igb_process_skb_fields")])
    assert built["data"] == IGB_SKB_PAD == built["mac_header"]
    assert built["len"] == 14 + 20 + 32 + 1000
    assert built["end"] == BUILD_SKB_END and built["truesize"] == 2304
    eth = skb(first(st, "eth_type_trans"))
    assert eth["data"] == IGB_SKB_PAD + 14 and eth["len"] == 1052
    assert skb(first(st, "__netif_receive_skb_core"))["network_header"] == IGB_SKB_PAD + 14
    ldf = skb(first(st, "ip_local_deliver_finish"))
    assert ldf["data"] == IGB_SKB_PAD + 34 == ldf["transport_header"]
    q = skb(first(st, "tcp_queue_rcv"))
    assert q["data"] == IGB_SKB_PAD + 66 and q["len"] == 1000


def test_rx_slow_path_pulls_in_tcp_data_queue() -> None:
    """Without header prediction, tcp_data_queue does the __skb_pull of doff*4 (tcp_input.c)."""
    st = run(fast_path=False)
    assert "tcp_data_queue" in names(st)
    assert skb(first(st, "tcp_data_queue"))["data"] == IGB_SKB_PAD + 66
    assert skb(first(st, "tcp_rcv_established"))["data"] == IGB_SKB_PAD + 34


def test_legacy_rx_puts_payload_in_a_frag() -> None:
    """legacy-rx: napi_alloc_skb(256) holds the 66 header bytes, the payload is frags[0]."""
    st = run(rx_mode="legacy", payload_bytes=1448)
    s = skb(st[names(st).index("igb_process_skb_fields")])
    assert s["data"] == 64 and s["nr_frags"] == 1
    assert s["len"] == 66 + 1448 and s["data_len"] == 1448
    assert skb(first(st, "tcp_queue_rcv"))["len"] == 1448


# -- GRO and NAPI --------------------------------------------------------------------------------
def test_gro_merges_contiguous_segments_into_frags() -> None:
    """10 contiguous segments, PSH on the last: one skb with 9 frags (skb_gro_receive, frags[])."""
    st = run(scenario="gro_burst", packets=10, payload_bytes=1448)
    assert "skb_gro_receive_list" not in names(st)
    delivered = [skb(s) for s in st if s["function"] == "tcp_queue_rcv"]
    assert len(delivered) == 1
    d = delivered[0]
    assert d["nr_frags"] == 9 and d["gso_segs"] == 10 and d["gso_size"] == 1448
    assert d["len"] == 10 * 1448
    assert d["truesize"] == 2304 + 9 * 2048


def test_gro_psh_every_segment_disables_merging() -> None:
    """PSH on every segment forces a flush each time: no merge, one skb per segment."""
    st = run(scenario="gro_burst", packets=6, payload_bytes=1448, psh="every")
    assert "skb_gro_receive" not in names(st)
    assert names(st).count("tcp_queue_rcv") == 6


def test_gro_frag_list_after_17_frags() -> None:
    """Past MAX_SKB_FRAGS the 19th segment is chained on frag_list (gro.c merge:)."""
    st = run(scenario="gro_burst", packets=20, payload_bytes=1448)
    d = skb(first(st, "tcp_queue_rcv"))
    assert d["nr_frags"] == 17 and d["frag_list"] == 1 and d["gso_segs"] == 20
    assert d["len"] == 20 * 1448


def test_gro_merge_after_the_frag_list_adds_to_the_last_skb() -> None:
    """skb_gro_receive adds frags to NAPI_GRO_CB(p)->last (gro.c: pinfo = skb_shinfo(lp)):
    once a segment is chained on frag_list, the next merge names that chained skb, not the
    held skb, whose frags[] stays at MAX_SKB_FRAGS (17)."""
    frames = E.run(
        E.parse(
            {
                "path": "rx",
                "device": "nic",
                "packets": 20,
                "payload_bytes": 1448,
                "scenario": "gro_burst",
                "psh": "last",
            }
        )
    ).frames
    merges = [f for f in frames if f.state["function"] == "skb_gro_receive"]
    chained = next(i for i, f in enumerate(merges) if f.state["skb"]["frag_list"] == 1)  # type: ignore[index]
    after = merges[chained + 1]
    assert after.narration.params["last"] == "rx19" and after.narration.params["n"] == 1
    assert after.state["skb"]["nr_frags"] == 17  # type: ignore[index]
    assert after.narration.params["segs"] == 20


def test_gro_64k_limit_flushes() -> None:
    """p->len + len >= 65536 returns -E2BIG: at 1448-byte segments a GRO skb holds 45."""
    st = run(scenario="gro_burst", packets=60, payload_bytes=1448, psh="none")
    segs = [skb(s)["gso_segs"] for s in st if s["function"] == "tcp_queue_rcv"]
    assert segs[0] == 45 and sum(segs) == 60


def test_gro_bucket_holds_at_most_eight_flows() -> None:
    """A 9th flow in one bucket completes the oldest held packet (gro_flush_oldest)."""
    st = run(scenario="gro_burst", packets=9, flows=9, same_bucket=True, psh="none")
    assert names(st).count("gro_flush_oldest") == 1
    spread = run(scenario="gro_burst", packets=9, flows=9, psh="none")
    assert "gro_flush_oldest" not in names(spread)


def test_gro_normal_batch_delivers_at_eight_segments() -> None:
    """rx_count counts segments; at gro_normal_batch 8 the list goes up before the poll ends."""
    st = run(scenario="gro_burst", packets=8, flows=8, psh="every")
    i = names(st).index("gro_normal_list")
    assert i < names(st).index("napi_complete_done")
    napi = first(st, "gro_normal_list")["napi"]
    assert napi is not None and napi["rx_count"] == 0


def test_end_of_poll_flushes_held_packets() -> None:
    """napi_complete_done completes everything GRO holds (gro_flush_timeout 0)."""
    st = run(scenario="gro_burst", packets=3, psh="none")
    i = names(st).index("napi_complete_done")
    assert names(st)[i + 1] == "napi_gro_flush"
    assert skb(first(st, "tcp_queue_rcv"))["gso_segs"] == 3


def test_napi_budget_accounting() -> None:
    """Weight 64 per poll, budget 300 per net_rx_action: 320 frames take five full polls,
    overshoot to -20, count a time_squeeze, and a second run completes NAPI (dev.c:6661)."""
    st = run(scenario="gro_burst", packets=320, payload_bytes=1448)
    works = [s["napi"]["work"] for s in st if s["function"] == "igb_poll" and s["napi"]]
    assert max(works) == 64
    squeeze = [s for s in st if s.get("counters", {}).get("time_squeeze")]
    assert squeeze and squeeze[0]["napi"] is not None
    assert names(st).count("net_rx_action") >= 2
    enable = first(st, "igb_ring_irq_enable")
    assert enable["napi"] is not None and enable["napi"]["irq_enabled"]
    assert names(st).index("igb_ring_irq_enable") > names(st).index("__do_softirq")
    assert (
        E.run(E.parse({"path": "rx", "scenario": "gro_burst", "packets": 320})).summary[
            "time_squeeze"
        ]
        == 1
    )


def test_interrupt_stays_off_while_polling() -> None:
    """The IRQ is masked from napi_schedule until igb_ring_irq_enable."""
    st = run(scenario="gro_burst", packets=100)
    polls = [s for s in st if s["function"] == "igb_clean_rx_irq"]
    assert all(s["napi"] is not None and not s["napi"]["irq_enabled"] for s in polls)


# -- TX ------------------------------------------------------------------------------------------
def test_tx_nic_chain_and_pushes() -> None:
    """TX follows §2.3; headers are pushed into the 320-byte headroom: 32 TCP, 20 IP, 14 eth."""
    st = run(path="tx")
    assert in_order(
        names(st),
        [
            "tcp_sendmsg",
            "tcp_sendmsg_locked",
            "tcp_stream_alloc_skb",
            "tcp_skb_entail",
            "tcp_write_xmit",
            "__tcp_transmit_skb",
            "__ip_queue_xmit",
            "__ip_local_out",
            "nf_hook",
            "ip_output",
            "NF_HOOK_COND",
            "ip_finish_output2",
            "neigh_hh_output",
            "__dev_queue_xmit",
            "__dev_xmit_skb",
            "sch_direct_xmit",
            "dev_hard_start_xmit",
            "igb_xmit_frame",
            "igb_tx_map",
        ],
    )
    assert skb(first(st, "tcp_stream_alloc_skb"))["data"] == 320
    assert skb(first(st, "__ip_queue_xmit"))["data"] == 320 - 52
    hh = skb(first(st, "neigh_hh_output"))
    assert hh["data"] == 320 - 66 and hh["len"] == 1066
    assert skb(first(st, "__dev_queue_xmit"))["mac_header"] == 320 - 66
    assert hh["dataref"] == 2
    assert [s["hook"] for s in st if s["hook"]] == ["LOCAL_OUT", "POST_ROUTING"]


def test_tso_is_one_large_skb() -> None:
    """A 10000-byte write goes down as one skb with gso_segs 7; igb_tso splits it."""
    st = run(path="tx", payload_bytes=10000)
    s = skb(first(st, "igb_tx_map"))
    assert s["gso_segs"] == 7 and s["gso_size"] == 1448 and s["len"] == 10066
    assert "igb_tso" in names(st)


def test_arp_on_first_use_queues_then_sends_from_softirq() -> None:
    """NUD_NONE: the skb waits in arp_queue; __neigh_update sends it from the ARP reply."""
    st = run(path="tx", neigh="arp", packets=2)
    seq = names(st)
    assert in_order(
        seq,
        [
            "neigh_resolve_output",
            "__neigh_event_send",
            "arp_solicit",
            "arp_rcv",
            "__neigh_update",
            "eth_header",
            "igb_xmit_frame",
            "neigh_hh_output",
        ],
    )
    assert first(st, "eth_header")["context"] == "softirq"


def test_qdisc_enqueue_when_busy() -> None:
    """A non-empty pfifo_fast is not bypassed: enqueue, __qdisc_run, dequeue."""
    st = run(path="tx", qdisc_queued=3)
    assert in_order(names(st), ["pfifo_fast_enqueue", "__qdisc_run", "pfifo_fast_dequeue"])
    assert "pfifo_fast_enqueue" not in names(run(path="tx"))


# -- loopback, veth ------------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["loopback", "veth"])
def test_local_run_to_completion(device: str) -> None:
    """Loopback and veth: enqueue_to_backlog, then the softirq runs on the sender's stack
    through process_backlog into ip_rcv and TCP, before write() returns (§2.2)."""
    st = run(path="tx", device=device)
    xmit = "veth_xmit" if device == "veth" else "loopback_xmit"
    seq = names(st)
    assert in_order(
        seq,
        [
            "tcp_sendmsg",
            "ip_finish_output2",
            "__dev_queue_xmit",
            xmit,
            "eth_type_trans",
            "enqueue_to_backlog",
            "__local_bh_enable_ip",
            "net_rx_action",
            "process_backlog",
            "__netif_receive_skb",
            "ip_rcv",
            "ip_local_deliver",
            "tcp_v4_rcv",
            "tcp_rcv_established",
            "sock_def_readable",
        ],
    )
    assert "igb_poll" not in seq and "napi_gro_receive" not in seq
    tcp = first(st, "tcp_v4_rcv")
    assert tcp["stack"][0] == "tcp_sendmsg" and tcp["context"] == "softirq"
    assert skb(first(st, "eth_type_trans"))["data"] == 320 - 52


def test_veth_crosses_namespaces() -> None:
    """The frames before veth's eth_type_trans are in ns1, the receive side in ns2."""
    st = run(path="tx", device="veth")
    assert first(st, "tcp_sendmsg")["ns"] == "ns1"
    assert first(st, "tcp_v4_rcv")["ns"] == "ns2"


def test_backlog_full_drop() -> None:
    """qlen > netdev_max_backlog (1000) drops with SKB_DROP_REASON_CPU_BACKLOG."""
    st = run(path="tx", device="loopback", drop="backlog_full")
    assert [s["drop_reason"] for s in st if s["drop_reason"]] == ["CPU_BACKLOG"]
    assert "process_backlog" not in names(st)


# -- forwarding and drops -----------------------------------------------------------------------
def test_forward_hooks_and_ttl() -> None:
    """Forwarding passes PRE_ROUTING, FORWARD, POST_ROUTING and decrements TTL (ip_forward.c)."""
    st = run(path="forward")
    assert [s["hook"] for s in st if s["hook"]] == ["PRE_ROUTING", "FORWARD", "POST_ROUTING"]
    assert in_order(
        names(st),
        [
            "ip_forward",
            "ip_decrease_ttl",
            "ip_forward_finish",
            "ip_output",
            "neigh_hh_output",
            "igb_xmit_frame",
        ],
    )
    assert "tcp_v4_rcv" not in names(st)
    assert skb(first(st, "neigh_hh_output"))["data"] == IGB_SKB_PAD


@pytest.mark.parametrize(
    ("raw", "reason", "where"),
    [
        ({"drop": "netfilter", "hook": "LOCAL_IN"}, "NETFILTER_DROP", "nf_hook_slow"),
        ({"drop": "netfilter", "hook": "PRE_ROUTING"}, "NETFILTER_DROP", "nf_hook_slow"),
        ({"drop": "no_socket"}, "NO_SOCKET", "tcp_v4_send_reset"),
        ({"drop": "checksum"}, "IP_CSUM", "ip_rcv_core"),
        ({"path": "forward", "drop": "no_route"}, "IP_INNOROUTES", "ip_error"),
        ({"path": "forward", "drop": "ttl"}, "IP_INHDR", "icmp_send"),
        (
            {"path": "tx", "drop": "netfilter", "hook": "POST_ROUTING"},
            "NETFILTER_DROP",
            "nf_hook_slow",
        ),
    ],
)
def test_drops_with_reasons(raw: dict[str, Any], reason: str, where: str) -> None:
    """Each drop ends in kfree_skb_reason with the 6.4 drop reason, after the deciding function."""
    st = run(**raw)
    drops = [s for s in st if s["drop_reason"]]
    assert [s["drop_reason"] for s in drops] == [reason]
    assert drops[0]["function"] == "kfree_skb_reason"
    assert names(st).index(where) < names(st).index("kfree_skb_reason")
    assert "tcp_queue_rcv" not in names(st)


def test_netfilter_drop_stops_before_okfn() -> None:
    """A DROP at LOCAL_IN means ip_local_deliver_finish never runs."""
    st = run(drop="netfilter", hook="LOCAL_IN")
    assert "ip_local_deliver_finish" not in names(st)
    assert first(st, "nf_hook_slow")["hook"] == "LOCAL_IN"


# -- container and VXLAN ------------------------------------------------------------------------
def test_container_bridge_nat_path() -> None:
    """veth → bridge (br_netfilter PRE_ROUTING) → up to docker0 → forward → NAT → eth0."""
    st = run(path="tx", device="veth", scenario="bridge_nat")
    assert in_order(
        names(st),
        [
            "tcp_sendmsg",
            "veth_xmit",
            "enqueue_to_backlog",
            "process_backlog",
            "br_handle_frame",
            "br_nf_pre_routing",
            "br_handle_frame_finish",
            "br_pass_frame_up",
            "ip_rcv",
            "ip_forward",
            "nf_nat_ipv4_out",
            "nf_nat_ipv4_manip_pkt",
            "neigh_hh_output",
            "igb_xmit_frame",
        ],
    )
    assert first(st, "tcp_sendmsg")["ns"] == "container"
    assert first(st, "igb_xmit_frame")["ns"] == "host"
    assert skb(first(st, "igb_tx_map"))["data"] == 320 - 66


def test_vxlan_pushes_outer_headers_into_headroom() -> None:
    """VXLAN adds 8 + 8 + 20 + 14 = 50 bytes in front of the inner frame, no reallocation."""
    st = run(path="tx", scenario="vxlan")
    inner = skb(first(st, "vxlan_xmit"))
    out = skb(first(st, "igb_tx_map"))
    assert inner["data"] == 320 - 66
    assert out["data"] == inner["data"] - 50 and out["len"] == inner["len"] + 50
    assert out["end"] == inner["end"]
    assert out["network_header"] == inner["data"] - 36
    assert out["transport_header"] == inner["data"] - 16


def test_gro_short_segment_flushes_after_merging() -> None:
    """A segment shorter than gso_size is merged, then forces a flush (flush = len < mss)."""
    st = run(scenario="gro_burst", packets=4, psh="none", payload_bytes=1448, last_bytes=500)
    d = skb(first(st, "tcp_queue_rcv"))
    assert d["gso_segs"] == 4 and d["len"] == 3 * 1448 + 500
    # completed by the short segment, not by the end-of-poll napi_gro_flush
    assert names(st).index("napi_gro_complete") < names(st).index("napi_complete_done")
    assert "napi_gro_flush" not in names(st)


def test_gro_longer_segment_is_not_merged() -> None:
    """A segment longer than the held gso_size is not merged: (len - 1) >= mss sets flush."""
    st = run(scenario="gro_burst", packets=3, psh="none", payload_bytes=1000, last_bytes=1448)
    segs = [skb(s)["gso_segs"] for s in st if s["function"] == "tcp_queue_rcv"]
    assert segs == [2, 0]  # a packet GRO did not aggregate keeps gso_segs 0
    assert names(st).count("skb_gro_receive") == 1


def test_no_socket_route_is_local() -> None:
    """With no socket, early demux fails and the route lookup finds the local route."""
    st = run(drop="no_socket")
    assert "tcp_v4_early_demux" not in names(st)
    assert "ip_route_input_noref" in names(st)


def test_software_gso_without_tso() -> None:
    """TSO off: validate_xmit_skb → skb_gso_segment → skb_segment makes one skb per MSS, each
    with a 640-byte small head (66 header bytes after headroom 254) and the payload in a frag;
    SKB_TRUESIZE(320) = 896 plus data_len (skbuff.c skb_segment)."""
    st = run(path="tx", payload_bytes=3000, tso=False)
    seq = names(st)
    assert in_order(
        seq,
        [
            "validate_xmit_skb",
            "__skb_gso_segment",
            "inet_gso_segment",
            "tcp_gso_segment",
            "skb_segment",
            "dev_hard_start_xmit",
            "xmit_one",
            "igb_xmit_frame",
        ],
    )
    assert "igb_tso" not in seq and seq.count("igb_tx_map") == 3
    sent = [skb(s) for s in st if s["function"] == "igb_tx_map"]
    assert [s["len"] - 66 for s in sent] == [1448, 1448, 104]
    assert all(s["data"] == 254 and s["end"] == 320 and s["nr_frags"] == 1 for s in sent)
    assert sent[0]["truesize"] == 896 + 1448
    with_tso = run(path="tx", payload_bytes=3000)
    assert names(with_tso).count("igb_tx_map") == 1 and "igb_tso" in names(with_tso)
