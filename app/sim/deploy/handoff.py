"""The deployment handed to the scheduler explainer: its ``config`` (``num_gpu_blocks``,
``block_size``, ``max_model_len``, ``max_num_seqs``, ``max_num_batched_tokens``), its roofline
``latency`` model filled from this GPU's numbers per tensor-parallel rank, and a small workload
of long requests that makes the blocks matter. Plain JSON: the scheduler's own ``parse``
validates it when the editor opens."""

from __future__ import annotations

import math
from typing import Any

from app.sim.deploy.plan import ALLREDUCE_LATENCY_S, MFU, Plan, weight_format

# The scheduler explainer's input limits (tests check they match app/sim/serving/params.py)
SCHEDULER_MAX_BLOCKS = 1_000_000
SCHEDULER_MAX_LEN = 1_000_000
STEP_OVERHEAD_MS = 1.0  # the scheduler's default fixed cost of a step


def scheduler_params(pl: Plan) -> dict[str, Any] | None:
    """Scheduler params for this deployment, or None when it does not fit (or is beyond what
    the scheduler explainer simulates)."""
    p = pl.params
    if not pl.fits or pl.num_gpu_blocks > SCHEDULER_MAX_BLOCKS:
        return None
    if p.max_model_len > SCHEDULER_MAX_LEN or p.max_model_len < 2:
        return None
    m, g, tp = p.model, p.gpu, p.tensor_parallel_size
    fp8 = weight_format(p) == "fp8" and g.flops_fp8 > 0
    allreduce_ms = 2 * m.num_layers * ALLREDUCE_LATENCY_S * 1e3 if tp > 1 else 0.0
    out_tokens = max(1, min(128, p.max_model_len // 4))
    prompt = max(1, min(p.max_model_len - out_tokens, p.max_model_len // 2, 16384))
    count = min(32, max(8, math.ceil(4 * pl.max_concurrency)))
    return {
        "config": {
            "num_gpu_blocks": pl.num_gpu_blocks,
            "block_size": p.block_size,
            "max_model_len": p.max_model_len,
            "max_num_seqs": p.max_num_seqs,
            "max_num_batched_tokens": p.max_num_batched_tokens,
        },
        "latency": {
            "mode": "roofline",
            "model_params_billion": round(m.active_params / tp / 1e9, 4),
            "bytes_per_param": round(pl.step.weights_read_bytes * tp / m.active_params, 4),
            "gpu_tflops": round((g.flops_fp8 if fp8 else g.flops) / 1e12, 3),
            "gpu_bandwidth_gbps": round(g.hbm_bytes_per_s / 1e9, 3),
            "mfu": MFU,
            "kv_bytes_per_token": pl.step.kv_bytes_per_token,
            "step_overhead_ms": round(STEP_OVERHEAD_MS + allreduce_ms, 3),
        },
        "requests": [
            {"id": f"r{i}", "prompt_tokens": prompt, "max_tokens": out_tokens} for i in range(count)
        ],
    }
