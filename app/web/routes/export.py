"""Exports of any scenario: the current step as SVG or PNG, the trace as JSON, and a
self-contained offline HTML file (every frame, CSS and the player inside; opens from file://).

A scenario is named by query: ``scenario=ID`` (a shared scenario), or ``explainer=NAME`` with
``preset=SLUG`` or ``p=TOKEN`` (a custom scenario link's params), or ``explainer`` alone for its
default walkthrough. Pictures come from the same view function the player uses, styled by the
same stylesheet, so an export looks like the page. PNGs are drawn by headless Chromium (Debian's
``chromium`` package, driven through Playwright) and cached, since traces are deterministic.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from markupsafe import Markup
from starlette.routing import Mount

from app.sim import registry
from app.sim.core import ParamError, Trace
from app.web.deps import StepQuery, Theme
from app.web.player import clamp_step, player_context
from app.web.routes.api import trace_json
from app.web.sources import Source, from_preset, from_scenario, from_token, run_source
from app.web.templating import render, templates
from app.web.viz import view_for

router = APIRouter(prefix="/export", tags=["export"])

ScenarioQ = Annotated[str | None, Query(max_length=64, description="A shared scenario's id")]
ExplainerQ = Annotated[str | None, Query(max_length=40, description="Explainer name")]
PresetQ = Annotated[str | None, Query(max_length=80, description="Preset slug")]
TokenQ = Annotated[
    str | None, Query(max_length=60_000, description="Custom params token (?p= of a custom link)")
]

SVG_NS = "http://www.w3.org/2000/svg"
DEFAULT_SIZE = (1000.0, 600.0)
_VIEWBOX = re.compile(r'viewBox="\s*[-\d.]+[\s,]+[-\d.]+[\s,]+([\d.]+)[\s,]+([\d.]+)\s*"')
_LOCAL_SCRIPT = re.compile(
    r'<script\b([^>]*?)\bsrc="(/(?:static|vendor)/[^"?#]+)"([^>]*)>\s*</script>', re.I
)
_LOCAL_STYLE = re.compile(
    r'<link\b[^>]*?\brel="stylesheet"[^>]*?\bhref="(/(?:static|vendor)/[^"?#]+)"[^>]*>', re.I
)


# --- which scenario ------------------------------------------------------------------------


def resolve(
    request: Request, scenario: str | None, explainer: str | None, preset: str | None, p: str | None
) -> Source:
    """The scenario named by the query; 422 naming the field when the combination is wrong."""
    if scenario is not None:
        if explainer is not None or preset is not None or p is not None:
            raise ParamError.single(
                ("scenario",), "give either scenario, or explainer with preset or p, not both"
            )
        return from_scenario(request, scenario)
    if explainer is None:
        raise ParamError.single(
            ("explainer",),
            "name the scenario: scenario=ID, or explainer=NAME with preset=SLUG or p=TOKEN",
        )
    if registry.get(explainer) is None:
        names = ", ".join(registry.explainers())
        raise ParamError.single(
            ("explainer",), f"there is no explainer called {explainer!r}; choose one of: {names}"
        )
    if preset is not None and p is not None:
        raise ParamError.single(("p",), "give either preset or p, not both")
    if p is not None:
        return from_token(explainer, p)
    try:
        return from_preset(explainer, preset)
    except HTTPException:
        raise ParamError.single(
            ("preset",), f"{explainer} has no preset called {preset!r}"
        ) from None


def source_from_query(
    request: Request,
    scenario: ScenarioQ = None,
    explainer: ExplainerQ = None,
    preset: PresetQ = None,
    p: TokenQ = None,
) -> Source:
    """Dependency: the scenario named by ``scenario`` or ``explainer`` + ``preset``/``p``."""
    return resolve(request, scenario, explainer, preset, p)


SourceQ = Annotated[Source, Depends(source_from_query)]


def _filename(source: Source, suffix: str) -> str:
    if source.scenario:
        stem = f"{source.explainer.name}-{source.scenario.id}"
    elif source.preset:
        stem = f"{source.explainer.name}-{source.preset.slug}"
    else:
        stem = f"{source.explainer.name}-custom"
    return f"stepscope-{re.sub(r'[^A-Za-z0-9_-]', '_', stem)}{suffix}"


def _attachment(name: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{name}"'}


# --- SVG -----------------------------------------------------------------------------------


def app_css(request: Request) -> str:
    path: Path = request.app.state.settings.root / "static" / "css" / "app.css"
    return path.read_text(encoding="utf-8")


def picture_size(picture: str) -> tuple[float, float]:
    """Width and height of a picture from its root ``viewBox`` (a default for HTML pictures)."""
    head = picture[: picture.find(">") + 1] if picture.lstrip().startswith("<svg") else ""
    m = _VIEWBOX.search(head)
    return (float(m.group(1)), float(m.group(2))) if m else DEFAULT_SIZE


def frame_picture(source: Source, trace: Trace, step: int | None) -> tuple[int, str]:
    if not trace.frames:
        raise ParamError.single(("step",), "this scenario has no steps to export")
    index = clamp_step(step, len(trace.frames))
    return index, view_for(source.explainer.name).picture(trace, trace.frames[index])


def standalone_svg(picture: str, *, css: str, theme: str) -> str:
    """A self-contained SVG file: the page's picture, verbatim, inside an outer ``<svg>`` that
    carries the stylesheet and the theme, so it looks as it does on the page."""
    w, h = picture_size(picture)
    css = css.replace("]]>", "]] >")
    body = (
        picture
        if picture.lstrip().startswith("<svg")
        else (
            f'<foreignObject width="{w:g}" height="{h:g}"><div xmlns="http://www.w3.org/1999/xhtml" '
            f'class="stage">{picture}</div></foreignObject>'
        )
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="{SVG_NS}" class="stepscope-export" data-theme="{theme}" width="{w:g}" '
        f'height="{h:g}" viewBox="0 0 {w:g} {h:g}">'
        f"<style><![CDATA[\n{css}\n.stepscope-export .glide, .stepscope-export .seg {{ transition: none; }}\n]]></style>"
        '<rect class="export-bg" width="100%" height="100%" style="fill: var(--bg)"/>'
        f"{body}</svg>\n"
    )


@router.get("/svg")
def export_svg(
    request: Request,
    source: SourceQ,
    step: StepQuery = None,
    theme: Theme = "light",
) -> Response:
    """This step's picture as a standalone SVG file (stylesheet inside)."""
    index, picture = frame_picture(source, run_source(source), step)
    svg = standalone_svg(picture, css=app_css(request), theme=theme)
    return Response(
        svg, media_type="image/svg+xml", headers=_attachment(_filename(source, f"-step{index}.svg"))
    )


