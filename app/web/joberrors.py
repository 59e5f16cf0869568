"""A failed job's error, in the language of whoever asks about it.

A job ends in one worker and is followed from any (its state is shared in the database, see
app.web.runs), so what a failure says is stored as text — but the people following it read
different languages. :func:`describe` stores the failure's message id and values
(``msg:{"id": …, "params": …}``, nested messages alike); :func:`render` writes it in the
request's language when the job's state is asked for. Failures come with a message (a run's
trace or a simulation process over its limit, a process that died, refused params); any other
error is named in a translated sentence. Text stored otherwise (too long to store as a message,
or by an older version) is shown as it is.
"""

from __future__ import annotations

import json
from typing import Any

from app.sim.core import Message, ParamError, msg
from app.sim.core.i18n import join
from app.web import i18n

PREFIX = "msg:"
MAX_STORED = 300  # characters the shared job's error column holds


def message_of(exc: BaseException) -> Message:
    """What ``exc`` says, as a message."""
    if isinstance(exc, ParamError) and exc.issues:
        return join("; ", [i.message for i in exc.issues])
    found = getattr(exc, "message", None)
    if isinstance(found, Message):
        return found
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return msg("the simulation stopped with an error ({error})", error=detail[:200])


def _encode(message: Message | str) -> Any:
    if isinstance(message, str):
        return message
    params = {k: _encode(v) if isinstance(v, Message) else v for k, v in message.params.items()}
    return {"id": message.id, "params": params} if params else {"id": message.id}


def _decode(data: Any) -> Message:
    params = {
        k: _decode(v) if isinstance(v, dict) else v for k, v in dict(data.get("params", {})).items()
    }
    return Message(str(data["id"]), params)


def describe(exc: BaseException) -> str:
    """The stored form of a failure (at most :data:`MAX_STORED` characters)."""
    message = message_of(exc)
    stored = PREFIX + json.dumps(_encode(message), ensure_ascii=False, separators=(",", ":"))
    if len(stored) <= MAX_STORED:
        return stored
    return message.render()[:MAX_STORED]


def render(stored: str, lang: str | None = None) -> str:
    """A stored failure in ``lang`` (default: the request's language)."""
    if not stored.startswith(PREFIX):
        return stored
    try:
        message = _decode(json.loads(stored[len(PREFIX) :]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return stored
    return i18n.render(message, lang)
