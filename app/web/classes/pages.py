"""The pages of a live class: ``/c/{code}`` (a student follows the lecturer's step) and the
lecturer's presenter view (``/classes/{id}/present``). Both are the walkthrough's player with
a class panel; never cached (the step moves)."""

from __future__ import annotations

import segno
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from app.sim.core import msg
from app.store.models import LiveClass
from app.web import i18n
from app.web.classes import api, store
from app.web.classes.scenario import followed
from app.web.deps import Controls, Theme
from app.web.player import render_player
from app.web.sources import SiteDep, run_source

router = APIRouter(include_in_schema=False)
NO_STORE = {"Cache-Control": "no-store"}


def qr_svg(url: str) -> Markup:
    """The join link as a QR code, inline SVG: black on white (phones read that best)."""
    code = segno.make(url, error="m")
    return Markup(code.svg_inline(scale=6, dark="#000", light="#fff", omitsize=True))


def _page(
    request: Request, site: SiteDep, row: LiveClass, template: str, **extra: object
) -> HTMLResponse:
    source = followed(site, request.app.state.engine, row)
    trace = run_source(site, source)
    response = render_player(
        request,
        source,
        trace,
        step=row.step,
        template=template,
        live=row,
        join_url=str(request.url_for("class_join", code=row.code)),
        **extra,
    )
    response.headers.update(NO_STORE)
    return response


@router.get("/c/{code}", response_class=HTMLResponse, name="class_join")
def join_page(code: str, request: Request, site: SiteDep) -> HTMLResponse:
    return _page(request, site, _by_code(request, code), "pages/class_join.html")


def _by_code(request: Request, code: str) -> LiveClass:
    row = store.by_code(request.app.state.engine, code[:12])
    if row is None:
        text = msg("No class has the code {code}.", code=repr(code[:12]))
        raise HTTPException(404, i18n.render(text))
    return api.load(request, row.id)


@router.get("/embed/c/{code}", response_class=HTMLResponse, name="class_embed")
def embed_join(
    code: str,
    request: Request,
    site: SiteDep,
    controls: Controls = "min",
    theme: Theme = "projector",
) -> HTMLResponse:
    """The embed of a slide deck joining the class: it follows the lecturer's step."""
    row = _by_code(request, code)
    return _page(
        request,
        site,
        row,
        "embed/class_join.html",
        embed=True,
        controls=controls,
        theme=theme,
        autoplay=False,
        page_url=str(request.url_for("class_join", code=row.code)),
    )


@router.get("/classes/{class_id}/present", response_class=HTMLResponse, name="class_present")
def presenter_page(class_id: str, request: Request, site: SiteDep) -> HTMLResponse:
    row = api.load(request, class_id)
    join_url = str(request.url_for("class_join", code=row.code))
    return _page(request, site, row, "pages/class_present.html", qr=qr_svg(join_url))
