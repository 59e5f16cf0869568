"""What a frame shows: the state after one step, and the decision log that led to it.

A frame's narration is a headline; its notes are the decision log, in the order the scheduler
made the decisions (running requests, preemptions, admissions, why admission stopped, requests
finishing). Every sentence is a ``msg()`` with its figures as parameters.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import TypedDict

from app.sim.core.i18n import Message, msg
from app.sim.core.sources import SourceRef
from app.sim.core.trace import Field
from app.sim.serving import sources as src
from app.sim.serving.engine import (
    STOP_BUDGET,
    STOP_HOL,
    STOP_KV,
    STOP_KV_FULL,
    STOP_MAX_SEQS,
    STOP_PREEMPTED,
    STOP_STATIC_BATCH,
    Admission,
    PreemptEvent,
    Scheduler,
)
from app.sim.serving.request import FINISHED, PREEMPTED, WAITING, Req

MAX_RUNNING_VIEWS = 24  # request rows in a frame: running ones (in list order) ...
MAX_WAITING_VIEWS = 8  # ... and the head of the waiting queue
MAX_FREE_QUEUE_VIEW = 256
MAX_LOG_LINES = 16
MAX_IDS_LISTED = 8

STOP_NAMES = {
    0: "queue_empty",
    STOP_BUDGET: "budget",
    STOP_MAX_SEQS: "max_num_seqs",
    STOP_HOL: "head_of_line",
    STOP_KV_FULL: "kv_full_sequence",
    STOP_KV: "kv_chunk",
    STOP_PREEMPTED: "preempted_this_step",
    STOP_STATIC_BATCH: "static_batch_running",
}


class ReqView(TypedDict):
    id: str
    phase: str  # waiting | preempted | prefill | decode | finished
    prompt_tokens: int
    num_tokens: int  # prompt + outputs so far
    computed: int  # num_computed_tokens
    output_tokens: int
    max_tokens: int
    priority: int
    scheduled: int  # tokens this step (0 when not scheduled)
    blocks: list[int]  # block table, in order
    num_preemptions: int


class Spend(TypedDict):
    """The token budget spent this step, request by request in scheduling order (columns)."""

    ids: list[str]
    tokens: list[int]
    kinds: list[str]  # decode | prefill | recompute


class KVView(TypedDict):
    """The block pool after the step, sparse: only the blocks in use or still hashed are
    listed (ascending, with their owner, ref_cnt and hash flag); every other block but the
    null block 0 is free and unhashed. A frame's size follows what is in use, not
    ``num_gpu_blocks``."""

    num_blocks: int  # including the null block 0
    block_size: int
    used: int
    free: int  # free-queue length (evictable cached blocks included)
    usage: float
    # Per-block columns are int arrays: a large pool's frames pickle (to and from the simulation
    # process, into the store) as bytes, not as a Python int each.
    blocks: array[int]  # the blocks in use or hashed, ascending
    owner: array[int]  # per listed block: index (into the series' request_ids) of the request
    # that computed it, or took it back from the free queue as a prefix hit; -1 when free. A
    # shared block (ref_cnt > 1) keeps the request that computed it, even after that one
    # finished.
    ref_cnt: array[int]  # per listed block
    hashed: array[int]  # per listed block: 1 if it is in the prefix cache
    free_queue: list[int]  # head first: reused (and evicted) first; at most 256 shown
    cached_blocks: int


class StepState(TypedDict):
    step: int
    t_start: float
    t_end: float
    token_budget: int
    budget_used: int
    spend: Spend
    arrived: list[str]
    admitted: list[str]
    preempted: list[str]
    finished: list[str]
    prefix_hits: dict[str, int]
    requests: list[ReqView]
    num_running: int
    num_waiting: int
    num_finished: int
    waiting_stop: str
    kv: KVView


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameParts:
    state: StepState
    narration: Message
    notes: tuple[Message, ...]
    source: SourceRef
    mark: str | None
    result: str
    fields: tuple[Field, ...]
    time: float


def _ids(reqs: list[Req]) -> str:
    head = ", ".join(r.rid for r in reqs[:MAX_IDS_LISTED])
    return head + (" …" if len(reqs) > MAX_IDS_LISTED else "")


def _to_compute(r: Req) -> int:
    """Tokens ``r`` computes before it samples: after a step that sampled, the token just
    appended is not among them."""
    return r.computed if r.computed == r.num_tokens - 1 else r.num_tokens


def _lefts(budget: int, tokens: list[int]) -> list[int]:
    out: list[int] = []
    for n in tokens:
        budget -= n
        out.append(budget)
    return out


def _phase(r: Req) -> str:
    if r.status == WAITING:
        return "waiting"
    if r.status == PREEMPTED:
        return "preempted"
    if r.status == FINISHED:
        return "finished"
    return "decode" if r.computed == r.num_tokens - 1 and r.num_output > 0 else "prefill"


def token_kind(
    n: int, before: int, prompt_len: int, was_preempted: bool, admitted: bool, resumed: bool
) -> str:
    """What ``n`` tokens scheduled for a request with ``before`` computed tokens are: a
    ``decode`` (one token past the prompt, not an admission), a ``recompute`` (a request that
    was preempted redoing what it had: past its prompt, or resumed now) or a ``prefill``."""
    if n == 1 and before >= prompt_len and not admitted:
        return "decode"
    if was_preempted and (before >= prompt_len or resumed):
        return "recompute"
    return "prefill"


def _view(r: Req, n: int) -> ReqView:
    return {
        "id": r.rid,
        "phase": _phase(r),
        "prompt_tokens": r.prompt_len,
        "num_tokens": r.num_tokens,
        "computed": r.computed,
        "output_tokens": r.num_output,
        "max_tokens": r.spec.max_tokens,
        "priority": r.spec.priority,
        "scheduled": n,
        "blocks": list(r.blocks),
        "num_preemptions": r.preemptions,
    }


@lru_cache(maxsize=4)
def _every_block(num_blocks: int) -> array[int]:
    """Blocks 1 … ``num_blocks - 1``: a frame's ``kv.blocks`` once every usable block is in use
    or hashed (the frames of a run share it; pickled once)."""
    return array("i", range(1, num_blocks))


def _pick(values: list[int], live: Sequence[int], usable: int, code: str = "i") -> array[int]:
    """``values`` of the ``live`` blocks (ascending), as an int array. Once every usable block
    is in use or hashed (a warm prefix cache) that is the pool's own list past the null block:
    a slice. ``code``: the array's type code (flags fit a byte)."""
    if len(live) == usable:
        return array(code, values[1:])
    if len(live) > 1:
        return array(code, itemgetter(*live)(values))
    return array(code, [values[b] for b in live])


