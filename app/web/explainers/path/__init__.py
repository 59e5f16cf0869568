"""Web half of the packet-path explainer (issue #13): the swimlane/stack/sk_buff picture and
a form for the top-level params."""

from __future__ import annotations

from app.sim.core import msg
from app.sim.path.engine import PathState
from app.sim.path.explainer import PathExplainer
from app.sim.path.params import (
    DEVICES,
    DROPS,
    HOOKS,
    MAX_FLOWS,
    MAX_PACKETS,
    MAX_PAYLOAD,
    MSS,
    NEIGH,
    PATHS,
    PSH,
    RX_MODES,
    SCENARIOS,
    PathParams,
)
from app.web.editor import EditorSpec, FieldSpec, Group
from app.web.explainers.path.picture import picture
from app.web.explainers.path.quiz import question
from app.web.explainers.path.recording import RECORDING
from app.web.plugin import Thumbnail, WebView

# Choices that are words, not kernel names (tx, veth, loopback, no_route, LOCAL_IN stay as
# they are: the Chinese pages keep them too)
_NONE = msg("none")
_WORDS = {
    "forward": msg("forward"),
    "plain": msg("plain"),
    "none": _NONE,
    "checksum": msg("checksum"),
    "last": msg("last"),
    "every": msg("every"),
    "cached": msg("cached"),
}

EDITOR = EditorSpec(
    groups=(
        Group(
            key=None,
            legend=msg("The walk"),
            fields=(
                FieldSpec(
                    key="path", label=msg("path"), kind="choice", choices=PATHS, labels=_WORDS
                ),
                FieldSpec(
                    key="device", label=msg("device"), kind="choice", choices=DEVICES, labels=_WORDS
                ),
                FieldSpec(key="packets", label=msg("packets"), kind="int", min=1, max=MAX_PACKETS),
                FieldSpec(
                    key="payload_bytes",
                    label=msg("payload"),
                    kind="int",
                    unit=msg("bytes"),
                    min=1,
                    max=MAX_PAYLOAD,
                ),
                FieldSpec(
                    key="scenario",
                    label=msg("scenario"),
                    kind="choice",
                    choices=SCENARIOS,
                    labels=_WORDS,
                ),
                FieldSpec(
                    key="drop", label=msg("drop"), kind="choice", choices=DROPS, labels=_WORDS
                ),
                FieldSpec(key="hook", label=msg("dropping hook"), kind="choice", choices=HOOKS),
            ),
        ),
        Group(
            key=None,
            legend=msg("Scenario details (leave empty for the defaults)"),
            fields=(
                FieldSpec(
                    key="psh", label=msg("PSH on"), kind="choice", choices=PSH, labels=_WORDS
                ),
                FieldSpec(
                    key="flows", label=msg("GRO burst flows"), kind="int", min=1, max=MAX_FLOWS
                ),
                FieldSpec(
                    key="last_bytes",
                    label=msg("last segment"),
                    kind="int",
                    unit=msg("bytes"),
                    min=0,
                    max=MSS,
                ),
                FieldSpec(key="rx_mode", label=msg("igb RX mode"), kind="choice", choices=RX_MODES),
                FieldSpec(
                    key="neigh", label=msg("neighbour"), kind="choice", choices=NEIGH, labels=_WORDS
                ),
                FieldSpec(
                    key="qdisc_queued", label=msg("already in qdisc"), kind="int", min=0, max=63
                ),
                FieldSpec(
                    key="same_bucket",
                    label=msg("GRO burst: every flow in the same gro_hash bucket"),
                    kind="bool",
                    default=PathParams().same_bucket,
                ),
                FieldSpec(
                    key="tso",
                    label=msg("TSO (the NIC segments one large skb)"),
                    kind="bool",
                    default=PathParams().tso,
                ),
                FieldSpec(
                    key="fast_path",
                    label=msg("TCP header prediction succeeds (fast path)"),
                    kind="bool",
                    default=PathParams().fast_path,
                ),
            ),
        ),
    )
)

VIEW: WebView[PathState, None] = WebView(
    picture=picture,
    editor=EDITOR,
    scripts=("/static/explainers/path/lanes.js",),
    question=question,  # which function runs next
    # the segment on its way down: IP pushes its header in __ip_queue_xmit
    thumbnail=Thumbnail(preset="send-segment", step=10),
    recording=RECORDING,  # a `stepscope record path` run beside the walks (issue 23)
)

__all__ = ["EDITOR", "VIEW", "PathExplainer"]
