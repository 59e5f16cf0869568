"""The congestion-control options on the page: presets, lessons, marks, card and editor."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

ZH = {"accept-language": "zh-CN,zh;q=0.9"}


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests only read pages and run scenarios, as any visitor may: the worker's one app
    (tests/conftest.py), as a new visitor."""
    return shared_client


def test_ecn_preset_page_shows_cwr_marks_lesson_and_red_counters(client: TestClient) -> None:
    """The ECN preset renders its CWR chart marks, the lesson's step notes and RED's counters,
    in English and in Chinese."""
    en = client.get("/explainers/cwnd/presets/ecn-red").text
    assert "ECN: CWR entered" in en and "tcp_enter_cwr" in en
    assert "The first ECE" in en and "packets marked CE" in en
    assert "ECN negotiated" in en
    zh = client.get("/explainers/cwnd/presets/ecn-red", headers=ZH).text
    assert "一个带 ECE 的 ACK" in zh and "第一个 ECE" in zh and "个包被标记为 CE" in zh


def test_rwnd_preset_card_shows_the_window_against_in_flight(client: TestClient) -> None:
    """The receive-window preset's card shows the window and the packets in flight."""
    en = client.get("/explainers/cwnd/presets/rwnd-limit").text
    assert "receive window 90 segments" in en and "receive window binds" in en
    zh = client.get("/explainers/cwnd/presets/rwnd-limit", headers=ZH).text
    assert "接收窗口 90 个段" in zh and "流量控制" in zh


def test_editor_offers_the_options(client: TestClient) -> None:
    """The scenario editor has fields for the queue discipline, RED, tcp_ecn, the receive
    window and how flows start, filled from the ECN preset."""
    html = client.get("/explainers/cwnd/edit?preset=ecn-red").text
    for name in ("link.aqm", "link.red_min_packets", "flows.0.tcp_ecn", "flows.0.rwnd_bytes"):
        assert f'name="{name}"' in html, name
    assert 'name="connect"' in html and "red-ecn" in html
