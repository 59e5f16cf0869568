"""Building the app touches nothing on disk: the database is created when the app starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_importing_the_app_creates_no_database(tmp_path: Path) -> None:
    """`import app.main` (which builds the default app) creates no data/ folder or database;
    the lifespan does, when the server starts."""
    root = Path(__file__).resolve().parents[2]
    db = tmp_path / "data" / "stepscope.db"
    env = {"APP_DATABASE_URL": f"sqlite:///{db}", "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [sys.executable, "-c", "import app.main"], cwd=root, env=env, check=True, timeout=60
    )
    assert not db.parent.exists()
