"""Web half of the congestion-control explainer: charts with a step cursor, a per-step card,
a link/flows editor and the compare page."""

from __future__ import annotations

from app.sim.congestion.params import AQMS, CC_NAMES, CONNECTS, MAX_FLOWS
from app.sim.core import msg
from app.web.editor import EditorSpec, FieldSpec, Group, OneOf, Rows
from app.web.explainers.cwnd.charts import PLOTLY_JS, PLOTLY_PACKAGE
from app.web.explainers.cwnd.compare import router
from app.web.explainers.cwnd.picture import picture, static
from app.web.explainers.cwnd.quiz import question
from app.web.explainers.cwnd.thumbnail import still, thumbnail
from app.web.plugin import Action, Thumbnail, WebView

EDITOR = EditorSpec(
    groups=(
        Group(
            key="link",
            legend=msg("Bottleneck link"),
            fields=(
                FieldSpec(key="rate_mbps", label=msg("rate"), unit=msg("Mbit/s")),
                FieldSpec(key="rtt_ms", label=msg("base RTT"), unit=msg("ms")),
                OneOf(
                    name="buffer",
                    label=msg("buffer"),
                    keys=("buffer_packets", "buffer_bytes", "buffer_bdp"),
                ),
                FieldSpec(
                    key="loss_rate", label=msg("random loss"), unit=msg("0–0.5"), min=0, max=0.5
                ),
                FieldSpec(key="aqm", label=msg("queue discipline"), kind="choice", choices=AQMS),
                FieldSpec(key="red_min_packets", label=msg("RED min"), unit=msg("packets"), min=0),
                FieldSpec(key="red_max_packets", label=msg("RED max"), unit=msg("packets"), min=0),
                FieldSpec(key="red_max_p", label=msg("RED max_p"), unit=msg("0–1"), min=0, max=1),
            ),
        ),
        Group(
            key=None,
            legend=msg("Run"),
            fields=(
                FieldSpec(key="duration_s", label=msg("duration"), unit=msg("s"), min=0),
                FieldSpec(key="mss", label=msg("MSS"), kind="int", unit=msg("bytes")),
                FieldSpec(key="seed", label=msg("seed"), kind="int", min=0),
                FieldSpec(key="sample_ms", label=msg("sample every"), unit=msg("ms")),
                FieldSpec(
                    key="comp_sack_nr",
                    label=msg("SACK compression (0 = off)"),
                    kind="int",
                    unit=msg("tcp_comp_sack_nr"),
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
                FieldSpec(key="start_s", label=msg("start"), unit=msg("s"), min=0),
                FieldSpec(key="rtt_ms", label=msg("own RTT"), unit=msg("ms, optional")),
                FieldSpec(
                    key="tcp_ecn",
                    label=msg("tcp_ecn"),
                    kind="int",
                    unit=msg("0, 1 or 2"),
                    min=0,
                    max=2,
                ),
                FieldSpec(
                    key="rwnd_bytes",
                    label=msg("receive window"),
                    kind="int",
                    unit=msg("bytes, optional"),
                ),
            ),
            new_row={"cc": "cubic", "start_s": 0},
            max_rows=MAX_FLOWS,
            reorder=False,
        ),
    ),
)

VIEW = WebView(
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
    export_ready="() => !document.querySelector('.plotly-pending, .plotly-drawing') && [...document.querySelectorAll('.js-plotly-plot')].every(el => el.querySelector('.main-svg'))",  # noqa: E501 - Plotly has drawn every chart
)
