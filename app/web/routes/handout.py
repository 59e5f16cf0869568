"""The printable handout of a walkthrough: the lesson, every step's narration (with its source
line and the lesson's "what to notice"), and the pictures of the marked steps, as one page to
print or save as PDF. Served for a preset and for a custom (or shared) scenario's params."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.sim.core import Trace
from app.web.player import reader_glossary, render_frames
from app.web.sources import CustomSource, PresetSource, SiteDep, Source, run_source
from app.web.templating import render

router = APIRouter()

MAX_PICTURES = 40  # marked steps drawn in one handout; the rest keep their words


def _handout(request: Request, source: Source, trace: Trace[Any, Any]) -> Response:
    frames = render_frames(
        source.plugin, trace, 0, len(trace.frames), source.lesson, reader_glossary(request)
    )
    drawn = {f.index for f in trace.frames if f.mark}
    drawn = set(sorted(drawn)[:MAX_PICTURES]) if drawn else {0}
    ctx = {
        "explainer": source.plugin.sim,
        "title": source.title,
        "lesson": source.lesson,
        "frames": frames,
        "drawn": drawn,
        "count": len(trace.frames),
        "player_url": request.url.path.removesuffix("/handout")
        + (f"?{request.url.query}" if request.url.query else ""),
    }
    return render(request, "pages/handout.html", ctx)


@router.get("/explainers/{name}/handout", response_class=HTMLResponse)
@router.get("/explainers/{name}/presets/{slug}/handout", response_class=HTMLResponse)
def preset_handout(request: Request, site: SiteDep, source: PresetSource) -> Response:
    return site.pages.respond(request, lambda: _handout(request, source, run_source(site, source)))


@router.get("/explainers/{name}/custom/handout", response_class=HTMLResponse)
def custom_handout(request: Request, site: SiteDep, source: CustomSource) -> Response:
    return site.pages.respond(request, lambda: _handout(request, source, run_source(site, source)))
