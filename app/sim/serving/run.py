"""Drive the scheduler through a workload: arrivals, steps, time, per-step records.

``simulate(params)`` returns a :class:`RunResult`: full-resolution per-step series (always),
the per-request results, and the snapshots of the steps chosen for frames. A run with more
steps than ``max_frames`` keeps every step in the series but snapshots a uniform sample: the
stride doubles (and every other snapshot is dropped) whenever ``max_frames`` is reached, so
between half and all of ``max_frames`` snapshots remain, evenly spaced, plus the last step.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Generic, TypedDict, TypeVar

try:  # mypyc reads this decorator; mypy_extensions comes with mypy, a test dependency
    from mypy_extensions import mypyc_attr
except ImportError:  # pragma: no cover - only the app installed: nothing is compiled
    from app.sim.native import mypyc_attr

from app.sim.serving.engine import Scheduler
from app.sim.serving.latency import step_seconds
from app.sim.serving.params import SchedulerParams
from app.sim.serving.request import FINISHED, Req

MAX_FRAMES: Final = 200
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
    sched_req: array[int]  # int arrays: pickled as bytes (a large run has ~500 k of each)
    sched_tokens: array[int]
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


@mypyc_attr(native_class=False)  # mypyc (scripts/build_native.py): a generic dataclass stays a
@dataclass(frozen=True, slots=True, kw_only=True)  # Python class
class RunResult(Generic[T]):
    series: SchedulerSeries
    snapshots: tuple[tuple[int, T], ...]  # (series index, snapshot) in step order
    ended_early: str | None


class _Arrivals:
    """The requests not yet added, by step (in input order within a step) and by time (in time
    order)."""

    def __init__(self, reqs: list[Req]) -> None:
        self.by_step = sorted(
            (r for r in reqs if r.spec.step is not None),
            key=lambda r: (r.spec.step or 0, r.idx),
        )
        self.step_of = [r.spec.step or 0 for r in self.by_step]
        self.by_time = sorted(
            (r for r in reqs if r.spec.step is None),
            key=lambda r: (r.spec.arrival_time, r.idx),
        )
        self.ps = 0
        self.pt = 0

    def add_due(self, s: Scheduler) -> list[Req]:
        """``add_request`` every request due at ``s``'s step or clock; returns them."""
        k = s.step_k
        clock = s.clock
        added: list[Req] = []
        by_step = self.by_step
        while self.ps < len(by_step) and self.step_of[self.ps] <= k:
            r = by_step[self.ps]
            at = r.spec.arrival_time
            s.add_request(r, clock, clock if at is None else at)
            added.append(r)
            self.ps += 1
        by_time = self.by_time
        while self.pt < len(by_time) and (by_time[self.pt].spec.arrival_time or 0.0) <= clock:
            r = by_time[self.pt]
            at = r.spec.arrival_time or 0.0
            s.add_request(r, at, at)
            added.append(r)
            self.pt += 1
        return added

    def skip_idle(self, s: Scheduler) -> bool:
        """Idle (``EngineCore.step`` returns at once): jump to the next arrival; False when
        none is left."""
        if self.ps < len(self.by_step):
            s.step_k = self.step_of[self.ps]
            return True
        if self.pt < len(self.by_time):
            s.clock = max(s.clock, self.by_time[self.pt].spec.arrival_time or 0.0)
            return True
        return False