def snapshot(s: Scheduler, arrived: list[Req], index: int) -> FrameParts:
    """The frame of the step ``s`` has just executed."""
    sched = s.sched
    admitted = {a.req: a.resumed for a in s.admissions}
    kinds = [
        token_kind(
            n,
            r.computed - n,
            r.prompt_len,
            r.preemptions > 0,
            r in admitted,
            admitted.get(r, False),
        )
        for r, n in sched.items()
    ]
    spend: Spend = {"ids": [r.rid for r in sched], "tokens": list(sched.values()), "kinds": kinds}

    views = [_view(r, sched.get(r, 0)) for r in s.running[:MAX_RUNNING_VIEWS]]
    views.extend(_view(r, sched.get(r, 0)) for r in s.finished_now)
    views.extend(_view(r, 0) for r in s.waiting_list(MAX_WAITING_VIEWS))

    usable = s.nblocks - 1
    used = usable - s.nfree
    live: Sequence[int]
    if len(s.live) == usable:  # a warm cache: every usable block listed (one array, shared)
        live = range(1, s.nblocks)
        listed = _every_block(s.nblocks)
    else:
        live = sorted(s.live)
        listed = array("i", live)
    kv: KVView = {
        "num_blocks": s.nblocks,
        "block_size": s.bs,
        "used": used,
        "free": s.nfree,
        "usage": used / usable,
        "blocks": listed,
        "owner": _pick(s.owner, live, usable),
        "ref_cnt": _pick(s.ref, live, usable),
        "hashed": _pick(s.hashed, live, usable, "B"),
        "free_queue": s.free_queue(MAX_FREE_QUEUE_VIEW),
        "cached_blocks": len(s.h2b) + sum(len(v) for v in s.dups.values()),
    }
    t_start = s.clock
    t_end = s.t_end
    budget_used = s.budget_max - s.budget_left
    state: StepState = {
        "step": s.step_k,
        "t_start": t_start,
        "t_end": t_end,
        "token_budget": s.budget_max,
        "budget_used": budget_used,
        "spend": spend,
        "arrived": [r.rid for r in arrived],
        "admitted": [a.req.rid for a in s.admissions],
        "preempted": [e.victim.rid for e in s.preempt_events],
        "finished": [r.rid for r in s.finished_now],
        "prefix_hits": {a.req.rid: a.hit_tokens for a in s.admissions} if s.caching else {},
        "requests": views,
        "num_running": len(s.running),
        "num_waiting": s.num_waiting(),
        "num_finished": s.num_finished,
        "waiting_stop": STOP_NAMES[s.wait_stop[0]],
        "kv": kv,
    }
    notes = _decision_log(s, spend, arrived)
    narration = msg(
        "Step {step}: {used} of {budget} budget tokens go to {count} requests "
        "({prefill} prefill, {decode} decode).",
        step=s.step_k,
        used=budget_used,
        budget=s.budget_max,
        count=len(sched),
        prefill=s.prefill_tokens,
        decode=s.decode_tokens,
    )
    if s.preempt_events:
        source, mark, result = src.PREEMPT, "preempt", "preempt"
    elif s.wait_stop[0] == STOP_HOL:
        source, mark, result = src.SCHEDULE, "hol", "blocked"
    elif any(a.hit_tokens for a in s.admissions):
        source, mark, result = src.GET_COMPUTED_BLOCKS, "prefix_hit", "ok"
    elif s.finished_now:
        source, mark, result = src.UPDATE_FROM_OUTPUT, None, "ok"
    elif s.admissions:
        source, mark, result = src.ALLOCATE_SLOTS, None, "ok"
    else:
        source, mark, result = src.SCHEDULE, None, "ok"
    # Field names are identifiers (like vLLM's own attribute names), not prose.
    fields = (
        Field(name="step", value=s.step_k),
        Field(name="token_budget_used", value=budget_used, unit="tokens"),
        Field(name="num_running", value=len(s.running)),
        Field(name="num_waiting", value=s.num_waiting()),
        Field(name="num_finished", value=s.num_finished),
        Field(name="kv_blocks_used", value=used, unit="blocks"),
        Field(name="kv_blocks_usable", value=usable, unit="blocks"),
        Field(name="num_preemptions", value=s.total_preemptions),
    )
    return FrameParts(
        state=state,
        narration=narration,
        notes=notes,
        source=source,
        mark=mark,
        result=result,
        fields=fields,
        time=t_start,
    )


