"""The vLLM scheduler explainer over HTTP: the run API's shape and validation, every preset's
player, the picture marking what the narration says, the editor and the compare page."""

from __future__ import annotations

import html as htmllib
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.sim.serving import SchedulerExplainer
from app.sim.serving.presets import PRESETS
from app.sim.serving.stepedits import decode_answer
from app.web.explainers.scheduler import EDITOR
from app.web.explainers.scheduler import derive as dv
from app.web.explainers.scheduler.picture import picture

API = "/api/v1/explainers/scheduler/run"
# A small mixed workload in the shape of the issue's request body: vLLM config names, requests
# with prompt and output lengths, staggered arrivals.
ISSUE_EXAMPLE = {
    "config": {
        "max_num_batched_tokens": 256,
        "max_num_seqs": 4,
        "block_size": 16,
        "num_gpu_blocks": 64,
        "enable_chunked_prefill": True,
        "enable_prefix_caching": True,
        "policy": "fcfs",
        "max_model_len": 512,
    },
    "requests": [
        {"id": "r1", "prompt_tokens": 200, "max_tokens": 20},
        {"id": "r2", "prompt_tokens": 120, "max_tokens": 8, "arrival_step": 1},
        {"id": "r3", "prompt_tokens": 30, "max_tokens": 12, "arrival_step": 2, "priority": 1},
    ],
}
STEP_KEYS = {
    "step",
    "scheduled",
    "preempted",
    "finished",
    "running",
    "waiting",
    "kv_blocks_used",
    "kv_usage",
    "prefix_hit_tokens",
}
REQUEST_KEYS = {"id", "ttft", "tpot", "e2e", "num_preemptions", "finish_reason"}


def test_run_returns_steps_requests_and_summary(client: TestClient) -> None:
    """POST …/scheduler/run answers steps[] (the issue's keys), requests[] (latency, preemptions,
    finish reason) and a summary; every prompt and output token is scheduled exactly once."""
    r = client.post(API + "?form=full", json=ISSUE_EXAMPLE)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {"steps", "requests", "summary"}
    assert "steps_encoding" not in body
    assert body["steps"] and all(STEP_KEYS <= set(s) for s in body["steps"])
    assert [q["id"] for q in body["requests"]] == ["r1", "r2", "r3"]
    for q in body["requests"]:
        assert REQUEST_KEYS <= set(q)
        assert q["finish_reason"] == "length" and q["num_preemptions"] == 0
        assert 0 < q["ttft"] <= q["e2e"]
    # No preemption and no shared prefix: each request computes its prompt and every output
    # token but the last (the last is sampled and never fed back).
    total = sum(n for s in body["steps"] for n in s["scheduled"].values())
    assert total == (200 + 20 - 1) + (120 + 8 - 1) + (30 + 12 - 1)
    assert all(n <= 256 for s in body["steps"] for n in [sum(s["scheduled"].values())])
    assert body["steps"][-1]["running"] == [] and body["steps"][-1]["waiting"] == []


def test_the_default_answer_is_compact_and_decodes_to_the_full_one(client: TestClient) -> None:
    """Without ``form`` the steps' lists come as edits (``"steps_encoding": "edits"``): decoded
    (app.sim.serving.stepedits), the answer is the ``?form=full`` one; ``form`` is checked."""
    compact = client.post(API, json=ISSUE_EXAMPLE)
    full = client.post(API + "?form=full", json=ISSUE_EXAMPLE)
    assert compact.status_code == full.status_code == 200
    body = compact.json()
    assert body["steps_encoding"] == "edits"
    assert all("running_edit" in s and "running" not in s for s in body["steps"])
    assert decode_answer(body) == full.json()
    assert body["requests"] == full.json()["requests"]
    bad = client.post(API + "?form=short", json=ISSUE_EXAMPLE)
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "form"]


