"""Failures that are not the request's fault, answered as such (never a 500):

* a run over a simulation process's memory or CPU limit: **422** naming the limit (the same
  parameters would fail again; smaller ones would not) — :class:`~app.web.simproc.SimLimitExceeded`;
* a simulation process that died under a run: **503** with ``Retry-After`` (its pool is forked
  again) — :class:`~app.web.simproc.SimProcessDied`;
* the store unavailable (SQLite locked or full, PostgreSQL down; see :mod:`app.store.health`):
  **503** with ``Retry-After``.

Routes' errors reach the exception handlers below (JSON for the API, a page otherwise).
:class:`StoreDownGuard` is the net for what runs before routing (the session lookup of
:mod:`app.web.sessions` reads the store in middleware), outermost, with the security headers
the inner layers would have added.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.types import Message, Receive, Scope, Send

from app.sim.core import msg
from app.store import health
from app.web import i18n
from app.web.asgi import HttpMiddleware
from app.web.errors import response_language, wants_json
from app.web.jsonguard import params_location
from app.web.security import security_headers
from app.web.simproc import SimLimitExceeded, SimProcessDied

log = logging.getLogger("stepscope")
NO_STORE = "no-store"


def _unavailable_text() -> str:
    return i18n.render(
        msg("the database is unavailable right now; try again in {s} s", s=health.RETRY_AFTER_S)
    )


def _page(request: Request, status: int, ctx: dict[str, Any], headers: dict[str, str]) -> Response:
    from app.web.templating import render

    try:
        return render(request, "pages/error.html", ctx, status_code=status, headers=headers)
    except Exception as exc:  # noqa: BLE001 - the page itself may need the store
        if not health.is_unavailable(exc):
            raise
        return Response(str(ctx.get("message", "")), status, headers, media_type="text/plain")


def _service_unavailable(request: Request, text: str, retry_after: int) -> Response:
    headers = {"Retry-After": str(retry_after), "Cache-Control": NO_STORE}
    if wants_json(request):
        return JSONResponse({"detail": text}, status_code=503, headers=headers)
    ctx = {"status": 503, "title": msg("The simulator is busy"), "message": text}
    return _page(request, 503, ctx, headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(SimLimitExceeded)
    async def _over_limit(request: Request, exc: SimLimitExceeded) -> Response:
        where = params_location(request)
        lang = response_language(request)
        text = i18n.render(exc.message, lang)
        detail = [{"loc": [where], "msg": text, "type": f"sim_limit.{exc.limit}"}]
        headers = {"Content-Language": lang, "Cache-Control": NO_STORE}
        if wants_json(request):
            return JSONResponse({"detail": detail}, status_code=422, headers=headers)
        ctx = {"status": 422, "title": msg("This simulation is too large to run here")}
        return _page(request, 422, {**ctx, "issues": detail}, {"Cache-Control": NO_STORE})

    @app.exception_handler(SimProcessDied)
    async def _died(request: Request, exc: SimProcessDied) -> Response:
        return _service_unavailable(request, i18n.render(exc.message), exc.retry_after)

    async def _store_down(request: Request, exc: Exception) -> Response:
        log.warning("store unavailable: %s", exc)
        return _service_unavailable(request, _unavailable_text(), health.RETRY_AFTER_S)

    for error in health.STORE_ERRORS:
        app.add_exception_handler(error, _store_down)
    app.add_middleware(StoreDownGuard)


class StoreDownGuard(HttpMiddleware):
    """Pure ASGI, outermost: a store error raised before the response started (in middleware,
    where the exception handlers do not reach) becomes a 503 with ``Retry-After``."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if started or not health.is_unavailable(exc):
                raise
            log.warning("store unavailable: %s", exc)
            await _send_unavailable(scope, send)


async def _send_unavailable(scope: Scope, send: Send) -> None:
    body = json.dumps({"detail": _unavailable_text()}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(health.RETRY_AFTER_S).encode()),
        (b"cache-control", NO_STORE.encode()),
        *security_headers(scope.get("path", "")),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
