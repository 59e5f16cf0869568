"""Tests that reach inside the simulations (replace a method, subclass an engine) and the
mypyc-compiled modules (``scripts/build_native.py``, :mod:`app.sim.native`).

Compiled code calls a compiled class's methods directly, so a patched or overridden method is
not what it calls, and an interpreted class cannot subclass a compiled one. A test that does
either is decorated with :func:`pure_python`: when compiled modules are loaded in this process it
runs itself in a child pytest with ``APP_NATIVE=0`` (the pure modules, where the patch takes
effect) and has the child's outcome (passes only if the child's run of it passed; skipped if
that skipped); otherwise it runs as written. One child per test module runs every selected
``pure_python`` test of the module, every parametrization, at once (starting pytest and
importing the app cost more CPU than most of these tests), and each reads its own outcome.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[1]
F = TypeVar("F", bound=Callable[..., Any])
REPORT = "APP_PURE_REPORT"  # in a child: the file its outcomes are written to
# plugins a child does not use: hypothesis's (its @given runs without it) alone costs a second
CHILD_PLUGINS_OFF = ("hypothesispytest", "xdist", "xdist.looponfail", "pytest_cov", "anyio")


@dataclass
class Outcome:
    """A test's outcome in a child: "passed", "failed" or "skipped", and what it said."""

    outcome: str = "passed"
    text: str = ""


@dataclass
class Child:
    run: subprocess.CompletedProcess[str]
    outcomes: dict[str, Outcome] = field(default_factory=dict)


_children: dict[str, Child] = {}  # by test module path
_selected: set[str] = set()  # node ids of this session's tests


def native_loaded() -> bool:
    """Whether any ``app.sim`` module in this process is a compiled extension."""
    from app.sim.native import compiled

    return any(
        compiled(m) for name, m in list(sys.modules.items()) if name.startswith("app.sim.") and m
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """(Imported by tests/conftest.py.) Which tests were selected, so a child runs only those."""
    _selected.update(item.nodeid for item in session.items)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In a child (``-p tests.native``): append each phase's outcome to the report file."""
    path = os.environ.get(REPORT)
    if not path or (report.passed and report.when != "call"):
        return
    text = report.longreprtext
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"id": report.nodeid, "outcome": report.outcome, "text": text}) + "\n")


def run_pure(*nodeids: str) -> Child:
    """``nodeids`` in one child pytest on the pure-Python modules, and each test's outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "outcomes.jsonl"
        env = {**os.environ, "APP_NATIVE": "0", REPORT: str(report)}
        env.pop("PYTEST_CURRENT_TEST", None)
        env.pop("PYTEST_XDIST_WORKER", None)
        off = [arg for name in CHILD_PLUGINS_OFF for arg in ("-p", f"no:{name}")]
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *off]
            + ["-p", "tests.native", "-q", *nodeids],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        child = Child(run)
        lines = report.read_text(encoding="utf-8").splitlines() if report.exists() else []
    for line in lines:
        row = json.loads(line)
        seen = child.outcomes.setdefault(row["id"], Outcome())
        if seen.outcome != "failed" and row["outcome"] != "passed":  # the first failure counts
            seen.outcome, seen.text = row["outcome"], row["text"]
    return child


def _pure_in_module(test: Callable[..., Any], path: str) -> list[str]:
    """Node ids (without parameters) of the selected ``pure_python`` tests of ``test``'s module."""
    module = sys.modules[test.__module__]
    names = sorted(n for n, f in vars(module).items() if getattr(f, "pure_python", False))
    ids = [f"{path}::{n}" for n in names]
    chosen = [i for i in ids if any(s == i or s.startswith(i + "[") for s in _selected)]
    return chosen or [f"{path}::{test.__name__}"]


def pure_python(test: F) -> F:
    """Run ``test`` on the pure-Python modules (see the module docstring)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not native_loaded():
            return test(*args, **kwargs)
        nodeid = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
        path = nodeid.split("::", 1)[0]
        if path not in _children:
            _children[path] = run_pure(*_pure_in_module(test, path))
        child = _children[path]
        done = child.outcomes.get(nodeid)
        assert done is not None, (
            f"{nodeid} did not run with APP_NATIVE=0:\n{child.run.stdout}\n{child.run.stderr}"
        )
        if done.outcome == "skipped":
            pytest.skip(f"with APP_NATIVE=0: {done.text}")
        assert done.outcome == "passed", f"{nodeid} with APP_NATIVE=0:\n{done.text}"
        return None

    wrapper.pure_python = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
