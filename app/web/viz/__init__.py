"""Per-explainer pictures. A view draws one frame (swapped each step) and, optionally, a
static part drawn once per trace (e.g. a chart the stepper moves a cursor over)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.sim.core import Frame, Trace


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    picture: Callable[[Trace, Frame], str]  # HTML/SVG for one frame
    static: Callable[[Trace], str] | None = None  # drawn once (charts)
    scripts: tuple[str, ...] = ()  # extra /static or /vendor scripts the view needs


_VIEWS: dict[str, View] = {}


def register_view(name: str, view: View) -> None:
    _VIEWS[name] = view


def view_for(name: str) -> View:
    _load()
    return _VIEWS.get(name, View(picture=_no_picture))


def _no_picture(trace: Trace, frame: Frame) -> str:
    return ""


def _load() -> None:
    import app.web.viz.skb  # noqa: F401

    try:
        import app.web.viz.cwnd  # noqa: F401
    except ImportError:
        pass
