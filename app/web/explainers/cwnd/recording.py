"""A user's ``cwnd`` recording beside the congestion model (issue 23): the recorded and the
modelled cwnd, ssthresh and smoothed RTT on the explainer's own chart (one cursor over both),
the two sides' values at the step, and the comparison table of their sawtooths.

The trace comes from :func:`app.sim.congestion.recorded.recorded_trace`; the chart is
:func:`~app.web.explainers.cwnd.charts.cwnd_figure` with the machine as one flow and the model
as another, so the view's scripts (plotly.js, charts.js, chart-cursor.js) draw it as they draw a
run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from app.sim.congestion.params import CC_NAMES
from app.sim.congestion.recorded import (
    RecordedSeries,
    RecordedState,
    RecordedTrace,
    recorded_trace,
)
from app.sim.core import Frame, Message, msg
from app.web import i18n
from app.web.explainers.cwnd.charts import cwnd_figure, x_span, zoom_windows
from app.web.plugin import RecordingView


def _t(message: Message | str) -> str:
    return escape(i18n.render(message))


def _v(value: object, spec: str = ".0f", none: str = "–") -> str:
    return format(value, spec) if isinstance(value, (int, float)) else none


MACHINE, MODEL = msg("machine"), msg("model")
VARIABLE = msg("measure")
SIDE_BY_SIDE = msg("Machine and model side by side")
KIND_HEAD: dict[str, Message] = {
    "tick": msg("both sides at this moment"),
    "machine": msg("the machine reduces its window"),
    "model": msg("the model reduces its window"),
}


def picture(trace: RecordedTrace, frame: Frame[RecordedState]) -> str:
    """The step's card: when, what happens, and both sides' values then."""
    state = frame.state
    t = float(frame.time if frame.time is not None else state.get("t", 0.0))
    kind = state.get("kind", "tick")
    head = f"<b>t = {t:.3f} s</b> · {_t(KIND_HEAD.get(kind, KIND_HEAD['tick']))}"
    if "factor" in state:
        head += (
            f' · <span translate="no">ssthresh {_v(state.get("after"))} / cwnd '
            f"{_v(state.get('before'))} = {state['factor']:.2f}</span>"
        )
    rows = []
    for key, label, spec, none in (
        ("cwnd", "cwnd", ".0f", "–"),
        ("ssthresh", "ssthresh", ".0f", "∞"),
        ("srtt_ms", _t(msg("smoothed RTT (ms)")), ".1f", "–"),
    ):
        cells = "".join(
            f'<td data-side="{side}" data-key="{key}">'
            f"{_v(dict(values or {}).get(key), spec, none)}</td>"
            for side, values in (("machine", state.get("machine")), ("model", state.get("model")))
        )
        plain = ' translate="no"' if key != "srtt_ms" else ""
        named = f'<th scope="row"{plain}>{label}</th>'
        rows.append(f"<tr>{named}{cells}</tr>")
    return (
        f'<div class="cwnd-moment recorded-moment" id="cwnd-moment" data-time="{t:.6f}" '
        f'data-kind="{escape(kind)}"><p class="moment-head">{head}</p>'
        '<table class="fields recorded-now"><thead><tr>'
        f'<th scope="col">{_t(VARIABLE)}</th>'
        f'<th scope="col">{_t(MACHINE)}</th><th scope="col">{_t(MODEL)}</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def static(trace: RecordedTrace) -> str:
    """The chart (machine and model over one time axis, zooming like a run's) and, under the
    step's card, the comparison table."""
    times = [f.time if f.time is not None else 0.0 for f in trace.frames]
    series = trace.series
    t0, t1 = x_span(series)
    windows, steps = zoom_windows(times, t0, t1)
    zoom = json.dumps({"full": [t0, t1], "windows": windows, "steps": steps}, separators=(",", ":"))
    return (
        f'<div class="chart" data-cursor="1" data-zoom="{escape(zoom)}">'
        + cwnd_figure(
            series,
            div_id="cwnd-chart",
            title=i18n.render(msg("Your recording and the model")),
            windows=windows,
        )
        + '</div><div class="cwnd-after">'
        + comparison_table(trace.summary)
        + link_form(trace)
        + "</div>"
    )


LINK_LEGEND = msg("The model’s link (from the recording; edit to compare)")
CC_LABEL = msg("congestion control")
RUN_AGAIN = msg("Run the model again")
LINK_FIELDS: tuple[tuple[str, Message, str], ...] = (
    ("rate_mbit", msg("bottleneck rate (Mbit/s)"), "any"),
    ("rtt_ms", msg("base RTT (ms)"), "any"),
    ("buffer_bytes", msg("bottleneck buffer (bytes)"), "1"),
)


def link_form(trace: RecordedTrace) -> str:
    """The model's link and algorithm, editable: a GET form back to this page, whose fields
    are the view's overrides (``app.web.recordings.overrides_of``), so the model runs again for
    the link the user types while the recording stays as it was."""
    p = trace.params
    values = {"rate_mbit": p.rate_mbit, "rtt_ms": p.rtt_ms, "buffer_bytes": p.buffer_bytes}
    inputs = "".join(
        f'<label>{_t(label)} <input name="{key}" type="number" min="0" step="{step}" '
        f'value="{escape(format(values[key], "g"))}" required></label>'
        for key, label, step in LINK_FIELDS
    )
    options = "".join(
        f'<option value="{name}"{" selected" if name == p.cc else ""}>{name}</option>'
        for name in CC_NAMES
    )
    return (
        '<form class="recorded-link" method="get" data-link-form="1">'
        f"<fieldset><legend>{_t(LINK_LEGEND)}"
        f"</legend>{inputs}"
        f'<label>{_t(CC_LABEL)} <select name="cc">{options}</select></label> '
        f'<button type="submit" class="button">{_t(RUN_AGAIN)}</button>'
        "</fieldset></form>"
    )


ROWS: tuple[tuple[str, Message, str], ...] = (
    ("reductions", msg("window reductions"), "d"),
    ("peak", msg("peak: mean cwnd just before a reduction (segments)"), ".1f"),
    ("period_s", msg("sawtooth period (s)"), ".2f"),
    ("decrease", msg("multiplicative decrease (cwnd after / before)"), ".3f"),
    ("first_loss_s", msg("time to the first loss (s)"), ".3f"),
    ("srtt_mean_ms", msg("mean smoothed RTT (ms)"), ".1f"),
)


def comparison_table(summary: Mapping[str, Any]) -> str:
    """Machine and model side by side, each measured by app.sim.congestion.sawtooth."""
    metrics = summary.get("metrics", {})
    machine, model = metrics.get("machine", {}), metrics.get("model", {})
    body = "".join(
        f'<tr data-metric="{key}"><th scope="row">{_t(label)}</th>'
        f'<td data-side="machine">{_v(machine.get(key), spec)}</td>'
        f'<td data-side="model">{_v(model.get(key), spec)}</td></tr>'
        for key, label, spec in ROWS
    )
    link = summary.get("link", {})
    line = msg(
        "The model ran {cc} over {rate} Mbit/s with a base RTT of {rtt} ms and a {buffer}-byte "
        "buffer (MSS {mss}).",
        cc=str(summary.get("cc", "")),
        rate=_v(link.get("rate_mbit"), "g"),
        rtt=_v(link.get("rtt_ms"), "g"),
        buffer=_v(link.get("buffer_bytes"), "d"),
        mss=_v(link.get("mss"), "d"),
    )
    notes = [line]
    if summary.get("estimated"):
        notes.append(
            msg(
                "Estimated from the recording (it gave none): {fields}.",
                fields=", ".join(summary["estimated"]),
            )
        )
    notes.append(
        msg(
            "ssthresh is drawn as tcp_probe reports it on both sides (tcp_current_ssthresh: "
            "the real one during CWR and Recovery, else at least ¾ of cwnd)."
        )
    )
    kernel = summary.get("kernel")
    if kernel:
        notes.append(msg("Recorded on Linux {release}.", release=str(kernel)))
    paragraphs = "".join(f"<p class='summary-line'>{_t(n)}</p>" for n in notes)
    return (
        f'<details class="run-summary recorded-compare" open><summary>'
        f"{_t(SIDE_BY_SIDE)}</summary>{paragraphs}"
        '<div class="table-scroll" tabindex="0"><table class="fields summary-table">'
        f"<thead><tr><th scope='col'>{_t(VARIABLE)}</th><th scope='col'>{_t(MACHINE)}</th>"
        f"<th scope='col'>{_t(MODEL)}</th></tr></thead><tbody>{body}</tbody></table>"
        "</div></details>"
    )


RECORDING: RecordingView[RecordedState, RecordedSeries] = RecordingView(
    kinds=("cwnd",),
    trace=recorded_trace,
    picture=picture,
    static=static,
)
