"""One shape for every input error: HTTP 422 with ``detail: [{loc, msg, type}]``.

The API answers JSON; pages answer an HTML page that says what to change. Nothing a user types
can produce a 500 or a stack trace. A simulation's issue is a message id with parameters: the
JSON API renders it in the language ``Accept-Language`` asks for (or ``?lang=``), a page in the
page's language.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.sim.core import Cancelled, Message, ParamError, msg
from app.sim.core.validate import scrub
from app.store import repo
from app.web import i18n
from app.web.jobowners import client_of, owners_of
from app.web.jsonguard import params_location
from app.web.runs import Busy, CrossSite, JobStarted, RateLimited
from app.web.sources import ScenarioNotFound

BODY_PARSE_ERROR = "There was an error parsing the body"
BODY_TOO_BIG = (
    "the body could not be read as JSON: numbers may have at most 4300 digits and nesting must "
    "stay under a few hundred levels"
)


MSG_MAX = 200  # characters of one message (a message may quote the bad input)
LOC_PART_MAX = 60  # characters of one loc part (a loc may be a key the client made up)
LOC_MAX = 12  # parts of one loc
ISSUES_MAX = 50  # issues in one answer
SHOWN_ID_MAX = 64  # characters of an unknown id quoted back (ids are 16)


def _form_query(request: Request) -> str:
    """``?form=full`` when the run was asked for in the full form, so its job's result is too."""
    return "?form=full" if request.query_params.get("form") == "full" else ""


