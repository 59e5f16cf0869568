"""The latency model: how long one step takes on the GPU (not vLLM; the simulator's clock).

``linear``: a base cost plus a cost per prefill and per decode token. ``roofline``: the larger
of compute (2 · parameters FLOPs per token at the GPU's peak times MFU) and memory traffic (the
weights once per step plus the KV cache attention reads), plus a fixed overhead.
"""

from __future__ import annotations

from collections.abc import Callable

from app.sim.serving.params import LatencyParams


def step_seconds(lat: LatencyParams) -> Callable[[int, int, int], float]:
    """The latency model: seconds for a step with ``prefill`` and ``decode`` tokens scheduled
    and ``ctx`` tokens of KV cache read by attention."""
    if lat.mode == "linear":
        base = lat.base_ms / 1e3
        pf = lat.prefill_token_ms / 1e3
        dc = lat.decode_token_ms / 1e3

        def linear(prefill: int, decode: int, ctx: int) -> float:
            return base + pf * prefill + dc * decode

        return linear
    params = lat.model_params_billion * 1e9
    flops = lat.gpu_tflops * 1e12 * lat.mfu
    bw = lat.gpu_bandwidth_gbps * 1e9
    per_token = 2.0 * params / flops
    weights = params * lat.bytes_per_param / bw
    per_ctx = lat.kv_bytes_per_token / bw
    over = lat.step_overhead_ms / 1e3

    def roofline(prefill: int, decode: int, ctx: int) -> float:
        compute = per_token * (prefill + decode)
        memory = weights + per_ctx * ctx
        return over + (compute if compute > memory else memory)

    return roofline
