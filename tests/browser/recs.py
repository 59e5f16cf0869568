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


def path_recording() -> dict[str, Any]:
    return {**HEAD, **pathrec.recording(pathrec.veth_tx(), pathrec.nic_rx(), pathrec.nic_drop())}


def upload(base: str, kind: str) -> str:
    """Upload a recording of ``kind`` (capture, cwnd or path); its /r/{id} path."""
    if kind == "capture":
        r = httpx.post(
            f"{base}/api/v1/recordings",
            content=pcap(handshake_data_close()),
            headers={"Content-Type": PCAP},
        )
    else:
        body = cwnd_recording() if kind == "cwnd" else path_recording()
        r = httpx.post(f"{base}/api/v1/recordings", json=body, timeout=60)
    assert r.status_code == 201, r.text
    assert r.json()["kind"] == kind
    return str(r.json()["url"])