class _Records:
    """The per-step series, appended to as the run goes (event columns CSR-encoded)."""

    def __init__(self, usable: int) -> None:
        self.usable = usable
        self.step: list[int] = []
        self.t_start: list[float] = []
        self.t_end: list[float] = []
        self.prefill: list[int] = []
        self.decode: list[int] = []
        self.padding: list[int] = []
        self.nrun: list[int] = []
        self.nwait: list[int] = []
        self.used: list[int] = []
        self.usage: list[float] = []
        self.hit: list[int] = []
        self.scheds: list[dict[Req, int]] = []
        self.arrive_off = [0]
        self.arrive_req: list[int] = []
        self.admit_off = [0]
        self.admit_req: list[int] = []
        self.admit_hit: list[int] = []
        self.preempt_off = [0]
        self.preempt_req: list[int] = []
        self.finish_off = [0]
        self.finish_req: list[int] = []

    def add(self, s: Scheduler, k: int, clock: float, t_end: float, added: list[Req]) -> None:
        """Record the step ``s`` has just executed (numbered ``k``, from ``clock`` to ``t_end``)."""
        self.step.append(k)
        self.t_start.append(clock)
        self.t_end.append(t_end)
        self.prefill.append(s.prefill_tokens)
        self.decode.append(s.decode_tokens)
        self.padding.append(s.padding_tokens)
        self.nrun.append(len(s.running))
        self.nwait.append(s.num_waiting())
        used = self.usable - s.nfree
        self.used.append(used)
        self.usage.append(used / self.usable)
        self.scheds.append(s.sched)
        if added:
            self.arrive_req.extend(map(_idx, added))
        self.arrive_off.append(len(self.arrive_req))
        hits = 0
        for a in s.admissions:
            self.admit_req.append(a.req.idx)
            self.admit_hit.append(a.hit_tokens)
            hits += a.hit_tokens
        self.admit_off.append(len(self.admit_req))
        self.hit.append(hits)
        for e in s.preempt_events:
            self.preempt_req.append(e.victim.idx)
        self.preempt_off.append(len(self.preempt_req))
        if s.finished_now:
            self.finish_req.extend(map(_idx, s.finished_now))
        self.finish_off.append(len(self.finish_req))

    def series(self, reqs: list[Req]) -> SchedulerSeries:
        sched_off = [0]
        sched_req: array[int] = array("i")
        sched_tok: array[int] = array("i")
        for d in self.scheds:
            sched_req.extend(map(_idx, d))
            sched_tok.extend(d.values())
            sched_off.append(len(sched_req))
        return {
            "step": self.step,
            "t_start": self.t_start,
            "t_end": self.t_end,
            "prefill_tokens": self.prefill,
            "decode_tokens": self.decode,
            "padding_tokens": self.padding,
            "num_running": self.nrun,
            "num_waiting": self.nwait,
            "kv_blocks_used": self.used,
            "kv_usage": self.usage,
            "prefix_hit_tokens": self.hit,
            "sched_off": sched_off,
            "sched_req": sched_req,
            "sched_tokens": sched_tok,
            "arrive_off": self.arrive_off,
            "arrive_req": self.arrive_req,
            "admit_off": self.admit_off,
            "admit_req": self.admit_req,
            "admit_hit": self.admit_hit,
            "preempt_off": self.preempt_off,
            "preempt_req": self.preempt_req,
            "finish_off": self.finish_off,
            "finish_req": self.finish_req,
            "request_ids": [r.rid for r in reqs],
            "requests": [_result(r) for r in reqs],
        }


class _Snapshots(Generic[T]):
    """A uniform sample of step snapshots: the stride doubles (and every other snapshot is
    dropped) whenever ``max_frames`` is reached."""

    def __init__(
        self, s: Scheduler, snapshot: Callable[[Scheduler, list[Req], int], T], max_frames: int
    ) -> None:
        self.take = snapshot
        self.max_frames = max_frames
        self.stride = _initial_stride(s, max_frames)
        self.snaps: list[tuple[int, T]] = []
        self.last = -1

    def offer(self, s: Scheduler, added: list[Req], idx: int) -> None:
        if idx % self.stride:
            return
        self.snaps.append((idx, self.take(s, added, idx)))
        self.last = idx
        if len(self.snaps) >= self.max_frames:
            self.snaps = self.snaps[::2]
            self.stride *= 2

    def close(self, s: Scheduler, last: int) -> tuple[tuple[int, T], ...]:
        """The snapshots, with the run's last step always among them."""
        if last >= 0 and self.last != last:
            self.snaps.append((last, self.take(s, [], last)))
        return tuple(self.snaps)


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
    arrivals = _Arrivals(reqs)
    rec = _Records(params.config.num_gpu_blocks - 1)
    snaps = _Snapshots(s, snapshot, max_frames) if snapshot is not None else None
    ended_early: str | None = None
    report_every = max(total_work / 100.0, 1.0)
    next_report = report_every
    idle_guard = 0
    max_steps = 50 * (sum(r.prompt_len + r.finish_out for r in reqs) + nreq) + 1000

    while s.num_finished < nreq:
        k = s.step_k
        clock = s.clock
        added = arrivals.add_due(s)
        if not s.running and not s.num_waiting():
            if arrivals.skip_idle(s):
                continue
            break  # pragma: no cover - every request has arrived and finished
        s.schedule()
        t_end = clock + cost_of(s.prefill_tokens, s.decode_tokens + s.padding_tokens, s.ctx_tokens)
        s.update_from_output(t_end)
        idle_guard = 0 if s.sched else idle_guard + 1
        if idle_guard > 1000:  # pragma: no cover - no rule of vLLM leads here
            ended_early = "no_progress"
            break
        idx = len(rec.step)
        rec.add(s, k, clock, t_end, added)
        if snaps is not None:
            snaps.offer(s, added, idx)
        s.step_k = k + 1
        s.clock = t_end
        if progress is not None and s.tokens_processed >= next_report:
            progress(min(float(s.tokens_processed), total_work), total_work)
            next_report = s.tokens_processed + report_every
        if len(rec.step) > max_steps:  # pragma: no cover - a safety net, not a vLLM rule
            ended_early = "step_limit"
            break

    snapshots = snaps.close(s, len(rec.step) - 1) if snaps is not None else ()
    series = rec.series(reqs)
    if progress is not None:
        progress(total_work, total_work)
    return RunResult(series=series, snapshots=snapshots, ended_early=ended_early)


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
