"""Drawn once per trace: a Gantt timeline (one row per request, coloured by phase per step) and
small charts (queue lengths, KV usage, tokens per step, TTFT/TPOT distributions).

Hand-drawn SVG, decimated to at most a few hundred columns, so a page never carries the whole
trace. Every chart that has a step axis shares the same columns; the stepper's cursor
(static/explainers/scheduler/cursor.js) lights the current step's column using the frame → column
map in ``data-frame-cols`` of the ``.sched-static`` wrapper.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.sim.core import Message, msg
from app.sim.serving.explainer import SchedulerTrace
from app.sim.serving.run import SchedulerSeries
from app.web.explainers.scheduler import derive as dv
from app.web.explainers.scheduler import labels as lb
from app.web.explainers.scheduler import style as st
from app.web.explainers.scheduler.style import text_width
from app.web.svgtext import attr

MAX_GANTT_ROWS = 40
MAX_COLS = 440
GW = 960
LABEL_W = 74
ROW_H = 15
PHASE_FILL = {
    dv.WAITING: "#999999",
    dv.STALLED: "#56B4E9",
    dv.DECODE: st.DECODE,
    dv.PREFILL: "url(#{p}-hatch)",
    dv.RECOMPUTE: "url(#{p}-cross)",
    dv.PREEMPTED_WAIT: "url(#{p}-pwait)",
    dv.PREEMPTED: st.PREEMPTED,
}
PHASE_OPACITY = {dv.WAITING: "0.55"}
LEGEND = (
    dv.WAITING,
    dv.PREFILL,
    dv.DECODE,
    dv.RECOMPUTE,
    dv.STALLED,
    dv.PREEMPTED,
    dv.PREEMPTED_WAIT,
)


def frame_columns(trace: SchedulerTrace, bounds: Sequence[int]) -> list[int]:
    series = trace.series
    return [dv.column_of(bounds, dv.series_index(series, f.state["step"])) for f in trace.frames]


def _cursor(prefix: str, x0: float, colw: float, top: float, height: float) -> str:
    return (
        f'<rect id="{prefix}-cursor" class="cursor-col sched-cursor" x="{x0:.2f}" y="{top:.1f}" '
        f'width="{max(colw, 3):.2f}" height="{height:.1f}" data-x0="{x0:.2f}" data-colw="{colw:.4f}"/>'
    )


def _phase_swatch(code: int, prefix: str) -> str:
    """The fill (and opacity) attributes of a timeline phase."""
    op = PHASE_OPACITY.get(code)
    fill = PHASE_FILL[code].format(p=prefix)
    return f'fill="{fill}"' + (f' fill-opacity="{op}"' if op else "")


def _gantt_row(
    series: SchedulerSeries,
    i: int,
    codes: list[int],
    toks: list[int],
    bounds: Sequence[int],
    prefix: str,
    y: float,
    colw: float,
) -> list[str]:
    """Request ``i``'s label and its phase runs."""
    rid = series["requests"][i]["id"]
    out = [
        f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end" class="mono" '
        f'style="font-size:12px">{attr(rid[:9])}</text>',
        f'<g id="{prefix}-r{i}" data-req="{attr(rid)}">',
    ]
    for c0, c1, code, tk in dv.runs(codes, toks, bounds):
        s0 = dv.step_label(series, bounds[c0])
        s1 = dv.step_label(series, min(bounds[c1], len(series["step"])) - 1)
        phase = lb.TIMELINE[code]
        if s0 == s1:
            tip = str(msg("{id}: {phase}, step {a}", id=rid, phase=phase, a=s0))
        else:
            tip = str(msg("{id}: {phase}, steps {a}–{b}", id=rid, phase=phase, a=s0, b=s1))
        if tk:
            tip += str(msg(", {tokens} tokens scheduled", tokens=tk))
        out.append(
            f'<rect x="{LABEL_W + c0 * colw:.2f}" y="{y + 1}" width="{(c1 - c0) * colw:.2f}" '
            f'height="{ROW_H - 3}" {_phase_swatch(code, prefix)} '
            f'data-phase="{attr(dv.PHASE_NAMES[code])}"><title>{attr(tip)}</title></rect>'
        )
    out.append("</g>")
    return out


