"""The vLLM scheduler explainer's simulation: vLLM 0.33's V1 scheduler and KV block pool,
a latency model, presets and the explainer contract."""

from app.sim.serving.explainer import SchedulerExplainer
from app.sim.serving.params import (
    LatencyParams,
    RequestSpec,
    SchedulerConfig,
    SchedulerParams,
)

__all__ = [
    "LatencyParams",
    "RequestSpec",
    "SchedulerConfig",
    "SchedulerExplainer",
    "SchedulerParams",
]
