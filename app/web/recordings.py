"""Users' own recordings (``stepscope record``) and packet captures: upload, store, show.

* ``POST /api/v1/recordings`` takes the file as the raw body (``application/json`` for a
  recording, ``application/vnd.tcpdump.pcap`` for a capture), parses it with
  :mod:`app.recordings` (bounded; 413 over 5 MB, 415 for another type, 422 naming the field or
  byte offset; nothing stored on any error) and answers 201 ``{"id", "url", "kind"}``;
* ``GET /api/v1/recordings/{id}`` answers the parsed recording;
* ``/recordings``: an upload form (multipart) and this browser's recordings;
* ``/r/{id}``: the player over the trace that the recording view of the explainer declaring
  the recording's kind builds (``RecordingView.trace``), drawn by its ``picture``/``static``;
  a kind no explainer declares gets a page with the parsed summary. ``/embed/r/{id}`` is its
  chrome-free player (``/r/{id}/embed`` leads there). The view's trace is built in a
  simulation process within a run's CPU and memory limits (:mod:`app.web.recbuild`: 422 naming
  the limit, 503 naming the wait past it).

Generic: the view is found by kind among the plugins (kinds are data); no explainer is named.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.recordings import parse as rparse
from app.recordings.capture import is_capture
from app.recordings.docs import (
    EXAMPLE_CREATED,
    EXAMPLE_PARSED,
    EXAMPLE_RECORDING,
    GET_DESCRIPTION,
    HOW_TO_RECORD,
    POST_BODY_DESCRIPTION,
)
from app.sim.core import Message, ParamError, Trace, msg
from app.store import repo
from app.store.eviction import TraceEviction
from app.store.models import Recording
from app.web import i18n
from app.web.deps import Autoplay, Controls, StepQuery, Theme, Visitor
from app.web.errors import param_error_detail, response_language, wants_json
from app.web.memo import Memo
from app.web.player import FRAME_CHUNK_MAX, render_embed, render_frame_chunk, render_player
from app.web.plugin import Plugin, RecordingView
from app.web.quotas import check_recording_quota
from app.web.recbuild import RETRY_AFTER_S, BuildWaitExceeded, RecordingBuilder
from app.web.routes.export import attachment, frame_picture, offline_response, step_png
from app.web.security import same_site_form
from app.web.sessions import ensure_visitor
from app.web.site import Site
from app.web.sources import MAX_TOKEN, SiteDep, Source, decode_params, encode_params
from app.web.templating import render

router = APIRouter()
# Built traces of recently opened recordings, weighed in frames (a recording's trace may be as
# large as a run's limits allow: 16 of them, counted alone, could hold gigabytes): ~20,000
# frames is about the largest one trace may have, so one large one pushes the others out.
TRACES: Memo[str, Trace[Any, Any]] = Memo(16, weigh=lambda t: len(t.frames), budget=20_000)
MAX_TITLE = 120

# --- finding the view, storing, reading --------------------------------------------------------


def view_for(site: Site, kind: str) -> tuple[Plugin, RecordingView[Any, Any]] | None:
    """The plugin whose web view declares recordings of ``kind``, and that view."""
    for plugin in site.plugins:
        view = plugin.web.recording
        if view is not None and kind in view.kinds:
            return plugin, view
    return None


def _eviction(request: Request) -> TraceEviction:
    found: TraceEviction | None = getattr(request.app.state, "recording_eviction", None)
    if found is None:
        settings = request.app.state.settings
        found = TraceEviction(
            request.app.state.engine,
            max_mb=settings.recording_store_mb,
            max_days=settings.recording_store_days,
            evict=repo.evict_recordings,
            what="recordings",
        )
        request.app.state.recording_eviction = found
    return found


def _too_large() -> HTTPException:
    limit = rparse.MAX_BYTES
    text = msg(
        "A recording or capture is at most {mb} MB ({limit} bytes).",
        mb=limit // 1_048_576,
        limit=limit,
    )
    return HTTPException(413, i18n.render(text))


def _unsupported(content_type: str) -> HTTPException:
    text = msg(
        "{given} is not a type this takes: send a recording as {json} or a capture (pcap or "
        "pcapng) as {pcap}.",
        given=repr(content_type.split(";", 1)[0][:80] or "no Content-Type"),
        json=rparse.JSON_TYPE,
        pcap=rparse.CAPTURE_TYPE,
    )
    return HTTPException(415, i18n.render(text))


def store(request: Request, body: bytes, what: str, title: str, owner: str | None) -> Recording:
    """Parse (ParamError on bad input: nothing is stored) and store one upload; call it off
    the event loop."""
    if len(body) > rparse.MAX_BYTES:
        raise _too_large()
    parsed = rparse.parse(body, what)
    kind = str(parsed["kind"])
    data = json.dumps(parsed, separators=(",", ":"), ensure_ascii=False).encode()
    eviction = _eviction(request)
    with repo.session_for(request.app.state.engine) as db:
        row = repo.create_recording(
            db=db,
            kind=kind,
            title=title[:MAX_TITLE],
            original=zlib.compress(body, 6),
            parsed=zlib.compress(data, 6),
            owner=owner,
        )
    eviction.stored(row.size)
    eviction.maybe_run()
    return row


def accept(request: Request, body: bytes, what: str, title: str) -> Recording:
    """An upload from this visitor: their session (made now if their browser keeps cookies),
    one hit of their quota (429 past it), then :func:`store`. Call it off the event loop."""
    owner = ensure_visitor(request)
    check_recording_quota(request)
    return store(request, body, what, title, owner)


def parsed_of(row: Recording) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(zlib.decompress(row.parsed))
    return value


def _row(request: Request, recording_id: str) -> Recording:
    with repo.session_for(request.app.state.engine) as db:
        row = repo.get_recording(db=db, recording_id=recording_id)
    if row is None:
        text = msg("No recording has the id {id}.", id=repr(recording_id[:40]))
        raise HTTPException(404, i18n.render(text))
    return row


def recording_json(row: Recording) -> dict[str, Any]:
    return {
        "id": row.id,
        "url": f"/r/{row.id}",
        "title": row.title,
        "created_at": row.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        **parsed_of(row),
    }


# --- the API ---------------------------------------------------------------------------------


@router.post(
    "/api/v1/recordings",
    status_code=201,
    tags=["api"],
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": POST_BODY_DESCRIPTION,
            "content": {
                rparse.JSON_TYPE: {
                    "schema": {"type": "object"},
                    "example": EXAMPLE_RECORDING,
                },
                rparse.CAPTURE_TYPE: {"schema": {"type": "string", "format": "binary"}},
            },
        }
    },
    responses={
        201: {
            "description": "Stored; `url` opens it in the player",
            "content": {"application/json": {"example": EXAMPLE_CREATED}},
        },
        413: {"description": "Over 5 MB"},
        415: {"description": "Not application/json nor application/vnd.tcpdump.pcap"},
        422: {"description": "A field (JSON path in `loc`) or byte offset that is wrong"},
        429: {"description": "Too many uploads from this client in the last hour"},
    },
)
async def upload_recording(
    request: Request, title: str = Query("", max_length=MAX_TITLE)
) -> JSONResponse:
    """Upload a recording or a capture; answers its id, its page and its kind (one of
    ``app.recordings.parse.KINDS``)."""
    content_type = request.headers.get("content-type", "")
    what = rparse.media(content_type)
    if what is None:
        raise _unsupported(content_type)
    body = await request.body()
    if len(body) > rparse.MAX_BYTES:
        raise _too_large()
    row = await run_in_threadpool(accept, request, body, what, title.strip())
    url = f"/r/{row.id}"
    return JSONResponse(
        {"id": row.id, "url": url, "kind": row.kind}, status_code=201, headers={"Location": url}
    )


@router.get(
    "/api/v1/recordings/{recording_id}",
    tags=["api"],
    responses={
        200: {
            "description": GET_DESCRIPTION,
            "content": {"application/json": {"example": EXAMPLE_PARSED}},
        },
        404: {"description": "No recording has this id"},
    },
)
def get_recording(recording_id: str, request: Request) -> JSONResponse:
    """A stored recording, parsed."""
    return JSONResponse(recording_json(_row(request, recording_id)))


# --- pages -----------------------------------------------------------------------------------


def _list_context(request: Request, sid: str | None) -> dict[str, Any]:
    items: list[repo.RecordingItem] = []
    if sid:
        with repo.session_for(request.app.state.engine) as db:
            items = repo.recordings_of(db=db, session_id=sid)
    return {
        "recordings": items,
        "has_session": sid is not None,
        "limit_mb": rparse.MAX_BYTES // 1_048_576,
        "how_to_record": HOW_TO_RECORD,
    }


@router.get("/recordings", response_class=HTMLResponse, include_in_schema=False)
def recordings_page(request: Request, sid: Visitor) -> Response:
    """The upload form and this browser's recordings."""
    return render(request, "pages/recordings.html", _list_context(request, sid))


