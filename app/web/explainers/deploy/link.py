"""“Run the scheduler with this deployment”: the scheduler explainer's editor, opened with this
deployment's ``num_gpu_blocks``, ``block_size``, ``max_model_len``, ``max_num_seqs``,
``max_num_batched_tokens`` and roofline latency model filled in (``app.sim.deploy.handoff``),
through the editor's ``p=`` link like any shared scenario."""

from __future__ import annotations

from app.sim.deploy import DeployTrace
from app.sim.deploy.handoff import scheduler_params
from app.sim.deploy.plan import plan
from app.web.sources import encode_params

SCHEDULER = "scheduler"  # the explainer the deployment hands its result to


def scheduler_link(trace: DeployTrace) -> str:
    """The editor link, or "" when the deployment does not fit."""
    raw = scheduler_params(plan(trace.params))
    if raw is None:
        return ""
    return f"/explainers/{SCHEDULER}/edit?p={encode_params(raw)}"
