"""The packet-path explainer's question at a step: which function runs next on this path?

The right answer is the next function the trace's walk enters after the step; the wrong ones
are other functions of the same walk (ones it reaches later, skipping a step, and ones it has
already left), picked deterministically from the step number, so every choice is a function
this packet's path really has."""

from __future__ import annotations

import random

from app.sim.core import Frame, Message, Trace, msg
from app.sim.path.engine import PathState
from app.web.quiz import Question

MAX_CHOICES = 4
LATER = 3  # functions after the answer a wrong choice may come from
EARLIER = 2  # functions before the step a wrong choice may come from


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def question(trace: Trace[PathState, None], step: int) -> Question | None:
    """About the first frame after ``step`` that runs another function; None at the walk's end
    or when the walk has no other function to offer."""
    if not 0 <= step < len(trace.frames):
        return None
    frames = trace.frames
    here = frames[step].state["function"]
    nxt = next((f for f in frames[step + 1 :] if f.state["function"] != here), None)
    if nxt is None:
        return None
    right = nxt.state["function"]
    later = [f.state["function"] for f in frames[nxt.index + 1 :]]
    earlier = [f.state["function"] for f in frames[:step]]
    skip = {here, right}
    pool = [n for n in _unique(later) if n not in skip][:LATER]
    pool += [n for n in _unique(earlier[::-1]) if n not in skip and n not in pool][:EARLIER]
    if not pool:
        return None
    rng = random.Random(step)
    names = [right, *rng.sample(pool, min(MAX_CHOICES - 1, len(pool)))]
    rng.shuffle(names)
    return _ask(here, names, right, nxt)


def _ask(here: str, names: list[str], right: str, frame: Frame[PathState]) -> Question:
    return Question(
        prompt=msg(
            "This step runs {function}. Which function runs next on this path (step {at})?",
            function=here,
            at=frame.index,
        ),
        choices=tuple(Message("{value}", {"value": n}) for n in names),
        correct=names.index(right),
        answer_step=frame.index,
        explanation=frame.narration,
    )
