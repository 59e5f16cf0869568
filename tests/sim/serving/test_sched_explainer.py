"""The explainer contract: public JSON shape, presets and their lessons, frames, citations."""

from __future__ import annotations

import ast
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from app.sim.core.explainer import Cancelled
from app.sim.core.i18n import Message
from app.sim.core.sources import VLLM_0_33
from app.sim.serving import SchedulerExplainer
from app.sim.serving import sources as src
from app.sim.serving.run import MAX_FRAMES

EX = SchedulerExplainer()
ROOT = Path(__file__).resolve().parents[3]


def run_preset(slug: str) -> Any:
    preset = EX.preset(slug)
    assert preset is not None
    trace = EX.run(EX.parse(preset.params))
    return trace, EX.public_json(trace)


def test_public_json_shape() -> None:
    """POST /run returns steps[] (step, scheduled, preempted, finished, running, waiting,
    kv_blocks_used, kv_usage, prefix_hit_tokens), requests[] (id, ttft, tpot, e2e,
    num_preemptions, finish_reason) and summary."""
    raw = {
        "config": {"max_num_batched_tokens": 256, "max_num_seqs": 4},
        "requests": [
            {"id": "A", "prompt_tokens": 100, "max_tokens": 10, "arrival_step": 0, "priority": 0},
            {"id": "B", "prompt_tokens": 300, "max_tokens": 1, "arrival_step": 1},
        ],
    }
    j = EX.public_json(EX.run(EX.parse(raw)))
    assert set(j) == {"steps", "requests", "summary"}
    step = j["steps"][0]
    assert {
        "step",
        "scheduled",
        "preempted",
        "finished",
        "running",
        "waiting",
        "kv_blocks_used",
        "kv_usage",
        "prefix_hit_tokens",
    } <= set(step)
    assert step["scheduled"] == {"A": 100}
    assert isinstance(step["kv_usage"], float)
    reqs = {r["id"]: r for r in j["requests"]}
    assert set(reqs) == {"A", "B"}
    for r in reqs.values():
        assert {"id", "ttft", "tpot", "e2e", "num_preemptions", "finish_reason"} <= set(r)
    assert reqs["B"]["tpot"] is None  # one output token: no inter-token time
    assert reqs["A"]["finish_reason"] == "length"
    assert j["summary"]["num_requests"] == 2
    assert sum(len(s["finished"]) for s in j["steps"]) == 2
    import json

    json.dumps(j)  # plain JSON values only


def test_latency_metrics_follow_the_steps() -> None:
    """TTFT, TPOT and e2e come from the step times: linear latency model, fixed step cost."""
    raw = {
        "requests": [{"id": "A", "prompt_tokens": 10, "max_tokens": 4}],
        "latency": {"mode": "linear", "base_ms": 10, "prefill_token_ms": 1, "decode_token_ms": 2},
    }
    r = EX.public_json(EX.run(EX.parse(raw)))["requests"][0]
    # step 0: 10 + 10 × 1 = 20 ms (first token); steps 1-3: 10 + 2 = 12 ms each.
    assert r["ttft"] == pytest.approx(0.020)
    assert r["e2e"] == pytest.approx(0.056)
    assert r["tpot"] == pytest.approx(0.012)


def test_roofline_prefill_is_compute_bound_and_decode_memory_bound() -> None:
    """Roofline: a 2048-token prefill takes 2·P·T/(FLOPs·mfu); one decode ≈ weights/bandwidth."""
    from app.sim.serving.latency import step_seconds
    from app.sim.serving.params import LatencyParams

    f = step_seconds(LatencyParams(step_overhead_ms=0.0))
    assert f(2048, 0, 2048) == pytest.approx(2 * 8e9 * 2048 / (989e12 * 0.5), rel=1e-9)
    assert f(0, 1, 100) == pytest.approx((8e9 * 2 + 131072 * 100) / 3350e9, rel=1e-9)


def test_presets_declared_with_lessons() -> None:
    """Every preset parses, has a scheduler-<slug> lesson stem and a msg() title."""
    slugs = [p.slug for p in EX.presets]
    assert EX.default_preset in slugs
    assert len(set(slugs)) == len(slugs)
    for p in EX.presets:
        assert p.lesson == f"scheduler-{p.slug}"
        assert isinstance(p.title, Message)
        EX.parse(p.params)


def test_preset_continuous_beats_static_batching() -> None:
    """Continuous batching finishes the same workload sooner, with lower mean latency."""
    c, cj = run_preset("continuous-batching")
    s, sj = run_preset("static-batching")
    assert c.summary["makespan_s"] < s.summary["makespan_s"]
    assert c.summary["mean_e2e_s"] < s.summary["mean_e2e_s"]
    assert s.summary["padding_tokens"] > 0 and c.summary["padding_tokens"] == 0
    # In static mode the second batch starts only when the whole first batch is done.
    first_e = next(st["step"] for st in sj["steps"] if "E" in st["scheduled"])
    last_d = max(st["step"] for st in sj["steps"] if st["running"] and "B" in st["running"])
    assert first_e > last_d


