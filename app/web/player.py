"""The player: one :func:`render_player` for every page that shows a walkthrough (preset,
custom, shared, embedded, offline export), and the frame rendering they share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from app.sim.core import Frame, Message, Trace, msg
from app.sim.core.i18n import join
from app.web import i18n
from app.web.content import Lesson
from app.web.glossary import Glossary, glossary_for
from app.web.plugin import Plugin
from app.web.sources import Source, matching_preset
from app.web.templating import render

# A page carries at most this many rendered frames; the player fetches others when needed, so a
# 500-step scenario with many skbs stays a page of a few MB instead of tens.
FRAME_WINDOW = 120
FRAME_CHUNK_MAX = 200


@dataclass(frozen=True, slots=True)
class RenderedFrame:
    frame: Frame[Any]
    picture: Markup
    narration: str
    narration_html: Markup  # the narration with glossary terms defined where they appear
    notes: tuple[str, ...]
    badge: str  # the result kind's label
    tone: str  # "ok" | "warn" | "fatal"
    note: Markup  # the lesson's "what to notice" for this step, if any


def clamp_step(step: int | None, count: int) -> int:
    if step is None or count == 0:
        return 0
    return max(0, min(step, count - 1))


def render_frames(
    plugin: Plugin,
    trace: Trace[Any, Any],
    start: int,
    stop: int,
    lesson: Lesson | None = None,
    glossary: Glossary | None = None,
) -> list[RenderedFrame]:
    """Pictures, words and notes of frames ``start`` ≤ index < ``stop``."""
    notes = lesson.step_notes if lesson else {}
    gettext = i18n.gettext_for()
    out = []
    for f in trace.frames[max(start, 0) : max(stop, 0)]:
        kind = plugin.sim.result_kind(f.result)
        text = f.narration.render(gettext)
        out.append(
            RenderedFrame(
                frame=f,
                picture=Markup(plugin.web.picture(trace, f)),
                narration=text,
                narration_html=glossary.annotate(text) if glossary else Markup(escape(text)),
                notes=tuple(n.render(gettext) for n in f.notes),
                badge=result_label(plugin, f.result),
                tone=kind.tone,
                note=Markup(notes.get(f.index, "")),
            )
        )
    return out


def reader_glossary(request: Request) -> Glossary:
    """The glossary in the language of this request."""
    return glossary_for(request.app.state.site.content.folder, i18n.current())


def result_label(plugin: Plugin, result: str) -> str:
    """The badge text of a frame result, from the explainer's declared result kinds."""
    label = plugin.sim.result_kind(result).label
    return Message(label.id, {**label.params, "result": result}).render(i18n.gettext_for())


