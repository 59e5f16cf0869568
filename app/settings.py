"""Runtime settings (environment prefix ``APP_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="APP_")

    database_url: str = f"sqlite:///{ROOT / 'data' / 'stepscope.db'}"
    root: Path = ROOT
    debug: bool = False
    run_cache_size: int = 128

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"
