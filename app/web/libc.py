"""The C library, for the few calls Python's standard library lacks (prctl, mallopt,
malloc_trim): one handle for the app's modules, ``None`` where it cannot be loaded."""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any


def _load() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None


LIBC: Any | None = _load()


def has(*functions: str) -> bool:
    """Whether the loaded C library has every one of ``functions`` (glibc-only calls)."""
    return LIBC is not None and all(hasattr(LIBC, f) for f in functions)
