"""Share quotas: saved scenarios per visitor session and per client address, per hour.

Counters live in the database (``rate_limit``), so the quota holds across workers and app
replicas. Client addresses are stored hashed. Behind a reverse proxy, list it in
``trusted_proxies`` so the client address is the visitor's (:class:`app.web.security.ClientAddress`
takes the right-most ``X-Forwarded-For`` hop that is not a trusted proxy).
"""

from __future__ import annotations

import time

from fastapi import HTTPException, Request

from app.sim.core import Message, msg
from app.store import repo
from app.web import i18n
from app.web.deps import visitor_id

WINDOW_S = 3600


def client_key(request: Request) -> str:
    return repo.address_key(request.client.host if request.client else "unknown")


def check_share_quota(request: Request, now: float | None = None) -> None:
    """Count one share for this session and this client; 429 with Retry-After past a quota
    (over the last hour, a sliding window: :func:`repo.take_hit`)."""
    settings = request.app.state.settings
    clock = now if now is not None else time.time()
    keys: list[tuple[str, int, Message]] = [
        (client_key(request), settings.share_quota_per_client, msg("from this address"))
    ]
    sid = visitor_id(request)
    if sid is not None:
        keys.insert(0, (f"session:{sid}", settings.share_quota_per_session, msg("per browser")))
    with repo.session_for(request.app.state.engine) as db:
        for key, limit, who in keys:
            retry_after = repo.take_hit(db=db, key=key, limit=limit, window_s=WINDOW_S, now=clock)
            if retry_after:
                raise HTTPException(
                    429,
                    i18n.render(
                        msg(
                            "At most {limit} scenarios can be shared per hour {who}; "
                            "try again in {minutes} minutes.",
                            limit=limit,
                            who=who,
                            minutes=(retry_after + 59) // 60,
                        )
                    ),
                    headers={"Retry-After": str(retry_after)},
                )
