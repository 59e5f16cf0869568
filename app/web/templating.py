"""Rendering through the app's own Jinja2 environment (``Site.templates``), in the request's
language.

The environment is shared by every request, so nothing language-specific is installed on it:
each render gets the request's ``gettext``/``ngettext``/``_`` (used by ``{% trans %}`` of
Jinja2's i18n extension), ``lang`` and the language switch links in its context, and every
``{{ value }}`` that is a :class:`~app.sim.core.Message` (a preset title, an editor label, a
result badge) is rendered through that context's ``gettext`` by the environment's ``finalize``.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, pass_context
from jinja2.runtime import Context

from app.sim.core import Message
from app.web import i18n


def language_context(request: Request) -> dict[str, Any]:
    """What a template needs to speak the request's language (a Jinja2Templates context
    processor)."""
    lang = i18n.language_of(request)
    tr = i18n.translations(lang)
    return {
        "lang": lang,
        "gettext": tr.gettext,
        "ngettext": tr.ngettext,
        "_": tr.gettext,
        "lang_links": i18n.switch_links(request.url.query, lang),
        "tr": lambda value: i18n.render(value, lang) if isinstance(value, Message) else value,
    }


@pass_context
def _finalize(ctx: Context, value: Any) -> Any:
    if isinstance(value, Message):
        gettext = ctx.get("gettext")
        return value.render(gettext if callable(gettext) else None)
    return value


def setup(env: Environment) -> None:
    """Add the i18n extension and Message rendering to a fresh environment."""
    env.add_extension("jinja2.ext.i18n")
    env.finalize = _finalize
    # Old-style gettext: ``{% trans %}`` formats with %(name)s and escapes the values.
    env.newstyle_gettext = False  # type: ignore[attr-defined]
    # ``{% trans %}`` ids are whitespace-normalised (babel.cfg extracts with ``trimmed`` too).
    env.policies["ext.i18n.trimmed"] = True


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
    # A page differs by htmx request and by language (?lang= is in the URL; the cookie and
    # Accept-Language are not).
    response.headers.setdefault("Vary", "HX-Request, Accept-Language, Cookie")
    response.headers.setdefault("Content-Language", i18n.language_of(request))
    return response


def render_block(request: Request, name: str, block: str, context: dict[str, Any]) -> str:
    """One named block of a template, rendered as the page would (e.g. the player markup)."""
    tpl = request.app.state.site.templates.env.get_template(name)
    full = {**language_context(request), **context, "request": request}
    return "".join(tpl.blocks[block](tpl.new_context(full)))
