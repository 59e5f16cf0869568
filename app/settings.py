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
    run_cache_size: int = 128  # traces kept in memory
    chromium: Path = Path("/usr/bin/chromium")  # PNG export draws in Debian's chromium

    @model_validator(mode="after")
    def _defaults(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.root / 'data' / 'stepscope.db'}"
        return self

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"
