"""The packet-path explainer's simulation half (issue #13): ``PathExplainer``, name "path"."""

from __future__ import annotations

from typing import Any, ClassVar

from app.sim.core.explainer import Explainer, JSONValue, Limits, Preset, Progress, ResultKind
from app.sim.core.i18n import Message, msg
from app.sim.core.sources import LINUX_6_4, SourceProject
from app.sim.core.trace import Trace
from app.sim.path import params as P
from app.sim.path import walks
from app.sim.path.engine import PathState, Tracer
from app.sim.path.params import PathParams
from app.sim.path.presets import DEFAULT_PRESET, PRESETS
from app.sim.path.skb import API_FIELDS, PathSkbs

SIM_VERSION = "path-3"


PathTrace = Trace[PathState, None]
"""A packet-path run: one :class:`PathState` per frame, no series."""


class PathExplainer(Explainer[PathParams, PathState, None]):
    """Where a packet goes inside Linux 6.4, function by function, with its sk_buff."""

    name: ClassVar[str] = "path"
    title: ClassVar[Message] = msg("Packet paths through the Linux stack")
    summary: ClassVar[Message] = msg(
        "Follow a TCP segment through Linux 6.4: send and receive on a NIC with NAPI and GRO, "
        "loopback, veth between namespaces, forwarding, drops, a container's bridge and NAT, "
        "and VXLAN, with the sk_buff's pointers at every step."
    )
    sim_version: ClassVar[str] = SIM_VERSION
    source: ClassVar[SourceProject] = LINUX_6_4
    presets: ClassVar[tuple[Preset, ...]] = PRESETS
    default_preset: ClassVar[str] = DEFAULT_PRESET
    limits: ClassVar[Limits] = Limits(
        max_work=P.MAX_WORK,
        unit=msg("frames"),
        # measured (bench/cost_calibration.py): the walk is cheap, its frames (~560 pickled
        # bytes each, at most one per cost unit) are most of a run's time
        work_per_second=100_000.0,
        seconds_per_byte=1.6e-7,
    )
    result_kinds: ClassVar[tuple[ResultKind, ...]] = (
        ResultKind(key="ok", label=msg("ok"), tone="ok"),
        ResultKind(key="held", label=msg("held by GRO"), tone="ok"),
        ResultKind(key="merged", label=msg("merged by GRO"), tone="ok"),
        ResultKind(key="drop", label=msg("dropped"), tone="warn"),
    )

    def parse(self, raw: JSONValue) -> PathParams:
        return P.parse(raw)

    def dump(self, params: PathParams) -> dict[str, JSONValue]:
        return P.dump(params)

    def expected_bytes(self, params: PathParams) -> float:
        return P.cost(params) * 560  # cost is an upper bound on the frames

    def cost(self, params: PathParams) -> float:
        return P.cost(params)

    def run(self, params: PathParams, progress: Progress | None = None) -> PathTrace:
        total = self.cost(params)
        skbs = PathSkbs()
        tracer = Tracer(skbs, progress, total)
        walks.run(params, tracer, skbs)
        if progress is not None:
            progress(total, total)
        frames = tuple(tracer.frames)
        drops = [f.state["drop_reason"] for f in frames if f.state["drop_reason"]]
        summary: dict[str, Any] = {
            "frames": len(frames),
            "drops": drops,
            "delivered_bytes": tracer.counters["delivered_bytes"],
            "time_squeeze": tracer.counters["time_squeeze"],
        }
        return Trace(
            explainer=self.name,
            sim_version=SIM_VERSION,
            params=params,
            frames=frames,
            series=None,
            summary=summary,
        )

    def public_json(self, trace: PathTrace) -> dict[str, JSONValue]:
        return {
            "explainer": self.name,
            "params": self.dump(trace.params),
            "summary": dict(trace.summary),
            "frames": [frame_json(f.index, f.state, f.narration, f.result) for f in trace.frames],
        }


def frame_json(index: int, st: PathState, narration: Message, result: str) -> dict[str, Any]:
    """One frame of ``POST /api/v1/explainers/path/run``."""
    from app.sim.path.sources import src

    ref = src(st["function"])
    skb = st["skb"]
    return {
        "index": index,
        "function": ref.function,
        "path": ref.path,
        "line": ref.line,
        "layer": st["layer"],
        "context": st["context"],
        "hook": st["hook"],
        "stack": list(st["stack"]),
        "skb": {k: skb[k] for k in API_FIELDS} if skb is not None else None,  # type: ignore[literal-required]
        "changed": list(st["changed"]),
        "result": result,
        "drop_reason": st["drop_reason"],
        # one shape in every language: the text (the API renders it in the reader's language)
        "narration": narration.render(),
    }


EXPLAINER = PathExplainer()
