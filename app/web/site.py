"""Everything one app instance serves from: its explainers, run cache, lessons and templates.

``create_app`` builds one :class:`Site` from its settings and explainer list and keeps it on
``app.state.site``; routes get it through the ``SiteDep`` dependency. Nothing here is module
state, so two apps (a test app with its own explainers, say) never share anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi import HTTPException
from fastapi.templating import Jinja2Templates
from sqlalchemy import Engine

from app.settings import Settings
from app.sim.core import ParamError, Trace, msg
from app.web import i18n
from app.web.content import Content
from app.web.memo import Memo
from app.web.pagecache import PageCache
from app.web.plugin import Plugin
from app.web.recbuild import RecordingBuilder
from app.web.runs import RunService
from app.web.templating import language_context
from app.web.templating import setup as setup_i18n


class Site:
    def __init__(self, settings: Settings, plugins: Iterable[Plugin], engine: Engine) -> None:
        self.settings = settings
        self._plugins = {p.name: p for p in plugins}
        self.content = Content(settings.root / "content")
        self.templates = Jinja2Templates(
            directory=str(settings.root / "templates"), context_processors=[language_context]
        )
        setup_i18n(self.templates.env)
        self.templates.env.globals["site_name"] = "Stepscope"
        # The one place runs happen and traces are kept (memory + database, shared by workers).
        self.runs = RunService(settings, engine)
        # Recordings' views are built in a simulation process of their own, within a run's
        # limits (forked when the app starts)
        self.recording_builder = RecordingBuilder(settings)
        # A preset is a fixed run, stored once: opening one never counts as a visitor's long run.
        for plugin in self._plugins.values():
            for preset in plugin.sim.presets:
                try:
                    parsed = plugin.sim.parse(dict(preset.params))
                except ParamError:  # pragma: no cover - presets are valid (tests/contract)
                    continue
                self.runs.free_keys.add(self.runs.key(plugin.sim, parsed))
        self.preset_keys = sorted(self.runs.free_keys)  # what /api/v1/health counts
        self.pages = PageCache(settings.page_cache_mb * 1024 * 1024)
        # Facts of walkthroughs progress is recorded for (title, page, step count), by key and
        # language; presets and saved scenarios never change within a simulation version.
        self.walkthroughs: Memo[tuple[str, str], Any] = Memo(4096)

    def memory_probes(self) -> dict[str, Callable[[], float]]:
        """What this process's caches hold (app.web.memory.MemoryLog): bytes in MB, entries."""
        mb = 1024 * 1024
        return {
            "trace_cache_mb": lambda: self.runs.trace_cache.used / mb,
            "trace_cache_n": lambda: len(self.runs.trace_cache),
            "page_cache_mb": lambda: self.pages.used / mb,
            "page_cache_n": lambda: len(self.pages),
            "walkthroughs_n": lambda: len(self.walkthroughs),
        }

    # --- explainers --------------------------------------------------------------------------

    def stored_presets(self) -> int:
        """How many presets have their trace stored (of ``len(self.preset_keys)``)."""
        return self.runs.stored_count(self.preset_keys)

    def warm_paths(self) -> list[str]:
        """The pages every worker renders before visitors ask (app.web.pagewarm): the home
        page, each explainer's page and each preset's."""
        paths = ["/"]
        for plugin in self._plugins.values():
            paths.append(f"/explainers/{plugin.name}")
            paths += [f"/explainers/{plugin.name}/presets/{p.slug}" for p in plugin.sim.presets]
        return paths

    @property
    def plugins(self) -> tuple[Plugin, ...]:
        return tuple(self._plugins.values())

    def get(self, name: str) -> Plugin | None:
        return self._plugins.get(name)

    def plugin(self, name: str) -> Plugin:
        """The explainer called ``name``, or 404."""
        found = self._plugins.get(name)
        if found is None:
            text = msg("There is no explainer called {name}.", name=repr(name[:40]))
            raise HTTPException(404, i18n.render(text))
        return found

    @property
    def names(self) -> str:
        return ", ".join(self._plugins) or "none"

    # --- runs --------------------------------------------------------------------------------

    def run(self, plugin: Plugin, raw: Any) -> tuple[Any, Trace[Any, Any]]:
        """Validate raw params (ParamError → 422), then the trace: stored, or run in the pool
        (a long run raises :class:`~app.web.runs.JobStarted` instead of holding the request)."""
        params = plugin.sim.parse(raw)
        return params, self.runs.trace(plugin.sim, params)
