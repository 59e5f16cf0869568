"""Builds the FastAPI app: routers, static files, npm packages, the database engine."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from functools import partial

from fastapi import Depends, FastAPI
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from app.settings import Settings
from app.store.db import init_db, make_engine
from app.web import (
    apidocs,
    classes,
    errors,
    gctune,
    i18n,
    memory,
    recordings,
    security,
    sessions,
    sharing,
)
from app.web.exporting import PngRenderer
from app.web.i18n import LanguageMiddleware
from app.web.jsonguard import refuse_unsafe_json
from app.web.loopwatch import LoopWatch
from app.web.pagecache import PageFront
from app.web.pagewarm import PageWarm, PageWarmer
from app.web.plugin import Plugin
from app.web.pngbrowser import Recycle, server_lock_path
from app.web.recycle import Recycler
from app.web.routes import api, handout, jobs, pages
from app.web.runs import cross_site, current_client
from app.web.simworker import stop_fork_server
from app.web.site import Site
from app.web.staticcache import StaticFront

# npm packages every page may load (their dist folders); an explainer's own packages come from
# its view's declaration (``WebView.packages``), see :func:`vendor_folders`.
VENDOR_DIST = ("htmx.org/dist", "idiomorph/dist", "reveal.js/dist")


def vendor_folders(plugins: Iterable[Plugin]) -> tuple[str, ...]:
    """The node_modules folders served at /vendor/<folder>: the generic ones, then each view's
    declared packages (once each, in declaration order)."""
    declared = (package for plugin in plugins for package in plugin.web.packages)
    return tuple(dict.fromkeys((*VENDOR_DIST, *declared)))


def from_another_site(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a browser sent this request for another site's page (``Sec-Fetch-Site``) other
    than by following a link to it: an image, script, frame or fetch a third-party page made.
    Requests without these headers (curl, scripts, old browsers) are not."""
    seen = {k: v for k, v in headers if k.startswith(b"sec-fetch-")}
    if seen.get(b"sec-fetch-site") not in (b"cross-site", b"same-site"):
        return False
    link = seen.get(b"sec-fetch-mode") == b"navigate" and seen.get(b"sec-fetch-dest") in (
        b"document",
        None,
    )
    return not link


class ClientTag:
    """Remember who is asking (their address) and whether another site's page asked, for the
    limits on long runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            client = scope.get("client")
            token = current_client.set(client[0] if client else "-")
            site_token = cross_site.set(from_another_site(scope["headers"]))
            try:
                await self.app(scope, receive, send)
            finally:
                cross_site.reset(site_token)
                current_client.reset(token)
            return
        await self.app(scope, receive, send)


class HeadAsGet:
    """Answer HEAD like GET (link checkers and ``curl -I`` use it); the server sends no body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
        await self.app(scope, receive, send)


