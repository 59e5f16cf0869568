"""The congestion-control view: charts drawn once per trace, and a per-step card of the moment.

The charts share one time axis with a cursor the stepper moves (static/explainers/cwnd/chart-cursor.js);
each step's card shows the TCP congestion-avoidance state and BBR mode at that instant.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Mapping
from html import escape
from typing import Any

from app.sim.congestion.bbr import MODE_NAMES as BBR_MODES
from app.sim.congestion.flow import CA_NAMES as CA_STATES
from app.sim.congestion.run import CwndState, CwndTrace
from app.sim.core import Frame, Message, msg
from app.sim.core.i18n import Param, join
from app.web import i18n
from app.web.explainers.cwnd.charts import (
    FlowSeries,
    cwnd_figure,
    fairness_figure,
    x_span,
    zoom_windows,
)


def _t(message: Message | str) -> str:
    """A message in the request's language, escaped for HTML text."""
    return escape(i18n.render(message))


def _at(flow: FlowSeries, key: str, t: float) -> Any:
    """A sampled series at ``t``: the first sample at or after it (every ``sample_ms``)."""
    times = flow.get("t") or []
    values = flow.get(key) or []
    if not times or not values:
        return None
    i = max(0, min(len(values) - 1, bisect_left(times, t - 1e-9)))
    return values[i]


# The step's own numbers, where the event recorded them: the narration quotes these, while the
# sampled series (every 10 ms by default) may already show a later value.
Moment = Mapping[str, object]


def _now(moment: Moment, flow: FlowSeries, key: str, t: float) -> Any:
    """``key`` at this step: the event's own value, else the sampled series at ``t``."""
    value = moment.get(key)
    return value if value is not None else _at(flow, key, t)


def _mode(moment: Moment, flow: FlowSeries, t: float) -> Any:
    """BBR's mode at this step: the one a mode change enters, else the sampled mode."""
    return moment.get("to") if moment.get("event") == "bbr_mode" else _at(flow, "bbr_mode", t)


def _pills(label: Message, options: tuple[str, ...], current: object) -> str:
    items = "".join(
        f'<li class="pill on" aria-current="true">{opt}</li>'
        if opt == current
        else f'<li class="pill">{opt}</li>'
        for opt in options
    )
    return (
        f'<div class="pill-row"><span class="pill-label">{_t(label)}</span>'
        f'<ul class="pills">{items}</ul></div>'
    )


def _cubic_driver(flow: FlowSeries, t: float) -> str:
    """Which of CUBIC's two targets sets cwnd growth at ``t``: the cubic W(t) or W_est."""
    w_cubic, w_est = _at(flow, "w_cubic", t), _at(flow, "w_est", t)
    if not isinstance(w_cubic, (int, float)) or not isinstance(w_est, (int, float)):
        return ""
    nums = {"w_cubic": f"{w_cubic:.0f}", "w_est": f"{w_est:.0f}"}
    if w_est > w_cubic:
        text = msg(
            "W(t) {w_cubic} · W_est {w_est} segments: the Reno-friendly estimate drives cwnd "
            "(W_est is above the cubic curve)",
            **nums,
        )
    else:
        text = msg(
            "W(t) {w_cubic} · W_est {w_est} segments: the cubic curve drives cwnd (W(t) is at "
            "or above W_est)",
            **nums,
        )
    return (
        f'<p class="moment-detail" data-driver="{"reno" if w_est > w_cubic else "cubic"}">'
        f"{_t(text)}</p>"
    )


def _bbr_model(moment: Moment, flow: FlowSeries, t: float) -> str:
    """BBR's model at ``t``: bottleneck bandwidth, min_rtt and the pacing gain it applies (as
    the narration words them: bandwidth to 0.1 Mbit/s, min_rtt to 0.01 ms)."""
    bw, rtt = _now(moment, flow, "bw_mbps", t), _now(moment, flow, "min_rtt_ms", t)
    gain = _at(flow, "pacing_gain", t)
    bits: list[Message | str] = []
    if isinstance(bw, (int, float)):
        bits.append(msg("max bw {bw} Mbit/s", bw=f"{bw:.1f}"))
    if isinstance(rtt, (int, float)):
        bits.append(msg("min_rtt {rtt} ms", rtt=f"{rtt:.2f}"))
    if isinstance(gain, (int, float)):
        bits.append(msg("pacing gain {gain}", gain=f"{gain:.2f}"))
    return f'<p class="moment-detail">{_t(join(" · ", bits))}</p>' if bits else ""


