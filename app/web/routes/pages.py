"""HTML pages: home, notes, the player (preset or custom scenario) and the scenario editor."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.sim.core import ParamError, msg
from app.store import repo
from app.store.repo import TITLE_MAX
from app.web import i18n
from app.web.deps import StepQuery, Visitor
from app.web.editor import editor_context, form_to_raw, issues_by_name, json_chosen
from app.web.player import FRAME_CHUNK_MAX, render_frame_chunk, render_player
from app.web.runs import Busy, JobStarted, RateLimited
from app.web.security import same_site_form
from app.web.site import Site
from app.web.sources import (
    MAX_TOKEN,
    CustomSource,
    PluginDep,
    PresetSource,
    SiteDep,
    Source,
    encode_params,
    from_preset,
    from_token,
    run_source,
)
from app.web.templating import render
from app.web.thumbnails import thumbnail

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def home(request: Request, site: SiteDep, visitor: Visitor) -> Response:
    """Every explainer as a card with a thumbnail of its key step. The page is the same for every
    reader of a language, so it goes through the page cache (a visitor with a session, who may
    see "continue where you left off", gets a fresh private page)."""

    def produce() -> Response:
        cards = []
        complete = True
        for plugin in sorted(site.plugins, key=lambda p: p.course_order):
            presets = []
            for p in plugin.sim.presets:
                lesson = site.content.lesson(p.lesson)
                presets.append({"preset": p, "summary": lesson.summary if lesson else ""})
            notes = [n for n in site.content.lessons_for(plugin.name) if not n.preset]
            thumb = thumbnail(site, plugin)
            complete = complete and (thumb is not None or plugin.web.thumbnail is None)
            cards.append(
                {
                    "explainer": plugin.sim,
                    "start": plugin.start_preset,
                    "actions": plugin.web.actions,
                    "presets": presets,
                    "notes": notes,
                    "thumb": thumb,
                }
            )
        recent = []
        if visitor:  # "continue where you left off"
            with repo.session_for(request.app.state.engine) as db:
                recent = [
                    p
                    for p in repo.recent_progress(db=db, session_id=visitor, limit=4)
                    if p.step > 0
                ]
        # every card draws its explainer's picture: link every view's stylesheets
        styles = tuple(dict.fromkeys(s for plugin in site.plugins for s in plugin.web.styles))
        response = render(
            request,
            "pages/home.html",
            {"cards": cards, "recent": recent, "view_styles": styles},
        )
        if not complete:  # a run still going: not kept, the next visit draws the thumbnail
            response.headers["Cache-Control"] = "no-cache"
        return response

    return site.pages.respond(request, produce)


@router.get("/notes/{stem}", response_class=HTMLResponse)
def note_page(stem: str, request: Request, site: SiteDep) -> Response:
    """A written note that belongs to an explainer but to no preset (e.g. a real-kernel check)."""
    note = site.content.lesson(stem)
    if note is None:
        text = msg("There is no note called {stem}.", stem=repr(stem[:80]))
        raise HTTPException(404, i18n.render(text))
    plugin = site.get(note.explainer)
    return render(
        request, "pages/note.html", {"note": note, "explainer": plugin.sim if plugin else None}
    )


@router.get("/explainers/{name}", response_class=HTMLResponse)
@router.get("/explainers/{name}/presets/{slug}", response_class=HTMLResponse)
def preset_page(
    request: Request, site: SiteDep, source: PresetSource, step: StepQuery = None
) -> Response:
    return _player_page(request, site, source, step)


@router.get("/explainers/{name}/custom", response_class=HTMLResponse)
def custom_page(
    request: Request, site: SiteDep, source: CustomSource, step: StepQuery = None
) -> Response:
    return _player_page(request, site, source, step)


def _player_page(request: Request, site: Site, source: Source, step: int | None) -> Response:
    """The player on ``source``'s trace at ``step``, through the page cache."""
    return site.pages.respond(
        request,
        lambda: render_player(request, source, run_source(site, source), step=step),
        walkthrough=source.walkthrough_key,
    )


