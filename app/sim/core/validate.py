"""Shared validation for explainers' JSON-shaped parameters (stdlib only).

:class:`Checker` gathers every issue in one pass so a user sees all of them at once; each names
the field (``loc``) and says what to change, quoting at most a short excerpt of what was given.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
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

    def choice(
        self,
        raw: Mapping[str, Any],
        key: str,
        loc: tuple[str | int, ...],
        options: tuple[str, ...],
        default: str | None = None,
    ) -> str:
        """``raw[key]``, one of ``options``; ``default`` (the first option unless given) when
        it is absent, and after recording an issue when it is none of them."""
        fallback = options[0] if default is None else default
        if key not in raw:
            return fallback
        value = raw[key]
        if isinstance(value, str) and value in options:
            return value
        self.add(
            (*loc, key),
            msg(
                "{field} must be one of {names}; you gave {what}",
                field=key,
                names=", ".join(options),
                what=describe(value),
            ),
        )
        return fallback

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


# --- what JSON can carry that no parameter can hold ------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
UNSAFE_ISSUES_MAX = 20


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone UTF-16 surrogate (``"\\ud800"`` in JSON): not a character,
    so it cannot be written out as UTF-8 (json.loads joins a valid pair into one character)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def scrub(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so it can be shown or quoted."""
    return _SURROGATE.sub("\ufffd", text) if has_surrogate(text) else text


def _too_big(v: object) -> bool:
    if not isinstance(v, int) or isinstance(v, bool):
        return False
    try:
        float(v)
    except OverflowError:
        return True
    return False


def _unsafe(raw: object) -> Iterator[tuple[tuple[str | int, ...], str, int]]:
    """(where, what, digits) of each unsafe value: "surrogate", "surrogate key" or "too big"
    (with its number of digits). Iterative, so no nesting depth makes it fail."""
    stack: list[tuple[tuple[str | int, ...], object]] = [((), raw)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, str):
            if has_surrogate(value):
                yield loc, "surrogate", 0
        elif _too_big(value):
            yield loc, "too big", len(str(abs(value))) if isinstance(value, int) else 0
        elif isinstance(value, Mapping):
            for key, item in reversed(list(value.items())):
                name = key if isinstance(key, str) else str(key)
                if has_surrogate(name):
                    yield (*loc, scrub(name)), "surrogate key", 0
                else:
                    stack.append(((*loc, name), item))
        elif isinstance(value, (list, tuple)):
            stack.extend(((*loc, i), item) for i, item in reversed(list(enumerate(value))))


_PLAIN = (float, bool, type(None))
SAFE_INT_BITS = 1000  # an int this long (and shorter) is well within a double's range


def _maybe_unsafe(raw: object) -> bool:
    """False when ``raw`` surely holds nothing :func:`_unsafe` reports: a walk over the values
    of JSON's own types only, without their locations (the common case: a large run's params
    are tens of thousands of values, walked twice per request). Anything it cannot vouch for
    (another type, a key that is not a text) answers True: the full walk decides."""
    stack: list[Any] = [raw]  # exact types are checked: each value is what its type says
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str:
            if not value.isascii() and has_surrogate(value):
                return True
        elif kind is int:
            if value.bit_length() > SAFE_INT_BITS:
                return True
        elif kind is dict:
            for key in value:
                if type(key) is not str or (not key.isascii() and has_surrogate(key)):
                    return True
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind not in _PLAIN:
            return True
    return False


def unsafe_json_issues(raw: object) -> list[ParamIssue]:
    """Problems any JSON-shaped input can have whatever it means: an integer literal too large
    for a float (``1`` and 400 zeros: every comparison with a float raises OverflowError) and a
    lone surrogate in a text or a key. Each issue names where it is (a key scrubbed, so the
    answer can be written out); at most UNSAFE_ISSUES_MAX of them."""
    if not _maybe_unsafe(raw):
        return []
    issues: list[ParamIssue] = []
    for loc, kind, digits in _unsafe(raw):
        text = _too_big_msg(digits) if kind == "too big" else _surrogate_msg(kind != "surrogate")
        issues.append(ParamIssue(loc=loc, msg=text))
        if len(issues) >= UNSAFE_ISSUES_MAX:
            break
    return issues


def _too_big_msg(digits: int) -> Message:
    return msg(
        "is a number too large to compute with ({digits} digits): numbers must fit in a "
        "double, below about 1.8e308",
        digits=digits,
    )


def _surrogate_msg(in_key: bool) -> Message:
    if in_key:
        return msg(
            "this key contains an unpaired surrogate (a \\ud800-\\udfff escape without "
            "its pair), which is not a character; remove it"
        )
    return msg(
        "contains an unpaired surrogate (a \\ud800-\\udfff escape without its pair), "
        "which is not a character; remove it"
    )


def scrub_json(raw: Any) -> Any:
    """A copy of JSON-shaped ``raw`` with every lone surrogate (in texts and keys) replaced by
    U+FFFD: what an editor or an error page may show of input :func:`unsafe_json_issues`
    refused (the input itself is never run). ``raw`` itself when it holds none."""
    if all(kind == "too big" for _, kind, _ in _unsafe(raw)):
        return raw
    return _scrubbed(raw)


def _scrubbed(raw: Any) -> Any:
    if isinstance(raw, str):
        return scrub(raw)
    if isinstance(raw, Mapping):
        return {scrub(str(k)): _scrubbed(v) for k, v in raw.items()}
    if isinstance(raw, (list, tuple)):
        return [_scrubbed(v) for v in raw]
    return raw
