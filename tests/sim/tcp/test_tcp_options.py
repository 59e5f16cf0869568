"""Segments as Linux 6.4 sends them (issue 25): options, windows, timestamps, SACK, the
sysctls that change them, and the rest of the reviewer's finding 4. Each test names the kernel
function it follows. The handshake values were also seen on a real kernel (content/
tcp-kernel-check.md): SYN win 64240 <mss 1460,sackOK,TS val … ecr 0,nop,wscale 7>, SYN-ACK win
65160, third ACK win 502 with tcp_rmem = 4096 131072 6291456, and each sysctl variant below."""

from __future__ import annotations

from typing import Any

import pytest
from tcphelp import EX, OPEN, c, returns, run, run_preset, segments, transitions

from app.sim.core.errors import ParamError

HANDSHAKE: dict[str, Any] = {
    "script": [*OPEN, c(50, "client", "send", bytes=1000), c(250, "server", "recv")],
    "until_ms": 600,
}


def _first(raw: dict[str, Any], n: int = 3) -> list[dict[str, Any]]:
    return segments(run(raw))[:n]


def _sources(tr: Any) -> list[tuple[dict[str, Any], str]]:
    return [
        (dict(f.state["segment"]), f.source.function if f.source else "")
        for f in tr.frames
        if f.state["segment"] is not None
    ]


def test_syn_and_synack_options_in_wire_order() -> None:
    """tcp_syn_options / tcp_synack_options, packed by tcp_options_write: MSS, then
    SACK-permitted sharing a word with the timestamp, then nop,wscale. Windows: the SYN's is
    tcp_select_initial_window's rcv_wnd, 65536 rounded down to 1460 (64240); the SYN-ACK's to
    1460 - 12 (65160); the scale 7 comes from tcp_rmem[2] = 6291456 (ilog2 22 - 15)."""
    syn, synack, ack = _first(HANDSHAKE)
    assert syn["flags"] == ["SYN"] and syn["window"] == 64240
    assert syn["options"] == ["mss 1460", "sackOK", "TS val 1000000 ecr 0", "nop", "wscale 7"]
    assert synack["window"] == 65160
    assert synack["options"][0] == "mss 1460" and synack["options"][-1] == "wscale 7"
    # the SYN-ACK echoes the SYN's TSval
    assert synack["options"][2].endswith("ecr 1000000")
    assert ack["options"][:2] == ["nop", "nop"] and ack["options"][2].startswith("TS val ")


def test_windows_are_scaled_after_the_handshake() -> None:
    """tcp_select_window: after the SYN the header carries the window >> rcv_wscale. The
    third ACK offers 502 (64256 bytes: rcv_ssthresh 64076 after tcp_init_buffer_space, but
    the window already offered, 64240, may not shrink, ALIGNed up to 128); the SYN's own
    window is never scaled (min(rcv_wnd, 65535))."""
    syn, synack, ack = _first(HANDSHAKE)
    assert syn["window_scaled"] == syn["window"] == 64240
    assert ack["window"] == 502 and ack["window_scaled"] == 502 << 7
    data = next(s for s in segments(run(HANDSHAKE), "server") if s["kind"] == "ack")
    assert data["window_scaled"] == data["window"] << 7


@pytest.mark.parametrize(
    ("sysctl", "syn_options", "synack_window"),
    [
        (
            {"tcp_timestamps": 0},
            ["mss 1460", "nop", "nop", "sackOK", "nop", "wscale 7"],
            64240,  # no timestamp option: the SYN-ACK's MSS for the window is 1460
        ),
        (
            {"tcp_sack": 0},
            ["mss 1460", "nop", "nop", "TS val 1000000 ecr 0", "nop", "wscale 7"],
            65160,
        ),
        ({"tcp_window_scaling": 0}, ["mss 1460", "sackOK", "TS val 1000000 ecr 0"], 65160),
    ],
)
def test_sysctls_change_the_options(
    sysctl: dict[str, int], syn_options: list[str], synack_window: int
) -> None:
    """tcp_syn_options adds each option only when its sysctl is on; tcp_options_write then
    pads SACK-permitted or the timestamp alone with two NOPs (the packings the real kernel
    sent with each sysctl off)."""
    syn, synack, ack = _first({**HANDSHAKE, "sysctl": sysctl})
    assert syn["options"] == syn_options
    assert synack["window"] == synack_window
    if "tcp_timestamps" in sysctl:
        assert ack["options"] == []
    if "tcp_window_scaling" in sysctl:
        assert ack["window"] == ack["window_scaled"] == 64240  # unscaled from then on


def test_window_scale_follows_tcp_rmem_max() -> None:
    """tcp_select_initial_window chooses the scale for the largest window the socket may
    offer: tcp_rmem[2] = 32 MiB gives ilog2(2**25) - 15 = 10 (the kernel here sent wscale 10
    with that setting)."""
    raw = {**HANDSHAKE, "sysctl": {"tcp_rmem": [4096, 131072, 33554432]}}
    syn, synack, _ = _first(raw)
    assert syn["options"][-1] == "wscale 10" and synack["options"][-1] == "wscale 10"


