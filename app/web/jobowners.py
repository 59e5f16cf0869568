"""Who may cancel a job: the clients it was started or joined for.

A job's id is its trace's content address (the same params asked twice share one run and one
stored trace), so anyone can compute it from the params; ids stay that way, and cancelling
checks the owner instead. When a request is answered with a job (202, or the progress page),
its client address is recorded as an owner of that job, in the database (``rate_limit`` rows
keyed by a hash of job and address, kept a day like the quota counters) so every worker and
replica can tell; ``DELETE /api/v1/jobs/{id}`` from any other client is answered 404, as if
there were no such job. Reading a job's state or result needs no ownership: it is what anyone
asking for the same params would get.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from starlette.requests import Request

from app.store import repo
from app.web.memo import Memo

KEEP_S = 24 * 3600  # owners are looked for this far back (quota rows are kept a day)
WINDOW_S = 3600


def client_of(request: Request) -> str:
    """The request's client address (forwarded by a trusted proxy, see app.web.security)."""
    return request.client.host if request.client else "-"


def owner_key(job: str, client: str) -> str:
    digest = hashlib.sha256(f"{job}\n{client}".encode()).hexdigest()[:40]
    return f"jobowner:{digest}"


class JobOwners:
    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.known: Memo[str, bool] = Memo(4096)  # owners this process recorded or found

    def add(self, job: str, client: str, now: float | None = None) -> None:
        key = owner_key(job, client)
        if self.known.get(key):
            return
        clock = int(now if now is not None else time.time())
        with repo.session_for(self.engine) as db:
            repo.count_hit(db=db, key=key, window_start=clock - clock % WINDOW_S)
        self.known.put(key, True)

    def owns(self, job: str, client: str, now: float | None = None) -> bool:
        key = owner_key(job, client)
        if self.known.get(key):
            return True
        clock = int(now if now is not None else time.time())
        with repo.session_for(self.engine) as db:
            found = repo.has_hit(db=db, key=key, since=clock - KEEP_S)
        if found:
            self.known.put(key, True)
        return found


def owners_of(app: Any) -> JobOwners:
    """The app's (this process's) record of job owners."""
    found: JobOwners | None = getattr(app.state, "job_owners", None)
    if found is None:
        found = JobOwners(app.state.engine)
        app.state.job_owners = found
    return found
