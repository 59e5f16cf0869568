"""Who may follow or cancel a job: the clients it was started or joined for.

A job's id is its trace's content address (the same params asked twice share one run and one
stored trace), so anyone can compute it from the params; ids stay that way, and cancelling
checks the owner instead. When a request is answered with a job (202, or the progress page),
its client address is recorded as an owner of that job, in the database (``rate_limit`` rows
keyed by a hash of job and address, kept a day like the quota counters) so every worker and
replica can tell; ``GET /api/v1/jobs/{id}`` (its state and progress), its result while it has
none, and ``DELETE`` from any other client are answered 404, as if there were no such job (nor
does another client's asking count as interest that keeps it running). A job several clients
asked for (the same params: one run) is not cancelled by one of them: its ``DELETE`` only says
it no longer asks, and the job ends when nobody follows it any more (``job_idle_s``). A finished
job's result needs no ownership: it is what anyone asking for the same params gets at once.
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


def count_key(job: str) -> str:
    return f"jobowners:{job[:40]}"


class JobOwners:
    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.known: Memo[str, bool] = Memo(4096)  # owners this process recorded or found

    def add(self, job: str, client: str, now: float | None = None) -> None:
        """Record ``client`` as an owner of ``job`` (once: the job's owner count grows by one
        for each different client)."""
        key = owner_key(job, client)
        if self.known.get(key):
            return
        clock = int(now if now is not None else time.time())
        window = clock - clock % WINDOW_S
        with repo.session_for(self.engine) as db:
            if not repo.hits_since(db=db, key=key, since=clock - KEEP_S):
                repo.count_hit(db=db, key=key, window_start=window)
                repo.count_hit(db=db, key=count_key(job), window_start=window)
        self.known.put(key, True)

    def owns(self, job: str, client: str, now: float | None = None) -> bool:
        key = owner_key(job, client)
        if self.known.get(key):
            return True
        clock = int(now if now is not None else time.time())
        with repo.session_for(self.engine) as db:
            found = repo.hits_since(db=db, key=key, since=clock - KEEP_S) > 0
        if found:
            self.known.put(key, True)
        return found

    def count(self, job: str, now: float | None = None) -> int:
        """How many different clients were answered with ``job``."""
        clock = int(now if now is not None else time.time())
        with repo.session_for(self.engine) as db:
            return repo.hits_since(db=db, key=count_key(job), since=clock - KEEP_S)


def owners_of(app: Any) -> JobOwners:
    """The app's (this process's) record of job owners."""
    found: JobOwners | None = getattr(app.state, "job_owners", None)
    if found is None:
        found = JobOwners(app.state.engine)
        app.state.job_owners = found
    return found
