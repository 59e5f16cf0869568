"""The live-class API: start a class, move it, ask and reveal questions, answer, and the event
stream students follow (server-sent events, resumable with ``Last-Event-ID``).

Only the lecturer moves a class: their token (``Authorization: Bearer …``, answered once when
the class starts, never part of the join link) is checked on every move. A student joins with
the class's code and gets a token of their own, which their answers carry.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool

from app.sim.core import Message, ParamError, msg
from app.store.models import ClassQuestion, LiveClass
from app.web import i18n, quiz
from app.web.classes import store
from app.web.classes.hub import Hub
from app.web.classes.scenario import followed, resolve
from app.web.quotas import client_key
from app.web.sources import SiteDep, Source, run_source

router = APIRouter(tags=["classes"])

IDLE_CHECK_S = 10.0  # a stream that heard nothing this long reads the store (a lost notice)
PING_S = 15  # a comment line this often keeps proxies and phones from closing the stream
NO_LECTURER_TOKEN = msg("This needs the lecturer's token: send it as Authorization: Bearer TOKEN.")
NO_STUDENT_TOKEN = msg(
    "Join the class first: an answer carries the student token POST /api/v1/classes/join "
    "gives, as Authorization: Bearer TOKEN."
)
MESSAGE_KEYS = ("prompt", "choices", "explanation")  # event fields stored as messages


def hub_of(request: Request) -> Hub:
    hub: Hub | None = getattr(request.app.state, "class_hub", None)
    if hub is None:
        hub = Hub(request.app.state.engine)
        request.app.state.class_hub = hub
    return hub


def _fail(status: int, text: Message, **headers: str) -> HTTPException:
    return HTTPException(status, i18n.render(text), headers=headers or None)


def load(request: Request, class_id: str) -> LiveClass:
    """The class, or 404 (no such class) / 410 (it ended: idle for a day)."""
    row = store.get(request.app.state.engine, class_id[:40])
    if row is None:
        raise _fail(404, msg("There is no class with the id {id}.", id=repr(class_id[:40])))
    idle = request.app.state.settings.class_idle_s
    if row.active_at < time.time() - idle:
        raise _fail(
            410, msg("This class has ended: nobody moved it for {hours} hours.", hours=idle // 3600)
        )
    return row


def _bearer(authorization: str | None, missing: Message) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _fail(401, missing, **{"WWW-Authenticate": "Bearer"})
    return token.strip()


Authorization = Annotated[str | None, Header(include_in_schema=False)]


def lecturer(request: Request, class_id: str, authorization: str | None) -> LiveClass:
    """The class, if ``authorization`` carries its lecturer's token (else 401 / 403)."""
    row = load(request, class_id)
    if not store.token_ok(row, _bearer(authorization, NO_LECTURER_TOKEN)):
        raise _fail(403, msg("This token is not this class's lecturer token."))
    return row


def student(request: Request, row: LiveClass, authorization: str | None) -> str:
    token = _bearer(authorization, NO_STUDENT_TOKEN)
    sid = store.student_of(row, token)
    if sid is None:
        raise _fail(403, msg("This token was not given by this class: join it again."))
    return sid


def _check_step(row: LiveClass, step: int, field: str = "step") -> None:
    if not 0 <= step < row.count:
        raise ParamError.single(
            (field,),
            msg(
                "step {step} is outside this walkthrough: its steps are 0 to {last}",
                step=step,
                last=row.count - 1,
            ),
        )


def _publish(request: Request, events: list[store.Event]) -> None:
    hub_of(request).published(events)


# --- start, join, status ---------------------------------------------------------------------


class ClassIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scenario: Annotated[
        str,
        Field(
            min_length=1,
            max_length=200,
            description="A shared scenario's id, or a walkthrough: EXPLAINER/PRESET",
        ),
    ]
    step: Annotated[int, Field(ge=0, le=1_000_000)] = 0


