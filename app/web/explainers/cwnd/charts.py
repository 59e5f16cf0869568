"""Plotly figures. This module is the only place that imports Plotly.

Figures get fixed ``div_id``s so the HTML is reproducible; the time cursor is an HTML line that
static/explainers/cwnd/chart-cursor.js lays over each plot (moving it needs no Plotly redraw).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.sim.core import Message, msg
from app.sim.core.i18n import join
from app.web import i18n

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")
EVENT_STYLE = {
    "loss": ("x", "#D55E00"),
    "rto": ("x-thin", "#D55E00"),
    "recovery_enter": ("triangle-down", "#D55E00"),
    "recovery_exit": ("triangle-up", "#009E73"),
    "hystart_exit": ("diamond", "#0072B2"),
    "epoch_start": ("circle-open", "#555555"),
    "bbr_mode": ("square", "#CC79A7"),
}


# Legend names of an event's markers (the event's type, which the JSON keeps in English).
EVENT_NAMES = {
    "loss": msg("loss"),
    "rto": msg("RTO"),
    "recovery_enter": msg("recovery enter"),
    "recovery_exit": msg("recovery exit"),
    "hystart_exit": msg("HyStart exit"),
    "epoch_start": msg("epoch start"),
    "bbr_mode": msg("BBR mode"),
}


def _t(message: Message | str) -> str:
    """A message in the request's language."""
    return i18n.render(message)


def _flow_name(index: object, cc: object) -> str:
    return _t(msg("flow {index} {cc}", index=str(index), cc=str(cc or "")))


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _layout(fig: go.Figure, *, height: int, title: str = "") -> None:
    fig.update_layout(
        height=height,
        margin={"l": 60, "r": 20, "t": 40 if title else 16, "b": 40},
        title={"text": title, "x": 0.01, "font": {"size": 15}} if title else None,
        hovermode="x unified",
        legend={"orientation": "h", "y": -0.08, "x": 0},
        template="plotly_white",
        font={"family": "system-ui, sans-serif", "size": 13},
        uirevision="keep",
    )


def _embed(fig: go.Figure, div_id: str) -> str:
    """A placeholder plus the figure as JSON; static/explainers/cwnd/charts.js draws it once Plotly has loaded,
    so the page (and its "drawing" message) shows before the 4 MB library is parsed."""
    label, loading = _t(msg("Chart")), _t(msg("Drawing the charts…"))
    data = fig.to_json().replace("</", "<\\/")  # no "</script>" inside the JSON
    return (
        f'<div id="{div_id}" class="plotly-pending" data-figure="{div_id}-figure" role="img" '
        f'aria-label="{escape(label, quote=True)}">'
        f'<p class="chart-loading">{escape(loading)}</p></div>'
        f'<script type="application/json" id="{div_id}-figure">{data}</script>'
    )