# --- PNG -----------------------------------------------------------------------------------


CHROMIUM = os.environ.get("APP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # WebGL charts (Plotly's scattergl) draw in software on a server without a GPU
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]
_png_lock = threading.Lock()  # one Chromium at a time: a small server has few cores
_png_cache: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
PNG_CACHE_SIZE = 64


class PngUnavailable(Exception):
    pass


def png_css(picture: str) -> str:
    """Show only the picture area (charts drawn once per trace, then this step's picture), at
    the picture's own width, with nothing mid-transition."""
    w, _ = picture_size(picture)
    return (
        ".offline-head, .side, #fields, .controls, .frame-store, .embed-credit, .run-summary,"
        " .lesson-intro { display: none !important; }"
        " body, main { margin: 0 !important; padding: 0 !important; background: var(--bg); }"
        " .player-body { display: block !important; }"
        f" .stage-wrap {{ width: {w:g}px; }}"
        " * { transition: none !important; animation: none !important; }"
    )


def render_png(html: str, *, scale: int, width: float) -> bytes:
    """Screenshot the picture area of ``html`` in headless Chromium (the page's own browser)."""
    if not Path(CHROMIUM).exists():
        raise PngUnavailable(
            f"PNG export needs Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
        )
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise PngUnavailable("PNG export needs the playwright package") from exc
    with _png_lock:
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
                )
                try:
                    page = browser.new_page(
                        viewport={"width": int(width) + 40, "height": 800},
                        device_scale_factor=scale,
                    )
                    page.route(
                        "**/*", lambda route: route.abort()
                    )  # the document is self-contained
                    page.set_content(html, wait_until="load")
                    # Plotly charts draw after load; give them a moment to appear
                    try:
                        page.wait_for_function(
                            "() => !document.querySelector('.plotly-pending') &&"
                            " [...document.querySelectorAll('.js-plotly-plot')]"
                            ".every(el => el.querySelector('.main-svg'))",
                            timeout=10_000,
                        )
                    except PlaywrightTimeout:
                        pass  # draw what is there rather than nothing
                    return page.locator(".stage-wrap").screenshot(type="png", animations="disabled")
                finally:
                    browser.close()
        except PlaywrightError as exc:
            raise PngUnavailable(f"Chromium could not draw the PNG: {exc}") from exc


