"""What the timeline and charts need, derived from a trace's per-step series (no sim change).

``phases`` replays the series' CSR event columns (arrivals, preemptions, admissions, tokens
scheduled, finishes) for the first ``rows`` requests and classifies each step the way the frame
snapshot does (decode / prefill / recompute). ``buckets`` maps steps onto at most ``n`` columns
so a long run is drawn at the resolution the pixels can show.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

# Phase codes of one request at one step, in the order a bucket of several steps picks one
# (the most telling event wins: a preemption, then computing, then waiting).
NONE, WAITING, STALLED, DECODE, PREFILL, RECOMPUTE, PREEMPTED_WAIT, PREEMPTED = range(8)
PHASE_NAMES = {
    NONE: "",
    WAITING: "waiting",
    STALLED: "running, no tokens",
    DECODE: "decode",
    PREFILL: "prefill chunk",
    RECOMPUTE: "recompute",
    PREEMPTED_WAIT: "preempted, waiting",
    PREEMPTED: "preempted",
}
RANK = {
    NONE: 0,
    WAITING: 1,
    STALLED: 2,
    PREEMPTED_WAIT: 3,
    DECODE: 4,
    PREFILL: 5,
    RECOMPUTE: 6,
    PREEMPTED: 7,
}


def phases(
    series: Any, prompt_lens: Sequence[int], rows: int
) -> tuple[list[list[int]], list[list[int]]]:
    """Per shown request (the first ``rows``), per executed step: phase code and tokens scheduled."""
    n_steps = len(series["step"])
    shown = min(rows, len(series["request_ids"]))
    phase = [[NONE] * n_steps for _ in range(shown)]
    tokens = [[0] * n_steps for _ in range(shown)]
    arrived = [False] * shown
    running = [False] * shown
    done = [False] * shown
    waiting_after_preempt = [False] * shown
    preemptions = [0] * shown
    computed = [0] * shown
    for s in range(n_steps):
        for j in range(series["arrive_off"][s], series["arrive_off"][s + 1]):
            i = series["arrive_req"][j]
            if i < shown:
                arrived[i] = True
        victims = set()
        for j in range(series["preempt_off"][s], series["preempt_off"][s + 1]):
            i = series["preempt_req"][j]
            if i < shown:
                victims.add(i)
                running[i] = False
                computed[i] = 0
                preemptions[i] += 1
                waiting_after_preempt[i] = True
        admitted: dict[int, bool] = {}
        for j in range(series["admit_off"][s], series["admit_off"][s + 1]):
            i = series["admit_req"][j]
            if i < shown:
                admitted[i] = preemptions[i] > 0  # resumed after a preemption
                running[i] = True
                waiting_after_preempt[i] = False
                computed[i] = series["admit_hit"][j]
        scheduled: dict[int, int] = {}
        for j in range(series["sched_off"][s], series["sched_off"][s + 1]):
            i = series["sched_req"][j]
            if i < shown:
                scheduled[i] = series["sched_tokens"][j]
        for i in range(shown):
            if done[i] or not arrived[i]:
                continue
            if i in victims:
                phase[i][s] = PREEMPTED
            elif i in scheduled:
                n = scheduled[i]
                before = computed[i]
                if n == 1 and before >= prompt_lens[i] and i not in admitted:
                    phase[i][s] = DECODE
                elif preemptions[i] and (before >= prompt_lens[i] or admitted.get(i, False)):
                    phase[i][s] = RECOMPUTE
                else:
                    phase[i][s] = PREFILL
                tokens[i][s] = n
                computed[i] = before + n
            elif running[i]:
                phase[i][s] = STALLED
            else:
                phase[i][s] = PREEMPTED_WAIT if waiting_after_preempt[i] else WAITING
        for j in range(series["finish_off"][s], series["finish_off"][s + 1]):
            i = series["finish_req"][j]
            if i < shown:
                done[i] = True
                running[i] = False
    return phase, tokens


def buckets(n_steps: int, n: int) -> list[int]:
    """Start indices of at most ``n`` equal column buckets over ``n_steps`` steps (plus the end)."""
    cols = max(1, min(n_steps, n))
    return [round(b * n_steps / cols) for b in range(cols + 1)]


def column_of(bounds: Sequence[int], index: int) -> int:
    """The column whose bucket holds series index ``index``."""
    return max(0, min(len(bounds) - 2, bisect_right(bounds, index) - 1))


def step_label(series: Any, index: int) -> int:
    """The step number at series index ``index`` (counted on past the run's end)."""
    steps: list[int] = series["step"]
    return steps[index] if index < len(steps) else steps[-1] + index - len(steps) + 1


def series_index(series: Any, step: int) -> int:
    """The series index of the executed step numbered ``step`` (steps only increase)."""
    steps: list[int] = series["step"]
    return max(0, min(len(steps) - 1, bisect_right(steps, step) - 1))


def runs(
    codes: Sequence[int], toks: Sequence[int], bounds: Sequence[int]
) -> list[tuple[int, int, int, int]]:
    """Run-length columns: (first column, last column + 1, phase, tokens) with one phase per
    column (the highest-ranked phase in its bucket)."""
    out: list[tuple[int, int, int, int]] = []
    for c in range(len(bounds) - 1):
        a, b = bounds[c], bounds[c + 1]
        best = NONE
        tok = 0
        for s in range(a, min(b, len(codes))):
            code = codes[s]
            if RANK[code] > RANK[best]:
                best = code
            tok += toks[s]
        if out and out[-1][2] == best:
            c0, _, _, t0 = out[-1]
            out[-1] = (c0, c + 1, best, t0 + tok)
        else:
            out.append((c, c + 1, best, tok))
    return [r for r in out if r[2] != NONE]


def envelope(values: Sequence[float], bounds: Sequence[int]) -> tuple[list[float], list[float]]:
    """Per column: the minimum and maximum of ``values`` over its bucket (columns past the end
    of ``values``, on a longer shared axis, are left out)."""
    lo: list[float] = []
    hi: list[float] = []
    for c in range(len(bounds) - 1):
        chunk = values[bounds[c] : bounds[c + 1]]
        if not chunk:
            break
        lo.append(min(chunk))
        hi.append(max(chunk))
    return lo, hi


def sums(values: Sequence[float], bounds: Sequence[int]) -> list[float]:
    """Per column: the mean of ``values`` over its bucket (tokens per step stays per step)."""
    out: list[float] = []
    for c in range(len(bounds) - 1):
        chunk = values[bounds[c] : bounds[c + 1]]
        out.append(sum(chunk) / len(chunk) if chunk else 0.0)
    return out
