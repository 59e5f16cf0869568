"""The explainer contract: what every simulation declares and does, so generic code needs no
special cases.

An explainer is a subclass of :class:`Explainer` ``[P]`` (``P`` is its frozen params type):

* ``parse(raw) -> P`` validates JSON-shaped input, raising :class:`ParamError` naming every bad
  field; ``dump(params)`` gives the raw form back (``parse(dump(p)) == p``).
* ``cost(params) -> float`` is the work a run will do, in ``limits.unit``, known *before* it
  runs; ``parse`` already refuses more than ``limits.max_work``. The server uses it to decide
  between answering at once and queueing a job.
* ``run(params, progress) -> Trace`` is pure and deterministic. It calls ``progress(done,
  total)`` now and then (in ``limits.unit``); the callback raises :class:`Cancelled` to stop it.
* ``public_json(trace)`` is the explainer's documented JSON (``POST /api/v1/explainers/NAME/run``);
  ``public_json_parts(trace)`` the same, with any top-level part that is quicker written straight
  to JSON given as its bytes (:class:`EncodedJSON`): the API answers from it. An explainer
  whose answer is large may give a compact form of it (``public_json_parts(trace, compact=True)``,
  described by ``compact_form``; decoded, exactly ``public_json``): the API's default.
* Declarations: ``presets`` (each with a lesson), ``source`` (the project steps cite),
  ``result_kinds`` (what a frame's ``result`` can be, with its wording) and ``limits``.

Views live in the web half (``app/web/explainers/<name>/``); ``app/explainers.py`` pairs the
two and is the one list of explainers.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal

from typing_extensions import TypeVar

from app.sim.core.cost import SECONDS_PER_BYTE
from app.sim.core.errors import ParamError
from app.sim.core.i18n import Message
from app.sim.core.sources import SourceProject
from app.sim.core.trace import Trace
from app.sim.core.validate import unsafe_json_issues

P = TypeVar("P")
# The frame-state and series types of the explainer's traces (``Trace[S, X]``); an explainer
# declares them as ``Explainer[Params, State, Series]`` so its web view is checked against them.
S = TypeVar("S", default=Any)
X = TypeVar("X", default=Any)

JSONValue = Any  # JSON-shaped input before validation: anything json.loads can return

Progress = Callable[[float, float], None]
"""``progress(done, total)`` in the explainer's work unit; may raise :class:`Cancelled`."""


@dataclass(frozen=True, slots=True, init=False)
class EncodedJSON:
    """A part of an API answer already written as JSON (UTF-8 bytes, given as one or more
    pieces that joined are the JSON): it goes into the answer as it is, and parses to the value
    :meth:`Explainer.public_json` gives for that part. An answer written piece by piece (a
    large run's, in its simulation process) takes the pieces without joining them first."""

    pieces: tuple[bytes | bytearray | memoryview, ...]

    def __init__(self, *pieces: bytes | bytearray | memoryview) -> None:
        object.__setattr__(self, "pieces", pieces)

    @property
    def data(self) -> bytes:
        """The JSON, joined."""
        pieces = self.pieces
        if len(pieces) == 1 and isinstance(pieces[0], bytes):
            return pieces[0]
        return b"".join(pieces)


