"""Chart figures as plain Plotly JSON (no plotly.py: building the dicts is cheaper).

The page loads plotly.js's "basic" bundle (scatter + bar on cartesian axes) from npm, so every
trace here is a ``scatter`` or ``bar``. Series are decimated before they reach the page: the
x-range is cut into ``BUCKETS`` columns (about one per pixel of a wide chart) and each column
keeps its lowest and highest sample in time order, so peaks and sawtooth drops survive while no
trace carries more than ``MAX_POINTS`` points.

Colours in the JSON are the light theme's; static/explainers/cwnd/charts.js recolours each trace
by its ``meta.role`` and the layout from the page's CSS variables at draw time and again when
the theme changes. The time cursor is an HTML line that static/explainers/cwnd/chart-cursor.js
lays over each plot (moving it needs no Plotly redraw).
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from app.sim.congestion.recorded import RecordedSeries
from app.sim.congestion.run import CwndEvent, CwndSeries
from app.sim.core import Message, msg

# plotly.js "basic" (scatter, bar, pie on cartesian axes) from npm, about a quarter of the full
# one; the package keeps its one file at its root, so the view declares the package folder itself
PLOTLY_PACKAGE = "plotly.js-basic-dist-min"
PLOTLY_JS = f"/vendor/{PLOTLY_PACKAGE}/plotly-basic.min.js"
BUCKETS = 500  # x columns per chart; each keeps at most min, max and a gap marker
MAX_POINTS = 3 * BUCKETS  # the most points any trace sends to the page
FIGURE_HEIGHT = 720

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")

# event type -> (legend label, marker symbol, colour role, light-theme colour)
EVENT_STYLE: dict[str, tuple[Message, str, str, str]] = {
    "loss": (msg("loss detected"), "x", "ev-loss", "#D55E00"),
    "rto": (msg("RTO timeout"), "x-thin-open", "ev-rto", "#D55E00"),
    "tlp": (msg("tail loss probe"), "star-open", "ev-tlp", "#E69F00"),
    "frto": (msg("F-RTO after a timeout"), "star-triangle-up-open", "ev-tlp", "#E69F00"),
    "undo": (msg("spurious timeout undone"), "triangle-up-open", "ev-ok", "#009E73"),
    "reo_timeout": (msg("RACK reorder timer fires"), "x-open", "ev-loss", "#D55E00"),
    "round": (msg("slow-start round ends"), "circle", "ev-epoch", "#5b6470"),
    "recovery_enter": (msg("Recovery entered"), "triangle-down", "ev-loss", "#D55E00"),
    "recovery_exit": (msg("Recovery left"), "triangle-up", "ev-ok", "#009E73"),
    "hystart_exit": (msg("HyStart ends slow start"), "diamond", "ev-hystart", "#0072B2"),
    "epoch_start": (msg("CUBIC epoch starts"), "circle-open", "ev-epoch", "#5b6470"),
    "bbr_mode": (msg("BBR mode change"), "square", "ev-bbr", "#CC79A7"),
    "cwr": (msg("ECN: CWR entered"), "triangle-down-open", "ev-hystart", "#0072B2"),
    "cwr_exit": (msg("CWR left"), "triangle-up-open", "ev-ok", "#009E73"),
    "rwnd_limited": (msg("receive window binds"), "line-ew-open", "ev-epoch", "#5b6470"),
}

# (row key, axis id, title); rows are listed top to bottom, the x-axis sits under the last
ROWS = (
    ("cwnd", "y4", msg("cwnd (segments)")),
    ("queue", "y3", msg("bottleneck queue (packets)")),
    ("rtt", "y2", msg("smoothed RTT (ms)")),
    ("rate", "y", msg("rate (Mbit/s): pacing solid, delivery dotted")),
)
ROW_HEIGHTS = (0.40, 0.18, 0.18, 0.18)
ROW_GAP = 0.065
AXIS_OF = {key: axis for key, axis, _ in ROWS}

# What the cwnd chart draws: a run's series or a recording's (the machine and the model as two
# flows). A flow's series is the sampled lists app.sim.congestion.run's docstring names plus its
# ``events`` (CwndEvent); the simulation keeps it a ``dict[str, Any]``, so it stays one here.
ChartSeries = CwndSeries | RecordedSeries
FlowSeries = Mapping[str, Any]
# A Plotly figure, layout or trace: JSON for plotly.js, as open-ended as its schema.
PlotlyJSON = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    """One sampled series of a flow drawn as a line: where, how and under which name."""

    key: str
    label: Message
    row: str
    dash: str = "solid"
    width: float = 1.5
    role: str = ""  # colour role; empty: the flow's colour
    unit: Message = field(default_factory=lambda: msg("segments"))  # rendered per request
    digits: int = 0  # decimals kept in the figure's JSON


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _num(v: object) -> float | None:
    """A finite number, or None (gaps, the "infinite" ssthresh sentinel)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if not math.isfinite(v) or v >= 1e8:
        return None
    return float(v)