def frame_window(step: int, count: int, size: int = FRAME_WINDOW) -> tuple[int, int]:
    """The frames a page embeds: all of a short trace, else ``size`` around ``step``."""
    if count <= size:
        return 0, count
    start = max(0, min(step - size // 4, count - size))
    return start, start + size


PICTURE_BUDGET = 1_000_000  # bytes of step pictures one page embeds; the player fetches the rest


def within_budget(
    frames: list[RenderedFrame], start: int, current: int, budget: int = PICTURE_BUDGET
) -> tuple[int, list[RenderedFrame]]:
    """The frames around ``current`` whose pictures fit ``budget`` bytes (the current one
    always), growing three steps ahead for each one behind; returns their start and list.
    Big pictures (a step that draws hundreds of requests or buffers) would otherwise make a page of
    megabytes that the browser parses in one long task."""
    sizes = [len(f.picture) for f in frames]
    if sum(sizes) <= budget:
        return start, frames
    lo = hi = current - start
    used = sizes[lo]
    turn = 0
    while True:
        back = turn % 4 == 3
        nxt = lo - 1 if back else hi + 1
        if not 0 <= nxt < len(frames):
            back = not back
            nxt = lo - 1 if back else hi + 1
            if not 0 <= nxt < len(frames):
                break
        if used + sizes[nxt] > budget:
            break
        used += sizes[nxt]
        if back:
            lo = nxt
        else:
            hi = nxt
        turn += 1
    return start + lo, frames[lo : hi + 1]


MAX_MARKS = 120  # ticks on the scrubber; denser marks are grouped so each stays visible


def scrubber_marks(frames: tuple[Frame[Any], ...], count: int) -> list[dict[str, Any]]:
    """Ticks for the scrubber: one per marked frame, or, when there are more than fit, one per
    stretch of the bar holding the first mark there and how many it stands for."""
    marked = [f for f in frames if f.mark]
    if len(marked) <= MAX_MARKS:
        return [{"index": f.index, "mark": f.mark, "op": f.op} for f in marked]
    groups: dict[int, list[Frame[Any]]] = {}
    for f in marked:
        groups.setdefault(f.index * MAX_MARKS // max(count, 1), []).append(f)
    out = []
    for bucket in sorted(groups):
        members = groups[bucket]
        op = members[0].op
        if len(members) > 1:
            # the marks are catalog words (the scrubber shows a lone mark as _(mark) too)
            kinds = join(msg(", "), [Message(k) for k in sorted({str(m.mark) for m in members})])
            more = msg("{op} (+{n} more: {kinds})", op=op, n=len(members) - 1, kinds=kinds)
            op = i18n.render(more)
        out.append({"index": members[0].index, "mark": members[0].mark, "op": op})
    return out


# A sentence ends at ". " (a full stop and a space: "sock.c" and "1.5" go on) or at "。".
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")


def transcript(frames: tuple[Frame[Any], ...]) -> list[dict[str, Any]]:
    """Every step as one line (time, kind, the first sentence of its narration): the event list
    beside the player, the page's text transcript for screen readers and a printable handout."""
    out = []
    gettext = i18n.gettext_for()
    for f in frames:
        text = f.narration.render(gettext)
        first = _SENTENCE_END.split(text, maxsplit=1)[0]
        if len(first) > 160:
            first = first[:159] + "…"
        out.append({"index": f.index, "time": f.time, "kind": f.mark or f.op, "text": first})
    return out


def player_context(
    source: Source,
    trace: Trace[Any, Any],
    *,
    step: int | None,
    all_frames: bool = False,
    glossary: Glossary | None = None,
) -> dict[str, Any]:
    plugin = source.plugin
    count = len(trace.frames)
    current = clamp_step(step, count)
    start, stop = (0, count) if all_frames else frame_window(current, count)
    frames = render_frames(plugin, trace, start, stop, source.lesson, glossary)
    if not all_frames:
        start, frames = within_budget(frames, start, current)
    marks = scrubber_marks(trace.frames, count)
    source_query = {"preset": source.preset.slug} if source.preset else {"p": source.params_token}
    times = [f.time for f in trace.frames] if any(f.time is not None for f in trace.frames) else []
    ended = trace.ended_early
    return {
        "plugin": plugin,
        "explainer": plugin.sim,
        "actions": plugin.web.actions,
        "source": source,
        "trace": trace,
        "frames": frames,
        "count": count,
        "step": current,
        "current": frames[current - start] if frames else None,
        "frames_url": f"/explainers/{plugin.name}/frames?{urlencode(source_query)}",
        "frame_times": times,
        "marks": marks,
        "transcript": transcript(trace.frames),
        "preset": source.preset,
        # the walkthrough picker's choice: a shared or custom scenario that is a preset unchanged
        # shows that walkthrough, not "Custom scenario"
        "picker_preset": source.preset or matching_preset(plugin, source.raw),
        "lesson": source.lesson,
        "scenario": source.scenario,
        "title": source.title,
        "raw_params": source.raw,
        "params_token": source.params_token,
        "walkthrough_key": source.walkthrough_key,
        "source_label": plugin.sim.source.label,
        "ended_label": result_label(plugin, ended) if ended else "",
        "static_html": Markup(plugin.web.static(trace)) if plugin.web.static else Markup(""),
        "view_scripts": plugin.web.scripts,
        "view_styles": plugin.web.styles,
        **source.player_extra,
    }


def render_player(
    request: Request,
    source: Source,
    trace: Trace[Any, Any],
    *,
    step: int | None,
    template: str = "pages/player.html",
    **extra: Any,
) -> HTMLResponse:
    """The player page for ``source`` (``extra`` adds or overrides context: embed options,
    a shared scenario's notes)."""
    ctx = player_context(source, trace, step=step, glossary=reader_glossary(request))
    ctx.update(extra)
    return render(request, template, ctx)


def render_embed(
    request: Request,
    source: Source,
    trace: Trace[Any, Any],
    *,
    step: int | None,
    controls: str,
    theme: str,
    autoplay: bool,
) -> HTMLResponse:
    """The player without the site's chrome, for an iframe; its "open in Stepscope" link goes
    to ``source``'s page."""
    return render_player(
        request,
        source,
        trace,
        step=step,
        template="embed/player.html",
        embed=True,
        controls=controls,
        theme=theme,
        autoplay=autoplay,
        page_url=str(request.base_url).rstrip("/") + source.page_path,
    )


def render_frame_chunk(
    request: Request,
    plugin: Plugin,
    trace: Trace[Any, Any],
    start: int,
    count: int,
    lesson: Lesson | None = None,
) -> HTMLResponse:
    """Frame templates ``start``..``start+count`` of ``trace``: the ones a player fetches
    beyond its page's window."""
    frames = render_frames(plugin, trace, start, start + count, lesson, reader_glossary(request))
    ctx = {"frames": frames, "count": len(trace.frames), "trace": trace, "ended_label": ""}
    return render(request, "partials/frame_templates.html", ctx)
