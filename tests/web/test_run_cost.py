"""A run is costed on what it produces as well as what it simulates (issue 24): each explainer
predicts its trace's bytes, a run predicted over the cap is refused before it starts, a trace
over the cap is refused after (the hard cap), and the API builds big JSON off the event loop.

Speed figures (predicted vs measured seconds per explainer) come from bench/cost_calibration.py.
"""

from __future__ import annotations

import asyncio
import pickle
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.main import create_app
from app.settings import Settings
from app.sim.core.cost import TraceTooLarge
from app.web import runs as runs_module
from app.web import simworker
from app.web.routes import api

PLUGINS = {p.name: p for p in builtin()}
CASES = [(p.name, preset.slug) for p in builtin() for preset in p.sim.presets]

# Small bodies whose traces are large for their simulated work (issue 24's examples).
ONE_REQUEST_MANY_BLOCKS = {
    "config": {"num_gpu_blocks": 1_000_000},
    "requests": [{"id": "a", "prompt_tokens": 1, "max_tokens": 300}],
}
KEEPALIVE_HOUR = {
    "script": [
        {"t_ms": 0, "endpoint": "server", "call": "listen"},
        {"t_ms": 0, "endpoint": "server", "call": "accept"},
        {"t_ms": 0, "endpoint": "client", "call": "connect", "keepalive": True},
        {"t_ms": 10, "endpoint": "client", "call": "recv"},
    ],
    "sysctl": {"tcp_keepalive_time_s": 1, "tcp_keepalive_intvl_s": 1, "tcp_keepalive_probes": 9},
    "until_ms": 3_600_000,
}
VETH = {"path": "rx", "device": "veth", "packets": 8}


def _pickled(name: str, raw: dict[str, Any]) -> tuple[float, int]:
    sim = PLUGINS[name].sim
    params = sim.parse(raw)
    trace = sim.run(params)
    return sim.expected_bytes(params), len(pickle.dumps(trace, protocol=pickle.HIGHEST_PROTOCOL))


@pytest.mark.parametrize(("name", "slug"), CASES)
def test_every_preset_is_costed_on_the_trace_it_produces(name: str, slug: str) -> None:
    """The predicted bytes are never well below what the run makes (the cap holds up front)."""
    preset = PLUGINS[name].sim.preset(slug)
    assert preset is not None
    predicted, real = _pickled(name, dict(preset.params))
    assert predicted >= real / 2, f"{name}/{slug}: predicted {predicted:,.0f} B, made {real:,} B"


@pytest.mark.parametrize(
    ("name", "raw"),
    [("tcp", KEEPALIVE_HOUR), ("path", VETH), ("scheduler", ONE_REQUEST_MANY_BLOCKS)],
)
def test_small_bodies_with_large_traces_are_costed_on_them(name: str, raw: dict[str, Any]) -> None:
    """A body that simulates little but produces many frames is predicted at its size."""
    predicted, real = _pickled(name, raw)
    assert real / 2 <= predicted <= real * 4


def test_a_run_of_many_frames_is_not_a_quick_run(settings: Settings) -> None:
    """The keepalive script (7,252 simulated events, 20,001 frames, 21 MB) is expected to take
    seconds: a job with a progress bar and a charge on the client's quota, not the quick lane."""
    sim = PLUGINS["tcp"].sim
    params = sim.parse(KEEPALIVE_HOUR)
    events_only = sim.cost(params) / sim.limits.work_per_second
    assert events_only < settings.quick_run_s < settings.job_threshold_s
    assert sim.expected_seconds(params) > settings.job_threshold_s


def test_a_run_predicted_over_the_trace_cap_is_refused_before_it_starts(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs_module, "MAX_TRACE_BYTES", 1_000_000)
    with TestClient(create_app(settings)) as client:
        r = client.post("/api/v1/explainers/tcp/run", json=KEEPALIVE_HOUR)
        assert r.status_code == 422, r.text
        assert "the limit is 1 MB" in r.json()["detail"][0]["msg"]
        assert client.app.state.site.runs.running == 0  # type: ignore[attr-defined]


def test_a_trace_over_the_cap_is_refused_after_the_run(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the prediction said, a worker does not hand back a trace over the cap."""
    sim_class = type(PLUGINS["path"].sim)
    monkeypatch.setattr(sim_class, "expected_bytes", lambda self, params: 0.0)
    # the cap in the simulation processes too: forked from this process, patched before
    monkeypatch.setattr(simworker, "MAX_TRACE_BYTES", 100_000)
    monkeypatch.setattr(simworker, "START_METHOD", "fork")
    with TestClient(create_app(settings)) as client:
        r = client.post("/api/v1/explainers/path/run", json=VETH)
        assert r.status_code == 422, r.text
        assert "MB; the limit is 0.1 MB" in r.json()["detail"][0]["msg"]
        # and the server goes on
        small = {"path": "rx", "device": "nic", "packets": 1, "payload_bytes": 1000}
        assert client.post("/api/v1/explainers/path/run", json=small).status_code == 200


def test_trace_too_large_crosses_process_boundaries() -> None:
    """Raised in a simulation process, it arrives whole in the server (pickled)."""
    again = pickle.loads(pickle.dumps(TraceTooLarge(60e6)))  # noqa: S301 - our own object
    assert isinstance(again, TraceTooLarge) and again.size == 60e6
    assert "60 MB" in again.issues[0].msg


def test_the_run_api_builds_its_json_off_the_event_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new run's answer is written in its simulation process and a kept trace's in a worker
    thread: either way the response (megabytes, gzipped or not) is made with no event loop
    running on its thread."""
    seen: list[bool] = []
    real = api.FastJSONResponse

    def spy(*args: Any, **kw: Any) -> Any:
        try:
            asyncio.get_running_loop()
            seen.append(True)
        except RuntimeError:
            seen.append(False)
        return real(*args, **kw)

    monkeypatch.setattr(api, "FastJSONResponse", spy)
    r = client.post("/api/v1/explainers/path/run", json=VETH)
    assert r.status_code == 200 and r.json()["frames"]
    assert seen == [False], "encoded in a worker thread, with no event loop running there"
    site = client.app.state.site  # type: ignore[attr-defined]
    sim = site.get("path").sim
    key = site.runs.key(sim, sim.parse(VETH))
    for _ in range(600):  # stored after it answered: the same params again read it back
        if site.runs.cached(key) is not None:
            break
        time.sleep(0.05)
    again = client.post("/api/v1/explainers/path/run", json=VETH)
    assert again.json() == r.json()
    assert seen == [False, False]