def clamp_text(text: str, limit: int = MSG_MAX) -> str:
    """``text`` cut to ``limit`` characters, ending in "…" when cut; a lone surrogate quoted
    from the input becomes U+FFFD (it cannot be written out as UTF-8)."""
    text = scrub(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clamp_detail(detail: list[dict[str, Any]], total: int | None = None) -> list[dict[str, Any]]:
    """Issues with each msg and loc cut short, and at most ISSUES_MAX of them (of ``total``), so
    an error about a huge input never quotes more than a short excerpt of it."""
    out = []
    for issue in detail[:ISSUES_MAX]:
        loc = [
            clamp_text(part, LOC_PART_MAX) if isinstance(part, str) else part
            for part in list(issue.get("loc", []))[:LOC_MAX]
        ]
        out.append({**issue, "loc": loc, "msg": clamp_text(str(issue.get("msg", "")))})
    if (total or len(detail)) > ISSUES_MAX:
        more = (total or len(detail)) - ISSUES_MAX
        text = i18n.render(msg("… and {n} more problems", n=more))
        out.append({"loc": [], "msg": text, "type": "too_many_errors"})
    return out


def wants_json(request: Request) -> bool:
    return (
        request.url.path.startswith("/api/")
        or "application/json" in request.headers.get("accept", "").split(",")[0]
    )


def response_language(request: Request) -> str:
    """The language of an error answer: for the JSON API, ``?lang=`` then ``Accept-Language``
    (a client states it per request); for a page, the page's language."""
    if wants_json(request):
        asked = i18n.normalize(request.query_params.get(i18n.QUERY))
        accepted = i18n.from_accept_language(request.headers.get("accept-language"))
        return asked or accepted or i18n.language_of(request)
    return i18n.language_of(request)


def param_error_detail(
    exc: ParamError, prefix: tuple[str | int, ...] = ("body",), lang: str | None = None
) -> list[dict[str, Any]]:
    gettext = i18n.gettext_for(lang)
    return [
        {
            **i.as_dict(gettext),
            "loc": list(i.loc) if i.loc[:1] == ("query",) else [*prefix, *i.loc],
        }
        for i in exc.issues
    ]


def install(app: FastAPI) -> None:
    from app.web.templating import render

    @app.exception_handler(ParamError)
    async def _param_error(request: Request, exc: ParamError) -> Response:
        where = params_location(request)
        lang = response_language(request)
        with i18n.speaking(lang):
            detail = clamp_detail(param_error_detail(exc, (where,), lang))
        headers = {"Content-Language": lang}
        if wants_json(request):
            return JSONResponse({"detail": detail}, status_code=422, headers=headers)
        return render(
            request,
            "pages/error.html",
            {"status": 422, "title": msg("These parameters don't work"), "issues": detail},
            status_code=422,
        )

    def _overloaded(request: Request, status: int, message: str, retry_after: int) -> Response:
        headers = {"Retry-After": str(retry_after), "Cache-Control": "no-store"}
        if wants_json(request):
            return JSONResponse({"detail": message}, status_code=status, headers=headers)
        title = msg("Too many long simulations") if status == 429 else msg("The simulator is busy")
        ctx = {"status": status, "title": title, "message": message}
        return render(request, "pages/error.html", ctx, status_code=status, headers=headers)

    @app.exception_handler(Busy)
    async def _busy(request: Request, exc: Busy) -> Response:
        return _overloaded(request, 503, i18n.render(exc.message), exc.retry_after)

    @app.exception_handler(RateLimited)
    async def _limited(request: Request, exc: RateLimited) -> Response:
        return _overloaded(request, 429, i18n.render(exc.message), exc.retry_after)

    @app.exception_handler(CrossSite)
    async def _cross_site(request: Request, exc: CrossSite) -> Response:
        text = i18n.render(exc.message)
        headers = {"Cache-Control": "no-store"}
        if wants_json(request):
            return JSONResponse({"detail": text}, status_code=403, headers=headers)
        ctx = {"status": 403, "title": msg("Open this link directly"), "message": text}
        return render(request, "pages/error.html", ctx, status_code=403, headers=headers)

    @app.exception_handler(Cancelled)
    async def _cancelled(request: Request, exc: Cancelled) -> Response:
        text = i18n.render(msg("the simulation was cancelled; reload to run it again"))
        return _overloaded(request, 503, text, 1)

    @app.exception_handler(JobStarted)
    async def _job(request: Request, exc: JobStarted) -> Response:
        """A long run goes on as a job: the API answers 202 with where to follow it; a page
        shows a progress bar that reloads into the walkthrough when the run is done."""
        job = exc.job
        # The client answered with the job's id may cancel it; nobody else (app.web.jobowners)
        try:
            await run_in_threadpool(owners_of(request.app).add, job.key, client_of(request))
        except Exception:  # noqa: BLE001 - a store that is down: the job is answered, not 500
            logging.getLogger("stepscope").warning("could not record the owner of a job")
        status_url = f"/api/v1/jobs/{job.key}"
        headers = {"Location": status_url, "Cache-Control": "no-store", "Retry-After": "1"}
        if wants_json(request):
            body = {
                "job": job.key,
                "state": job.state,
                "status_url": status_url,
                # the run's answer in the form it was asked for (app.web.routes.api)
                "result_url": f"{status_url}/result" + _form_query(request),
                "expected_s": round(job.expected_s, 1),
                "eta_s": round(job.eta_s, 1),
            }
            return JSONResponse(body, status_code=202, headers=headers)
        ctx = {"job": job, "status_url": status_url}
        return render(request, "pages/job.html", ctx, status_code=202, headers=headers)

    @app.exception_handler(ScenarioNotFound)
    async def _no_scenario(request: Request, exc: ScenarioNotFound) -> Response:
        if wants_json(request):
            return JSONResponse(
                {
                    "detail": f"No shared scenario has the id "
                    f"{clamp_text(exc.scenario_id, SHOWN_ID_MAX)!r}."
                },
                status_code=404,
            )
        return render(
            request,
            "pages/not_found_scenario.html",
            {
                "scenario_id": clamp_text(exc.scenario_id, SHOWN_ID_MAX),  # a link may be huge
                "looks_like_id": repo.is_scenario_id(exc.scenario_id),
                "embed": request.url.path.startswith("/embed/"),
            },
            status_code=404,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        detail = clamp_detail(
            jsonable_encoder(
                [
                    {"loc": e.get("loc", []), "msg": e.get("msg", ""), "type": e.get("type", "")}
                    for e in errors[:ISSUES_MAX]
                ]
            ),
            total=len(errors),
        )
        if wants_json(request):
            return JSONResponse({"detail": detail}, status_code=422)
        return render(
            request,
            "pages/error.html",
            {"status": 422, "title": msg("That request doesn't work"), "issues": detail},
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and exc.detail == BODY_PARSE_ERROR:
            # FastAPI's answer when json.loads itself gives up (too deep, too many digits).
            detail = [{"loc": ["body"], "msg": BODY_TOO_BIG, "type": "json_invalid"}]
            return JSONResponse({"detail": detail}, status_code=422)
        if isinstance(exc.detail, str):
            exc.detail = clamp_text(exc.detail)
        if wants_json(request):
            return JSONResponse(
                {"detail": exc.detail},
                status_code=exc.status_code,
                headers=getattr(exc, "headers", None),
            )
        title: Message = (
            msg("Page not found") if exc.status_code == 404 else msg("Something went wrong")
        )
        return render(
            request,
            "pages/error.html",
            {"status": exc.status_code, "title": title, "message": str(exc.detail)},
            status_code=exc.status_code,
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:  # pragma: no cover
        logging.getLogger("stepscope").exception("unhandled error")
        if wants_json(request):
            return JSONResponse({"detail": "internal error"}, status_code=500)
        return HTMLResponse("<h1>Something went wrong</h1>", status_code=500)
