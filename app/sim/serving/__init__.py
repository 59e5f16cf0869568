"""The vLLM scheduler explainer's simulation: vLLM 0.33's V1 scheduler and KV block pool,
a latency model, presets and the explainer contract."""

from app.sim.native import use_native

use_native(__name__, __path__)  # the compiled hot modules, when built and current

from app.sim.serving.explainer import SchedulerExplainer  # noqa: E402
from app.sim.serving.params import (  # noqa: E402
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
