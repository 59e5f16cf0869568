"""Compare mode: one preset's workload under two configs, summaries and timelines side by side.

``GET /explainers/scheduler/compare?preset=<slug>&vary=<what>`` runs the preset as given and
the same workload with one setting changed: ``batching`` (continuous ↔ static, the default),
``chunked_prefill``, ``prefix_caching`` or ``policy`` (fcfs ↔ priority).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypedDict

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from app.sim.core import Message, ParamError, ParamIssue, Preset, msg
from app.sim.serving.explainer import SchedulerTrace
from app.web.errors import wants_json
from app.web.explainers.scheduler.timeline import LAYOUT, charts, gantt, summary_rows
from app.web.plugin import Plugin
from app.web.site import Site
from app.web.sources import SiteDep
from app.web.templating import render

router = APIRouter()
TEMPLATE = "explainers/scheduler/compare.html"
VARY = {
    "batching": ("batching", ("continuous", "static")),
    "chunked_prefill": ("enable_chunked_prefill", (True, False)),
    "prefix_caching": ("enable_prefix_caching", (True, False)),
    "policy": ("policy", ("fcfs", "priority")),
}
# What the "Change" menu says for each choice (the setting's vLLM name stays in the label).
VARY_LABELS: dict[str, Message] = {
    "batching": msg("batching (continuous ↔ static)"),
    "chunked_prefill": msg("chunked prefill on ↔ off"),
    "prefix_caching": msg("prefix caching on ↔ off"),
    "policy": msg("policy (fcfs ↔ priority)"),
}
DEFAULTS: dict[str, str | bool] = {
    "batching": "continuous",
    "enable_chunked_prefill": True,
    "enable_prefix_caching": True,
    "policy": "fcfs",
}


def _varied(raw: dict[str, Any], vary: str) -> tuple[dict[str, Any], str, str]:
    key, (a, b) = VARY[vary]
    other = copy.deepcopy(raw)
    config = other.setdefault("config", {})
    now = config.get(key, DEFAULTS[key])
    config[key] = b if now == a else a
    if key == "enable_chunked_prefill" and config[key] is False:
        # vLLM refuses chunked prefill off with a budget below max_model_len: raise the budget.
        mml = config.get("max_model_len", 2048)
        config["max_num_batched_tokens"] = max(config.get("max_num_batched_tokens", 2048), mml)
    return other, f"{key}={_show(now)}", f"{key}={_show(config[key])}"


def _show(v: object) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


@router.get("/explainers/scheduler/compare", response_class=HTMLResponse)
def compare(
    request: Request,
    site: SiteDep,
    preset: Annotated[str, Query(max_length=60)] = "continuous-batching",
    vary: Annotated[str, Query(max_length=30)] = "batching",
) -> Response:
    plugin = site.plugin("scheduler")
    presets = {p.slug: p for p in plugin.sim.presets}
    form = {"preset": preset, "vary": vary}
    try:
        issues = []
        if preset not in presets:
            issues.append(
                ParamIssue(
                    loc=("query", "preset"),
                    msg=msg("choose one of {names}", names=", ".join(presets)),
                )
            )
        if vary not in VARY:
            issues.append(
                ParamIssue(
                    loc=("query", "vary"), msg=msg("choose one of {names}", names=", ".join(VARY))
                )
            )
        if issues:
            raise ParamError(issues)
        raw = copy.deepcopy(dict(presets[preset].params))
        other, label_a, label_b = _varied(raw, vary)
        traces = [_run(site, plugin, raw, label_a), _run(site, plugin, other, label_b)]
        span = max(len(t.series["step"]) for t in traces)
        panels = [
            _panel(t, label, i, span)
            for i, (t, label) in enumerate(zip(traces, (label_a, label_b), strict=True))
        ]
    except ParamError as exc:
        if wants_json(request):
            raise
        failed = _ctx(presets, form, [], [], exc.issues)
        status = 200 if request.headers.get("HX-Request") == "true" else 422
        return render(request, TEMPLATE, failed, status_code=status)
    rows = [
        (label, a, b)
        for (label, a), (_, b) in zip(panels[0]["summary"], panels[1]["summary"], strict=True)
    ]
    return render(request, TEMPLATE, _ctx(presets, form, panels, rows, ()))


class Panel(TypedDict):
    """One config's column of the page (the template reads these keys)."""

    label: str
    gantt: Markup
    charts: Markup
    summary: list[tuple[Message, str]]


def _ctx(
    presets: Mapping[str, Preset],
    form: dict[str, str],
    panels: list[Panel],
    rows: list[tuple[Message, str, str]],
    issues: Sequence[ParamIssue],
) -> dict[str, object]:
    return {
        "panels": panels,
        "rows": rows,
        "form": form,
        "presets": list(presets.values()),
        "vary_options": list(VARY),
        "vary_labels": {k: str(v) for k, v in VARY_LABELS.items()},
        "issues": issues,
        "layout": Markup(LAYOUT),
    }


def _run(site: Site, plugin: Plugin, raw: dict[str, Any], label: str) -> SchedulerTrace:
    """The trace of ``raw`` (the site's run of this explainer, so a scheduler trace)."""
    try:
        _, trace = site.run(plugin, raw)
    except ParamError as exc:
        raise ParamError(
            [
                ParamIssue(
                    loc=("query", "vary"),
                    msg=Message("{label}: {issue}", {"label": label, "issue": issue.message}),
                )
                for issue in exc.issues
            ]
        ) from exc
    return trace


def _panel(trace: SchedulerTrace, label: str, i: int, span: int) -> Panel:
    """One config's timeline and charts, on a step axis shared with the other config."""
    return {
        "label": label,
        "gantt": Markup(
            gantt(trace, prefix=f"cmp{i}-gantt", cursor=False, span=span, config=label)
        ),
        "charts": Markup(charts(trace, prefix=f"cmp{i}", cursor=False, span=span)),
        "summary": summary_rows(trace.summary),
    }
