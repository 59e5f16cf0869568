"""The vLLM scheduler explainer's question at a step: what does the next step do?

When the next step admits or preempts a request: which one? The wrong answers are requests the
scheduler could have picked instead (the others waiting, for an admission; the others running,
for a preemption), none of which that step picks. Otherwise, when the next step changes the
number of free KV blocks: how many are free after it? The wrong answers come from the block
pool: the count before the step (nothing allocated or freed), the change taken the other way
(blocks freed instead of allocated, or the reverse) and one block off."""

from __future__ import annotations

import random

from app.sim.core import Frame, Message, Trace, msg
from app.sim.serving.narrate import StepState
from app.sim.serving.run import SchedulerSeries
from app.web.quiz import Question

MAX_CHOICES = 4
RUNNING = ("prefill", "decode")
QUEUED = ("waiting", "preempted")


def question(trace: Trace[StepState, SchedulerSeries], step: int) -> Question | None:
    """About frame ``step + 1``; None at the last step or when it neither admits, preempts nor
    changes the free block count."""
    if not 0 <= step < len(trace.frames) - 1:
        return None
    now, nxt = trace.frames[step], trace.frames[step + 1]
    if nxt.state["admitted"]:
        return _which(now, nxt, "admitted", QUEUED)
    if nxt.state["preempted"]:
        return _which(now, nxt, "preempted", RUNNING)
    if nxt.state["kv"]["free"] != now.state["kv"]["free"]:
        return _free_blocks(now, nxt)
    return None


def _which(
    now: Frame[StepState], nxt: Frame[StepState], key: str, phases: tuple[str, ...]
) -> Question | None:
    picked: list[str] = nxt.state["admitted"] if key == "admitted" else nxt.state["preempted"]
    right = picked[0]
    pool = [r["id"] for r in now.state["requests"] if r["phase"] in phases]
    pool = [r for r in pool if r not in picked]
    if not pool:  # nobody else to pick: the ones in the other phase
        pool = [r["id"] for r in now.state["requests"] if r["phase"] in RUNNING + QUEUED]
        pool = [r for r in pool if r not in picked]
    if not pool:
        return None
    rng = random.Random(now.index)
    names = sorted([right, *rng.sample(pool, min(MAX_CHOICES - 1, len(pool)))])
    prompt = (
        msg("Which of these requests does step {at} admit?", at=nxt.index)
        if key == "admitted"
        else msg("Which of these requests does step {at} preempt?", at=nxt.index)
    )
    return Question(
        prompt=prompt,
        choices=tuple(Message("{value}", {"value": n}) for n in names),
        correct=names.index(right),
        answer_step=nxt.index,
        explanation=nxt.narration,
    )


def _free_blocks(now: Frame[StepState], nxt: Frame[StepState]) -> Question:
    kv = now.state["kv"]
    before, after = kv["free"], nxt.state["kv"]["free"]
    most = kv["num_blocks"] - 1  # block 0 is the null block, never free
    off = random.Random(now.index).choice((1, -1))
    options = {after, before, before - (after - before), after + off, after - off}
    values = [v for v in sorted(options) if 0 <= v <= most]
    wrong = [v for v in values if v != after]
    keep = sorted([after, *wrong[: MAX_CHOICES - 1]])
    return Question(
        prompt=msg(
            "{free} of {blocks} KV blocks are free after step {step}. How many are free after "
            "step {at}?",
            free=before,
            blocks=most,
            step=now.index,
            at=nxt.index,
        ),
        choices=tuple(Message("{value}", {"value": v}) for v in keep),
        correct=keep.index(after),
        answer_step=nxt.index,
        explanation=nxt.narration,
    )
