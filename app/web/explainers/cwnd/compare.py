"""Compare mode for congestion control: the same link, one algorithm per chart, one time cursor."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from app.sim.congestion.params import CC_NAMES as ALGOS
from app.sim.congestion.run import CwndTrace
from app.sim.core import ParamError, ParamIssue, msg
from app.sim.core.validate import excerpt
from app.web.errors import wants_json
from app.web.explainers.cwnd.charts import cwnd_figure, shared_ranges
from app.web.explainers.cwnd.picture import summary_table
from app.web.site import Site
from app.web.sources import SiteDep
from app.web.templating import render

router = APIRouter()
TEMPLATE = "explainers/cwnd/compare.html"


@router.get("/explainers/cwnd/compare", response_class=HTMLResponse)
def compare(
    request: Request,
    site: SiteDep,
    algos: Annotated[
        str, Query(max_length=40, description="2 or 3 of reno, cubic, bbr")
    ] = "reno,cubic,bbr",
    rate_mbps: Annotated[float, Query()] = 100.0,
    rtt_ms: Annotated[float, Query()] = 40.0,
    buffer_bdp: Annotated[float, Query()] = 1.0,
    duration_s: Annotated[float, Query()] = 30.0,
) -> Response:
    form: dict[str, object] = {
        "algos": algos,
        "rate_mbps": rate_mbps,
        "rtt_ms": rtt_ms,
        "buffer_bdp": buffer_bdp,
        "duration_s": duration_s,
    }
    try:
        chosen = _choose(algos)
        traces = [_run(site, cc, rate_mbps, rtt_ms, buffer_bdp, duration_s) for cc in chosen]
        # one y-range per chart row across panels, so heights compare by eye
        ranges = shared_ranges(t.series for t in traces)
        panels = [
            _panel(i, cc, t, ranges) for i, (cc, t) in enumerate(zip(chosen, traces, strict=True))
        ]
    except ParamError as exc:
        if wants_json(request):
            raise
        # The form stays on screen with the problems listed (htmx swaps 200 answers only).
        failed = {"panels": [], "form": form, "algos": ALGOS, "chosen": [], "issues": exc.issues}
        status = 200 if request.headers.get("HX-Request") == "true" else 422
        return render(request, TEMPLATE, failed, status_code=status)
    ctx: dict[str, object] = {
        "panels": panels,
        "form": {**form, "algos": ",".join(chosen)},
        "algos": ALGOS,
        "chosen": chosen,
        "issues": (),
    }
    return render(request, TEMPLATE, ctx)


def _choose(algos: str) -> list[str]:
    chosen = [a.strip() for a in algos.split(",") if a.strip()]
    bad = [a for a in chosen if a not in ALGOS]
    if bad or not 2 <= len(chosen) <= 3 or len(set(chosen)) != len(chosen):
        raise ParamError.single(
            ("query", "algos"),
            msg(
                "choose 2 or 3 different algorithms from {names}; you gave {what}",
                names=", ".join(ALGOS),
                what=repr(excerpt(algos)),
            ),
        )
    return chosen


def _run(
    site: Site,
    cc: str,
    rate_mbps: float,
    rtt_ms: float,
    buffer_bdp: float,
    duration_s: float,
) -> CwndTrace:
    raw = {
        "link": {"rate_mbps": rate_mbps, "rtt_ms": rtt_ms, "buffer_bdp": buffer_bdp},
        "flows": [{"cc": cc, "start_s": 0}],
        "duration_s": duration_s,
    }
    try:
        _, trace = site.run(site.plugin("cwnd"), raw)
    except ParamError as exc:  # report against the query fields the user typed
        raise ParamError(
            [
                ParamIssue(loc=("query", str(issue.loc[-1])), msg=issue.message)
                for issue in exc.issues
            ]
        ) from exc
    return trace


def _panel(i: int, cc: str, trace: CwndTrace, ranges: dict[str, list[float]]) -> dict[str, object]:
    chart = cwnd_figure(trace.series, div_id=f"compare-{i}", title=cc.upper(), y_ranges=ranges)
    return {"cc": cc, "chart": Markup(chart), "summary": Markup(summary_table(trace.summary))}
