"""Reads and writes of live classes (no HTTP here): a class, its numbered events, questions
and answers. Appending events bumps the class's ``seq`` in the same transaction, so event ids
are gap-free and ordered on SQLite and PostgreSQL alike; on PostgreSQL each event is also
announced with ``pg_notify`` at commit, which every app process listening hears (see
:mod:`app.web.classes.hub`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, delete, func, text, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from app.store.models import ClassAnswer, ClassEvent, ClassQuestion, LiveClass

CHANNEL = "stepscope_class"
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read off a projector
CODE_LEN = 6
SNAPSHOT_AFTER = 500  # a reconnect that missed more events than this gets the current state


@dataclass(frozen=True, slots=True)
class Event:
    class_id: str
    seq: int
    kind: str  # "step" | "question" | "reveal" | "skip"
    data: str  # JSON

    def payload(self) -> str:
        return json.dumps({"c": self.class_id, "s": self.seq, "k": self.kind, "d": self.data})

    @classmethod
    def from_payload(cls, text_: str) -> Event:
        d = json.loads(text_)
        return cls(str(d["c"]), int(d["s"]), str(d["k"]), str(d["d"]))


class TooManyClasses(Exception):
    pass


class AlreadyAnswered(Exception):
    pass


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_ok(row: LiveClass, token: str) -> bool:
    return hmac.compare_digest(row.token_hash, _hash(token))


def student_token(row: LiveClass) -> str:
    sid = secrets.token_urlsafe(12)
    return f"{sid}.{_sign(row, sid)}"


def _sign(row: LiveClass, sid: str) -> str:
    return hmac.new(row.student_secret.encode(), sid.encode(), "sha256").hexdigest()[:32]


def student_of(row: LiveClass, token: str) -> str | None:
    """The student id a token was issued to by this class, or None."""
    sid, _, sig = token.partition(".")
    if not sid or len(sid) > 32 or not hmac.compare_digest(sig, _sign(row, sid)):
        return None
    return sid


def _session(engine: Engine) -> Session:
    return Session(engine, expire_on_commit=False)


def create(
    engine: Engine,
    *,
    explainer: str,
    params_json: str,
    page_path: str,
    count: int,
    step: int,
    client_key: str,
    limit: int,
    idle_s: float,
    now: float,
) -> tuple[LiveClass, str]:
    """A new class at ``step`` and its lecturer token; TooManyClasses past ``limit`` open
    classes of this client. Classes idle past ``idle_s`` are deleted on the way."""
    with _session(engine) as db:
        _expire(db, now - idle_s)
        open_ = db.exec(
            select(func.count())
            .select_from(LiveClass)
            .where(LiveClass.client_key == client_key, col(LiveClass.active_at) > now - idle_s)
        ).one()
        if open_ >= limit:
            raise TooManyClasses
        token = secrets.token_urlsafe(24)
        for _attempt in range(8):
            row = LiveClass(
                id=secrets.token_urlsafe(12),
                code="".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LEN)),
                token_hash=_hash(token),
                student_secret=secrets.token_hex(16),
                explainer=explainer,
                params_json=params_json,
                page_path=page_path,
                count=count,
                step=step,
                client_key=client_key,
                created_at=now,
                active_at=now,
            )
            db.add(row)
            try:
                db.commit()
            except IntegrityError:  # the code is taken: draw another
                db.rollback()
                continue
            append(engine, row.id, [("step", {"step": step})], now=now)
            return row, token
    raise RuntimeError("no free class code")  # pragma: no cover - 32**6 codes


def _expire(db: Session, before: float) -> None:
    gone = list(db.exec(select(LiveClass.id).where(col(LiveClass.active_at) < before)).all())
    if not gone:
        return
    qids = list(
        db.exec(select(ClassQuestion.id).where(col(ClassQuestion.class_id).in_(gone))).all()
    )
    db.exec(delete(ClassAnswer).where(col(ClassAnswer.question_id).in_(qids)))
    db.exec(delete(ClassQuestion).where(col(ClassQuestion.class_id).in_(gone)))
    db.exec(delete(ClassEvent).where(col(ClassEvent.class_id).in_(gone)))
    db.exec(delete(LiveClass).where(col(LiveClass.id).in_(gone)))
    db.commit()


def get(engine: Engine, class_id: str) -> LiveClass | None:
    with _session(engine) as db:
        return db.get(LiveClass, class_id)


def by_code(engine: Engine, code: str) -> LiveClass | None:
    with _session(engine) as db:
        return db.exec(select(LiveClass).where(LiveClass.code == code.upper())).first()


def count_join(engine: Engine, class_id: str) -> None:
    with _session(engine) as db:
        db.exec(
            update(LiveClass)
            .where(col(LiveClass.id) == class_id)
            .values(joined=LiveClass.joined + 1)
        )
        db.commit()


def append(
    engine: Engine,
    class_id: str,
    items: Sequence[tuple[str, dict[str, Any]]],
    *,
    now: float,
    step: int | None = None,
) -> list[Event]:
    """Append events to the class's stream (and move it to ``step``), in one transaction."""
    with _session(engine) as db:
        values: dict[str, Any] = {"seq": LiveClass.seq + len(items), "active_at": now}
        if step is not None:
            values["step"] = step
        db.exec(update(LiveClass).where(col(LiveClass.id) == class_id).values(**values))
        last = db.exec(select(LiveClass.seq).where(LiveClass.id == class_id)).one()
        first = last - len(items) + 1
        events = []
        for i, (kind, data) in enumerate(items):
            ev = Event(class_id, first + i, kind, json.dumps({**data, "at": now}))
            events.append(ev)
            db.add(ClassEvent(class_id=class_id, seq=ev.seq, kind=kind, data_json=ev.data, at=now))
        if engine.dialect.name == "postgresql":
            for ev in events:
                notify = text("SELECT pg_notify(:c, :p)").bindparams(c=CHANNEL, p=ev.payload())
                db.exec(notify)  # type: ignore[call-overload]
        db.commit()
        return events