def _form_errors(
    request: Request, sid: str | None, issues: list[dict[str, Any]], status: int
) -> Response:
    ctx = _list_context(request, sid)
    ctx["issues"] = issues
    return render(request, "pages/recordings.html", ctx, status_code=status)


def _issue(text: Message, loc: str = "file") -> list[dict[str, Any]]:
    return [{"loc": [loc], "msg": i18n.render(text)}]


async def _form_file(request: Request) -> tuple[bytes, str, str, str] | Message:
    """(body, media kind, title, file name) of the form's file, or why there is none."""
    form = await request.form(max_files=1, max_fields=8)
    upload = form.get("file")
    if not isinstance(upload, UploadFile) or not upload.filename:
        return msg("Choose a file to upload.")
    body = await upload.read(rparse.MAX_BYTES + 1)
    if len(body) > rparse.MAX_BYTES:
        return msg(
            "A recording or capture is at most {mb} MB ({limit} bytes).",
            mb=rparse.MAX_BYTES // 1_048_576,
            limit=rparse.MAX_BYTES,
        )
    hint = str(form.get("kind", "auto"))
    name = upload.filename[:MAX_TITLE]
    if hint == "capture" or (hint == "auto" and is_capture(body)):
        what = "capture"
    elif hint in ("auto", "recording"):
        what = "recording"
    else:
        return msg("Choose what the file is: a recording or a capture.")
    title = str(form.get("title", "")).strip()[:MAX_TITLE] or name
    return body, what, title, name


