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

from app.sim.core import Message, Trace, msg
from app.web.explainers.scheduler import derive as dv
from app.web.explainers.scheduler import style as st
from app.web.explainers.scheduler.style import attr

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
PHASE_LABEL = {
    dv.WAITING: str(msg("waiting")),
    dv.STALLED: str(msg("running, no tokens")),
    dv.DECODE: str(msg("decode")),
    dv.PREFILL: str(msg("prefill chunk")),
    dv.RECOMPUTE: str(msg("recompute")),
    dv.PREEMPTED_WAIT: str(msg("preempted, waiting")),
    dv.PREEMPTED: str(msg("preempted")),
}
LEGEND = (
    dv.WAITING,
    dv.PREFILL,
    dv.DECODE,
    dv.RECOMPUTE,
    dv.STALLED,
    dv.PREEMPTED,
    dv.PREEMPTED_WAIT,
)


def frame_columns(trace: Trace[Any, Any], bounds: Sequence[int]) -> list[int]:
    series = trace.series
    return [
        dv.column_of(bounds, dv.series_index(series, int(f.state.get("step", 0))))
        for f in trace.frames
    ]


def _cursor(prefix: str, x0: float, colw: float, top: float, height: float) -> str:
    return (
        f'<rect id="{prefix}-cursor" class="cursor-col sched-cursor" x="{x0:.2f}" y="{top:.1f}" '
        f'width="{max(colw, 3):.2f}" height="{height:.1f}" data-x0="{x0:.2f}" data-colw="{colw:.4f}"/>'
    )


def gantt(
    trace: Trace[Any, Any], *, prefix: str = "gantt", cursor: bool = True, span: int = 0
) -> str:
    """``span``: draw on an axis of that many steps (≥ the run's), to line up two runs."""
    series = trace.series
    n_steps = max(len(series["step"]), span)
    results = series["requests"]
    rows = min(MAX_GANTT_ROWS, len(results))
    codes, toks = dv.phases(series, [r["prompt_tokens"] for r in results], rows)
    bounds = dv.buckets(n_steps, MAX_COLS)
    cols = len(bounds) - 1
    plot_w = GW - LABEL_W - 10
    colw = plot_w / max(cols, 1)
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
    aria = attr(msg("Timeline: each request’s phase at every step"))
    heading = attr(msg("Timeline"))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{prefix}" class="sched-svg sched-gantt" '
        f'viewBox="0 0 {GW} {top + height + 64}" style="min-width:{GW}px" role="img" '
        f'aria-label="{aria}" data-cols="{cols}" '
        f'data-rows="{rows}" data-steps="{n_steps}">',
        st.style(),
        st.defs(prefix),
        f'<text x="6" y="16" class="title">{heading}</text>',
        f'<text x="86" y="16" class="muted">{attr(sub)}</text>',
    ]
    if cursor:
        out.append(_cursor(prefix, LABEL_W, colw, top - 2, height + 4))
    for i in range(rows):
        y = top + i * ROW_H
        rid = results[i]["id"]
        out.append(
            f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end" class="mono" '
            f'style="font-size:12px">{attr(rid[:9])}</text>'
        )
        out.append(f'<g id="{prefix}-r{i}" data-req="{attr(rid)}">')
        for c0, c1, code, tk in dv.runs(codes[i], toks[i], bounds):
            fill = PHASE_FILL[code].format(p=prefix)
            op = PHASE_OPACITY.get(code)
            s0 = dv.step_label(series, bounds[c0])
            s1 = dv.step_label(series, min(bounds[c1], len(series["step"])) - 1)
            if s0 == s1:
                tip = str(msg("{id}: {phase}, step {a}", id=rid, phase=PHASE_LABEL[code], a=s0))
            else:
                tip = str(
                    msg("{id}: {phase}, steps {a}–{b}", id=rid, phase=PHASE_LABEL[code], a=s0, b=s1)
                )
            if tk:
                tip += str(msg(", {tokens} tokens scheduled", tokens=tk))
            out.append(
                f'<rect x="{LABEL_W + c0 * colw:.2f}" y="{y + 1}" width="{(c1 - c0) * colw:.2f}" '
                f'height="{ROW_H - 3}" fill="{fill}"{f" fill-opacity={chr(34)}{op}{chr(34)}" if op else ""} '
                f'data-phase="{attr(dv.PHASE_NAMES[code])}"><title>{attr(tip)}</title></rect>'
            )
        out.append("</g>")
    # step axis
    ay = top + height + 14
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
    lx = 6.0
    ly = ay + 30
    for code in LEGEND:
        label = PHASE_LABEL[code]
        fill = PHASE_FILL[code].format(p=prefix)
        op = PHASE_OPACITY.get(code)
        out.append(
            f'<rect x="{lx}" y="{ly - 11}" width="18" height="13" fill="{fill}"'
            f"{f' fill-opacity={chr(34)}{op}{chr(34)}' if op else ''}/>"
        )
        out.append(f'<text x="{lx + 23}" y="{ly}">{attr(label)}</text>')
        lx += 36 + 7.0 * len(label)
    out.append("</svg>")
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
        + attr(str(msg("Timeline of every request")))
        + '">'
        + "".join(out)
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


