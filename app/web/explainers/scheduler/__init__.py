"""Web half of the vLLM scheduler explainer: the per-step picture (token budget, KV cache,
request queues), a timeline and charts drawn once per trace, a config/requests editor and the
compare page."""

from __future__ import annotations

from app.sim.core import msg
from app.sim.serving.narrate import StepState
from app.sim.serving.run import SchedulerSeries
from app.web.explainers.scheduler.compare import router
from app.web.explainers.scheduler.editor import EDITOR
from app.web.explainers.scheduler.picture import picture
from app.web.explainers.scheduler.quiz import question
from app.web.explainers.scheduler.timeline import static
from app.web.plugin import Action, Thumbnail, WebView

VIEW: WebView[StepState, SchedulerSeries] = WebView(
    picture=picture,
    static=static,
    scripts=("/static/explainers/scheduler/cursor.js",),
    editor=EDITOR,
    router=router,
    question=question,  # which request is admitted / preempted, or free KV blocks next
    actions=(Action(key="compare", label=msg("Compare"), path="compare"),),
    # four requests decode side by side while four wait: continuous batching at work
    thumbnail=Thumbnail(preset="continuous-batching", step=3),
)
