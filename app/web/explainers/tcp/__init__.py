"""Web half of the TCP connection-lifecycle explainer: the state diagram + ladder + panels
picture, the RFC/Linux view switch, and a script editor."""

from __future__ import annotations

from app.sim.core import msg
from app.sim.tcp import TcpExplainer
from app.sim.tcp.params import CALLS, ENDPOINTS, HOWS, MAX_BYTES, MAX_EVENTS, NET_KINDS
from app.sim.tcp.state import TcpState
from app.web.editor import EditorSpec, FieldSpec, Group, Rows
from app.web.explainers.tcp.picture import picture
from app.web.explainers.tcp.quiz import question
from app.web.plugin import Thumbnail, WebView

_ALWAYS = ("t_ms", "endpoint")
_BY_CALL: dict[str, tuple[str, ...]] = {
    "listen": (*_ALWAYS, "backlog", "queued", "half_open"),
    "connect": (*_ALWAYS, "nonblock", "keepalive"),
    "accept": (*_ALWAYS, "keepalive"),
    "send": (*_ALWAYS, "bytes"),
    "recv": (*_ALWAYS, "bytes"),
    "shutdown": (*_ALWAYS, "how"),
    "close": _ALWAYS,
    "abort": _ALWAYS,
}
_BY_EVENT: dict[str, tuple[str, ...]] = {
    "drop": ("from", "nth", "count"),
    "delay": ("from", "nth", "ms"),
    "duplicate": ("from", "nth"),
    "reorder": ("from", "nth"),
}
_MS = msg("ms")
_S = msg("s")
_BYTES = msg("bytes")
# The choices in words; the syscall and SHUT_* names are the kernel's, and "delay" stays as it
# is (the site shows it as a value elsewhere, e.g. HyStart's delay method)
_WHO = {"client": msg("client"), "server": msg("server")}
_EVENTS = {
    "drop": msg("drop"),
    "duplicate": msg("duplicate"),
    "reorder": msg("reorder"),
}
_SYSCTL_FIELDS = (
    FieldSpec(key="tcp_syn_retries", label=msg("tcp_syn_retries"), kind="int", min=1, max=127),
    FieldSpec(
        key="tcp_synack_retries", label=msg("tcp_synack_retries"), kind="int", min=1, max=255
    ),
    FieldSpec(key="tcp_fin_timeout_s", label=msg("tcp_fin_timeout"), unit=_S, min=1, max=120),
    FieldSpec(
        key="tcp_keepalive_time_s", label=msg("tcp_keepalive_time"), unit=_S, min=1, max=32767
    ),
    FieldSpec(
        key="tcp_keepalive_intvl_s", label=msg("tcp_keepalive_intvl"), unit=_S, min=1, max=32767
    ),
    FieldSpec(
        key="tcp_keepalive_probes", label=msg("tcp_keepalive_probes"), kind="int", min=1, max=127
    ),
    FieldSpec(
        key="tcp_syncookies", label=msg("tcp_syncookies"), kind="int", unit=msg("0–2"), min=0, max=2
    ),
    FieldSpec(key="tcp_abort_on_overflow", label=msg("tcp_abort_on_overflow"), kind="bool"),
)

EDITOR = EditorSpec(
    groups=(
        Group(
            key=None,
            legend=msg("Run"),
            fields=(
                FieldSpec(key="until_ms", label=msg("run until"), unit=_MS, min=0, max=3_600_000),
                FieldSpec(key="rtt_ms", label=msg("RTT"), unit=_MS, min=0.01, max=10_000),
                FieldSpec(key="mss", label=msg("MSS"), kind="int", unit=_BYTES, min=64, max=65483),
                FieldSpec(
                    key="rcvbuf",
                    label=msg("receive buffer"),
                    kind="int",
                    unit=_BYTES,
                    min=1,
                    max=65535,
                ),
                FieldSpec(
                    key="client_iss", label=msg("client ISS"), kind="int", min=0, max=2**31 - 1
                ),
                FieldSpec(
                    key="server_iss", label=msg("server ISS"), kind="int", min=0, max=2**31 - 1
                ),
            ),
        ),
        Group(
            key="sysctl",
            legend=msg("sysctls"),
            fields=_SYSCTL_FIELDS,
        ),
    ),
    rows=(
        Rows(
            key="script",
            legend=msg("Script: socket calls"),
            item=msg("call"),
            fields=(
                FieldSpec(key="t_ms", label=msg("at"), unit=_MS, min=0, max=3_600_000),
                FieldSpec(
                    key="endpoint",
                    label=msg("endpoint"),
                    kind="choice",
                    choices=ENDPOINTS,
                    labels=_WHO,
                ),
                FieldSpec(key="call", label=msg("call"), kind="choice", choices=CALLS),
                FieldSpec(key="bytes", label=msg("bytes"), kind="int", min=1, max=MAX_BYTES),
                FieldSpec(key="how", label=msg("how"), kind="choice", choices=HOWS),
                FieldSpec(key="backlog", label=msg("backlog"), kind="int", min=0, max=4096),
                FieldSpec(key="queued", label=msg("already queued"), kind="int", min=0, max=4096),
                FieldSpec(key="half_open", label=msg("half-open"), kind="int", min=0, max=4096),
                FieldSpec(key="nonblock", label=msg("O_NONBLOCK"), kind="bool"),
                FieldSpec(key="keepalive", label=msg("SO_KEEPALIVE"), kind="bool"),
            ),
            new_row={"t_ms": 0, "endpoint": "client", "call": "send", "bytes": 1000},
            max_rows=MAX_EVENTS,
            kind_field="call",
            fields_by_kind=_BY_CALL,
        ),
        Rows(
            key="network",
            legend=msg("Network events: what the network does to one segment"),
            item=msg("network event"),
            fields=(
                FieldSpec(
                    key="kind", label=msg("event"), kind="choice", choices=NET_KINDS, labels=_EVENTS
                ),
                FieldSpec(
                    key="from", label=msg("sent by"), kind="choice", choices=ENDPOINTS, labels=_WHO
                ),
                FieldSpec(
                    key="nth", label=msg("its segment number"), kind="int", min=1, max=1_000_000
                ),
                FieldSpec(
                    key="count", label=msg("segments in a row"), kind="int", min=1, max=1_000_000
                ),
                FieldSpec(key="ms", label=msg("extra delay"), unit=_MS, min=0, max=3_600_000),
            ),
            new_row={"drop": {"from": "client", "nth": 1}},
            max_rows=MAX_EVENTS,
            kind_field="kind",
            fields_by_kind=_BY_EVENT,
            nested_kind=True,
        ),
    ),
)

SIM = TcpExplainer()

VIEW: WebView[TcpState, None] = WebView(
    picture=picture,
    scripts=("/static/explainers/tcp/view.js",),
    editor=EDITOR,
    thumbnail=Thumbnail(preset="handshake", step=6),  # the server answers SYN with SYN+ACK
    question=question,  # which state comes next
)
