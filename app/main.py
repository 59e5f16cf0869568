"""ASGI entry point: ``uvicorn app.main:app``; tests call :func:`create_app` with their settings
(and, to prove the contract, their own explainers)."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import FastAPI

from app import explainers
from app.settings import Settings
from app.web.factory import build_app
from app.web.plugin import Plugin


def create_app(
    settings: Settings | None = None, plugins: Iterable[Plugin] | None = None
) -> FastAPI:
    return build_app(settings or Settings(), explainers.builtin() if plugins is None else plugins)


app = create_app()