def _options(trace: CwndTrace, moment: Moment, idx: int, flow: FlowSeries, t: float) -> str:
    """The flow's receive window against what is in flight, and its ECN marks, if it has them."""
    flows = trace.summary.get("flows", ())
    info = flows[idx] if idx < len(flows) else {}
    bits: list[Message | str] = []
    rwnd = info.get("rwnd_segments")
    if isinstance(rwnd, int):
        bits.append(
            msg(
                "receive window {rwnd} segments · in flight {inflight}",
                rwnd=rwnd,
                inflight=str(_now(moment, flow, "inflight", t)),
            )
        )
    if info.get("ecn"):
        bits.append(
            msg("ECN negotiated: {marks} CE marks in the whole run", marks=info["ce_marks"])
        )
    return f'<p class="moment-detail">{_t(join(" · ", bits))}</p>' if bits else ""


def _slot(html: str, shown: bool) -> str:
    """A row of the card; a row another flow of the run needs is kept, invisible, so the card
    has one height for the whole run and the charts above it can take the rest of the box."""
    return html if shown else f'<div class="moment-slot" aria-hidden="true">{html}</div>'


def picture(trace: CwndTrace, frame: Frame[CwndState]) -> str:
    state = frame.state
    moment: Moment = state
    flows = trace.series["flows"]
    kinds = {str(f.get("cc", "")) for f in flows}
    idx = state.get("flow")
    t = float(frame.time if frame.time is not None else state.get("t", 0.0))
    parts = [f'<div class="cwnd-moment" id="cwnd-moment" data-time="{t:.6f}">']
    if isinstance(idx, int) and 0 <= idx < len(flows):
        flow = flows[idx]
        cc = str(flow.get("cc", ""))
        cwnd = _now(moment, flow, "cwnd", t)
        head = msg("flow {index} ({cc}) · cwnd {cwnd} segments", index=idx, cc=cc, cwnd=str(cwnd))
        parts.append(
            f'<p class="moment-head" data-cwnd="{escape(str(cwnd))}"><b>t = {t:.3f} s</b> · '
            f"{_t(head)}</p>"
        )
        parts.append(_pills(msg("CA state"), CA_STATES, _now(moment, flow, "ca_state", t)))
        if "bbr" in kinds:
            model = _bbr_model(moment, flow, t) if cc == "bbr" else ""
            if not model:
                model = _bbr_model({}, {"t": [t], "bw_mbps": [0.0], "min_rtt_ms": [0.0]}, t)
            bbr = _pills(msg("BBR mode"), BBR_MODES, _mode(moment, flow, t)) + model
            parts.append(_slot(bbr, cc == "bbr"))
        if "cubic" in kinds:
            driver = _cubic_driver(flow, t) if cc == "cubic" else ""
            if not driver:
                driver = _cubic_driver({"t": [t], "w_cubic": [0.0], "w_est": [0.0]}, t)
            parts.append(_slot(driver, cc == "cubic"))
        parts.append(_options(trace, moment, idx, flow, t))
    else:
        parts.append(f'<p class="moment-head"><b>t = {t:.3f} s</b></p>')
    parts.append("</div>")
    return "".join(parts)


