"""The printable handout (lesson, every step's narration, the marked steps' pictures), the step
list's first sentences, and the walkthrough picker of a scenario that is a preset unchanged."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.sim.core import Message
from app.web.player import transcript
from app.web.sources import encode_params


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests only read pages and run scenarios, as any visitor may: the worker's one app
    (tests/conftest.py), as a new visitor."""
    return shared_client


def _plugin(name: str):  # type: ignore[no-untyped-def]
    return next(p for p in builtin() if p.name == name)


def test_handout_has_the_lesson_every_narration_and_the_marked_pictures(client: TestClient) -> None:
    plugin = _plugin("skb")
    preset = plugin.sim.preset("clone-retransmit")
    assert preset is not None
    trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)))
    marked = [f.index for f in trace.frames if f.mark]
    assert marked, "the preset marks some steps"
    r = client.get("/explainers/skb/presets/clone-retransmit/handout")
    assert r.status_code == 200
    html = r.text
    assert "About this walkthrough" in html
    steps = re.findall(r'<li id="handout-step-(\d+)" data-step="\d+" class="([^"]*)"', html)
    assert [int(n) for n, _ in steps] == list(range(len(trace.frames)))
    assert [int(n) for n, cls in steps if cls == "drawn"] == marked
    assert html.count('<figure class="handout-picture">') == len(marked)
    assert html.count('<p class="narration">') == len(trace.frames)


def test_handout_of_a_walkthrough_without_marks_draws_its_changing_pictures(
    client: TestClient,
) -> None:
    """A walkthrough that marks no step still prints how its picture develops: the steps whose
    picture changes, bounded and spread over the run (first and last kept), and the page says
    which steps it drew; every step keeps its narration."""
    from app.web.routes.handout import MAX_UNMARKED, spread

    plugin = _plugin("tcp")
    preset = plugin.sim.preset("handshake")
    assert preset is not None
    trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)))
    assert not any(f.mark for f in trace.frames), "the preset marks no step"
    html = client.get("/explainers/tcp/presets/handshake/handout").text
    steps = re.findall(r'<li id="handout-step-(\d+)" data-step="\d+" class="([^"]*)"', html)
    drawn = [int(n) for n, cls in steps if cls == "drawn"]
    last = len(trace.frames) - 1
    assert 3 <= len(drawn) <= MAX_UNMARKED, drawn
    assert drawn[0] == 0 and drawn[-1] == last, drawn
    assert html.count('<figure class="handout-picture">') == len(drawn)
    assert html.count('<p class="narration">') == len(trace.frames)
    assert "marks no step" in html and f"at most {MAX_UNMARKED}" in html
    # each drawn picture differs from the one before it in the handout
    pictures = re.findall(r'<figure class="handout-picture">(.*?)</figure>', html, re.S)
    assert all(a != b for a, b in zip(pictures, pictures[1:], strict=False))
    zh = client.get("/explainers/tcp/presets/handshake/handout?lang=zh-CN").text
    assert "marks no step" not in zh and 'id="handout-rule"' in zh
    assert spread(list(range(100)), 5) == [0, 25, 50, 74, 99]
    assert spread([3, 4], 12) == [3, 4]


def test_handout_of_custom_params_and_a_bad_preset(client: TestClient) -> None:
    plugin = _plugin("tcp")
    preset = plugin.sim.preset("handshake")
    assert preset is not None
    token = encode_params(dict(preset.params))
    r = client.get(f"/explainers/tcp/custom/handout?p={token}")
    assert r.status_code == 200 and 'id="handout-step-0"' in r.text
    assert client.get("/explainers/tcp/presets/no-such/handout").status_code == 404
    page = client.get("/explainers/tcp/presets/handshake").text
    assert 'href="/explainers/tcp/presets/handshake/handout"' in page


def test_step_list_sentence_ends_at_a_full_stop_not_inside_a_file_name() -> None:
    class F:
        index, time, mark, op = 0, None, None, "call"

        def __init__(self, text: str) -> None:
            self.narration = Message(text, {})

    lines = transcript((F("tcp_v4_connect() in net/ipv4/tcp_ipv4.c picks a port. Then more."),))  # type: ignore[arg-type]
    assert lines[0]["text"] == "tcp_v4_connect() in net/ipv4/tcp_ipv4.c picks a port."


def test_picker_names_the_preset_a_custom_scenario_repeats(client: TestClient) -> None:
    preset = _plugin("tcp").sim.preset("handshake")
    assert preset is not None
    page = client.get(f"/explainers/tcp/custom?p={encode_params(dict(preset.params))}").text
    picker = page.split("data-navigate", 1)[1].split("</select>", 1)[0]
    assert "Custom scenario" not in picker
    assert re.search(r'presets/handshake" selected', picker), picker
