"""vLLM 0.33 scheduler rules, one scenario each (expected values worked out by hand from
/work/shared/reference/vllm-scheduler.md, not read back from the simulator)."""

from __future__ import annotations

from typing import Any

import pytest
from schedhelp import req, result, run_steps, series, watch

from app.sim.serving.engine import Scheduler
from app.sim.serving.request import Req


def at(steps: list[Any], k: int) -> Any:
    return next(s for s in steps if s["step"] == k)


def first_step(steps: list[Any], rid: str) -> int:
    return next(s["step"] for s in steps if rid in s["scheduled"])


# --- schedule(): order, budget, chunking --------------------------------------------------------


def test_running_requests_are_served_first_in_list_order() -> None:
    """Scheduler.schedule §1a: RUNNING before WAITING, in running-list (admission) order."""
    steps = run_steps({}, [req("A", 10, 20), req("B", 10, 20, arrival_step=1)])
    assert list(at(steps, 1)["scheduled"]) == ["A", "B"]
    assert list(at(steps, 2)["scheduled"]) == ["A", "B"]


def test_running_order_is_admission_order_even_under_priority() -> None:
    """Scheduler.schedule §1a: under the priority policy RUNNING is still served in list order."""
    steps = run_steps(
        {"policy": "priority"},
        [req("A", 10, 20, priority=5), req("B", 10, 20, priority=0, arrival_step=1)],
    )
    assert list(at(steps, 2)["scheduled"]) == ["A", "B"]


def test_decode_costs_one_token_and_a_prefill_takes_the_budget_left() -> None:
    """Scheduler.schedule §2: a decode costs 1; a chunked prefill gets min(remaining, budget
    left); num_computed_tokens advances at schedule time so the next chunk follows at once."""
    steps = run_steps(
        {"max_num_batched_tokens": 100, "max_num_seqs": 8},
        [req("A", 30, 10), req("B", 250, 4, arrival_step=1)],
    )
    assert at(steps, 0)["scheduled"] == {"A": 30}
    assert at(steps, 1)["scheduled"] == {"A": 1, "B": 99}
    assert at(steps, 2)["scheduled"] == {"A": 1, "B": 99}
    assert at(steps, 3)["scheduled"] == {"A": 1, "B": 52}
    assert at(steps, 4)["scheduled"] == {"A": 1, "B": 1}


def test_ttft_is_the_end_of_the_step_that_computes_the_last_prompt_token() -> None:
    """§2: a partial prefill samples nothing; the step finishing the prompt samples token 1."""
    cfg = {"max_num_batched_tokens": 100, "max_num_seqs": 8}
    se = series(cfg, [req("A", 30, 10), req("B", 250, 4, arrival_step=1)])
    b = result(se, "B")
    assert b["first_token_s"] == se["t_end"][3]
    assert b["ttft"] == se["t_end"][3] - se["t_start"][1]


def test_long_prefill_threshold_applies_only_with_more_than_one_request() -> None:
    """Scheduler.schedule L759 (0.33): the threshold caps chunks only when running+waiting > 1."""
    cfg = {"long_prefill_token_threshold": 400}
    alone = run_steps(cfg, [req("A", 1000)])
    assert at(alone, 0)["scheduled"] == {"A": 1000}
    two = run_steps(cfg, [req("A", 1000), req("B", 1000)])
    assert at(two, 0)["scheduled"] == {"A": 400, "B": 400}
    assert at(two, 1)["scheduled"] == {"A": 400, "B": 400}
    assert at(two, 2)["scheduled"] == {"A": 200, "B": 200}


def test_max_num_seqs_caps_admission() -> None:
    """Scheduler.schedule §1b: admission stops when len(running) reaches max_num_seqs."""
    steps = run_steps({"max_num_seqs": 2}, [req("A", 10, 3), req("B", 10, 5), req("C", 10, 3)])
    assert set(at(steps, 0)["scheduled"]) == {"A", "B"}
    assert at(steps, 0)["waiting"] == ["C"]
    # A finishes at the end of step 2 (3 outputs); C is admitted in step 3.
    assert first_step(steps, "C") == 3
    assert all(len(s["running"]) <= 2 for s in steps)


# --- preemption -------------------------------------------------------------------------------

# 9 blocks = the null block + 8 usable blocks of 16 tokens.
SMALL = {
    "num_gpu_blocks": 9,
    "max_model_len": 128,
    "max_num_batched_tokens": 256,
    "max_num_seqs": 4,
}


