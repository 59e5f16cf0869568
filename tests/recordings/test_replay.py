"""Replay in the model: the nearest TCP params of a capture, the model's run, the differences."""

from __future__ import annotations

from app.recordings.parse import parse
from app.sim.tcp import TcpExplainer
from app.sim.tcp.recorded import build
from app.sim.tcp.replay import model_states, nearest_params, replay
from app.web.explainers.tcp.recording import replay_panel
from tests.recordings.pcaps import A, B, K, P, handshake_data_close, pcap, segment


def test_nearest_params_come_from_the_capture() -> None:
    raw = nearest_params(parse(pcap(handshake_data_close()), "capture"))
    assert raw is not None
    assert (raw["rtt_ms"], raw["mss"], raw["client_iss"], raw["server_iss"]) == (
        10.0,
        1460,
        1000,
        5000,
    )
    calls = [(c["t_ms"], c["endpoint"], c["call"]) for c in raw["script"]]
    assert (21.0, "client", "send") in calls and (40.0, "client", "close") in calls
    assert (60.0, "server", "close") in calls
    TcpExplainer().parse(raw)  # the model takes them as they are


def test_the_model_and_the_machine_are_compared() -> None:
    found = replay(parse(pcap(handshake_data_close()), "capture"))
    assert found is not None
    assert (
        found["machine"]["client"][:3]
        == found["model"]["client"][:3]
        == [
            "SYN_SENT",
            "ESTABLISHED",
            "FIN_WAIT_1",
        ]
    )
    for ep, first in found["differ"].items():
        a, b = found["machine"][ep], found["model"][ep]
        assert a[:first] == b[:first] and a[first : first + 1] != b[first : first + 1]
    sim = TcpExplainer()
    run = sim.run(sim.parse(found["params"]))
    assert model_states(run) == found["model"]


def test_no_replay_without_a_handshake_and_the_panel_shows_it_when_there_is_one() -> None:
    midstream = parse(pcap([segment(0, A, B, P | K, 1, 1, data=b"x")]), "capture")
    assert replay(midstream) is None
    assert replay_panel(build(midstream, {})) == ""
    html = replay_panel(build(parse(pcap(handshake_data_close()), "capture"), {}))
    assert 'id="replay-link"' in html and "/explainers/tcp/custom?p=" in html


def test_the_step_where_the_model_differs_carries_a_note() -> None:
    recording = parse(pcap(handshake_data_close()), "capture")
    trace = build(recording, {})
    found = trace.summary["replay"]
    noted = [f for f in trace.frames if any("Replayed in the model" in n for n in f.notes)]
    assert len(noted) == len(found["differ"])
    for frame in noted:
        assert any(ep in frame.state["moved"] for ep in found["endpoints"].values())
