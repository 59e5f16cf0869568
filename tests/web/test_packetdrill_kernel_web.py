"""packetdrill's "run on this machine's kernel too" over HTTP, without touching the kernel:
the kernel runner is replaced by one that answers from given line results, so the API's
``kernel`` fields, the 503 naming why it cannot run, and the page's third column are checked
here; tests/kernel/test_packetdrill_kernel.py runs the real thing."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.sim.core.i18n import msg
from app.sim.tcp.packetdrill.ast import Packet, Script
from app.sim.tcp.packetdrill.realkernel import KernelResult
from app.sim.tcp.packetdrill.runner import run, verdict_of
from app.web.explainers.tcp import packetdrill as web

API = "/api/v1/explainers/tcp/packetdrill"
SCRIPT = Path(__file__).resolve().parents[2] / "content" / "packetdrill" / "basic-client.pkt"


def _fake_kernel(script: Script, tolerance_us: int) -> KernelResult:
    """The model's line results, with the first expected packet answered 3 bytes long."""
    lines = list(run(script, tolerance_us).lines)
    for r in lines:
        if r.line == _first_outbound():
            r.got = {**(r.got or {}), "len": 3}
            r.fail("len", msg("{got} bytes, expected {want}", got=3, want=0))
    return KernelResult(
        verdict=verdict_of(lines),
        lines=tuple(lines),
        release="9.9.9-test",
        namespace="stepscope-pd-test",
        tolerance_us=tolerance_us,
        packets=({"dir": ">", "flags": "S"},),
        slip_ms=0.5,
    )


def _first_outbound() -> int:
    from app.sim.tcp.packetdrill.parser import parse

    script = parse(SCRIPT.read_text())
    return next(e.line for e in script.events if isinstance(e, Packet) and e.direction == ">")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """A lab server: kernel runs switched on (APP_KERNEL_RUNS)."""
    return Settings(database_url=f"sqlite:///{tmp_path / 'test.db'}", kernel_runs=True)


@pytest.fixture
def kernel_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web, "unavailable", lambda: None)
    monkeypatch.setattr(web, "run_kernel", _fake_kernel)


def test_api_without_kernel_has_no_kernel_fields(client: TestClient) -> None:
    body = client.post(API, json={"script": SCRIPT.read_text()}).json()
    assert "kernel" not in body and all("kernel" not in ln for ln in body["lines"])


def test_api_kernel_lines_beside_the_models(client: TestClient, kernel_ok: None) -> None:
    r = client.post(API, json={"script": SCRIPT.read_text(), "kernel": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["verdict"]["pass"] is True
    n = _first_outbound()
    assert body["kernel"]["verdict"] == {"pass": False, "line": n, "reason": "3 bytes, expected 0"}
    assert body["kernel"]["release"] == "9.9.9-test"
    line5 = next(ln for ln in body["lines"] if ln["line"] == n)
    assert line5["status"] == "match" and line5["kernel"]["status"] == "mismatch"
    assert line5["kernel"]["diffs"] == ["len"] and line5["kernel"]["got"]["len"] == 3


def test_api_kernel_unavailable_is_503_naming_why(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web, "unavailable", lambda: msg("this machine has no /dev/net/tun"))
    r = client.post(API, json={"script": SCRIPT.read_text(), "kernel": True})
    assert r.status_code == 503
    detail = r.json()["detail"][0]
    assert detail["loc"] == ["body", "kernel"] and "/dev/net/tun" in detail["msg"]


def test_page_shows_the_kernel_column(client: TestClient, kernel_ok: None) -> None:
    r = client.post(
        "/explainers/tcp/packetdrill", data={"script": SCRIPT.read_text(), "kernel": "true"}
    )
    assert r.status_code == 200
    assert "this machine&#39;s kernel" in r.text and "9.9.9-test" in r.text
    assert 'id="pd-kernel-verdict"' in r.text and "Kernel: 3 bytes, expected 0" in r.text
    plain = client.post("/explainers/tcp/packetdrill", data={"script": SCRIPT.read_text()})
    assert 'id="pd-kernel-verdict"' not in plain.text and 'name="kernel"' in plain.text


def test_page_kernel_unavailable_still_shows_the_model(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web, "unavailable", lambda: msg("this machine has no /dev/net/tun"))
    r = client.post(
        "/explainers/tcp/packetdrill",
        data={"script": SCRIPT.read_text(), "kernel": "true"},
        headers={"Accept-Language": "zh-CN"},
    )
    assert r.status_code == 200
    assert 'id="pd-verdict"' in r.text and 'id="pd-kernel-verdict"' not in r.text
    assert "/dev/net/tun" in r.text


def test_api_kernel_set_up_refused_is_503_naming_why(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.sim.tcp.packetdrill.realkernel import KernelRunError

    def refuse(script: Script, tolerance_us: int) -> KernelResult:
        raise KernelRunError(msg("the kernel run could not be set up: {why}", why="ENOSPC"))

    monkeypatch.setattr(web, "unavailable", lambda: None)
    monkeypatch.setattr(web, "run_kernel", refuse)
    r = client.post(API, json={"script": SCRIPT.read_text(), "kernel": True})
    assert r.status_code == 503 and "could not be set up: ENOSPC" in r.json()["detail"][0]["msg"]


def test_kernel_runs_are_off_unless_the_server_turns_them_on(
    tmp_path: Path, kernel_ok: None
) -> None:
    """By default (a public server) the API refuses a kernel run with 503 naming the setting,
    even where the machine could run it; the model's run is still answered without it."""
    off = Settings(database_url=f"sqlite:///{tmp_path / 'off.db'}")
    with TestClient(create_app(off), raise_server_exceptions=False) as c:
        r = c.post(API, json={"script": SCRIPT.read_text(), "kernel": True})
        assert r.status_code == 503, r.text
        assert "APP_KERNEL_RUNS" in r.json()["detail"][0]["msg"]
        assert c.post(API, json={"script": SCRIPT.read_text()}).status_code == 200