def _round(v: float | None, digits: int) -> float | int | None:
    if v is None:
        return None
    r = round(v, digits)
    return int(r) if r == int(r) and abs(r) < 1e15 else r


def decimate(
    t: Sequence[float],
    y: Sequence[object],
    *,
    t0: float,
    t1: float,
    buckets: int = BUCKETS,
) -> tuple[list[float], list[float | None]]:
    """At most ``3 * buckets`` points that draw like ``(t, y)`` at ``buckets`` columns.

    Each column keeps its lowest and highest sample and its first gap (``None``), in time order, so
    a sawtooth keeps its peaks and drops and a gap stays a gap. Short series pass
    through unchanged.
    """
    n = min(len(t), len(y))
    ys = [_num(v) for v in y[:n]]
    xs = [float(v) for v in t[:n]]
    if n <= 2 * buckets:
        return xs, ys
    span = t1 - t0 if t1 > t0 else 1.0
    out_x: list[float] = []
    out_y: list[float | None] = []
    cur = -1
    lo = hi = gap = -1

    def flush() -> None:
        for k in sorted({lo, hi, gap} - {-1}):  # in time order; ys[gap] is None
            out_x.append(xs[k])
            out_y.append(ys[k])

    for k in range(n):
        b = min(buckets - 1, max(0, int((xs[k] - t0) / span * buckets)))
        if b != cur:
            if cur >= 0:
                flush()
            cur, lo, hi, gap = b, -1, -1, -1
        v = ys[k]
        if v is None:
            if gap < 0:
                gap = k
            continue
        lo_v = ys[lo] if lo >= 0 else None
        hi_v = ys[hi] if hi >= 0 else None
        if lo_v is None or v < lo_v:
            lo = k
        if hi_v is None or v > hi_v:
            hi = k
    if cur >= 0:
        flush()
    return out_x, out_y


# Steps bunched in time get an x-range of their own: a run of steps (no gap between two of them
# over a tenth of the run) spanning at most a quarter of the run is zoomed to when stepping.
ZOOM_GAP = 0.10
ZOOM_SHARE = 0.25


def zoom_windows(
    times: Sequence[float], t0: float, t1: float
) -> tuple[list[tuple[float, float]], list[int]]:
    """The x-ranges to zoom to and, per step, which one (-1: the whole run).

    BBR's walkthrough has 15 of its 20 steps in the first 0.6 s of 25: on the whole run's axis
    they sit on one spot, so stepping through them zooms to their stretch (with a margin).
    """
    span = t1 - t0
    groups: list[list[int]] = []
    for i, t in enumerate(times):
        if groups and t - times[groups[-1][-1]] <= span * ZOOM_GAP:
            groups[-1].append(i)
        else:
            groups.append([i])
    windows: list[tuple[float, float]] = []
    steps = [-1] * len(times)
    for group in groups:
        lo, hi = times[group[0]], times[group[-1]]
        if span <= 0 or len(group) < 2 or hi - lo > span * ZOOM_SHARE:
            continue
        pad = max((hi - lo) * 0.1, span / 100)
        windows.append((round(max(t0, lo - pad), 4), round(min(t1, hi + pad), 4)))
        for i in group:
            steps[i] = len(windows) - 1
    return windows, steps


