"""Traces: the frozen output of every simulation, read by every view.

A :class:`Trace` is a sequence of :class:`Frame` values (what the stepper walks) plus optional
numeric ``series`` (what charts plot). Frames are plain values: they never reference live
engine objects, so a trace can be cached, serialised to JSON and rendered anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LINUX_VERSION = "v6.4"
ELIXIR = "https://elixir.bootlin.com/linux"


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRef:
    """The kernel (or vLLM) function a step models, with its file and line."""

    function: str
    path: str
    line: int
    project: str = "linux"  # "linux" links to elixir.bootlin.com at v6.4

    @property
    def url(self) -> str:
        if self.project == "linux":
            return f"{ELIXIR}/{LINUX_VERSION}/source/{self.path}#L{self.line}"
        return ""

    def as_dict(self) -> dict[str, Any]:
        return {"function": self.function, "path": self.path, "line": self.line, "url": self.url}


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One row of the player's field table."""

    name: str
    value: int | float | str
    unit: str = ""
    changed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One step of a walkthrough.

    ``state`` is explainer-specific JSON-able data (the picture is drawn from it); ``fields`` is
    the table shown under the picture; ``mark`` (e.g. "panic", "loss") puts a tick on the
    scrubber so a lecturer can jump to the interesting moment.
    """

    index: int
    op: str
    result: str
    narration: str
    source: SourceRef | None
    state: Mapping[str, Any]
    fields: tuple[Field, ...] = ()
    mark: str | None = None
    notes: tuple[str, ...] = ()
    time: float | None = None  # simulated seconds, for explainers with a clock


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    """Everything one run produced; pure data."""

    explainer: str
    sim_version: str
    params: Any
    frames: tuple[Frame, ...]
    series: Mapping[str, Any] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    ended_early: str | None = None  # e.g. "skb_over_panic": the scenario stopped there
