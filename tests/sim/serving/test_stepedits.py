"""The compact ``steps`` of the scheduler's API answer (app.sim.serving.stepedits, the API's
default) decode to exactly the documented steps (``steps_json``, the ``?form=full`` answer):
every preset, workloads that exercise each queue move (arrivals over time, preemptions, priority
order, escaped ids) and ``bench/api_speed.py``'s 4,096-request workload; the edits and runs
themselves on lists changed at random."""

from __future__ import annotations

import json
import random
import sys
from array import array
from pathlib import Path
from typing import Any

import pytest
from schedhelp import EX, pressure

from app.sim.core import EncodedJSON
from app.sim.serving import stepedits
from app.sim.serving.explainer import steps_json
from app.sim.serving.run import simulate
from app.sim.serving.stepedits import apply_edit, decode_answer, decode_steps, edit_steps_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import api_speed  # noqa: E402


def compact_and_full(raw: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    p = EX.parse(raw)
    se = simulate(p).series
    return json.loads(edit_steps_bytes(p, se)), json.loads(json.dumps(steps_json(p, se)))


@pytest.mark.parametrize("slug", [p.slug for p in EX.presets])
def test_every_preset_decodes_to_the_documented_steps(slug: str) -> None:
    preset = EX.preset(slug)
    assert preset is not None
    compact, full = compact_and_full(dict(preset.params))
    assert full and decode_steps(compact) == full


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
@pytest.mark.parametrize("prefix", [True, False])
def test_preemptions_arrivals_and_priority_order(policy: str, prefix: bool) -> None:
    compact, full = compact_and_full(pressure(policy, 60, prefix=prefix))
    assert decode_steps(compact) == full
    assert any(s["preempted"] for s in full)  # the workload does what it is for
    assert sum(len(s["waiting"]) for s in full) > 100
    # edits, not lists: a step that changed a list by a few ids says those few
    assert sum(len(s["waiting_edit"]) for s in compact) < sum(len(s["waiting"]) for s in full)


def test_ids_that_need_escaping() -> None:
    ids = ['a"b', "back\\slash", "新", "tab\there", "\x01", "é", "[0,1]"]
    raw = {
        "config": {"max_num_seqs": 2, "max_num_batched_tokens": 64},
        "requests": [{"id": rid, "prompt_tokens": 20, "max_tokens": 3} for rid in ids],
    }
    compact, full = compact_and_full(raw)
    assert decode_steps(compact) == full


def test_the_bench_workload() -> None:
    """``bench/api_speed.py``'s 4,096 requests: 87 MB of steps as documented, decoded from
    about 1.5 MB."""
    p = EX.parse(api_speed.workload(4096, "r"))
    se = simulate(p).series
    data = edit_steps_bytes(p, se)
    decoded = decode_steps(json.loads(data))
    full = steps_json(p, se)  # (its floats are the ones JSON carries: repr round-trips)
    assert len(decoded) == len(full) > 4000
    for got, want in zip(decoded, full, strict=True):
        assert got == want
    assert len(data) * 20 < sum(len(s["waiting"]) for s in full) * 4  # far less than the ids


def test_the_explainer_answers_compact_when_asked() -> None:
    trace = EX.run(EX.parse(dict(pressure("fcfs", 20, prefix=True))))
    parts = EX.public_json_parts(trace, compact=True)
    assert parts["steps_encoding"] == stepedits.ENCODING == "edits"
    steps = parts["steps"]
    assert isinstance(steps, EncodedJSON)
    answer = {k: json.loads(v.data) if isinstance(v, EncodedJSON) else v for k, v in parts.items()}
    answer = json.loads(json.dumps(answer))
    full = json.loads(json.dumps(EX.public_json(trace)))
    assert EX.decode_compact(answer) == decode_answer(answer) == full
    assert decode_answer(full) is full  # not compact: as it is


def test_edits_of_lists_changed_at_random() -> None:
    """The waiting queue's edit kept as it changes (``_Edit``), and the diff of two lists
    (``_diff``), rebuild the list from the one before; the runs of tokens expand to them."""
    rng = random.Random(7)
    enc = [json.dumps(f"r{i}").encode() for i in range(400)]
    before: list[int] = []
    edit = stepedits._Edit()
    fresh = iter(range(400))
    for _ in range(60):
        now = list(before)
        for _ in range(rng.randrange(0, 12)):
            if now and rng.random() < 0.45:
                k = rng.randrange(len(now))
                del now[k]
                edit.delete(k)
            else:
                k = rng.randrange(len(now) + 1)
                i = next(fresh, None)
                if i is None:
                    break
                now.insert(k, i)
                edit.insert(k, i)
        names = [f"r{i}" for i in before]
        want = [f"r{i}" for i in now]
        assert apply_edit(names, json.loads(edit.json(enc))) == want
        diff = stepedits._diff(array("i", before), array("i", now), enc)
        assert apply_edit(names, json.loads(diff)) == want
        before = now
    for tokens in ([], [1], [5, 5], [1, 1, 1, 512, 1, 7, 7], [3] * 100 + [1]):
        runs = json.loads(stepedits._runs(tokens))
        assert [v for n, v in runs for _ in range(n)] == tokens
        assert all(a[1] != b[1] for a, b in zip(runs, runs[1:], strict=False))
