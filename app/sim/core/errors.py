"""Input errors a user can cause.

Simulations validate their own parameters (stdlib only) and raise :class:`ParamError` with one
:class:`ParamIssue` per problem. The web layer turns it into HTTP 422 with the same ``loc`` and
``msg`` shape FastAPI uses, so the API, the editor and saved scenarios share one validator.

An issue's words are a :class:`~app.sim.core.i18n.Message` (``msg("{key} is required",
key=...)``) so the web layer can answer in the reader's language; ``issue.msg`` stays the English
text for callers that need a string. A plain ``str`` is still accepted (it is wrapped as a
message without parameters and shown as it is in every language).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.sim.core.i18n import Message


@dataclass(frozen=True, slots=True, init=False)
class ParamIssue:
    """One problem: where it is (a path of keys and indexes) and what to change."""

    loc: tuple[str | int, ...]
    message: Message

    def __init__(self, *, loc: tuple[str | int, ...], msg: Message | str) -> None:
        object.__setattr__(self, "loc", loc)
        object.__setattr__(self, "message", msg if isinstance(msg, Message) else Message(msg))

    @property
    def msg(self) -> str:
        """The English text."""
        return self.message.render()

    def text(self, gettext: Callable[[str], str] | None = None) -> str:
        """The text in the language ``gettext`` translates to (English without one)."""
        return self.message.render(gettext)

    def as_dict(self, gettext: Callable[[str], str] | None = None) -> dict[str, object]:
        return {"loc": list(self.loc), "msg": self.text(gettext), "type": "value_error"}

    def __reduce__(self) -> tuple[Callable[..., ParamIssue], tuple[tuple[str | int, ...], Message]]:
        return (_issue, (self.loc, self.message))


def _issue(loc: tuple[str | int, ...], message: Message) -> ParamIssue:
    return ParamIssue(loc=loc, msg=message)


class ParamError(ValueError):
    """Parameters a simulation refuses; carries every issue found, not just the first."""

    def __init__(self, issues: list[ParamIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(f"{_fmt(i.loc)}: {i.msg}" for i in issues))

    def __reduce__(self) -> tuple[type[ParamError], tuple[list[ParamIssue]]]:
        # pickled whole (a run refused inside a simulation process comes back to the worker as
        # this error, a 422, not as a broken process pool)
        return (type(self), (list(self.issues),))

    @classmethod
    def single(cls, loc: tuple[str | int, ...], msg: Message | str) -> ParamError:
        return cls([ParamIssue(loc=loc, msg=msg)])


def _fmt(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in loc) or "params"