def test_small_receive_buffer_needs_no_scale() -> None:
    """SO_RCVBUF locks the buffer and clamps the window to it (tcp_connect_init,
    tcp_openreq_init_rwin): 4000 bytes of space give SYN win 2920 (two 1460-byte MSS),
    SYN-ACK win 2896 (two 1448) and wscale 0, as on the real kernel."""
    syn, synack, _ = _first({**HANDSHAKE, "rcvbuf": 4000})
    assert (syn["window"], synack["window"]) == (2920, 2896)
    assert syn["options"][-1] == "wscale 0"


def test_timestamps_tick_in_ms_and_echo() -> None:
    """tcp_established_options: TSval is tcp_skb_timestamp (1 ms) + the connection's offset;
    TSecr echoes ts_recent, kept by tcp_replace_ts_recent."""
    segs = segments(run(HANDSHAKE))
    client = [s for s in segs if s["src"] == "client"]
    vals = [int(s["options"][2].split()[2]) - 1_000_000 for s in client[1:]]
    assert vals == [int(s["sent_ms"]) for s in client[1:]]
    server_ack = next(s for s in segs if s["src"] == "server" and s["kind"] == "ack")
    assert server_ack["options"][2].endswith(f"ecr {1_000_000 + 50}")


def test_mss_less_timestamps_is_the_segment_size() -> None:
    """tcp_sync_mss: with timestamps a full segment carries 1460 - 12 = 1448 bytes."""
    tr = run({"script": [*OPEN, c(50, "client", "send", bytes=5000)], "until_ms": 500})
    sizes = [s["len"] for s in segments(tr, "client") if s["kind"] == "data"]
    assert sizes == [1448, 1448, 1448, 656]


def test_sack_blocks_for_out_of_order_data() -> None:
    """tcp_sack_new_ofo_skb: each out-of-order arrival extends the first SACK block;
    tcp_established_options writes it after nop,nop. Filling the hole clears it
    (tcp_sack_remove)."""
    raw = {
        "script": [*OPEN, c(50, "client", "send", bytes=6000), c(50, "server", "recv")],
        "network": [{"drop": {"from": "client", "nth": 4}}],
        "until_ms": 1000,
    }
    acks = [s for s in segments(run(raw), "server") if s["kind"] == "ack"]
    sacks = [s["options"][-1] for s in acks if s["options"][-1].startswith("sack")]
    assert sacks == ["sack 3897:5345", "sack 3897:6793", "sack 3897:7001"]
    assert acks[-1]["ack"] == 7001 and not acks[-1]["options"][-1].startswith("sack")


def test_duplicate_data_gets_a_dsack() -> None:
    """tcp_data_queue → tcp_dsack_set: data wholly below RCV.NXT is reported once as a D-SACK
    block (RFC 2883)."""
    raw = {
        "script": [*OPEN, c(50, "client", "send", bytes=1000), c(50, "server", "recv")],
        "network": [{"duplicate": {"from": "client", "nth": 3}}],
        "until_ms": 1000,
    }
    tr = run(raw)
    acks = [s for s in segments(tr, "server") if s["kind"] == "ack"]
    assert [a["options"][-1] for a in acks[-2:]][-1] == "sack 1001:2001"
    ids = {getattr(n, "id", "") for f in tr.frames for n in f.notes}
    assert "D-SACK: the next ACK reports {a}-{b} as received twice." in ids


def test_ecn_negotiation_flags() -> None:
    """tcp_ecn = 1: tcp_ecn_send_syn asks with ECE+CWR; the listener (tcp_ecn 2 accepts)
    answers ECE (tcp_ecn_send_synack). 6.4's default 2 asks nothing."""
    syn, synack, _ = _first({**HANDSHAKE, "sysctl": {"tcp_ecn": 1}})
    assert set(syn["flags"]) == {"SYN", "ECE", "CWR"}
    assert set(synack["flags"]) == {"SYN", "ECE", "ACK"}
    syn, synack, _ = _first(HANDSHAKE)
    assert "ECE" not in syn["flags"] and "ECE" not in synack["flags"]


# --- finding 4 ---------------------------------------------------------------------------


def test_lost_fin_is_resent_by_a_tail_loss_probe() -> None:
    """tcp_schedule_loss_probe / tcp_send_loss_probe: with SACK (6.4's default) and
    tcp_early_retrans 3, the lost FIN is resent by the loss probe, at min(2 srtt + 200 ms,
    the RTO); without SACK by the RTO (tcp_retransmit_skb)."""
    p = EX.preset("lost-fin")
    assert p is not None

    def fin_resend(raw: dict[str, Any]) -> str:
        sent = _sources(run(raw))
        return next(fn for s, fn in sent if s["src"] == "client" and s["kind"] == "retransmit")

    assert fin_resend(dict(p.params)) == "tcp_send_loss_probe"
    assert fin_resend({**p.params, "sysctl": {"tcp_sack": 0}}) == "tcp_retransmit_skb"
    assert fin_resend({**p.params, "sysctl": {"tcp_early_retrans": 0}}) == "tcp_retransmit_skb"