def decimate_zoomed(
    t: Sequence[float],
    y: Sequence[object],
    *,
    t0: float,
    t1: float,
    windows: Sequence[tuple[float, float]] = (),
) -> tuple[list[float], list[float | None]]:
    """:func:`decimate`, with the zoom windows at a resolution of their own: the columns are
    shared out (half for the whole run, half between the windows), so a zoomed chart shows its
    stretch in as many columns as the whole run gets, and no trace exceeds ``MAX_POINTS``."""
    if not windows:
        return decimate(t, y, t0=t0, t1=t1)
    n = min(len(t), len(y))
    xs, ys = decimate(t[:n], y[:n], t0=t0, t1=t1, buckets=BUCKETS // 2)
    points = [
        (x, v) for x, v in zip(xs, ys, strict=True) if not any(a <= x <= b for a, b in windows)
    ]
    share = max(1, BUCKETS // 2 // len(windows))
    for a, b in windows:
        lo, hi = bisect_left(t, a, 0, n), bisect_right(t, b, 0, n)
        fx, fy = decimate(t[lo:hi], y[lo:hi], t0=a, t1=b, buckets=share)
        points += zip(fx, fy, strict=True)
    points.sort(key=lambda p: p[0])
    return [p[0] for p in points], [p[1] for p in points]


def _lines(cc: str, *, overlay: bool, paced: bool) -> list[Line]:
    lines = [
        Line(key="cwnd", label=msg("cwnd"), row="cwnd", width=2),
        Line(key="ssthresh", label=msg("ssthresh"), row="cwnd", dash="dash", width=1),
    ]
    if overlay and cc == "cubic":
        lines += [
            Line(
                key="w_cubic",
                label=msg("W(t) cubic target"),
                row="cwnd",
                dash="dot",
                width=1,
                role="overlay",
            ),
            Line(
                key="w_est",
                label=msg("W_est Reno-friendly"),
                row="cwnd",
                dash="dashdot",
                width=1,
                role="overlay-est",
            ),
        ]
    ms, mbps = msg("ms"), msg("Mbit/s")
    lines.append(Line(key="srtt_ms", label=msg("smoothed RTT"), row="rtt", unit=ms, digits=2))
    if paced:
        lines.append(
            Line(key="pacing_mbps", label=msg("pacing rate"), row="rate", unit=mbps, digits=2)
        )
    lines.append(
        Line(
            key="delivery_mbps",
            label=msg("delivery rate"),
            row="rate",
            dash="dot",
            unit=mbps,
            digits=2,
        )
    )
    return lines


def x_span(series: ChartSeries) -> tuple[float, float]:
    ts: list[float] = []
    for flow in series.get("flows", ()):
        t = flow.get("t") or []
        if t:
            ts += [float(t[0]), float(t[-1])]
    qt = series.get("queue", {}).get("t") or []
    if qt:
        ts += [float(qt[0]), float(qt[-1])]
    return (min(ts), max(ts)) if ts else (0.0, 1.0)


def row_maxima(series: ChartSeries, *, show_overlay: bool = True) -> dict[str, float]:
    """The highest value each chart row shows (for a y-range shared between charts)."""
    flows: Sequence[FlowSeries] = series.get("flows", ())
    any_bbr = any(f.get("cc") == "bbr" for f in flows)
    top = {key: 0.0 for key, _, _ in ROWS}
    for flow in flows:
        cc = str(flow.get("cc", ""))
        for line in _lines(cc, overlay=show_overlay, paced=cc == "bbr" or not any_bbr):
            vals = [v for v in map(_num, flow.get(line.key) or ()) if v is not None]
            if vals:
                top[line.row] = max(top[line.row], max(vals))
        for ev in flow.get("events", ()):
            y = _event_y(ev)
            if y is not None and ev.get("type") in EVENT_STYLE:
                top["cwnd"] = max(top["cwnd"], y)
    packets = [v for v in map(_num, series.get("queue", {}).get("packets") or ()) if v is not None]
    if packets:
        top["queue"] = max(top["queue"], max(packets))
    return top


def shared_ranges(all_series: Iterable[ChartSeries]) -> dict[str, list[float]]:
    """One y-range per row covering every given trace, so side-by-side charts compare by eye."""
    top = {key: 0.0 for key, _, _ in ROWS}
    for series in all_series:
        for key, v in row_maxima(series).items():
            top[key] = max(top[key], v)
    return {key: [0.0, _nice(v * 1.05)] for key, v in top.items()}


def _nice(v: float) -> float:
    """``v`` rounded up to 1, 2 or 5 × a power of ten (at least 1)."""
    if v <= 1:
        return 1.0
    p = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * p:
            return float(m * p)
    return float(10 * p)  # pragma: no cover - the loop always returns


def _event_y(ev: CwndEvent) -> float | None:
    detail = ev.get("detail") or {}
    state = ev.get("state") or {}
    return _num(detail.get("cwnd", state.get("cwnd")))


def _domains() -> dict[str, list[float]]:
    usable = 1.0 - ROW_GAP * (len(ROWS) - 1)
    out: dict[str, list[float]] = {}
    top = 1.0
    for (key, _, _), share in zip(ROWS, ROW_HEIGHTS, strict=True):
        h = usable * share / sum(ROW_HEIGHTS)
        out[key] = [round(max(0.0, top - h), 4), round(top, 4)]
        top -= h + ROW_GAP
    return out


def _embed(figure: PlotlyJSON, div_id: str, *, height: int, label: str) -> str:
    """A placeholder plus the figure as JSON; static/explainers/cwnd/charts.js draws it once
    plotly.js has loaded, so the page shows before the library is parsed."""
    data = json.dumps(figure, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    drawing = escape(str(msg("Drawing the charts…")))
    return (
        f'<div id="{div_id}" class="plotly-pending" data-figure="{div_id}-figure" role="figure" '
        f'aria-label="{label}" style="min-height:{height}px">'
        f'<p class="chart-loading">{drawing}</p></div>'
        f'<script type="application/json" id="{div_id}-figure">{data}</script>'
    )


def _base_layout(height: int, title: str) -> PlotlyJSON:
    return {
        "height": height,
        "margin": {"l": 56, "r": 12, "t": 56 if title else 28, "b": 40},
        "title": {"text": title, "x": 0.01, "y": 0.995, "yanchor": "top", "font": {"size": 15}}
        if title
        else {"text": ""},
        "font": {"family": "system-ui, sans-serif", "size": 13, "color": "#1b1f24"},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "hoverlabel": {"font": {"size": 13}, "namelength": 0},
        "uirevision": "keep",
    }


def _axis(**extra: object) -> PlotlyJSON:
    return {
        "gridcolor": "#d5d9df",
        "linecolor": "#d5d9df",
        "zerolinecolor": "#d5d9df",
        "tickfont": {"size": 12},
        "automargin": True,
        **extra,
    }


def cwnd_figure_json(
    series: ChartSeries,
    *,
    title: str = "",
    show_overlay: bool = True,
    y_ranges: Mapping[str, Sequence[float]] | None = None,
    windows: Sequence[tuple[float, float]] = (),
) -> PlotlyJSON:
    """cwnd (+ ssthresh, CUBIC targets, events), queue, RTT and pacing/delivery rate over one
    time axis, as a Plotly figure dict (``windows``: x-ranges the page zooms to, sampled
    finer; see :func:`zoom_windows`)."""
    flows: Sequence[FlowSeries] = series.get("flows", ())
    any_bbr = any(f.get("cc") == "bbr" for f in flows)
    t0, t1 = x_span(series)
    data: list[PlotlyJSON] = []
    for i, flow in enumerate(flows):
        cc = str(flow.get("cc", ""))
        # a flow may name itself (a recording's overlay: "machine", "model"), else its number
        named = flow.get("label")
        who = str(named) if named is not None else str(msg("flow {i} {cc}", i=i, cc=cc))
        group = (
            f"{named!s} · {cc}" if named is not None else str(msg("flow {i} · {cc}", i=i, cc=cc))
        )
        secs = str(msg("s"))
        t = flow.get("t") or []
        for line in _lines(cc, overlay=show_overlay, paced=cc == "bbr" or not any_bbr):
            if line.key not in flow:
                continue
            xs, ys = decimate_zoomed(t, flow[line.key], t0=t0, t1=t1, windows=windows)
            if not any(v is not None for v in ys):
                continue
            colour = (
                {"overlay": "#5b6470", "overlay-est": "#009E73"}[line.role]
                if line.role
                else _colour(i)
            )
            role = line.role or f"flow{i}"
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": [_round(x, 3) for x in xs],
                    "y": [_round(v, line.digits) for v in ys],
                    "yaxis": AXIS_OF[line.row],
                    "name": str(line.label),
                    "legendgroup": f"flow{i}",
                    "legendgrouptitle": {"text": group},
                    "line": {"color": colour, "width": line.width, "dash": line.dash},
                    "hovertemplate": f"{who} {line.label!s}<br>%{{x:.3f}} {secs} · %{{y}} "
                    f"{line.unit!s}<extra></extra>",
                    "meta": {"role": role},
                    # measured per sample interval, so noisy: let the pacing line read through
                    "opacity": 0.6 if line.key == "delivery_mbps" else 1,
                }
            )
    queue = series.get("queue", {})
    if queue.get("t"):
        xs, ys = decimate_zoomed(
            queue.get("t", []), queue.get("packets", []), t0=t0, t1=t1, windows=windows
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": [_round(x, 3) for x in xs],
                "y": [_round(v, 0) for v in ys],
                "yaxis": AXIS_OF["queue"],
                "name": str(msg("queue")),
                "legendgroup": "link",
                "legendgrouptitle": {"text": str(msg("bottleneck"))},
                "line": {"color": "#999999", "width": 1.5},
                "fill": "tozeroy",
                "fillcolor": "rgba(153,153,153,0.25)",
                "hovertemplate": str(msg("queue"))
                + "<br>%{x:.3f} "
                + str(msg("s"))
                + " · %{y} "
                + str(msg("packets"))
                + "<extra></extra>",
                "meta": {"role": "queue"},
            }
        )
    data += _event_traces(flows, t0=t0, t1=t1)
    return {"data": data, "layout": _cwnd_layout(title, y_ranges, t0, t1)}


