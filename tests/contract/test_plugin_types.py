"""A plugin pairs a simulation with the web view of its own trace, and mypy checks the pair:
``Plugin(sim=..., web=...)`` infers the state and series types from the simulation, so a view
whose picture takes another trace is a type error (one mypy run on a small module)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.settings import Settings

REPO = Settings().root

SNIPPET = """
from app.sim.core import Frame, Trace
from app.web.plugin import Plugin, WebView
from tests.contract.toy import VIEW, ToyExplainer


def other_picture(trace: Trace[int, None], frame: Frame[int]) -> str:
    return str(frame.state + 1)


OTHER: WebView[int, None] = WebView(picture=other_picture)
RIGHT = Plugin(sim=ToyExplainer(), web=VIEW)
WRONG = Plugin(sim=ToyExplainer(), web=OTHER)  # the toy's run gives CounterState frames
"""


def test_mypy_rejects_a_view_of_another_trace(tmp_path: Path) -> None:
    module = tmp_path / "pairing.py"
    module.write_text(SNIPPET.lstrip("\n"), encoding="utf-8")
    lines = module.read_text(encoding="utf-8").splitlines()
    right = 1 + next(i for i, line in enumerate(lines) if line.startswith("RIGHT = "))
    wrong = 1 + next(i for i, line in enumerate(lines) if line.startswith("WRONG = "))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            os.devnull,
            "--no-error-summary",
            str(module),
        ],
        cwd=REPO,
        env={**os.environ, "MYPYPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    # exactly one error, on the mismatched pair; the right pair type-checks
    assert len(errors) == 1, out.stdout + out.stderr
    assert errors[0].startswith(f"{module}:{wrong}:"), errors
    assert not any(e.startswith(f"{module}:{right}:") for e in errors)
    assert "Plugin" in errors[0], errors
