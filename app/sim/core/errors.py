"""Input errors a user can cause.

Simulations validate their own parameters (stdlib only) and raise :class:`ParamError` with one
:class:`ParamIssue` per problem. The web layer turns it into HTTP 422 with the same ``loc`` and
``msg`` shape FastAPI uses, so the API, the editor and saved scenarios share one validator.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamIssue:
    """One problem: where it is (a path of keys and indexes) and what to change."""

    loc: tuple[str | int, ...]
    msg: str

    def as_dict(self) -> dict[str, object]:
        return {"loc": list(self.loc), "msg": self.msg, "type": "value_error"}


class ParamError(ValueError):
    """Parameters a simulation refuses; carries every issue found, not just the first."""

    def __init__(self, issues: list[ParamIssue]) -> None:
        self.issues = tuple(issues)
        super().__init__("; ".join(f"{_fmt(i.loc)}: {i.msg}" for i in issues))

    @classmethod
    def single(cls, loc: tuple[str | int, ...], msg: str) -> ParamError:
        return cls([ParamIssue(loc=loc, msg=msg)])


def _fmt(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in loc) or "params"