@router.post(
    "/api/v1/classes",
    status_code=201,
    responses={422: {"description": "Unknown scenario"}, 429: {"description": "Too many classes"}},
)
def create_class(body: ClassIn, request: Request, site: SiteDep) -> JSONResponse:
    """Start a live class on a walkthrough or shared scenario: its join code and link for the
    students, and the lecturer's token (keep it: it alone moves the class)."""
    engine = request.app.state.engine
    source = resolve(site, engine, body.scenario)
    trace = run_source(site, source)
    settings = request.app.state.settings
    count = len(trace.frames)
    if body.step >= count:
        raise ParamError.single(
            ("step",),
            msg(
                "step {step} is outside this walkthrough: its steps are 0 to {last}",
                step=body.step,
                last=count - 1,
            ),
        )
    try:
        row, token = store.create(
            engine,
            explainer=source.plugin.name,
            params_json=json.dumps(source.raw),
            page_path=source.page_path,
            count=count,
            step=body.step,
            client_key=client_key(request),
            limit=settings.classes_per_client,
            idle_s=settings.class_idle_s,
            now=time.time(),
        )
    except store.TooManyClasses:
        raise _fail(
            429,
            msg(
                "At most {limit} classes can be open at once from this address; a class ends "
                "after a day nobody moves it.",
                limit=settings.classes_per_client,
            ),
        ) from None
    return JSONResponse(
        {
            "id": row.id,
            "code": row.code,
            "join_url": str(request.url_for("class_join", code=row.code)),
            "lecturer_token": token,
            "presenter_url": f"/classes/{row.id}/present",
            "events_url": f"/api/v1/classes/{row.id}/events",
        },
        status_code=201,
        headers={"Location": f"/api/v1/classes/{row.id}", "Cache-Control": "no-store"},
    )


class JoinIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: Annotated[str, Field(min_length=1, max_length=12, description="The class's join code")]


@router.post("/api/v1/classes/join", status_code=201, responses={404: {"description": "No class"}})
def join_class(body: JoinIn, request: Request) -> JSONResponse:
    """Join a class by its code: a student token (answers carry it) and where to follow."""
    row = store.by_code(request.app.state.engine, body.code.strip())
    if row is None:
        raise _fail(404, msg("No class has the code {code}.", code=repr(body.code.strip())))
    row = load(request, row.id)
    store.count_join(request.app.state.engine, row.id)
    return JSONResponse(
        {
            "id": row.id,
            "student_token": store.student_token(row),
            "events_url": f"/api/v1/classes/{row.id}/events",
            "step": row.step,
            "count": row.count,
        },
        status_code=201,
        headers={"Cache-Control": "no-store"},
    )


@router.get("/api/v1/classes/{class_id}", responses={404: {}, 410: {}})
def class_status(class_id: str, request: Request) -> dict[str, Any]:
    """A class as anyone in it sees it: its step, size and how many joined."""
    row = load(request, class_id)
    return {
        "id": row.id,
        "code": row.code,
        "step": row.step,
        "count": row.count,
        "joined": row.joined,
        "page": row.page_path,
        "listening_here": hub_of(request).listeners(row.id),
    }


# --- the lecturer moves the class ----------------------------------------------------------


class StepIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: Annotated[int, Field(ge=0, le=1_000_000)]


@router.post(
    "/api/v1/classes/{class_id}/step", status_code=204, responses={401: {}, 403: {}, 422: {}}
)
def move_class(
    class_id: str,
    body: StepIn,
    request: Request,
    site: SiteDep,
    authorization: Authorization = None,
) -> Response:
    """Move the class to ``step`` (lecturer): every student following it goes there. A step the
    walkthrough's lesson marks (its ``ask`` steps) also asks the class that step's question, the
    first time the class reaches it; the lecturer may skip it."""
    row = lecturer(request, class_id, authorization)
    _check_step(row, body.step)
    items: list[tuple[str, dict[str, Any]]] = [("step", {"step": body.step})]
    asked = _marked_question(request, site, row, body.step)
    if asked is not None:
        items.append(("question", asked))
    events = store.append(request.app.state.engine, row.id, items, now=time.time(), step=body.step)
    _publish(request, events)
    return Response(status_code=204)


# --- questions -------------------------------------------------------------------------------


class QuestionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: Annotated[int, Field(ge=0, le=1_000_000)]


def question_at(site: SiteDep, source: Source, step: int) -> quiz.Question:
    hook = source.plugin.web.question
    if hook is None:
        raise ParamError.single(
            ("step",), msg("no question at this step: this explainer asks no questions")
        )
    found = hook(run_source(site, source), step)
    if found is None:
        raise ParamError.single(
            ("step",),
            msg(
                "no question at this step: nothing here has an answer the next steps show; "
                "try another step"
            ),
        )
    return found


def ask_steps(site: SiteDep, source: Source) -> tuple[int, ...]:
    """The steps the source's lesson marks for a question (its English file's ``ask``: the
    translation lists the same steps); none without a lesson."""
    if source.lesson is None:
        return ()
    lesson = site.content.lesson(source.lesson.stem, i18n.DEFAULT) or source.lesson
    return lesson.ask_steps


