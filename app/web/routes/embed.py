"""Chrome-free players for slides: ``/embed/{explainer}``, ``…/presets/{slug}``, ``/embed/s/{id}``.

Options (query): ``step``, ``controls`` (full/min/none), ``theme`` (light/dark/projector),
``autoplay``; a bad value answers 422 naming the field. Any origin may frame these pages
(``Content-Security-Policy: frame-ancestors *``, no ``X-Frame-Options``) and they neither need
nor set a cookie. ``static/js/embed.js`` adds the postMessage API (see docs/embedding.md).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.web.deps import Autoplay, Controls, StepQuery, Theme
from app.web.player import render_embed
from app.web.sources import SiteDep, preset_source, run_source, scenario_source

router = APIRouter(prefix="/embed", tags=["embed"])


@router.get("/s/{scenario_id}", response_class=HTMLResponse)
@router.get("/{name}", response_class=HTMLResponse)
@router.get("/{name}/presets/{slug}", response_class=HTMLResponse)
def embed_page(
    request: Request,
    site: SiteDep,
    step: StepQuery = None,
    controls: Controls = "full",
    theme: Theme = "light",
    autoplay: Autoplay = False,
) -> Response:
    """A shared scenario (``/embed/s/ID``), an explainer's default walkthrough or a preset."""
    params = request.path_params
    if "scenario_id" in params:
        source = scenario_source(params["scenario_id"], request, site)
    else:
        source = preset_source(params["name"], site, params.get("slug"))
    return site.pages.respond(
        request,
        lambda: render_embed(
            request,
            source,
            run_source(site, source),
            step=step,
            controls=controls,
            theme=theme,
            autoplay=autoplay,
        ),
    )