def test_preset_chunked_prefill_splits_the_long_prompt() -> None:
    """The long prompt is computed over several steps while the short requests keep decoding."""
    _, j = run_preset("chunked-prefill")
    chunks = [s["scheduled"]["LONG"] for s in j["steps"] if s["scheduled"].get("LONG", 0) > 1]
    assert len(chunks) >= 3 and sum(chunks) == 1800
    during = [s for s in j["steps"] if s["scheduled"].get("LONG", 0) > 1]
    assert all(s["scheduled"].get("A") == 1 for s in during)
    assert all(sum(s["scheduled"].values()) <= 512 for s in j["steps"])


def test_preset_prefix_caching_hits_the_system_prompt() -> None:
    """Later requests hit the 1024-token shared system prompt (64 blocks); an exact repeat of
    it hits 1008 (its last block is recomputed); an unrelated prompt hits nothing, and the hits
    cut time to first token."""
    _, j = run_preset("prefix-caching")
    hits: dict[str, int] = {}
    for s in j["steps"]:
        hits.update(s["prefix_hit_tokens"])
    assert hits == {"A": 0, "B": 1024, "C": 1024, "D": 1008, "E": 0}
    ttft = {r["id"]: r["ttft"] for r in j["requests"]}
    assert max(ttft["B"], ttft["C"], ttft["D"]) < min(ttft["A"], ttft["E"]) / 2


@pytest.mark.parametrize(
    ("slug", "victim"), [("preemption-fcfs", "C"), ("preemption-priority", "A")]
)
def test_preemption_presets_preempt(slug: str, victim: str) -> None:
    """KV pressure preempts: FCFS takes the newest (C), priority the worst priority (A)."""
    trace, j = run_preset(slug)
    pre = [v for s in j["steps"] for v in s["preempted"]]
    assert pre and pre[0] == victim
    assert any(f.mark == "preempt" for f in trace.frames)
    r = next(x for x in j["requests"] if x["id"] == victim)
    assert r["num_preemptions"] >= 1


def test_preset_priority_admits_high_priority_first() -> None:
    """H1/H2 (priority 0) arrive later but are admitted before L3/L4 (priority 5)."""
    _, j = run_preset("priority")
    first = {
        rid: next(s["step"] for s in j["steps"] if rid in s["scheduled"])
        for rid in ("H1", "H2", "L3", "L4")
    }
    assert max(first["H1"], first["H2"]) < min(first["L3"], first["L4"])


def test_preset_head_of_line_blocks_short_requests() -> None:
    """Short C and D wait behind B although they would fit in the budget left."""
    trace, j = run_preset("head-of-line")
    assert j["steps"][0]["scheduled"] == {"A": 700}
    assert "C" in j["steps"][0]["waiting"]
    assert trace.frames[0].mark == "hol"


def test_frames_one_per_step_with_decision_log() -> None:
    """Small runs: one frame per step, narration and notes are msg() Messages, each frame cites
    a vLLM 0.33 function."""
    trace, j = run_preset("preemption-fcfs")
    assert len(trace.frames) == len(j["steps"])
    for i, f in enumerate(trace.frames):
        assert f.index == i
        assert isinstance(f.narration, Message)
        assert all(isinstance(n, Message) for n in f.notes)
        assert f.source is not None and f.source.project == VLLM_0_33
        assert f.state["step"] == j["steps"][i]["step"]
        assert f.state["spend"]["ids"] == list(j["steps"][i]["scheduled"])
    pre = next(f for f in trace.frames if f.state["preempted"])
    assert any("preempt" in n.id for n in pre.notes)
    assert pre.source == src.PREEMPT


def test_frame_state_matches_public_json() -> None:
    """A frame's running and waiting lists (head) agree with the replayed queues of steps[]."""
    trace, j = run_preset("priority")
    for f in trace.frames:
        s = j["steps"][f.index]
        running = [v["id"] for v in f.state["requests"] if v["phase"] in ("prefill", "decode")]
        waiting = [v["id"] for v in f.state["requests"] if v["phase"] in ("waiting", "preempted")]
        assert running == s["running"]
        assert waiting == s["waiting"][: len(waiting)]
        assert f.state["kv"]["used"] == s["kv_blocks_used"]


def test_big_runs_sample_frames_but_keep_full_series() -> None:
    """More steps than the frame cap: frames are sampled, the series keeps every step."""
    reqs = [{"id": str(i), "prompt_tokens": 64, "max_tokens": 200} for i in range(40)]
    trace = EX.run(EX.parse({"config": {"max_num_seqs": 4}, "requests": reqs}))
    steps = len(trace.series["step"])
    assert steps > MAX_FRAMES
    assert MAX_FRAMES // 4 <= len(trace.frames) <= MAX_FRAMES + 1
    assert trace.frames[-1].state["num_finished"] == 40
    assert [f.index for f in trace.frames] == list(range(len(trace.frames)))


