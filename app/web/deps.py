"""Query parameters and request facts shared by several routes, as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Query, Request

StepQuery = Annotated[int | None, Query(ge=0, le=1_000_000, description="0-based step to show")]
Theme = Annotated[Literal["light", "dark", "projector"], Query(description="Colour theme")]
Controls = Annotated[
    Literal["full", "min", "none"], Query(description="Which step controls to show")
]
Autoplay = Annotated[bool, Query(description="Start playing on load")]


def visitor_id(request: Request) -> str | None:
    """The stored session of this request, or None (no cookie, cookies off, unknown id)."""
    found: str | None = getattr(request.state, "visitor_id", None)
    return found


Visitor = Annotated[str | None, Depends(visitor_id)]
