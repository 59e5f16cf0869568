"""Where a scenario comes from: a preset, a saved (shared) scenario, or a custom params token.

Sharing, embedding, exporting and progress all take "a scenario" in one of these three forms;
this module turns each into the same :class:`Source` (explainer + raw params + title) and runs it
through the site's cached runner, so every explainer gets all of them for free. The
dependencies at the bottom resolve a source from a route's path or query.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Query, Request

from app.sim.core import Explainer, ParamError, ParamIssue, Preset, Trace, msg
from app.store import repo
from app.store.models import Scenario
from app.web import i18n
from app.web.content import Lesson
from app.web.plugin import Plugin
from app.web.site import Site

MAX_TOKEN = 60_000


class ScenarioNotFound(Exception):
    """No saved scenario has this id (answered by a 404 page that explains ids)."""

    def __init__(self, scenario_id: str) -> None:
        super().__init__(scenario_id)
        self.scenario_id = scenario_id


def encode_params(raw: Any) -> str:
    """Params as a URL-safe token, so a custom scenario is a plain link."""
    data = json.dumps(raw, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_params(token: str) -> Any:
    """The params of a token; ParamError naming ``p`` when it is damaged or absurdly nested."""
    padded = token + "=" * (-len(token) % 4)
    try:
        return json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
    except (ValueError, UnicodeDecodeError, binascii.Error, RecursionError) as exc:
        raise ParamError.single(
            ("p",), msg("this scenario link is damaged; open the editor and rebuild it")
        ) from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    plugin: Plugin
    raw: Any
    title: str
    lesson: Lesson | None = None
    preset: Preset | None = None
    scenario: Scenario | None = None
    token: str | None = None
    # A trace the source carries already built (a recording's, from its view): run_source
    # answers it as is instead of running params
    built: Trace[Any, Any] | None = None

    @property
    def explainer(self) -> Explainer[Any]:
        return self.plugin.sim

    @property
    def kind(self) -> str:
        return "scenario" if self.scenario else "preset" if self.preset else "custom"

    @property
    def params_token(self) -> str:
        return self.token or encode_params(self.raw)

    @property
    def page_path(self) -> str:
        """The player page of this scenario (without ``step``)."""
        if self.scenario:
            return f"/s/{self.scenario.id}"
        if self.preset:
            return f"/explainers/{self.plugin.name}/presets/{self.preset.slug}"
        return f"/explainers/{self.plugin.name}/custom?p={self.params_token}"

    @property
    def player_extra(self) -> dict[str, Any]:
        """What this kind of source adds to its player's context (every page that draws it:
        its own page, a live class's pages)."""
        return {}

    @property
    def embed_path(self) -> str:
        if self.scenario:
            return f"/embed/s/{self.scenario.id}"
        if self.preset:
            return f"/embed/{self.plugin.name}/presets/{self.preset.slug}"
        return ""  # custom scenarios are embedded once shared (a short, stable link)

    @property
    def walkthrough_key(self) -> str:
        """The key progress is recorded under; custom scenarios get one once shared."""
        return "" if self.kind == "custom" else self.page_path

    @property
    def export_query(self) -> dict[str, str]:
        if self.scenario:
            return {"scenario": self.scenario.id}
        if self.preset:
            return {"explainer": self.plugin.name, "preset": self.preset.slug}
        return {"explainer": self.plugin.name, "p": self.params_token}

    @property
    def sim_changed(self) -> bool:
        """True when a saved scenario was made with an older (or other) simulation version."""
        return bool(self.scenario and self.scenario.sim_version != self.explainer.sim_version)


def from_preset(site: Site, name: str, slug: str | None = None) -> Source:
    plugin = site.plugin(name)
    preset = plugin.sim.preset(slug or plugin.sim.default_preset)
    if preset is None:
        text = msg(
            "{explainer} has no preset called {slug}.",
            explainer=plugin.sim.title,
            slug=repr(str(slug)[:80]),
        )
        raise HTTPException(404, i18n.render(text))
    return Source(
        plugin=plugin,
        raw=dict(preset.params),
        title=i18n.render(preset.title),  # in the request's language
        preset=preset,
        lesson=site.content.lesson(preset.lesson),
    )


def matching_preset(plugin: Plugin, raw: Any) -> Preset | None:
    """The preset whose params these are (compared in canonical form), if any: a shared or
    custom scenario that is a walkthrough unchanged keeps that walkthrough's lesson and notes."""
    try:
        canonical = plugin.sim.dump(plugin.sim.parse(raw))
    except (ParamError, RecursionError, TypeError, ValueError):
        return None
    for preset in plugin.sim.presets:
        if plugin.sim.dump(plugin.sim.parse(dict(preset.params))) == canonical:
            return preset
    return None


