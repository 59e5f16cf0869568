"""Web half of the TCP connection-lifecycle explainer: the state diagram + ladder + panels
picture, the RFC/Linux view switch, and a script editor."""

from __future__ import annotations

from fastapi import APIRouter

from app.sim.core import Message, msg
from app.sim.tcp import TcpExplainer
from app.sim.tcp.params import (
    CALLS,
    ENDPOINTS,
    HOWS,
    MAX_BYTES,
    MAX_EVENTS,
    MAX_ISS,
    MAX_LISTEN_QUEUE,
    MAX_MEM,
    MAX_NTH,
    MAX_RCVBUF,
    MAX_UNTIL_MS,
    MSS_RANGE,
    NET_KINDS,
    RTT_MS_RANGE,
    SYSCTL_FLOAT_LIMITS,
    SYSCTL_INT_LIMITS,
)
from app.sim.tcp.state import TcpState
from app.web.editor import EditorSpec, FieldSpec, Group, Rows, number, whole
from app.web.explainers.tcp.packetdrill import router as packetdrill_router
from app.web.explainers.tcp.pdembed import router as pdembed_router
from app.web.explainers.tcp.picture import picture
from app.web.explainers.tcp.quiz import question
from app.web.explainers.tcp.recording import RECORDING
from app.web.plugin import Action, Thumbnail, WebView

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
# The choices in words (the syscall and SHUT_* names are the kernel's)
_WHO = {"client": msg("client"), "server": msg("server")}
_EVENTS = {
    "drop": msg("drop"),
    "delay": msg("delay"),
    "duplicate": msg("duplicate"),
    "reorder": msg("reorder"),
}


def _sysctl(key: str, label: Message, unit: Message | None = None) -> FieldSpec:
    """A sysctl's input, its range the one ``parse`` checks."""
    if key in SYSCTL_INT_LIMITS:
        lo, hi = SYSCTL_INT_LIMITS[key]
        return whole(key, label, lo, hi, unit=unit)
    flo, fhi = SYSCTL_FLOAT_LIMITS[key]
    return number(key, label, flo, fhi, unit=unit or _S)


_SYSCTL_FIELDS = (
    _sysctl("tcp_syn_retries", msg("tcp_syn_retries")),
    _sysctl("tcp_synack_retries", msg("tcp_synack_retries")),
    _sysctl("tcp_fin_timeout_s", msg("tcp_fin_timeout")),
    _sysctl("tcp_keepalive_time_s", msg("tcp_keepalive_time")),
    _sysctl("tcp_keepalive_intvl_s", msg("tcp_keepalive_intvl")),
    _sysctl("tcp_keepalive_probes", msg("tcp_keepalive_probes")),
    _sysctl("tcp_syncookies", msg("tcp_syncookies"), msg("0–2")),
    _sysctl("tcp_timestamps", msg("tcp_timestamps"), msg("0–2")),
    _sysctl("tcp_sack", msg("tcp_sack"), msg("0–1")),
    _sysctl("tcp_window_scaling", msg("tcp_window_scaling"), msg("0–1")),
    FieldSpec(
        key="tcp_rmem", label=msg("tcp_rmem"), kind="ids", unit=msg("min, default, max bytes")
    ),
    FieldSpec(
        key="tcp_wmem", label=msg("tcp_wmem"), kind="ids", unit=msg("min, default, max bytes")
    ),
    _sysctl("tcp_notsent_lowat", msg("tcp_notsent_lowat"), _BYTES),
    _sysctl("tcp_retries2", msg("tcp_retries2")),
    _sysctl("tcp_early_retrans", msg("tcp_early_retrans"), msg("0–4; 3, 4: tail loss probe")),
    _sysctl("tcp_ecn", msg("tcp_ecn"), msg("0–2; 1: ask for ECN")),
    _sysctl("tcp_frto", msg("tcp_frto"), msg("0–255; 0: no F-RTO after an RTO")),
    FieldSpec(key="tcp_abort_on_overflow", label=msg("tcp_abort_on_overflow"), kind="bool"),
)

EDITOR = EditorSpec(
    groups=(
        Group(
            key=None,
            legend=msg("Run"),
            fields=(
                number("until_ms", msg("run until"), 0, MAX_UNTIL_MS, unit=_MS),
                number("rtt_ms", msg("RTT"), RTT_MS_RANGE[0], RTT_MS_RANGE[1], unit=_MS),
                whole("mss", msg("MSS"), MSS_RANGE[0], MSS_RANGE[1], unit=_BYTES),
                whole(
                    "rcvbuf",
                    msg("SO_RCVBUF"),
                    1,
                    MAX_RCVBUF,
                    unit=msg("bytes; empty: tcp_rmem's default"),
                ),
                whole(
                    "sndbuf",
                    msg("SO_SNDBUF"),
                    1,
                    MAX_MEM,
                    unit=msg("bytes (doubled); empty: tcp_wmem's default"),
                ),
                whole("client_iss", msg("client ISS"), 0, MAX_ISS),
                whole("server_iss", msg("server ISS"), 0, MAX_ISS),
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
                number("t_ms", msg("at"), 0, MAX_UNTIL_MS, unit=_MS),
                FieldSpec(
                    key="endpoint",
                    label=msg("endpoint"),
                    kind="choice",
                    choices=ENDPOINTS,
                    labels=_WHO,
                ),
                FieldSpec(key="call", label=msg("call"), kind="choice", choices=CALLS),
                whole("bytes", msg("bytes"), 1, MAX_BYTES),
                FieldSpec(key="how", label=msg("how"), kind="choice", choices=HOWS),
                whole("backlog", msg("backlog"), 0, MAX_LISTEN_QUEUE),
                whole("queued", msg("already queued"), 0, MAX_LISTEN_QUEUE),
                whole("half_open", msg("half-open"), 0, MAX_LISTEN_QUEUE),
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
                whole("nth", msg("its segment number"), 1, MAX_NTH),
                whole("count", msg("segments in a row"), 1, MAX_NTH),
                number("ms", msg("extra delay"), 0, MAX_UNTIL_MS, unit=_MS),
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

ROUTER = APIRouter()
ROUTER.include_router(packetdrill_router)  # /explainers/tcp/packetdrill and its API
ROUTER.include_router(pdembed_router)  # /embed/tcp/packetdrill: a run in a slide

VIEW: WebView[TcpState, None] = WebView(
    picture=picture,
    scripts=("/static/explainers/tcp/view.js",),
    editor=EDITOR,
    thumbnail=Thumbnail(preset="handshake", step=6),  # the server answers SYN with SYN+ACK
    question=question,  # which state comes next
    router=ROUTER,  # the packetdrill page, its API and its embed
    actions=(Action(key="packetdrill", label=msg("packetdrill"), path="packetdrill"),),
    recording=RECORDING,  # a capture or a `stepscope record tcp` run, on the same player
)