def _cwnd_layout(
    title: str, y_ranges: Mapping[str, Sequence[float]] | None, t0: float, t1: float
) -> PlotlyJSON:
    layout = _base_layout(FIGURE_HEIGHT, title)
    domains = _domains()
    layout["xaxis"] = _axis(
        anchor="y",
        domain=[0, 1],
        ticksuffix=" " + str(msg("s")),
        range=[t0, t1],
        ticklabelstandoff=8,
    )
    annotations = []
    for key, axis, label in ROWS:
        name = "yaxis" if axis == "y" else f"yaxis{axis[1:]}"
        extra: PlotlyJSON = {"domain": domains[key], "anchor": "x", "rangemode": "tozero"}
        if y_ranges and key in y_ranges:
            extra["range"] = list(y_ranges[key])
            extra["autorange"] = False
        layout[name] = _axis(**extra)
        annotations.append(
            {
                "text": str(label),
                "xref": "paper",
                "yref": "paper",
                "x": 0,
                "y": domains[key][1],
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 13},
            }
        )
    layout["annotations"] = annotations
    layout["showlegend"] = True
    # beside the plot; charts.js moves it below on narrow screens
    layout["legend"] = {
        "orientation": "v",
        "x": 1.04,  # clear of the last time tick's label, which overhangs the plot's end
        "xanchor": "left",
        "y": 1,
        "yanchor": "top",
        "font": {"size": 12},
        "grouptitlefont": {"size": 13},
        "tracegroupgap": 12,
        "itemsizing": "constant",
    }
    return layout


