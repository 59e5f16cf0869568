"""Issue 22: the packet paths as a kernel reviewer reads them. Each test names the kernel
function whose behaviour it checks."""

from __future__ import annotations

from typing import Any

from app.sim.core.trace import Frame
from app.sim.path import EXPLAINER as E
from app.sim.path.engine import PathState
from app.sim.path.walk import HOOK_ENTRIES


def _frames(slug: str, **over: Any) -> tuple[Frame[PathState], ...]:
    preset = E.preset(slug)
    assert preset is not None
    return E.run(E.parse({**preset.params, **over})).frames


def _text(f: Frame[PathState]) -> str:
    return f.narration.render()


def test_napi_skb_finish_frees_the_stolen_head_of_the_last_merged_segment() -> None:
    """napi_skb_finish (net/core/gro.c): the 20th segment of gro-burst merges (skb_gro_receive
    stole its head, NAPI_GRO_FREE_STOLEN_HEAD), its PSH flushes the held packet, and
    dev_gro_receive returns GRO_MERGED_FREE, not GRO_HELD; the bucket is left empty."""
    frames = _frames("gro-burst")
    finishes = [f for f in frames if f.state["function"] == "napi_skb_finish"]
    assert len(finishes) == 20
    last = finishes[-1]
    assert "GRO_MERGED_FREE" in _text(last) and "napi_skb_free_stolen_head" in _text(last)
    assert "GRO_HELD" not in _text(last)
    napi = last.state["napi"]
    assert napi is not None and napi["held"] == []
    # only the first segment is held; every later one merges
    assert [("GRO_HELD" in _text(f)) for f in finishes] == [True] + [False] * 19


def test_legacy_rx_merge_frees_with_napi_gro_free() -> None:
    """skb_gro_receive (net/core/gro.c): a segment whose payload is a page frag
    (igb_construct_skb) has its frags moved and is freed as NAPI_GRO_FREE, not a stolen head."""
    frames = _frames("gro-burst", rx_mode="legacy")
    finishes = [f for f in frames if f.state["function"] == "napi_skb_finish"]
    assert "NAPI_GRO_FREE," in _text(finishes[1]) or "NAPI_GRO_FREE " in _text(finishes[1])
    assert "stolen" not in _text(finishes[1])


def test_napi_skb_finish_is_a_sibling_of_dev_gro_receive() -> None:
    """napi_gro_receive (net/core/gro.c) calls napi_skb_finish(napi, skb,
    dev_gro_receive(napi, skb)): napi_skb_finish runs after dev_gro_receive returned, and
    napi_gro_complete after inet_gro_receive returned (from dev_gro_receive)."""
    for f in _frames("gro-burst"):
        stack = f.state["stack"]
        if f.state["function"] == "napi_skb_finish":
            assert stack[-2] == "napi_gro_receive", stack
        if f.state["function"] == "napi_gro_complete" and "dev_gro_receive" in stack:
            assert stack[-2] == "dev_gro_receive", stack
            assert "inet_gro_receive" not in stack


def test_ip_rcv_core_always_checks_the_ip_header_checksum() -> None:
    """ip_rcv_core (net/ipv4/ip_input.c) runs ip_fast_csum on every IPv4 header; only L4
    checksums are skipped (CHECKSUM_PARTIAL / UNNECESSARY)."""
    for slug in ("loopback", "veth", "receive-segment"):
        cores = [f for f in _frames(slug) if f.state["function"] == "ip_rcv_core"]
        assert cores, slug
        for f in cores:
            assert "ip_fast_csum" in _text(f), slug
            assert "skipped for loopback" not in _text(f)


def test_each_hook_narrates_its_registered_functions_in_priority_order() -> None:
    """nf_hook_slow (net/netfilter/core.c) calls a hook's entries by nf_ip_hook_priorities:
    PRE_ROUTING has no filter table, conntrack's confirm is last at LOCAL_IN and POST_ROUTING,
    FORWARD has only mangle and filter."""
    order = {
        "PRE_ROUTING": ["defrag (", "raw table", "conntrack (", "mangle table", "DNAT"],
        "LOCAL_IN": ["mangle table", "filter table", "SNAT", "confirm"],
        "FORWARD": ["mangle table", "filter table"],
        "LOCAL_OUT": [
            "defrag (",
            "raw table",
            "conntrack (",
            "mangle table",
            "DNAT",
            "filter table",
        ],
        "POST_ROUTING": ["mangle table", "SNAT", "confirm"],
    }
    for hook, names in order.items():
        text = HOOK_ENTRIES[hook].render()
        at = [text.index(n) for n in names]
        assert at == sorted(at), hook
    assert "filter table (" not in HOOK_ENTRIES["PRE_ROUTING"].render()
    assert "filter table (" not in HOOK_ENTRIES["POST_ROUTING"].render()
    assert "conntrack" not in HOOK_ENTRIES["FORWARD"].render().split(";")[0]
    # the walks use them: the forward preset's FORWARD hook says mangle then filter
    fwd = [f for f in _frames("forward") if f.state["hook"] == "FORWARD"]
    assert any(HOOK_ENTRIES["FORWARD"].render() in _text(f) for f in fwd)
    assert not any("conntrack, then the filter and nat" in _text(f) for f in _frames("forward"))


