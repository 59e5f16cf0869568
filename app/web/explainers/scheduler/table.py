"""The request table: one row per request in the frame (running in list order, those that
finished this step, the head of the waiting queue), with what it did this step, its progress
through prompt and outputs, and the rows that changed marked."""

from __future__ import annotations

from app.sim.core import msg
from app.sim.serving.explainer import SchedulerTrace
from app.sim.serving.narrate import ReqView, StepState
from app.web.explainers.scheduler import labels as lb
from app.web.explainers.scheduler import style as st
from app.web.explainers.scheduler.budget import blocked_head, heading
from app.web.explainers.scheduler.style import PAD, W, fit, text
from app.web.svgtext import attr

INNER = W - 2 * PAD
MAX_ROWS = 18  # request-table rows (changed rows are always kept)
ROW_H = 24
BAR_X = 384
BAR_W = 120

COLS = (
    (msg("request"), 10),
    (msg("queue"), 112),
    (msg("phase"), 196),
    (msg("computed / to compute"), BAR_X),
    (msg("outputs"), 616),
    (msg("this step"), 700),
    (msg("blocks"), 778),
    (msg("prio · preempt."), 846),
)


def rows(state: StepState) -> list[ReqView]:
    """The views to list: all of them when they fit, else the changed ones and the first
    others, in frame order."""
    views = state["requests"]
    if len(views) <= MAX_ROWS:
        return list(views)
    changed = set(state["preempted"]) | set(state["finished"]) | set(state["admitted"])
    keep = [v for v in views if v["id"] in changed]
    others = [v for v in views if v["id"] not in changed][: max(MAX_ROWS - len(keep), 0)]
    picked = {id(v) for v in keep + others}
    return [v for v in views if id(v) in picked]


class _Step:
    """What the step did to each request, read once per picture."""

    def __init__(self, state: StepState) -> None:
        self.preempted = set(state["preempted"])
        self.finished = set(state["finished"])
        self.admitted = set(state["admitted"])
        self.arrived = set(state["arrived"])
        self.running = {v["id"] for v in state["requests"] if v["phase"] in ("prefill", "decode")}
        head = blocked_head(state)
        stop = state["waiting_stop"]
        self.stopped = head[0] if head is not None and stop in lb.STOP else None
        self.stop = stop
        self.kinds = dict(zip(state["spend"]["ids"], state["spend"]["kinds"], strict=False))

    def queue(self, rid: str) -> str:
        if rid in self.finished:
            return "finished"
        return "running" if rid in self.running else "waiting"

    def change(self, rid: str) -> tuple[str, str]:
        """(row class, data-change tag) of a request's row."""
        if rid in self.preempted:
            return "row-preempted", "preempted"
        if rid in self.finished:
            return "row-finished", "finished"
        if rid in self.admitted:
            return "row-admitted", ""
        if rid == self.stopped and self.stop == "head_of_line":
            return "row-blocked", "blocked"
        return "", ""

    def phase(self, v: ReqView, tag: str) -> str:
        """What the request did this step (its tokens' kind), else where it stands."""
        rid = v["id"]
        kind = self.kinds.get(rid)
        shown = lb.word(lb.KIND, kind) if kind else lb.word(lb.PHASE, v["phase"])
        if tag == "preempted":
            shown = str(msg("preempted now"))
        elif tag == "finished":
            shown = str(msg("finished now"))
        elif rid in self.admitted:
            shown = str(msg("admitted · {phase}", phase=shown))
        elif rid == self.stopped:
            shown = lb.word(lb.STOP, self.stop)
        if rid in self.arrived and rid not in self.admitted and not tag:
            shown = str(msg("arrived · {phase}", phase=shown))
        return shown


def _progress(v: ReqView, ry: float) -> list[str]:
    """The computed / to-compute bar, the end of the prompt marked, and the figures."""
    rid = v["id"]
    prompt = v["prompt_tokens"]
    total = v["num_tokens"]
    computed = v["computed"]
    out = [f'<rect class="bar-bg" x="{BAR_X}" y="{ry + 5}" width="{BAR_W}" height="12"/>']
    if total > 0:
        pw = BAR_W * min(prompt, total) / total
        cw = BAR_W * min(computed, total) / total
        out.append(
            f'<rect id="prog-{attr(rid)}" x="{BAR_X}" y="{ry + 5}" width="{cw:.1f}" height="12" '
            f'fill="{st.PREFILL if computed < prompt else st.DECODE}"/>'
        )
        out.append(
            f'<line x1="{BAR_X + pw:.1f}" x2="{BAR_X + pw:.1f}" y1="{ry + 2}" y2="{ry + 20}" '
            'style="stroke:var(--fg);stroke-width:1.5"><title>'
            + attr(msg("end of the prompt"))
            + "</title></line>"
        )
    out.append(text(510, ry + 16, f"{computed}/{total}", "mono"))
    return out