def test_fcfs_preempts_the_newest_running_request_and_admits_nobody() -> None:
    """Scheduler.schedule §1a/§1b, _preempt_request: under FCFS the victim is running[-1]; a
    step that preempted admits nobody, even a request that would fit; the victim goes to the
    front of the waiting queue."""
    steps = run_steps(
        SMALL,
        [req("A", 32, 40), req("B", 32, 40), req("D", 16, 2, arrival_step=33)],
    )
    # A and B hold 4 blocks each after step 17; at step 33 A needs its 5th block (position 64).
    s33 = at(steps, 33)
    assert s33["preempted"] == ["B"]
    assert s33["scheduled"] == {"A": 1}
    assert s33["waiting"] == ["B", "D"]
    assert s33["running"] == ["A"]


def test_resumed_request_hits_its_own_blocks_including_generated_tokens() -> None:
    """_preempt_request + get_computed_blocks: freed blocks keep their hashes (over prompt and
    output tokens); the tail block is evicted first; a resume recomputes num_tokens - hit."""
    steps = run_steps(
        SMALL,
        [req("A", 32, 40), req("B", 32, 40), req("D", 16, 2, arrival_step=33)],
    )
    # B had 32 prompt + 33 output tokens (64 computed, 4 full hashed blocks). A took one freed
    # block from the head of the free queue: B's tail block (LRU), so 3 blocks = 48 tokens hit.
    resume = first_step([s for s in steps if s["step"] > 33], "B")
    assert resume == 40  # A finishes at step 39 (40 outputs); B waited for a full-sequence fit
    s = at(steps, resume)
    assert s["prefix_hit_tokens"]["B"] == 48 > 32
    assert s["scheduled"]["B"] == 32 + 33 - 48


def test_fcfs_request_that_is_last_preempts_itself() -> None:
    """Scheduler.schedule §1a: when the request needing blocks is running[-1] it preempts
    itself and the running loop stops."""
    steps = run_steps(SMALL, [req("X", 40, 60), req("A", 48, 60, arrival_step=1)])
    s18 = at(steps, 18)  # A needs its 5th block at position 64; X needs none this step
    assert s18["preempted"] == ["A"]
    assert s18["scheduled"] == {"X": 1}


def test_priority_preempts_the_worst_request_and_gives_its_tokens_back() -> None:
    """Scheduler.schedule §1a (priority): the victim is max(priority, arrival_time) over all of
    running, even one already scheduled this step, whose tokens return to the budget; a
    preempted request goes back to its heap place, not the front."""
    reqs = [
        req("A", 48, 64, priority=2),
        req("B", 48, 64, priority=0, arrival_step=1),
        req("C", 48, 64, priority=1, arrival_step=2),
        req("W", 16, 2, priority=1, arrival_step=34),
    ]
    cfg = {
        "num_gpu_blocks": 17,
        "max_model_len": 256,
        "max_num_batched_tokens": 256,
        "max_num_seqs": 4,
    }
    steps = run_steps({**cfg, "policy": "priority"}, reqs)
    s34 = at(steps, 34)  # B needs its 6th block at position 80; all 16 blocks are held
    assert s34["preempted"] == ["A"]
    assert s34["scheduled"] == {"B": 1, "C": 1}  # A's token was given back
    assert s34["waiting"] == ["W", "A"]
    fcfs = run_steps(cfg, reqs)
    assert at(fcfs, 34)["preempted"] == ["C"]
    assert at(fcfs, 34)["waiting"] == ["C", "W"]


def test_priority_self_preemption_lets_later_requests_run() -> None:
    """Scheduler.schedule §1a (0.33, test_priority_preemption_bug): a worst-priority request
    that preempts itself is skipped (continue), so the requests after it are still served."""
    reqs = [req("P", 48, 60, priority=5), req("Q", 40, 60, priority=0, arrival_step=1)]
    steps = run_steps({**SMALL, "policy": "priority"}, reqs)
    s17 = at(steps, 17)  # P needs its 5th block; P is the worst, so it is its own victim
    assert s17["preempted"] == ["P"]
    assert s17["scheduled"] == {"Q": 1}
    fcfs = at(run_steps(SMALL, reqs), 17)
    assert fcfs["preempted"] == ["Q"]
    assert fcfs["scheduled"] == {"P": 1}


# --- admission --------------------------------------------------------------------------------


