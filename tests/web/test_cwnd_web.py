"""The congestion-control explainer over HTTP: the API contract, the player, compare mode."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.web.explainers.cwnd.charts import EVENT_STYLE, MAX_POINTS, PLOTLY_JS, decimate

ISSUE_EXAMPLE = {
    "link": {"rate_mbps": 100, "rtt_ms": 40, "buffer_packets": 333},
    "flows": [{"cc": "cubic", "start_s": 0}],
    "duration_s": 4,
    "mss": 1448,
    "seed": 0,
}


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests read pages and run scenarios: one app for the module (tests/conftest.py)."""
    return shared_client


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


def test_pages_load_the_partial_plotly_bundle(client: TestClient) -> None:
    """Player and compare pages load plotly.js's npm "basic" bundle, never the full plotly.min.js."""
    for url in ("/explainers/cwnd/presets/slow-start", "/explainers/cwnd/compare?duration_s=3"):
        html = client.get(url).text
        assert f'src="{PLOTLY_JS}"' in html, url
        assert "plotly.min.js" not in html, url
    r = client.get(PLOTLY_JS)
    assert r.status_code == 200
    # the basic bundle (scatter, bar, pie) is about a quarter of the full 4.6 MB one
    assert 500_000 < len(r.content) < 2_000_000
    assert b"scatter" in r.content


def _figures(html: str) -> dict[str, dict[str, Any]]:
    found = re.findall(
        r'<script type="application/json" id="([^"]+)-figure">(.*?)</script>', html, re.S
    )
    return {div: json.loads(text) for div, text in found}


def test_no_chart_trace_carries_more_points_than_the_cap(client: TestClient) -> None:
    """A 60 s two-flow run sampled every 10 ms (6,000 samples a series) reaches the page
    decimated: every trace has at most MAX_POINTS points."""
    html = client.get("/explainers/cwnd/presets/cubic-vs-reno").text
    fig = _figures(html)["cwnd-chart"]
    lengths = [len(tr["x"]) for tr in fig["data"]]
    assert lengths and max(lengths) <= MAX_POINTS
    assert any(n > 500 for n in lengths)  # decimated, not thrown away
    for tr in fig["data"]:
        assert tr["type"] in ("scatter", "bar")  # what the basic bundle can draw


def test_decimation_keeps_every_peak_and_drop() -> None:
    """Min/max per pixel column: a sawtooth of 20,000 samples keeps each column's extremes,
    in time order, and gaps (None) stay gaps."""
    t = [i * 0.001 for i in range(20_000)]
    y: list[float | None] = [float(i % 1000) for i in range(20_000)]  # peaks 999, drops to 0
    y[5_000:5_100] = [None] * 100
    xs, ys = decimate(t, y, t0=0.0, t1=t[-1], buckets=100)
    assert len(xs) <= 300 and xs == sorted(xs)
    nums = [v for v in ys if v is not None]
    assert nums.count(999.0) >= 19 and nums.count(0.0) >= 19  # 20 teeth, one cut by the gap
    assert None in ys


def test_every_marker_kind_and_line_has_a_legend_entry(client: TestClient) -> None:
    """Each event kind present gets a named legend entry with its own symbol, every line is in
    the legend, and pacing and delivery rate are named apart."""
    for slug in ("cubic-vs-reno", "bbr-cycle", "slow-start"):
        html = client.get(f"/explainers/cwnd/presets/{slug}").text
        fig = _figures(html)["cwnd-chart"]
        traces = fig["data"]
        assert all(tr.get("showlegend", True) and tr.get("name") for tr in traces), slug
        run = client.post("/api/v1/explainers/cwnd/run", json=_preset_params(client, slug)).json()
        kinds = {ev["type"] for f in run["flows"] for ev in f["events"]} & set(EVENT_STYLE)
        markers = {tr["meta"]["event"]: tr for tr in traces if tr.get("mode") == "markers"}
        assert set(markers) == kinds, slug
        assert len({tr["marker"]["symbol"] for tr in markers.values()}) == len(markers)
        for kind, tr in markers.items():
            assert tr["name"] == str(EVENT_STYLE[kind][0])
        names = {tr["name"] for tr in traces}
        assert {"cwnd", "delivery rate"} <= names, slug
        assert fig["layout"]["showlegend"] is True
    bbr = _figures(client.get("/explainers/cwnd/presets/bbr-cycle").text)["cwnd-chart"]
    assert "pacing rate" in {tr["name"] for tr in bbr["data"]}


