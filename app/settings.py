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
    # Absolute links (share URLs, embed snippets, exports) are built from this, never from the
    # request's Host header, e.g. "https://stepscope.example.org". None: the request's own
    # origin, which TrustedHostMiddleware limits to ``trusted_hosts``.
    public_base_url: str | None = None
    # Host headers accepted (env APP_TRUSTED_HOSTS='["a.example","b.example"]'); the host of
    # public_base_url is always accepted. "testserver" is what Starlette's test client sends.
    trusted_hosts: list[str] = ["127.0.0.1", "localhost", "testserver"]
    secure_cookies: bool = False  # set cookies with Secure (behind an HTTPS proxy)
    max_body_bytes: int = 1_048_576  # larger request bodies are refused with 413
    share_quota_per_session: int = 100  # saved scenarios per visitor session and hour
    share_quota_per_client: int = 300  # saved scenarios per client IP and hour
    session_idle_days: int = 90  # anonymous sessions unused this long, with nothing saved, go

    @property
    def node_modules(self) -> Path:
        return self.root / "node_modules"