class Cancelled(Exception):
    """Raised by a progress callback to stop a run whose result nobody wants any more."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A named scenario with a lesson in ``content/<lang>/<lesson>.md``."""

    slug: str
    title: Message
    params: Mapping[str, JSONValue]  # raw (JSON-shaped) params, parsed like user input
    lesson: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultKind:
    """One value a frame's ``result`` can take, and how the player labels it."""

    key: str  # "ok", "null", "skb_over_panic", "econnrefused", ...
    label: Message  # badge text; may use {result}
    tone: Literal["ok", "warn", "fatal"] = "ok"
    ends_run: bool = False  # True when the scenario stops at this frame (a BUG())


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The largest run one request may ask for, and the unit the cost is counted in."""

    max_work: float
    unit: Message  # e.g. "simulated packet events"
    # Roughly how much work one CPU core does per second; turns a cost into expected seconds.
    work_per_second: float
    # Seconds one core takes per byte of trace produced (building each frame's state, pickling
    # and compressing it): measured per explainer with bench/cost_calibration.py.
    seconds_per_byte: float = SECONDS_PER_BYTE


class Explainer(ABC, Generic[P, S, X]):
    """Base class of every explainer's simulation half (see the module docstring)."""

    name: ClassVar[str]
    title: ClassVar[Message]
    summary: ClassVar[Message]
    sim_version: ClassVar[str]
    source: ClassVar[SourceProject]
    presets: ClassVar[tuple[Preset, ...]]
    default_preset: ClassVar[str]
    limits: ClassVar[Limits]
    result_kinds: ClassVar[tuple[ResultKind, ...]] = (
        ResultKind(key="ok", label=Message("ok"), tone="ok"),
    )
    # The explainer's compact API answer, if it has one: what it changes, for the API's docs
    # (OpenAPI). The API answers in it unless asked ``?form=full`` (:meth:`public_json`).
    compact_form: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every explainer's ``parse`` first refuses what no explainer can take (an integer too
        large for a float, a lone surrogate in a text or a key), naming where it is: one
        check for every entry point (API JSON, editor forms, ``p=`` links, saved scenarios)
        instead of each explainer's validator meeting an OverflowError or a text that cannot
        be written out."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("parse")
        if own is None or getattr(own, "_checks_json", False):
            return

        @functools.wraps(own)
        def parse(self: Explainer[Any, Any, Any], raw: JSONValue) -> Any:
            issues = unsafe_json_issues(raw)
            if issues:
                raise ParamError(issues)
            return own(self, raw)

        parse._checks_json = True  # type: ignore[attr-defined]
        cls.parse = parse  # type: ignore[method-assign]

    @abstractmethod
    def parse(self, raw: JSONValue) -> P:
        """Validate raw params; raise ``ParamError`` with every issue found (after the shared
        check of :meth:`__init_subclass__`)."""

    @abstractmethod
    def dump(self, params: P) -> dict[str, JSONValue]:
        """The raw JSON-shaped form of ``params``."""

    @abstractmethod
    def cost(self, params: P) -> float:
        """The work a run of ``params`` will do, in ``limits.unit``."""

    @abstractmethod
    def run(self, params: P, progress: Progress | None = None) -> Trace[S, X]:
        """Simulate (pure, deterministic); report progress; stop on :class:`Cancelled`."""

    @abstractmethod
    def public_json(self, trace: Trace[S, X]) -> dict[str, JSONValue]:
        """The documented JSON body of a trace (without ``sim_version``, added by the API)."""

    # --- derived, shared by every explainer -------------------------------------------------

    def public_json_parts(
        self, trace: Trace[S, X], compact: bool = False
    ) -> Mapping[str, JSONValue | EncodedJSON]:
        """:meth:`public_json`, each top-level part as a value or already written as JSON
        (:class:`EncodedJSON`; parsed, the same value): what the API encodes and sends. An
        explainer whose answer is large writes its big parts itself, skipping the Python
        objects; ``frames`` stays a list (the API renders each narration in the request's
        language). ``compact``: the explainer's compact form of the answer if it has one
        (:attr:`compact_form`; the API's default, ``?form=full`` asks for the documented one)."""
        return self.public_json(trace)

    def decode_compact(self, answer: dict[str, JSONValue]) -> dict[str, JSONValue]:
        """The documented answer (``?form=full``, parsed) of the API's default one, parsed: the
        compact form decoded (:attr:`compact_form`); any other answer as it is."""
        return answer

    def preset(self, slug: str) -> Preset | None:
        return next((p for p in self.presets if p.slug == slug), None)

    def result_kind(self, key: str) -> ResultKind:
        found = next((k for k in self.result_kinds if k.key == key), None)
        return found or ResultKind(key=key, label=Message("{result}"), tone="warn")

    def expected_bytes(self, params: P) -> float:
        """About the bytes of the run's trace, pickled: what it produces (frames × each
        frame's state), besides what it simulates. Each explainer estimates its own."""
        return 0.0

    def expected_seconds(self, params: P) -> float:
        """The run's time on one core: its simulated work plus building its trace."""
        return (
            self.cost(params) / self.limits.work_per_second
            + self.expected_bytes(params) * self.limits.seconds_per_byte
        )