def _preset_params(client: TestClient, slug: str) -> dict[str, Any]:
    html = client.get(f"/explainers/cwnd/presets/{slug}").text
    m = re.search(r'<script type="application/json" id="share-params">(.*?)</script>', html, re.S)
    assert m, "the player page carries its parameters"
    params: dict[str, Any] = json.loads(m.group(1))
    return params.get("params", params)


def test_hover_text_is_short(client: TestClient) -> None:
    """Hovers say time, value and kind in a couple of short lines, not the step's narration."""
    fig = _figures(client.get("/explainers/cwnd/presets/cubic-lfn").text)["cwnd-chart"]
    for tr in fig["data"]:
        tpl = tr["hovertemplate"].replace("<extra></extra>", "")
        assert "%{x" in tpl
        assert all(len(line) <= 60 for line in tpl.split("<br>")), tpl
        assert "hovertext" not in tr and "text" not in tr


def test_compare_panels_share_the_y_range_and_hide_fairness(client: TestClient) -> None:
    """Compare charts use one y-range per row across panels (the largest of all runs), and,
    each panel being one flow, no Jain's fairness index is shown."""
    html = client.get("/explainers/cwnd/compare?algos=reno,cubic,bbr&duration_s=5").text
    figs = _figures(html)
    panels = [figs[f"compare-{i}"] for i in range(3)]
    for axis in ("yaxis", "yaxis2", "yaxis3", "yaxis4"):
        ranges = {tuple(p["layout"][axis]["range"]) for p in panels}
        assert len(ranges) == 1, axis
    top = panels[0]["layout"]["yaxis4"]["range"][1]  # the cwnd row
    peak = max(
        max(v for v in tr["y"] if v is not None)
        for p in panels
        for tr in p["data"]
        if tr["yaxis"] == "y4"
    )
    assert peak <= top < 2.5 * peak
    assert "Jain" not in html and "fairness" not in html


def test_single_flow_walkthrough_hides_fairness(client: TestClient) -> None:
    """One flow has nothing to be fair to: the summary leaves Jain's index out."""
    html = client.get("/explainers/cwnd/presets/slow-start").text
    assert "Jain" not in html and 'id="fairness-chart"' not in html


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
    groups = {t.get("legendgrouptitle", {}).get("text") for t in fz["data"]}
    assert {"流 0 · cubic", "流 1 · reno", "事件（所有流）"} <= groups
    names = {t.get("name") for t in fz["data"]}
    assert {"检测到丢包", "平滑 RTT"} <= names
    assert [t.get("y") for t in fe["data"]] == [t.get("y") for t in fz["data"]]
    hovers = [t["hovertemplate"] for t in fz["data"] if t.get("hovertemplate")]
    assert hovers and all(CJK.search(h) for h in hovers)
    # units are catalog words too: a cwnd line's hover reads in 段, the bars name 流 N
    cwnd_zh = next(t for t in fz["data"] if t.get("name") == "cwnd")
    cwnd_en = next(t for t in fe["data"] if t.get("name") == "cwnd")
    assert cwnd_zh["hovertemplate"].endswith(" 段<extra></extra>"), cwnd_zh["hovertemplate"]
    assert cwnd_en["hovertemplate"].endswith(" segments<extra></extra>")
    fair_zh, fair_en = _figure(zh, "fairness-chart"), _figure(en, "fairness-chart")
    assert fair_zh["data"][0]["x"] == ["流 0 cubic", "流 1 reno"], fair_zh["data"][0]["x"]
    assert fair_en["data"][0]["x"] == ["flow 0 cubic", "flow 1 reno"]
    assert "Jain 公平性指数" in fair_zh["layout"]["title"]["text"]
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


def test_step_svg_export_has_the_chart_and_the_card_styles(client: TestClient) -> None:
    """The step as SVG carries the cwnd chart (drawn server-side: plotly.js only runs in the
    page), its cursor at the step, the step's card, and the view's own stylesheet."""
    r = client.get("/export/svg?explainer=cwnd&preset=reno-sawtooth&step=19")
    assert r.status_code == 200
    svg = r.text
    assert 'class="cwnd-thumb"' in svg and "<polyline" in svg
    assert 'id="cwnd-moment"' in svg
    assert ".cwnd-moment {" in svg  # static/explainers/cwnd/cwnd.css, inlined
    player = client.get("/explainers/cwnd/presets/reno-sawtooth?step=19").text
    assert 'class="cwnd-thumb"' not in player  # the page draws its charts with plotly.js


