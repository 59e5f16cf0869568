"""Each preset's state sequence, client and server, in RFC 9293 terms (textbook diagrams of
RFC 9293 figure 5 and the Linux specifics named per case), plus the Linux objects involved."""

from __future__ import annotations

import pytest
from tcphelp import EX, returns, rfc_seq, run_preset, segments, transitions

OPEN_C = ["CLOSED", "SYN_SENT", "ESTABLISHED"]
OPEN_S = ["CLOSED", "LISTEN", "SYN_RECEIVED", "ESTABLISHED"]
ACTIVE_CLOSE = ["FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT", "CLOSED"]
PASSIVE_CLOSE = ["CLOSE_WAIT", "LAST_ACK"]

EXPECTED: dict[str, tuple[list[str], list[str]]] = {
    "handshake": (OPEN_C, OPEN_S),
    "client-close": (OPEN_C + ACTIVE_CLOSE, OPEN_S + PASSIVE_CLOSE + ["LISTEN"]),
    "server-close": (OPEN_C + PASSIVE_CLOSE + ["CLOSED"], OPEN_S + ACTIVE_CLOSE[:3] + ["LISTEN"]),
    "simultaneous-open": (
        ["CLOSED", "SYN_SENT", "SYN_RECEIVED", "ESTABLISHED"],
        ["CLOSED", "SYN_SENT", "SYN_RECEIVED", "ESTABLISHED"],
    ),
    "simultaneous-close": (
        OPEN_C + ["FIN_WAIT_1", "CLOSING", "TIME_WAIT", "CLOSED"],
        OPEN_S + ["FIN_WAIT_1", "CLOSING", "TIME_WAIT", "LISTEN"],
    ),
    "half-close": (OPEN_C + ACTIVE_CLOSE, OPEN_S + PASSIVE_CLOSE + ["LISTEN"]),
    "abort": (OPEN_C + ["CLOSED"], OPEN_S + ["LISTEN"]),
    "close-unread": (OPEN_C + ["CLOSED"], OPEN_S + ["LISTEN"]),
    "closed-port": (["CLOSED", "SYN_SENT", "CLOSED"], ["CLOSED"]),
    "syn-timeout": (["CLOSED", "SYN_SENT", "CLOSED"], ["CLOSED", "LISTEN"]),
    "lost-fin": (OPEN_C + ACTIVE_CLOSE, OPEN_S + PASSIVE_CLOSE + ["LISTEN"]),
    "lost-last-ack": (OPEN_C + ACTIVE_CLOSE, OPEN_S + PASSIVE_CLOSE + ["LISTEN"]),
    "time-wait": (OPEN_C + ACTIVE_CLOSE + OPEN_C[1:], OPEN_S + PASSIVE_CLOSE + OPEN_S[1:]),
    # tcp_twsk_unique: connect() takes the timewait sock's 4-tuple over, TIME_WAIT -> SYN_SENT
    "time-wait-takeover": (
        OPEN_C + ACTIVE_CLOSE[:3] + OPEN_C[1:],
        OPEN_S + PASSIVE_CLOSE + OPEN_S[1:],
    ),
    "syn-to-time-wait": (
        OPEN_C + PASSIVE_CLOSE + ["CLOSED", "SYN_SENT", "ESTABLISHED"],
        OPEN_S + ["FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT", "SYN_RECEIVED", "ESTABLISHED"],
    ),
    "accept-queue-full": (OPEN_C, OPEN_S),
    # a SYN cookie keeps no state: the server goes from LISTEN straight to ESTABLISHED
    "syn-cookies": (OPEN_C, ["CLOSED", "LISTEN", "ESTABLISHED"]),
    "keepalive": (OPEN_C + ["CLOSED"], OPEN_S + ["LISTEN"]),
    "zero-window": (OPEN_C, OPEN_S),
    "sack-recovery": (OPEN_C, OPEN_S),
    "spurious-rto": (OPEN_C, OPEN_S),
    "challenge-ack": (
        OPEN_C + ["CLOSED", "SYN_SENT", "ESTABLISHED"],
        OPEN_S + ["LISTEN"] + OPEN_S[2:],
    ),
}


def test_every_preset_has_an_expected_sequence() -> None:
    """The table covers exactly the declared presets (the issue's list plus two extras)."""
    assert {p.slug for p in EX.presets} == set(EXPECTED)
    assert all(p.lesson == "tcp-" + p.slug for p in EX.presets)