def _step_axis(series: SchedulerSeries, bounds: Sequence[int], colw: float, ay: float) -> list[str]:
    cols = len(bounds) - 1
    out: list[str] = []
    for k in range(6):
        c = min(cols - 1, round(k * (cols - 1) / 5)) if cols > 1 else 0
        x = LABEL_W + (c + 0.5) * colw
        out.append(
            f'<line class="gridline" x1="{x:.1f}" x2="{x:.1f}" y1="{ay - 12}" y2="{ay - 8}"/>'
        )
        anchor = "end" if k == 5 else "middle"
        out.append(
            f'<text x="{x:.1f}" y="{ay + 4}" text-anchor="{anchor}" class="muted" style="font-size:12px">'
            f"{dv.step_label(series, bounds[c])}</text>"
        )
    step_word = attr(msg("step"))
    out.append(
        f'<text x="{LABEL_W - 6}" y="{ay + 4}" text-anchor="end" class="muted" '
        f'style="font-size:12px">{step_word}</text>'
    )
    return out


def _gantt_legend(prefix: str, y: float) -> tuple[list[str], float]:
    def key(code: int) -> st.Swatch:
        return lambda x, yy: (
            f'<rect x="{x:.1f}" y="{yy - 11:.1f}" width="18" height="13" {_phase_swatch(code, prefix)}/>'
        )

    items = [(key(code), str(lb.TIMELINE[code])) for code in LEGEND]
    out, ly, _ = st.legend(items, 6.0, y, GW - 6)
    return out, ly


def gantt(
    trace: SchedulerTrace,
    *,
    prefix: str = "gantt",
    cursor: bool = True,
    span: int = 0,
    config: str = "",
) -> str:
    """``span``: draw on an axis of that many steps (≥ the run's), to line up two runs;
    ``config`` names the run in the region's label (two timelines on one page differ)."""
    series = trace.series
    n_steps = max(len(series["step"]), span)
    results = series["requests"]
    rows = min(MAX_GANTT_ROWS, len(results))
    codes, toks = dv.phases(series, [r["prompt_tokens"] for r in results], rows)
    bounds = dv.buckets(n_steps, MAX_COLS)
    cols = len(bounds) - 1
    colw = (GW - LABEL_W - 10) / max(cols, 1)
    top = 26
    height = rows * ROW_H
    sub = (
        msg("one row per request, one column per step; hover a bar for the tokens it was given")
        if cols == n_steps
        else msg(
            "one row per request, one column per {n} steps; hover a bar for the tokens it was "
            "given",
            n=round(n_steps / cols, 1),
        )
    )
    heading = str(msg("Timeline"))
    body: list[str] = [
        st.text(6, 16, heading, "title"),
        st.text(max(86.0, 18 + text_width(heading, 14.0) * 1.08), 16, str(sub), "muted"),
    ]
    if cursor:
        body.append(_cursor(prefix, LABEL_W, colw, top - 2, height + 4))
    for i in range(rows):
        body.extend(_gantt_row(series, i, codes[i], toks[i], bounds, prefix, top + i * ROW_H, colw))
    ay = top + height + 14
    body.extend(_step_axis(series, bounds, colw, ay))
    keys, ly = _gantt_legend(prefix, ay + 30)
    body.extend(keys)
    aria = attr(msg("Timeline: each request’s phase at every step"))
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{prefix}" class="sched-svg sched-gantt" '
        f'viewBox="0 0 {GW} {ly + 20:.0f}" style="min-width:{GW}px" role="img" '
        f'aria-label="{aria}" data-cols="{cols}" data-rows="{rows}" data-steps="{n_steps}">'
        + st.style()
        + st.defs(prefix)
        + "".join(body)
        + "</svg>"
    )
    note = ""
    if len(results) > rows:
        note = (
            '<p class="muted sched-note">'
            + attr(
                msg(
                    "The timeline shows the first {rows} of {total} requests; the charts count "
                    "them all.",
                    rows=rows,
                    total=len(results),
                )
            )
            + "</p>"
        )
    return (
        '<div class="sched-scroll" tabindex="0" role="region" aria-label="'
        + attr(
            msg("Timeline of every request ({config})", config=config)
            if config
            else msg("Timeline of every request")
        )
        + '">'
        + svg
        + "</div>"
        + note
    )


CW = 470
CH = 190
CL = 52  # left margin for the y axis
CR = 10
CT = 30
CB = 28


def _poly(xs: Sequence[float], ys: Sequence[float]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))


