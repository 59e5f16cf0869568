"""HTML pages: home, the player (preset or custom scenario) and the scenario editor."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.sim import registry
from app.sim.core import ParamError
from app.sim.registry import Explainer
from app.store import repo
from app.web import content
from app.web.deps import StepQuery
from app.web.editor import dotted_issues, editor_context, form_to_raw, issues_by_place
from app.web.player import FRAME_CHUNK_MAX, encode_params, player_context, render_frames
from app.web.runner import explainer_or_404, run
from app.web.sessions import visitor_id
from app.web.sources import from_preset, from_token, run_source
from app.web.templating import render

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def home(request: Request) -> Response:
    cards = []
    for ex in registry.explainers().values():
        presets = []
        for p in ex.presets:
            lesson = content.lesson(p.lesson)
            presets.append({"preset": p, "summary": lesson.summary if lesson else ""})
        notes = [n for n in content.lessons_for(ex.name) if not n.preset]
        cards.append({"explainer": ex, "presets": presets, "notes": notes})
    recent = []
    sid = visitor_id(request)
    if sid:  # "continue where you left off"
        with repo.session_for(request.app.state.engine) as db:
            recent = [p for p in repo.recent_progress(db=db, session_id=sid, limit=4) if p.step > 0]
    return render(request, "pages/home.html", {"cards": cards, "recent": recent})


@router.get("/notes/{stem}", response_class=HTMLResponse)
def note_page(stem: str, request: Request) -> Response:
    """A written note that belongs to an explainer but to no preset (e.g. a real-kernel check)."""
    note = content.lesson(stem)
    if note is None:
        raise HTTPException(404, f"There is no note called {stem!r}.")
    ex = registry.get(note.explainer)
    return render(request, "pages/note.html", {"note": note, "explainer": ex})


@router.get("/explainers/{name}", response_class=HTMLResponse)
def explainer_default(name: str, request: Request, step: StepQuery = None) -> Response:
    ex = explainer_or_404(name)
    return _preset_page(request, ex, ex.default_preset, step)


@router.get("/explainers/{name}/presets/{slug}", response_class=HTMLResponse)
def preset_page(name: str, slug: str, request: Request, step: StepQuery = None) -> Response:
    return _preset_page(request, explainer_or_404(name), slug, step)


def _preset_page(request: Request, ex: Explainer, slug: str, step: int | None) -> Response:
    source = from_preset(ex.name, slug)
    ctx = player_context(
        ex,
        run_source(source),
        raw_params=source.raw,
        step=step,
        preset=source.preset,
        lesson=source.lesson,
    )
    return render(request, "pages/player.html", ctx)


@router.get("/explainers/{name}/custom", response_class=HTMLResponse)
def custom_page(
    name: str,
    request: Request,
    p: str = Query(..., max_length=60_000),
    step: StepQuery = None,
    title: str | None = Query(None, max_length=200),
) -> Response:
    source = from_token(name, p, title=title)
    ctx = player_context(
        source.explainer, run_source(source), raw_params=source.raw, step=step, title=source.title
    )
    return render(request, "pages/player.html", ctx)


@router.get("/explainers/{name}/frames", response_class=HTMLResponse, include_in_schema=False)
def frames_fragment(
    name: str,
    request: Request,
    start: Annotated[int, Query(ge=0, le=1_000_000)],
    count: Annotated[int, Query(ge=1, le=FRAME_CHUNK_MAX)] = 60,
    preset: str | None = Query(None, max_length=80),
    p: str | None = Query(None, max_length=60_000),
) -> Response:
    """Frame templates ``start``..``start+count`` of a scenario, for the player to fetch on demand."""
    if (preset is None) == (p is None):
        raise ParamError.single(("query", "preset"), "give exactly one of preset or p")
    if p is not None:
        source = from_token(name, p)
    else:
        try:
            source = from_preset(name, preset)
        except HTTPException as exc:
            raise ParamError.single(("query", "preset"), str(exc.detail)) from None
    trace = run_source(source)
    frames = render_frames(source.explainer, trace, start, start + count, source.lesson)
    ctx = {"frames": frames, "count": len(trace.frames), "trace": trace}
    return render(request, "partials/frame_templates.html", ctx)


@router.get("/explainers/{name}/edit", response_class=HTMLResponse)
def edit_page(
    name: str,
    request: Request,
    preset: str | None = None,
    p: str | None = Query(None, max_length=60_000),
) -> Response:
    source = from_token(name, p) if p else from_preset(name, preset)
    ctx = editor_context(source.explainer, source.raw, issues={})
    return render(request, "pages/editor.html", ctx)


@router.post("/explainers/{name}/edit", response_class=HTMLResponse)
async def edit_submit(name: str, request: Request) -> Response:
    ex = explainer_or_404(name)
    form = await request.form()
    action = str(form.get("action", "validate"))
    raw, action_issues = form_to_raw(ex, form, action)
    issues: dict[Any, list[str]] = dict(action_issues)
    dotted: dict[str, list[str]] = {}
    valid = False
    if not issues:
        try:
            ex.parse(raw)
            valid = True
        except ParamError as exc:
            issues = issues_by_place(exc)
            dotted = dotted_issues(exc)
    is_htmx = request.headers.get("HX-Request") == "true"
    if action == "run" and valid:
        # Simulate now, while the editor shows its busy indicator; the player then opens from
        # the run cache instead of leaving the old page frozen during a long run.
        run(ex, raw)
        target = f"/explainers/{ex.name}/custom?p={encode_params(raw)}"
        if is_htmx:
            return Response(status_code=200, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)
    ctx = editor_context(
        ex, raw, issues=issues, checked=action in ("validate", "run"), valid=valid, dotted=dotted
    )
    status = 422 if (issues and not is_htmx and action == "run") else 200
    template = "partials/editor_form.html" if is_htmx else "pages/editor.html"
    return render(request, template, ctx, status_code=status)
