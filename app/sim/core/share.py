"""Structural sharing between consecutive frames: a cheaper representation of a long trace.

Most of a frame's state is what the frame before it held: an idle endpoint, a queue no event
touched, the same rows of the field table. Built afresh for every frame, each copy took its own
memory (a TCP keepalive run of 20,000 frames held ~120 MB of frames, the same few dictionaries
over and over), and the trace's pickle repeated them too. :func:`share` hands back a value equal
to ``new`` in which every part equal to the same part of ``old`` *is* that part of ``old``, so
equal parts are held once in memory and pickled once (pickle writes an object it has seen as a
reference). Equality, and so every rendering and the trace's digest, is unchanged.

Frames are read-only once built (``Frame`` is frozen; nothing writes into a frame's state
after the run), which is what makes sharing their parts safe.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

_LEAF = (str, int, float, bool, bytes, type(None))


def share(new: T, old: Any) -> T:
    """``new``, with each part equal to the corresponding part of ``old`` replaced by it (dict
    values by key, list and tuple items by position; other objects whole when equal)."""
    return _share(new, old, 8)  # type: ignore[no-any-return]


def _share(new: Any, old: Any, depth: int) -> Any:
    if new is old or old is None or type(new) is not type(old):
        return new
    if isinstance(new, _LEAF):
        return old if new == old and isinstance(new, str) else new
    if new == old:
        return old
    if depth <= 0:
        return new
    if type(new) is dict:
        for key, value in new.items():
            if key in old:
                shared = _share(value, old[key], depth - 1)
                if shared is not value:
                    new[key] = shared  # same key: the dict's size and order are unchanged
        return new
    if type(new) is list and len(new) == len(old):
        for i, (value, was) in enumerate(zip(new, old, strict=True)):
            new[i] = _share(value, was, depth - 1)
        return new
    if type(new) is tuple and len(new) == len(old):
        return tuple(_share(v, w, depth - 1) for v, w in zip(new, old, strict=True))
    return new
