"""Everything the player template needs for one trace: each frame's picture, panel and table."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

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
    try:
        return json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
    except RecursionError as exc:  # JSON nested ~1000 levels deep
        raise ValueError("params nested too deeply") from exc


def clamp_step(step: int | None, count: int) -> int:
    if step is None or count == 0:
        return 0
    return max(0, min(step, count - 1))


# A page carries at most this many rendered frames; the player fetches others when needed, so a
# 500-step scenario with many skbs stays a page of a few MB instead of tens.
FRAME_WINDOW = 120
FRAME_CHUNK_MAX = 200


def render_frames(
    explainer: Explainer, trace: Trace, start: int, stop: int, lesson: Lesson | None = None
) -> list[RenderedFrame]:
    """Pictures and notes of frames ``start`` ≤ index < ``stop``."""
    view = view_for(explainer.name)
    notes = lesson.step_notes if lesson else {}
    return [
        RenderedFrame(
            frame=f,
            picture=Markup(view.picture(trace, f)),
            note=Markup(notes.get(f.index, "")),
        )
        for f in trace.frames[max(start, 0) : max(stop, 0)]
    ]


def frame_window(step: int, count: int, size: int = FRAME_WINDOW) -> tuple[int, int]:
    """The frames a page embeds: all of a short trace, else ``size`` around ``step``."""
    if count <= size:
        return 0, count
    start = max(0, min(step - size // 4, count - size))
    return start, start + size


def player_context(
    explainer: Explainer,
    trace: Trace,
    *,
    raw_params: Any,
    step: int | None,
    preset: Preset | None = None,
    lesson: Lesson | None = None,
    title: str | None = None,
    all_frames: bool = False,
) -> dict[str, Any]:
    view = view_for(explainer.name)
    count = len(trace.frames)
    current = clamp_step(step, count)
    start, stop = (0, count) if all_frames else frame_window(current, count)
    frames = render_frames(explainer, trace, start, stop, lesson)
    marks = [{"index": f.index, "mark": f.mark, "op": f.op} for f in trace.frames if f.mark]
    token = encode_params(raw_params)
    source_query = {"preset": preset.slug} if preset else {"p": token}
    times = [f.time for f in trace.frames] if any(f.time is not None for f in trace.frames) else []
    return {
        "explainer": explainer,
        "trace": trace,
        "frames": frames,
        "count": count,
        "step": current,
        "current": frames[current - start] if frames else None,
        "frames_url": f"/explainers/{explainer.name}/frames?{urlencode(source_query)}",
        "frame_times": times,
        "marks": marks,
        "preset": preset,
        "lesson": lesson,
        "title": title or (lesson.title if lesson else preset.title if preset else explainer.title),
        "raw_params": raw_params,
        "params_token": token,
        # progress ("continue at step N") is kept per preset page; shared scenarios set their own
        "walkthrough_key": f"/explainers/{explainer.name}/presets/{preset.slug}" if preset else "",
        "static_html": Markup(view.static(trace)) if view.static else Markup(""),
        "view_scripts": view.scripts,
    }
