"""Every worker renders the preset pages before visitors ask for them.

A rendered page is kept per worker (:mod:`app.web.pagecache`), and the first render of a player
page costs 0.15–0.5 s of CPU with the GIL held. A room arriving at a fresh worker asks for
dozens of pages at once, and every one of them waited for renders: under the mixed load the
first seconds after a start made the whole run's p99. So once a worker has seen the host it is
addressed by (its first request, or the configured public base URL), a background thread asks
the app itself, in process, for the home page, every explainer's page and every preset page in
every language, one at a time, as a visitor would, and the answers are kept as usual. The host
is part of a kept page's key (pages may name it), hence the wait for a first request. Only that
first host is warmed: the whole warm-up is 11 s of CPU, and every other Host header a client
can make up (the same address with another port passes the trusted-host check) would have
cost as much again; pages for any other host are rendered when asked for, as usual. Behind a
proxy, set ``public_base_url``: every request then names that one host.

``/api/v1/health`` counts this worker's warm-up: a load balancer sends a room only when the
presets are stored and the pages kept.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

MAX_HOSTS = 1  # hosts warmed per worker: once, for the first host it is addressed by
PAGE_TIMEOUT_S = 120.0  # one page's render (it may wait for its preset's run)
STORED_WAIT_S = 300.0  # how long the warm-up waits for the presets' traces to be stored


class PageWarmer:
    """Which hosts this worker has warmed, is warming or will not warm."""

    def __init__(
        self,
        paths: Iterable[str],
        accept_languages: Iterable[str],
        stored: Callable[[], bool] = lambda: True,
        done: Callable[[], object] | None = None,
    ) -> None:
        """``stored()``: whether the presets' traces are stored (the warm-up waits for that, so
        it never runs a preset another worker is running); ``done()`` is called when a host's
        warm-up is over, before the worker says it is ready."""
        self.paths = list(paths)
        self.accept_languages = list(accept_languages)
        self.stored = stored
        self.done = done
        self._lock = threading.Lock()
        self._hosts: dict[str, threading.Event] = {}  # set when that host's pages are kept
        self.rendered = 0
        self.failed = 0

    @property
    def total(self) -> int:
        return len(self.paths) * len(self.accept_languages)

    def done_for(self, host: str) -> bool | None:
        """True when ``host``'s pages are kept, False while they are being rendered, None when
        this host is not warmed (never seen, or past :data:`MAX_HOSTS`)."""
        event = self._hosts.get(host)
        return None if event is None else event.is_set()

    def see(self, app: ASGIApp, scope: Scope, loop: asyncio.AbstractEventLoop) -> None:
        """Start warming the pages of this request's host, the first time it is seen."""
        host = _header(scope, b"host")
        if host in self._hosts or not host:
            return
        with self._lock:
            if host in self._hosts or len(self._hosts) >= MAX_HOSTS:
                return
            event = self._hosts[host] = threading.Event()
        threading.Thread(
            target=self._warm, args=(app, scope, loop, host, event), name="page-warm", daemon=True
        ).start()

    def _warm(
        self,
        app: ASGIApp,
        seen: Scope,
        loop: asyncio.AbstractEventLoop,
        host: str,
        event: threading.Event,
    ) -> None:
        try:
            deadline = time.monotonic() + STORED_WAIT_S
            while not self.stored() and time.monotonic() < deadline:
                if not loop.is_running():
                    return  # the worker is stopping
                time.sleep(0.5)
            for accept_language in self.accept_languages:
                for path in self.paths:
                    status = self._render(app, loop, _page_scope(seen, host, path, accept_language))
                    if status is None:
                        return
                    if status == 200:
                        self.rendered += 1
                    else:
                        self.failed += 1
        finally:
            if self.done is not None:
                try:
                    self.done()
                except Exception:  # noqa: BLE001 - the worker must still say it is ready
                    log.exception("after the warm-up")
            event.set()

    @staticmethod
    def _render(app: ASGIApp, loop: asyncio.AbstractEventLoop, scope: Scope) -> int | None:
        """One page through the app on its event loop; its status, None once the loop stops."""
        page = _get(app, scope)
        try:
            future = asyncio.run_coroutine_threadsafe(page, loop)
        except RuntimeError:  # the event loop has closed: the worker is stopping
            page.close()
            return None
        deadline = time.monotonic() + PAGE_TIMEOUT_S
        while True:
            try:
                return future.result(1.0)
            except concurrent.futures.TimeoutError:
                if not loop.is_running():
                    future.cancel()
                    return None
                if time.monotonic() > deadline:
                    future.cancel()
                    return 504
            except Exception:  # noqa: BLE001 - a page that fails is rendered on demand
                log.exception("warming %s failed", scope["path"])
                return 500


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return ""


def _page_scope(seen: Scope, host: str, path: str, accept_language: str) -> Scope:
    """A GET of ``path`` as a first-time visitor of ``host`` reading ``accept_language`` would
    send it (no cookies, gzip accepted), from the same server and scheme as ``seen``."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": seen.get("scheme", "http"),
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": seen.get("root_path", ""),
        "headers": [
            (b"host", host.encode("latin-1")),
            (b"accept-language", accept_language.encode("latin-1")),
            (b"accept-encoding", b"gzip"),
            (b"user-agent", b"stepscope-page-warm"),
        ],
        "client": ("127.0.0.1", 0),
        "server": seen.get("server"),
        "state": {},
    }


async def _get(app: ASGIApp, scope: Scope) -> int:
    """Send ``scope`` through the whole app; answers the status (the body is dropped)."""
    status = 0

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    await app(scope, receive, send)
    return status


class PageWarm:
    """Pure ASGI: on a worker's first request of each host, starts that host's warm-up."""

    def __init__(self, app: ASGIApp, warmer: PageWarmer) -> None:
        self.app = app
        self.warmer = warmer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            whole: Any = scope.get("app")  # the outermost app, middleware and all
            if whole is not None:
                self.warmer.see(whole, scope, asyncio.get_running_loop())
        await self.app(scope, receive, send)