def _marked_question(
    request: Request, site: SiteDep, row: LiveClass, step: int
) -> dict[str, Any] | None:
    """The question event of a marked step the class reaches for the first time, stored."""
    engine = request.app.state.engine
    try:
        source = followed(site, engine, row)
    except ParamError:  # the shared scenario is gone: nothing to ask
        return None
    if step not in ask_steps(site, source) or store.asked_at(engine, row.id, step):
        return None
    try:
        return _open(request, site, row, source, step)
    except ParamError:  # the lesson marks a step without a question (a lesson test catches it)
        return None


def _open(
    request: Request, site: SiteDep, row: LiveClass, source: Source, step: int
) -> dict[str, Any]:
    """Store the question of ``step`` (422 when there is none): its ``question`` event data."""
    q = question_at(site, source, step)
    qid = secrets.token_urlsafe(9)
    stored = ClassQuestion(
        id=qid,
        class_id=row.id,
        step=step,
        answer_step=q.answer_step,
        prompt_json=quiz.dumps(q.prompt),
        choices_json=quiz.dumps(q.choices),
        explanation_json=quiz.dumps(q.explanation),
        correct=q.correct,
        created_at=time.time(),
    )
    store.add_question(request.app.state.engine, stored)
    return {
        "question_id": qid,
        "step": step,
        "prompt": quiz.message_json(q.prompt),
        "choices": [quiz.message_json(c) for c in q.choices],
    }


@router.post(
    "/api/v1/classes/{class_id}/questions", status_code=201, responses={401: {}, 403: {}, 422: {}}
)
def ask(
    class_id: str,
    body: QuestionIn,
    request: Request,
    site: SiteDep,
    authorization: Authorization = None,
) -> JSONResponse:
    """Ask the class the question of ``step`` (lecturer): students get it at once."""
    row = lecturer(request, class_id, authorization)
    _check_step(row, body.step)
    data = _open(request, site, row, followed(site, request.app.state.engine, row), body.step)
    _publish(
        request,
        store.append(request.app.state.engine, row.id, [("question", data)], now=time.time()),
    )
    return JSONResponse(
        {
            "question_id": data["question_id"],
            "step": body.step,
            "prompt": i18n.render(quiz.message_from(data["prompt"])),
            "choices": [i18n.render(quiz.message_from(c)) for c in data["choices"]],
        },
        status_code=201,
    )


def _question(request: Request, row: LiveClass, question_id: str) -> ClassQuestion:
    q = store.question(request.app.state.engine, row.id, question_id[:40])
    if q is None:
        raise _fail(
            404, msg("This class asked no question with the id {id}.", id=repr(question_id[:40]))
        )
    return q


@router.get(
    "/api/v1/classes/{class_id}/questions/{question_id}", responses={401: {}, 403: {}, 404: {}}
)
def results(
    class_id: str, question_id: str, request: Request, authorization: Authorization = None
) -> dict[str, Any]:
    """How the room answered so far, and the right answer (lecturer)."""
    row = lecturer(request, class_id, authorization)
    q = _question(request, row, question_id)
    counts = store.counts(request.app.state.engine, q)
    return {
        "question_id": q.id,
        "step": q.step,
        "prompt": quiz.render_json(q.prompt_json),
        "choices": quiz.render_json(q.choices_json),
        "counts": counts,
        "answers": sum(counts),
        "correct": q.correct,
        "revealed": q.revealed,
    }


@router.post(
    "/api/v1/classes/{class_id}/questions/{question_id}/reveal",
    responses={401: {}, 403: {}, 409: {}},
)
def reveal(
    class_id: str, question_id: str, request: Request, authorization: Authorization = None
) -> dict[str, Any]:
    """Close the question and show the room the answer: the class moves to the step whose
    picture shows it, with the narration saying why (lecturer)."""
    row = lecturer(request, class_id, authorization)
    q = _question(request, row, question_id)
    engine = request.app.state.engine
    if not store.mark_revealed(engine, q.id):
        raise _fail(409, msg("This question is closed already."))
    counts = store.counts(engine, q)
    data = {
        "question_id": q.id,
        "correct": q.correct,
        "counts": counts,
        "answer_step": q.answer_step,
        "explanation": json.loads(q.explanation_json),
    }
    events = store.append(
        engine,
        row.id,
        [("reveal", data), ("step", {"step": q.answer_step})],
        now=time.time(),
        step=q.answer_step,
    )
    _publish(request, events)
    return {"counts": counts, "correct": q.correct, "step": q.answer_step}


