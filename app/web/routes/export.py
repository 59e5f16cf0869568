"""Exports of any scenario: the current step as SVG or PNG, the trace as JSON, and a
self-contained offline HTML file (every frame, CSS and the player inside; opens from file://).

A scenario is named by query (see :func:`app.web.sources.query_source`). Pictures come from the
same view function the player uses, styled by the same stylesheet, so an export looks like the
page. The work itself lives in :mod:`app.web.exporting`.
"""

from __future__ import annotations

import asyncio
import json
import re
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from app.sim.core import ParamError, Trace, msg
from app.web import i18n
from app.web.deps import StepQuery, Theme
from app.web.exporting import (
    OfflineTooLarge,
    PngRenderer,
    PngUnavailable,
    app_css,
    local_asset,
    offline_document,
    picture_size,
    png_css,
    standalone_svg,
)
from app.web.player import clamp_step
from app.web.routes.api import trace_json
from app.web.runs import Busy
from app.web.site import Site
from app.web.sources import QuerySource, SiteDep, Source, run_source

router = APIRouter(prefix="/export", tags=["export"])


def _filename(source: Source, suffix: str) -> str:
    if source.scenario:
        stem = f"{source.plugin.name}-{source.scenario.id}"
    elif source.preset:
        stem = f"{source.plugin.name}-{source.preset.slug}"
    else:
        stem = f"{source.plugin.name}-custom"
    return f"stepscope-{re.sub(r'[^A-Za-z0-9_-]', '_', stem)}{suffix}"


