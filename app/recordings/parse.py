"""An uploaded recording or capture, parsed into the JSON ``GET /api/v1/recordings/{id}``
answers: what every explainer's recording view reads.

* a capture (``application/vnd.tcpdump.pcap``: pcap or pcapng) → ``kind: "capture"``,
  ``segments``, ``states`` per endpoint, ``transitions``;
* a ``tcp`` recording → its events, ``states`` and ``transitions`` from
  ``sock:inet_sock_set_state`` (``segments`` empty: the kernel's events carry no segment);
* a ``cwnd`` recording → ``flows`` with their ``series`` (cwnd, ssthresh, srtt) from
  ``tcp:tcp_probe``, and the ``link``;
* a ``path`` recording → its events with their stacks.

Every path is bounded: the body is at most :data:`MAX_BYTES`, each part at most its count.
"""

from __future__ import annotations

import time
from typing import Any

from app.recordings import recording
from app.recordings.capture import is_capture, tcp_packets
from app.recordings.tcpflow import connection, states_from_events
from app.sim.core import ParamError, msg

MAX_BYTES = 5 * 1024 * 1024
KINDS = ("cwnd", "tcp", "path", "capture")
JSON_TYPE = "application/json"
CAPTURE_TYPE = "application/vnd.tcpdump.pcap"
MEDIA_TYPES = {JSON_TYPE: "recording", CAPTURE_TYPE: "capture"}
SSTHRESH_INFINITE = 2147483647  # TCP_INFINITE_SSTHRESH
META = (
    "recorded_at",
    "tool",
    "kernel",
    "sysctls",
    "link",
    "filter",
    "command",
    "notes",
    "duration_ms",
)


def media(content_type: str) -> str | None:
    """``"recording"`` or ``"capture"`` for the media types the API takes, else None."""
    return MEDIA_TYPES.get(content_type.split(";", 1)[0].strip().lower())


def parse(body: bytes, what: str) -> dict[str, Any]:
    """The parsed recording (``what``: ``"recording"`` or ``"capture"``); ParamError naming the
    field or byte offset that is wrong. The caller has refused bodies over MAX_BYTES."""
    started = time.perf_counter()
    out = parse_capture(body) if what == "capture" else parse_recording(body)
    out["parse_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return out


def parse_capture(body: bytes) -> dict[str, Any]:
    if not is_capture(body):
        raise ParamError.single(
            ("byte 0",),
            msg(
                "byte {offset}: {why}",
                offset=0,
                why=msg("not a pcap or pcapng file (unknown magic number)"),
            ),
        )
    conn = connection(tcp_packets(body))
    if not conn["segments"]:
        raise ParamError.single(
            (f"byte {len(body)}",),
            msg(
                "byte {offset}: {why}",
                offset=len(body),
                why=msg("the capture ends without one TCP segment"),
            ),
        )
    segments = conn["segments"]
    return {
        "kind": "capture",
        **conn,
        "summary": {
            "segments": len(segments),
            "endpoints": list(conn["states"]),
            "duration_ms": segments[-1]["t_ms"],
        },
    }


def parse_recording(body: bytes) -> dict[str, Any]:
    value = recording.validate(recording.loads(body))
    kind: str = value["kind"]
    events: list[dict[str, Any]] = value["events"]
    out: dict[str, Any] = {"kind": kind, **{k: value.get(k) for k in META}}
    out["recording_flows"] = value["flows"]
    summary: dict[str, Any] = {"events": len(events), "duration_ms": value.get("duration_ms")}
    if kind == "cwnd":
        out["flows"] = cwnd_flows(value)
        summary["flows"] = len(out["flows"])
    elif kind == "tcp":
        out["segments"] = []
        out.update(states_from_events(events))
        out["events"] = events
        summary["endpoints"] = list(out["states"])
    else:
        out["events"] = events
    out["summary"] = summary
    return out


def _whole(text: str, loc: tuple[str | int, ...]) -> int:
    """A tracefs number (decimal or ``0x`` hex)."""
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        raise ParamError.single(loc, msg("must be a whole number")) from None


def _endpoints(fields: dict[str, str]) -> tuple[str, str]:
    """A tcp_probe event's (source, destination), as tracefs prints them (``src``/``dest``) or
    from its address and port fields."""
    if "src" in fields and ("dest" in fields or "dst" in fields):
        return fields["src"], fields.get("dest", fields.get("dst", "?"))
    src = f"{fields.get('saddr', '?')}:{fields.get('sport', '?')}"
    return src, f"{fields.get('daddr', '?')}:{fields.get('dport', '?')}"


def cwnd_flows(value: dict[str, Any]) -> list[dict[str, Any]]:
    """One flow per (source, destination) of the ``tcp:tcp_probe`` events, in order of first
    appearance: cwnd (``snd_cwnd``, segments), ssthresh (``2147483647``, "infinite", as null)
    and the smoothed RTT (``srtt``, µs) at each event."""
    cc_default = value["sysctls"].get("net.ipv4.tcp_congestion_control")
    declared = {(f.get("src"), f.get("dst")): f for f in value["flows"]}
    flows: dict[tuple[str, str], dict[str, Any]] = {}
    for i, ev in enumerate(value["events"]):
        if ev["event"] != "tcp:tcp_probe":
            continue
        fields = ev["fields"]
        key = _endpoints(fields)
        flow = flows.get(key)
        if flow is None:
            known = declared.get(key, {})
            flow = {"cc": known.get("cc") or cc_default, "src": key[0], "dst": key[1], "series": []}
            flows[key] = flow
        loc = ("events", i, "fields")
        cwnd = _whole(fields.get("snd_cwnd", ""), (*loc, "snd_cwnd"))
        ssthresh = _whole(fields["ssthresh"], (*loc, "ssthresh")) if "ssthresh" in fields else None
        srtt = _whole(fields["srtt"], (*loc, "srtt")) if "srtt" in fields else None
        flow["series"].append(
            {
                "t_ms": ev["t_ms"],
                "cwnd": cwnd,
                "ssthresh": None if ssthresh == SSTHRESH_INFINITE else ssthresh,
                "srtt_us": srtt,
            }
        )
    return list(flows.values())