def test_progress_is_reported_and_cancel_propagates() -> None:
    """run() calls progress(done, total) and lets Cancelled stop it."""
    raw = {"requests": [{"id": str(i), "prompt_tokens": 200, "max_tokens": 50} for i in range(50)]}
    p = EX.parse(raw)
    calls: list[tuple[float, float]] = []
    EX.run(p, lambda d, t: calls.append((d, t)))
    assert len(calls) >= 10 and calls[-1] == (EX.cost(p), EX.cost(p))
    assert all(d <= t for d, t in calls)

    def stop(done: float, total: float) -> None:
        raise Cancelled

    with pytest.raises(Cancelled):
        EX.run(p, stop)


def test_run_is_deterministic() -> None:
    """Two runs of one preset give equal traces."""
    p = EX.parse(EX.presets[0].params)
    assert EX.run(p) == EX.run(p)


# --- citations ---------------------------------------------------------------------------------

WHEEL = sorted(Path("/tmp/vllm").glob("vllm-0.33.0-*.whl"))


@pytest.mark.skipif(not WHEEL, reason="vLLM 0.33.0 wheel not downloaded to /tmp/vllm")
def test_cited_lines_are_the_definitions_in_vllm_033() -> None:
    """Every SourceRef's line holds the def/class of the cited function in vLLM 0.33.0."""
    with zipfile.ZipFile(WHEEL[0]) as z:
        for ref in src.ALL:
            lines = z.read(ref.path).decode().splitlines()
            name = ref.function.split(".")[-1]
            line = lines[ref.line - 1]
            assert re.match(rf"\s*(def|class) {re.escape(name)}\b", line), (ref, line)


def test_every_citation_is_in_the_table_and_unique() -> None:
    """All citations live in one table; (function, path) pairs are distinct and on GitHub."""
    keys = [(r.function, r.path) for r in src.ALL]
    assert len(keys) == len(set(keys))
    assert all(
        r.url.startswith("https://github.com/vllm-project/vllm/blob/v0.33.0/") for r in src.ALL
    )


def test_messages_are_literal_msg_calls() -> None:
    """Every msg() call under app/sim/serving has a literal string id (Babel can extract it)."""
    for path in (ROOT / "app" / "sim" / "serving").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "msg":
                assert node.args and isinstance(node.args[0], ast.Constant), (
                    path.name,
                    node.lineno,
                )
                assert isinstance(node.args[0].value, str)


def test_recomputed_tokens_count_work_done_twice() -> None:
    """Preemption (FCFS preset): C had computed positions 0-78 when preempted at step 34; its
    first two blocks (32 tokens) survive in the prefix cache, so 79 - 32 = 47 are recomputed."""
    trace, _ = run_preset("preemption-fcfs")
    assert trace.summary["recomputed_tokens"] == 47
    assert run_preset("continuous-batching")[0].summary["recomputed_tokens"] == 0


def test_every_message_renders_with_its_parameters() -> None:
    """Each narration and note of every preset fills all its placeholders (no KeyError)."""
    for p in EX.presets:
        trace = EX.run(EX.parse(p.params))
        for f in trace.frames:
            for m in (f.narration, *f.notes):
                text = m.id.format_map(m.params)
                assert "{" not in text
    assert all("{" not in p.title.id for p in EX.presets)


def test_frames_list_only_the_kv_blocks_in_use_or_hashed() -> None:
    """A frame's KV view lists the blocks in use or hashed, with the owner, ref_cnt and hash
    flag the block pool had at that step (checked against the pool's own dense arrays); a
    90-byte body asking for a million GPU blocks makes frames of a few dozen entries, not a
    million per frame (it took 5.2 s and 4.9 GB when frames copied the whole pool)."""
    from app.sim.serving.narrate import snapshot
    from app.sim.serving.presets import PRESETS
    from app.sim.serving.run import simulate

    ex = SchedulerExplainer()
    for slug in ("prefix-caching", "preemption-fcfs", "static-batching"):
        p = ex.parse(dict(next(x for x in PRESETS if x.slug == slug).params))
        res = simulate(
            p, snapshot=lambda s, a, i: (snapshot(s, a, i), s.owner[:], s.ref[:], s.hashed[:])
        )
        for _, (parts, owner, ref, hashed) in res.snapshots:
            kv = parts.state["kv"]
            dense = [b for b in range(1, kv["num_blocks"]) if ref[b] > 0 or hashed[b]]
            assert list(kv["blocks"]) == dense
            assert list(kv["owner"]) == [owner[b] for b in dense]
            assert list(kv["ref_cnt"]) == [ref[b] for b in dense]
            assert list(kv["hashed"]) == [hashed[b] for b in dense]
            assert sum(1 for r in kv["ref_cnt"] if r > 0) == kv["used"]
    body = {
        "config": {"num_gpu_blocks": 1_000_000},
        "requests": [{"id": "a", "prompt_tokens": 1, "max_tokens": 300}],
    }
    trace = ex.run(ex.parse(body))
    assert trace.frames and all(f.state["kv"]["num_blocks"] == 1_000_000 for f in trace.frames)
    assert max(len(f.state["kv"]["blocks"]) for f in trace.frames) == -(-301 // 16)
