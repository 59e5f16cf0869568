"""Chrome-free players for slides: ``/embed/{explainer}``, ``…/presets/{slug}``, ``/embed/s/{id}``.

Options (query): ``step``, ``controls`` (full/min/none), ``theme`` (light/dark/projector),
``autoplay``; a bad value answers 422 naming the field. Any origin may frame these pages
(``Content-Security-Policy: frame-ancestors *``, no ``X-Frame-Options``) and they neither need
nor set a cookie. ``static/js/embed.js`` adds the postMessage API (see docs/embedding.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from app.web.deps import Autoplay, Controls, StepQuery, Theme
from app.web.player import player_context
from app.web.sources import Source, from_preset, from_scenario, run_source
from app.web.templating import render

router = APIRouter(prefix="/embed", tags=["embed"])

EMBED_CSP = "frame-ancestors *"


def _render(
    request: Request, source: Source, step: int | None, controls: str, theme: str, autoplay: bool
) -> Response:
    trace = run_source(source)
    ctx = player_context(
        source.explainer,
        trace,
        raw_params=source.raw,
        step=step,
        preset=source.preset,
        lesson=source.lesson,
        title=source.title,
    )
    ctx.update(
        embed=True,
        controls=controls,
        theme=theme,
        autoplay=autoplay,
        source=source,
        scenario=source.scenario,
        page_url=str(request.base_url).rstrip("/") + source.page_path,
    )
    return render(request, "embed/player.html", ctx)


@router.get("/s/{scenario_id}", response_class=HTMLResponse)
def embed_scenario(
    scenario_id: str,
    request: Request,
    step: StepQuery = None,
    controls: Controls = "full",
    theme: Theme = "light",
    autoplay: Autoplay = False,
) -> Response:
    return _render(request, from_scenario(request, scenario_id), step, controls, theme, autoplay)


@router.get("/{name}", response_class=HTMLResponse)
def embed_explainer(
    name: str,
    request: Request,
    step: StepQuery = None,
    controls: Controls = "full",
    theme: Theme = "light",
    autoplay: Autoplay = False,
) -> Response:
    return _render(request, from_preset(name), step, controls, theme, autoplay)


@router.get("/{name}/presets/{slug}", response_class=HTMLResponse)
def embed_preset(
    name: str,
    slug: str,
    request: Request,
    step: StepQuery = None,
    controls: Controls = "full",
    theme: Theme = "light",
    autoplay: Autoplay = False,
) -> Response:
    return _render(request, from_preset(name, slug), step, controls, theme, autoplay)


def install(app: FastAPI) -> None:
    @app.middleware("http")
    async def _frameable(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        if request.url.path.startswith("/embed/"):
            # Every answer under /embed, errors included, may be shown inside a host's iframe.
            response.headers["Content-Security-Policy"] = EMBED_CSP
            if "x-frame-options" in response.headers:
                del response.headers["x-frame-options"]
            if "set-cookie" in response.headers:  # pragma: no cover - nothing here sets one
                del response.headers["set-cookie"]
        return response
