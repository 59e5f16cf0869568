"""Sessions, shareable links, embeds, exports and the example deck, installed in one call."""

from __future__ import annotations

from fastapi import FastAPI

from app.web import sessions
from app.web.routes import embed, examples, export, share


def install(app: FastAPI) -> None:
    sessions.install(app)
    app.include_router(sessions.router)
    app.include_router(share.router)
    app.include_router(embed.router)
    app.include_router(export.router)
    app.include_router(examples.router)