def attachment(name: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{name}"'}


def offline_response(
    request: Request,
    site: Site,
    source: Source,
    trace: Trace[Any, Any],
    *,
    step: int | None,
    theme: str,
    name: str,
) -> Response:
    """The offline HTML file as an attachment called ``name``, or 413 naming the limit. A
    file that takes over a second to build counts against the client's quota."""
    try:
        html = offline_document(
            request, source, trace, step=step, theme=theme, charge=site.runs.charge_client
        )
    except OfflineTooLarge as exc:
        return JSONResponse({"detail": i18n.render(exc.message)}, status_code=413)
    return HTMLResponse(html, headers=attachment(name))


def frame_picture(
    source: Source, trace: Trace[Any, Any], step: int | None, *, still: bool = False
) -> tuple[int, str]:
    """The step's index and picture; ``still``: the view's picture for a file of one step (a
    view whose step needs what it draws once per trace, such as a chart, declares one)."""
    if not trace.frames:
        raise ParamError.single(("step",), msg("this scenario has no steps to export"))
    index = clamp_step(step, len(trace.frames))
    web = source.plugin.web
    draw = (web.still or web.picture) if still else web.picture
    return index, draw(trace, trace.frames[index])


def view_css(request: Request, styles: tuple[str, ...]) -> list[str]:
    """The text of a view's declared stylesheets (those the app serves)."""
    files = (local_asset(request, url) for url in styles)
    return [f.read_text(encoding="utf-8") for f in files if f is not None]


@router.get("/svg")
def export_svg(
    request: Request,
    site: SiteDep,
    source: QuerySource,
    step: StepQuery = None,
    theme: Theme = "light",
) -> Response:
    """This step's picture as a standalone SVG file (stylesheet inside)."""

    def produce() -> Response:
        index, picture = frame_picture(source, run_source(site, source), step, still=True)
        css = "\n".join([app_css(request), *view_css(request, source.plugin.web.styles)])
        svg = standalone_svg(picture, css=css, theme=theme)
        name = _filename(source, f"-step{index}.svg")
        return Response(svg, media_type="image/svg+xml", headers=attachment(name))

    return site.pages.respond(request, produce)


async def step_png(
    request: Request,
    site: Site,
    source: Source,
    trace: Trace[Any, Any],
    index: int,
    picture: str,
    key: tuple[Any, ...],
    theme: str,
    scale: int,
) -> bytes | Response:
    """Step ``index``'s picture as PNG bytes, from the renderer's cache under ``key`` or drawn
    now from a page of that one step (counted against the client's quota as a long run); a
    503 answer when Chromium cannot draw it. Every PNG export (runs, recordings) draws here."""
    pngs: PngRenderer = request.app.state.pngs
    data = pngs.cached(key)
    if data is not None:
        return data
    await run_in_threadpool(site.runs.charge_client)
    html = await run_in_threadpool(
        partial(
            offline_document,
            request,
            source,
            trace,
            step=index,
            theme=theme,
            controls="none",
            extra_css=png_css(picture),
            one_step=True,
        )
    )
    try:
        data = await pngs.render_async(
            html, scale=scale, width=picture_size(picture)[0], ready=source.plugin.web.export_ready
        )
    except PngUnavailable as exc:
        return JSONResponse({"detail": i18n.render(exc.message)}, status_code=503)
    pngs.store(key, data)
    return data


@router.get(
    "/png",
    responses={
        200: {"content": {"image/png": {}}},
        429: {"description": "Too many long runs or exports from this client in a minute"},
        503: {"description": "No Chromium on this server, too many PNGs waiting, or too slow"},
    },
)
async def export_png(
    request: Request,
    site: SiteDep,
    source: QuerySource,
    step: StepQuery = None,
    theme: Theme = "light",
    scale: Annotated[int, Query(ge=1, le=3, description="Pixels per SVG unit (1-3)")] = 2,
) -> Response:
    """This step's picture as a PNG, drawn server-side with the page's stylesheet. Drawing waits
    in a short queue of its own and holds no request thread; a PNG not ready within
    ``PNG_WAIT_S`` (its run, its step's picture and Chromium together) is answered 503 with
    ``Retry-After`` (what was done by then is kept: a retry goes on from there)."""
    try:
        return await asyncio.wait_for(
            _png(request, site, source, step, theme, scale), pngs_wait_s(request)
        )
    except TimeoutError:
        raise Busy(10) from None


def pngs_wait_s(request: Request) -> float:
    renderer: PngRenderer = request.app.state.pngs
    return renderer.wait_s


async def _png(
    request: Request, site: Site, source: Source, step: int | None, theme: str, scale: int
) -> Response:
    trace = await run_in_threadpool(run_source, site, source)
    # drawing one step of a long walk can take seconds of CPU: never on the event loop
    index, picture = await run_in_threadpool(frame_picture, source, trace, step)
    key = (
        source.plugin.name,
        trace.sim_version,
        json.dumps(source.raw, sort_keys=True),
        i18n.current(),  # the picture's words are the reader's
        index,
        theme,
        scale,
    )
    data = await step_png(request, site, source, trace, index, picture, key, theme, scale)
    if isinstance(data, Response):
        return data
    headers = {
        **attachment(_filename(source, f"-step{index}.png")),
        "Cache-Control": "public, max-age=3600",
    }
    return Response(data, media_type="image/png", headers=headers)


@router.get("/json")
def export_json(request: Request, site: SiteDep, source: QuerySource) -> Response:
    """The whole trace as JSON (the run API's shape, plus the scenario it came from)."""

    def produce() -> Response:
        params, trace = site.run(source.plugin, source.raw)
        body = {
            "explainer": source.plugin.name,
            "title": source.title,
            "params": source.explainer.dump(params),
            "scenario": source.scenario.id if source.scenario else None,
            "count": len(trace.frames),
            **trace_json(source.plugin, trace),
        }
        return JSONResponse(body, headers=attachment(_filename(source, ".json")))

    return site.pages.respond(request, produce)


@router.get(
    "/html",
    response_class=HTMLResponse,
    responses={
        413: {"description": "The offline file would be over its size limit (named)"},
        429: {"description": "Too many long runs or exports from this client in a minute"},
    },
)
def export_html(
    request: Request,
    site: SiteDep,
    source: QuerySource,
    step: StepQuery = None,
    theme: Theme = "light",
) -> Response:
    """A single HTML file with every frame, the stylesheet and the player script inside: it works
    from a USB stick, with no server and no network."""

    def produce() -> Response:
        trace = run_source(site, source)
        name = _filename(source, ".html")
        return offline_response(request, site, source, trace, step=step, theme=theme, name=name)

    return site.pages.respond(request, produce)