def test_head_of_line_blocking_without_chunked_prefill() -> None:
    """Scheduler.schedule §1b: with chunked prefill off, a head prompt larger than the budget
    left stops admission, even for short requests behind it."""
    cfg = {
        "max_num_batched_tokens": 1024,
        "max_model_len": 1024,
        "num_gpu_blocks": 256,
        "max_num_seqs": 8,
    }
    reqs = [req("A", 700, 24), req("B", 1000, 8), req("C", 30, 8), req("D", 30, 8)]
    off = run_steps({**cfg, "enable_chunked_prefill": False}, reqs)
    assert at(off, 0)["scheduled"] == {"A": 700}
    assert at(off, 0)["waiting"] == ["B", "C", "D"]
    assert at(off, 1)["scheduled"] == {"A": 1, "B": 1000}
    on = run_steps(cfg, reqs)
    assert at(on, 0)["scheduled"] == {"A": 700, "B": 324}


def test_admission_needs_the_whole_sequence_to_fit() -> None:
    """KVCacheManager.allocate_slots §4.3 (scheduler_reserve_full_isl): a waiting request is
    admitted only if its whole prompt fits, even when only a chunk is scheduled now."""
    cfg = {
        "num_gpu_blocks": 9,
        "max_model_len": 128,
        "max_num_batched_tokens": 32,
        "max_num_seqs": 4,
    }
    reqs = [req("A", 32, 60), req("B", 100, 4, arrival_step=1)]
    # Step 1: A takes its 3rd block, 5 are free; B's 31-token chunk needs 2 but its whole
    # 100-token prompt needs 7.
    assert at(run_steps(cfg, reqs), 1)["scheduled"] == {"A": 1}
    loose = run_steps({**cfg, "scheduler_reserve_full_isl": False}, reqs)
    assert at(loose, 1)["scheduled"] == {"A": 1, "B": 31}


def test_watermark_applies_to_admissions_when_something_runs() -> None:
    """KVCacheManager.allocate_slots §4.3: int(watermark × num_gpu_blocks) blocks stay free for
    WAITING/PREEMPTED admissions, only when running is non-empty."""
    cfg = {"num_gpu_blocks": 101, "max_model_len": 1600}
    reqs = [req("A", 1200, 50), req("B", 240, 4, arrival_step=1)]
    # After step 1 A holds 76 blocks, 24 are free; B needs 15 (+10 watermark).
    assert "B" in at(run_steps(cfg, reqs), 1)["scheduled"]
    assert "B" not in at(run_steps({**cfg, "watermark": 0.1}, reqs), 1)["scheduled"]
    # Alone, a 75-block prompt is admitted although 75 + 50 watermark blocks > 100.
    alone = run_steps({**cfg, "watermark": 0.5}, [req("A", 1200, 2)])
    assert at(alone, 0)["scheduled"] == {"A": 1200}


def test_priority_waiting_order_breaks_ties_on_arrival_time_then_id() -> None:
    """Request.__lt__: lower priority value first, then earlier arrival_time, then request_id."""
    reqs = [
        req("X", 8, 1, priority=1, arrival_time=5.0, arrival_step=0),
        req("Y", 8, 1, priority=0, arrival_time=9.0, arrival_step=0),
        req("Z", 8, 1, priority=1, arrival_time=2.0, arrival_step=0),
        req("W", 8, 1, priority=1, arrival_time=2.0, arrival_step=0),
    ]
    steps = run_steps({"policy": "priority", "max_num_seqs": 1}, reqs)
    assert at(steps, 0)["waiting"] == ["W", "Z", "X"]
    order = sorted("XYZW", key=lambda r: first_step(steps, r))
    assert order == ["Y", "W", "Z", "X"]


# --- KV blocks --------------------------------------------------------------------------------


def test_blocks_are_ceil_of_computed_plus_new_over_block_size() -> None:
    """allocate_slots §4.1: a request holds ceil((num_computed + n) / block_size) blocks, so a
    decode takes a new block exactly when its position is a multiple of 16."""
    steps = run_steps({}, [req("A", 16, 40)])
    used = [s["kv_blocks_used"] for s in steps]
    assert used[0] == 1
    assert used[1] == used[16] == 2
    assert used[17] == 3


def test_null_block_is_not_usable() -> None:
    """BlockPool.__init__ / get_usage: block 0 is the null block; usage = used / (N - 1)."""
    steps = run_steps({"num_gpu_blocks": 9, "max_model_len": 128}, [req("A", 64, 2)])
    assert at(steps, 0)["kv_blocks_used"] == 4
    assert at(steps, 0)["kv_usage"] == 0.5


def _free_queue_after_first_step(config: dict[str, Any]) -> list[int]:
    seen: list[list[int]] = []

    def check(s: Scheduler, arrived: list[Req], idx: int) -> None:
        if idx == 0:
            seen.append(s.free_queue(100))

    watch(config, [req("A", 40, 1)], check)
    return seen[0]


