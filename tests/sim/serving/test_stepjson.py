"""``steps[]`` written straight to JSON bytes (app.sim.serving.stepjson) parses to exactly the
documented steps (``steps_json``): every preset, and workloads that exercise each queue move
(arrivals over time, preemptions to the head of the waiting queue, priority order, ids that need
escaping, the prefix-cache hits shown or not)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from schedhelp import EX, params, pressure

from app.sim.core import EncodedJSON
from app.sim.serving import stepjson
from app.sim.serving.explainer import steps_json
from app.sim.serving.run import simulate
from app.sim.serving.stepjson import HEADROOM, _Queue, steps_bytes
from tests.native import pure_python


def same_steps(raw: dict[str, Any]) -> list[Any]:
    p = EX.parse(raw)
    se = simulate(p).series
    expected = json.loads(json.dumps(steps_json(p, se)))
    got = json.loads(steps_bytes(p, se))
    assert got == expected
    return got


@pytest.mark.parametrize("slug", [p.slug for p in EX.presets])
def test_every_preset(slug: str) -> None:
    preset = EX.preset(slug)
    assert preset is not None
    steps = same_steps(dict(preset.params))
    assert steps


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
@pytest.mark.parametrize("prefix", [True, False])
def test_preemptions_and_arrivals(policy: str, prefix: bool) -> None:
    steps = same_steps(pressure(policy, 60, prefix=prefix))
    assert any(s["preempted"] for s in steps)  # the workload does what it is for
    assert any(s["waiting"] for s in steps)
    assert steps[-1]["waiting"] == [] and steps[-1]["running"] == []


def test_ids_that_need_escaping() -> None:
    ids = ['a"b', "back\\slash", "新", "tab\there", "\x01", "é"]
    raw = {
        "config": {"max_num_seqs": 2, "max_num_batched_tokens": 64},
        "requests": [{"id": rid, "prompt_tokens": 20, "max_tokens": 3} for rid in ids],
    }
    steps = same_steps(raw)
    assert {rid for s in steps for rid in s["waiting"]} == set(ids[2:])


@pure_python  # the compiled module reads COMPACT_AT as it was built, not the patched global
def test_a_large_queue_past_its_compaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand waiting ids, the bytes popped dropped every few hundred bytes (a megabyte in
    use) and preemptions into the room before the head."""
    monkeypatch.setattr(stepjson, "COMPACT_AT", 300)
    raw = pressure("fcfs", 1000, prefix=True)
    raw["config"] |= {"num_gpu_blocks": 100, "max_num_seqs": 32}
    for i, r in enumerate(raw["requests"]):
        r["id"] = f"request-with-a-long-id-{i:05d}-" + "x" * 30
        r["arrival_step"] = 0
    steps = same_steps(raw)
    assert max(len(s["waiting"]) for s in steps) > 900
    assert any(s["preempted"] for s in steps)


def test_queue_bytes() -> None:
    q = _Queue()
    assert q.json() == b"[]"
    q.append(b',"a"')
    q.append(b',"b"')
    assert json.loads(q.json()) == ["a", "b"]
    q.popleft(b',"a"')
    assert json.loads(q.json()) == ["b"]
    q.appendleft(b',"c"')  # into the room the popped id left
    q.appendleft(b',"dd"')  # more than that room: room is made
    assert json.loads(q.json()) == ["dd", "c", "b"]
    assert q.start >= HEADROOM - 8
    for item in (b',"dd"', b',"c"', b',"b"'):
        q.popleft(item)
    assert q.json() == b"[]"


def test_floats_are_written_as_one_by_one() -> None:
    """A column's floats written at once are each float's own JSON (``null`` where
    ``json.dumps`` would write a non-standard NaN or Infinity)."""
    finite = [0.0, -0.0, 1e-05, 0.1 + 0.2, 1e22, 123456.789, -2.5]
    assert stepjson._floats(finite) == [stepjson._float(x) for x in finite]
    assert [json.loads(t) for t in stepjson._floats(finite)] == finite
    odd = [1.5, math.inf, -math.inf, math.nan, 2.0]
    assert stepjson._floats(odd) == [b"1.5", b"null", b"null", b"null", b"2.0"]
    assert stepjson._floats([]) == []


def test_the_explainer_answers_with_these_bytes() -> None:
    raw = pressure("fcfs", 20, prefix=True)
    trace = EX.run(params(raw["config"], raw["requests"]))
    parts = EX.public_json_parts(trace)
    steps = parts["steps"]
    assert isinstance(steps, EncodedJSON)
    assert json.loads(steps.data) == json.loads(json.dumps(EX.public_json(trace)["steps"]))
    assert {k: v for k, v in parts.items() if k != "steps"} == {
        k: v for k, v in EX.public_json(trace).items() if k != "steps"
    }
