"""Helpers shared by the TCP explainer tests."""

from __future__ import annotations

from typing import Any

from app.sim.core.trace import Trace
from app.sim.tcp import TcpExplainer
from app.sim.tcp.state import TcpState

EX = TcpExplainer()


def c(t: float, ep: str, call: str, **kw: Any) -> dict[str, Any]:
    return {"t_ms": t, "endpoint": ep, "call": call, **kw}


OPEN = [c(0, "server", "listen"), c(0, "server", "accept"), c(0, "client", "connect")]


def run(raw: dict[str, Any]) -> Trace[TcpState, None]:
    return EX.run(EX.parse(raw))


def run_preset(slug: str) -> Trace[TcpState, None]:
    p = EX.preset(slug)
    assert p is not None
    return run(dict(p.params))


def rfc_seq(tr: Trace[TcpState, None], ep: str) -> list[str]:
    """The endpoint's RFC states, consecutive repeats collapsed."""
    out: list[str] = []
    for f in tr.frames:
        s = f.state["endpoints"][ep]["rfc"]
        if not out or out[-1] != s:
            out.append(s)
    return out


def transitions(tr: Trace[TcpState, None]) -> list[dict[str, Any]]:
    return [dict(t) for f in tr.frames for t in f.state["transitions"]]


def segments(tr: Trace[TcpState, None], src: str | None = None) -> list[dict[str, Any]]:
    segs = [dict(f.state["segment"]) for f in tr.frames if f.state["segment"] is not None]
    return [s for s in segs if src is None or s["src"] == src]


def returns(tr: Trace[TcpState, None], ep: str, call: str) -> list[tuple[float, str]]:
    """(time, result) of every completed call, blocked ones when they return."""
    out = []
    for f in tr.frames:
        cs = f.state["call"]
        if cs and cs["endpoint"] == ep and cs["call"] == call and cs["result"] != "blocked":
            out.append((f.state["t_ms"], cs["result"]))
    return out