def test_freed_blocks_unhashed_first_hashed_last_tail_first() -> None:
    """BlockPool.free_blocks §4.4: blocks come back in reverse; unhashed ones are prepended
    (LIFO reuse), hashed ones appended (LRU eviction, tail block first)."""
    cfg = {"num_gpu_blocks": 8, "max_model_len": 64}
    # A holds blocks 1, 2 (full, hashed) and 3 (partial) and finishes after step 0.
    assert _free_queue_after_first_step(cfg) == [3, 4, 5, 6, 7, 2, 1]
    nocache = _free_queue_after_first_step({**cfg, "enable_prefix_caching": False})
    assert nocache == [3, 2, 1, 4, 5, 6, 7]


def test_finished_requests_free_their_blocks_in_update_from_output() -> None:
    """update_from_output §7: a stopped request's blocks are freed at once."""
    steps = run_steps({"num_gpu_blocks": 9, "max_model_len": 128}, [req("A", 64, 1)])
    assert at(steps, 0)["finished"] == ["A"]
    assert at(steps, 0)["kv_blocks_used"] == 0


# --- prefix caching ---------------------------------------------------------------------------


def ids(n: int, start: int = 100) -> list[int]:
    return list(range(start, start + n))


def test_full_prompt_hit_recomputes_the_last_block() -> None:
    """get_computed_blocks §5: the hit is at most num_tokens - 1 tokens in whole blocks, so a
    fully cached 32-token prompt hits 16 and schedules 16; a 33-token one hits 32, schedules 1."""
    reqs = [
        {"id": "A", "prompt_token_ids": ids(32), "max_tokens": 1},
        {"id": "B", "prompt_token_ids": ids(32), "max_tokens": 1, "arrival_step": 1},
        {"id": "C", "prompt_token_ids": ids(33), "max_tokens": 1, "arrival_step": 2},
    ]
    steps = run_steps({}, reqs)
    assert at(steps, 1)["prefix_hit_tokens"] == {"B": 16}
    assert at(steps, 1)["scheduled"] == {"B": 16}
    assert at(steps, 2)["prefix_hit_tokens"] == {"C": 32}
    assert at(steps, 2)["scheduled"] == {"C": 1}


def test_blocks_are_cached_at_allocation_so_same_step_admissions_hit() -> None:
    """allocate_slots §4.2: full blocks enter the cache when allocated, so a request admitted
    later in the same step already hits them."""
    reqs = [
        {"id": "A", "prompt_token_ids": ids(64), "max_tokens": 2},
        {"id": "B", "prompt_token_ids": ids(64), "max_tokens": 2},
    ]
    s0 = at(run_steps({}, reqs), 0)
    assert s0["prefix_hit_tokens"] == {"A": 0, "B": 48}
    assert s0["scheduled"] == {"A": 64, "B": 16}


def test_length_only_prompts_never_share_blocks() -> None:
    """A prompt given as a length has content unique to its request: no cross-request hits."""
    steps = run_steps({}, [req("A", 64, 1), req("B", 64, 1, arrival_step=1)])
    assert at(steps, 1)["prefix_hit_tokens"] == {"B": 0}


def test_a_hit_on_a_free_block_costs_free_capacity() -> None:
    """get_num_blocks_to_allocate §4.1: hit blocks that sit in the free queue (ref_cnt 0) are
    counted as allocations, since touching them takes them out of the queue."""
    cfg = {"num_gpu_blocks": 9, "max_model_len": 128}
    reqs = [
        {"id": "A", "prompt_token_ids": ids(48), "max_tokens": 1},
        {"id": "B", "prompt_token_ids": ids(48, 500), "max_tokens": 4},
        {"id": "C", "prompt_token_ids": ids(96), "max_tokens": 1, "arrival_step": 1},
    ]
    steps = run_steps(cfg, reqs)
    # Step 1: B holds 4 blocks, 4 are free of which 3 are A's cached blocks. C hits those 3 and
    # needs 3 more: 6 > 4 (without the rule it would be 3 <= 4 and C would be admitted).
    assert at(steps, 1)["scheduled"] == {"B": 1}
    # B finishes at step 3; in step 4 C hits A's 48 tokens and computes the other 48.
    assert at(steps, 4)["prefix_hit_tokens"] == {"C": 48}
    assert at(steps, 4)["scheduled"] == {"C": 48}


# --- stop conditions --------------------------------------------------------------------------


