"""JSON API, ``/api/v1``: a contract other tools call. Bad input answers 422 naming the field."""

from __future__ import annotations

import asyncio
import threading
from functools import partial
from typing import Any, Literal

from fastapi import APIRouter, Body, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from app.sim.core import EncodedJSON, Explainer, Trace
from app.sim.core.i18n import reader_gettext
from app.store import health as store_health
from app.web import i18n
from app.web.fastjson import FastJSONResponse, accepts_gzip, render_pieces
from app.web.pagewarm import PageWarmer
from app.web.plugin import Plugin
from app.web.runs import Job, JobStarted, RunService
from app.web.site import Site
from app.web.sources import PluginDep, SiteDep


def list_explainers(site: SiteDep) -> dict[str, Any]:
    """Every explainer with its presets (raw params runnable as they are)."""
    return {
        "explainers": [
            {
                "name": p.name,
                "title": str(p.sim.title),
                "summary": str(p.sim.summary),
                "sim_version": p.sim.sim_version,
                "source": {"project": p.sim.source.name, "version": p.sim.source.version},
                "run_url": f"/api/v1/explainers/{p.name}/run",
                "default_preset": p.sim.default_preset,
                "limits": {"max_work": p.sim.limits.max_work, "unit": str(p.sim.limits.unit)},
                "presets": [
                    {
                        "slug": preset.slug,
                        "title": str(preset.title),
                        "params": preset.params,
                        "url": f"/explainers/{p.name}/presets/{preset.slug}",
                    }
                    for preset in p.sim.presets
                ],
            }
            for p in site.plugins
        ]
    }


def trace_json(plugin: Plugin, trace: Trace[Any, Any]) -> dict[str, Any]:
    """The explainer's public JSON for a trace, with the simulation version that made it; each
    frame's ``narration`` in the request's language."""
    return _localized({"sim_version": trace.sim_version, **plugin.sim.public_json(trace)}, trace)


Form = Literal["compact", "full"]
FORM_DOC = (
    "`compact` (default): the explainer's compact answer where it has one; `full`: the "
    "documented JSON with every list written out (what `compact` decodes to)."
)


def form_query(site: Site) -> Any:
    """The ``form`` query parameter, its description naming each explainer's compact form
    (``Explainer.compact_form``)."""
    forms = "".join(
        f"\n- `{p.name}`: {p.sim.compact_form}" for p in site.plugins if p.sim.compact_form
    )
    return Query("compact", description=FORM_DOC + ("\n\nCompact forms:" + forms if forms else ""))


def trace_parts(
    plugin: Plugin, trace: Trace[Any, Any], lang: str | None = None, form: Form = "compact"
) -> dict[str, Any]:
    """:func:`trace_json` with the parts the explainer writes as JSON itself left as their
    bytes (``Explainer.public_json_parts``), in its compact form unless ``form`` is ``full``:
    what the API sends."""
    return _parts(plugin.sim, trace, lang, form)


def _parts(
    sim: Explainer[Any], trace: Trace[Any, Any], lang: str | None, form: Form = "compact"
) -> dict[str, Any]:
    lang = lang or i18n.current()
    # words an explainer renders into its JSON (a deployment's reason) are the reader's, also
    # in a simulation process writing the answer, where no request set the language
    reader = reader_gettext.set(i18n.gettext_for(lang))
    try:
        parts = sim.public_json_parts(trace, compact=form == "compact")
    finally:
        reader_gettext.reset(reader)
    return _localized({"sim_version": trace.sim_version, **parts}, trace, lang)


def answer_pieces(
    sim: Explainer[Any], lang: str, form: Form, trace: Trace[Any, Any]
) -> list[bytes | bytearray | memoryview]:
    """A run's whole answer as pieces of JSON (joined: what :func:`trace_response` sends),
    narrations in ``lang``, in ``form``. A run the API waits for has it written in its
    simulation process, right after the simulation (``RunService.submit(answer=…)``,
    app.web.answers): the app worker then sends bytes, without unpickling the trace or writing
    megabytes of JSON."""
    return render_pieces(_parts(sim, trace, lang, form))


def _localized(
    body: dict[str, Any], trace: Trace[Any, Any], lang: str | None = None
) -> dict[str, Any]:
    """``body`` with each frame's ``narration`` in ``lang`` (default: the request's language)."""
    lang = lang or i18n.current()
    frames = body.get("frames")
    if lang != i18n.DEFAULT and isinstance(frames, list):
        gettext = i18n.gettext_for(lang)
        for item in frames:
            index = item.get("index") if isinstance(item, dict) else None
            if isinstance(index, int) and 0 <= index < len(trace.frames) and "narration" in item:
                item["narration"] = trace.frames[index].narration.render(gettext)
    return body


def trace_response(
    plugin: Plugin, trace: Trace[Any, Any], gzip: bool = False, form: Form = "compact"
) -> Response:
    """A run's answer, written by orjson (app.web.fastjson; ``gzip``: the client accepts it),
    in ``form``; call it off the event loop: it may be megabytes. Every explainer's runs and
    job results are answered through it."""
    return FastJSONResponse(trace_parts(plugin, trace, form=form), gzip=gzip)