def _line_key(cls: str) -> st.Swatch:
    return lambda x, y: (
        f'<line class="{cls}" x1="{x:.1f}" x2="{x + 18:.1f}" y1="{y - 5:.1f}" y2="{y - 5:.1f}"/>'
    )


def _box_key(colour: str) -> st.Swatch:
    return lambda x, y: (
        f'<rect x="{x:.1f}" y="{y - 11:.1f}" width="14" height="12" fill="{colour}"/>'
    )


def _chart_head(
    title: str, keys: Sequence[tuple[st.Swatch, str]], key_w: float = 22.0
) -> tuple[list[str], float]:
    """A chart's title and its legend: beside the title when the legend fits there, else on
    lines of their own below it. Returns the markup and how far the plot moves down."""
    out = [st.text(6, 18, title, "title")]
    x0 = 6 + text_width(title, 14.0) * 1.08 + 16
    width = sum(key_w + text_width(label) + 14 for _, label in keys)
    if x0 + width <= CW - CR:
        legend, _, _ = st.legend(keys, x0, 18, CW - CR, key_w=key_w, cls="muted")
        return out + legend, 0.0
    legend, ly, _ = st.legend(keys, 6.0, 38, CW - CR, key_w=key_w, cls="muted")
    return out + legend, ly - 18 + 4


