"""The home page's thumbnails: each explainer's declared key step (:class:`~app.web.plugin.Thumbnail`)
drawn by its own picture function from the cached run, made safe to show many times on one page.

A picture is made for the player: it may hold links, buttons, focusable regions and element ids.
On the home page it is only an image inside a card, so :func:`inert_picture` turns links and
buttons into plain elements (``<span>``, or ``<g>`` inside SVG), drops ``tabindex`` and prefixes every id (and the ``url(#…)``/``href="#…"``
references to it) so two pictures never share an id. The template also marks it ``inert``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from app.sim.core import ParamError
from app.web import i18n
from app.web.plugin import Plugin
from app.web.runs import Busy, CrossSite, JobStarted, RateLimited
from app.web.site import Site

_TAG = re.compile(r"<(/?)(svg|a|button)\b", re.IGNORECASE)
_TABINDEX = re.compile(r"\s(tabindex|href|hx-[a-z-]+|on[a-z]+)=(\"[^\"]*\"|'[^']*')", re.IGNORECASE)
_ID = re.compile(r"\bid=\"([^\"]+)\"")
_REF = re.compile(r"(url\(#|href=\"#|xlink:href=\"#)([^)\"]+)")
_IDREFS = re.compile(r"\b(aria-labelledby|aria-describedby|aria-controls|for)=\"([^\"]+)\"")


@dataclass(frozen=True, slots=True)
class Thumb:
    picture: Markup  # the step's picture, inert
    alt: str  # its text alternative: the step's narration, in the reader's language
    href: str  # the walkthrough at that step
    step: int
    title: str  # the walkthrough's title


def inert_picture(html: str, prefix: str) -> str:
    """``html`` with no links, buttons, tab stops or event handlers, and every id prefixed."""

    def ref(m: re.Match[str]) -> str:
        return f"{m.group(1)}{prefix}{m.group(2)}"

    def idrefs(m: re.Match[str]) -> str:
        return f'{m.group(1)}="' + " ".join(prefix + i for i in m.group(2).split()) + '"'

    depth = 0  # inside how many <svg>: there a link becomes a <g> (a <span> would end the SVG)

    def tag(m: re.Match[str]) -> str:
        nonlocal depth
        close, name = m.group(1), m.group(2).lower()
        if name == "svg":
            depth += -1 if close else 1
            return m.group(0)
        return f"<{close}{'g' if depth > 0 else 'span'}"

    out = _TAG.sub(tag, html)
    out = _REF.sub(ref, out)  # before hrefs are dropped: keep SVG <use href="#…">
    out = re.sub(r"<use\b([^>]*?)\shref=", r"<use\1 data-use-href=", out)
    out = _TABINDEX.sub("", out)
    out = out.replace("data-use-href=", "href=")
    out = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', out)
    return _IDREFS.sub(idrefs, out)


def thumbnail(site: Site, plugin: Plugin) -> Thumb | None:
    """The plugin's declared thumbnail, or None when it declares none or its run is not ready
    (a long run becomes a job; the page shows the text card meanwhile and is not cached)."""
    decl = plugin.web.thumbnail
    if decl is None:
        return None
    preset = plugin.sim.preset(decl.preset)
    if preset is None:
        return None
    try:
        _, trace = site.run(plugin, dict(preset.params))
    except (JobStarted, Busy, RateLimited, CrossSite, ParamError):
        return None
    if not trace.frames:
        return None
    frame = trace.frames[max(0, min(decl.step, len(trace.frames) - 1))]
    draw = decl.draw or plugin.web.picture
    picture: Any = draw(trace, frame)
    return Thumb(
        picture=Markup(inert_picture(str(picture), f"thumb-{plugin.name}-")),
        alt=frame.narration.render(i18n.gettext_for()),
        href=f"/explainers/{plugin.name}/presets/{preset.slug}?step={frame.index}",
        step=frame.index,
        title=i18n.render(preset.title),
    )
