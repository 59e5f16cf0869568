"""What a class is about: a walkthrough (``EXPLAINER/PRESET``, or its page path), a shared
scenario's id or a recording's page (``/r/{id}``, with its view's overrides as the query),
resolved to the same :class:`~app.web.sources.Source` every page uses.

A class records the source it follows as that source's player page (``LiveClass.page_path``);
:func:`followed` resolves it again for the class's pages, its questions and its marked steps,
so a new kind of source is taught to :func:`resolve` here and nowhere else in the class code."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from fastapi import HTTPException

from app.sim.core import ParamError, msg
from app.store import repo
from app.store.models import LiveClass
from app.web.recordings import NotShown, recording_source
from app.web.site import Site
from app.web.sources import ScenarioNotFound, Source, from_preset, from_scenario, prefixed


def _unknown(value: str) -> ParamError:
    return ParamError.single(
        ("scenario",),
        msg(
            "no walkthrough, shared scenario or recording is called {value}: give a shared "
            "scenario's id, EXPLAINER/PRESET (e.g. the end of a walkthrough's link) or a "
            "recording's page (/r/ID)",
            value=repr(value[:80]),
        ),
    )


def resolve(site: Site, engine: Any, value: str) -> Source:
    """The source ``value`` names; 422 naming ``scenario`` when it names none."""
    text = value.strip()
    parsed = urlsplit(text)
    if parsed.path.removeprefix("/").startswith("r/"):
        recording_id = parsed.path.removeprefix("/").removeprefix("r/").strip("/")
        try:
            return recording_source(site, engine, recording_id, dict(parse_qsl(parsed.query)))
        except NotShown:
            raise _unknown(text) from None
        except ParamError as exc:  # overrides the recording's view refuses
            raise prefixed(exc, "scenario") from exc
    path = text.removeprefix("/")
    for prefix in ("explainers/", "s/"):
        path = path.removeprefix(prefix)
    parts = [p for p in path.split("/") if p and p != "presets"]
    try:
        if len(parts) == 2 and site.get(parts[0]) is not None:
            return from_preset(site, parts[0], parts[1])
        if len(parts) == 1 and site.get(parts[0]) is not None:
            return from_preset(site, parts[0])
        if len(parts) == 1 and repo.is_scenario_id(parts[0]):
            return from_scenario(site, engine, parts[0])
    except (HTTPException, ScenarioNotFound):
        pass
    raise _unknown(text)


def followed(site: Site, engine: Any, row: LiveClass) -> Source:
    """The source the class follows (422 naming ``scenario`` if it is gone)."""
    return resolve(site, engine, row.page_path)