def build_app(settings: Settings, plugins: Iterable[Plugin]) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # The database is created or upgraded when the app starts, not when it is imported;
        # the simulation workers are forked before the server starts its threads.
        init_db(app.state.engine)
        memory.tune_heap(settings.malloc_arenas)  # before the threads and workers start
        if gctune.configure(settings.gc_threshold) and settings.warm_presets:
            gctune.freeze()  # what a server's worker has from the start: modules, templates
        app.state.site.runs.start()
        app.state.site.recording_builder.start()
        trimmer = memory.Trimmer(settings.malloc_trim_s)
        trimmer.start()
        recycler = Recycler(settings.worker_recycle_mb, settings.worker_recycle_after_s)
        recycler.start()
        loop_watch = LoopWatch(settings.loop_stall_ms / 1000)
        loop_watch.start()
        memory_log = memory.MemoryLog(
            settings.memory_log,
            settings.memory_log_s,
            app.state.site.memory_probes(),
            settings.memory_snapshot_s,
        )
        memory_log.start()
        if settings.warm_presets:
            presets = [
                (p.sim, p.sim.parse(dict(preset.params)))
                for p in app.state.site.plugins
                for preset in p.sim.presets
            ]
            threading.Thread(
                target=partial(app.state.site.runs.warm, presets, one_by_one=True),
                name="warm",
                daemon=True,
            ).start()
        recycler.accept()  # last: connections are taken from here on
        try:
            yield
        finally:
            recycler.stop()
            if recycler.fired.is_set():  # replaced, not stopped: its jobs end first (off the
                # event loop: a job's end may still need it)
                await asyncio.to_thread(
                    recycler.drain, app.state.site.runs, settings.worker_recycle_drain_s
                )
            trimmer.stop()
            loop_watch.stop()
            memory_log.stop()
            writer = getattr(app.state, "progress_writer", None)
            if writer is not None:
                writer.close()
            classes.close(app)
            app.state.site.runs.stop()
            app.state.site.recording_builder.close()
            app.state.pngs.close()
            app.state.engine.dispose()
            if recycler.fired.is_set():  # last: the runs and recordings used it
                stop_fork_server()  # nothing of a replaced worker outlives it

    app = FastAPI(
        title="Stepscope",
        description="Step-through simulations of Linux networking internals.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # app.web.apidocs serves /docs from local assets
        redoc_url=None,
        dependencies=[Depends(refuse_unsafe_json)],  # 422, not 500, for JSON no field can hold
    )
    app.state.settings = settings
    app.state.engine = make_engine(settings.database_url)
    app.state.site = Site(settings, plugins, app.state.engine)
    for plugin in app.state.site.plugins:  # an explainer's own words, after the site's catalog
        if plugin.web.locale is not None:
            i18n.add_catalog(plugin.web.locale)
    app.state.pngs = PngRenderer(
        settings.chromium,
        nice=settings.export_nice,
        recycle=Recycle(
            pngs=settings.export_browser_pngs,
            rss_mb=settings.export_browser_mb,
            idle_s=settings.export_browser_idle_s,
        ),
        lock=server_lock_path(),  # one browser at a time among the server's workers
    )
    errors.install(app)
    # Frame stores and chart libraries compress well.
    app.add_middleware(GZipMiddleware, minimum_size=2048, compresslevel=6)
    app.add_middleware(HeadAsGet)
    app.add_middleware(ClientTag)
    app.add_middleware(LanguageMiddleware)  # the reader's language, before any route runs
    sharing.install(app)  # sessions, /s/ links, /embed, /export, /examples
    recordings.install(app)  # users' recordings and captures: /api/v1/recordings, /r/{id}
    app.include_router(api.router_for(app.state.site))
    app.include_router(jobs.router)
    classes.install(app)  # live classes: /api/v1/classes, /c/{code}
    app.include_router(pages.router)
    app.include_router(handout.router)
    for plugin in app.state.site.plugins:
        if plugin.web.router is not None:
            app.include_router(plugin.web.router)
    app.mount("/static", StaticFiles(directory=str(settings.root / "static")), name="static")
    # Front-end packages come from npm into node_modules; only their dist folders are served.
    vendor = vendor_folders(app.state.site.plugins)
    for package in vendor:
        app.mount(
            f"/vendor/{package}",
            StaticFiles(directory=str(settings.node_modules / package), check_dir=False),
            name=f"vendor-{package}",
        )

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(settings.root / "static" / "favicon.svg", media_type="image/svg+xml")

    apidocs.install(app, settings)
    # In front of routing, sessions and languages: static files and npm packages from memory
    # (read and gzipped once), and rendered pages another visitor already asked for.
    mounts = {"/static/": settings.root / "static"}
    mounts.update({f"/vendor/{p}/": settings.node_modules / p for p in vendor})
    app.add_middleware(
        PageFront,
        cache=app.state.site.pages,
        session_cookie=sessions.COOKIE,
        probe_name=sessions.PROBE_COOKIE,
        probe_cookie=sessions.probe_cookie_header,
        wants_probe=sessions.wants_probe,
        secure_cookies=settings.secure_cookies,
    )
    if settings.warm_presets:  # and every worker renders their pages before visitors ask
        site = app.state.site
        app.state.page_warmer = PageWarmer(
            site.warm_paths(),
            list(i18n.LANGUAGES),
            stored=lambda: site.stored_presets() == len(site.preset_keys),
            done=gctune.freeze if settings.gc_threshold > 0 else None,
        )
        app.add_middleware(PageWarm, warmer=app.state.page_warmer)
    app.add_middleware(StaticFront, mounts=mounts)
    security.install(app, settings)  # last: its middleware wraps everything above
    return app