@router.post("/recordings", response_class=HTMLResponse, include_in_schema=False)
async def recordings_upload(request: Request, sid: Visitor) -> Response:
    """The form's upload (multipart): the recording's page, or the form with what is wrong."""
    same_site_form(request)
    got = await _form_file(request)
    if isinstance(got, Message):
        return _form_errors(request, sid, _issue(got), 422)
    body, what, title, _name = got
    try:
        row = await run_in_threadpool(accept, request, body, what, title)
    except ParamError as exc:
        return _form_errors(request, sid, param_error_detail(exc, ()), 422)
    except HTTPException as exc:
        return _form_errors(
            request, sid, [{"loc": ["file"], "msg": str(exc.detail)}], exc.status_code
        )
    return RedirectResponse(f"/r/{row.id}", status_code=303)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordingSource(Source):
    """A recording as the player's source: its links are the recording's (``/r/{id}``, with
    the overrides of its view as ``o``), and it carries the trace its view built."""

    recording: Recording | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def recording_id(self) -> str:
        return self.recording.id if self.recording else ""

    @property
    def kind(self) -> str:
        return "recording"

    @property
    def page_path(self) -> str:
        return f"/r/{self.recording_id}{_overrides_query(self.overrides)}"

    @property
    def embed_path(self) -> str:
        return f"/embed/r/{self.recording_id}{_overrides_query(self.overrides)}"

    @property
    def walkthrough_key(self) -> str:
        return ""  # no "continue where you left off" for a recording

    def export_path(self, what: str) -> str:
        """The link of an export (``html``, ``png``) of what this page shows: the recording
        under the same overrides (the page adds ``step`` and ``lang``)."""
        return f"/r/{self.recording_id}/export/{what}{_overrides_query(self.overrides)}"

    @property
    def player_extra(self) -> dict[str, Any]:
        return {
            "recording": self.recording,
            "recording_kind": self.recording.kind if self.recording else "",
            "frames_url": f"/r/{self.recording_id}/frames{_overrides_query(self.overrides)}",
        }


def _recording_source(
    plugin: Plugin,
    view: RecordingView[Any, Any],
    row: Recording,
    overrides: dict[str, Any],
    trace: Trace[Any, Any],
) -> RecordingSource:
    """The player's source for a recording: the owning plugin with the recording view's
    pictures in place of the model's (the rest of the player is the same). The view has no
    questions: a class on a recording is moved, not asked."""
    web = replace(
        plugin.web,
        picture=view.picture,
        static=view.static,
        still=None,
        question=None,
        actions=(),
        thumbnail=None,
    )
    shadow = Plugin(sim=plugin.sim, web=web, course_order=plugin.course_order)
    return RecordingSource(
        plugin=shadow,
        raw={},
        title=row.title or row.id,
        recording=row,
        overrides=overrides,
        built=trace,
    )


