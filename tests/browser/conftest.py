"""A live server on loopback and Debian's chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from app.main import create_app
from app.settings import Settings
from app.web.exporting import CHROMIUM_ARGS

CHROMIUM_PATH = str(Settings().chromium)

# The same Debian chromium and flags the app's PNG export uses.
CHROMIUM = CHROMIUM_PATH
ARGS = CHROMIUM_ARGS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    def __init__(self, app: object) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("live server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    db = tmp_path_factory.mktemp("live") / "live.db"
    # One server serves every browser test of a pytest worker, all from 127.0.0.1: the per-client
    # quotas (tested on their own apps in tests/web) would otherwise refuse a test for what the
    # tests before it ran in the same minute (a long-walk PNG got 429 on CI).
    settings = Settings(
        database_url=f"sqlite:///{db}", expensive_runs_per_minute=1000, sessions_per_client=100_000
    )
    with LiveServer(create_app(settings)) as server:
        yield server


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium with apt-get")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)  # type: ignore[attr-defined]
    pg = context.new_page()
    yield pg
    context.close()
