"""The congestion-control explainer over HTTP: the API contract, the player, compare mode."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi.testclient import TestClient

ISSUE_EXAMPLE = {
    "link": {"rate_mbps": 100, "rtt_ms": 40, "buffer_packets": 333},
    "flows": [{"cc": "cubic", "start_s": 0}],
    "duration_s": 4,
    "mss": 1448,
    "seed": 0,
}


def test_run_returns_the_series_contract(client: TestClient) -> None:
    """POST /api/v1/explainers/cwnd/run returns flows (t, cwnd, ssthresh, srtt_ms, pacing_mbps, events), queue and summary."""
    r = client.post("/api/v1/explainers/cwnd/run", json=ISSUE_EXAMPLE)
    assert r.status_code == 200, r.text
    body = r.json()
    flow = body["flows"][0]
    assert flow["cc"] == "cubic"
    for key in ("t", "cwnd", "ssthresh", "srtt_ms", "pacing_mbps", "events"):
        assert key in flow
    n = len(flow["t"])
    assert n == len(flow["cwnd"]) == len(flow["srtt_ms"]) == len(flow["pacing_mbps"])
    # sampled every sample_ms (default 10 ms)
    assert abs((flow["t"][1] - flow["t"][0]) - 0.010) < 1e-9
    assert set(body["queue"]) >= {"t", "packets", "drops"}
    assert "goodput_mbps" in body["summary"]["flows"][0]


def test_sample_ms_changes_the_sampling(client: TestClient) -> None:
    """sample_ms sets the spacing of the time series."""
    body = client.post(
        "/api/v1/explainers/cwnd/run", json={**ISSUE_EXAMPLE, "sample_ms": 50}
    ).json()
    t = body["flows"][0]["t"]
    assert abs((t[1] - t[0]) - 0.050) < 1e-9


def test_bad_input_names_the_field(client: TestClient) -> None:
    """Non-positive rate, no flows, unknown cc and a duration over 600 s each answer 422 naming the field."""
    cases = [
        (
            {**ISSUE_EXAMPLE, "link": {"rate_mbps": 0, "rtt_ms": 40, "buffer_packets": 10}},
            ["body", "link", "rate_mbps"],
        ),
        ({**ISSUE_EXAMPLE, "flows": []}, ["body", "flows"]),
        ({**ISSUE_EXAMPLE, "flows": [{"cc": "vegas"}]}, ["body", "flows", 0, "cc"]),
        ({**ISSUE_EXAMPLE, "duration_s": 601}, ["body", "duration_s"]),
    ]
    for body, loc in cases:
        r = client.post("/api/v1/explainers/cwnd/run", json=body)
        assert r.status_code == 422, body
        assert any(d["loc"] == loc for d in r.json()["detail"]), r.json()


def test_player_page_has_charts_with_a_cursor_and_event_steps(client: TestClient) -> None:
    """A cwnd walkthrough renders the Plotly chart (fixed div id), its cursor, and one step per event."""
    html = client.get("/explainers/cwnd/presets/reno-sawtooth").text
    assert 'id="cwnd-chart"' in html
    assert "/vendor/plotly/plotly.min.js" in html
    times = re.findall(r'<template id="frame-\d+"[^>]* data-time="([0-9.]+)"', html)
    assert len(times) >= 3
    assert [float(t) for t in times] == sorted(float(t) for t in times)


def test_multi_flow_preset_shows_fairness(client: TestClient) -> None:
    """A preset with several flows adds the fairness view with Jain's index."""
    html = client.get("/explainers/cwnd/presets/cubic-vs-reno").text
    assert 'id="fairness-chart"' in html
    assert "Jain" in html


def test_compare_mode_draws_one_chart_per_algorithm(client: TestClient) -> None:
    """/explainers/cwnd/compare runs each chosen algorithm on the same link, one chart each."""
    r = client.get("/explainers/cwnd/compare?algos=reno,cubic&duration_s=5")
    assert r.status_code == 200
    assert (
        'id="compare-0"' in r.text and 'id="compare-1"' in r.text and 'id="compare-2"' not in r.text
    )
    assert 'id="time-cursor"' in r.text