@pytest.mark.parametrize("slug", sorted(EXPECTED))
def test_preset_state_sequences(slug: str) -> None:
    """Client and server walk the RFC 9293 states the scenario is about, in order."""
    tr = run_preset(slug)
    client, server = EXPECTED[slug]
    assert rfc_seq(tr, "client") == client
    assert rfc_seq(tr, "server") == server


def test_client_close_linux_objects() -> None:
    """Linux: the listener's request sock is TCP_NEW_SYN_RECV, and after close() the client's
    FIN_WAIT2 lives on as a timewait sock with tw_substate TCP_FIN_WAIT2 (tcp_time_wait)."""
    tr = run_preset("client-close")
    server_states = {o["state"] for f in tr.frames for o in f.state["endpoints"]["server"]["linux"]}
    assert "TCP_NEW_SYN_RECV" in server_states
    tws = [
        o["tw_substate"]
        for f in tr.frames
        for o in f.state["endpoints"]["client"]["linux"]
        if o["object"] == "timewait_sock"
    ]
    assert tws[0] == "TCP_FIN_WAIT2" and tws[-1] == "TCP_TIME_WAIT"
    # the full socket closes as the timewait sock takes over (no FIN_WAIT2 -> TIME_WAIT event)
    sock = [t for t in transitions(tr) if t["endpoint"] == "client" and t["object"] == "sock"]
    assert ("TCP_FIN_WAIT2", "TCP_CLOSE") in [(t["from_state"], t["to_state"]) for t in sock]


def test_fin_wait1_is_entered_when_the_fin_is_queued() -> None:
    """tcp_close_state changes the state before tcp_send_fin's segment leaves (Linux)."""
    tr = run_preset("client-close")
    i = next(f.index for f in tr.frames if f.state["endpoints"]["client"]["rfc"] == "FIN_WAIT_1")
    fin = next(f.index for f in tr.frames if (s := f.state["segment"]) and "FIN" in s["flags"])
    assert tr.frames[i].state["segment"] is None and i < fin


def test_syn_timeout_timeline() -> None:
    """SYN retransmits at 1, 3, 7, 15, 31, 63 s and connect() gives up at 127 s (6.4
    tcp_write_timeout with tcp_syn_retries 6, purely exponential from TCP_TIMEOUT_INIT)."""
    tr = run_preset("syn-timeout")
    syns = [s["sent_ms"] for s in segments(tr, "client")]
    assert syns == [0, 1000, 3000, 7000, 15000, 31000, 63000]
    assert returns(tr, "client", "connect") == [(127000, "ETIMEDOUT")]


def test_closed_port_refuses() -> None:
    """No socket: tcp_v4_send_reset answers RST+ACK; SYN_SENT's tcp_reset gives ECONNREFUSED."""
    tr = run_preset("closed-port")
    rst = segments(tr, "server")[0]
    assert rst["flags"] == ["RST", "ACK"] and rst["ack"] == 1001
    assert returns(tr, "client", "connect") == [(20, "ECONNREFUSED")]


def test_close_unread_and_abort_send_rst() -> None:
    """close() with unread data (RFC 2525 2.17) and SO_LINGER 0 both send RST, not FIN."""
    for slug, who in (("close-unread", "server"), ("abort", "client")):
        flags = [s["flags"] for s in segments(run_preset(slug), who)]
        assert ["RST", "ACK"] in flags and not any("FIN" in f for f in flags)
    assert (210, "ECONNRESET") in returns(run_preset("close-unread"), "client", "recv")
    assert (210, "ECONNRESET") in returns(run_preset("abort"), "server", "recv")


def test_lost_fin_is_retransmitted_after_rto() -> None:
    """The dropped FIN is resent when the RTO (srtt + max(4 mdev, 200 ms)) expires."""
    fins = [s for s in segments(run_preset("lost-fin"), "client") if "FIN" in s["flags"]]
    assert [f["lost"] for f in fins] == [True, False]
    assert fins[0]["seq"] == fins[1]["seq"]
    assert 200 <= fins[1]["sent_ms"] - fins[0]["sent_ms"] <= 1000


