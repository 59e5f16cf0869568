"""Shareable scenario links: save a scenario immutably, open it at ``/s/{id}``, fork it.

``POST /api/v1/scenarios`` validates params exactly like a run (the explainer's own ``parse``)
and stores them canonically (``parse`` then ``dump``) with the simulation version they were made
with. Opening a link re-runs the params, so a scenario saved under an older simulation still
opens, with a note saying the simulation has changed since.
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from app.sim.core import ParamError, msg
from app.store import repo
from app.store.models import Scenario
from app.web import i18n
from app.web.deps import StepQuery, Visitor
from app.web.player import render_player
from app.web.quotas import check_share_quota
from app.web.sessions import ensure_visitor
from app.web.site import Site
from app.web.sources import (
    ScenarioNotFound,
    ScenarioSource,
    SiteDep,
    encode_params,
    prefixed,
    run_source,
)
from app.web.templating import render

router = APIRouter()


class ScenarioIn(BaseModel):
    """A scenario to save. ``params`` are validated exactly as ``POST /explainers/{name}/run``."""

    model_config = ConfigDict(extra="forbid")

    explainer: Annotated[str, Field(min_length=1, max_length=40, description="Explainer name")]
    params: Annotated[Any, Field(description="Params, as POST /api/v1/explainers/{name}/run")]
    title: Annotated[str | None, Field(max_length=repo.TITLE_MAX)] = None
    forked_from: Annotated[
        str | None, Field(max_length=32, description="id this was forked from")
    ] = None


def scenario_json(request: Request, site: Site, row: Scenario) -> dict[str, Any]:
    plugin = site.get(row.explainer)
    return {
        "id": row.id,
        "explainer": row.explainer,
        "params": json.loads(row.params_json),
        "sim_version": row.sim_version,
        "current_sim_version": plugin.sim.sim_version if plugin else None,
        "title": row.title,
        "created_at": row.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "forked_from": row.forked_from,
        "url": f"/s/{row.id}",
        "share_url": str(request.url_for("shared_page", scenario_id=row.id)),
        "embed_url": f"/embed/s/{row.id}",
    }


@router.post(
    "/api/v1/scenarios",
    status_code=201,
    tags=["api"],
    responses={
        201: {"description": "Saved; `url` opens it"},
        422: {"description": "Invalid explainer, params, title or forked_from"},
    },
)
def create_scenario(body: ScenarioIn, request: Request, site: SiteDep) -> JSONResponse:
    """Save a scenario immutably and answer its short id and link ``/s/{id}``."""
    plugin = site.get(body.explainer)
    if plugin is None:
        raise ParamError.single(
            ("explainer",),
            msg(
                "there is no explainer called {name}; choose one of: {names}",
                name=repr(body.explainer),
                names=site.names,
            ),
        )
    ex = plugin.sim
    try:
        params = ex.parse(body.params)
    except ParamError as exc:
        raise prefixed(exc, "params") from exc
    canonical = ex.dump(params)
    title = (body.title or "").strip() or None
    owner = ensure_visitor(request)  # first, so this share counts against the session too
    check_share_quota(request)
    engine = request.app.state.engine
    with repo.session_for(engine) as db:
        if (
            body.forked_from is not None
            and repo.get_scenario(db=db, scenario_id=body.forked_from) is None
        ):
            raise ParamError.single(("forked_from",), msg("no saved scenario has this id"))
        row = repo.create_scenario(
            db=db,
            explainer=ex.name,
            params=canonical,
            sim_version=ex.sim_version,
            title=title,
            forked_from=body.forked_from,
            owner=owner,
        )
    # A lecturer shares a link before the lecture: have its trace ready for the first student.
    site.runs.warm([(ex, params)])
    out = scenario_json(request, site, row)
    return JSONResponse(
        {
            "id": row.id,
            "url": out["url"],
            "share_url": out["share_url"],
            "embed_url": out["embed_url"],
        },
        status_code=201,
        headers={"Location": out["url"]},
    )


@router.get(
    "/api/v1/scenarios/{scenario_id}",
    tags=["api"],
    responses={404: {"description": "No scenario has this id"}},
)
def get_scenario(scenario_id: str, request: Request, site: SiteDep) -> dict[str, Any]:
    """The stored record of a shared scenario (params as saved, canonical)."""
    with repo.session_for(request.app.state.engine) as db:
        row = repo.get_scenario(db=db, scenario_id=scenario_id)
    if row is None:
        text = msg("No shared scenario has the id {id}.", id=repr(scenario_id))
        raise HTTPException(404, i18n.render(text))
    return scenario_json(request, site, row)


@router.get(
    "/s/{scenario_id}", response_class=HTMLResponse, name="shared_page", include_in_schema=False
)
def shared_page(
    scenario_id: str,
    request: Request,
    site: SiteDep,
    source: ScenarioSource,
    step: StepQuery = None,
) -> Response:
    row = source.scenario
    if row is None:  # pragma: no cover - ScenarioSource always has its row
        raise ScenarioNotFound(scenario_id)
    parent = None
    if row.forked_from:
        with repo.session_for(request.app.state.engine) as db:
            parent = repo.get_scenario(db=db, scenario_id=row.forked_from)
    return site.pages.respond(
        request,
        lambda: render_player(
            request,
            source,
            run_source(site, source),
            step=step,
            template="pages/share.html",
            sim_changed=source.sim_changed,
            parent=parent,
            share_url=str(request.url_for("shared_page", scenario_id=row.id)),
        ),
        walkthrough=source.walkthrough_key,
    )


@router.get("/s/{scenario_id}/fork", name="fork_scenario", include_in_schema=False)
def fork(scenario_id: str, source: ScenarioSource) -> Response:
    """Open a copy of the scenario in the editor; sharing the edited copy makes a new id."""
    target = (
        f"/explainers/{source.plugin.name}/edit?p={encode_params(source.raw)}"
        f"&forked_from={scenario_id}"
    )
    title = source.scenario.title if source.scenario is not None else None
    if title:  # the copy keeps its share title (the editor passes it on to the player)
        target += "&" + urlencode({"title": title})
    return RedirectResponse(target, status_code=303)


@router.get(
    "/my-scenarios", response_class=HTMLResponse, name="my_scenarios", include_in_schema=False
)
def my_scenarios(request: Request, site: SiteDep, sid: Visitor) -> Response:
    """The scenarios this browser saved and the walkthroughs it has been through."""
    scenarios, progress, recordings = [], [], []
    if sid:
        with repo.session_for(request.app.state.engine) as db:
            scenarios = repo.scenarios_of(db=db, session_id=sid)
            progress = repo.recent_progress(db=db, session_id=sid)
            recordings = repo.recordings_of(db=db, session_id=sid)
    rows = []
    for s in scenarios:
        plugin = site.get(s.explainer)
        rows.append({"row": s, "explainer": plugin.sim if plugin else None})
    return render(
        request,
        "pages/my_scenarios.html",
        {
            "has_session": sid is not None,
            "scenarios": rows,
            "progress": progress,
            "recordings": recordings,
        },
    )
