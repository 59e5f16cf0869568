"""``/examples/slides``: a reveal.js deck (reveal.js from npm) embedding three scenarios.

Each slide's iframe is an ``/embed/...`` player; ``static/js/slides.js`` lets one clicker drive
both: PageDown/→ step the animation until its last step, then move to the next slide.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.web import i18n
from app.web.site import Site
from app.web.sources import SiteDep
from app.web.templating import render

router = APIRouter(prefix="/examples", tags=["examples"])

SLIDES = 3


def deck_scenarios(site: Site, limit: int = SLIDES, lang: str = "en") -> list[dict[str, Any]]:
    """Presets taken round-robin across explainers, so the deck shows off more than one; the
    embeds speak the deck's language."""
    queues = [[(pl.sim, p) for p in pl.sim.presets] for pl in site.plugins]
    picked: list[dict[str, Any]] = []
    while len(picked) < limit and any(queues):
        for queue in queues:
            if queue and len(picked) < limit:
                ex, preset = queue.pop(0)
                picked.append(
                    {
                        "explainer": ex,
                        "preset": preset,
                        "src": f"/embed/{ex.name}/presets/{preset.slug}"
                        f"?controls=min&theme=light&lang={lang}",
                    }
                )
    return picked


@router.get("/slides", response_class=HTMLResponse)
def slides(request: Request, site: SiteDep) -> Response:
    slides = deck_scenarios(site, lang=i18n.language_of(request))
    return render(request, "examples/slides.html", {"slides": slides})