def test_persist_timer_rearmed_by_zero_window_ack() -> None:
    """tcp_ack → tcp_ack_probe: an ACK that leaves the window closed re-arms the persist
    timer with the current backoff from its own arrival (it is not left to run from the
    probe)."""
    tr = run_preset("zero-window")
    rearms = [f for f in tr.frames if f.source is not None and f.source.function == "tcp_ack_probe"]
    assert rearms
    for f in rearms:
        t = f.state["t_ms"]
        probe0 = [
            tm["deadline_ms"]
            for o in f.state["endpoints"]["client"]["linux"]
            for tm in o["timers"]
            if tm["name"] == "probe0"
        ]
        if probe0:
            rto = f.state["endpoints"]["client"]["rto_ms"]
            backoff = f.state["endpoints"]["client"]["backoff"]
            assert probe0 == [pytest.approx(t + min(rto * 2**backoff, 120_000))]


def test_retransmitted_syn_rearms_request_timer_and_blocks_rtt_sample() -> None:
    """tcp_check_req: a retransmitted SYN that reaches the request sock is answered by a
    SYN-ACK (inet_rtx_syn_ack, num_retrans + 1) and mod_timer_pending restarts the SYN-ACK
    timer from now. tcp_synack_rtt_meas then takes no sample from the SYN-ACK's send time:
    without timestamps the child's RTO falls back to 3 s; with them the ACK's TSecr gives
    one (tcp_ack_update_rtt)."""
    raw: dict[str, Any] = {
        "script": [*OPEN],
        "network": [
            {"delay": {"from": "client", "nth": 1, "ms": 300}},
            {"drop": {"from": "server", "nth": 1}},
        ],
        "until_ms": 3000,
    }
    for sysctl, rto in (({}, None), ({"tcp_timestamps": 0}, 3000.0)):
        tr = run({**raw, "sysctl": sysctl})
        sent = _sources(tr)
        synacks = [(s["sent_ms"], fn) for s, fn in sent if s["src"] == "server"]
        assert synacks[:2] == [(310.0, "tcp_v4_send_synack"), (1010.0, "tcp_rtx_synack")]
        f = next(f for f in tr.frames if f.state["t_ms"] == 1010.0)
        timers = [t for o in f.state["endpoints"]["server"]["linux"] for t in o["timers"]]
        assert {"name": "synack", "deadline_ms": 2010.0} in timers
        assert "tcp_check_req" in {g.source.function for g in tr.frames if g.source}
        server_rto = tr.frames[-1].state["endpoints"]["server"]["rto_ms"]
        if rto is None:
            assert server_rto is not None and server_rto < 1000
        else:
            assert server_rto == rto


def test_data_after_close_calls_tcp_reset() -> None:
    """tcp_rcv_state_process, FIN_WAIT1/2 with the receive side shut by close(): new data
    makes the kernel call tcp_reset() itself (no RST arrived) and answer with a RST."""
    script = [
        *OPEN,
        c(100, "client", "close"),
        c(100, "server", "send", bytes=100),
    ]
    tr = run({"script": script, "until_ms": 1000})
    closes = [
        t
        for t in transitions(tr)
        if t["endpoint"] == "client" and t["object"] == "sock" and t["to_state"] == "TCP_CLOSE"
    ]
    assert closes[0]["function"] == "tcp_reset" and closes[0]["event"] == "data after close"
    assert ["RST"] in [s["flags"] for s in segments(tr, "client")]
    assert returns(tr, "client", "close") == [(100.0, "0")]


# --- sysctls -------------------------------------------------------------------------------


def test_tcp_retries2_bounds_the_retransmissions() -> None:
    """tcp_write_timeout: retransmits_timed_out(tcp_retries2): with 3 the connection gives up
    after about (2**4 - 1) x 200 ms from the first transmission."""
    raw = {
        "script": [*OPEN, c(100, "client", "send", bytes=500), c(100, "client", "recv")],
        "network": [{"drop": {"from": "client", "nth": 3, "count": 100}}],
        "sysctl": {"tcp_retries2": 3},
        "until_ms": 60_000,
    }
    ((t, err),) = returns(run(raw), "client", "recv")
    assert err == "ETIMEDOUT" and 100 + 3000 <= t < 100 + 10_000


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ([4096, 131072], "tcp_rmem"),
        ([131072, 4096, 6291456], "tcp_rmem"),
        ("big", "tcp_rmem"),
        (5, "tcp_early_retrans"),
        (3, "tcp_ecn"),
        (2, "tcp_sack"),
    ],
)
def test_bad_sysctl_names_its_field(value: object, field: str) -> None:
    """A bad sysctl value is refused, naming the field (the API answers 422)."""
    with pytest.raises(ParamError) as e:
        EX.parse({"script": OPEN, "sysctl": {field: value}})
    assert [i.loc for i in e.value.issues] == [("sysctl", field)]


def test_sysctl_triples_round_trip() -> None:
    p = EX.parse({"script": OPEN, "sysctl": {"tcp_rmem": [4096, 65536, 1048576]}})
    assert EX.dump(p)["sysctl"] == {"tcp_rmem": [4096, 65536, 1048576]}
    assert EX.parse(EX.dump(p)) == p