@router.get(
    "/png",
    responses={
        200: {"content": {"image/png": {}}},
        503: {"description": "No Chromium on this server"},
    },
)
def export_png(
    request: Request,
    source: SourceQ,
    step: StepQuery = None,
    theme: Theme = "light",
    scale: Annotated[int, Query(ge=1, le=3, description="Pixels per SVG unit (1-3)")] = 2,
) -> Response:
    """This step's picture as a PNG, drawn server-side with the page's stylesheet."""
    trace = run_source(source)
    index, picture = frame_picture(source, trace, step)
    key = (
        source.explainer.name,
        trace.sim_version,
        json.dumps(source.raw, sort_keys=True),
        index,
        theme,
        scale,
    )
    data = _png_cache.get(key)
    if data is None:
        try:
            html = offline_document(
                request,
                source,
                trace,
                step=index,
                theme=theme,
                controls="none",
                extra_css=png_css(picture),
            )
            data = render_png(html, scale=scale, width=picture_size(picture)[0])
        except PngUnavailable as exc:
            return JSONResponse({"detail": str(exc)}, status_code=503)
        _png_cache[key] = data
        while len(_png_cache) > PNG_CACHE_SIZE:
            _png_cache.popitem(last=False)
    return Response(
        data, media_type="image/png", headers=_attachment(_filename(source, f"-step{index}.png"))
    )


# --- JSON ----------------------------------------------------------------------------------


@router.get("/json")
def export_json(
    request: Request,
    source: SourceQ,
) -> Response:
    """The whole trace as JSON (the run API's shape, plus the scenario it came from)."""
    trace = run_source(source)
    params = source.explainer.dump(source.explainer.parse(source.raw))
    body = {
        "explainer": source.explainer.name,
        "title": source.title,
        "params": params,
        "scenario": source.scenario.id if source.scenario else None,
        "count": len(trace.frames),
        **trace_json(source.explainer, trace),
    }
    return JSONResponse(body, headers=_attachment(_filename(source, ".json")))


# --- offline HTML --------------------------------------------------------------------------


def _script_text(text: str) -> str:
    """JS that is safe inside an inline <script> element."""
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.I).replace("<!--", "<\\!--")


def local_asset(request: Request, url: str) -> Path | None:
    """The file the app serves at a /static/... or /vendor/... URL, if it serves one.

    Looks through the app's own static mounts (and plain routes answering a file, such as
    plotly.js from its wheel), so whatever a view asks for is found the way the server finds it.
    """
    if not url.startswith(("/static/", "/vendor/")):
        return None
    for route in request.app.routes:
        if isinstance(route, Mount) and isinstance(route.app, StaticFiles) and route.app.directory:
            prefix = route.path.rstrip("/") + "/"
            if url.startswith(prefix):
                base = Path(route.app.directory).resolve()
                path = (base / url[len(prefix) :]).resolve()
                if path.is_file() and base in path.parents:
                    return path
        elif (
            isinstance(route, APIRoute)
            and route.path == url
            and "GET" in (route.methods or ())
            and not route.dependant.path_params
            and not route.dependant.query_params
        ):
            answer = route.endpoint()
            if isinstance(answer, FileResponse):
                return Path(answer.path)
    return None


def inline_assets(request: Request, html: str) -> str:
    """Replace every local <script src> and stylesheet <link> with the file's contents."""

    def script(m: re.Match[str]) -> str:
        path = local_asset(request, m.group(2))
        if path is None:
            return ""
        return f"<script>{_script_text(path.read_text(encoding='utf-8'))}</script>"

    def style(m: re.Match[str]) -> str:
        path = local_asset(request, m.group(1))
        return f"<style>{path.read_text(encoding='utf-8')}</style>" if path else ""

    return _LOCAL_STYLE.sub(style, _LOCAL_SCRIPT.sub(script, html))


def player_block(request: Request, ctx: dict[str, Any]) -> str:
    """The player markup exactly as the page renders it (the ``content`` block of the player)."""
    tpl = templates.env.get_template("pages/player.html")
    return "".join(tpl.blocks["content"](tpl.new_context({**ctx, "request": request})))


def offline_document(
    request: Request,
    source: Source,
    trace: Trace,
    *,
    step: int | None,
    theme: str,
    controls: str = "full",
    extra_css: str = "",
) -> str:
    """The whole player for ``source`` as one self-contained HTML document."""
    ctx = player_context(
        source.explainer,
        trace,
        raw_params=source.raw,
        step=step,
        preset=source.preset,
        lesson=source.lesson,
        title=source.title,
        all_frames=True,  # offline: every frame inside, nothing to fetch
    )
    ctx.update(embed=True, controls=controls, autoplay=False, theme=theme, offline=True)
    online = str(request.base_url).rstrip("/") + source.page_path
    page = render(
        request,
        "export/offline.html",
        {
            **ctx,
            "player_html": Markup(player_block(request, ctx)),
            "online_url": online,
            "exported_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "extra_css": Markup(extra_css),
        },
    )
    return inline_assets(request, bytes(page.body).decode("utf-8"))


@router.get("/html", response_class=HTMLResponse)
def export_html(
    request: Request,
    source: SourceQ,
    step: StepQuery = None,
    theme: Theme = "light",
) -> Response:
    """A single HTML file with every frame, the stylesheet and the player script inside: it works
    from a USB stick, with no server and no network."""
    html = offline_document(request, source, run_source(source), step=step, theme=theme)
    return HTMLResponse(html, headers=_attachment(_filename(source, ".html")))
