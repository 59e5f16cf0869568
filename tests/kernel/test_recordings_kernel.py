"""A recording of this machine's kernel, end to end as a user takes it: ``stepscope record demo``
writes the file, ``POST /api/v1/recordings`` stores it, ``GET`` gives it back parsed, ``/r/{id}``
steps through it beside the model, and the overlay's comparison holds numbers both sides agree
on (CUBIC's multiplicative decrease, 0.7 ± 0.05, measured on the machine and in the model for
the same link). Needs root, tracefs and network namespaces; skips otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.main import create_app
from app.settings import Settings
from tests.kernel.test_record_kernel import ROOT, _skip

pytestmark = pytest.mark.kernel


def _record(args: list[str], out: Path) -> bytes:
    p = subprocess.run(
        [sys.executable, "-m", "app.record", "record", *args, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert p.returncode == 0, p.stderr
    return out.read_bytes()


@pytest.fixture
def client(tmp_path: Path) -> Any:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'rec.db'}")
    with TestClient(create_app(settings)) as c:
        yield c


def _upload(client: TestClient, body: bytes) -> dict[str, Any]:
    r = client.post(
        "/api/v1/recordings", content=body, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    got = client.get(f"/api/v1/recordings/{created['id']}")
    assert got.status_code == 200, got.text
    page = client.get(created["url"])
    assert page.status_code == 200, page.text[:500]
    parsed: dict[str, Any] = got.json()
    return parsed


def test_a_recorded_cubic_transfer_and_the_model_back_off_alike(
    client: TestClient, tmp_path: Path
) -> None:
    """8 s of CUBIC through 20 Mbit/s, 40 ms, 1 BDP: the uploaded recording's flow has its
    cwnd series; the cwnd overlay (the view that declares the "cwnd" kind) runs the model for
    the recording's link and measures both sides' decreases at 0.7 ± 0.05 (tcp_cubic.c's
    beta 717/1024)."""
    _skip()
    body = _record(
        [
            "demo",
            "cwnd",
            "--cc",
            "cubic",
            "--rate-mbit",
            "20",
            "--rtt-ms",
            "40",
            "--buffer-bdp",
            "1",
            "--seconds",
            "8",
        ],
        tmp_path / "cwnd.json",
    )
    parsed = _upload(client, body)
    assert parsed["kind"] == "cwnd"
    (flow,) = parsed["flows"]
    assert flow["cc"] == "cubic" and len(flow["series"]) > 100
    view = next(
        p.web.recording for p in builtin() if p.web.recording and "cwnd" in p.web.recording.kinds
    )
    trace = view.trace(parsed, {})
    metrics = trace.summary["metrics"]
    assert metrics["machine"]["reductions"] >= 2, json.dumps(metrics)
    assert metrics["model"]["reductions"] >= 2, json.dumps(metrics)
    for side in ("machine", "model"):
        assert abs(metrics[side]["decrease"] - 0.7) <= 0.05, json.dumps(metrics)


def test_a_recorded_handshake_reads_as_the_kernels_states(
    client: TestClient, tmp_path: Path
) -> None:
    """The handshake preset's socket calls on the real kernel, uploaded: each socket's states
    come from its inet_sock_set_state events (SYN_SENT then ESTABLISHED for the client; LISTEN,
    then the child's SYN_RECEIVED and ESTABLISHED on the server's port), and the TCP view steps
    through them."""
    _skip()
    body = _record(["demo", "tcp", "--preset", "handshake"], tmp_path / "tcp.json")
    parsed = _upload(client, body)
    assert parsed["kind"] == "tcp"
    orders = [[s for s in o if s != "CLOSED"] for o in parsed["states"].values()]
    # per address: the client's socket, and the listener with the child it accepted
    assert sorted(orders) == [
        ["LISTEN", "SYN_RECEIVED", "ESTABLISHED"],
        ["SYN_SENT", "ESTABLISHED"],
    ], parsed["states"]
