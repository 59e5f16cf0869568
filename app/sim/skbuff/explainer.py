"""The sk_buff explainer's declaration on the shared contract (:class:`~app.sim.core.Explainer`)."""

from __future__ import annotations

from typing import Any

from app.sim.core import LINUX_6_4, Explainer, Limits, Progress, ResultKind, msg
from app.sim.skbuff.ops import CREATORS, DERIVE_PREFIX, MAX_OPS, SkbParams
from app.sim.skbuff.params import dump, parse
from app.sim.skbuff.run import SIM_VERSION, api_frames, run
from app.sim.skbuff.scenarios import DEFAULT_PRESET, PRESETS
from app.sim.skbuff.skb import BUG_RESULTS
from app.sim.skbuff.state import SkbState, SkbTrace


class SkbExplainer(Explainer[SkbParams, SkbState, None]):
    """sk_buff geometry: one frame per kernel call; a BUG() ends the scenario."""

    name = "skb"
    title = msg("sk_buff geometry")
    summary = msg(
        "How Linux sizes, fills, clones and frees socket buffers: head, data, tail, end, "
        "frags and reference counts, one kernel call at a time."
    )
    sim_version = SIM_VERSION
    source = LINUX_6_4
    presets = PRESETS
    default_preset = DEFAULT_PRESET
    # measured (bench/cost_calibration.py): a frame of one skb is ~850 pickled bytes, each more
    # skb alive adds its own; building the frames is most of a run's time
    limits = Limits(max_work=MAX_OPS, unit=msg("kernel calls"), work_per_second=100_000)
    result_kinds = (
        ResultKind(key="ok", label=msg("ok"), tone="ok"),
        ResultKind(key="null", label=msg("returns NULL"), tone="warn"),
        *(
            ResultKind(key=bug, label=msg("BUG: {result}"), tone="fatal", ends_run=True)
            for bug in BUG_RESULTS
        ),
    )

    def parse(self, raw: Any) -> SkbParams:
        return parse(raw)

    def dump(self, params: SkbParams) -> dict[str, Any]:
        return dump(params)

    def cost(self, params: SkbParams) -> float:
        return len(params.ops)

    def expected_bytes(self, params: SkbParams) -> float:
        """One frame per call; a frame shows every skb alive (at most those made so far)."""
        alive, total = 0, 0.0
        for op in params.ops:
            if op.op in CREATORS or op.op in DERIVE_PREFIX:
                alive += 1
            total += 850 + 450 * max(0, alive - 1)
        return total

    def run(self, params: SkbParams, progress: Progress | None = None) -> SkbTrace:
        return run(params, progress)

    def public_json(self, trace: SkbTrace) -> dict[str, Any]:
        return {"frames": api_frames(trace)}
