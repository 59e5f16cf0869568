"""The shared check of every JSON request body, before any route or model sees it.

JSON can carry what no parameter can hold: an integer literal too large for a float (``1``
and 400 zeros, where every comparison with a float raises OverflowError) and a lone UTF-16
surrogate (``"\\ud800"``, in a value or a key), which no UTF-8 answer, page or database can
write out. Either gave a 500 and a dropped connection wherever it reached; this dependency
(installed on every route in ``build_app``) answers 422 naming the field instead, for every
endpoint at once. Explainer params that come some other way (forms, ``p=`` links, saved
scenarios) get the same check from :class:`~app.sim.core.Explainer`'s ``parse``.
"""

from __future__ import annotations

from fastapi import Request

from app.sim.core import ParamError
from app.sim.core.validate import unsafe_json_issues

BODY_METHODS = frozenset(("POST", "PUT", "PATCH"))
# Routes that read their raw body themselves, bounded, before any JSON object is built (an
# uploaded recording: app.recordings measures its nesting first, then checks the same things)
RAW_BODY_PATHS = frozenset(("/api/v1/recordings",))


def params_location(request: Request) -> str:
    """Where a request's parameters came from, as an error's ``loc`` starts: ``body`` for a
    POST (PUT, PATCH), ``query`` for a GET."""
    return "body" if request.method in BODY_METHODS else "query"


def is_json(content_type: str) -> bool:
    kind = content_type.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


async def refuse_unsafe_json(request: Request) -> None:
    """422 (``ParamError``, located under ``body``) when the JSON body holds a number too
    large for a float or a lone surrogate. A body that is not JSON is left to the route."""
    if request.method not in BODY_METHODS or not is_json(request.headers.get("content-type", "")):
        return
    if request.url.path in RAW_BODY_PATHS:
        return
    try:
        body = await request.json()  # parsed once: FastAPI keeps it for the route
    except (ValueError, RecursionError):
        return  # FastAPI answers a body that does not parse
    issues = unsafe_json_issues(body)
    if issues:
        raise ParamError(issues)