def _decision_log(s: Scheduler, spend: Spend, arrived: list[Req]) -> tuple[Message, ...]:
    """The notes of a frame: the decisions in the order ``schedule()`` made them, then the
    requests that finished in ``update_from_output()``; at most ``MAX_LOG_LINES``."""
    lines: list[Message] = []
    if arrived:
        lines.append(
            msg("Arrived before this step: {ids} ({count}).", ids=_ids(arrived), count=len(arrived))
        )
    lines.extend(_running_lines(s, spend))
    lines.extend(_preemption_line(s, ev) for ev in s.preempt_events)
    lines.extend(_admission_line(s, a) for a in s.admissions)
    stop = _stop_line(s)
    if stop is not None:
        lines.append(stop)
    for r in s.finished_now:
        lines.append(
            msg(
                "{id} finished ({reason}) after {outputs} output tokens; its blocks are freed.",
                id=r.rid,
                reason=r.finish_reason,
                outputs=r.num_output,
            )
        )
    if len(lines) > MAX_LOG_LINES:
        more = len(lines) - (MAX_LOG_LINES - 1)
        lines = lines[: MAX_LOG_LINES - 1]
        lines.append(msg("… and {more} more decisions.", more=more))
    return tuple(lines)


def _running_lines(s: Scheduler, spend: Spend) -> list[Message]:
    """The RUNNING loop's requests (admissions are told apart): one line each when there are
    few, else one line for all the decodes."""
    admitted = {a.req for a in s.admissions}
    entries = [
        (r, n, kind, left)
        for r, n, kind, left in zip(
            s.sched,
            spend["tokens"],
            spend["kinds"],
            _lefts(s.budget_max, spend["tokens"]),
            strict=True,
        )
        if r not in admitted
    ]
    if len(entries) <= 6:
        return [_running_line(r, n, kind, left) for r, n, kind, left in entries]
    lines: list[Message] = []
    decodes = [e[0] for e in entries if e[2] == "decode"]
    if decodes:
        lines.append(
            msg(
                "{count} running requests decode 1 token each: {ids}.",
                count=len(decodes),
                ids=_ids(decodes),
            )
        )
    for r, n, kind, _left in entries:
        if kind != "decode":
            lines.append(
                msg(
                    "{id} is running: {tokens} prefill tokens ({done} of {total} computed).",
                    id=r.rid,
                    tokens=n,
                    done=r.computed,
                    total=_to_compute(r),
                )
            )
    return lines


