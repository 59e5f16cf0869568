"""Tables. A saved scenario keeps its params and sim_version, not its trace (opening it runs the
params again); finished runs are kept apart in the ``trace`` table (:class:`StoredTrace`), a
cache any worker may fill and read."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import BigInteger, LargeBinary
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    # Aware: SQLModel's datetime columns refuse naive values (and read back as UTC).
    return datetime.now(UTC)


class VisitorSession(SQLModel, table=True):
    __tablename__ = "visitor_session"

    id: str = Field(primary_key=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow)
    last_seen: datetime = Field(default_factory=utcnow, index=True)


class Progress(SQLModel, table=True):
    """The last step a visitor saw of one walkthrough ("continue where you left off")."""

    session_id: str = Field(primary_key=True, foreign_key="visitor_session.id", max_length=64)
    walkthrough: str = Field(primary_key=True, max_length=200)
    step: int = 0
    count: int = 0
    title: str = Field(default="", max_length=200)
    url: str = Field(default="", max_length=400)
    updated_at: datetime = Field(default_factory=utcnow)


class Scenario(SQLModel, table=True):
    """An immutable shared scenario."""

    id: str = Field(primary_key=True, max_length=32)
    explainer: str = Field(index=True, max_length=40)
    params_json: str
    sim_version: str = Field(max_length=40)
    title: str | None = Field(default=None, max_length=200)
    created_at: datetime = Field(default_factory=utcnow)
    forked_from: str | None = Field(default=None, max_length=32)
    session_id: str | None = Field(default=None, index=True, max_length=64)


class StoredTrace(SQLModel, table=True):
    """A finished run, content-addressed by (explainer, sim_version, canonical params): every
    worker and every restart shares it. ``data`` is the trace, pickled and zlib-compressed."""

    __tablename__ = "trace"

    key: str = Field(primary_key=True, max_length=64)
    explainer: str = Field(max_length=40)
    sim_version: str = Field(max_length=40)
    size: int = 0  # bytes of data, compressed
    created_at: datetime = Field(default_factory=utcnow)
    data: bytes = Field(sa_type=LargeBinary)


class RateLimit(SQLModel, table=True):
    """Hits of one quota key (a session or a hashed client address) in one fixed window."""

    __tablename__ = "rate_limit"

    key: str = Field(primary_key=True, max_length=80)
    window_start: int = Field(primary_key=True, sa_type=BigInteger)
    hits: int = 0


class SharedJob(SQLModel, table=True):
    """A long run as every app worker sees it: the worker running it writes its state and
    progress; a worker asked about it (its client's next poll may reach any worker) reads them,
    records the interest (``seen_at``) and may ask for a cancel. Times are Unix seconds."""

    __tablename__ = "job"

    key: str = Field(primary_key=True, max_length=64)
    explainer: str = Field(max_length=40)
    state: str = Field(max_length=16)  # running | done | cancelled | failed
    progress: float = 0.0
    expected_s: float = 0.0
    started_at: float
    seen_at: float
    cancel: bool = False
    error: str = Field(default="", max_length=300)


class LiveClass(SQLModel, table=True):
    """A live class: students follow the step its lecturer moves to. Only a hash of the
    lecturer's token is kept; ``student_secret`` signs the tokens students get on joining.
    ``seq`` is the id of its last event (:class:`ClassEvent`). Times are Unix seconds."""

    __tablename__ = "live_class"

    id: str = Field(primary_key=True, max_length=32)
    code: str = Field(max_length=12, unique=True)
    token_hash: str = Field(max_length=64)
    student_secret: str = Field(max_length=64)
    explainer: str = Field(max_length=40)
    params_json: str
    page_path: str = Field(max_length=400)  # the walkthrough's player page (without ``step``)
    count: int  # steps of its trace
    step: int = 0
    seq: int = 0
    joined: int = 0
    client_key: str = Field(max_length=80, index=True)
    created_at: float
    active_at: float


class ClassEvent(SQLModel, table=True):
    """One event of a class's stream (``step``, ``question``, ``reveal``), numbered from 1: the
    number is the SSE event id a reconnecting student resumes after (``Last-Event-ID``)."""

    __tablename__ = "class_event"

    class_id: str = Field(primary_key=True, max_length=32)
    seq: int = Field(primary_key=True)
    kind: str = Field(max_length=16)
    data_json: str
    at: float


class ClassQuestion(SQLModel, table=True):
    """A multiple-choice question asked at one step; words are stored as message ids and
    params (JSON) and rendered in each reader's language."""

    __tablename__ = "class_question"

    id: str = Field(primary_key=True, max_length=32)
    class_id: str = Field(max_length=32, index=True)
    step: int
    answer_step: int
    prompt_json: str
    choices_json: str
    explanation_json: str
    correct: int
    revealed: bool = False
    created_at: float


class ClassAnswer(SQLModel, table=True):
    """One student's answer to one question (the primary key makes a second one a conflict)."""

    __tablename__ = "class_answer"

    question_id: str = Field(primary_key=True, max_length=32)
    student: str = Field(primary_key=True, max_length=32)
    choice: int


class Recording(SQLModel, table=True):
    """A user's own recording (``stepscope record``) or packet capture, as uploaded: the
    original bytes and the parsed JSON (``GET /api/v1/recordings/{id}``), both zlib-compressed;
    ``size`` is their stored bytes together (what eviction counts). Immutable."""

    __tablename__ = "recording"

    id: str = Field(primary_key=True, max_length=32)
    kind: str = Field(max_length=16)  # cwnd | tcp | path | capture
    title: str = Field(default="", max_length=200)
    session_id: str | None = Field(default=None, index=True, max_length=64)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    size: int = 0
    original: bytes = Field(sa_type=LargeBinary)
    parsed: bytes = Field(sa_type=LargeBinary)
