"""Shared validation for explainers' JSON-shaped parameters (stdlib only).

:class:`Checker` gathers every issue in one pass so a user sees all of them at once; each names
the field (``loc``) and says what to change, quoting at most a short excerpt of what was given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from app.sim.core.errors import ParamIssue
from app.sim.core.i18n import Message, msg

EXCERPT = 40  # characters of a bad value quoted back to the user


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def describe(v: object) -> Message:
    """What kind of value ``v`` is, for "you gave …" (a message: it is translated too)."""
    if isinstance(v, bool):
        return msg("a boolean")
    if v is None:
        return msg("null")
    if isinstance(v, str):
        return msg("the text {value}", value=repr(excerpt(v)))
    if isinstance(v, (list, tuple)):
        return msg("a list")
    if isinstance(v, Mapping):
        return msg("an object")
    return msg("{value}", value=excerpt(repr(v)))


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Checker:
    """Collects every problem in a JSON-shaped input (not just the first), each located by
    the path of keys and indexes that leads to it."""

    def __init__(self) -> None:
        self.issues: list[ParamIssue] = []

    def add(self, loc: tuple[str | int, ...], message: Message | str) -> None:
        self.issues.append(ParamIssue(loc=loc, msg=message))

    def unknown(
        self, raw: Mapping[str, Any], allowed: tuple[str, ...], loc: tuple[str | int, ...]
    ) -> None:
        for key in raw:
            if key not in allowed:
                self.add(
                    (*loc, str(key)),
                    msg(
                        "unknown field {field}; valid fields: {allowed}",
                        field=repr(excerpt(str(key))),
                        allowed=", ".join(allowed),
                    ),
                )

    def number(
        self,
        raw: Mapping[str, Any],
        key: str,
        loc: tuple[str | int, ...],
        *,
        default: float | None = None,
        required: bool = False,
        gt: float | None = None,
        ge: float | None = None,
        le: float | None = None,
        lt: float | None = None,
        unit: Message | str = "",
    ) -> float | None:
        here = (*loc, key)
        if key not in raw or (raw[key] is None and not required):
            if required:
                self.add(here, msg("{key} is required", key=key))
            return default
        v = raw[key]
        if not is_number(v):
            self.add(
                here, msg("{key} must be a number; you gave {what}", key=key, what=describe(v))
            )
            return default
        u: Message | str = msg(" {unit}", unit=unit) if unit else ""
        if gt is not None and not v > gt:
            self.add(
                here,
                msg(
                    "{key} must be > {limit:g}{unit}; you gave {v:g}",
                    key=key,
                    limit=gt,
                    unit=u,
                    v=v,
                ),
            )
        elif ge is not None and not v >= ge:
            self.add(
                here,
                msg(
                    "{key} must be ≥ {limit:g}{unit}; you gave {v:g}",
                    key=key,
                    limit=ge,
                    unit=u,
                    v=v,
                ),
            )
        elif le is not None and not v <= le:
            self.add(
                here,
                msg(
                    "{key} must be ≤ {limit:g}{unit}; you gave {v:g}",
                    key=key,
                    limit=le,
                    unit=u,
                    v=v,
                ),
            )
        elif lt is not None and not v < lt:
            self.add(
                here,
                msg(
                    "{key} must be < {limit:g}{unit}; you gave {v:g}",
                    key=key,
                    limit=lt,
                    unit=u,
                    v=v,
                ),
            )
        return float(v)

    def integer(
        self,
        raw: Mapping[str, Any],
        key: str,
        loc: tuple[str | int, ...],
        *,
        default: int,
        ge: int | None = None,
        le: int | None = None,
    ) -> int:
        here = (*loc, key)
        if key not in raw:
            return default
        v = raw[key]
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool):
            self.add(
                here,
                msg("{key} must be a whole number; you gave {what}", key=key, what=describe(v)),
            )
            return default
        if ge is not None and v < ge:
            self.add(here, msg("{key} must be ≥ {limit}; you gave {v}", key=key, limit=ge, v=v))
        elif le is not None and v > le:
            self.add(here, msg("{key} must be ≤ {limit}; you gave {v}", key=key, limit=le, v=v))
        return v
