"""ASGI entry point: ``uvicorn app.main:app``; tests call :func:`create_app` with their settings
(and, to prove the contract, their own explainers).

Started by uvicorn's master (``--workers N``, as ``scripts/serve`` does), an app worker shuts
down when the master dies (app.web.simproc.follow_master): a master killed with SIGKILL used to
leave its workers, and their simulation processes, holding the port.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import FastAPI

from app import explainers
from app.settings import Settings
from app.web import failures, simproc
from app.web.factory import build_app
from app.web.plugin import Plugin


def create_app(
    settings: Settings | None = None, plugins: Iterable[Plugin] | None = None
) -> FastAPI:
    app = build_app(settings or Settings(), explainers.builtin() if plugins is None else plugins)
    failures.install(app)  # limits, dead simulation processes, the store down: never a 500
    return app


simproc.follow_master()
app = create_app()