class NotShown(Exception):
    """No stored recording has this id, or no explainer shows its kind."""


def recording_source(
    site: Site, engine: Any, recording_id: str, query: Mapping[str, str]
) -> RecordingSource:
    """The source of ``/r/{recording_id}?{query}`` (a live class follows it): the recording
    with its view's trace under the query's overrides. :class:`NotShown` when there is no such
    recording or no view of its kind; ParamError naming the overrides the view refuses."""
    with repo.session_for(engine) as db:
        row = repo.get_recording(db=db, recording_id=recording_id[:40])
    found = view_for(site, row.kind) if row is not None else None
    if row is None or found is None:
        raise NotShown(recording_id)
    plugin, view = found
    overrides = overrides_from(query)
    trace = _trace(site.recording_builder, view, row, overrides)
    return _recording_source(plugin, view, row, overrides, trace)


# Query parameters of the recording pages that are not overrides of the view
RESERVED = frozenset(("step", "lang", "theme", "controls", "autoplay", "scale", "start", "count"))
MAX_OVERRIDES = 32


def _value(text: str) -> Any:
    """A query value as JSON would give it: a number when it reads as one, else the text."""
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and "." not in text else number


def overrides_of(request: Request) -> dict[str, Any]:
    """The user's overrides of a recording's view (e.g. edited link parameters): ``o``, a
    params token (JSON), or every other query parameter, numbers as numbers."""
    return overrides_from(request.query_params)


def overrides_from(query: Mapping[str, str]) -> dict[str, Any]:
    """:func:`overrides_of` a page's query."""
    if "o" in query:
        raw = decode_params(query["o"][:MAX_TOKEN])
        if not isinstance(raw, dict):
            raise ParamError.single(("o",), msg("must be an object"))
        return raw
    out = {k: _value(v[:200]) for k, v in query.items() if k not in RESERVED}
    if len(out) > MAX_OVERRIDES:
        raise ParamError.single(
            ("query",), msg("has more than {limit} entries", limit=MAX_OVERRIDES)
        )
    return out


def _overrides_query(overrides: dict[str, Any]) -> str:
    return f"?o={encode_params(overrides)}" if overrides else ""


def _trace(
    builder: RecordingBuilder,
    view: RecordingView[Any, Any],
    row: Recording,
    overrides: dict[str, Any] | None = None,
) -> Trace[Any, Any]:
    """The view's trace of a recording, built in a simulation process within a run's limits
    (:mod:`app.web.recbuild`), kept for the next request (pages, frames, exports)."""
    wanted = overrides or {}
    key = row.id + json.dumps(wanted, sort_keys=True, separators=(",", ":"))
    trace = TRACES.get(key)
    if trace is None:
        trace = builder.build(view.trace, parsed_of(row), wanted)
        TRACES.put(key, trace)
    return trace


def _summary_page(request: Request, row: Recording, status: int = 200) -> Response:
    parsed = parsed_of(row)
    return render(
        request,
        "pages/recording_summary.html",
        {
            "row": row,
            "summary": parsed.get("summary", {}),
            "kind": row.kind,
            "parsed_meta": {
                k: parsed.get(k) for k in ("kernel", "link", "tool", "recorded_at") if parsed.get(k)
            },
        },
        status_code=status,
    )


def _player(
    request: Request,
    site: Site,
    recording_id: str,
    step: int | None,
    embed: tuple[str, str, bool] | None = None,
) -> Response:
    """The player over a recording, or with ``embed`` = (controls, theme, autoplay) its
    chrome-free one (whose "open in Stepscope" link keeps this view and its overrides)."""
    row = _row(request, recording_id)
    found = view_for(site, row.kind)
    if found is None:
        return _summary_page(request, row)
    plugin, view = found
    overrides = overrides_of(request)
    try:
        trace = _trace(site.recording_builder, view, row, overrides)
    except ParamError:
        if overrides:  # the user's overrides: a 422 naming them
            raise
        return _summary_page(request, row)
    source = _recording_source(plugin, view, row, overrides, trace)
    if embed is None:
        return render_player(request, source, trace, step=step)
    controls, theme, autoplay = embed
    return render_embed(
        request, source, trace, step=step, controls=controls, theme=theme, autoplay=autoplay
    )


