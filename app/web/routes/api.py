"""JSON API, ``/api/v1``: a contract other tools call. Bad input answers 422 naming the field."""

from __future__ import annotations

import importlib
from typing import Any

from fastapi import APIRouter, Body

from app.sim import registry
from app.sim.core import Trace
from app.sim.registry import Explainer
from app.web.runner import explainer_or_404, run

router = APIRouter(prefix="/api/v1", tags=["api"])


@router.get("/explainers")
def list_explainers() -> dict[str, Any]:
    """Every explainer with its presets (raw params runnable as they are)."""
    return {
        "explainers": [
            {
                "name": ex.name,
                "title": ex.title,
                "summary": ex.summary,
                "sim_version": ex.sim_version,
                "run_url": f"/api/v1/explainers/{ex.name}/run",
                "default_preset": ex.default_preset,
                "presets": [
                    {
                        "slug": p.slug,
                        "title": p.title,
                        "params": p.params,
                        "url": f"/explainers/{ex.name}/presets/{p.slug}",
                    }
                    for p in ex.presets
                ],
            }
            for ex in registry.explainers().values()
        ]
    }


def trace_json(explainer: Explainer, trace: Trace) -> dict[str, Any]:
    """The explainer's public JSON for a trace (its own ``api_json``/``api_frames`` when it has one)."""
    module = importlib.import_module(explainer.run.__module__.rsplit(".", 1)[0])
    if hasattr(module, "api_json"):
        body: dict[str, Any] = module.api_json(trace)
        return {"sim_version": trace.sim_version, **body}
    if hasattr(module, "api_frames"):
        return {"sim_version": trace.sim_version, "frames": module.api_frames(trace)}
    if trace.series:  # time-series explainers (cwnd): the series themselves are the contract
        return {"sim_version": trace.sim_version, **trace.series, "summary": trace.summary}
    return {
        "sim_version": trace.sim_version,
        "frames": [
            {
                "index": f.index,
                "op": f.op,
                "result": f.result,
                "state": f.state,
                "narration": f.narration,
                "source": f.source.as_dict() if f.source else None,
            }
            for f in trace.frames
        ],
    }


@router.post("/explainers/{name}/run")
def run_explainer(
    name: str,
    params: Any = Body(
        ...,
        examples=[
            {
                "ops": [
                    {"op": "alloc_skb", "size": 1500},
                    {"op": "skb_reserve", "len": 64},
                    {"op": "skb_put", "len": 100},
                ]
            }
        ],
    ),
) -> dict[str, Any]:
    """Run a scenario: validate the params exactly as the pages do, then return the trace."""
    ex = explainer_or_404(name)
    _, trace = run(ex, params)
    return trace_json(ex, trace)
