"""JSON API, ``/api/v1``: a contract other tools call. Bad input answers 422 naming the field."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from app.sim.core import Trace
from app.web.plugin import Plugin
from app.web.site import Site
from app.web.sources import PluginDep, SiteDep


def list_explainers(site: SiteDep) -> dict[str, Any]:
    """Every explainer with its presets (raw params runnable as they are)."""
    return {
        "explainers": [
            {
                "name": p.name,
                "title": str(p.sim.title),
                "summary": str(p.sim.summary),
                "sim_version": p.sim.sim_version,
                "source": {"project": p.sim.source.name, "version": p.sim.source.version},
                "run_url": f"/api/v1/explainers/{p.name}/run",
                "default_preset": p.sim.default_preset,
                "limits": {"max_work": p.sim.limits.max_work, "unit": str(p.sim.limits.unit)},
                "presets": [
                    {
                        "slug": preset.slug,
                        "title": str(preset.title),
                        "params": preset.params,
                        "url": f"/explainers/{p.name}/presets/{preset.slug}",
                    }
                    for preset in p.sim.presets
                ],
            }
            for p in site.plugins
        ]
    }


def trace_json(plugin: Plugin, trace: Trace[Any, Any]) -> dict[str, Any]:
    """The explainer's public JSON for a trace, with the simulation version that made it."""
    return {"sim_version": trace.sim_version, **plugin.sim.public_json(trace)}


def add_run_route(router: APIRouter, site: Site) -> None:
    """``POST /api/v1/explainers/{name}/run``, documented with each explainer's default preset
    as an example (so the docs show every explainer's params without naming one here)."""
    examples: dict[str, Any] = {}
    for p in site.plugins:
        preset = p.sim.preset(p.sim.default_preset)
        if preset is not None:
            examples[p.name] = {"summary": str(preset.title), "value": dict(preset.params)}

    @router.post("/explainers/{name}/run")
    def run_explainer(
        site: SiteDep, plugin: PluginDep, params: Any = Body(..., openapi_examples=examples)
    ) -> dict[str, Any]:
        """Run a scenario: validate the params exactly as the pages do, then return the trace."""
        _, trace = site.run(plugin, params)
        return trace_json(plugin, trace)


def router_for(site: Site) -> APIRouter:
    """The API router of one app (its run examples come from that app's explainers)."""
    router = APIRouter(prefix="/api/v1", tags=["api"])
    router.add_api_route("/explainers", list_explainers, methods=["GET"])
    add_run_route(router, site)
    return router
