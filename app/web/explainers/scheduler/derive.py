"""What the timeline and charts need, derived from a trace's per-step series (no sim change).

``phases`` replays the series' CSR event columns (arrivals, preemptions, admissions, tokens
scheduled, finishes) for the first ``rows`` requests and classifies each step with the frame
snapshot's own rule (decode / prefill / recompute). ``buckets`` maps steps onto at most ``n`` columns
so a long run is drawn at the resolution the pixels can show.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from app.sim.serving.narrate import token_kind
from app.sim.serving.run import SchedulerSeries

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


KIND_CODE = {"decode": DECODE, "prefill": PREFILL, "recompute": RECOMPUTE}


class _Replay:
    """The state of the first ``shown`` requests, replayed one step at a time from the
    series' event columns."""

    def __init__(self, series: SchedulerSeries, prompt_lens: Sequence[int], shown: int) -> None:
        self.se = series
        self.prompt_lens = prompt_lens
        self.shown = shown
        self.arrived = [False] * shown
        self.running = [False] * shown
        self.done = [False] * shown
        self.waiting_after_preempt = [False] * shown
        self.preemptions = [0] * shown
        self.computed = [0] * shown

    def _events(self, off: list[int], reqs: Sequence[int], s: int) -> list[tuple[int, int]]:
        """(entry, request) of step ``s`` in a CSR event column, for the shown requests."""
        return [(j, reqs[j]) for j in range(off[s], off[s + 1]) if reqs[j] < self.shown]

    def step(self, s: int) -> tuple[set[int], dict[int, bool], dict[int, int]]:
        """Apply step ``s``'s arrivals, preemptions and admissions; returns the victims, the
        admitted (resumed or not) and the tokens scheduled."""
        se = self.se
        for _, i in self._events(se["arrive_off"], se["arrive_req"], s):
            self.arrived[i] = True
        victims = set()
        for _, i in self._events(se["preempt_off"], se["preempt_req"], s):
            victims.add(i)
            self.running[i] = False
            self.computed[i] = 0
            self.preemptions[i] += 1
            self.waiting_after_preempt[i] = True
        admitted: dict[int, bool] = {}
        for j, i in self._events(se["admit_off"], se["admit_req"], s):
            admitted[i] = self.preemptions[i] > 0  # resumed after a preemption
            self.running[i] = True
            self.waiting_after_preempt[i] = False
            self.computed[i] = se["admit_hit"][j]
        scheduled = {
            i: se["sched_tokens"][j] for j, i in self._events(se["sched_off"], se["sched_req"], s)
        }
        return victims, admitted, scheduled

    def code(self, i: int, victims: set[int], admitted: dict[int, bool], n: int | None) -> int:
        """Request ``i``'s phase this step (``n``: the tokens it was scheduled, or None)."""
        if i in victims:
            return PREEMPTED
        if n is not None:
            before = self.computed[i]
            self.computed[i] = before + n
            kind = token_kind(
                n,
                before,
                self.prompt_lens[i],
                self.preemptions[i] > 0,
                i in admitted,
                admitted.get(i, False),
            )
            return KIND_CODE[kind]
        if self.running[i]:
            return STALLED
        return PREEMPTED_WAIT if self.waiting_after_preempt[i] else WAITING

    def finish(self, s: int) -> None:
        se = self.se
        for _, i in self._events(se["finish_off"], se["finish_req"], s):
            self.done[i] = True
            self.running[i] = False


def phases(
    series: SchedulerSeries, prompt_lens: Sequence[int], rows: int
) -> tuple[list[list[int]], list[list[int]]]:
    """Per shown request (the first ``rows``), per executed step: phase code and tokens
    scheduled, each step classified the way the frame snapshot classifies its tokens
    (:func:`~app.sim.serving.narrate.token_kind`)."""
    n_steps = len(series["step"])
    shown = min(rows, len(series["request_ids"]))
    phase = [[NONE] * n_steps for _ in range(shown)]
    tokens = [[0] * n_steps for _ in range(shown)]
    rp = _Replay(series, prompt_lens, shown)
    for s in range(n_steps):
        victims, admitted, scheduled = rp.step(s)
        for i in range(shown):
            if rp.done[i] or not rp.arrived[i]:
                continue
            n = scheduled.get(i)
            phase[i][s] = rp.code(i, victims, admitted, n)
            if n is not None and i not in victims:
                tokens[i][s] = n
        rp.finish(s)
    return phase, tokens


def buckets(n_steps: int, n: int) -> list[int]:
    """Start indices of at most ``n`` equal column buckets over ``n_steps`` steps (plus the end)."""
    cols = max(1, min(n_steps, n))
    return [round(b * n_steps / cols) for b in range(cols + 1)]


def column_of(bounds: Sequence[int], index: int) -> int:
    """The column whose bucket holds series index ``index``."""
    return max(0, min(len(bounds) - 2, bisect_right(bounds, index) - 1))


def step_label(series: SchedulerSeries, index: int) -> int:
    """The step number at series index ``index`` (counted on past the run's end)."""
    steps: list[int] = series["step"]
    return steps[index] if index < len(steps) else steps[-1] + index - len(steps) + 1


def series_index(series: SchedulerSeries, step: int) -> int:
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
