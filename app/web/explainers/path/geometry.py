"""The packet-path picture's grid: its bands and sizes, the eight lanes and which of the
simulation's finer layers each lane holds, and the words for lanes and layers (catalog
messages, rendered per request in the reader's language)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from app.sim.core import Message, msg

WIDTH = 1000
LABEL_W = 96  # lane name column (sticky: static/explainers/path/lanes.js keeps it in view)
PLOT_X0 = 104
PLOT_X1 = 598
HOOK_ROWS_Y = (12, 28, 44)  # baselines of three rows of hook labels above the lanes
LANE_Y0 = 48
LANE_H = 20
LANES_BOTTOM = LANE_Y0 + 8 * LANE_H
RIGHT_X = 612
STACK_Y0 = 57  # top of the first call-stack line
STACK_LINE = 16
STACK_MAX = 9  # stack lines shown; deeper stacks fold their middle
STACK_HEAD = 2  # outermost calls kept when folding (the entry: syscall, softirq, IRQ)
GAP = 6  # vertical gap between the picture's bands
STATUS_ROW = 20
HDR_STRIP = 26  # one row of header-offset labels with leaders down to the skb
SUMMARY_ROW = 24  # one row of the frags / frag_list summary
LEGEND_ROW = 22


LANES: tuple[tuple[str, Message], ...] = (  # rendered per request, in the reader's language
    ("user", msg("user space")),
    ("socket", msg("socket")),
    ("tcp", msg("TCP")),
    ("ip", msg("IP")),
    ("netfilter", msg("netfilter")),
    ("core", msg("core")),
    ("driver", msg("driver")),
    ("hardware", msg("hardware")),
)
LANE_INDEX = {key: i for i, (key, _) in enumerate(LANES)}
# The simulation's finer layers, grouped into the eight lanes of issue #13.
LAYER_LANE: dict[str, str] = {
    "user": "user",
    "socket": "socket",
    "tcp": "tcp",
    "ip": "ip",
    "route": "ip",
    "neigh": "ip",
    "netfilter": "netfilter",
    "bridge": "core",
    "core": "core",
    "dev": "core",
    "qdisc": "core",
    "napi": "core",
    "gro": "core",
    "softirq": "core",
    "link": "core",
    "driver": "driver",
    "vxlan": "driver",
    "irq": "driver",
    "hardware": "hardware",
}
# A layer's name beside the current function (rendered per request; the key stays in
# ``data-layer``). Subsystem names that are kernel words stay as they are in every language.
LAYER_NAMES: dict[str, Message] = {
    "user": msg("user space"),
    "socket": msg("socket"),
    "tcp": msg("TCP"),
    "ip": msg("IP"),
    "route": msg("routing"),
    "neigh": msg("neighbour"),
    "netfilter": msg("netfilter"),
    "bridge": msg("bridge"),
    "core": msg("core"),
    "dev": msg("device"),
    "qdisc": msg("qdisc"),
    "napi": msg("NAPI"),
    "gro": msg("GRO"),
    "softirq": msg("softirq"),
    "link": msg("link layer"),
    "driver": msg("driver"),
    "vxlan": msg("VXLAN"),
    "irq": msg("IRQ"),
    "hardware": msg("hardware"),
}


# Where hooks crowd together their labels shrink to these (the full name is in a tooltip and
# in the current function's label when the step is at the hook).
HOOK_SHORT = {
    "PRE_ROUTING": "PRE",
    "LOCAL_IN": "IN",
    "FORWARD": "FWD",
    "LOCAL_OUT": "OUT",
    "POST_ROUTING": "POST",
    "BR_PRE_ROUTING": "br PRE",
    "BR_LOCAL_IN": "br IN",
}

TCP_LAYERS = frozenset({"tcp", "socket"})


def attr(value: object) -> str:
    """``value`` escaped for an XML attribute."""
    return escape(str(value), quote=True)


def lane_of(state: Mapping[str, object]) -> str:
    """The lane a frame's layer is drawn in."""
    return LAYER_LANE.get(str(state.get("layer")), "core")


def lane_y(lane: str) -> float:
    """The centre line of ``lane``."""
    return LANE_Y0 + LANE_INDEX[lane] * LANE_H + LANE_H / 2
