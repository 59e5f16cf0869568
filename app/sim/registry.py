"""The registry of explainers: each declares how to parse its parameters and run them.

Views are generic over this interface, so a new explainer gets the player, the JSON API,
sharing and embedding by registering here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.sim.core.trace import Trace


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A named scenario with a lesson in ``content/<lesson>.md``."""

    slug: str
    title: str
    params: Mapping[str, Any]  # raw (JSON-shaped) params, parsed like user input
    lesson: str = ""  # content file stem; empty when there is no written lesson


@dataclass(frozen=True, slots=True, kw_only=True)
class Explainer:
    name: str
    title: str
    summary: str
    sim_version: str
    parse: Callable[[Any], Any]  # raw JSON-shaped params -> frozen params; raises ParamError
    run: Callable[[Any], Trace]  # frozen params -> trace (pure, deterministic)
    dump: Callable[[Any], dict[str, Any]]  # frozen params -> raw JSON-shaped params
    presets: tuple[Preset, ...]
    default_preset: str

    def preset(self, slug: str) -> Preset | None:
        return next((p for p in self.presets if p.slug == slug), None)


_REGISTRY: dict[str, Explainer] = {}


def register(explainer: Explainer) -> Explainer:
    _REGISTRY[explainer.name] = explainer
    return explainer


def explainers() -> Mapping[str, Explainer]:
    _load_builtin()
    return dict(_REGISTRY)


def get(name: str) -> Explainer | None:
    return explainers().get(name)


def _load_builtin() -> None:
    # Imported lazily so importing one explainer does not import all of them.
    import app.sim.skbuff  # noqa: F401

    try:
        import app.sim.congestion  # noqa: F401
    except ImportError:  # the congestion explainer lands separately
        pass