def test_openapi_describes_the_compact_form(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    run = spec["paths"]["/api/v1/explainers/{name}/run"]["post"]
    form = next(p for p in run["parameters"] if p["name"] == "form")
    assert form["schema"]["enum"] == ["compact", "full"]
    assert "`scheduler`:" in form["description"] and "waiting_edit" in form["description"]


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        (lambda b: b["requests"].append(dict(b["requests"][0])), ["body", "requests", 3, "id"]),
        (
            lambda b: b["requests"][1].update(prompt_tokens=0),
            ["body", "requests", 1, "prompt_tokens"],
        ),
        (lambda b: b["requests"][2].update(max_tokens=-4), ["body", "requests", 2, "max_tokens"]),
        (
            lambda b: b["requests"][0].update(prompt_tokens=600),
            ["body", "requests", 0, "prompt_tokens"],
        ),
        (
            # the count is checked before the items (so the body stays under the 1 MB cap)
            lambda b: b.update(requests=[{}] * 50_001),
            ["body", "requests"],
        ),
    ],
    ids=[
        "duplicate-id",
        "zero-prompt",
        "negative-max-tokens",
        "prompt-over-max-model-len",
        "too-many",
    ],
)
def test_bad_input_is_422_naming_the_field(client: TestClient, change, loc) -> None:  # type: ignore[no-untyped-def]
    """Duplicate ids, non-positive lengths, a prompt of max_model_len (512) or more and over
    50,000 requests answer 422 with the field's location."""
    body = {
        "config": dict(ISSUE_EXAMPLE["config"]),
        "requests": [dict(q) for q in ISSUE_EXAMPLE["requests"]],
    }
    change(body)
    r = client.post(API, json=body)
    assert r.status_code == 422, r.text
    assert any(d["loc"] == loc for d in r.json()["detail"]), r.json()


def _frames(html: str) -> dict[int, str]:
    return {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r'<template id="frame-(\d+)"[^>]*>(.*?)</template>', html, re.S)
    }


def _svg(part: str) -> ET.Element:
    m = re.search(r'<div data-part="stage">(.*?)</div>\s*<div data-part="fields">', part, re.S)
    assert m
    return ET.fromstring(m.group(1))


NS = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("slug", [p.slug for p in PRESETS])
def test_every_preset_page_renders_picture_timeline_and_vllm_links(
    client: TestClient, slug: str
) -> None:
    """Each walkthrough renders: a parseable SVG per frame, the timeline with its cursor, and
    source links to vLLM v0.33.0 on GitHub labelled "vLLM 0.33.0"."""
    r = client.get(f"/explainers/scheduler/presets/{slug}")
    assert r.status_code == 200
    frames = _frames(r.text)
    assert frames
    for part in frames.values():
        svg = _svg(part)
        assert svg.get("id") == "sched-picture"
        assert svg.find(f".//{NS}g[@id='budget']") is not None
        assert svg.find(f".//{NS}g[@id='kv']") is not None
    assert 'id="gantt-cursor"' in r.text and "data-frame-cols=" in r.text
    assert "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/core/" in r.text
    assert "(vLLM 0.33.0)" in r.text


def test_budget_bar_spends_the_frame_tokens_in_order() -> None:
    """The budget bar's segments are the step's scheduled requests in schedule() order, their
    token counts summing to the budget used."""
    ex = SchedulerExplainer()
    trace = ex.run(ex.parse(dict(next(p for p in PRESETS if p.slug == "chunked-prefill").params)))
    for frame in trace.frames:
        svg = ET.fromstring(picture(trace, frame))
        segs = [e for e in svg.iter(f"{NS}rect") if (e.get("id") or "").startswith("seg-")]
        assert [e.get("data-req") for e in segs] == frame.state["spend"]["ids"]
        assert sum(int(e.get("data-tokens") or 0) for e in segs) == frame.state["budget_used"]
        assert svg.get("data-budget-used") == str(frame.state["budget_used"])
        # KV grid: one cell per block, block 0 drawn as the null block, in-use count matches
        cells = [e for e in svg.iter(f"{NS}rect") if (e.get("id") or "").startswith("blk-")]
        assert len(cells) == frame.state["kv"]["num_blocks"]
        assert cells[0].get("data-state") == "null"
        assert sum(1 for c in cells if c.get("data-state") == "used") == frame.state["kv"]["used"]


