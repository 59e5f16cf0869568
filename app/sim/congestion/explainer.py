"""The congestion-control explainer's declaration on the shared contract."""

from __future__ import annotations

from typing import Any

from app.sim.congestion import engine
from app.sim.congestion.params import MAX_PACKET_EVENTS, CwndParams, dump, parse
from app.sim.congestion.run import SIM_VERSION, CwndSeries, CwndState, CwndTrace, run
from app.sim.congestion.scenarios import DEFAULT_PRESET, PRESETS
from app.sim.core import LINUX_6_4, Explainer, Limits, Progress, msg
from app.sim.core.cost import SECONDS_PER_BYTE
from app.sim.native import pace


class CwndExplainer(Explainer[CwndParams, CwndState, CwndSeries]):
    """Reno, CUBIC and BBR on a dumbbell; each step jumps to the next notable event."""

    name = "cwnd"
    title = msg("Congestion control")
    summary = msg(
        "Watch Reno, CUBIC and BBR share a bottleneck: cwnd, queue and RTT over time, and "
        "each loss, recovery, timeout, HyStart exit, CUBIC epoch and BBR mode change "
        "explained with the numbers of that moment (Linux 6.4)."
    )
    sim_version = SIM_VERSION
    source = LINUX_6_4
    presets = PRESETS
    default_preset = DEFAULT_PRESET
    # Packet events per second of one core, measured (bench/cost_calibration.py) with the
    # series it produces counted apart: ~600 k in pure Python, ~2 M compiled (docs/native.md).
    limits = Limits(
        max_work=MAX_PACKET_EVENTS,
        unit=msg("packet events"),
        work_per_second=pace(engine, 600_000, 2_000_000),
        # its series are cheaper to build and store per byte than the kernel explainers' frames
        # (measured compiled; the pure figure is the shared default)
        seconds_per_byte=pace(engine, SECONDS_PER_BYTE, 1.2e-7),
    )

    def parse(self, raw: Any) -> CwndParams:
        return parse(raw)

    def dump(self, params: CwndParams) -> dict[str, Any]:
        return dump(params)

    def cost(self, params: CwndParams) -> float:
        return params.estimated_events

    def expected_bytes(self, params: CwndParams) -> float:
        """The sampled series (~90 pickled bytes per flow and sample) and the step frames."""
        samples = params.duration_s * 1000 / params.sample_ms * len(params.flows)
        return samples * 90 + 100_000

    def run(self, params: CwndParams, progress: Progress | None = None) -> CwndTrace:
        return run(params, progress)

    def public_json(self, trace: CwndTrace) -> dict[str, Any]:
        """The time series are the contract (``run.py`` documents them), plus the summary."""
        return {**trace.series, "summary": dict(trace.summary)}
