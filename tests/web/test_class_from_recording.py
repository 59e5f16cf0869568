"""A live class on a user's recording (issue 27): "Start a class" on ``/r/{id}`` posts that
page, the class follows the trace the recording's view builds, students at ``/c/{code}`` see the
recording's steps and pictures where the lecturer moves them, and the presenter's "ask" is
disabled with its reason (a recording's view asks no questions)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from tests.recordings.pcaps import handshake_data_close, pcap

PCAP = "application/vnd.tcpdump.pcap"


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(database_url=db_url)


def upload(client: TestClient) -> str:
    r = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    )
    assert r.status_code == 201, r.text
    rid: str = r.json()["id"]
    return rid


def narration(page: str) -> str:
    found = re.search(r'<aside id="side".*?<p class="narration">(.*?)</p>', page, re.S)
    assert found, "no narration in the side panel"
    return html.unescape(found.group(1))


def start_from(client: TestClient, page: str) -> dict[str, Any]:
    """What the player's "Start a class" button posts: its ``data-scenario``."""
    found = re.search(r'id="class-start" data-scenario="([^"]+)"', page)
    assert found, "the recording's player has no Start a class button"
    r = client.post("/api/v1/classes", json={"scenario": html.unescape(found.group(1))})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def test_a_class_follows_a_recording_where_the_lecturer_moves_it(client: TestClient) -> None:
    rid = upload(client)
    player = client.get(f"/r/{rid}?lang=en")
    assert player.status_code == 200
    c = start_from(client, player.text)
    status = client.get(f"/api/v1/classes/{c['id']}").json()
    assert status["page"] == f"/r/{rid}" and status["count"] == 9  # one step per segment
    step5 = narration(client.get(f"/r/{rid}?step=5&lang=en").text)
    assert "F." in step5  # the recording's FIN, not a model run's step

    before = client.get(f"/c/{c['code']}?lang=en").text
    assert narration(before) == narration(player.text) and narration(before) != step5
    moved = client.post(
        f"/api/v1/classes/{c['id']}/step",
        json={"step": 5},
        headers={"Authorization": f"Bearer {c['lecturer_token']}"},
    )
    assert moved.status_code == 204, moved.text
    student = client.get(f"/c/{c['code']}?lang=en")
    assert student.status_code == 200
    assert narration(student.text) == step5
    assert 'data-step="5"' in student.text
    assert f'data-frames-url="/r/{rid}/frames"' in student.text  # the rest of its steps
    assert f'href="/r/{rid}/export/png?step=5' in student.text  # the recording's pictures
    assert 'id="class-start"' not in student.text  # no class inside a class


def test_the_presenter_cannot_ask_a_recording_and_says_why(client: TestClient) -> None:
    rid = upload(client)
    c = start_from(client, client.get(f"/r/{rid}").text)
    for lang, reason in (("en", "No questions here"), ("zh-CN", "这里不能提问")):
        page = client.get(f"{c['presenter_url']}?lang={lang}").text
        button = re.search(r'<button[^>]*id="class-ask"[^>]*>', page)
        assert button and " disabled" in button.group(0) and reason in button.group(0)
        assert re.search(r'id="class-ask-status"[^>]*>[^<]*' + reason, page)
    asked = client.post(
        f"/api/v1/classes/{c['id']}/questions",
        json={"step": 2},
        headers={"Authorization": f"Bearer {c['lecturer_token']}"},
    )
    assert asked.status_code == 422 and asked.json()["detail"][0]["loc"] == ["body", "step"]
    # a walkthrough that asks keeps its button
    walk = client.post("/api/v1/classes", json={"scenario": "tcp/handshake"}).json()
    page = client.get(walk["presenter_url"]).text
    button = re.search(r'<button[^>]*id="class-ask"[^>]*>', page)
    assert button and " disabled" not in button.group(0)


def test_unknown_recordings_and_refused_overrides_name_the_scenario(client: TestClient) -> None:
    rid = upload(client)
    gone = client.post("/api/v1/classes", json={"scenario": "/r/nosuchrecording"})
    assert gone.status_code == 422 and gone.json()["detail"][0]["loc"] == ["body", "scenario"]
    assert "recording" in gone.json()["detail"][0]["msg"]
    refused = client.post("/api/v1/classes", json={"scenario": f"/r/{rid}?rtt_ms=5"})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"][:2] == ["body", "scenario"]


def test_a_class_keeps_the_overrides_of_the_recordings_view(client: TestClient) -> None:
    """A cwnd recording opened with the link edited (RTT 80 ms): the class's page is that
    view, so students see the model run over the edited link, not the recording's own."""
    events = [
        {
            "t_ms": 40.0 * i,
            "event": "tcp:tcp_probe",
            "fields": {
                "src": "10.0.0.1:40312",
                "dest": "10.0.0.2:5201",
                "snd_cwnd": str(10 + i),
                "ssthresh": "2147483647",
                "srtt": "40000",
            },
        }
        for i in range(20)
    ]
    r = client.post("/api/v1/recordings", json=recording_of("cwnd", events))
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    edited = client.get(f"/r/{rid}?rtt_ms=80&rate_mbit=5&step=3&lang=en")
    plain = client.get(f"/r/{rid}?step=3&lang=en")
    assert narration(edited.text) != narration(plain.text)
    c = start_from(client, edited.text)
    assert client.get(f"/api/v1/classes/{c['id']}").json()["page"].startswith(f"/r/{rid}?o=")
    client.post(
        f"/api/v1/classes/{c['id']}/step",
        json={"step": 3},
        headers={"Authorization": f"Bearer {c['lecturer_token']}"},
    )
    student = client.get(f"/c/{c['code']}?lang=en").text
    assert narration(student) == narration(edited.text)
    assert f'data-frames-url="/r/{rid}/frames?o=' in student


def recording_of(kind: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": "stepscope-recording",
        "schema": 1,
        "kind": kind,
        "kernel": {"release": "6.4.0", "machine": "x86_64"},
        "sysctls": {"net.ipv4.tcp_congestion_control": "cubic"},
        "link": None,
        "flows": [],
        "events": events,
    }