def test_compare_rejects_bad_choices(client: TestClient) -> None:
    """Unknown or too few algorithms, or a bad link, answer 422 naming the query field."""
    r = client.get(
        "/explainers/cwnd/compare?algos=cubic,foo", headers={"accept": "application/json"}
    )
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["query", "algos"]
    assert client.get("/explainers/cwnd/compare?algos=cubic").status_code == 422
    r = client.get("/explainers/cwnd/compare?rate_mbps=0", headers={"accept": "application/json"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "rate_mbps"]
    assert client.get("/explainers/cwnd/compare?rate_mbps=abc").status_code == 422


def test_plotly_js_is_served_from_the_wheel(client: TestClient) -> None:
    """plotly.min.js comes from the installed plotly package, not from the repository."""
    r = client.get("/vendor/plotly/plotly.min.js")
    assert r.status_code == 200 and len(r.content) > 1_000_000


def test_compare_errors_keep_the_form_on_screen(client: TestClient) -> None:
    """In the browser a bad compare query shows the form with the problem (422, or 200 for htmx)."""
    r = client.get("/explainers/cwnd/compare?rate_mbps=0")
    assert r.status_code == 422
    assert 'class="compare-form"' in r.text and "rate_mbps" in r.text
    r = client.get("/explainers/cwnd/compare?algos=reno", headers={"HX-Request": "true"})
    assert r.status_code == 200 and "choose 2 or 3" in r.text


def test_step_card_says_which_cubic_target_drives_cwnd(client: TestClient) -> None:
    """CUBIC steps say whether the cubic curve or the Reno-friendly estimate sets the growth."""
    html = client.get("/explainers/cwnd/presets/cubic-lfn").text
    assert 'data-driver="cubic"' in html
    html = client.get("/explainers/cwnd/presets/shallow-buffer").text
    assert "data-driver=" in html
    bbr = client.get("/explainers/cwnd/presets/bbr-cycle").text
    assert "pacing gain" in bbr and "min_rtt" in bbr


ZH = {"accept-language": "zh-CN,zh;q=0.9"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def _figure(html: str, div_id: str) -> dict[str, Any]:
    """The Plotly figure JSON embedded for ``div_id``."""
    m = re.search(
        rf'<script type="application/json" id="{div_id}-figure">(.*?)</script>', html, re.S
    )
    assert m, div_id
    figure: dict[str, Any] = json.loads(m.group(1).replace("<\\/", "</"))
    return figure


def test_charts_speak_the_request_language(client: TestClient) -> None:
    """In Chinese the subplot titles, axis title, legend names and event hovers are Chinese
    (the figures are the same numbers): the i18n issue's "chart titles, axis labels, legends"."""
    en = client.get("/explainers/cwnd/presets/cubic-vs-reno").text
    zh = client.get("/explainers/cwnd/presets/cubic-vs-reno", headers=ZH).text
    fe, fz = _figure(en, "cwnd-chart"), _figure(zh, "cwnd-chart")
    titles_en = [a["text"] for a in fe["layout"]["annotations"]]
    titles_zh = [a["text"] for a in fz["layout"]["annotations"]]
    assert "cwnd (segments)" in titles_en and "cwnd（段）" in titles_zh
    assert fz["layout"]["xaxis4"]["title"]["text"] == "时间（s）"
    names = [t.get("name", "") for t in fz["data"]]
    assert "流 0 cubic cwnd" in names and "流 1 reno cwnd" in names
    assert [t.get("y") for t in fe["data"]] == [t.get("y") for t in fz["data"]]
    hovers = [h for t in fz["data"] for h in (t.get("hovertext") or ())]
    assert hovers and all(CJK.search(h) for h in hovers)
    assert "Jain 公平性指数" in _figure(zh, "fairness-chart")["layout"]["title"]["text"]
    assert "有效吞吐 Mbit/s" in zh and "Summary of the whole run" not in zh


def test_step_card_and_compare_page_in_chinese(client: TestClient) -> None:
    """The per-step card, the compare page and its problems read in Chinese when asked."""
    bbr = client.get("/explainers/cwnd/presets/bbr-cycle", headers=ZH).text
    assert "pacing 增益" in bbr and "BBR 模式" in bbr and "CA 状态" in bbr
    cubic = client.get("/explainers/cwnd/presets/cubic-lfn", headers=ZH).text
    assert "由三次曲线驱动 cwnd" in cubic
    page = client.get("/explainers/cwnd/compare?algos=reno,cubic&duration_s=5", headers=ZH).text
    assert "在同一条链路上对比算法" in page and "所有图共用的时间游标" in page
    bad = client.get(
        "/explainers/cwnd/compare?algos=reno", headers={**ZH, "HX-Request": "true"}
    ).text
    assert "请从 reno, cubic, bbr 中选择 2 或 3 个不同的算法" in bad
    rate = client.get("/explainers/cwnd/compare?rate_mbps=0", headers=ZH).text
    assert "你给的是" in rate and "you gave" not in rate