def _event_traces(flows: Sequence[FlowSeries], *, t0: float, t1: float) -> list[PlotlyJSON]:
    """One marker trace per event kind (all flows), at most one mark per flow per column."""
    span = t1 - t0 if t1 > t0 else 1.0
    kinds: dict[str, list[tuple[float, float, int]]] = {}
    for i, flow in enumerate(flows):
        seen: set[tuple[str, int]] = set()
        for ev in flow.get("events", ()):
            kind = ev.get("type")
            if kind not in EVENT_STYLE:
                continue
            t, y = _num(ev.get("t")), _event_y(ev)
            if t is None or y is None:
                continue
            col = min(BUCKETS - 1, max(0, int((t - t0) / span * BUCKETS)))
            if (kind, col) in seen:
                continue
            seen.add((kind, col))
            kinds.setdefault(kind, []).append((t, y, i))
    out = []
    for kind, (label, symbol, role, colour) in EVENT_STYLE.items():  # legend order
        marks = sorted(kinds.get(kind, ()))
        if not marks:
            continue
        if len(marks) > MAX_POINTS:
            step = len(marks) / MAX_POINTS
            marks = [marks[int(j * step)] for j in range(MAX_POINTS)]
        out.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [_round(m[0], 4) for m in marks],
                "y": [_round(m[1], 0) for m in marks],
                "customdata": [m[2] for m in marks],
                "yaxis": AXIS_OF["cwnd"],
                "name": str(label),
                "legendgroup": "events",
                "legendgrouptitle": {"text": str(msg("events (all flows)"))},
                "marker": {
                    "symbol": symbol,
                    "size": 9,
                    "color": colour,
                    "line": {"width": 1.5, "color": colour},
                },
                "hovertemplate": f"{label!s}<br>%{{x:.3f}} "
                + str(msg("s"))
                + " · "
                + str(msg("flow"))
                + " %{customdata} · cwnd %{y}"
                "<extra></extra>",
                "meta": {"role": role, "event": kind},
            }
        )
    return out