@router.get("/explainers/{name}/frames", response_class=HTMLResponse, include_in_schema=False)
def frames_fragment(
    name: str,
    request: Request,
    site: SiteDep,
    start: Annotated[int, Query(ge=0, le=1_000_000)],
    count: Annotated[int, Query(ge=1, le=FRAME_CHUNK_MAX)] = 60,
    preset: str | None = Query(None, max_length=80),
    p: str | None = Query(None, max_length=MAX_TOKEN),
) -> Response:
    """Frame templates ``start``..``start+count`` of a scenario, for the player to fetch on demand."""
    if (preset is None) == (p is None):
        raise ParamError.single(("query", "preset"), msg("give exactly one of preset or p"))
    if p is not None:
        source = from_token(site, name, p)
    else:
        try:
            source = from_preset(site, name, preset)
        except HTTPException as exc:
            raise ParamError.single(("query", "preset"), str(exc.detail)) from None

    def produce() -> Response:
        trace = run_source(site, source)
        return render_frame_chunk(request, source.plugin, trace, start, count, source.lesson)

    return site.pages.respond(request, produce, shared=True)


@router.get("/explainers/{name}/edit", response_class=HTMLResponse)
def edit_page(
    name: str,
    request: Request,
    site: SiteDep,
    preset: str | None = Query(None, max_length=80),
    p: str | None = Query(None, max_length=MAX_TOKEN),
    title: str | None = Query(None, max_length=TITLE_MAX),
) -> Response:
    source = from_token(site, name, p) if p else from_preset(site, name, preset)
    ctx = editor_context(source.plugin.web.editor, source.raw, issues={})
    ctx["explainer"] = source.explainer
    ctx["title"] = (title or "").strip()
    return render(request, "pages/editor.html", ctx)


@router.post("/explainers/{name}/edit", response_class=HTMLResponse)
async def edit_submit(request: Request, site: SiteDep, plugin: PluginDep) -> Response:
    same_site_form(request)
    form = await request.form()
    action = str(form.get("action", "validate"))
    title = str(form.get("title", "")).strip()[:TITLE_MAX]  # a forked scenario's share title
    raw, form_issues = form_to_raw(plugin.web.editor, form, action)
    issues: dict[str, list[str]] = {}
    valid = False
    if not form_issues:
        try:
            plugin.sim.parse(raw)
            valid = True
        except ParamError as exc:
            issues = issues_by_name(exc)
    is_htmx = request.headers.get("HX-Request") == "true"
    if action == "run" and valid:
        # A short run is simulated now, while the editor shows its busy indicator, so the
        # player opens from the run cache. A long one goes on as a job (or cannot start yet):
        # either way the browser navigates to the scenario's own page, which shows the job's
        # progress (or why it cannot run) as a whole page and opens the walkthrough when done;
        # that page is never swapped into the form.
        try:
            site.run(plugin, raw)
        except (JobStarted, Busy, RateLimited):
            pass
        target = f"/explainers/{plugin.name}/custom?p={encode_params(raw)}"
        if title:
            target += "&" + urlencode({"title": title})
        if is_htmx:
            return Response(status_code=200, headers={"HX-Redirect": target})
        return RedirectResponse(target, status_code=303)
    ctx: dict[str, Any] = editor_context(
        plugin.web.editor,
        raw,
        issues=issues,
        form_issues=form_issues,
        checked=action in ("validate", "run", "json"),
        valid=valid,
        json_open=json_chosen(form, action),
    )
    ctx["explainer"] = plugin.sim
    ctx["title"] = title
    status = 422 if ((issues or form_issues) and not is_htmx and action == "run") else 200
    template = "partials/editor_form.html" if is_htmx else "pages/editor.html"
    return render(request, template, ctx, status_code=status)
