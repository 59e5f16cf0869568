"""The home page's picture of a congestion-control step: what the player shows at that step, the
cwnd chart with its time cursor (drawn here as a small SVG, not with plotly.js, so the home page
stays light) above the step's card."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from app.sim.congestion.run import CwndState, CwndTrace
from app.sim.core import Frame, msg
from app.web.explainers.cwnd.charts import decimate, zoom_windows
from app.web.explainers.cwnd.picture import _t, picture

W, H = 936, 330  # the SVG's box; the home page zooms it to the card
PAD_L, PAD_R, PAD_T, PAD_B = 48, 10, 26, 22
# flow colours by theme, as static/explainers/cwnd/charts.js picks them for the charts
LIGHT = ("blue", "orange", "green", "purple", "sky", "vermillion", "yellow", "grey")
DARK = ("sky", "orange", "green", "purple", "yellow", "vermillion", "blue", "grey")
STYLE = "".join(
    f".cwnd-thumb .f{i}{{stroke:var(--{a})}}.cwnd-thumb circle.f{i}{{fill:var(--{a})}}"
    f'[data-theme="dark"] .cwnd-thumb .f{i}{{stroke:var(--{b})}}'
    f'[data-theme="dark"] .cwnd-thumb circle.f{i}{{fill:var(--{b})}}'
    for i, (a, b) in enumerate(zip(LIGHT, DARK, strict=True))
)


def thumbnail(trace: CwndTrace, frame: Frame[CwndState], *, zoom: bool = False) -> str:
    """Every flow's cwnd over the run (decimated to the chart's columns), the cursor at the
    step's time, then the step's card; ``zoom``: over the stretch the player zooms to at this
    step (see :func:`~app.web.explainers.cwnd.charts.zoom_windows`)."""
    flows = trace.series["flows"]
    t_now = float(frame.time if frame.time is not None else frame.state.get("t", 0.0))
    lines: list[tuple[int, list[float], list[float | None]]] = []
    t0, t1, top = 0.0, 1e-9, 1.0
    for flow in flows:
        ts = flow.get("t") or []
        if ts:
            t1 = max(t1, float(ts[-1]))
    if zoom:
        times = [f.time if f.time is not None else 0.0 for f in trace.frames]
        windows, steps = zoom_windows(times, t0, t1)
        if steps[frame.index] >= 0:
            t0, t1 = windows[steps[frame.index]]
    for i, flow in enumerate(flows):
        ts, cw = flow.get("t") or [], flow.get("cwnd") or []
        lo, hi = bisect_left(ts, t0), bisect_right(ts, t1)
        xs, ys = decimate(ts[lo:hi], cw[lo:hi], t0=t0, t1=t1, buckets=200)
        top = max([top, *(y for y in ys if y is not None)])
        lines.append((i, xs, ys))

    def px(t: float) -> float:
        return PAD_L + (t - t0) / (t1 - t0) * (W - PAD_L - PAD_R)

    def py(v: float) -> float:
        return H - PAD_B - v / top * (H - PAD_T - PAD_B)

    title = _t(msg("cwnd (segments)"))
    secs = _t(msg("s"))
    parts = [
        f'<svg class="cwnd-thumb" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
        'aria-hidden="true" style="color: var(--fg)">',
        f"<style>{STYLE}</style>",
        f'<text x="{PAD_L}" y="16" font-size="15" fill="currentColor">{title}</text>',
        f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" '
        'stroke="var(--line)" stroke-width="1"/>',
        f'<text x="{PAD_L - 6}" y="{py(top) + 5:.1f}" font-size="13" text-anchor="end" '
        f'fill="currentColor">{top:g}</text>',
        f'<text x="{PAD_L - 6}" y="{H - PAD_B + 4}" font-size="13" text-anchor="end" '
        'fill="currentColor">0</text>',
        f'<text x="{W - PAD_R}" y="{H - 4}" font-size="13" text-anchor="end" '
        f'fill="currentColor">{t1:g} {secs}</text>',
        f'<text x="{PAD_L}" y="{H - 4}" font-size="13" fill="currentColor">{t0:g} {secs}</text>'
        if t0 > 0
        else "",
    ]
    for i, xs, ys in lines:
        runs: list[list[str]] = [[]]
        for x, y in zip(xs, ys, strict=True):
            if y is None:
                runs.append([])
            else:
                runs[-1].append(f"{px(x):.1f},{py(y):.1f}")
        for pts in runs:
            if len(pts) > 1:
                parts.append(
                    f'<polyline class="f{i % len(LIGHT)}" points="{" ".join(pts)}" fill="none" '
                    'stroke-width="2" stroke-linejoin="round"/>'
                )
    x = px(min(max(t_now, t0), t1))
    parts.append(
        f'<line x1="{x:.1f}" y1="{PAD_T - 4}" x2="{x:.1f}" y2="{H - PAD_B}" '
        'stroke="currentColor" stroke-width="2" stroke-dasharray="4 3"/>'
    )
    cwnd = frame.state.get("cwnd")
    if isinstance(cwnd, int | float):
        colour = int(frame.state.get("flow") or 0) % len(LIGHT)
        parts.append(
            f'<circle class="f{colour}" cx="{x:.1f}" cy="{py(float(cwnd)):.1f}" r="6" '
            'style="stroke: var(--bg); stroke-width: 2"/>'
        )
    parts.append("</svg>")
    return "".join(parts) + picture(trace, frame)


def still(trace: CwndTrace, frame: Frame[CwndState]) -> str:
    """The step as a file (the "this step as SVG" export): the player draws its charts once per
    trace with plotly.js in the page, which a standalone file cannot run, so the file gets the
    cwnd chart drawn here, its cursor at the step, above the step's card."""
    return f'<div class="cwnd-still">{thumbnail(trace, frame, zoom=True)}</div>'
