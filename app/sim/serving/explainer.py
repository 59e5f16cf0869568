"""The scheduler explainer: vLLM 0.33's continuous-batching scheduler, step by step.

``POST /api/v1/explainers/scheduler/run`` takes ``{"config": {...}, "requests": [...],
"latency": {...}}`` (see :mod:`app.sim.serving.params`) and returns :meth:`public_json`:
``steps[]`` (one per executed step: tokens scheduled per request, preempted, finished, running
and waiting after the step, KV blocks used and usage, prefix-cache hit tokens per admitted
request), ``requests[]`` (latency metrics in seconds) and ``summary``.

A step is one ``schedule()`` and one ``update_from_output()``; ``steps[]`` lists the steps that
ran (a step with nothing in the system is skipped, so ``step`` may jump to the next arrival;
vLLM's engine also runs one empty ``schedule()`` after requests finish, to hand
``finished_req_ids`` to the workers: it decides nothing and is not a step here). ``running``
and ``waiting`` are the queues after the step, in service order. Times are seconds from the
latency model; a request added at step ``k`` arrives at the start of step ``k``, one with only
``arrival_time`` arrives then (and the engine, if idle, waits for it). ``arrival_time`` also
breaks priority ties (``Request.__lt__``); without it a request's arrival time is the clock when
it is added, and requests added together tie on it and are ordered by id.

Cost is the number of tokens to process: each request's prompt plus the output tokens it will
produce (``max_tokens``, or fewer when EOS / a stop id / ``max_model_len`` ends it first),
summed; recomputation after preemption is not counted in advance.
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import Any, TypeAlias, TypedDict

from app.sim.core.errors import ParamError
from app.sim.core.explainer import (
    EncodedJSON,
    Explainer,
    JSONValue,
    Limits,
    Progress,
    ResultKind,
)
from app.sim.core.i18n import msg
from app.sim.core.sources import VLLM_0_33
from app.sim.core.trace import Frame, Trace
from app.sim.native import pace
from app.sim.serving import engine, stepedits
from app.sim.serving import params as sp
from app.sim.serving.narrate import FrameParts, StepState, snapshot
from app.sim.serving.params import SchedulerParams
from app.sim.serving.presets import PRESETS
from app.sim.serving.request import finish_point
from app.sim.serving.run import MAX_FRAMES, SchedulerSeries, simulate
from app.sim.serving.stepjson import steps_pieces

SIM_VERSION = "scheduler-2"  # 2: a frame lists only the KV blocks in use or hashed
SchedulerTrace: TypeAlias = Trace[StepState, SchedulerSeries]
MAX_WORK_TOKENS = 20_000_000


class StepJSON(TypedDict):
    step: int
    t_start: float
    t_end: float
    scheduled: dict[str, int]
    preempted: list[str]
    finished: list[str]
    running: list[str]
    waiting: list[str]
    kv_blocks_used: int
    kv_usage: float
    prefix_hit_tokens: dict[str, int]


def cost_tokens(p: SchedulerParams) -> int:
    """Tokens to process: prompt + produced output tokens per request, summed. The last
    params' figure is kept: a request asks it four times (parse, the trace's size, the run's
    time, its lane), each a pass over every request."""
    global _last_cost
    last = _last_cost
    if last is not None and last[0] is p:
        return last[1]
    eos = p.config.eos_token_id
    mml = p.config.max_model_len
    tokens = sum(r.prompt_tokens + finish_point(r, eos, mml)[0] for r in p.requests)
    _last_cost = (p, tokens)
    return tokens


_last_cost: tuple[SchedulerParams, int] | None = None


class SchedulerExplainer(Explainer[SchedulerParams, StepState, SchedulerSeries]):
    name = "scheduler"
    title = msg("vLLM scheduler")
    summary = msg(
        "Step through vLLM 0.33's scheduler: the token budget, chunked prefill, KV blocks, "
        "prefix-cache hits, preemption and the latency that results; compare with static "
        "batching."
    )
    sim_version = SIM_VERSION
    source = VLLM_0_33
    presets = PRESETS
    default_preset = "continuous-batching"
    limits = Limits(
        max_work=MAX_WORK_TOKENS,
        unit=msg("tokens to process"),
        # measured (bench/cost_calibration.py), pure Python / compiled (docs/native.md): the
        # step loop runs ~1.6× faster compiled, and so does building its frames, which are
        # quicker to build than the kernel explainers' (mostly lists of ids)
        work_per_second=pace(engine, 5_000_000.0, 8_000_000.0),
        seconds_per_byte=pace(engine, 5e-8, 3.5e-8),
    )
    result_kinds = (
        ResultKind(key="ok", label=msg("ok"), tone="ok"),
        ResultKind(key="preempt", label=msg("preemption"), tone="warn"),
        ResultKind(key="blocked", label=msg("head-of-line blocked"), tone="warn"),
    )
    compact_form = stepedits.COMPACT_FORM_DOC

    def parse(self, raw: JSONValue) -> SchedulerParams:
        p = sp.parse(raw)
        work = self.cost(p)
        if work > self.limits.max_work:
            raise ParamError.single(
                ("requests",),
                msg(
                    "this workload is {work:,.0f} tokens to process; the limit is "
                    "{limit:,.0f}: use fewer or shorter requests",
                    work=work,
                    limit=self.limits.max_work,
                ),
            )
        return p

    def dump(self, params: SchedulerParams) -> dict[str, JSONValue]:
        return sp.dump(params)

    def cost(self, params: SchedulerParams) -> float:
        return float(cost_tokens(params))

    def expected_bytes(self, params: SchedulerParams) -> float:
        """At most ``MAX_FRAMES`` frames, each the running requests (~180 pickled bytes each),
        the waiting ones' ids (~9) and the KV blocks in use (~6; the cache is stored sparsely)."""
        c = params.config
        n = len(params.requests)
        blocks = min(c.num_gpu_blocks, -(-self.cost(params) // c.block_size))
        per_frame = 1000 + 180 * min(n, c.max_num_seqs) + 9 * n + 6 * blocks
        return (MAX_FRAMES + 1) * per_frame

    def expected_seconds(self, params: SchedulerParams) -> float:
        # the block pool is built whole: ~0.2 s per million GPU blocks
        return super().expected_seconds(params) + params.config.num_gpu_blocks * 2e-7

    def run(self, params: SchedulerParams, progress: Progress | None = None) -> SchedulerTrace:
        res = simulate(
            params,
            snapshot=snapshot,
            progress=progress,
            max_frames=MAX_FRAMES,
            total_work=self.cost(params),
        )
        frames = tuple(_frame(i, parts) for i, (_, parts) in enumerate(res.snapshots))
        return Trace(
            explainer=self.name,
            sim_version=SIM_VERSION,
            params=params,
            frames=frames,
            series=res.series,
            summary=summarize(params, res.series),
            ended_early=res.ended_early,
        )

    def public_json(self, trace: SchedulerTrace) -> dict[str, JSONValue]:
        series = trace.series
        params: SchedulerParams = trace.params
        return {
            "steps": list(steps_json(params, series)),
            "requests": [dict(r) for r in series["requests"]],
            "summary": dict(trace.summary),
        }

    def public_json_parts(
        self, trace: SchedulerTrace, compact: bool = False
    ) -> dict[str, JSONValue | EncodedJSON]:
        """:meth:`public_json` with ``steps`` written straight to JSON (app.sim.serving.stepjson:
        a large run's ``waiting`` lists are most of its answer); ``compact``: with
        ``"steps_encoding": "edits"`` and ``steps`` in that form (app.sim.serving.stepedits:
        each step's lists as edits of the step before's)."""
        if compact:
            return {
                "steps_encoding": stepedits.ENCODING,
                "steps": EncodedJSON(stepedits.edit_steps_bytes(trace.params, trace.series)),
                "requests": trace.series["requests"],
                "summary": dict(trace.summary),
            }
        return {
            "steps": EncodedJSON(*steps_pieces(trace.params, trace.series)),
            "requests": trace.series["requests"],  # written as they are, not copied
            "summary": dict(trace.summary),
        }

    def decode_compact(self, answer: dict[str, JSONValue]) -> dict[str, JSONValue]:
        return stepedits.decode_answer(answer)


def _frame(i: int, parts: FrameParts) -> Frame[StepState]:
    return Frame(
        index=i,
        op="step",
        result=parts.result,
        narration=parts.narration,
        source=parts.source,
        state=parts.state,
        fields=parts.fields,
        mark=parts.mark,
        notes=parts.notes,
        time=parts.time,
    )


def steps_json(params: SchedulerParams, se: SchedulerSeries) -> list[StepJSON]:
    """``steps[]``: the series per step, with running and waiting rebuilt by replaying the
    queue operations in the order ``schedule()`` made them."""
    ids = se["request_ids"]
    reqs = params.requests
    priority = params.config.policy == "priority"
    running: list[int] = []
    fcfs: deque[int] = deque()
    ordered: list[tuple[int, float, str, int]] = []  # priority: (priority, arrival, id, idx)
    arrival_key: dict[int, float] = {}
    out: list[StepJSON] = []
    for s in range(len(se["step"])):
        for j in range(se["arrive_off"][s], se["arrive_off"][s + 1]):
            i = se["arrive_req"][j]
            at = reqs[i].arrival_time
            arrival_key[i] = se["t_start"][s] if at is None else at
            if priority:
                bisect.insort(ordered, (reqs[i].priority, arrival_key[i], ids[i], i))
            else:
                fcfs.append(i)
        for j in range(se["preempt_off"][s], se["preempt_off"][s + 1]):
            i = se["preempt_req"][j]
            running.remove(i)
            if priority:
                bisect.insort(ordered, (reqs[i].priority, arrival_key[i], ids[i], i))
            else:
                fcfs.appendleft(i)
        for j in range(se["admit_off"][s], se["admit_off"][s + 1]):
            i = se["admit_req"][j]
            head = ordered.pop(0)[3] if priority else fcfs.popleft()
            if head != i:  # pragma: no cover - the scheduler only admits the queue head
                raise AssertionError("replay diverged from the scheduler")
            running.append(i)
        finished = [
            se["finish_req"][j] for j in range(se["finish_off"][s], se["finish_off"][s + 1])
        ]
        if finished:
            done = set(finished)
            running = [i for i in running if i not in done]
        a, b = se["sched_off"][s], se["sched_off"][s + 1]
        hits = {
            ids[se["admit_req"][j]]: se["admit_hit"][j]
            for j in range(se["admit_off"][s], se["admit_off"][s + 1])
        }
        out.append(
            {
                "step": se["step"][s],
                "t_start": se["t_start"][s],
                "t_end": se["t_end"][s],
                "scheduled": {
                    ids[i]: n
                    for i, n in zip(se["sched_req"][a:b], se["sched_tokens"][a:b], strict=True)
                },
                "preempted": [
                    ids[se["preempt_req"][j]]
                    for j in range(se["preempt_off"][s], se["preempt_off"][s + 1])
                ],
                "finished": [ids[i] for i in finished],
                "running": [ids[i] for i in running],
                "waiting": [ids[e[3]] for e in ordered] if priority else [ids[i] for i in fcfs],
                "kv_blocks_used": se["kv_blocks_used"][s],
                "kv_usage": se["kv_usage"][s],
                "prefix_hit_tokens": hits if params.config.enable_prefix_caching else {},
            }
        )
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    ys = sorted(xs)
    k = min(len(ys) - 1, max(0, int(round(q * (len(ys) - 1)))))
    return ys[k]


def summarize(params: SchedulerParams, se: SchedulerSeries) -> dict[str, Any]:
    """Run-level figures: latency percentiles (s), throughput (tokens/s), KV usage, hits."""
    rs = se["requests"]
    ttft = [r["ttft"] for r in rs if r["ttft"] >= 0]
    e2e = [r["e2e"] for r in rs if r["e2e"] >= 0]
    queue = [r["queue"] for r in rs if r["queue"] >= 0]
    tpot = [r["tpot"] for r in rs if r["tpot"] is not None]
    steps = len(se["step"])
    makespan = se["t_end"][-1] - min(r["arrival_s"] for r in rs) if steps else 0.0
    out_tokens = sum(r["output_tokens"] for r in rs)
    prompt_tokens = sum(r["prompt_tokens"] for r in rs)
    computed = sum(se["prefill_tokens"]) + sum(se["decode_tokens"])
    hits = sum(se["prefix_hit_tokens"])
    first_hits = 0  # prefix hits at each request's first admission (resumes excluded)
    seen: set[int] = set()
    for i, h in zip(se["admit_req"], se["admit_hit"], strict=True):
        if i not in seen:
            seen.add(i)
            first_hits += h
    usage = se["kv_usage"]
    dur = [b - a for a, b in zip(se["t_start"], se["t_end"], strict=True)]
    return {
        "batching": params.config.batching,
        "policy": params.config.policy,
        "num_requests": len(rs),
        "num_steps": steps,
        "makespan_s": makespan,
        "prompt_tokens": prompt_tokens,
        "output_tokens": out_tokens,
        "computed_tokens": computed,
        # Without preemption a request computes its prompt (less its first prefix hit) and every
        # output token but the last; anything beyond that was computed twice.
        "recomputed_tokens": computed + first_hits - (prompt_tokens + out_tokens - len(rs)),
        "output_throughput_tok_s": out_tokens / makespan if makespan > 0 else None,
        "total_throughput_tok_s": (out_tokens + prompt_tokens) / makespan if makespan > 0 else None,
        "mean_ttft_s": _mean(ttft),
        "p50_ttft_s": _pct(ttft, 0.5),
        "p99_ttft_s": _pct(ttft, 0.99),
        "mean_tpot_s": _mean(tpot),
        "p99_tpot_s": _pct(tpot, 0.99),
        "mean_e2e_s": _mean(e2e),
        "p99_e2e_s": _pct(e2e, 0.99),
        "mean_queue_s": _mean(queue),
        "max_itl_s": max((r["max_itl"] for r in rs), default=0.0),
        "num_preemptions": len(se["preempt_req"]),
        "prefix_hit_tokens": hits,
        "prefix_hit_rate": hits / prompt_tokens if prompt_tokens else 0.0,
        "peak_kv_usage": max(usage, default=0.0),
        "time_weighted_kv_usage": (
            sum(u * d for u, d in zip(usage, dur, strict=True)) / sum(dur) if sum(dur) > 0 else 0.0
        ),
        "padding_tokens": sum(se["padding_tokens"]),
    }