@router.post(
    "/api/v1/classes/{class_id}/questions/{question_id}/skip",
    status_code=204,
    responses={401: {}, 403: {}, 404: {}, 409: {}},
)
def skip(
    class_id: str, question_id: str, request: Request, authorization: Authorization = None
) -> Response:
    """Close the question without showing its answer (lecturer): the students' question goes
    away and the class stays at its step. For a question a marked step asked that the lecturer
    does not want now."""
    row = lecturer(request, class_id, authorization)
    q = _question(request, row, question_id)
    engine = request.app.state.engine
    if not store.mark_revealed(engine, q.id):
        raise _fail(409, msg("This question is closed already."))
    events = store.append(engine, row.id, [("skip", {"question_id": q.id})], now=time.time())
    _publish(request, events)
    return Response(status_code=204)


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question_id: Annotated[str, Field(min_length=1, max_length=40)]
    choice: Annotated[int, Field(ge=0, le=100)]


@router.post(
    "/api/v1/classes/{class_id}/answers", status_code=204, responses={401: {}, 403: {}, 409: {}}
)
def answer(
    class_id: str, body: AnswerIn, request: Request, authorization: Authorization = None
) -> Response:
    """A student's answer (one per student and question; a second is 409)."""
    row = load(request, class_id)
    sid = student(request, row, authorization)
    q = _question(request, row, body.question_id)
    if q.revealed:
        raise _fail(
            409,
            msg("This question is closed: its answer was revealed, or the lecturer skipped it."),
        )
    choices = len(json.loads(q.choices_json))
    if body.choice >= choices:
        raise ParamError.single(
            ("choice",),
            msg("choice {choice} is not one of 0 to {last}", choice=body.choice, last=choices - 1),
        )
    try:
        store.answer(request.app.state.engine, q.id, sid, body.choice)
    except store.AlreadyAnswered:
        raise _fail(409, msg("You have answered this question already.")) from None
    return Response(status_code=204)


# --- the stream ------------------------------------------------------------------------------


def localized(hub: Hub, ev: store.Event) -> bytes:
    """The event as SSE bytes in the request's language, encoded once for every student of
    this process reading it in that language (300 students: one encoding, not 300)."""
    key = (ev.class_id, ev.seq, i18n.current())
    found = hub.encoded.get(key)
    if found is not None:
        return found
    data = json.loads(ev.data)
    for name in MESSAGE_KEYS:
        value = data.get(name)
        if isinstance(value, list):
            data[name] = [i18n.render(quiz.message_from(v)) for v in value]
        elif isinstance(value, dict):
            data[name] = i18n.render(quiz.message_from(value))
    text = json.dumps(data, ensure_ascii=False)
    encoded = ServerSentEvent(data=text, event=ev.kind, id=str(ev.seq)).encode()
    hub.encoded.put(key, encoded)
    return encoded


async def _next(queue: asyncio.Queue[store.Event]) -> store.Event | None:
    """The next event handed to this stream, or None after IDLE_CHECK_S without one."""
    try:
        return await asyncio.wait_for(queue.get(), IDLE_CHECK_S)
    except TimeoutError:
        return None


def _last_id(value: str | None) -> int | None:
    try:
        return max(0, int(value)) if value is not None else None
    except ValueError:
        return None


@router.get(
    "/api/v1/classes/{class_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}, 404: {}, 410: {}},
)
async def events(
    class_id: str,
    request: Request,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
) -> EventSourceResponse:
    """The class's events as server-sent events: ``step`` ({step}), ``question`` ({question_id,
    step, prompt, choices}), ``reveal`` ({question_id, correct, counts, answer_step,
    explanation}) and ``skip`` ({question_id}: closed without an answer). A new listener first gets the current step (and the open question); one
    sending ``Last-Event-ID`` gets every event after that id."""
    row = await run_in_threadpool(load, request, class_id)
    engine = request.app.state.engine
    hub = hub_of(request)
    queue = hub.subscribe(row.id)
    after = _last_id(last_event_id)

    async def stream() -> AsyncIterator[bytes]:
        last = after
        read = True  # from the store: at the start, after a gap and after a quiet while
        try:
            while True:
                if read:
                    for ev in await run_in_threadpool(store.events_after, engine, row.id, last):
                        last = ev.seq
                        yield localized(hub, ev)
                    last = last or 0
                got = await _next(queue)
                read = got is None or got.seq > (last or 0) + 1
                if got is None or read or got.seq <= (last or 0):
                    continue
                last = got.seq
                yield localized(hub, got)
        finally:
            hub.unsubscribe(row.id, queue)

    return EventSourceResponse(
        stream(), ping=PING_S, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
