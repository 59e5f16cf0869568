"""What is fixed for a whole walk, computed once per (language, trace) and cached: each
frame's point on the lanes, the hooks' runs and label rows, and each frame's sk_buff part."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from app.sim.core import Frame, Trace
from app.sim.path.explainer import PathTrace
from app.sim.skbuff.state import SkbSnapshot, SkbState, SkbTrace
from app.web import i18n
from app.web.explainers.path.geometry import (
    HOOK_ROWS_Y,
    HOOK_SHORT,
    PLOT_X0,
    PLOT_X1,
    lane_of,
    lane_y,
)
from app.web.explainers.path.replay import Replay, replay
from app.web.explainers.path.skb_beside import (
    SkbPart,
    drawn_state,
    old_key,
    skb_part,
    skb_state,
    summary_key,
    summary_names,
)
from app.web.explainers.skb.layout import text_width
from app.web.explainers.skb.scene import SceneMemo
from app.web.memo import Memo


@dataclasses.dataclass(frozen=True, slots=True)
class Layout:
    points: list[tuple[float, float]]  # one per frame
    hooks: list[tuple[int, int, str]]  # (first frame, last frame, hook) of each run of frames
    hook_rows: list[int]
    hook_labels: list[str]
    napi: bool  # some frame is inside NAPI: the strip has room for GRO's held packets
    skb_trace: SkbTrace  # the sk_buff explainer's full state per frame
    drawn_trace: SkbTrace  # what its picture draws (see drawn_state)
    skb_height: float
    part_keys: dict[int, PartKey]  # which sk_buff part each frame shows, by frame index
    recipes: dict[PartKey, Recipe]  # how each part is drawn
    widest: Frame[SkbState]
    rep: Replay | None
    drawn: dict[PartKey, SkbPart] = dataclasses.field(default_factory=dict)  # drawn so far

    def part(self, index: int) -> SkbPart | None:
        """Frame ``index``'s sk_buff part (None: no skb), drawn the first time it is asked for."""
        key = self.part_keys.get(index)
        if key is None:
            return None
        hit = self.drawn.get(key)
        if hit is None:
            first, old = self.recipes[key]
            # (an own SceneMemo: the small trace does not go through the skb geometry cache)
            hit = skb_part(self.drawn_trace, self.widest, first, self.skb_trace, old, scenes={})
            self.drawn[key] = hit
        return hit


# Weighed in frames (see replay.CACHE): long walks' layouts are held a few at a time.
LAYOUTS: Memo[tuple[str, str, str, int], Layout] = Memo(
    32, weigh=lambda o: len(o.points), budget=4000
)


def _hook_placement(
    hooks: list[tuple[int, int, str]], points: list[tuple[float, float]]
) -> tuple[list[int], list[str]]:
    rows: list[int] = []
    labels: list[str] = []
    ends = [-1e9] * len(HOOK_ROWS_Y)
    for first, _, h in hooks:
        x = points[first][0]
        row = -1
        for label in (h, HOOK_SHORT.get(h, h)):
            half = (text_width(label, 12.5) + 8) / 2
            free = [r for r in range(len(ends)) if x - half > ends[r]]
            if free:
                row = free[0]
                break
        if row < 0:
            row = min(range(len(ends)), key=lambda r: ends[r])
        ends[row] = x + half
        rows.append(row)
        labels.append(label)
    return rows, labels


