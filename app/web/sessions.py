"""Anonymous visitor sessions and walkthrough progress.

A page sets only a small probe cookie (``stepscope_ok=1``, the same for everyone, no database
row). A session is stored, and its random id set as a cookie (HttpOnly, SameSite=Lax, Secure over
HTTPS or with ``secure_cookies``), when a browser that keeps cookies first saves something worth
keeping: a shared scenario, or progress past step 0. A cookie-less GET never writes. Nothing
depends on it: with cookies off every page works, the player just can't offer "continue at step
N" and "my scenarios" stays empty. Embeds, exports and static files never set a cookie; of the
API only saving a scenario or progress does.

The player reports the shown step to ``POST /api/v1/progress``; the server resolves the
walkthrough key itself (preset or shared scenario), so a client can't plant arbitrary links.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.sim.core import ParamError, msg
from app.store import repo
from app.store.models import Progress
from app.web import i18n
from app.web.deps import visitor_id
from app.web.groupcommit import GroupCommit
from app.web.memo import Memo
from app.web.quotas import check_session_quota
from app.web.site import Site
from app.web.sources import (
    ScenarioNotFound,
    SiteDep,
    Source,
    from_preset,
    from_scenario,
    run_source,
)

COOKIE = "stepscope_sid"
PROBE_COOKIE = "stepscope_ok"  # "this browser keeps cookies"; no database row behind it
COOKIE_MAX_AGE = 400 * 24 * 3600  # browsers cap cookie lifetimes at 400 days
NO_SESSION_PREFIXES = (
    "/static/",
    "/vendor/",
    "/embed/",
    "/api/",
    "/export/",
    "/docs",
    "/redoc",
    "/openapi.json",
    "/favicon",
)
_PRESET_KEY = re.compile(r"^/explainers/([a-z0-9_-]{1,40})/presets/([a-z0-9_-]{1,80})$")
_SCENARIO_KEY = re.compile(r"^/s/([A-Za-z0-9_-]{10,32})$")

KNOWN_FOR_S = 300.0  # a session found is trusted this long before it is looked up again

router = APIRouter(prefix="/api/v1", tags=["sessions"])


def _wants_session(request: Request) -> bool:
    return request.method == "GET" and wants_probe(request.url.path)


def wants_probe(path: str) -> bool:
    """Whether an HTML page at ``path`` gets the probe cookie (pages, not API or embeds)."""
    return not path.startswith(NO_SESSION_PREFIXES)


def _lookup(engine: Any, sid: str) -> str | None:
    with repo.session_for(engine) as db:
        found = repo.get_visitor(db=db, session_id=sid)
        if found is None:
            return None
        repo.touch_visitor(db=db, visitor=found)
        return found.id


def _create(engine: Any) -> str:
    with repo.session_for(engine) as db:
        return repo.create_visitor(db=db).id


def _set_cookie(request: Request, response: Response, name: str, value: str) -> None:
    secure = bool(request.app.state.settings.secure_cookies) or request.url.scheme == "https"
    response.set_cookie(
        name, value, max_age=COOKIE_MAX_AGE, path="/", httponly=True, samesite="lax", secure=secure
    )


def ensure_visitor(request: Request) -> str | None:
    """The visitor's session, stored now if this browser keeps cookies (it sent the probe) and
    has none yet; the middleware then sets its cookie. None for cookie-less clients. A client
    that has started ``sessions_per_client`` sessions in the last hour gets 429 instead (one
    client sending the probe cookie alone, over and over, made a session row each time)."""
    found = visitor_id(request)
    if found is not None or PROBE_COOKIE not in request.cookies:
        return found
    check_session_quota(request)  # 429 past sessions_per_client new sessions an hour
    new_id = _create(request.app.state.engine)
    request.state.visitor_id = new_id
    request.state.new_visitor_id = new_id
    return new_id


def _cookie_header(request: Request, name: str, value: str) -> str:
    carrier = Response()
    _set_cookie(request, carrier, name, value)
    return carrier.headers["set-cookie"]


@cache
def probe_cookie_header(secure: bool) -> bytes:
    """The ``Set-Cookie`` value of the probe cookie (what ``_set_cookie`` writes)."""
    carrier = Response()
    carrier.set_cookie(
        PROBE_COOKIE,
        "1",
        max_age=COOKIE_MAX_AGE,
        path="/",
        httponly=True,
        samesite="lax",
        secure=secure,
    )
    return carrier.headers["set-cookie"].encode("latin-1")


class SessionMiddleware:
    """Pure ASGI: finds the visitor's stored session (if its cookie names one) before the route
    runs, and sets the cookies the route asked for as the response starts. Static files and
    embeds pass straight through: embeds neither need nor set a cookie."""

    def __init__(self, app: ASGIApp, engine: Any) -> None:
        self.app = app
        self.engine = engine
        # Sessions found lately, and when: a student stepping through a walkthrough sends a
        # request a second; looking their session up (and crossing to a thread for it) each
        # time was a good part of a step's CPU. Sessions go only when idle for weeks.
        self.known: Memo[str, float] = Memo(50_000)

    async def lookup(self, sid: str) -> str | None:
        seen = self.known.get(sid)
        now = time.monotonic()
        if seen is not None and now - seen < KNOWN_FOR_S:
            return sid
        found = await run_in_threadpool(_lookup, self.engine, sid)  # and touches it
        if found is not None:
            self.known.put(sid, now)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(("/static/", "/vendor/", "/embed/")):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        sid = request.cookies.get(COOKIE)
        found = await self.lookup(sid) if sid else None
        scope.setdefault("state", {})["visitor_id"] = found

        async def send_with_cookies(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                new_id = scope["state"].get("new_visitor_id")
                if new_id is not None:  # stored by ensure_visitor during this request
                    headers.append("set-cookie", _cookie_header(request, COOKIE, new_id))
                elif (
                    found is None
                    and PROBE_COOKIE not in request.cookies
                    and headers.get("content-type", "").startswith("text/html")
                    and message["status"] < 400
                    and _wants_session(request)
                ):
                    headers.append("set-cookie", _cookie_header(request, PROBE_COOKIE, "1"))
            await send(message)

        await self.app(scope, receive, send_with_cookies)


def install(app: FastAPI) -> None:
    app.add_middleware(SessionMiddleware, engine=app.state.engine)
    app.state.site.templates.env.globals["resume_for"] = resume_for


def resume_for(request: Request, walkthrough: str | None) -> Progress | None:
    """Template helper: the visitor's saved step for this walkthrough, if any (and not step 0)."""
    sid = visitor_id(request)
    if not sid or not walkthrough or getattr(request.state, "everyones_page", False):
        return None
    with repo.session_for(request.app.state.engine) as db:
        found = repo.get_progress(db=db, session_id=sid, walkthrough=walkthrough)
    return found if found and found.step > 0 else None