def latest_seq(engine: Engine, class_id: str) -> int:
    with _session(engine) as db:
        found = db.exec(select(LiveClass.seq).where(LiveClass.id == class_id)).first()
        return int(found or 0)


def events_after(engine: Engine, class_id: str, after: int | None) -> list[Event]:
    """The events after id ``after``; for a new listener (None), or one that missed more than
    SNAPSHOT_AFTER, the current state: the last step and any question still open after it (not
    revealed or skipped since)."""
    with _session(engine) as db:
        if after is not None:
            rows = db.exec(
                select(ClassEvent)
                .where(ClassEvent.class_id == class_id, col(ClassEvent.seq) > after)
                .order_by(col(ClassEvent.seq))
                .limit(SNAPSHOT_AFTER + 1)
            ).all()
            if len(rows) <= SNAPSHOT_AFTER:
                return [Event(r.class_id, r.seq, r.kind, r.data_json) for r in rows]
        last_step = db.exec(
            select(ClassEvent)
            .where(ClassEvent.class_id == class_id, ClassEvent.kind == "step")
            .order_by(col(ClassEvent.seq).desc())
        ).first()
        out = [last_step] if last_step else []
        question = db.exec(
            select(ClassEvent)
            .where(
                ClassEvent.class_id == class_id,
                col(ClassEvent.kind).in_(("question", "reveal", "skip")),
            )
            .order_by(col(ClassEvent.seq).desc())
        ).first()
        if question is not None and question.kind == "question":
            out.append(question)
        out.sort(key=lambda r: r.seq)
        return [Event(r.class_id, r.seq, r.kind, r.data_json) for r in out]


# --- questions -----------------------------------------------------------------------------


def add_question(engine: Engine, row: ClassQuestion) -> None:
    with _session(engine) as db:
        db.add(row)
        db.commit()


def asked_at(engine: Engine, class_id: str, step: int) -> bool:
    """Whether the class was asked a question at ``step`` already."""
    with _session(engine) as db:
        found = db.exec(
            select(ClassQuestion.id).where(
                ClassQuestion.class_id == class_id, ClassQuestion.step == step
            )
        ).first()
    return found is not None


def question(engine: Engine, class_id: str, question_id: str) -> ClassQuestion | None:
    with _session(engine) as db:
        found = db.get(ClassQuestion, question_id)
    return found if found is not None and found.class_id == class_id else None


def answer(engine: Engine, question_id: str, student: str, choice: int) -> None:
    with _session(engine) as db:
        db.add(ClassAnswer(question_id=question_id, student=student, choice=choice))
        try:
            db.commit()
        except IntegrityError as exc:
            raise AlreadyAnswered from exc


def counts(engine: Engine, q: ClassQuestion) -> list[int]:
    with _session(engine) as db:
        rows = db.exec(
            select(ClassAnswer.choice, func.count())
            .where(ClassAnswer.question_id == q.id)
            .group_by(col(ClassAnswer.choice))
        ).all()
    out = [0] * len(json.loads(q.choices_json))
    for choice, n in rows:
        if 0 <= choice < len(out):
            out[choice] = int(n)
    return out


def mark_revealed(engine: Engine, question_id: str) -> bool:
    """Close the question; False when it was closed already."""
    with _session(engine) as db:
        done = db.exec(
            update(ClassQuestion)
            .where(col(ClassQuestion.id) == question_id, col(ClassQuestion.revealed).is_(False))
            .values(revealed=True)
        )
        db.commit()
        return bool(done.rowcount)
