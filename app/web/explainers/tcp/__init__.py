"""Web half of the TCP connection-lifecycle explainer: the state diagram + ladder + panels
picture, the RFC/Linux view switch, and a script editor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.sim.core import msg
from app.sim.tcp import TcpExplainer
from app.sim.tcp.params import CALLS, ENDPOINTS, HOWS, MAX_EVENTS
from app.sim.tcp.state import TcpState
from app.web.editor import EditorSpec, FieldSpec, Group, Rows
from app.web.explainers.tcp.picture import picture
from app.web.plugin import Thumbnail, WebView

_ALWAYS = ("t_ms", "endpoint")
_BY_CALL: dict[str, tuple[str, ...]] = {
    "listen": (*_ALWAYS, "backlog", "queued", "half_open"),
    "connect": _ALWAYS,
    "accept": _ALWAYS,
    "send": (*_ALWAYS, "bytes"),
    "recv": (*_ALWAYS, "bytes"),
    "shutdown": (*_ALWAYS, "how"),
    "close": _ALWAYS,
    "abort": _ALWAYS,
}
_ROW_KEYS = frozenset(k for keys in _BY_CALL.values() for k in keys) | {"call"}
_SYSCTL_FIELDS = (
    FieldSpec(key="tcp_syn_retries", label=msg("tcp_syn_retries"), kind="int"),
    FieldSpec(key="tcp_synack_retries", label=msg("tcp_synack_retries"), kind="int"),
    FieldSpec(key="tcp_fin_timeout_s", label=msg("tcp_fin_timeout"), unit="s"),
    FieldSpec(key="tcp_keepalive_time_s", label=msg("tcp_keepalive_time"), unit="s"),
    FieldSpec(key="tcp_keepalive_intvl_s", label=msg("tcp_keepalive_intvl"), unit="s"),
    FieldSpec(key="tcp_keepalive_probes", label=msg("tcp_keepalive_probes"), kind="int"),
    FieldSpec(key="tcp_syncookies", label=msg("tcp_syncookies"), kind="int", unit="0–2"),
)
_SYSCTL_KEYS = frozenset(f.key for f in _SYSCTL_FIELDS)


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpEditorSpec(EditorSpec):
    """The form covers the script, the run's numbers and the numeric sysctls. Params it cannot
    carry (network events, the nonblock/keepalive flags, tcp_abort_on_overflow) open the JSON
    editor instead, so nothing is silently dropped."""

    def fits(self, raw: Any) -> bool:
        if not isinstance(raw, Mapping) or raw.get("network", []) != []:
            return False
        rest = {k: v for k, v in raw.items() if k != "network"}
        if not EditorSpec.fits(self, rest):
            return False
        if any(k not in _SYSCTL_KEYS for k in raw.get("sysctl", {})):
            return False
        for item in raw.get("script", []):
            if not isinstance(item, Mapping) or not set(item) <= _ROW_KEYS:
                return False
            if any(isinstance(v, bool | list | dict) for v in item.values()):
                return False
        return True


EDITOR = TcpEditorSpec(
    groups=(
        Group(
            key=None,
            legend=msg("Run"),
            fields=(
                FieldSpec(key="until_ms", label=msg("run until"), unit="ms"),
                FieldSpec(key="rtt_ms", label=msg("RTT"), unit="ms"),
                FieldSpec(key="mss", label=msg("MSS"), kind="int", unit="bytes"),
                FieldSpec(key="rcvbuf", label=msg("receive buffer"), kind="int", unit="bytes"),
                FieldSpec(key="client_iss", label=msg("client ISS"), kind="int"),
                FieldSpec(key="server_iss", label=msg("server ISS"), kind="int"),
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
                FieldSpec(key="t_ms", label=msg("at"), unit="ms"),
                FieldSpec(key="endpoint", label=msg("endpoint"), kind="choice", choices=ENDPOINTS),
                FieldSpec(key="call", label=msg("call"), kind="choice", choices=CALLS),
                FieldSpec(key="bytes", label=msg("bytes"), kind="int"),
                FieldSpec(key="how", label=msg("how"), kind="choice", choices=HOWS),
                FieldSpec(key="backlog", label=msg("backlog"), kind="int"),
                FieldSpec(key="queued", label=msg("already queued"), kind="int"),
                FieldSpec(key="half_open", label=msg("half-open"), kind="int"),
            ),
            new_row={"t_ms": 0, "endpoint": "client", "call": "send", "bytes": 1000},
            max_rows=MAX_EVENTS,
            kind_field="call",
            fields_by_kind=_BY_CALL,
        ),
    ),
)

SIM = TcpExplainer()

VIEW: WebView[TcpState, None] = WebView(
    picture=picture,
    scripts=("/static/explainers/tcp/view.js",),
    editor=EDITOR,
    thumbnail=Thumbnail(preset="handshake", step=6),  # the server answers SYN with SYN+ACK
)
