"""Long runs as jobs: ``/api/v1/jobs/{id}`` (state and progress), ``…/result`` (the run's JSON
once done) and ``DELETE`` to cancel. The id is the trace's content address, so anyone can
compute it: a job's state, its progress and its cancelling are only for the clients the job was
started or joined for (:mod:`app.web.jobowners`; to any other client there is no such job, 404).
A finished run's result is content: anyone who asks for its params gets it at once, and under
its id too."""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response

from app.sim.core import msg
from app.web import i18n, joberrors
from app.web.fastjson import accepts_gzip
from app.web.jobowners import client_of, owners_of
from app.web.routes.api import FORM_DOC, Form, trace_response
from app.web.sources import SiteDep

router = APIRouter(prefix="/api/v1/jobs", tags=["api"])
_KEY = re.compile(r"[0-9a-f]{40}")
NO_STORE = {"Cache-Control": "no-store"}


def _checked(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise HTTPException(404, i18n.render(msg("No job has this id.")))
    return key


def _owned(request: Request, key: str) -> str:
    """``key`` if this request's client was answered with that job; else 404, as for no job."""
    if not owners_of(request.app).owns(_checked(key), client_of(request)):
        raise HTTPException(404, i18n.render(msg("No job has this id.")))
    return key


@router.get("/{key}", responses={404: {"description": "No such job, or not this client's"}})
def job_status(key: str, request: Request, site: SiteDep) -> JSONResponse:
    """Where a long run is: ``state`` (running, done, cancelled, failed) and ``progress`` (0-1,
    simulated work done over total). Only for a client that was answered with this job."""
    runs = site.runs
    job = runs.job(_owned(request, key))
    if job is None:
        if runs.cached(key) is not None:  # finished earlier, maybe by another worker
            body: dict[str, Any] = {"job": key, "state": "done", "progress": 1.0}
            return JSONResponse(
                {**body, "result_url": f"/api/v1/jobs/{key}/result"}, headers=NO_STORE
            )
        shared = runs.shared_job(key)  # running in another worker of this app
        if shared is None:
            raise HTTPException(404, i18n.render(msg("No job has this id.")))
        body = {
            "job": key,
            "explainer": shared.explainer,
            "state": shared.state,
            "progress": round(1.0 if shared.state == "done" else shared.progress, 4),
            "expected_s": round(shared.expected_s, 1),
            "elapsed_s": round(max(0.0, time.time() - shared.started_at), 1),
            "result_url": f"/api/v1/jobs/{key}/result",
        }
        if shared.error:
            body["error"] = joberrors.render(shared.error)
        return JSONResponse(body, headers=NO_STORE)
    body = {
        "job": key,
        "explainer": job.explainer,
        "state": job.state,
        "progress": round(runs.progress(job), 4),
        "expected_s": round(job.expected_s, 1),
        "elapsed_s": round(time.monotonic() - job.started, 1),
        "result_url": f"/api/v1/jobs/{key}/result",
    }
    if job.error:
        body["error"] = joberrors.render(job.error)
    return JSONResponse(body, headers=NO_STORE)


@router.get(
    "/{key}/result",
    responses={
        202: {"description": "Still running"},
        404: {"description": "No such job, or not this client's"},
        410: {"description": "The job ended without a result"},
    },
)
def job_result(
    key: str,
    request: Request,
    site: SiteDep,
    form: Annotated[Form, Query(description=FORM_DOC + " As the run's `form`.")] = "compact",
) -> Response:
    """The run's JSON (as ``POST /api/v1/explainers/{name}/run`` answers, in ``form``) once the
    job is done, to anyone (it is what its params give); while it runs (202) or after it ended
    without a result (410), only for a client that was answered with this job."""
    runs = site.runs
    gzip = accepts_gzip(request.headers.get("accept-encoding"))
    trace = runs.cached(_checked(key))
    if trace is not None:
        return trace_response(site.plugin(trace.explainer), trace, gzip, form)
    job = runs.job(_owned(request, key))
    state, progress = (job.state, runs.progress(job)) if job is not None else ("", 0.0)
    if job is None:
        shared = runs.shared_job(key)
        if shared is None:
            raise HTTPException(404, i18n.render(msg("No job has this id.")))
        state, progress = shared.state, shared.progress
        if state == "done":  # stored by its worker just now: read it from the store
            trace = runs.cached(key)
            if trace is not None:
                return trace_response(site.plugin(trace.explainer), trace, gzip, form)
    if state == "running":
        return JSONResponse(
            {"job": key, "state": "running", "progress": round(progress, 4)},
            status_code=202,
            headers={"Retry-After": "1", **NO_STORE},
        )
    raise HTTPException(
        410, i18n.render(msg("This job ended without a result ({state}).", state=state))
    )


@router.delete("/{key}", status_code=204)
def cancel_job(key: str, request: Request, site: SiteDep) -> Response:
    """Cancel a running job (its worker is freed at the next progress report). Only a client
    that was answered with this job may: to any other the job does not exist (404). When other
    clients asked for the same run it goes on for them (until nobody follows it)."""
    runs = site.runs
    owners = owners_of(request.app)
    if not owners.owns(_checked(key), client_of(request)):
        raise HTTPException(404, i18n.render(msg("No running job has this id.")))
    if owners.count(key) > 1:  # others asked for the same run: it goes on for them
        return Response(status_code=204)
    if not runs.cancel(key):
        shared = runs.shared_job(key, cancel=True)  # its worker cancels it at its next report
        if shared is None or shared.state != "running":
            raise HTTPException(404, i18n.render(msg("No running job has this id.")))
    return Response(status_code=204)
