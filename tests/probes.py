"""Running a probe script in a fresh interpreter (what a process holds from its start, without
the test process's heap or modules), from the repository's root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def probe_output(code: str, **env: str) -> str:
    """What ``code`` prints, run by this interpreter in a new process (``env`` added to the
    environment)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, **env},
    ).stdout