def _running_line(r: Req, n: int, kind: str, left: int) -> Message:
    if kind == "decode":
        return msg(
            "{id} is running: 1 decode token ({left} budget tokens left).", id=r.rid, left=left
        )
    if kind == "recompute":
        return msg(
            "{id} is running: recomputes {tokens} tokens after its preemption "
            "({done} of {total} done).",
            id=r.rid,
            tokens=n,
            done=r.computed,
            total=_to_compute(r),
        )
    return msg(
        "{id} is running: prefill chunk of {tokens} tokens ({done} of {prompt} "
        "prompt tokens computed).",
        id=r.rid,
        tokens=n,
        done=min(r.computed, r.prompt_len),
        prompt=r.prompt_len,
    )


def _preemption_line(s: Scheduler, ev: PreemptEvent) -> Message:
    if ev.victim is ev.for_req:
        return msg(
            "{req} needs {need} new block(s) but only {free} are free, and it is itself the "
            "victim: it preempts itself and frees its blocks.",
            req=ev.for_req.rid,
            need=ev.need_blocks,
            free=ev.free_blocks,
        )
    if s.priority:
        return msg(
            "{req} needs {need} new block(s) but only {free} are free → preempt {victim} "
            "(worst priority {priority}); the token(s) it was given this step ({given}) go "
            "back to the budget.",
            req=ev.for_req.rid,
            need=ev.need_blocks,
            free=ev.free_blocks,
            victim=ev.victim.rid,
            priority=ev.victim.spec.priority,
            given=ev.given_back,
        )
    return msg(
        "{req} needs {need} new block(s) but only {free} are free → preempt {victim} "
        "(the newest running request): its blocks go back to the free queue and it "
        "returns to the front of the waiting queue.",
        req=ev.for_req.rid,
        need=ev.need_blocks,
        free=ev.free_blocks,
        victim=ev.victim.rid,
    )


def _admission_line(s: Scheduler, a: Admission) -> Message:
    if s.static:
        return msg(
            "{id} joins the new static batch and reserves {blocks} blocks for its prompt "
            "and all of max_tokens.",
            id=a.req.rid,
            blocks=a.new_blocks,
        )
    if a.resumed:
        return msg(
            "{id} resumes after preemption: {hit} tokens hit the prefix cache (its own "
            "surviving blocks), {tokens} tokens are recomputed now.",
            id=a.req.rid,
            hit=a.hit_tokens,
            tokens=a.tokens,
        )
    if a.hit_tokens:
        return msg(
            "{id} is admitted: prefix-cache hit of {hit} tokens, {tokens} tokens "
            "scheduled, {blocks} new block(s).",
            id=a.req.rid,
            hit=a.hit_tokens,
            tokens=a.tokens,
            blocks=a.new_blocks,
        )
    return msg(
        "{id} is admitted: {tokens} tokens scheduled, {blocks} new block(s).",
        id=a.req.rid,
        tokens=a.tokens,
        blocks=a.new_blocks,
    )


def _stop_line(s: Scheduler) -> Message | None:
    """Why the WAITING loop stopped admitting, when someone is left waiting."""
    code, head, wa, wb = s.wait_stop
    waiting = s.num_waiting()
    if code == STOP_PREEMPTED and waiting:
        return msg("A request was preempted this step, so nobody is admitted.")
    if code == STOP_BUDGET and waiting:
        return msg("The token budget is spent; requests still waiting: {count}.", count=waiting)
    if code == STOP_STATIC_BATCH and waiting:
        return msg(
            "Static batching: the current batch is still running, so {count} requests wait.",
            count=waiting,
        )
    if head is None:
        return None
    if code == STOP_MAX_SEQS:
        return msg(
            "{id} waits: {running} requests are running, the max_num_seqs limit.",
            id=head.rid,
            running=wa,
        )
    if code == STOP_HOL:
        return msg(
            "Head-of-line blocking: {id} needs {tokens} tokens, only {left} are left and "
            "chunked prefill is off, so nobody behind it is admitted.",
            id=head.rid,
            tokens=wa,
            left=wb,
        )
    if code in (STOP_KV_FULL, STOP_KV):
        return msg(
            "{id} waits: it needs {need} free blocks (its whole sequence, plus the "
            "watermark) and {free} are free; admission stops at the head of the queue.",
            id=head.rid,
            need=wa,
            free=wb,
        )
    return None
