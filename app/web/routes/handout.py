"""The printable handout of a walkthrough: the lesson, every step's narration (with its source
line and the lesson's "what to notice"), and the pictures of the marked steps, as one page to
print or save as PDF. Served for a preset and for a custom (or shared) scenario's params."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.sim.core import Trace
from app.web.player import RenderedFrame, reader_glossary, render_frames
from app.web.sources import CustomSource, PresetSource, SiteDep, Source, run_source
from app.web.templating import render

router = APIRouter()

MAX_PICTURES = 40  # marked steps drawn in one handout; the rest keep their words
MAX_UNMARKED = 12  # pictures of a walkthrough that marks no step (the page says the rule)


def spread(items: Sequence[int], n: int) -> list[int]:
    """At most ``n`` of ``items`` spread evenly over them, the first and the last included."""
    if len(items) <= n:
        return list(items)
    if n <= 1:
        return list(items[:n])
    return sorted({items[round(k * (len(items) - 1) / (n - 1))] for k in range(n)})


def pictures_to_draw(frames: Sequence[RenderedFrame]) -> tuple[set[int], bool]:
    """Which steps the handout draws, and whether they are the marked ones.

    The marked steps (the first ``MAX_PICTURES``) when the walkthrough marks any. Otherwise the
    steps whose picture differs from the step before (step 0 always), at most ``MAX_UNMARKED``
    of them spread evenly over the run with the first and the last kept: a walkthrough with
    no marks still prints how its picture develops, not step 0 alone.
    """
    marked = [rf.frame.index for rf in frames if rf.frame.mark]
    if marked:
        return set(marked[:MAX_PICTURES]), True
    changes = [
        rf.frame.index
        for i, rf in enumerate(frames)
        if i == 0 or rf.picture != frames[i - 1].picture
    ]
    if frames and frames[-1].frame.index not in changes:
        changes.append(frames[-1].frame.index)  # the end state, even if it looks the same
    return set(spread(changes, MAX_UNMARKED)), False


def _handout(request: Request, source: Source, trace: Trace[Any, Any]) -> Response:
    frames = render_frames(
        source.plugin, trace, 0, len(trace.frames), source.lesson, reader_glossary(request)
    )
    drawn, by_mark = pictures_to_draw(frames)
    ctx = {
        "by_mark": by_mark,
        "max_pictures": MAX_PICTURES if by_mark else MAX_UNMARKED,
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
