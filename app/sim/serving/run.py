"""Drive the scheduler through a workload: arrivals, steps, time, per-step records.

``simulate(params)`` returns a :class:`RunResult`: full-resolution per-step series (always),
the per-request results, and the snapshots of the steps chosen for frames. A run with more
steps than ``max_frames`` keeps every step in the series but snapshots a uniform sample: the
stride doubles (and every other snapshot is dropped) whenever ``max_frames`` is reached, so
between half and all of ``max_frames`` snapshots remain, evenly spaced, plus the last step.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypedDict, TypeVar

from app.sim.serving.engine import FINISHED, Req, Scheduler, step_seconds
from app.sim.serving.params import SchedulerParams

MAX_FRAMES = 200
_idx = operator.attrgetter("idx")


class RequestResult(TypedDict):
    id: str
    prompt_tokens: int
    output_tokens: int
    max_tokens: int
    priority: int
    arrival_step: int
    finish_step: int
    arrival_s: float
    first_scheduled_s: float
    first_token_s: float
    finish_s: float
    ttft: float  # first token - arrival
    tpot: float | None  # (finish - first token) / (outputs - 1); None for one output
    e2e: float  # finish - arrival
    queue: float  # first scheduled - arrival
    max_itl: float  # the longest gap between two of its tokens (a preemption shows here)
    num_preemptions: int
    prefix_hit_tokens: int
    finish_reason: str


class SchedulerSeries(TypedDict):
    """One entry per executed step (idle steps, with nothing to run, are skipped); event
    columns are CSR-encoded: step ``s`` owns entries ``off[s]:off[s + 1]``, values are request
    indices into ``request_ids``."""

    step: list[int]
    t_start: list[float]
    t_end: list[float]
    prefill_tokens: list[int]
    decode_tokens: list[int]
    padding_tokens: list[int]
    num_running: list[int]
    num_waiting: list[int]
    kv_blocks_used: list[int]
    kv_usage: list[float]
    prefix_hit_tokens: list[int]
    sched_off: list[int]
    sched_req: list[int]
    sched_tokens: list[int]
    arrive_off: list[int]
    arrive_req: list[int]
    admit_off: list[int]
    admit_req: list[int]
    admit_hit: list[int]
    preempt_off: list[int]
    preempt_req: list[int]
    finish_off: list[int]
    finish_req: list[int]
    request_ids: list[str]
    requests: list[RequestResult]


T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult(Generic[T]):
    series: SchedulerSeries
    snapshots: tuple[tuple[int, T], ...]  # (series index, snapshot) in step order
    ended_early: str | None


def simulate(
    params: SchedulerParams,
    snapshot: Callable[[Scheduler, list[Req], int], T] | None = None,
    progress: Callable[[float, float], None] | None = None,
    max_frames: int = MAX_FRAMES,
    total_work: float = 0.0,
) -> RunResult[T]:
    """Run ``params`` to completion (every request finishes)."""
    s = Scheduler(params)
    reqs = s.reqs
    nreq = len(reqs)
    cost_of = step_seconds(params.latency)
    usable = params.config.num_gpu_blocks - 1

    # Arrivals: by step (in input order within a step), or by time (in time order).
    by_step = sorted(
        (r for r in reqs if r.spec.step is not None),
        key=lambda r: (r.spec.step or 0, r.idx),
    )
    step_of = [r.spec.step or 0 for r in by_step]
    by_time = sorted(
        (r for r in reqs if r.spec.step is None),
        key=lambda r: (r.spec.arrival_time, r.idx),
    )
    ps = 0
    pt = 0

    step_l: list[int] = []
    t_start_l: list[float] = []
    t_end_l: list[float] = []
    prefill_l: list[int] = []
    decode_l: list[int] = []
    padding_l: list[int] = []
    nrun_l: list[int] = []
    nwait_l: list[int] = []
    used_l: list[int] = []
    usage_l: list[float] = []
    hit_l: list[int] = []
    scheds: list[dict[Req, int]] = []
    arrive_off = [0]
    arrive_req: list[int] = []
    admit_off = [0]
    admit_req: list[int] = []
    admit_hit: list[int] = []
    preempt_off = [0]
    preempt_req: list[int] = []
    finish_off = [0]
    finish_req: list[int] = []

    snaps: list[tuple[int, T]] = []
    stride = _initial_stride(s, max_frames)
    ended_early: str | None = None
    report_every = max(total_work / 100.0, 1.0)
    next_report = report_every
    idle_guard = 0
    max_steps = 50 * (sum(r.prompt_len + r.finish_out for r in reqs) + nreq) + 1000
    last_snapped = -1

    while s.num_finished < nreq:
        k = s.step_k
        clock = s.clock
        added: list[Req] = []
        while ps < len(by_step) and step_of[ps] <= k:
            r = by_step[ps]
            at = r.spec.arrival_time
            s.add_request(r, clock, clock if at is None else at)
            added.append(r)
            ps += 1
        while pt < len(by_time) and (by_time[pt].spec.arrival_time or 0.0) <= clock:
            r = by_time[pt]
            at = r.spec.arrival_time or 0.0
            s.add_request(r, at, at)
            added.append(r)
            pt += 1
        if not s.running and not s.num_waiting():
            # Idle: EngineCore.step returns at once; jump to the next arrival.
            if ps < len(by_step):
                s.step_k = step_of[ps]
                continue
            if pt < len(by_time):
                s.clock = max(clock, by_time[pt].spec.arrival_time or 0.0)
                continue
            break  # pragma: no cover - every request has arrived and finished
        s.schedule()
        dt = cost_of(s.prefill_tokens, s.decode_tokens + s.padding_tokens, s.ctx_tokens)
        t_end = clock + dt
        s.update_from_output(t_end)
        sched = s.sched
        if not sched:
            idle_guard += 1
            if idle_guard > 1000:  # pragma: no cover - no rule of vLLM leads here
                ended_early = "no_progress"
                break
        else:
            idle_guard = 0

        # Records.
        idx = len(step_l)
        step_l.append(k)
        t_start_l.append(clock)
        t_end_l.append(t_end)
        prefill_l.append(s.prefill_tokens)
        decode_l.append(s.decode_tokens)
        padding_l.append(s.padding_tokens)
        nrun_l.append(len(s.running))
        nwait_l.append(s.num_waiting())
        used = usable - s.nfree
        used_l.append(used)
        usage_l.append(used / usable)
        scheds.append(sched)
        if added:
            arrive_req.extend(map(_idx, added))
        arrive_off.append(len(arrive_req))
        hits = 0
        for a in s.admissions:
            admit_req.append(a.req.idx)
            admit_hit.append(a.hit_tokens)
            hits += a.hit_tokens
        admit_off.append(len(admit_req))
        hit_l.append(hits)
        for e in s.preempt_events:
            preempt_req.append(e.victim.idx)
        preempt_off.append(len(preempt_req))
        if s.finished_now:
            finish_req.extend(map(_idx, s.finished_now))
        finish_off.append(len(finish_req))

        if snapshot is not None and idx % stride == 0:
            snaps.append((idx, snapshot(s, added, idx)))
            last_snapped = idx
            if len(snaps) >= max_frames:
                snaps = snaps[::2]
                stride *= 2
        s.step_k = k + 1
        s.clock = t_end
        if progress is not None and s.tokens_processed >= next_report:
            progress(min(float(s.tokens_processed), total_work), total_work)
            next_report = s.tokens_processed + report_every
        if len(step_l) > max_steps:  # pragma: no cover - a safety net, not a vLLM rule
            ended_early = "step_limit"
            break

    if snapshot is not None and step_l and last_snapped != len(step_l) - 1:
        snaps.append((len(step_l) - 1, snapshot(s, [], len(step_l) - 1)))

    sched_off = [0]
    sched_req: list[int] = []
    sched_tok: list[int] = []
    for d in scheds:
        sched_req.extend(map(_idx, d))
        sched_tok.extend(d.values())
        sched_off.append(len(sched_req))

    results: list[RequestResult] = [_result(r) for r in reqs]
    series: SchedulerSeries = {
        "step": step_l,
        "t_start": t_start_l,
        "t_end": t_end_l,
        "prefill_tokens": prefill_l,
        "decode_tokens": decode_l,
        "padding_tokens": padding_l,
        "num_running": nrun_l,
        "num_waiting": nwait_l,
        "kv_blocks_used": used_l,
        "kv_usage": usage_l,
        "prefix_hit_tokens": hit_l,
        "sched_off": sched_off,
        "sched_req": sched_req,
        "sched_tokens": sched_tok,
        "arrive_off": arrive_off,
        "arrive_req": arrive_req,
        "admit_off": admit_off,
        "admit_req": admit_req,
        "admit_hit": admit_hit,
        "preempt_off": preempt_off,
        "preempt_req": preempt_req,
        "finish_off": finish_off,
        "finish_req": finish_req,
        "request_ids": [r.rid for r in reqs],
        "requests": results,
    }
    if progress is not None:
        progress(total_work, total_work)
    return RunResult(series=series, snapshots=tuple(snaps), ended_early=ended_early)


def estimate_steps(s: Scheduler) -> int:
    """A rough step count (for the frame stride): the larger of the token-budget bound and the
    decode bound with as many requests running as fit the KV cache or ``max_num_seqs``."""
    reqs = s.reqs
    if not reqs:
        return 1
    total = sum(r.prompt_len + r.finish_out for r in reqs)
    outputs = sum(r.finish_out for r in reqs)
    avg_blocks = max(total / len(reqs) / s.bs, 1.0)
    concurrent = max(1.0, min(float(s.max_seqs), (s.nblocks - 1) / avg_blocks, float(len(reqs))))
    longest = max(r.finish_out for r in reqs)
    return int(max(total / s.budget_max, outputs / concurrent, longest, 1))


def _initial_stride(s: Scheduler, max_frames: int) -> int:
    est = estimate_steps(s)
    stride = 1
    while est > stride * max_frames:
        stride *= 2
    return stride


def _result(r: Req) -> RequestResult:
    done = r.status == FINISHED
    ttft = r.t_first_token - r.t_arrival if r.t_first_token >= 0 else -1.0
    e2e = r.t_finish - r.t_arrival if done else -1.0
    tpot = (
        (r.t_finish - r.t_first_token) / (r.num_output - 1) if done and r.num_output > 1 else None
    )
    return {
        "id": r.rid,
        "prompt_tokens": r.prompt_len,
        "output_tokens": r.num_output,
        "max_tokens": r.spec.max_tokens,
        "priority": r.spec.priority,
        "arrival_step": r.step_arrival,
        "finish_step": r.step_finish,
        "arrival_s": r.t_arrival,
        "first_scheduled_s": r.t_first_sched,
        "first_token_s": r.t_first_token,
        "finish_s": r.t_finish,
        "ttft": ttft,
        "tpot": tpot,
        "e2e": e2e,
        "queue": r.t_first_sched - r.t_arrival if r.t_first_sched >= 0 else -1.0,
        "max_itl": r.max_itl,
        "num_preemptions": r.preemptions,
        "prefix_hit_tokens": r.hit_tokens,
        "finish_reason": r.finish_reason if done else "unfinished",
    }