def test_lost_last_ack_rearms_time_wait() -> None:
    """LAST_ACK retransmits its FIN; the client's timewait sock ACKs it again and restarts its
    60 s timer (tcp_timewait_state_process), so it expires 60 s after the retransmission."""
    tr = run_preset("lost-last-ack")
    fins = [s for s in segments(tr, "server") if "FIN" in s["flags"]]
    assert len(fins) == 2
    expiry = next(
        f.state["t_ms"]
        for f in tr.frames
        if any(t["function"] == "tw_timer_handler" for t in f.state["transitions"])
    )
    assert expiry == pytest.approx(fins[1]["arrive_ms"] + 60_000)


def test_time_wait_blocks_the_tuple_then_frees_it() -> None:
    """connect() during TIME_WAIT fails (EADDRNOTAVAIL); after TCP_TIMEWAIT_LEN it succeeds."""
    r = returns(run_preset("time-wait"), "client", "connect")
    assert r[1] == (30000, "EADDRNOTAVAIL") and r[2][1] == "0"


def test_new_syn_to_time_wait_uses_tw_isn() -> None:
    """TCP_TW_SYN: the new connection's ISN is tw_snd_nxt + 65535 + 2."""
    tr = run_preset("syn-to-time-wait")
    synacks = [s for s in segments(tr, "server") if s["flags"] == ["SYN", "ACK"]]
    old_fin = next(s for s in segments(tr, "server") if "FIN" in s["flags"])
    assert synacks[-1]["seq"] == old_fin["seq"] + 1 + 65537


def test_accept_queue_full_drops_syns_until_accept() -> None:
    """sk_acceptq_is_full drops the SYN (no SYN-ACK) until accept() makes room."""
    tr = run_preset("accept-queue-full")
    first_synack = next(s for s in segments(tr, "server"))
    assert first_synack["sent_ms"] > 2500
    assert len([s for s in segments(tr, "client") if s["flags"] == ["SYN"]]) == 3


def test_syn_cookies_keep_no_request_sock() -> None:
    """With the SYN queue full, tcp_syn_flood_action sends a cookie: no TCP_NEW_SYN_RECV."""
    tr = run_preset("syn-cookies")
    states = {o["state"] for f in tr.frames for o in f.state["endpoints"]["server"]["linux"]}
    assert "TCP_NEW_SYN_RECV" not in states and "TCP_ESTABLISHED" in states


def test_keepalive_probes_then_timeout() -> None:
    """Probes start after tcp_keepalive_time idle, repeat every intvl, and after
    tcp_keepalive_probes unanswered ones the socket sends RST and reports ETIMEDOUT."""
    tr = run_preset("keepalive")
    probes = [s for s in segments(tr, "client") if s["kind"] == "keepalive"]
    assert probes[0]["sent_ms"] == pytest.approx(20 + 30_000)
    gaps = [b["sent_ms"] - a["sent_ms"] for a, b in zip(probes[1:], probes[2:], strict=False)]
    assert gaps == [5000, 5000]
    assert returns(tr, "client", "recv")[-1][1] == "ETIMEDOUT"


def test_zero_window_persist_probes_back_off() -> None:
    """tcp_probe_timer: window probes (SND.UNA - 1, no data) with growing intervals (the
    backoff doubles; tcp_ack_probe re-arms from each answering ACK) until the reader opens
    the window."""
    tr = run_preset("zero-window")
    probes = [s for s in segments(tr, "client") if s["kind"] == "probe"]
    assert len(probes) >= 3
    gaps = [b["sent_ms"] - a["sent_ms"] for a, b in zip(probes, probes[1:], strict=False)]
    assert all(g2 > g1 for g1, g2 in zip(gaps, gaps[1:], strict=False))
    assert all(p["len"] == 0 for p in probes)


def test_challenge_ack_then_reset() -> None:
    """RFC 5961 4.2: a SYN on an ESTABLISHED connection gets a challenge ACK; the SYN_SENT
    client answers it with a RST whose seq is RCV.NXT, which resets the stale connection."""
    tr = run_preset("challenge-ack")
    kinds = [s["kind"] for s in segments(tr, "server")]
    assert "challenge_ack" in kinds
    assert returns(tr, "client", "connect")[-1][1] == "0"


def test_every_preset_has_a_lesson_draft() -> None:
    """content/tcp-<slug>.md exists with the explainer/preset front matter of the others."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "content"
    for p in EX.presets:
        text = (root / f"{p.lesson}.md").read_text(encoding="utf-8")
        head = text.split("---")[1]
        assert "explainer: tcp" in head and f"preset: {p.slug}" in head
        assert "title: " in head and "summary: " in head