def from_token(site: Site, name: str, token: str, *, title: str | None = None) -> Source:
    plugin = site.plugin(name)
    raw = decode_params(token)
    same = matching_preset(plugin, raw)
    return Source(
        plugin=plugin,
        raw=raw,
        title=title
        or i18n.render(
            same.title if same else msg("Custom {name} scenario", name=plugin.sim.title)
        ),
        token=token,
        lesson=site.content.lesson(same.lesson) if same else None,
    )


def from_scenario(site: Site, engine: Any, scenario_id: str) -> Source:
    with repo.session_for(engine) as db:
        row = repo.get_scenario(db=db, scenario_id=scenario_id)
    if row is None:
        raise ScenarioNotFound(scenario_id)
    plugin = site.plugin(row.explainer)
    raw = json.loads(row.params_json)
    same = matching_preset(plugin, raw)
    default = i18n.render(
        same.title if same else msg("Shared {name} scenario", name=plugin.sim.title)
    )
    return Source(
        plugin=plugin,
        raw=raw,
        title=row.title or default,
        scenario=row,
        lesson=site.content.lesson(same.lesson) if same else None,
    )


def run_source(site: Site, source: Source) -> Trace[Any, Any]:
    """Run the source's params. A saved scenario the simulation now refuses answers 422 naming
    ``params.…`` (its params were valid when saved; the simulation has since changed)."""
    if source.built is not None:
        return source.built
    try:
        _, trace = site.run(source.plugin, source.raw)
    except ParamError as exc:
        if source.scenario is None:
            raise
        raise prefixed(exc, "params") from exc
    return trace


def prefixed(exc: ParamError, *prefix: str | int) -> ParamError:
    return ParamError([ParamIssue(loc=(*prefix, *i.loc), msg=i.message) for i in exc.issues])


# --- dependencies --------------------------------------------------------------------------


# Dependencies that only look things up in memory are ``async``: FastAPI runs a plain ``def``
# dependency in the threadpool, a thread hop that costs more than the lookup itself.


async def get_site(request: Request) -> Site:
    site: Site = request.app.state.site
    return site


SiteDep = Annotated[Site, Depends(get_site)]


async def get_plugin(name: str, site: SiteDep) -> Plugin:
    return site.plugin(name)


PluginDep = Annotated[Plugin, Depends(get_plugin)]


def preset_source(name: str, site: Site, slug: str | None = None) -> Source:
    """The preset named by the path (``/{name}/presets/{slug}``; the default without a slug)."""
    return from_preset(site, name, slug)


async def _preset_source(name: str, site: SiteDep, slug: str | None = None) -> Source:
    return preset_source(name, site, slug)


PresetSource = Annotated[Source, Depends(_preset_source)]


def scenario_source(scenario_id: str, request: Request, site: SiteDep) -> Source:
    return from_scenario(site, request.app.state.engine, scenario_id)


ScenarioSource = Annotated[Source, Depends(scenario_source)]

TokenQuery = Annotated[
    str, Query(max_length=MAX_TOKEN, description="Custom params token (?p= of a custom link)")
]


def custom_source(
    name: str,
    p: TokenQuery,
    site: SiteDep,
    title: Annotated[str | None, Query(max_length=200)] = None,
) -> Source:
    return from_token(site, name, p, title=title)


CustomSource = Annotated[Source, Depends(custom_source)]


def query_source(
    request: Request,
    site: SiteDep,
    scenario: Annotated[
        str | None, Query(max_length=64, description="A shared scenario's id")
    ] = None,
    explainer: Annotated[str | None, Query(max_length=40, description="Explainer name")] = None,
    preset: Annotated[str | None, Query(max_length=80, description="Preset slug")] = None,
    p: Annotated[str | None, Query(max_length=MAX_TOKEN, description="Custom params token")] = None,
) -> Source:
    """The scenario named by ``scenario``, or ``explainer`` with ``preset``/``p`` (or alone for
    its default walkthrough); 422 naming the field when the combination is wrong."""
    if scenario is not None:
        if explainer is not None or preset is not None or p is not None:
            raise ParamError.single(
                ("scenario",),
                msg("give either scenario, or explainer with preset or p, not both"),
            )
        return from_scenario(site, request.app.state.engine, scenario)
    if explainer is None:
        raise ParamError.single(
            ("explainer",),
            msg("name the scenario: scenario=ID, or explainer=NAME with preset=SLUG or p=TOKEN"),
        )
    if site.get(explainer) is None:
        raise ParamError.single(
            ("explainer",),
            msg(
                "there is no explainer called {name}; choose one of: {names}",
                name=repr(explainer),
                names=site.names,
            ),
        )
    if preset is not None and p is not None:
        raise ParamError.single(("p",), msg("give either preset or p, not both"))
    if p is not None:
        return from_token(site, explainer, p)
    try:
        return from_preset(site, explainer, preset)
    except HTTPException:
        raise ParamError.single(
            ("preset",),
            msg("{explainer} has no preset called {slug}", explainer=explainer, slug=repr(preset)),
        ) from None


QuerySource = Annotated[Source, Depends(query_source)]