@pytest.mark.parametrize("slug", ["preemption-fcfs", "preemption-priority"])
def test_preemption_named_in_the_words_is_marked_in_the_picture(
    client: TestClient, slug: str
) -> None:
    """At the step whose decision log says "preempt X", the picture marks X's row as preempted
    and the blocks it held the step before as freed (Scheduler._preempt_request frees them); no
    other step marks a preemption."""
    html = client.get(f"/explainers/scheduler/presets/{slug}").text
    ex = SchedulerExplainer()
    trace = ex.run(ex.parse(dict(next(p for p in PRESETS if p.slug == slug).params)))
    named = 0
    for index, part in _frames(html).items():
        side = htmllib.unescape(part.split('data-part="side"', 1)[1])
        victims = re.findall(r"→ preempt (\w+)", side)
        svg = _svg(part)
        marked = [
            g.get("data-req") for g in svg.iter(f"{NS}g") if g.get("data-change") == "preempted"
        ]
        assert marked == victims
        assert (svg.get("data-preempted") or "") == ",".join(victims)
        if victims:
            named += 1
            # the blocks the victim held in the step before, outlined as freed
            prev = trace.frames[index - 1].state
            held = {b for v in prev["requests"] if v["id"] in victims for b in v["blocks"]}
            freed = {
                int(e.get("data-block") or -1) for e in svg.iter(f"{NS}rect") if e.get("data-block")
            }
            assert freed == held and held
    assert named == 1


