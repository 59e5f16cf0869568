"""Rendering through the app's own Jinja2 environment (``Site.templates``)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse


def render(
    request: Request,
    name: str,
    context: dict[str, Any] | None = None,
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
) -> HTMLResponse:
    templates = request.app.state.site.templates
    response: HTMLResponse = templates.TemplateResponse(
        request, name, dict(context or {}), status_code=status_code, headers=headers
    )
    response.headers.setdefault("Vary", "HX-Request")
    return response


def render_block(request: Request, name: str, block: str, context: dict[str, Any]) -> str:
    """One named block of a template, rendered as the page would (e.g. the player markup)."""
    tpl = request.app.state.site.templates.env.get_template(name)
    return "".join(tpl.blocks[block](tpl.new_context({**context, "request": request})))
