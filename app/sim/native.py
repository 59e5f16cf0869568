"""Use the mypyc-compiled hot modules when they were built from the sources on disk.

``scripts/build_native.py`` compiles each *group* of hot modules into ``.native/<group>/`` and
records the sha256 of every source in ``.native/manifest.json``. A package whose modules are
compiled calls :func:`use_native` first thing in its ``__init__``; for every group that has
modules in that package and is *current* (same interpreter ABI, every source's hash equal to
the file's today), the group's directory for the package is put before the package's own on
``__path__`` (so ``import app.sim.congestion.flow`` finds the extension) and the group's
directory on ``sys.path`` (the extensions import their shared library by name). The results are
the pure modules' exactly, only faster.

The pure-Python modules are used instead when ``APP_NATIVE=0``, when nothing was built, or when
a source has changed since the build (one warning per group and process, naming the file: an
edited ``.py`` is never shadowed by a stale ``.so``). ``APP_NATIVE_DIR`` points at another build
directory (tests use it on a copy).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
_checked: dict[str, bool] = {}  # group -> current, once per process


def native_dir() -> Path:
    return Path(os.environ.get("APP_NATIVE_DIR") or ROOT / ".native")


def enabled() -> bool:
    return os.environ.get("APP_NATIVE", "1") != "0"


def _abi() -> str:
    return f"{sys.implementation.cache_tag}{sysconfig.get_config_var('EXT_SUFFIX')}"


def _current(group: str, entry: dict[str, object], base: Path) -> bool:
    """Whether ``group``'s build matches the sources on disk; warns once when it does not."""
    if group in _checked:
        return _checked[group]
    sources = entry.get("sources")
    stale = "another Python" if entry.get("abi") != _abi() else ""
    if not stale and isinstance(sources, dict):
        for rel, digest in sorted(sources.items()):
            try:
                data = (ROOT / rel).read_bytes()
            except OSError:
                stale = f"{rel} is gone"
                break
            if hashlib.sha256(data).hexdigest() != digest:
                stale = f"{rel} changed"
                break
    elif not stale:
        stale = "no sources recorded"
    if not stale and not (base / group).is_dir():
        stale = "its directory is gone"
    if stale:
        warnings.warn(
            f"native {group} modules not used ({stale} since scripts/build_native.py built "
            "them): running the pure-Python modules; rebuild with "
            ".venv/bin/python scripts/build_native.py",
            RuntimeWarning,
            stacklevel=3,
        )
    _checked[group] = not stale
    return not stale


def use_native(package: str, path: list[str]) -> list[str]:
    """Put the current native builds of ``package`` (e.g. ``"app.sim.congestion"``) before its
    ``__path__`` (``path``, changed in place); returns the groups used, for tests."""
    if not enabled():
        return []
    base = native_dir()
    try:
        manifest = json.loads((base / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []  # never built (or the build failed): pure Python, silently
    groups = manifest.get("groups") if isinstance(manifest, dict) else None
    if not isinstance(groups, dict):
        return []
    rel = Path(*package.split("."))
    used: list[str] = []
    for group, entry in sorted(groups.items()):
        sources = entry.get("sources") if isinstance(entry, dict) else None
        if not isinstance(sources, dict) or not any(
            Path(s).parent == rel for s in sources
        ):
            continue
        if not _current(group, entry, base):
            continue
        pkg_dir = str(base / group / rel)
        if pkg_dir not in path:
            path.insert(0, pkg_dir)
        lib_dir = str(base / group)
        if lib_dir not in sys.path:
            sys.path.append(lib_dir)
        used.append(group)
    return used


def compiled(module: object) -> bool:
    """Whether ``module`` was loaded from a compiled extension (not a ``.py`` file)."""
    return not str(getattr(module, "__file__", "") or "").endswith(".py")


def mypyc_attr(*_args: str, **_kwargs: object) -> Callable[[T], T]:
    """``mypy_extensions.mypyc_attr`` where mypy is not installed: changes nothing (a module
    with it is then never compiled either)."""
    return lambda cls: cls


def pace(module: object, pure: float, native: float) -> float:
    """A rate an explainer's cost model uses (work per second, seconds per byte): ``native``
    when ``module`` (one of its compiled hot modules) was loaded compiled, else ``pure`` — the
    compiled modules do the same work several times faster, and the server's predictions
    (lanes, jobs, quotas, etas) should say so."""
    return native if compiled(module) else pure
