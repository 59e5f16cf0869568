""" "Replay in the model": the TCP explainer's params nearest to a captured connection, the
model's run of them, and where the model's states and the machine's differ.

The nearest params: the RTT the capture shows from the SYN to the SYN-ACK, the client's MSS
option, both initial sequence numbers, and a script of the socket calls the segments reveal
(listen/accept/connect at 0; a send of each data segment's length when it was captured, read
by the peer; close at each endpoint's FIN; abort at its RST). A capture that does not start with
the client's SYN has no replay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.sim.core import ParamError, Trace
from app.sim.tcp.params import MAX_EVENTS, MAX_ISS, MAX_UNTIL_MS, MSS_RANGE, RTT_MS_RANGE
from app.sim.tcp.state import TcpState

MAX_SENDS = 200  # data segments replayed (each is a send and a recv)
TIME_WAIT_MS = 61_000  # long enough for TIME_WAIT (60 s) to end in the model
_MSS = re.compile(r"\bmss (\d+)")


def _call(t: float, ep: str, call: str, **kw: Any) -> dict[str, Any]:
    return {"t_ms": round(max(t, 0.0), 3), "endpoint": ep, "call": call, **kw}


def nearest_params(recording: Mapping[str, Any]) -> dict[str, Any] | None:
    """The raw TCP params nearest to a capture's connection (None: it has no handshake)."""
    segments: list[Mapping[str, Any]] = list(recording.get("segments") or [])
    if not segments or segments[0].get("flags") != "S":
        return None
    syn = segments[0]
    names = {str(syn["from"]): "client", str(syn.get("to", "")): "server"}
    synack = next(
        (s for s in segments if s.get("from") == syn.get("to") and s.get("flags") == "S."), None
    )
    if synack is None:
        return None
    rtt = min(max(float(synack["t_ms"]) - float(syn["t_ms"]), RTT_MS_RANGE[0]), RTT_MS_RANGE[1])
    found = _MSS.search(str(syn.get("options", "")))
    mss = min(max(int(found.group(1)), MSS_RANGE[0]), MSS_RANGE[1]) if found else 1460
    script = [
        _call(0, "server", "listen"),
        _call(0, "server", "accept"),
        _call(0, "client", "connect"),
    ]
    closed: set[str] = set()
    sends = 0
    for seg in segments:
        ep = names.get(str(seg["from"]))
        if ep is None or ep in closed or len(script) > MAX_EVENTS - 4:
            continue
        peer = "server" if ep == "client" else "client"
        t = float(seg["t_ms"])
        if int(seg.get("len", 0)) > 0 and sends < MAX_SENDS:
            sends += 1
            script += [_call(t, ep, "send", bytes=int(seg["len"])), _call(t, peer, "recv")]
        if "R" in str(seg["flags"]):
            script.append(_call(t, ep, "abort"))
            closed.add(ep)
        elif "F" in str(seg["flags"]):
            script += [_call(t, ep, "close"), _call(t, peer, "recv")]
            closed.add(ep)
    last = max(float(s["t_ms"]) for s in segments)
    return {
        "rtt_ms": round(rtt, 3),
        "mss": mss,
        "client_iss": int(syn["seq"]) % (MAX_ISS + 1),
        "server_iss": int(synack["seq"]) % (MAX_ISS + 1),
        "script": sorted(script, key=lambda c: c["t_ms"]),
        "until_ms": min(last + TIME_WAIT_MS, MAX_UNTIL_MS),
    }


def model_states(trace: Trace[TcpState, None]) -> dict[str, list[str]]:
    """Each endpoint's RFC states in the model's run, in order (repeats dropped; the CLOSED an
    endpoint starts in too). The model's server shows its listener again once the connection's
    socket is gone: that LISTEN is the connection's CLOSED."""
    out: dict[str, list[str]] = {"client": [], "server": []}
    for frame in trace.frames:
        for ep, seen in out.items():
            state = frame.state["endpoints"][ep]["rfc"]
            if state == "LISTEN" and "ESTABLISHED" in seen:
                state = "CLOSED"
            if not seen or seen[-1] != state:
                seen.append(state)
    return {ep: [s for i, s in enumerate(seen) if i or s != "CLOSED"] for ep, seen in out.items()}


def replay(recording: Mapping[str, Any]) -> dict[str, Any] | None:
    """The replay of a capture: its params, the machine's and the model's states per endpoint
    ("client", "server"), and the endpoints where they differ (with the first step that does)."""
    raw = nearest_params(recording)
    if raw is None:
        return None
    from app.sim.tcp.explainer import TcpExplainer  # the model, only when there is a replay

    sim = TcpExplainer()
    try:
        trace = sim.run(sim.parse(raw))
    except ParamError:
        return None
    segments = recording.get("segments") or []
    syn = segments[0]
    names = {"client": str(syn["from"]), "server": str(syn.get("to", ""))}
    machine = {ep: list(recording.get("states", {}).get(addr, [])) for ep, addr in names.items()}
    model = model_states(trace)
    differ = {}
    for ep in ("client", "server"):
        a, b = machine[ep], model[ep][: len(machine[ep])]  # the capture ends: so does the check
        if a != b:
            differ[ep] = next(
                (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)),
            )
    return {"params": raw, "endpoints": names, "machine": machine, "model": model, "differ": differ}
