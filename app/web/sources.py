"""Where a scenario comes from: a preset, a saved (shared) scenario, or a custom params token.

Sharing, embedding, exporting and progress all take "a scenario" in one of these three forms;
this module turns each into the same :class:`Source` (explainer + raw params + title) and runs it
through the cached runner, so every explainer in the registry gets all of them for free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import HTTPException, Request

from app.sim.core import ParamError, ParamIssue, Trace
from app.sim.registry import Explainer, Preset
from app.store import repo
from app.store.models import Scenario
from app.web import content
from app.web.content import Lesson
from app.web.player import decode_params, encode_params
from app.web.runner import explainer_or_404, run


class ScenarioNotFound(Exception):
    """No saved scenario has this id (answered by a 404 page that explains ids)."""

    def __init__(self, scenario_id: str) -> None:
        super().__init__(scenario_id)
        self.scenario_id = scenario_id


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    explainer: Explainer
    raw: Any
    title: str
    preset: Preset | None = None
    scenario: Scenario | None = None
    token: str | None = None

    @property
    def kind(self) -> str:
        return "scenario" if self.scenario else "preset" if self.preset else "custom"

    @property
    def page_path(self) -> str:
        """The player page of this scenario (without ``step``)."""
        if self.scenario:
            return f"/s/{self.scenario.id}"
        if self.preset:
            return f"/explainers/{self.explainer.name}/presets/{self.preset.slug}"
        return f"/explainers/{self.explainer.name}/custom?p={self.token or encode_params(self.raw)}"

    @property
    def embed_path(self) -> str:
        if self.scenario:
            return f"/embed/s/{self.scenario.id}"
        if self.preset:
            return f"/embed/{self.explainer.name}/presets/{self.preset.slug}"
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
            return {"explainer": self.explainer.name, "preset": self.preset.slug}
        return {"explainer": self.explainer.name, "p": self.token or encode_params(self.raw)}

    def export_url(self, fmt: str, **extra: Any) -> str:
        query = {**self.export_query, **{k: str(v) for k, v in extra.items() if v is not None}}
        return f"/export/{fmt}?{urlencode(query)}"

    @property
    def lesson(self) -> Lesson | None:
        return content.lesson(self.preset.lesson) if self.preset else None

    @property
    def saved_sim_version(self) -> str | None:
        return self.scenario.sim_version if self.scenario else None

    @property
    def sim_changed(self) -> bool:
        """True when a saved scenario was made with an older (or other) simulation version."""
        return bool(self.scenario and self.scenario.sim_version != self.explainer.sim_version)


def from_preset(name: str, slug: str | None = None) -> Source:
    ex = explainer_or_404(name)
    preset = ex.preset(slug or ex.default_preset)
    if preset is None:
        raise HTTPException(404, f"{ex.title} has no preset called {slug!r}.")
    return Source(explainer=ex, raw=dict(preset.params), title=preset.title, preset=preset)


def from_token(name: str, token: str, *, title: str | None = None) -> Source:
    ex = explainer_or_404(name)
    try:
        raw = decode_params(token)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParamError.single(
            ("p",), "this scenario link is damaged; open the editor and rebuild it"
        ) from exc
    return Source(explainer=ex, raw=raw, title=title or f"Custom {ex.title} scenario", token=token)


def from_scenario(request: Request, scenario_id: str) -> Source:
    with repo.session_for(request.app.state.engine) as db:
        row = repo.get_scenario(db=db, scenario_id=scenario_id)
    if row is None:
        raise ScenarioNotFound(scenario_id)
    ex = explainer_or_404(row.explainer)
    title = row.title or f"Shared {ex.title} scenario"
    return Source(explainer=ex, raw=json.loads(row.params_json), title=title, scenario=row)


def run_source(source: Source) -> Trace:
    """Run the source's params. A saved scenario the simulation now refuses answers 422 naming
    ``params.…`` (its params were valid when saved; the simulation has since changed)."""
    try:
        _, trace = run(source.explainer, source.raw)
    except ParamError as exc:
        if source.scenario is None:
            raise
        raise prefixed(exc, "params") from exc
    return trace


def prefixed(exc: ParamError, *prefix: str | int) -> ParamError:
    return ParamError([ParamIssue(loc=(*prefix, *i.loc), msg=i.msg) for i in exc.issues])