def resolve_walkthrough(request: Request, site: Site, key: str) -> Source:
    """The preset or saved scenario a walkthrough key names; 422 naming ``walkthrough`` if none."""
    bad = ParamError.single(
        ("walkthrough",),
        msg(
            "is not a walkthrough: use a preset page path "
            "(/explainers/NAME/presets/SLUG) or a shared scenario path (/s/ID)"
        ),
    )
    if m := _PRESET_KEY.fullmatch(key):
        try:
            return from_preset(site, m.group(1), m.group(2))
        except HTTPException:
            raise bad from None
    if m := _SCENARIO_KEY.fullmatch(key):
        try:
            return from_scenario(site, request.app.state.engine, m.group(1))
        except (ScenarioNotFound, HTTPException):
            raise bad from None
    raise bad


class ProgressIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    walkthrough: Annotated[
        str,
        Field(
            min_length=1, max_length=200, description="Preset path or /s/{id} of the walkthrough"
        ),
    ]
    step: Annotated[int, Field(ge=0, le=1_000_000, description="0-based step shown")]


@dataclass(frozen=True, slots=True)
class Walkthrough:
    """What recording progress needs of a walkthrough (fixed for a simulation version)."""

    title: str
    url: str
    count: int


def walkthrough_facts(request: Request, site: Site, key: str) -> Walkthrough:
    """Title (in the request's language), page and step count of the walkthrough ``key``;
    remembered per process, since presets and saved scenarios never change (the first time
    reads the database and the trace store)."""
    lang = i18n.language_of(request)
    found: Walkthrough | None = site.walkthroughs.get((key, lang))
    if found is None:
        source = resolve_walkthrough(request, site, key)
        count = len(run_source(site, source).frames)
        found = Walkthrough(title=source.title, url=source.page_path, count=count)
        site.walkthroughs.put((key, lang), found)
    return found


def progress_writer(app: Any) -> GroupCommit[repo.ProgressRow]:
    """The process's one writer of progress (every step of every student comes to it)."""
    writer: GroupCommit[repo.ProgressRow] | None = getattr(app.state, "progress_writer", None)
    if writer is None:
        engine = app.state.engine
        writer = GroupCommit(lambda rows: repo.save_progress_rows(engine=engine, rows=rows))
        app.state.progress_writer = writer
    return writer


@router.post("/progress")
async def save_progress(body: ProgressIn, request: Request, site: SiteDep) -> dict[str, Any]:
    """Remember the step this visitor reached in a walkthrough ("continue where you left off").

    Answers ``saved: false`` when the request carries no session (cookies off): nothing breaks.
    A browser without a session gets one at its first step past 0 (step 0 is not worth keeping).
    Every step of every student in a lecture hall comes here, so it is ``async``: the
    walkthrough's facts come from memory after the first time, and the write joins the
    process's group commit (:mod:`app.web.groupcommit`): it is answered once committed, and no
    request thread waits for the database's write lock.
    """
    lang = i18n.language_of(request)
    walk: Walkthrough | None = site.walkthroughs.get((body.walkthrough, lang))
    if walk is None:
        walk = await run_in_threadpool(walkthrough_facts, request, site, body.walkthrough)
    if body.step >= max(walk.count, 1):
        raise ParamError.single(
            ("step",),
            msg(
                "must be below {count}, the number of steps; you gave {step}",
                count=walk.count,
                step=body.step,
            ),
        )
    sid = visitor_id(request)
    if sid is None and body.step > 0 and PROBE_COOKIE in request.cookies:
        sid = await run_in_threadpool(ensure_visitor, request)  # stored now: a first step
    if sid is None:
        return {
            "saved": False,
            "reason": "no session cookie",
            "step": body.step,
            "count": walk.count,
        }
    row = repo.ProgressRow(sid, body.walkthrough, body.step, walk.count, walk.title, walk.url)
    await progress_writer(request.app).submit(row)
    return {"saved": True, "step": body.step, "count": walk.count}
