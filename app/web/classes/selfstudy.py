""" "Quiz me": the questions of a walkthrough's marked steps, for one reader alone (no class,
no account). Each comes with its answer and explanation: the page asks, then shows them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from app.web import i18n
from app.web.classes.scenario import resolve
from app.web.quiz import Question
from app.web.sources import SiteDep, run_source

router = APIRouter(tags=["classes"])
MAX_QUESTIONS = 40


def _json(step: int, q: Question) -> dict[str, Any]:
    return {
        "step": step,
        "answer_step": q.answer_step,
        "prompt": i18n.render(q.prompt),
        "choices": [i18n.render(c) for c in q.choices],
        "correct": q.correct,
        "explanation": i18n.render(q.explanation),
    }


@router.get("/api/v1/quiz")
def quiz(
    request: Request,
    site: SiteDep,
    scenario: Annotated[
        str, Query(min_length=1, max_length=200, description="EXPLAINER/PRESET or a share id")
    ],
) -> dict[str, Any]:
    """The questions of a walkthrough for self-study: one at each step the lesson marks for a
    question (its ``ask`` steps, where a live class is asked too); without them, one just before
    each of the lesson's "what to notice" steps (without a lesson, the steps the trace marks),
    each with the right choice and the explanation."""
    source = resolve(site, request.app.state.engine, scenario)
    hook = source.plugin.web.question
    if hook is None:
        return {"questions": []}
    trace = run_source(site, source)
    lesson = source.lesson
    if lesson and lesson.ask_steps:
        at_steps = list(lesson.ask_steps)
    else:
        marked = sorted(lesson.step_notes) if lesson and lesson.step_notes else []
        if not marked:
            marked = [f.index for f in trace.frames if f.mark]
        # ask at the step before the marked one, about what happens next
        at_steps = [max(target - 1, 0) for target in marked]
    out: list[dict[str, Any]] = []
    asked: set[int] = set()
    for at in at_steps:
        q = hook(trace, at) if 0 <= at < len(trace.frames) else None
        if q is None or q.answer_step in asked:
            continue
        asked.add(q.answer_step)
        out.append(_json(at, q))
        if len(out) >= MAX_QUESTIONS:
            break
    return {"questions": out}
