"""The per-step picture: the token budget as it was spent, the KV cache's blocks, the queues.

One SVG, 960 units wide, that scales to the width of the stage (so an embed or a phone shows
all of it). Element ids are stable between frames (``seg-<n>``, ``blk-<n>``, ``row-<id>``) so
the player's morphing swap glides what moved. The root carries what the step did as data
attributes (budget used, KV blocks used, preempted, finished, lit blocks) for tests and scripts.
The sections are drawn by :mod:`.budget`, :mod:`.kv` and :mod:`.table`.
"""

from __future__ import annotations

from app.sim.core import Frame, msg
from app.sim.serving.explainer import SchedulerTrace
from app.sim.serving.narrate import StepState
from app.web.explainers.scheduler import budget as bd
from app.web.explainers.scheduler import kv as kvp
from app.web.explainers.scheduler import style as st
from app.web.explainers.scheduler import table as tb
from app.web.explainers.scheduler.style import W
from app.web.svgtext import attr


def picture(trace: SchedulerTrace, frame: Frame[StepState]) -> str:
    state = frame.state
    budget, y = bd.draw(state, 4)
    kv, y2, lit = kvp.draw(trace, frame, y + 8)
    table, y3, focused = tb.draw(trace, state, y2 + 8)
    if not focused:  # no row changed: keep the left edge (ids, the budget's start) in view
        budget = budget.replace('id="budget-frame"', 'id="budget-frame" data-focus="1"', 1)
    h = int(y3 + 6)
    aria = attr(msg("Step {step}: token budget, KV cache and requests", step=state["step"]))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="sched-picture" class="sched-svg" '
        f'viewBox="0 0 {W} {h}" role="img" aria-label="{aria}" '
        f'data-step="{state["step"]}" data-budget-used="{state["budget_used"]}" '
        f'data-kv-used="{state["kv"]["used"]}" '
        f'data-preempted="{attr(",".join(state["preempted"]))}" '
        f'data-finished="{attr(",".join(state["finished"]))}" '
        f'data-lit="{",".join(map(str, lit))}">'
        + st.style()
        + st.defs("sp")
        + budget
        + kv
        + table
        + "</svg>"
    )