def _line_chart(
    prefix: str,
    title: str,
    series: Any,
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
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{prefix}" class="sched-svg sched-chart" '
        f'viewBox="0 0 {CW} {CH}" role="img" aria-label="{attr(title)}" data-cols="{cols}">',
        st.style(),
        f'<text x="6" y="18" class="title">{attr(title)}</text>',
    ]
    lx = CL + 8.0 * len(title) - 30
    for label, _, cls in lines:
        out.append(
            f'<line class="{cls}" x1="{lx}" x2="{lx + 18}" y1="13" y2="13"/>'
            f'<text x="{lx + 22}" y="18" class="muted">{attr(label)}</text>'
        )
        lx += 40 + 7.2 * len(label)
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
    out.append("</svg>")
    return "".join(out)


def _hist(
    prefix: str, title: str, sets: Sequence[tuple[str, Sequence[float], str]], unit: str
) -> str:
    values = [v for _, vs, _ in sets for v in vs]
    pw = CW - CL - CR
    ph = CH - CT - CB
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{prefix}" class="sched-svg sched-chart" '
        f'viewBox="0 0 {CW} {CH}" role="img" aria-label="{attr(title)}">',
        st.style(),
        f'<text x="6" y="18" class="title">{attr(title)}</text>',
    ]
    if not values:
        nothing = attr(msg("no finished request yet"))
        out.append(f'<text x="{CL}" y="{CT + 40}" class="muted">{nothing}</text></svg>')
        return "".join(out)
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
    lx = 14 + 8.5 * len(title)
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
            out.append(
                f'<rect x="{x:.1f}" y="{CT + ph - h:.1f}" width="{bw / len(sets) - 1:.1f}" '
                f'height="{h:.1f}" fill="{colour}"><title>{tip}</title></rect>'
            )
        mean = sum(vs) / len(vs) if vs else 0.0
        key = attr(
            msg(
                "{label} · mean {mean} · {count} requests",
                label=label,
                mean=_secs(mean, hi),
                count=len(vs),
            )
        )
        out.append(
            f'<rect x="{lx}" y="7" width="14" height="12" fill="{colour}"/>'
            f'<text x="{lx + 19}" y="18" class="muted">{key}</text>'
        )
        lx += 150 + 7 * len(label)
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
    out.append("</svg>")
    return "".join(out)


def charts(
    trace: Trace[Any, Any], *, prefix: str = "chart", cursor: bool = True, span: int = 0
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
        "",
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
        "",
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


def static(trace: Trace[Any, Any]) -> str:
    series = trace.series
    if not series or not series.get("step"):
        return ""
    bounds = dv.buckets(len(series["step"]), MAX_COLS)
    chart_bounds = dv.buckets(len(series["step"]), MAX_COLS // 2)
    return (
        LAYOUT + f'<section class="sched-static" aria-label="Timeline and charts" '
        f'data-frame-cols="{attr(json.dumps(frame_columns(trace, bounds)))}" '
        f'data-chart-cols="{attr(json.dumps(frame_columns(trace, chart_bounds)))}">'
        + gantt(trace)
        + charts(trace)
        + summary_table(trace.summary)
        + "</section>"
    )
