"""Jinja2 environment shared by every page, fragment and export."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from app.settings import ROOT

templates = Jinja2Templates(directory=str(ROOT / "templates"))


templates.env.globals["site_name"] = "Stepscope"


def render(
    request: Request,
    name: str,
    context: dict[str, Any] | None = None,
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    ctx = dict(context or {})
    response = templates.TemplateResponse(
        request, name, ctx, status_code=status_code, headers=headers
    )
    response.headers.setdefault("Vary", "HX-Request")
    return response
