"""A toy explainer defined only here: a counter that climbs to a limit. It exists to prove that
the explainer contract needs no edit of generic code (player, editor, share, embed, export, API)
nor of the shared catalogs: its Chinese words ship in its own catalog (``locale/``) and its
Chinese lesson (``LESSON_ZH``) goes to ``content/zh-CN/``, as docs/adding-an-explainer.md says."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from app.sim.core import (
    LINUX_6_4,
    Explainer,
    Field,
    Frame,
    Limits,
    ParamError,
    Preset,
    Progress,
    ResultKind,
    SourceRef,
    Trace,
    msg,
)
from app.sim.core.validate import Checker
from app.web.editor import EditorSpec, FieldSpec, Group
from app.web.plugin import Action, Plugin, Thumbnail, WebView


class CounterState(TypedDict):
    value: int
    limit: int


ToyTrace = Trace[CounterState, None]


class ToyParams:
    __slots__ = ("limit", "start")

    def __init__(self, start: int, limit: int) -> None:
        self.start, self.limit = start, limit

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToyParams) and (self.start, self.limit) == (
            other.start,
            other.limit,
        )

    def __hash__(self) -> int:
        return hash((self.start, self.limit))


class ToyExplainer(Explainer[ToyParams, CounterState, None]):
    name = "toy"
    title = msg("Toy counter")
    summary = msg("Counts from start to limit, one step at a time.")
    sim_version = "toy-1"
    source = LINUX_6_4
    presets = (
        Preset(
            slug="count",
            title=msg("Count to five"),
            params={"start": 0, "limit": 5},
            lesson="toy-count",
        ),
    )
    default_preset = "count"
    limits = Limits(max_work=50, unit=msg("steps"), work_per_second=1e6)
    result_kinds = (
        ResultKind(key="ok", label=msg("ok")),
        ResultKind(key="done", label=msg("reached {result}"), tone="warn"),
    )

    def parse(self, raw: Any) -> ToyParams:
        if not isinstance(raw, dict):
            raise ParamError.single((), "params must be an object")
        c = Checker()
        c.unknown(raw, ("start", "limit"), ())
        start = c.integer(raw, "start", (), default=0, ge=0, le=1000)
        limit = c.integer(raw, "limit", (), default=5, ge=1, le=1000)
        if not c.issues and limit - start > self.limits.max_work:
            c.add(
                ("limit",), f"at most {self.limits.max_work:g} steps; you asked for {limit - start}"
            )
        if not c.issues and limit <= start:
            c.add(("limit",), "limit must be above start")
        if c.issues:
            raise ParamError(c.issues)
        return ToyParams(start, limit)

    def dump(self, params: ToyParams) -> dict[str, Any]:
        return {"start": params.start, "limit": params.limit}

    def cost(self, params: ToyParams) -> float:
        return params.limit - params.start

    def run(self, params: ToyParams, progress: Progress | None = None) -> ToyTrace:
        frames = []
        total = params.limit - params.start
        for i, v in enumerate(range(params.start, params.limit + 1)):
            if progress is not None:
                progress(i, total)
            frames.append(
                Frame(
                    index=i,
                    op="inc" if i else "start",
                    result="done" if v == params.limit else "ok",
                    narration=msg("The counter is {value}.", value=v),
                    source=SourceRef(function="toy_inc", path="toy/counter.c", line=v + 1),
                    state=CounterState(value=v, limit=params.limit),
                    fields=(Field(name="value", value=v, changed=i > 0),),
                    mark="top" if v == params.limit else None,
                )
            )
        return Trace(
            explainer=self.name,
            sim_version=self.sim_version,
            params=params,
            frames=tuple(frames),
            series=None,
        )

    def public_json(self, trace: ToyTrace) -> dict[str, Any]:
        return {"values": [f.state["value"] for f in trace.frames]}


def picture(trace: ToyTrace, frame: Frame[CounterState]) -> str:
    v = frame.state["value"]
    return (
        f'<svg viewBox="0 0 200 40" class="toy-picture" role="img"><rect width="{v * 4 + 1}" '
        f'height="20" id="toy-bar"/><text x="4" y="36">{v}</text></svg>'
    )


# a WebView[CounterState, None]: mypy checks picture (and static, thumbnail draw) against the
# trace ToyExplainer.run returns
VIEW: WebView[CounterState, None] = WebView(
    picture=picture,
    editor=EditorSpec(
        groups=(
            Group(
                key=None,
                legend=msg("Counter"),
                fields=(
                    FieldSpec(key="start", label=msg("start"), kind="int"),
                    FieldSpec(key="limit", label=msg("limit"), kind="int"),
                ),
            ),
        )
    ),
    actions=(Action(key="again", label=msg("Count again"), path="presets/count"),),
    thumbnail=Thumbnail(preset="count", step=3),
    # its own words in Chinese: tests/contract/locale/zh_CN/LC_MESSAGES/messages.po
    locale=Path(__file__).resolve().parent / "locale",
)

TOY = Plugin(sim=ToyExplainer(), web=VIEW)

LESSON = """---
title: Count to five
explainer: toy
preset: count
summary: A counter, to test the contract.
---
A toy lesson.

## Step 2
The counter passes two.
"""

LESSON_ZH = """---
title: 数到五
explainer: toy
preset: count
summary: 一个计数器，用来检验约定。
---
玩具课程。

## Step 2
计数器经过二。
"""
