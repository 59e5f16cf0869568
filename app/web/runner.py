"""Parse-and-run with a deterministic cache: the same params give the same trace, instantly."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fastapi import HTTPException

from app.sim import registry
from app.sim.core import Trace
from app.sim.registry import Explainer


def explainer_or_404(name: str) -> Explainer:
    found = registry.get(name)
    if found is None:
        raise HTTPException(404, f"There is no explainer called {name!r}.")
    return found


@lru_cache(maxsize=256)
def _run(name: str, sim_version: str, params: Any) -> Trace:
    explainer = registry.get(name)
    assert explainer is not None
    return explainer.run(params)


def run(explainer: Explainer, raw: Any) -> tuple[Any, Trace]:
    """Validate raw params (raises ParamError → 422) and run, memoised on the frozen params."""
    params = explainer.parse(raw)
    return params, _run(explainer.name, explainer.sim_version, params)