def _interned(states: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``states`` with equal states as one object (the parts and their layouts are shared by
    identity: see _part_key and skb.scene.SceneMemo)."""
    known: dict[str, dict[str, Any]] = {}
    return [known.setdefault(repr(st), st) for st in states]


def _ids(trace: SkbTrace) -> list[int]:
    """A number per frame, the same for frames whose states are one object (_interned)."""
    known: dict[int, int] = {}
    return [known.setdefault(id(f.state), len(known)) for f in trace.frames]


def _part_key(
    ids: list[int], widest: Frame[SkbState], index: int
) -> tuple[tuple[int, bool, bool], ...]:
    """What the sk_buff picture of step ``index`` is drawn from (see skb_part): the states of
    the few steps it is given, in order, each with whether the step given before it is the
    step just before it (the picture draws moves and lit bytes against that one) and whether
    it is the step drawn. Its title (the step's number and op) is not in it."""
    given = sorted({widest.index, *range(max(index - 1, 0), index + 1)})
    return tuple((ids[i], k > 0 and given[k - 1] == i - 1, i == index) for k, i in enumerate(given))


PartKey = tuple[object, ...]
Recipe = tuple[int, dict[str, SkbSnapshot]]  # a step showing the part, the `old` it reads


def _parts(
    drawn_trace: SkbTrace, skb_trace: SkbTrace, widest: Frame[SkbState]
) -> tuple[dict[int, PartKey], dict[PartKey, Recipe], float]:
    """Which sk_buff part each frame shows, how each part is drawn, and the tallest part's
    height. A long walk repeats itself (32 packets: 575 different parts in 2,238 steps):
    steps that draw the same share one part, found by what it is drawn from (_part_key, what
    the frags summary reads of the step and of the steps before). Only the heights are found
    here; a part is drawn when a step showing it is (Layout.part)."""
    drawn_ids = _ids(drawn_trace)
    scenes: SceneMemo = {}
    keys: dict[int, PartKey] = {}
    recipes: dict[PartKey, Recipe] = {}
    tallest = 0.0
    seen: dict[str, SkbSnapshot] = {}  # each skb as the walk last showed it
    for sf in skb_trace.frames:
        if sf.state["skbs"]:
            key = (
                _part_key(drawn_ids, widest, sf.index),
                summary_key(sf.state),
                old_key(sf.state, seen),
            )
            if key not in recipes:
                old = {n: seen[n] for n in summary_names(sf.state) if n in seen}
                recipes[key] = (sf.index, old)
                part = skb_part(
                    drawn_trace, widest, sf.index, skb_trace, old, draw=False, scenes=scenes
                )
                tallest = max(tallest, part.height)
            keys[sf.index] = key
        seen.update((str(s.get("name")), s) for s in sf.state["skbs"])
    return keys, recipes, tallest


def layout(trace: PathTrace) -> Layout:
    """The walk's layout in the reader's language (cached)."""
    # The sk_buff parts are drawn with their labels in the reader's language: kept per language.
    key = (i18n.current(), trace.sim_version, repr(trace.params), len(trace.frames))
    hit = LAYOUTS.get(key)
    if hit is not None:
        return hit
    n = len(trace.frames)
    span = PLOT_X1 - PLOT_X0 - 16
    step = span / max(n - 1, 1)
    points = [
        (round(PLOT_X0 + 8 + i * step, 2), lane_y(lane_of(f.state)))
        for i, f in enumerate(trace.frames)
    ]
    hooks: list[tuple[int, int, str]] = []
    for f in trace.frames:
        h = f.state["hook"]
        if h is None:
            continue
        if hooks and hooks[-1][2] == h and hooks[-1][1] == f.index - 1:
            hooks[-1] = (hooks[-1][0], f.index, h)
        else:
            hooks.append((f.index, f.index, h))
    rows, labels = _hook_placement(hooks, points)
    rep = replay(trace)

    def skb_frames(states: list[dict[str, Any]]) -> tuple[Frame[SkbState], ...]:
        # the sk_buff picture reads its state with .get(): a state drawn from the frame's own
        # fields (no replay) carries only what it draws
        return tuple(
            Frame(
                index=f.index,
                op=f.op,
                result=f.result,
                narration=f.narration,
                source=f.source,
                state=cast(SkbState, st),
            )
            for f, st in zip(trace.frames, states, strict=True)
        )

    full_states = [skb_state(rep, f) for f in trace.frames]
    skb_trace: SkbTrace = Trace(
        explainer="skb",
        sim_version=trace.sim_version,
        params=None,
        frames=skb_frames(full_states),
        series=None,
    )
    drawn_trace = dataclasses.replace(
        skb_trace, frames=skb_frames(_interned([drawn_state(st) for st in full_states]))
    )
    # the frame whose head buffer is largest sets the scale of every frame
    widest = max(
        drawn_trace.frames,
        key=lambda f: max((int(s.get("end", 0)) for s in f.state["skbs"]), default=0),
    )
    # Every frame of one walk has the same height (the picture never jumps while stepping):
    # the tallest sk_buff part.
    part_keys, recipes, tallest = _parts(drawn_trace, skb_trace, widest)
    out = Layout(
        points=points,
        hooks=hooks,
        hook_rows=rows,
        hook_labels=labels,
        napi=any(f.state["napi"] is not None for f in trace.frames),
        skb_trace=skb_trace,
        drawn_trace=drawn_trace,
        skb_height=tallest,
        part_keys=part_keys,
        recipes=recipes,
        widest=widest,
        rep=rep,
    )
    LAYOUTS.put(key, out)
    return out
