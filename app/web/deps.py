"""Query parameters shared by several routes, as ``Annotated`` aliases (one definition each)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

StepQuery = Annotated[int | None, Query(ge=0, le=1_000_000, description="0-based step to show")]
Theme = Annotated[Literal["light", "dark", "projector"], Query(description="Colour theme")]
Controls = Annotated[
    Literal["full", "min", "none"], Query(description="Which step controls to show")
]
Autoplay = Annotated[bool, Query(description="Start playing on load")]
