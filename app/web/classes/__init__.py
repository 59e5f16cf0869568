"""Live classes: a lecturer moves a walkthrough, students follow it and answer questions."""

from __future__ import annotations

from fastapi import FastAPI

from app.web.classes import api, pages, selfstudy


def install(app: FastAPI) -> None:
    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(selfstudy.router)


def close(app: FastAPI) -> None:
    hub = getattr(app.state, "class_hub", None)
    if hub is not None:
        hub.close()
