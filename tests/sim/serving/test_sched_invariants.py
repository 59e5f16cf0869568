"""Properties every run keeps, over random workloads and configs (Hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schedhelp import params, watch

from app.sim.serving.engine import Scheduler
from app.sim.serving.params import RequestSpec
from app.sim.serving.request import RUNNING, Req, check_stop, filler_token, finish_point, token_at
from app.sim.serving.run import simulate


@st.composite
def workloads(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    bs = draw(st.sampled_from([4, 8, 16]))
    mml = draw(st.integers(min_value=16, max_value=160))
    blocks = draw(st.integers(min_value=-(-mml // bs) + 1, max_value=-(-mml // bs) + 40))
    seqs = draw(st.integers(min_value=1, max_value=6))
    chunked = draw(st.booleans())
    budget = draw(
        st.integers(min_value=max(seqs, 1 if chunked else mml), max_value=max(seqs, mml) + 64)
    )
    config = {
        "block_size": bs,
        "max_model_len": mml,
        "num_gpu_blocks": blocks,
        "max_num_seqs": seqs,
        "max_num_batched_tokens": budget,
        "enable_chunked_prefill": chunked,
        "enable_prefix_caching": draw(st.booleans()),
        "policy": draw(st.sampled_from(["fcfs", "priority"])),
        "long_prefill_token_threshold": draw(st.sampled_from([0, 0, 5, 15])),
        "watermark": draw(st.sampled_from([0.0, 0.0, 0.1])),
        "batching": draw(st.sampled_from(["continuous", "continuous", "static"])),
    }
    n = draw(st.integers(min_value=1, max_value=8))
    shared = draw(st.lists(st.integers(0, 3), min_size=0, max_size=40))
    reqs: list[dict[str, Any]] = []
    for i in range(n):
        plen = draw(st.integers(min_value=1, max_value=mml - 1))
        r: dict[str, Any] = {
            "id": f"r{i}",
            "max_tokens": draw(st.integers(min_value=1, max_value=40)),
            "arrival_step": draw(st.integers(min_value=0, max_value=6)),
            "priority": draw(st.integers(min_value=0, max_value=3)),
        }
        if draw(st.booleans()):
            tail = draw(st.lists(st.integers(0, 3), min_size=plen, max_size=plen))
            r["prompt_token_ids"] = (shared + tail)[:plen]
        else:
            r["prompt_tokens"] = plen
        if draw(st.booleans()):
            r["eos_position"] = draw(st.integers(min_value=1, max_value=40))
        reqs.append(r)
    return config, reqs


def _check(s: Scheduler, arrived: list[Req], idx: int) -> None:
    assert sum(s.sched.values()) <= s.budget_max
    assert len(s.running) <= s.max_seqs
    # Blocks are conserved: each block's ref_cnt is the number of block tables holding it,
    # free blocks are exactly those with ref_cnt 0, and the free queue holds each once.
    holders = [0] * s.nblocks
    for b in range(1, s.nblocks):
        assert (s.owner[b] == -1) == (s.ref[b] == 0)
    for r in s.running:
        assert r.status == RUNNING
        for b in r.blocks:
            holders[b] += 1
        assert len(r.blocks) * s.bs == r.cap >= r.computed
        if s.caching:  # every full computed block is in the cache (the decode fast path's premise)
            assert r.num_cached == r.computed // s.bs
    assert holders[0] == 0
    assert holders[1:] == s.ref[1:]
    queue = s.free_queue(s.nblocks + 5)
    assert len(queue) == len(set(queue)) == s.nfree
    assert sorted(queue) == [b for b in range(1, s.nblocks) if s.ref[b] == 0]
    # Only full blocks are in the prefix cache; a hashed block is findable under its hash.
    for b in range(1, s.nblocks):
        if s.hashed[b]:
            key = s.bhash[b]
            assert s.h2b.get(key) == b or b in s.dups.get(key, [])
    # The live set (what a frame lists) is exactly the blocks in use or hashed.
    assert s.live == {b for b in range(1, s.nblocks) if s.ref[b] > 0 or s.hashed[b]}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_invariants_hold_and_every_request_finishes(
    w: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    """Budget never exceeded, running <= max_num_seqs, blocks conserved, every request finishes
    with the output count check_stop gives."""
    config, reqs = w
    se = watch(config, reqs, _check)
    p = params(config, reqs)
    assert se["finish_off"][-1] == len(reqs)
    for spec, r in zip(p.requests, se["requests"], strict=True):
        out, reason = finish_point(spec, p.config.eos_token_id, p.config.max_model_len)
        assert (r["output_tokens"], r["finish_reason"]) == (out, reason)
        assert r["ttft"] >= 0 and r["e2e"] >= r["ttft"]


@settings(max_examples=40, deadline=None)
@given(workloads())
def test_runs_are_deterministic(w: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    """The same params give the same series twice."""
    config, reqs = w
    p = params(config, reqs)
    assert simulate(p).series == simulate(p).series


@given(
    outs=st.lists(st.integers(0, 6), max_size=12),
    stops=st.lists(st.integers(0, 6), max_size=3),
    eos_pos=st.none() | st.integers(1, 15),
    ignore=st.booleans(),
    max_tokens=st.integers(1, 15),
    prompt=st.integers(1, 30),
    mml=st.integers(31, 50),
    eos=st.integers(0, 6),
)
def test_finish_point_matches_check_stop_token_by_token(
    outs: list[int],
    stops: list[int],
    eos_pos: int | None,
    ignore: bool,
    max_tokens: int,
    prompt: int,
    mml: int,
    eos: int,
) -> None:
    """check_stop applied to each appended token stops where finish_point says."""
    spec = RequestSpec(
        id="r",
        prompt_tokens=prompt,
        max_tokens=max_tokens,
        output_token_ids=tuple(outs),
        stop_token_ids=tuple(stops),
        eos_position=eos_pos,
        ignore_eos=ignore,
    )
    filler = filler_token(spec, eos)
    j = 0
    while True:
        tok = token_at(spec, j, eos, filler)
        j += 1
        reason = check_stop(tok, prompt + j, j, spec, eos, mml)
        if reason:
            break
    assert finish_point(spec, eos, mml) == (j, reason)