def _quoted(message: Any, out: dict[str, Any]) -> dict[str, Any]:
    """Every value a narration quotes, nested messages included (the first of each name)."""
    for key, value in message.params.items():
        if hasattr(value, "params"):
            _quoted(value, out)
        else:
            out.setdefault(key, value)
    return out


def test_step_card_readouts_equal_the_narration_numbers() -> None:
    """For every step of every preset the card beside the chart reads the step's own numbers,
    the ones its narration quotes (cwnd, CA state, BBR's mode, bandwidth and min_rtt), not the
    10 ms sample after it: slow-start step 5 reads cwnd 160 beside "80 → 160"."""
    from app.explainers import builtin
    from app.web.explainers.cwnd.picture import picture

    plugin = next(p for p in builtin() if p.name == "cwnd")
    checked = 0
    for preset in plugin.sim.presets:
        trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)))
        for frame in trace.frames:
            html, state = picture(trace, frame), frame.state
            said = _quoted(frame.narration, {})
            where = (preset.slug, frame.index, frame.op)
            cwnd = re.search(r'data-cwnd="([^"]*)"', html)
            assert cwnd is not None, where
            assert f"cwnd {cwnd.group(1)} segments" in html, where
            assert cwnd.group(1) == str(state.get("cwnd")), where
            if "cwnd" in said:
                assert cwnd.group(1) == str(said["cwnd"]), (where, said["cwnd"])
                checked += 1
            on = re.findall(r'<li class="pill on" aria-current="true">([^<]*)</li>', html)
            assert on and on[0] == state.get("ca_state"), (where, on)
            if frame.op == "bbr_mode":
                assert on[1] == said["new"], (where, on)
                model = re.search(r"max bw ([\d.]+) Mbit/s · min_rtt ([\d.]+) ms", html)
                assert model is not None, where
                bw, rtt = frame.state["bw_mbps"], frame.state["min_rtt_ms"]  # type: ignore[typeddict-item]
                assert model.groups() == (f"{bw:.1f}", f"{rtt:.2f}"), where
                if "min_rtt" in said:
                    assert model.group(2) == said["min_rtt"], where
    assert checked > 100  # steps whose narration quotes a cwnd


def test_slow_start_step_5_reads_the_events_cwnd(client: TestClient) -> None:
    """The walkthrough's step 5 says cwnd grew 80 → 160; the card says 160 (its 10 ms sample
    already read 176)."""
    html = client.get("/explainers/cwnd/presets/slow-start?step=5").text
    card = html[html.index('id="cwnd-moment"') :]
    assert "80 → 160" in html and "cwnd 160 segments" in card[:600]


def test_bunched_steps_zoom_the_chart(client: TestClient) -> None:
    """BBR's walkthrough has 16 of its 20 steps in its first second of 25: those steps share one
    zoom window (less than a second wide), the PROBE_RTT pairs at 10 s and 20 s get their own,
    and the figure samples each window finer, still under the point cap."""
    from app.web.explainers.cwnd.charts import decimate_zoomed, zoom_windows

    html = client.get("/explainers/cwnd/presets/bbr-cycle?step=5").text
    found = re.search(r'class="chart" data-cursor="1" data-zoom="([^"]+)"', html)
    assert found is not None
    zoom = json.loads(found.group(1).replace("&#34;", '"').replace("&quot;", '"'))
    windows, steps = zoom["windows"], zoom["steps"]
    assert zoom["full"] == [0.0, 25.0] and len(steps) == 20
    first = windows[steps[5]]
    assert steps[:16] == [steps[5]] * 16 and first[0] == 0.0 and first[1] < 1.0
    assert [w[0] <= 10.04 <= w[1] for w in windows].count(True) == 1
    assert steps[16] == steps[17] != steps[5] and steps[18] == steps[19] != steps[16]
    # steps spread over the whole run (Reno's sawtooth) keep the whole run's axis
    assert zoom_windows([0.0, 10.0, 20.0, 30.0, 40.0], 0.0, 40.0) == ([], [-1] * 5)
    t = [i / 100 for i in range(2500)]
    xs, ys = decimate_zoomed(t, t, t0=0.0, t1=25.0, windows=[tuple(w) for w in windows])
    assert len(xs) <= MAX_POINTS and xs == sorted(xs)
    inside = [x for x in xs if first[0] <= x <= first[1]]
    assert len(inside) >= 80  # every 10 ms sample of the stretch, not 2 per 50 ms column