def add_run_route(router: APIRouter, site: Site) -> None:
    """``POST /api/v1/explainers/{name}/run``, documented with each explainer's default preset
    as an example (so the docs show every explainer's params without naming one here)."""
    examples: dict[str, Any] = {}
    for p in site.plugins:
        preset = p.sim.preset(p.sim.default_preset)
        if preset is not None:
            examples[p.name] = {"summary": str(preset.title), "value": dict(preset.params)}
    form_doc = form_query(site)

    @router.post(
        "/explainers/{name}/run",
        responses={
            200: {
                "description": "The run's answer, in the form `form` asks for (the compact one "
                "by default: each explainer's is described under `form`; docs/api.md)"
            },
            202: {"description": "A long run: follow the job at the `Location` URL"},
            422: {"description": "Invalid params, located by `loc`"},
            429: {"description": "Too many long runs from this client"},
            503: {"description": "The simulator is busy: retry after `Retry-After` seconds"},
        },
    )
    async def run_explainer(
        request: Request,
        site: SiteDep,
        plugin: PluginDep,
        params: Any = Body(..., openapi_examples=examples),
        form: Form = form_doc,
    ) -> Response:
        """Run a scenario: validate the params exactly as the pages do, then return the trace.
        A run expected to take more than a second or so answers 202 with a job URL instead; a
        short run is cancelled if the client disconnects before it ends."""
        parsed = plugin.sim.parse(params)
        runs = site.runs
        key = runs.key(plugin.sim, parsed)
        gzip = accepts_gzip(request.headers.get("accept-encoding"))
        found = await run_in_threadpool(runs.cached, key)
        if found is None:
            # the answer is built in the simulation process, as soon as the run ends
            answer = partial(answer_pieces, plugin.sim, i18n.current(), form)
            job = runs.submit(plugin.sim, parsed, key, answer=answer)
            if job.expected_s > site.settings.job_threshold_s:
                raise JobStarted(job)
            # a run joined (the same params asked just before) may be building another
            # language's or form's answer: then this one is written from the trace
            own = job.answer is answer or _same_answer(job.answer, answer)
            done = await wait_watching(request, runs, job, plugin, take_answer=own)
            if isinstance(done, EncodedJSON):  # megabytes: compressed (if at all) off the loop
                return await run_in_threadpool(partial(FastJSONResponse, done, gzip=gzip))
            found = done
        # megabytes of JSON for a large trace: built in a worker thread, not on the event loop
        return await run_in_threadpool(trace_response, plugin, found, gzip, form)


def _same_answer(theirs: object, mine: partial[Any]) -> bool:
    """Whether a joined job's answer is built as this request's would be (the same explainer,
    language and form)."""
    return isinstance(theirs, partial) and theirs.func is mine.func and theirs.args == mine.args


async def wait_watching(
    request: Request, runs: RunService, job: Job, plugin: Plugin, take_answer: bool = True
) -> Trace[Any, Any] | EncodedJSON:
    """Wait for ``job`` in a worker thread while watching the client: if it disconnects, the
    run is cancelled (unless someone else waits for the same run). The answer its simulation
    process built, if it built one for this client (``take_answer``); else the trace."""
    gone = threading.Event()
    done = asyncio.Event()

    async def watch() -> None:
        while not done.is_set():
            if await request.is_disconnected():
                gone.set()
                return
            await asyncio.sleep(0.05)

    watcher = asyncio.create_task(watch())
    try:
        wait = runs.wait_answer if take_answer else runs.wait
        return await run_in_threadpool(wait, job, plugin.sim, gone.is_set)
    finally:
        done.set()
        await watcher


def health(site: SiteDep, request: Request, response: Response) -> dict[str, Any]:
    """Whether this server is ready for a lecture hall. With ``APP_WARM_PRESETS`` (as
    ``scripts/serve`` starts it) the workers run every preset as they start and each renders the
    preset pages for the host it is addressed by (app.web.pagewarm): ready when every preset's
    trace is stored and the answering worker has its pages kept. 200 when ready; 503 with
    ``Retry-After`` while warming, for a load balancer's readiness check (a worker's first
    request of a host starts that host's warm-up). ``store`` says whether the database answers
    (``ok`` / ``unavailable``: then 503 too, as every request that needs it answers)."""
    if not store_health.check(request.app.state.engine):
        response.status_code = 503
        response.headers["Retry-After"] = str(store_health.RETRY_AFTER_S)
        response.headers["Cache-Control"] = "no-store"
        return {"status": "unavailable", "store": "unavailable"}
    stored, total = site.stored_presets(), len(site.preset_keys)
    warmer: PageWarmer | None = getattr(request.app.state, "page_warmer", None)
    out: dict[str, Any] = {"presets": {"stored": stored, "total": total}}
    ready = not site.settings.warm_presets or stored == total
    if warmer is not None:  # there is one exactly when the presets are warmed
        out["pages"] = {"rendered": warmer.rendered, "total": warmer.total}
        ready = ready and warmer.done_for(request.headers.get("host", "")) is not False
    if not ready:
        response.status_code = 503
        response.headers["Retry-After"] = "5"
    response.headers["Cache-Control"] = "no-store"
    return {"status": "ready" if ready else "warming", "store": "ok", **out}


def router_for(site: Site) -> APIRouter:
    """The API router of one app (its run examples come from that app's explainers)."""
    router = APIRouter(prefix="/api/v1", tags=["api"])
    router.add_api_route("/explainers", list_explainers, methods=["GET"])
    router.add_api_route(
        "/health",
        health,
        methods=["GET"],
        responses={503: {"description": "warming up, or the store unavailable"}},
    )
    add_run_route(router, site)
    return router