def _row(
    v: ReqView, step: _Step, index: dict[str, int], ry: float, focus: bool
) -> tuple[list[str], bool]:
    """One request's row; ``focus``: mark it as the one to keep in view if it changed.
    Returns the markup and whether it took the focus."""
    rid = v["id"]
    row_cls, tag = step.change(rid)
    out = [
        f'<g id="row-{attr(rid)}" class="req{" changed" if row_cls else ""}" data-req="{attr(rid)}" '
        f'data-phase="{attr(v["phase"])}" data-queue="{step.queue(rid)}"'
        f"{' data-change=' + chr(34) + tag + chr(34) if tag else ''}>"
    ]
    if row_cls:
        out.append(
            f'<rect class="{row_cls}" x="{PAD - 4}" y="{ry}" width="{INNER + 8}" '
            f'height="{ROW_H - 2}" rx="3"/>'
        )
    fill, _ = st.owner_colour(index.get(rid, 0))
    out.append(f'<rect x="{PAD}" y="{ry + 5}" width="12" height="12" fill="{fill}"/>')
    out.append(text(PAD + 18, ry + 16, rid[:12], "mono", style="font-weight:700"))
    took = bool(tag) and focus
    if took:
        out.append(f'<rect x="{PAD}" y="{ry}" width="2" height="2" fill="none" data-focus="1"/>')
    out.append(text(112, ry + 16, fit(lb.word(lb.QUEUE, step.queue(rid)), 80)))
    shown = fit(step.phase(v, tag), BAR_X - 196 - 8)
    out.append(
        text(196, ry + 16, shown, style="font-weight:700") if tag else text(196, ry + 16, shown)
    )
    out.extend(_progress(v, ry))
    out.append(text(616, ry + 16, f"{v['output_tokens']}/{v['max_tokens']}", "mono"))
    out.append(text(700, ry + 16, str(v["scheduled"]) if v["scheduled"] else "–", "mono"))
    out.append(text(778, ry + 16, str(len(v["blocks"])), "mono"))
    out.append(text(846, ry + 16, f"{v['priority']} · {v['num_preemptions']}", "mono"))
    out.append("</g>")
    return out, took


def _victim_row(rid: str, ry: float) -> str:
    """A preemption victim deep in a long waiting queue (not among the frame's views)."""
    return (
        f'<g id="row-{attr(rid)}" class="req changed" data-req="{attr(rid)}" '
        'data-phase="preempted" data-queue="waiting" data-change="preempted">'
        f'<rect class="row-preempted" x="{PAD - 4}" y="{ry}" width="{INNER + 8}" '
        f'height="{ROW_H - 2}" rx="3"/>'
        + text(PAD + 18, ry + 16, rid[:12], "mono")
        + text(112, ry + 16, lb.word(lb.QUEUE, "waiting"))
        + text(196, ry + 16, str(msg("preempted now")), style="font-weight:700")
        + "</g>"
    )


def draw(trace: SchedulerTrace, state: StepState, y: float) -> tuple[str, float, bool]:
    """The table from ``y``; returns its markup, the y below it and whether a changed row
    carries the focus mark."""
    index = {rid: i for i, rid in enumerate(trace.series["request_ids"])}
    step = _Step(state)
    views = rows(state)
    running_n = state["num_running"]
    waiting_n = state["num_waiting"]
    counts = msg(
        "{running} running · {waiting} waiting · {finished} finished",
        running=running_n,
        waiting=waiting_n,
        finished=state["num_finished"],
    )
    head, base = heading(str(msg("Requests")), str(counts), y + 15)
    out = ['<g id="requests">', *head]
    hy = base + 25
    edges = [x for _, x in COLS[1:]] + [W - PAD]
    for (label, x), end in zip(COLS, edges, strict=True):
        out.append(text(x, hy, fit(str(label), end - x - 6), "muted"))
    out.append(f'<line class="gridline" x1="{PAD}" x2="{W - PAD}" y1="{hy + 6}" y2="{hy + 6}"/>')
    ry = hy + 10
    focused = False
    for v in views:
        row, took = _row(v, step, index, ry, not focused)
        out.extend(row)
        focused = focused or took
        ry += ROW_H
    listed = {v["id"] for v in views}
    for rid in sorted(step.preempted - listed):
        out.append(_victim_row(rid, ry))
        ry += ROW_H
    hidden = len(state["requests"]) - len(views)
    more = running_n + waiting_n - len([v for v in views if v["id"] not in step.finished])
    if hidden > 0 or more > 0:
        line = msg("{count} more requests in the queues are not listed.", count=max(more, hidden))
        out.append(text(PAD, ry + 14, str(line), "muted"))
        ry += 20
    out.append("</g>")
    return "".join(out), ry + 4, focused