def finish(rq: dict[str, Any], config: dict[str, Any] | None = None) -> tuple[int, str]:
    r = result(series(config or {}, [rq]), rq["id"])
    return r["output_tokens"], r["finish_reason"]


def test_eos_stops_before_the_length_cap() -> None:
    """check_stop: EOS is checked first, so EOS on the max_tokens-th token reports 'stop'."""
    assert finish(req("A", 8, 10, eos_position=3)) == (3, "stop")
    assert finish(req("A", 8, 3, eos_position=3)) == (3, "stop")


def test_ignore_eos_runs_to_the_length_cap() -> None:
    """check_stop: with ignore_eos the EOS token does not stop the request."""
    assert finish(req("A", 8, 5, eos_position=3, ignore_eos=True)) == (5, "length")


def test_stop_token_ids_and_config_eos_token_id() -> None:
    """check_stop: a sampled stop_token_id stops; eos_token_id comes from the config."""
    assert finish(req("A", 8, 10, output_token_ids=[5, 9, 7], stop_token_ids=[9])) == (2, "stop")
    assert finish(req("A", 8, 10, output_token_ids=[11, 11, 42]), {"eos_token_id": 42}) == (
        3,
        "stop",
    )
    assert finish(req("A", 8, 10, output_token_ids=[11, 11, 42])) == (10, "length")


def test_max_model_len_caps_the_sequence() -> None:
    """check_stop: num_tokens >= max_model_len is a length cap."""
    assert finish(req("A", 60, 100), {"max_model_len": 64}) == (4, "length")


# --- static batching --------------------------------------------------------------------------


def test_static_batching_admits_nobody_until_the_batch_is_done() -> None:
    """Static batching (ours, for comparison): a batch reserves prompt + max_tokens blocks and
    runs to its longest member before the next batch starts."""
    reqs = [req("A", 32, 4), req("B", 32, 20), req("C", 16, 2)]
    steps = run_steps({"max_num_seqs": 2, "batching": "static"}, reqs)
    assert at(steps, 0)["kv_blocks_used"] == 3 + 4  # ceil(36/16) + ceil(52/16)
    assert first_step(steps, "C") == 20  # B's 20th output ends step 19
    cont = run_steps({"max_num_seqs": 2}, reqs)
    assert first_step(cont, "C") == 4  # A's 4th output ends step 3


# --- arrivals ---------------------------------------------------------------------------------


def test_arrival_step_adds_before_that_schedule_and_idle_steps_are_skipped() -> None:
    """EngineCore.step: requests arriving at step k are added before the k-th schedule();
    steps with nothing to run are not recorded and take no time."""
    se = series({}, [req("A", 10, 2, arrival_step=5), req("B", 10, 2, arrival_step=9)])
    assert se["step"] == [5, 6, 9, 10]
    assert se["t_start"][0] == 0.0
    assert se["t_start"][2] == se["t_end"][1]  # the idle steps 7-8 take no time


def test_arrival_time_jumps_an_idle_clock_and_counts_queueing_from_arrival() -> None:
    """A request with only arrival_time is added before the first step starting at or after
    that time; its latencies count from arrival_time."""
    lat = {"mode": "linear", "base_ms": 10, "prefill_token_ms": 0, "decode_token_ms": 0}
    raw = {
        "requests": [
            {"id": "A", "prompt_tokens": 10, "max_tokens": 3, "arrival_time": 1.0},
            {"id": "B", "prompt_tokens": 10, "max_tokens": 1, "arrival_time": 1.015},
        ],
        "latency": lat,
    }
    from app.sim.serving.params import parse
    from app.sim.serving.run import simulate

    se = simulate(parse(raw)).series
    assert se["t_start"][:3] == [1.0, 1.01, 1.02]
    b = result(se, "B")
    # B arrives during step 1 (1.01-1.02) and is added before step 2, which ends at 1.03.
    assert b["arrival_s"] == 1.015
    assert b["queue"] == pytest.approx(0.005)
    assert b["ttft"] == pytest.approx(0.015)


def test_a_one_token_prefill_remainder_is_prefill_not_decode() -> None:
    """A chunk of 1 prompt token is prefill work (only tokens after the first output decode)."""
    se = series(
        {"max_num_batched_tokens": 16, "max_num_seqs": 8, "block_size": 32}, [req("A", 17, 3)]
    )
    assert (se["prefill_tokens"][0], se["decode_tokens"][0]) == (16, 0)
    assert (se["prefill_tokens"][1], se["decode_tokens"][1]) == (1, 0)
    assert (se["prefill_tokens"][2], se["decode_tokens"][2]) == (0, 1)
