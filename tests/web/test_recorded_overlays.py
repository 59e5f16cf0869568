"""The recorded overlays' web halves (issue 23): the cwnd and path views declare a
RecordingView for their kinds, and one step of each, with its narration and what is drawn once,
reads in English and in Chinese with no English catalog text left on the Chinese page."""

from __future__ import annotations

import html
import json
import re
from typing import Any
from xml.etree import ElementTree

import pytest

from app.explainers import builtin
from app.sim.congestion import parse, run
from app.sim.core.i18n import reader_gettext
from app.web import i18n
from tests.i18n.leaks import english_in
from tests.sim.path.pathrec import nic_drop, nic_rx, recording, veth_tx

CJK = re.compile(r"[\u4e00-\u9fff]")
PLUGINS = {p.sim.name: p for p in builtin()}


def _cwnd_recording() -> dict[str, Any]:
    raw = {
        "link": {"rate_mbps": 10, "rtt_ms": 30, "buffer_bytes": 40_000},
        "flows": [{"cc": "cubic"}],
        "duration_s": 8,
        "sample_ms": 4,
    }
    flow = run(parse(raw)).series["flows"][0]
    return {
        "kind": "cwnd",
        "link": {"rate_mbit": 10, "rtt_ms": 30, "buffer_bytes": 40_000, "mtu": 1500},
        "kernel": {"release": "6.4.0-test"},
        "duration_ms": 8000,
        "flows": [
            {
                "cc": "cubic",
                "src": "10.0.0.1:40000",
                "dst": "10.0.0.2:5201",
                "series": [
                    {"t_ms": t * 1000, "cwnd": c, "ssthresh": s, "srtt_us": r * 1000}
                    for t, c, s, r in zip(
                        flow["t"], flow["cwnd"], flow["ssthresh"], flow["srtt_ms"], strict=True
                    )
                ],
            }
        ],
    }


def _render(name: str, rec: dict[str, Any], lang: str, kind: str) -> tuple[str, str, str]:
    """(picture of the first step of ``kind`` (else the first), static, its narration)."""
    view = PLUGINS[name].web.recording
    assert view is not None
    trace = view.trace(rec, {})
    frame = next((f for f in trace.frames if f.op == kind), trace.frames[0])
    token, reader = i18n.use(lang), reader_gettext.set(i18n.gettext_for(lang))
    try:
        static = view.static(trace) if view.static else ""
        return view.picture(trace, frame), static, i18n.render(frame.narration)
    finally:
        reader_gettext.reset(reader)
        i18n.reset(token)


def test_views_declare_their_recording_kinds() -> None:
    kinds = {n: p.web.recording.kinds for n, p in PLUGINS.items() if p.web.recording}
    assert kinds["cwnd"] == ("cwnd",)
    assert kinds["path"] == ("path",)


CASES = [
    ("cwnd", _cwnd_recording, "tcp_probe"),  # a reduction the machine made
    ("path", lambda: recording(veth_tx(), nic_rx(), nic_drop()), "net:net_dev_queue"),
    ("path", lambda: recording(nic_rx(), nic_drop()), "skb:kfree_skb"),
]


@pytest.mark.parametrize(("name", "make", "kind"), CASES)
def test_a_step_in_english(name: str, make: Any, kind: str) -> None:
    picture, static, words = _render(name, make(), "en", kind)
    assert not CJK.search(picture + static + words)
    if name == "cwnd":
        assert "the machine reduces its window" in picture
        assert 'data-side="machine"' in picture and 'data-side="model"' in picture
        # the comparison table and the chart of both sides
        assert 'data-metric="decrease"' in static and "Machine and model side by side" in static
        figure = re.search(
            r'<script type="application/json" id="cwnd-chart-figure">(.*?)</script>', static
        )
        assert figure is not None
        groups = {
            t["legendgrouptitle"]["text"]
            for t in json.loads(figure.group(1))["data"]
            if "legendgrouptitle" in t
        }
        assert {"machine · cubic", "model · cubic"} <= groups
        assert "cubic multiplies by 0.7 on a loss" in words
    else:
        assert 'id="rec-stack-recorded"' in picture and 'id="rec-stack-model"' in picture
        assert re.search(r'<li class="both[^"]*" data-function="__dev_queue_xmit"', picture) or (
            "kfree_skb_reason" in picture
        )
        assert "The model skips:" in picture and "The recording lacks:" in picture
        assert "walk that models its path" in static


@pytest.mark.parametrize(("name", "make", "kind"), CASES)
def test_a_step_in_chinese_has_no_english_catalog_text(name: str, make: Any, kind: str) -> None:
    picture, static, words = _render(name, make(), "zh-CN", kind)
    for part in (picture, static, words):
        assert CJK.search(part), part[:200]
    assert english_in(picture) == []
    assert english_in(static) == []
    assert english_in(f"<p>{html.escape(words)}</p>") == []
    if name == "path":
        # the function names stay the kernel's, in both stacks
        root = ElementTree.fromstring(
            re.sub(r"<style>.*?</style>", "", picture).replace("&", "&amp;")
        )
        names = [li.get("data-function") for li in root.iter("li")]
        assert names and all(n and re.fullmatch(r"[\w.]+", n) for n in names)
