"""Tests that reach inside the simulations (replace a method, subclass an engine) and the
mypyc-compiled modules (``scripts/build_native.py``, :mod:`app.sim.native`).

Compiled code calls a compiled class's methods directly, so a patched or overridden method is
not what it calls, and an interpreted class cannot subclass a compiled one. A test that does
either is decorated with :func:`pure_python`: when compiled modules are loaded in this process it
runs itself in a child pytest with ``APP_NATIVE=0`` (the pure modules, where the patch takes
effect) and passes only if the child passes; otherwise it runs as written. The child runs every
parametrization of the test at once, and the other parametrizations reuse its result.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
F = TypeVar("F", bound=Callable[..., Any])
_children: dict[str, subprocess.CompletedProcess[str]] = {}


def native_loaded() -> bool:
    """Whether any ``app.sim`` module in this process is a compiled extension."""
    from app.sim.native import compiled

    return any(
        compiled(m) for name, m in list(sys.modules.items()) if name.startswith("app.sim.") and m
    )


def run_pure(nodeid: str) -> subprocess.CompletedProcess[str]:
    """``nodeid`` in a child pytest on the pure-Python modules."""
    env = {**os.environ, "APP_NATIVE": "0"}
    env.pop("PYTEST_CURRENT_TEST", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x", nodeid],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def pure_python(test: F) -> F:
    """Run ``test`` on the pure-Python modules (see the module docstring)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not native_loaded():
            return test(*args, **kwargs)
        current = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
        nodeid = current.split("[", 1)[0]  # every parametrization in one child
        if nodeid not in _children:
            _children[nodeid] = run_pure(nodeid)
        done = _children[nodeid]
        assert done.returncode == 0, f"{nodeid} with APP_NATIVE=0:\n{done.stdout}\n{done.stderr}"
        return None

    return wrapper  # type: ignore[return-value]