@router.get("/r/{recording_id}", response_class=HTMLResponse, include_in_schema=False)
def recording_page(
    recording_id: str, request: Request, site: SiteDep, step: StepQuery = None
) -> Response:
    """The player over a recording (built off the event loop: this route runs in a thread)."""
    return _player(request, site, recording_id, step)


@router.get("/r/{recording_id}/frames", response_class=HTMLResponse, include_in_schema=False)
def recording_frames(
    recording_id: str,
    request: Request,
    site: SiteDep,
    start: int = Query(0, ge=0, le=1_000_000),
    count: int = Query(60, ge=1, le=FRAME_CHUNK_MAX),
) -> Response:
    source, trace = _opened(request, site, recording_id)
    return render_frame_chunk(request, source.plugin, trace, start, count)


@router.get("/r/{recording_id}/embed", include_in_schema=False)
def recording_embed_link(recording_id: str, request: Request) -> Response:
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(f"/embed/r/{recording_id}{query}", status_code=307)


@router.get("/embed/r/{recording_id}", response_class=HTMLResponse, tags=["embed"])
def recording_embed(
    recording_id: str,
    request: Request,
    site: SiteDep,
    step: StepQuery = None,
    controls: Controls = "full",
    theme: Theme = "light",
    autoplay: Autoplay = False,
) -> Response:
    """A recording's player without the site's chrome, for an iframe."""
    return _player(request, site, recording_id, step, (controls, theme, autoplay))


def _opened(
    request: Request, site: Site, recording_id: str
) -> tuple[RecordingSource, Trace[Any, Any]]:
    """The source and trace of a recording some explainer shows (404 otherwise)."""
    row = _row(request, recording_id)
    found = view_for(site, row.kind)
    if found is None:
        raise HTTPException(404, i18n.render(msg("No explainer shows this kind of recording.")))
    plugin, view = found
    overrides = overrides_of(request)
    trace = _trace(site.recording_builder, view, row, overrides)
    return _recording_source(plugin, view, row, overrides, trace), trace


@router.get("/r/{recording_id}/export/html", response_class=HTMLResponse, tags=["export"])
def recording_export_html(
    recording_id: str,
    request: Request,
    site: SiteDep,
    step: StepQuery = None,
    theme: Theme = "light",
) -> Response:
    """A recording's player as one offline HTML file (every step inside), like a run's."""
    source, trace = _opened(request, site, recording_id)
    name = f"stepscope-recording-{recording_id}.html"
    return offline_response(request, site, source, trace, step=step, theme=theme, name=name)


@router.get(
    "/r/{recording_id}/export/png",
    tags=["export"],
    responses={200: {"content": {"image/png": {}}}, 503: {"description": "No Chromium"}},
)
async def recording_export_png(
    recording_id: str,
    request: Request,
    site: SiteDep,
    step: StepQuery = None,
    theme: Theme = "light",
    scale: int = Query(2, ge=1, le=3),
) -> Response:
    """One step of a recording's player as a PNG, drawn as a run's step is."""
    source, trace = await run_in_threadpool(_opened, request, site, recording_id)
    index, picture = await run_in_threadpool(frame_picture, source, trace, step)
    overrides = _overrides_query(source.overrides)
    key = ("recording", recording_id, overrides, i18n.current(), index, theme, scale)
    data = await step_png(request, site, source, trace, index, picture, key, theme, scale)
    if isinstance(data, Response):
        return data
    name = f"stepscope-recording-{recording_id}-step{index}.png"
    return Response(data, media_type="image/png", headers=attachment(name))


def install(app: FastAPI) -> None:
    app.include_router(router)

    @app.exception_handler(BuildWaitExceeded)
    async def _waited(request: Request, exc: BuildWaitExceeded) -> Response:
        """503 with ``Retry-After`` for a build that waited too long (JSON or a page)."""
        text = i18n.render(exc.message, response_language(request))
        headers = {"Retry-After": str(RETRY_AFTER_S), "Cache-Control": "no-store"}
        if wants_json(request):
            return JSONResponse({"detail": text}, status_code=503, headers=headers)
        ctx = {"status": 503, "title": msg("The simulator is busy"), "message": text}
        return render(request, "pages/error.html", ctx, status_code=503, headers=headers)