def cwnd_figure(
    series: ChartSeries,
    *,
    div_id: str,
    title: str = "",
    show_overlay: bool = True,
    y_ranges: Mapping[str, Sequence[float]] | None = None,
    windows: Sequence[tuple[float, float]] = (),
) -> str:
    """The cwnd chart's placeholder and figure JSON (see :func:`cwnd_figure_json`)."""
    fig = cwnd_figure_json(
        series, title=title, show_overlay=show_overlay, y_ranges=y_ranges, windows=windows
    )
    label = str(msg("{title} chart", title=title)) if title else str(msg("Chart"))
    return _embed(
        fig,
        div_id,
        height=FIGURE_HEIGHT,
        label=str(msg("{label}: cwnd, queue, RTT and rates over time", label=label)),
    )


def fairness_figure(summary: Mapping[str, Any], *, div_id: str) -> str:
    """Goodput per flow as bars, with Jain's fairness index in the title (several flows only)."""
    flows = summary.get("flows", ())
    labels = [
        str(msg("flow {i} {cc}", i=f.get("index", i), cc=str(f.get("cc", ""))))
        for i, f in enumerate(flows)
    ]
    mbps = str(msg("Mbit/s"))
    goodput = [_num(f.get("goodput_mbps")) or 0.0 for f in flows]
    jain = _num(summary.get("jain_fairness"))
    title = str(msg("Goodput per flow (Mbit/s)"))
    if jain is not None and len(flows) > 1:
        title += " · " + str(msg("Jain's fairness index {jain}", jain=f"{jain:.3f}"))
    layout = _base_layout(300, title)
    layout["margin"] = {"l": 56, "r": 12, "t": 44, "b": 40}
    layout["xaxis"] = _axis()
    layout["yaxis"] = _axis(title={"text": mbps}, rangemode="tozero")
    layout["showlegend"] = False
    fig = {
        "data": [
            {
                "type": "bar",
                "x": labels,
                "y": [round(g, 3) for g in goodput],
                "marker": {"color": [_colour(i) for i in range(len(flows))]},
                "text": [f"{g:.1f}" for g in goodput],
                "textposition": "auto",
                "hovertemplate": "%{x}<br>%{y:.2f} " + mbps + "<extra></extra>",
                "meta": {"role": "bars", "flows": len(flows)},
            }
        ],
        "layout": layout,
    }
    return _embed(fig, div_id, height=300, label=str(msg("Goodput per flow")))