def cwnd_figure(
    series: Mapping[str, Any],
    *,
    div_id: str,
    title: str = "",
    show_overlay: bool = True,
) -> str:
    """cwnd (+ ssthresh, CUBIC overlay, events), queue, RTT and pacing/delivery rate, one x-axis."""
    flows: Sequence[Mapping[str, Any]] = series.get("flows", ())
    any_bbr = any(f.get("cc") == "bbr" for f in flows)
    rows = 4
    titles = (
        _t(msg("cwnd (segments)")),
        _t(msg("bottleneck queue (packets)")),
        _t(msg("smoothed RTT (ms)")),
        _t(msg("pacing / delivery rate (Mbit/s)")),
    )
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.05,
        row_heights=[0.42, 0.2, 0.19, 0.19],
        subplot_titles=titles,
    )
    for i, flow in enumerate(flows):
        name = _flow_name(i, flow.get("cc", ""))
        colour = _colour(i)
        group = f"flow{i}"
        cubic = show_overlay and flow.get("cc") == "cubic"
        paced = flow.get("cc") == "bbr" or not any_bbr  # with BBR present, show BBR's pacing only
        # (series key, label, subplot row, line style, in the legend, shown)
        lines = (
            ("cwnd", msg("cwnd"), 1, {"color": colour, "width": 2}, True, True),
            (
                "ssthresh",
                msg("ssthresh"),
                1,
                {"color": colour, "width": 1, "dash": "dash"},
                True,
                True,
            ),
            (
                "w_cubic",
                msg("W(t) cubic"),
                1,
                {"color": "#555555", "width": 1, "dash": "dot"},
                True,
                cubic,
            ),
            (
                "w_est",
                msg("Reno-friendly W_est"),
                1,
                {"color": "#009E73", "width": 1, "dash": "dashdot"},
                True,
                cubic,
            ),
            ("srtt_ms", msg("srtt"), 3, {"color": colour, "width": 1.5}, False, True),
            ("pacing_mbps", msg("pacing"), 4, {"color": colour, "width": 1.5}, False, paced),
            (
                "delivery_mbps",
                msg("delivery"),
                4,
                {"color": colour, "width": 1, "dash": "dot"},
                False,
                True,
            ),
        )
        for key, label, row, line, legend, shown in lines:
            if not shown or key not in flow:
                continue
            y = flow[key]
            if key == "ssthresh":  # None (or a huge sentinel) while ssthresh is still "infinite"
                y = [v if v is not None and v < 1e8 else None for v in y]
            fig.add_trace(
                go.Scattergl(
                    x=flow.get("t", []),
                    y=y,
                    name=_t(join(" ", (name, label))),
                    legendgroup=group,
                    showlegend=legend,
                    line=line,
                ),
                row=row,
                col=1,
            )
        _event_markers(fig, flow, name, group)
    queue = series.get("queue", {})
    fig.add_trace(
        go.Scattergl(
            x=queue.get("t", []),
            y=queue.get("packets", []),
            name=_t(msg("queue")),
            line={"color": "#999999", "width": 1.5},
            fill="tozeroy",
            showlegend=False,
        ),
        row=2,
        col=1,
    )
    fig.update_xaxes(title_text=_t(msg("time (s)")), row=rows, col=1)
    _layout(fig, height=760, title=title)
    return _embed(fig, div_id)


def _event_markers(fig: go.Figure, flow: Mapping[str, Any], name: str, group: str) -> None:
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for ev in flow.get("events", ()):
        if ev.get("type") in EVENT_STYLE:
            by_type.setdefault(ev["type"], []).append(ev)
    for kind, events in by_type.items():
        symbol, colour = EVENT_STYLE[kind]
        fig.add_trace(
            go.Scatter(
                x=[e["t"] for e in events],
                y=[e.get("detail", {}).get("cwnd") for e in events],
                mode="markers",
                name=_t(join(" ", (name, EVENT_NAMES[kind]))),
                legendgroup=group,
                showlegend=False,
                marker={
                    "symbol": symbol,
                    "size": 9,
                    "color": colour,
                    "line": {"width": 1.5, "color": colour},
                },
                hovertext=[_event_text(e.get("text", "")) for e in events],
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )


def _event_text(text: object) -> str:
    """An event's sentence in the request's language (the English text if it has no message)."""
    message = getattr(text, "message", None)
    return _t(message) if isinstance(message, Message) else str(text)


def fairness_figure(summary: Mapping[str, Any], *, div_id: str) -> str:
    """Goodput per flow as bars, with Jain's fairness index in the title."""
    flows = summary.get("flows", ())
    labels = [_flow_name(f.get("index", i), f.get("cc", "")) for i, f in enumerate(flows)]
    fig = go.Figure(
        go.Bar(
            x=labels,
            y=[f.get("goodput_mbps") or 0 for f in flows],
            marker={"color": [_colour(i) for i in range(len(flows))]},
            text=[f"{f.get('goodput_mbps') or 0:.1f}" for f in flows],
            textposition="auto",
        )
    )
    jain = summary.get("jain_fairness")
    fig.update_layout(
        height=300,
        margin={"l": 60, "r": 20, "t": 44, "b": 40},
        title={
            "text": _t(
                msg(
                    "Goodput per flow (Mbit/s) · Jain's fairness index {jain}",
                    jain=f"{jain:.3f}",
                )
                if jain is not None
                else msg("Goodput per flow (Mbit/s)")
            ),
            "x": 0.01,
            "font": {"size": 15},
        },
        template="plotly_white",
        yaxis={"title": _t(msg("Mbit/s"))},
    )
    return _embed(fig, div_id)
