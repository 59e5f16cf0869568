"""Quotas per hour: saved scenarios per visitor session and per client address, and new
visitor sessions per client address.

Counters live in the database (``rate_limit``), so the quota holds across workers and app
replicas. Client addresses are stored hashed. Behind a reverse proxy, list it in
``trusted_proxies`` so the client address is the visitor's (:class:`app.web.security.ClientAddress`
takes the right-most ``X-Forwarded-For`` hop that is not a trusted proxy).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi import HTTPException, Request

from app.sim.core import Message, msg
from app.store import repo
from app.web import i18n
from app.web.deps import visitor_id
from app.web.memo import Memo

WINDOW_S = 3600


def client_key(request: Request) -> str:
    return repo.address_key(request.client.host if request.client else "unknown")


def _minutes(retry_after: int) -> int:
    return (retry_after + 59) // 60


def _too_many(retry_after: int, text: Message) -> HTTPException:
    """429 with Retry-After and the reason in the reader's language."""
    return HTTPException(429, i18n.render(text), headers={"Retry-After": str(retry_after)})


def _count(
    request: Request,
    prefix: str,
    quotas: tuple[int, int],
    refusal: Callable[[int, Message, int], Message],
    now: float | None,
) -> None:
    """Count one hit for this session (when it has one) and this client under ``prefix``;
    ``quotas`` = (per session, per client) over the last hour, a sliding window
    (:func:`repo.take_hit`). Past one: 429 saying ``refusal(limit, who, minutes)``."""
    clock = now if now is not None else time.time()
    per_session, per_client = quotas
    keys: list[tuple[str, int, Message]] = [
        (f"{prefix}{client_key(request)}", per_client, msg("from this address"))
    ]
    sid = visitor_id(request)
    if sid is not None:
        keys.insert(0, (f"{prefix}session:{sid}", per_session, msg("per browser")))
    with repo.session_for(request.app.state.engine) as db:
        for key, limit, who in keys:
            retry_after = repo.take_hit(db=db, key=key, limit=limit, window_s=WINDOW_S, now=clock)
            if retry_after:
                raise _too_many(retry_after, refusal(limit, who, _minutes(retry_after)))


def check_share_quota(request: Request, now: float | None = None) -> None:
    """Count one share for this session and this client; 429 with Retry-After past
    ``share_quota_per_session`` / ``share_quota_per_client`` in the last hour."""
    settings = request.app.state.settings
    _count(
        request,
        "",
        (settings.share_quota_per_session, settings.share_quota_per_client),
        lambda limit, who, minutes: msg(
            "At most {limit} scenarios can be shared per hour {who}; "
            "try again in {minutes} minutes.",
            limit=limit,
            who=who,
            minutes=minutes,
        ),
        now,
    )


def check_recording_quota(request: Request, now: float | None = None) -> None:
    """Count one upload of a recording for this session and this client; 429 with Retry-After
    past ``recording_quota_per_session`` / ``recording_quota_per_client`` in the last hour."""
    settings = request.app.state.settings
    _count(
        request,
        "rec:",
        (settings.recording_quota_per_session, settings.recording_quota_per_client),
        lambda limit, who, minutes: msg(
            "At most {limit} recordings can be uploaded per hour {who}; "
            "try again in {minutes} minutes.",
            limit=limit,
            who=who,
            minutes=minutes,
        ),
        now,
    )


def _refused(request: Request) -> Memo[str, float]:
    """This process's clients refused a new session lately, and until when (``time.time()``)."""
    found: Memo[str, float] | None = getattr(request.app.state, "session_refusals", None)
    if found is None:
        found = Memo(10_000)
        request.app.state.session_refusals = found
    return found


def check_session_quota(request: Request, now: float | None = None) -> None:
    """Count one new visitor session for this client; 429 with Retry-After past
    ``sessions_per_client`` in the last hour. A client refused is remembered in memory until
    it may try again, so a flood past the quota costs no database write."""
    limit = request.app.state.settings.sessions_per_client
    clock = now if now is not None else time.time()
    key = client_key(request)
    refusals = _refused(request)
    until = refusals.get(key)
    retry_after = int(until - clock) + 1 if until is not None and until > clock else 0
    if not retry_after:
        with repo.session_for(request.app.state.engine) as db:
            retry_after = repo.take_hit(
                db=db, key=f"sessions:{key}", limit=limit, window_s=WINDOW_S, now=clock
            )
        if retry_after:
            refusals.put(key, clock + retry_after)
    if retry_after:
        raise _too_many(
            retry_after,
            msg(
                "At most {limit} new visitor sessions can start per hour from this "
                "address; try again in {minutes} minutes.",
                limit=limit,
                minutes=_minutes(retry_after),
            ),
        )