def test_prefix_hit_lights_the_shared_blocks() -> None:
    """When a request is admitted with a prefix-cache hit of h tokens, the first h // block_size
    blocks of its block table are lit in the KV grid (KVCacheManager.get_computed_blocks)."""
    ex = SchedulerExplainer()
    trace = ex.run(ex.parse(dict(next(p for p in PRESETS if p.slug == "prefix-caching").params)))
    hits = 0
    for frame in trace.frames:
        svg = ET.fromstring(picture(trace, frame))
        lit = {
            int(e.get("id", "blk-0")[4:]) for e in svg.iter(f"{NS}rect") if e.get("data-lit") == "1"
        }
        expected: set[int] = set()
        for view in frame.state["requests"]:
            h = frame.state["prefix_hits"].get(view["id"], 0)
            expected |= set(view["blocks"][: h // frame.state["kv"]["block_size"]])
        assert lit == expected
        hits += bool(lit)
    assert hits >= 3  # B, C and D share the system prompt


def test_timeline_phases_agree_with_the_frames() -> None:
    """The Gantt's per-step phases, rebuilt from the series alone, give each scheduled request
    the kind of tokens the frame's snapshot recorded (prefill / decode / recompute)."""
    ex = SchedulerExplainer()
    names = {dv.PREFILL: "prefill", dv.DECODE: "decode", dv.RECOMPUTE: "recompute"}
    for slug in ("preemption-fcfs", "chunked-prefill", "prefix-caching", "static-batching"):
        trace = ex.run(ex.parse(dict(next(p for p in PRESETS if p.slug == slug).params)))
        se = trace.series
        codes, _ = dv.phases(se, [r["prompt_tokens"] for r in se["requests"]], 40)
        index = {rid: i for i, rid in enumerate(se["request_ids"])}
        for frame in trace.frames:
            s = dv.series_index(se, frame.state["step"])
            spend = frame.state["spend"]
            for rid, kind in zip(spend["ids"], spend["kinds"], strict=True):
                assert names[codes[index[rid]][s]] == kind, (slug, frame.index, rid)
            for rid in frame.state["preempted"]:
                assert codes[index[rid]][s] == dv.PREEMPTED


def test_static_part_is_decimated_for_long_runs() -> None:
    """A run of thousands of steps draws at most a few hundred timeline columns and 40 rows."""
    ex = SchedulerExplainer()
    raw = {
        "config": {"max_num_batched_tokens": 512, "max_num_seqs": 16, "num_gpu_blocks": 512},
        "requests": [
            {"id": f"q{i}", "prompt_tokens": 32, "max_tokens": 40 + i % 50, "arrival_step": i * 4}
            for i in range(600)
        ],
    }
    trace = ex.run(ex.parse(raw))
    assert len(trace.series["step"]) > 2000
    from app.web.explainers.scheduler.timeline import static

    html = static(trace)
    cols = int(re.search(r'data-cols="(\d+)"', html).group(1))  # type: ignore[union-attr]
    assert cols <= 440
    assert 'data-rows="40"' in html and "first 40 of 600 requests" in html
    assert len(html) < 600_000


def test_compare_page_renders_both_configs(client: TestClient) -> None:
    """/explainers/scheduler/compare runs the preset and the same workload with static batching,
    showing both summaries and timelines."""
    r = client.get("/explainers/scheduler/compare?preset=continuous-batching")
    assert r.status_code == 200
    assert (
        'data-config="batching=continuous"' in r.text and 'data-config="batching=static"' in r.text
    )
    assert 'id="cmp0-gantt"' in r.text and 'id="cmp1-gantt"' in r.text
    assert 'id="compare-summary"' in r.text and "padding tokens" in r.text
    r = client.get("/explainers/scheduler/compare?preset=head-of-line&vary=chunked_prefill")
    assert r.status_code == 200 and "enable_chunked_prefill=true" in r.text
    r = client.get(
        "/explainers/scheduler/compare?preset=nope&vary=batching",
        headers={"accept": "application/json"},
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "preset"]


def test_editor_form_only_for_what_it_can_carry(client: TestClient) -> None:
    """Every preset opens the form (token ids as runs of ids, booleans as checkboxes); what
    the form cannot carry (a boolean given as text) falls back to the JSON editor."""
    by_slug = {p.slug: p.params for p in PRESETS}
    for slug, params in by_slug.items():
        assert EDITOR.fits(params), slug
    assert not EDITOR.fits({"config": {"enable_chunked_prefill": "no"}, "requests": []})
    token = client.get("/explainers/scheduler/presets/continuous-batching").text
    m = re.search(r'id="edit-link" href="([^"]+)"', token)
    assert m
    page = client.get(htmllib.unescape(m.group(1))).text
    assert (
        'name="config.max_num_batched_tokens"' in page and 'name="requests.0.prompt_tokens"' in page
    )


def test_head_of_line_block_is_drawn_where_the_words_say(client: TestClient) -> None:
    """When the decision log says "Head-of-line blocking: X needs N tokens, only L are left"
    (chunked prefill off, Scheduler.schedule stops admitting), the budget bar shows X's N
    tokens overrunning the L left and X's row is marked blocked; other steps show neither."""
    html = client.get("/explainers/scheduler/presets/head-of-line").text
    seen = 0
    for part in _frames(html).values():
        side = htmllib.unescape(part.split('data-part="side"', 1)[1])
        m = re.search(r"Head-of-line blocking: (\w+) needs (\d+) tokens, only (\d+) are left", side)
        svg = _svg(part)
        ghost = svg.find(f".//{NS}rect[@id='budget-blocked']")
        blocked = [
            g.get("data-req") for g in svg.iter(f"{NS}g") if g.get("data-change") == "blocked"
        ]
        if m is None:
            assert ghost is None and blocked == []
            continue
        seen += 1
        rid, need, left = m.group(1), int(m.group(2)), int(m.group(3))
        assert ghost is not None and ghost.get("data-req") == rid
        assert int(ghost.get("data-tokens") or 0) == need > left
        assert blocked == [rid]
        budget = svg.find(f".//{NS}g[@id='budget']")
        assert budget is not None
        assert int(budget.get("data-budget") or 0) - int(budget.get("data-used") or 0) == left
    assert seen >= 2


def _catalog() -> list[tuple[str, str]]:
    from babel.messages.pofile import read_po

    with open("app/locale/zh_CN/LC_MESSAGES/messages.po", "rb") as f:
        catalog = read_po(f)
    return [
        (m.id, m.string)
        for m in catalog
        if isinstance(m.id, str) and m.id and isinstance(m.string, str) and m.string
    ]


def _prose_fragments() -> list[re.Pattern[str]]:
    """The English prose of every catalog id that Chinese translates: the literal parts between
    placeholders that hold a word of three or more letters, identifiers (``max_num_seqs``,
    ``schedule()``, ``ref_cnt``, all-caps names) left out; each as a whole-word pattern."""
    out: set[str] = set()
    for mid, zh in _catalog():
        if zh == mid:
            continue
        for part in re.split(r"\{[^}]*\}", mid):
            words = [
                w
                for w in re.findall(r"[A-Za-z_()]+", part)
                if "_" not in w and "(" not in w and not w.isupper() and len(w) >= 3
            ]
            if words:
                out.add(part.strip(" ·:;,.()"))
    return [re.compile(r"(?<![A-Za-z])" + re.escape(f) + r"(?![A-Za-z])") for f in sorted(out) if f]


def _kept_latin() -> re.Pattern[str]:
    """The Latin words Chinese translations keep on purpose (vLLM and kernel terms such as
    "null block", "token"): masked before looking for English prose."""
    runs = {
        r.strip()
        for _, zh in _catalog()
        for r in re.findall(r"[A-Za-z][A-Za-z_ ]*[A-Za-z]", re.sub(r"\{[^}]*\}", "", zh))
    }
    alts = sorted((r for r in runs if len(r) >= 3), key=len, reverse=True)
    return re.compile(r"(?<![A-Za-z])(?:" + "|".join(map(re.escape, alts)) + r")(?![A-Za-z])")


def _texts(svg: ET.Element) -> list[str]:
    """Every string a reader sees or hears: text, tooltips and accessible names."""
    out = [svg.get("aria-label") or ""]
    for e in svg.iter():
        if e.tag in (f"{NS}text", f"{NS}title") and e.text:
            out.append(e.text)
    return out


def test_every_preset_picture_speaks_chinese() -> None:
    """With the reader's language set to Chinese (as the language middleware sets it per
    request), no English prose from the catalog reaches the picture of any preset, at its
    first, middle and marked steps: every label is rendered per request, not at import."""
    from app.sim.core.i18n import reader_gettext
    from app.web.i18n import gettext_for

    patterns = _prose_fragments()
    kept = _kept_latin()
    assert any(p.pattern.endswith(re.escape("prefill chunk") + "(?![A-Za-z])") for p in patterns)
    ex = SchedulerExplainer()
    token = reader_gettext.set(gettext_for("zh-CN"))
    try:
        for preset in PRESETS:
            trace = ex.run(ex.parse(dict(preset.params)))
            frames = trace.frames
            picks = {0, len(frames) // 2} | {f.index for f in frames if f.mark}
            for index in sorted(picks)[:8]:
                svg = ET.fromstring(picture(trace, frames[index]))
                texts = [kept.sub(" ", t) for t in _texts(svg)]
                found = [(t, p.pattern) for t in texts for p in patterns if p.search(t)]
                assert not found, (preset.slug, index, found[:5])
    finally:
        reader_gettext.reset(token)


def test_chinese_player_page_has_chinese_labels(client: TestClient) -> None:
    """Over HTTP with ?lang=zh-CN the picture's legend says 预填充块 / 解码, and the English
    words that used to be frozen at import ("prefill chunk", "decode", "waiting") are gone."""
    html = client.get("/explainers/scheduler/presets/preemption-fcfs?lang=zh-CN").text
    svg = _svg(next(iter(_frames(html).values())))
    texts = " ".join(_texts(svg))
    assert "预填充块" in texts and "解码" in texts
    for english in ("prefill chunk", "decode", "waiting", "running", "recompute", "unspent"):
        assert not re.search(rf"(?<![A-Za-z]){english}(?![A-Za-z])", texts), english


def test_a_job_answers_in_the_form_its_run_was_asked_for(tmp_path: Path) -> None:
    """A run that became a job (202) says where its result is, in the form the run was asked
    for: ``?form=full`` carried over, the compact one by default; both decode alike."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'job.db'}", job_threshold_s=0.0)
    with TestClient(create_app(settings)) as c:
        results = {}
        statuses = []
        for query in ("?form=full", ""):  # the second from the trace the first stored
            r = c.post(API + query, json=ISSUE_EXAMPLE)
            statuses.append(r.status_code)
            if r.status_code == 200:
                results[query] = r.json()
                continue
            assert r.status_code == 202, r.text
            url = r.json()["result_url"]
            assert url.endswith(query) and ("?" in url) == bool(query)
            for _ in range(600):
                got = c.get(url)
                if got.status_code == 200:
                    break
                time.sleep(0.05)
            assert got.status_code == 200
            results[query] = got.json()
        assert statuses == [202, 200]
        assert results[""]["steps_encoding"] == "edits"
        assert "steps_encoding" not in results["?form=full"]
        assert decode_answer(results[""]) == results["?form=full"]
