"""Runtime settings (environment prefix ``APP_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="APP_")

    root: Path = _repo_root()  # templates/, static/, content/ and node_modules/ live here
    database_url: str = ""  # default: sqlite:///<root>/data/stepscope.db
    trace_cache_mb: int = 256  # decoded traces kept in memory per app process
    sim_workers: int = 1  # simulation processes per app process
    sim_queue: int = 8  # runs that may wait for a worker before requests get 503
    job_threshold_s: float = 1.5  # runs expected to take longer become jobs with a progress bar
    job_idle_s: float = 15.0  # a job nobody asks about for this long is cancelled
    expensive_runs_per_minute: int = 6  # per client, for runs expected to take over 1 s
    chromium: Path = Path("/usr/bin/chromium")  # PNG export draws in Debian's chromium

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.root / 'data' / 'stepscope.db'}"
        return self

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"