def _hist_svg(prefix: str, title: str, head: list[str], extra: float) -> str:
    """The opening of a histogram's SVG, up to its (shifted) plot group."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{prefix}" class="sched-svg sched-chart" '
        f'viewBox="0 0 {CW} {CH + extra:.0f}" role="img" aria-label="{attr(title)}">'
        + st.style()
        + "".join(head)
        + f'<g transform="translate(0,{extra:.0f})">'
    )


def _line_chart(
    prefix: str,
    title: str,
    series: SchedulerSeries,
    bounds: Sequence[int],
    lines: Sequence[tuple[str, Sequence[float], str]],
    *,
    ymax: float | None = None,
    unit: str = "",
    cursor: bool = True,
) -> str:
    cols = len(bounds) - 1
    pw = CW - CL - CR
    ph = CH - CT - CB
    colw = pw / max(cols, 1)
    top_val = ymax
    if top_val is None:
        top_val = max((max(v, default=0.0) for _, v, _ in lines), default=1.0) or 1.0
    keys = [(_line_key(cls), label) for label, _, cls in lines]
    head, extra = _chart_head(title, keys)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{prefix}" class="sched-svg sched-chart" '
        f'viewBox="0 0 {CW} {CH + extra:.0f}" role="img" aria-label="{attr(title)}" '
        f'data-cols="{cols}">',
        st.style(),
        *head,
        f'<g transform="translate(0,{extra:.0f})">',
    ]
    for k in range(3):
        v = top_val * k / 2
        y = CT + ph - ph * k / 2
        txt = f"{v * 100:.0f}%" if unit == "%" else f"{v:.0f}" if top_val >= 10 else f"{v:.1f}"
        out.append(f'<line class="gridline" x1="{CL}" x2="{CW - CR}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(
            f'<text x="{CL - 5}" y="{y + 4:.1f}" text-anchor="end" class="muted" style="font-size:12px">{txt}</text>'
        )
    if cursor:
        out.append(_cursor(prefix, CL, colw, CT - 2, ph + 4))
    for _, values, cls in lines:
        lo, hi = dv.envelope(values, bounds)
        xs = [CL + (c + 0.5) * colw for c in range(len(hi))]
        yhi = [CT + ph - ph * v / top_val for v in hi]
        ylo = [CT + ph - ph * v / top_val for v in lo]
        if any(a != b for a, b in zip(lo, hi, strict=True)):
            band = cls.replace("line", "band")
            out.append(
                f'<polygon class="{band}" points="{_poly(xs + xs[::-1], yhi + ylo[::-1])}"/>'
            )
        out.append(f'<polyline class="{cls}" points="{_poly(xs, yhi)}"/>')
    for k in range(3):
        c = min(cols - 1, round(k * (cols - 1) / 2)) if cols > 1 else 0
        x = CL + (c + 0.5) * colw
        anchor = ("start", "middle", "end")[k]
        x = (CL, x, CW - CR)[k]
        tick = attr(
            msg("step {n}", n=dv.step_label(series, bounds[c] if k < 2 else bounds[-1] - 1))
        )
        out.append(
            f'<text x="{x:.1f}" y="{CH - 8}" text-anchor="{anchor}" class="muted" '
            f'style="font-size:12px">{tick}</text>'
        )
    out.append("</g></svg>")
    return "".join(out)


def _hist(prefix: str, title: str, sets: Sequence[tuple[str, Sequence[float], str]]) -> str:
    values = [v for _, vs, _ in sets for v in vs]
    pw = CW - CL - CR
    ph = CH - CT - CB
    if not values:
        nothing = attr(msg("no finished request yet"))
        return (
            _hist_svg(prefix, title, [st.text(6, 18, title, "title")], 0.0)
            + f'<text x="{CL}" y="{CT + 40}" class="muted">{nothing}</text></g></svg>'
        )
    lo, hi = min(values), max(values)
    nb = 20
    width = (hi - lo) / nb or 1.0
    counts_all = []
    for _, vs, _ in sets:
        counts = [0] * nb
        for v in vs:
            counts[min(nb - 1, int((v - lo) / width))] += 1
        counts_all.append(counts)
    top = max(max(c) for c in counts_all) or 1
    bw = pw / nb
    bars: list[str] = []
    keys: list[tuple[st.Swatch, str]] = []
    for k, (label, vs, colour) in enumerate(sets):
        off = k * bw / len(sets)
        for b, c in enumerate(counts_all[k]):
            if not c:
                continue
            h = ph * c / top
            x = CL + b * bw + off
            a, z = lo + b * width, lo + (b + 1) * width
            tip = attr(
                msg(
                    "{label}: {count} requests in {a}–{b}",
                    label=label,
                    count=c,
                    a=_secs(a, hi),
                    b=_secs(z, hi),
                )
            )
            bars.append(
                f'<rect x="{x:.1f}" y="{CT + ph - h:.1f}" width="{bw / len(sets) - 1:.1f}" '
                f'height="{h:.1f}" fill="{colour}"><title>{tip}</title></rect>'
            )
        mean = sum(vs) / len(vs) if vs else 0.0
        key = str(
            msg(
                "{label} · mean {mean} · {count} requests",
                label=label,
                mean=_secs(mean, hi),
                count=len(vs),
            )
        )
        keys.append((_box_key(colour), key))
    head, extra = _chart_head(title, keys, key_w=19.0)
    out = [_hist_svg(prefix, title, head, extra), *bars]
    out.append(f'<line class="gridline" x1="{CL}" x2="{CW - CR}" y1="{CT + ph}" y2="{CT + ph}"/>')
    out.append(
        f'<text x="{CL - 5}" y="{CT + 10}" text-anchor="end" class="muted" style="font-size:12px">{top}</text>'
    )
    for k in range(3):
        v = lo + (hi - lo) * k / 2
        x = CL + pw * k / 2
        out.append(
            f'<text x="{x:.1f}" y="{CH - 8}" text-anchor="{("start", "middle", "end")[k]}" class="muted" '
            f'style="font-size:12px">{_secs(v, hi, hi - lo)}</text>'
        )
    out.append("</g></svg>")
    return "".join(out)


def charts(
    trace: SchedulerTrace, *, prefix: str = "chart", cursor: bool = True, span: int = 0
) -> str:
    se = trace.series
    n = max(len(se["step"]), span)
    bounds = dv.buckets(n, MAX_COLS // 2)
    budget = trace.params.config.max_num_batched_tokens
    queue = _line_chart(
        f"{prefix}-queues",
        str(msg("Queue lengths")),
        se,
        bounds,
        (
            (str(msg("running")), se["num_running"], "line-a"),
            (str(msg("waiting")), se["num_waiting"], "line-b"),
        ),
        cursor=cursor,
    )
    kv = _line_chart(
        f"{prefix}-kv",
        str(msg("KV cache usage")),
        se,
        bounds,
        ((str(msg("blocks in use")), se["kv_usage"], "line-a"),),
        ymax=1.0,
        unit="%",
        cursor=cursor,
    )
    toks = _line_chart(
        f"{prefix}-tokens",
        str(msg("Tokens per step")),
        se,
        bounds,
        (
            (str(msg("prefill")), [float(v) for v in se["prefill_tokens"]], "line-a"),
            (str(msg("decode")), [float(v) for v in se["decode_tokens"]], "line-b"),
        ),
        ymax=float(budget),
        cursor=cursor,
    )
    rs = se["requests"]
    ttft = _hist(
        f"{prefix}-ttft",
        "TTFT",
        ((str(msg("time to first token")), [r["ttft"] for r in rs if r["ttft"] >= 0], "#0072B2"),),
    )
    tpot = _hist(
        f"{prefix}-tpot",
        "TPOT",
        (
            (
                str(msg("time per output token")),
                [r["tpot"] for r in rs if r["tpot"] is not None],
                "#E69F00",
            ),
        ),
    )
    return '<div class="sched-charts">' + queue + kv + toks + ttft + tpot + "</div>"


def _secs(v: float, scale: float, spread: float = 1.0) -> str:
    """A duration in the unit the chart's range calls for, with enough decimals to tell the
    axis ticks apart."""
    if scale >= 1.0:
        return f"{v:.2f} s"
    digits = 1 if spread >= 1e-3 else 2 if spread >= 1e-4 else 3
    return f"{v * 1000:.{digits}f} ms"


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[Message, str]]:
    def ms(key: str) -> str:
        v = summary.get(key)
        return f"{v * 1000:.1f} ms" if isinstance(v, (int, float)) else "–"

    def num(key: str, spec: str = ",.0f", suffix: str = "") -> str:
        v = summary.get(key)
        return format(v, spec) + suffix if isinstance(v, (int, float)) else "–"

    return [
        (msg("batching · policy"), f"{summary.get('batching', '')} · {summary.get('policy', '')}"),
        (msg("requests"), num("num_requests")),
        (msg("steps"), num("num_steps")),
        (msg("makespan"), f"{summary.get('makespan_s', 0):.3f} s"),
        (msg("output throughput"), num("output_throughput_tok_s", ",.0f", " tok/s")),
        (msg("mean TTFT"), ms("mean_ttft_s")),
        (msg("p99 TTFT"), ms("p99_ttft_s")),
        (msg("mean TPOT"), ms("mean_tpot_s")),
        (msg("p99 TPOT"), ms("p99_tpot_s")),
        (msg("mean end-to-end"), ms("mean_e2e_s")),
        (msg("preemptions"), num("num_preemptions")),
        (msg("recomputed tokens"), num("recomputed_tokens")),
        (msg("prefix-cache hit tokens"), num("prefix_hit_tokens")),
        (msg("peak KV usage"), num("peak_kv_usage", ".0%")),
        (msg("padding tokens"), num("padding_tokens")),
    ]


def summary_table(summary: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><th scope='row'>{attr(k)}</th><td>{attr(v)}</td></tr>"
        for k, v in summary_rows(summary)
    )
    caption = attr(msg("Summary of the whole run"))
    return (
        f'<details class="run-summary" open><summary>{caption}</summary>'
        '<div class="table-scroll" tabindex="0"><table class="fields summary-table"><tbody>'
        + rows
        + "</tbody></table></div></details>"
    )


# Page-level layout for the static part: the step picture comes first, then the table of
# fields, then the timeline and charts (the player puts static HTML above the stage).
LAYOUT = """<style>
.stage-wrap:has(> .sched-static){display:flex;flex-direction:column}
.stage-wrap:has(> .sched-static) > #stage{order:1}
.stage-wrap:has(> .sched-static) > #fields{order:2}
.stage-wrap > .sched-static{order:3;margin-top:0.8rem}
.sched-static .sched-scroll,.sched-compare .sched-scroll{overflow-x:auto;max-width:100%}
.sched-static svg,.sched-compare svg{display:block;height:auto}
.sched-gantt{width:100%}
.sched-charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,420px),1fr));gap:0.6rem;margin-top:0.6rem}
.sched-chart{width:100%;min-width:470px;border:1px solid var(--line);border-radius:8px}
.sched-charts{overflow-x:auto}
#stage:has(> .sched-svg){overflow-x:auto}
</style>"""


def static(trace: SchedulerTrace) -> str:
    series = trace.series
    if not series["step"]:
        return ""
    label = attr(msg("Timeline and charts"))
    bounds = dv.buckets(len(series["step"]), MAX_COLS)
    chart_bounds = dv.buckets(len(series["step"]), MAX_COLS // 2)
    return (
        LAYOUT + f'<section class="sched-static" aria-label="{label}" '
        f'data-frame-cols="{attr(json.dumps(frame_columns(trace, bounds)))}" '
        f'data-chart-cols="{attr(json.dumps(frame_columns(trace, chart_bounds)))}">'
        + gantt(trace)
        + charts(trace)
        + summary_table(trace.summary)
        + "</section>"
    )
