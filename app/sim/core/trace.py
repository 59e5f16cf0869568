"""Traces: the frozen output of every simulation, read by every view.

A :class:`Trace` is a sequence of :class:`Frame` values (what the stepper walks) plus optional
numeric ``series`` (what charts plot). Frames are plain values: they never reference live
engine objects, so a trace can be cached, serialised to JSON and rendered anywhere. ``S`` is the
explainer's frame-state type (a ``TypedDict``), ``X`` its series type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from app.sim.core.i18n import Message
from app.sim.core.sources import SourceRef

__all__ = ["Field", "Frame", "SourceRef", "Trace"]

S = TypeVar("S")
X = TypeVar("X")


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One row of the player's field table."""

    name: str
    value: int | float | str
    unit: str = ""
    changed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame(Generic[S]):
    """One step of a walkthrough.

    ``state`` is the explainer's typed snapshot (the picture is drawn from it); ``fields`` is
    the table shown under the picture; ``mark`` (e.g. "panic", "loss") puts a tick on the
    scrubber so a lecturer can jump to the interesting moment; ``result`` is one of the
    explainer's declared result kinds.
    """

    index: int
    op: str
    result: str
    narration: Message
    source: SourceRef | None
    state: S
    fields: tuple[Field, ...] = ()
    mark: str | None = None
    notes: tuple[Message, ...] = ()
    time: float | None = None  # simulated seconds, for explainers with a clock


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace(Generic[S, X]):
    """Everything one run produced; pure data."""

    explainer: str
    sim_version: str
    params: Any  # the explainer's frozen params (typed by its Explainer[P])
    frames: tuple[Frame[S], ...]
    series: X  # what charts plot (None for explainers without charts)
    summary: Mapping[str, Any] = field(default_factory=dict)
    ended_early: str | None = None  # e.g. "skb_over_panic": the scenario stopped there