def _owner(f: Frame[PathState]) -> tuple[str | None, str | None]:
    skb = f.state["skb"]
    assert skb is not None
    return skb["sk"], skb["destructor"]


def test_tcp_transmit_skb_charges_the_clone_to_the_socket() -> None:
    """__tcp_transmit_skb (net/ipv4/tcp_output.c): skb->sk = sk, destructor tcp_wfree,
    sk_wmem_alloc += truesize; the queued original has no skb->sk."""
    frames = _frames("send-segment")
    entail = next(f for f in frames if f.state["function"] == "tcp_skb_entail")
    assert _owner(entail) == (None, None)
    xmit = [f for f in frames if f.state["function"] == "__tcp_transmit_skb"]
    assert _owner(xmit[-1]) == ("sender", "tcp_wfree")
    assert "sk_wmem_alloc" in _text(xmit[-1])
    nic = next(f for f in frames if f.state["function"] == "igb_xmit_frame_ring")
    assert _owner(nic) == ("sender", "tcp_wfree")


def test_veth_keeps_the_owner_until_ip_rcv_core_orphans() -> None:
    """____dev_forward_skb / skb_scrub_packet (net/core/skbuff.c) do not orphan: over veth the
    sender's socket owns the skb in the peer namespace until ip_rcv_core's skb_orphan; then
    tcp_v4_early_demux and tcp_queue_rcv give it to the receiver (sock_edemux, sock_rfree)."""
    frames = _frames("veth")
    owners = {f.state["function"]: _owner(f) for f in frames if f.state["skb"] is not None}
    assert owners["eth_type_trans"] == ("sender", "tcp_wfree")
    assert owners["enqueue_to_backlog"] == ("sender", "tcp_wfree")
    assert owners["ip_rcv_core"] == (None, None)
    assert owners["tcp_v4_early_demux"] == ("receiver", "sock_edemux")
    assert owners["tcp_queue_rcv"] == ("receiver", "sock_rfree")
    core = next(f for f in frames if f.state["function"] == "ip_rcv_core")
    assert core.state["ns"] == "ns2" and "skb_orphan" in _text(core)


def test_loopback_xmit_orphans() -> None:
    """loopback_xmit (drivers/net/loopback.c) calls skb_orphan before the frame turns around."""
    frames = _frames("loopback")
    lo = next(f for f in frames if f.state["function"] == "loopback_xmit")
    assert _owner(lo) == (None, None)


def test_vxlan_inner_headers_set_in_vxlan_build_skb() -> None:
    """vxlan_build_skb → iptunnel_handle_offloads → skb_reset_inner_headers
    (drivers/net/vxlan/vxlan_core.c, net/ipv4/ip_tunnel_core.c): the inner offsets are the
    inner frame's mac/network/transport headers, set there, not at __dev_queue_xmit."""
    frames = _frames("vxlan")
    before = [f for f in frames if f.state["function"] == "__dev_queue_xmit"][0]
    assert before.state["skb"] is not None
    assert before.state["skb"]["inner_mac_header"] is None
    build = next(f for f in frames if f.state["function"] == "vxlan_build_skb")
    skb = build.state["skb"]
    assert skb is not None
    assert skb["inner_mac_header"] == before.state["skb"]["mac_header"]
    assert skb["inner_network_header"] == before.state["skb"]["network_header"]
    assert skb["inner_transport_header"] == before.state["skb"]["transport_header"]
    assert "skb_reset_inner_headers" in _text(build)


def test_inet_gro_receive_same_flow_vs_flush() -> None:
    """inet_gro_receive (net/ipv4/af_inet.c): another address or protocol clears same_flow;
    another TTL, TOS or DF only sets flush."""
    text = _text(next(f for f in _frames("gro-burst") if f.state["function"] == "inet_gro_receive"))
    assert "same_flow = 0" in text and "flush set" in text


def test_api_narration_is_a_string() -> None:
    """The path API gives each step's narration as a string, as every explainer does."""
    out = E.public_json(E.run(E.parse({"path": "rx"})))
    assert all(isinstance(f["narration"], str) for f in out["frames"])  # type: ignore[index,union-attr]


def test_field_table_shows_the_destructor_at_every_step() -> None:
    """The player's field table carries skb->destructor (tcp_wfree from __tcp_transmit_skb,
    NULL after ip_rcv_core's skb_orphan, sock_rfree after tcp_queue_rcv's skb_set_owner_r)."""
    seen = []
    for f in _frames("veth"):
        if f.state["skb"] is None:
            continue
        row = {x.name: x.value for x in f.fields}
        assert row["destructor"] == (f.state["skb"]["destructor"] or "NULL")
        seen.append(row["destructor"])
    assert "tcp_wfree" in seen and "sock_rfree" in seen and "NULL" in seen
