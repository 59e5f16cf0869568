"""Everything the player template needs for one trace: each frame's picture, panel and table."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from app.sim.core import Frame, Trace
from app.sim.registry import Explainer, Preset
from app.web.content import Lesson
from app.web.viz import view_for


@dataclass(frozen=True, slots=True)
class RenderedFrame:
    frame: Frame
    picture: Markup
    note: Markup  # the lesson's "what to notice" for this step, if any


def encode_params(raw: Any) -> str:
    """Params as a URL-safe token, so a custom scenario is a plain link."""
    data = json.dumps(raw, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_params(token: str) -> Any:
    padded = token + "=" * (-len(token) % 4)
    return json.loads(base64.urlsafe_b64decode(padded.encode()).decode())


def clamp_step(step: int | None, count: int) -> int:
    if step is None or count == 0:
        return 0
    return max(0, min(step, count - 1))


def player_context(
    explainer: Explainer,
    trace: Trace,
    *,
    raw_params: Any,
    step: int | None,
    preset: Preset | None = None,
    lesson: Lesson | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    view = view_for(explainer.name)
    notes = lesson.step_notes if lesson else {}
    frames = [
        RenderedFrame(
            frame=f,
            picture=Markup(view.picture(trace, f)),
            note=Markup(notes.get(f.index, "")),
        )
        for f in trace.frames
    ]
    count = len(frames)
    current = clamp_step(step, count)
    marks = [{"index": f.index, "mark": f.mark, "op": f.op} for f in trace.frames if f.mark]
    return {
        "explainer": explainer,
        "trace": trace,
        "frames": frames,
        "count": count,
        "step": current,
        "current": frames[current] if frames else None,
        "marks": marks,
        "preset": preset,
        "lesson": lesson,
        "title": title or (lesson.title if lesson else preset.title if preset else explainer.title),
        "raw_params": raw_params,
        "params_token": encode_params(raw_params),
        # progress ("continue at step N") is kept per preset page; shared scenarios set their own
        "walkthrough_key": f"/explainers/{explainer.name}/presets/{preset.slug}" if preset else "",
        "static_html": Markup(view.static(trace)) if view.static else Markup(""),
        "view_scripts": view.scripts,
    }