def static(trace: CwndTrace) -> str:
    # static/explainers/cwnd/cwnd.css puts the chart first, then the step's card and fields,
    # then .cwnd-after (the rest of the run): chart and card share the picture box
    # steps bunched in time zoom the chart to their stretch (static/explainers/cwnd/chart-cursor.js)
    times = [f.time if f.time is not None else 0.0 for f in trace.frames]
    t0, t1 = x_span(trace.series)
    windows, steps = zoom_windows(times, t0, t1)
    zoom = json.dumps({"full": [t0, t1], "windows": windows, "steps": steps}, separators=(",", ":"))
    html = [
        f'<div class="chart" data-cursor="1" data-zoom="{escape(zoom)}">',
        cwnd_figure(trace.series, div_id="cwnd-chart", windows=windows),
        "</div>",
        '<div class="cwnd-after">',
    ]
    summary = trace.summary
    flows = summary.get("flows", ())
    if len(flows) > 1:
        html.append(
            '<div class="chart">' + fairness_figure(summary, div_id="fairness-chart") + "</div>"
        )
    html.append(summary_table(summary))
    html.append("</div>")
    return "".join(html)


def _num(value: object, spec: str = ".1f") -> str:
    """A summary number, or a dash where the run produced none (e.g. no RTT sample yet)."""
    return format(value, spec) if isinstance(value, (int, float)) else "–"


def summary_table(summary: Mapping[str, Any]) -> str:
    rows = []
    for f in summary.get("flows", ()):
        rows.append(
            "<tr>"
            f"<td>{escape(str(f.get('index', '')))}</td><td>{escape(str(f.get('cc', '')))}</td>"
            f"<td>{_num(f.get('goodput_mbps'), '.2f')}</td><td>{_num(f.get('retransmits'), 'd')}</td>"
            f"<td>{_num(f.get('rtos'), 'd')}</td><td>{_num(f.get('rtt_mean_ms'))}</td>"
            f"<td>{_num(f.get('rtt_p95_ms'))}</td></tr>"
        )
    util = summary.get("utilisation")
    # The numbers are bold: the message carries <b> markers, its parameters are plain figures.
    # fairness compares flows: with one flow it is 1 by definition and says nothing
    figures: dict[str, Param] = {
        "b": "\x00",
        "_b": "\x01",
        "util": _num(util * 100 if isinstance(util, (int, float)) else None),
        "jain": _num(summary.get("jain_fairness"), ".3f"),
        "drops": _num(summary.get("drops"), "d"),
        "rtt": _num(summary.get("rtt_mean_ms")),
        "p95": _num(summary.get("rtt_p95_ms")),
    }
    if len(summary.get("flows", ())) > 1:
        line = msg(
            "Utilisation {b}{util} %{_b} · Jain's fairness {b}{jain}{_b} · drops {b}{drops}{_b} · "
            "mean RTT {b}{rtt} ms{_b} (p95 {p95} ms)",
            **figures,
        )
    else:
        line = msg(
            "Utilisation {b}{util} %{_b} · drops {b}{drops}{_b} · mean RTT {b}{rtt} ms{_b} "
            "(p95 {p95} ms)",
            **figures,
        )
    head = (
        "<p class='summary-line'>"
        + _t(line).replace("\x00", "<b>").replace("\x01", "</b>")
        + "</p>"
    )
    red = summary.get("red")
    if isinstance(red, Mapping):
        marks = msg(
            "RED between {lo} and {hi} packets (max_p {max_p}): {marks} packets marked CE, "
            "{drops} dropped",
            lo=f"{red['min_packets']:g}",
            hi=f"{red['max_packets']:g}",
            max_p=f"{red['max_p']:g}",
            marks=red["prob_mark"] + red["forced_mark"],
            drops=red["prob_drop"] + red["forced_drop"],
        )
        head += f"<p class='summary-line'>{_t(marks)}</p>"
    title = _t(msg("Summary of the whole run"))
    heads = "".join(
        f"<th>{_t(h)}</th>"
        for h in (
            msg("flow"),
            msg("cc"),
            msg("goodput Mbit/s"),
            msg("retransmits"),
            msg("RTOs"),
            msg("mean RTT ms"),
            msg("p95 RTT ms"),
        )
    )
    return (
        f'<details class="run-summary" open><summary>{title}</summary>'
        + head
        + '<div class="table-scroll" tabindex="0"><table class="fields summary-table"><thead><tr>'
        + heads
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div></details>"
    )
