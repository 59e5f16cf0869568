"""ASGI entry point: ``uvicorn app.main:app``; tests call :func:`create_app` with their settings."""

from __future__ import annotations

from fastapi import FastAPI

from app.settings import Settings
from app.web.factory import build_app


def create_app(settings: Settings | None = None) -> FastAPI:
    return build_app(settings or Settings())


app = create_app()
