"""Builds the FastAPI app: routers, static files, npm packages, the database engine."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from app.settings import Settings
from app.web import errors
from app.web.routes import api, pages

VENDOR_DIST = ("htmx.org/dist", "idiomorph/dist", "reveal.js/dist", "reveal.js/plugin")


def build_app(settings: Settings) -> FastAPI:
    app = FastAPI(
        title="Stepscope",
        description="Step-through simulations of Linux networking internals.",
        version="0.1.0",
    )
    app.state.settings = settings
    from app.store.db import init_db, make_engine

    app.state.engine = make_engine(settings.database_url)
    init_db(app.state.engine)
    errors.install(app)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=str(settings.root / "static")), name="static")
    # Front-end packages come from npm into node_modules; only their dist folders are served.
    for package in VENDOR_DIST:
        app.mount(
            f"/vendor/{package}",
            StaticFiles(directory=str(settings.node_modules / package), check_dir=False),
            name=f"vendor-{package}",
        )
    return app
