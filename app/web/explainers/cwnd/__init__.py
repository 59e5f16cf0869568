"""Web half of the congestion-control explainer: charts with a step cursor, a per-step card,
a link/flows editor and the compare page."""

from __future__ import annotations

from app.sim.congestion.params import AQMS, CC_NAMES, CONNECTS, MAX_FLOWS
from app.sim.congestion.run import CwndSeries, CwndState
from app.sim.core import msg
from app.web.editor import EditorSpec, FieldSpec, Group, OneOf, Rows, number, whole
from app.web.explainers.cwnd.charts import PLOTLY_JS, PLOTLY_PACKAGE
from app.web.explainers.cwnd.compare import router
from app.web.explainers.cwnd.picture import picture, static
from app.web.explainers.cwnd.quiz import question
from app.web.explainers.cwnd.recording import RECORDING
from app.web.explainers.cwnd.thumbnail import still, thumbnail
from app.web.plugin import Action, Thumbnail, WebView

EDITOR = EditorSpec(
    groups=(
        Group(
            key="link",
            legend=msg("Bottleneck link"),
            fields=(
                number("rate_mbps", msg("rate"), unit=msg("Mbit/s")),
                number("rtt_ms", msg("base RTT"), unit=msg("ms")),
                OneOf(
                    name="buffer",
                    label=msg("buffer"),
                    keys=("buffer_packets", "buffer_bytes", "buffer_bdp"),
                ),
                number("loss_rate", msg("random loss"), 0, 0.5, unit=msg("0–0.5")),
                FieldSpec(key="aqm", label=msg("queue discipline"), kind="choice", choices=AQMS),
                number("red_min_packets", msg("RED min"), 0, unit=msg("packets")),
                number("red_max_packets", msg("RED max"), 0, unit=msg("packets")),
                number("red_max_p", msg("RED max_p"), 0, 1, unit=msg("0–1")),
            ),
        ),
        Group(
            key=None,
            legend=msg("Run"),
            fields=(
                number("duration_s", msg("duration"), 0, unit=msg("s")),
                whole("mss", msg("MSS"), unit=msg("bytes")),
                whole("seed", msg("seed"), 0),
                number("sample_ms", msg("sample every"), unit=msg("ms")),
                whole(
                    "comp_sack_nr", msg("SACK compression (0 = off)"), unit=msg("tcp_comp_sack_nr")
                ),
                FieldSpec(
                    key="connect",
                    label=msg("start with"),
                    kind="choice",
                    choices=CONNECTS,
                    labels={"handshake": msg("handshake"), "established": msg("established")},
                ),
            ),
        ),
    ),
    rows=(
        Rows(
            key="flows",
            legend=msg("Flows"),
            item=msg("flow"),
            fields=(
                FieldSpec(key="cc", label=msg("cc"), kind="choice", choices=CC_NAMES),
                number("start_s", msg("start"), 0, unit=msg("s")),
                number("rtt_ms", msg("own RTT"), unit=msg("ms, optional")),
                whole("tcp_ecn", msg("tcp_ecn"), 0, 2, unit=msg("0, 1 or 2")),
                whole("rwnd_bytes", msg("receive window"), unit=msg("bytes, optional")),
            ),
            new_row={"cc": "cubic", "start_s": 0},
            max_rows=MAX_FLOWS,
            reorder=False,
        ),
    ),
)

VIEW: WebView[CwndState, CwndSeries] = WebView(
    picture=picture,
    static=static,
    scripts=(
        PLOTLY_JS,
        "/static/explainers/cwnd/charts.js",
        "/static/explainers/cwnd/chart-cursor.js",
    ),
    styles=("/static/explainers/cwnd/cwnd.css",),
    packages=(PLOTLY_PACKAGE,),
    still=still,  # the step as a file: a chart drawn server-side (plotly.js needs the page)
    editor=EDITOR,
    router=router,
    actions=(Action(key="compare", label=msg("Compare"), path="compare"),),
    # mid-run, a loss halves the window: one tooth of the sawtooth
    thumbnail=Thumbnail(preset="reno-sawtooth", step=19, draw=thumbnail),
    question=question,  # cwnd / ssthresh after the next loss, recovery exit or round
    recording=RECORDING,  # a `stepscope record cwnd` run beside the model (issue 23)
    export_ready="() => !document.querySelector('.plotly-pending, .plotly-drawing') && [...document.querySelectorAll('.js-plotly-plot')].every(el => el.querySelector('.main-svg'))",  # noqa: E501 - Plotly has drawn every chart
)
