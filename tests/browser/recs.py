"""Recordings of each kind for the browser tests, uploaded through the API: a capture built
with dpkt (tests/recordings/pcaps.py), a cwnd recording of the model's own CUBIC run
(tests/sim/congestion/test_cwnd_recorded.py) written as ``tcp:tcp_probe`` events, and a path
recording of stacks (tests/sim/path/pathrec.py)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.recordings.pcaps import handshake_data_close, pcap
from tests.sim.congestion.test_cwnd_recorded import _recording
from tests.sim.path import pathrec

PCAP = "application/vnd.tcpdump.pcap"
HEAD = {"format": "stepscope-recording", "schema": 1}


def cwnd_recording() -> dict[str, Any]:
    """The synthetic CUBIC flow as tcp_probe would print it, one event every 10 ms."""
    rec = _recording("cubic", "probe")
    flow = rec["flows"][1]
    events = [
        {
            "t_ms": p["t_ms"],
            "event": "tcp:tcp_probe",
            "fields": {
                "src": flow["src"],
                "dest": flow["dst"],
                "snd_cwnd": str(p["cwnd"]),
                "ssthresh": str(p["ssthresh"]),
                "srtt": str(p["srtt_us"]),
            },
        }
        for p in flow["series"][::5]
    ]
    keep = ("kind", "kernel", "sysctls", "link", "duration_ms")
    return {**HEAD, **{k: rec[k] for k in keep}, "flows": [], "events": events}


def _set_state(t: float, ep: tuple[str, int, str, int], old: str, new: str) -> dict[str, Any]:
    saddr, sport, daddr, dport = ep
    fields = {"family": "AF_INET", "saddr": saddr, "sport": str(sport), "daddr": daddr}
    fields.update(dport=str(dport), oldstate=old, newstate=new)
    return {"t_ms": t, "event": "sock:inet_sock_set_state", "fields": fields}


def tcp_recording() -> dict[str, Any]:
    """A ``record tcp`` run: both ends' state changes through a connection and its close, a
    retransmission and a reset seen by the kernel."""
    client = ("10.0.0.1", 40312, "10.0.0.2", 80)
    server = ("10.0.0.2", 80, "10.0.0.1", 40312)
    steps = [
        (0.0, client, "TCP_CLOSE", "TCP_SYN_SENT"),
        (0.4, server, "TCP_LISTEN", "TCP_SYN_RECV"),
        (0.8, client, "TCP_SYN_SENT", "TCP_ESTABLISHED"),
        (1.1, server, "TCP_SYN_RECV", "TCP_ESTABLISHED"),
        (9.0, client, "TCP_ESTABLISHED", "TCP_FIN_WAIT1"),
        (9.4, server, "TCP_ESTABLISHED", "TCP_CLOSE_WAIT"),
        (9.8, client, "TCP_FIN_WAIT1", "TCP_FIN_WAIT2"),
        (10.2, server, "TCP_CLOSE_WAIT", "TCP_LAST_ACK"),
        (10.6, client, "TCP_FIN_WAIT2", "TCP_TIME_WAIT"),
        (11.0, server, "TCP_LAST_ACK", "TCP_CLOSE"),
    ]
    events = [_set_state(*s) for s in steps]
    events.insert(5, {"t_ms": 9.2, "event": "tcp:tcp_retransmit_skb", "fields": {"sport": "40312"}})
    return {
        **HEAD,
        "kind": "tcp",
        "kernel": {"release": "6.4.0"},
        "link": None,
        "flows": [],
        "events": events,
    }


def path_recording() -> dict[str, Any]:
    return {**HEAD, **pathrec.recording(pathrec.veth_tx(), pathrec.nic_rx(), pathrec.nic_drop())}


def upload(base: str, kind: str) -> str:
    """Upload a recording of ``kind`` (capture, tcp, cwnd or path); its /r/{id} path."""
    if kind == "capture":
        r = httpx.post(
            f"{base}/api/v1/recordings",
            content=pcap(handshake_data_close()),
            headers={"Content-Type": PCAP},
        )
    else:
        made = {"cwnd": cwnd_recording, "tcp": tcp_recording, "path": path_recording}
        body = made[kind]()
        r = httpx.post(f"{base}/api/v1/recordings", json=body, timeout=60)
    assert r.status_code == 201, r.text
    assert r.json()["kind"] == kind
    return str(r.json()["url"])
