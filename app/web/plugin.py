"""The web half of the explainer contract, and the pair (simulation + web) that makes a plugin.

An explainer's web package (``app/web/explainers/<name>/``) exports one :class:`WebView`: how a
frame is drawn (``picture``), what is drawn once per trace (``static``, e.g. charts), the scripts
those need, its stylesheets and npm packages those need, its editor declaration
(:class:`~app.web.editor.EditorSpec`; ``None`` gives the JSON editor), optional extra routes, the toolbar :class:`Action` s it offers and the
:class:`Thumbnail` of a key step its home-page card shows. ``app/explainers.py``
pairs it with the simulation half in a :class:`Plugin`. Generic code reads only these
declarations and never names an explainer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic

from fastapi import APIRouter
from typing_extensions import TypeVar

from app.sim.core import Explainer, Frame, Message, Trace
from app.web.editor import EditorSpec
from app.web.quiz import Question

AnyTrace = Trace[Any, Any]

# An explainer's frame-state and series types: its view is a ``WebView[State, Series]`` whose
# functions receive ``Trace[State, Series]``, checked by mypy against its ``Explainer[P, S, X]``.
P = TypeVar("P", default=Any)
S = TypeVar("S", default=Any)
X = TypeVar("X", default=Any)


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """A toolbar button on the explainer's player: a page under ``/explainers/<name>/``."""

    key: str  # stable id, e.g. "compare"
    label: Message
    path: str  # relative to /explainers/<name>/, e.g. "compare"


@dataclass(frozen=True, slots=True, kw_only=True)
class Thumbnail(Generic[S, X]):
    """The step the home page shows, drawn small, on the explainer's card: step ``step`` of the
    preset ``preset``, drawn by ``draw`` (default: the view's own ``picture``). The home page
    links it to that walkthrough at that step and reads the step's narration as its text."""

    preset: str  # slug of one of the explainer's presets
    step: int  # frame index in that preset's run
    draw: Callable[[Trace[S, X], Frame[S]], str] | None = None  # None: WebView.picture


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordingView(Generic[S, X]):
    """How an explainer shows a user's own recording (``stepscope record``) or capture beside
    its model: the generic recordings pages (``/r/{id}``) ask the view of the explainer that
    declares the recording's kind, and never name an explainer.

    ``trace(recording, overrides)`` turns the parsed recording (the JSON of
    ``GET /api/v1/recordings/{id}``) and the user's overrides (e.g. edited link parameters,
    JSON-shaped, validated by the view: :class:`~app.sim.core.ParamError` on bad input) into a
    trace the player steps through with one cursor over machine and model; ``picture`` and
    ``static`` draw it as :class:`WebView`'s do for a run."""

    kinds: tuple[str, ...]  # the recording kinds it shows (docs/recording-format.md)
    trace: Callable[[Mapping[str, Any], Mapping[str, Any]], Trace[S, X]]
    picture: Callable[[Trace[S, X], Frame[S]], str]
    static: Callable[[Trace[S, X]], str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WebView(Generic[S, X]):
    picture: Callable[[Trace[S, X], Frame[S]], str]  # HTML/SVG for one frame (swapped each step)
    static: Callable[[Trace[S, X]], str] | None = None  # drawn once per trace (charts)
    scripts: tuple[str, ...] = ()  # extra /static or /vendor scripts the view needs
    editor: EditorSpec | None = None  # None: a JSON editor with per-field errors
    router: APIRouter | None = None  # extra routes (mounted as they are declared)
    actions: tuple[Action, ...] = ()
    thumbnail: Thumbnail[S, X] | None = None  # the home page's picture of a key step
    # /static stylesheets the view's pictures need: every page showing the explainer (player,
    # embed, offline and PNG export, the home page's card) links them after the site's app.css
    styles: tuple[str, ...] = ()
    # npm packages its scripts load, as folders under node_modules (e.g. "some-lib/dist"): the
    # app serves each at /vendor/<folder>, so a script is "/vendor/some-lib/dist/some-lib.js"
    packages: tuple[str, ...] = ()
    # what a standalone export of one step shows (the SVG file): (trace, frame) -> SVG/HTML;
    # None: ``picture``. For views whose step needs what ``static`` draws once (a chart).
    still: Callable[[Trace[S, X], Frame[S]], str] | None = None
    # the explainer's own gettext catalog: a folder of <locale>/LC_MESSAGES/messages.po (.mo),
    # consulted for ids the site's catalog (app/locale) lacks; see app.web.i18n.add_catalog
    locale: Path | None = None
    # When a drawn step may be exported (PNG): a JS predicate, e.g. "() => ...", true once
    # whatever the view's scripts draw after load (charts) is on the page; None: at load.
    export_ready: str | None = None
    # "What happens next?": the question this view asks at a step of a trace (live classes and
    # "quiz me"), or None at a step it has none for; see app.web.quiz
    question: Callable[[Trace[S, X], int], Question | None] | None = None
    # a user's recordings of the kinds this explainer shows beside its model (see RecordingView).
    # Its trace's types are its own (a recording's state is not the model's): ``Any`` here stands
    # for "some pair"; each view's ``RecordingView[R, Y]`` declaration checks that its ``trace``
    # produces what its ``picture`` and ``static`` take.
    recording: RecordingView[Any, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Plugin(Generic[P, S, X]):
    """One explainer: its simulation (the contract) and its web view. ``Plugin(sim=..., web=...)``
    infers ``P, S, X`` from the simulation, so mypy rejects a view whose functions take another
    trace than the one the simulation's ``run`` produces."""

    sim: Explainer[P, S, X]
    web: WebView[S, X]
    # Where the explainer sits in the suggested course on the home page (lower comes first:
    # from the packet's own structure up to whole deployments) and the
    # slug of the walkthrough a newcomer should start it with ("" = its first preset).
    course_order: int = 100
    first_walkthrough: str = ""

    @property
    def name(self) -> str:
        return self.sim.name

    @property
    def start_preset(self) -> str:
        """The slug of the walkthrough to start this explainer with."""
        slugs = [p.slug for p in self.sim.presets]
        if self.first_walkthrough in slugs:
            return self.first_walkthrough
        return slugs[0] if slugs else ""
