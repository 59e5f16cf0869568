"""Small helpers shared by the sk_buff tests (not a test module)."""

from __future__ import annotations

from typing import Any

from app.sim.core.trace import Trace
from app.sim.skbuff import parse, run


def trace_of(*ops: dict[str, Any]) -> Trace:
    return run(parse({"ops": list(ops)}))


def skb(trace: Trace, name: str | None = None, frame: int = -1) -> dict[str, Any]:
    fr = trace.frames[frame]
    want = name or fr.state["primary"]
    return next(s for s in fr.state["skbs"] if s["name"] == want)


def geometry(s: dict[str, Any]) -> tuple[int, ...]:
    return (s["data"], s["tail"], s["end"], s["len"], s["data_len"], s["truesize"])
