"""The deployment explainer: does a model fit on these GPUs, and how many requests run at once?

``POST /api/v1/explainers/deploy/run`` takes ``{"model": "<id>" | {architecture},
"gpu": "<id>" | {"memory_bytes", "hbm_bytes_per_s", "flops"}, "tensor_parallel_size",
"pipeline_parallel_size", "dtype", "kv_cache_dtype", "gpu_memory_utilization",
"max_model_len", "max_num_seqs", "max_num_batched_tokens", "block_size",
"kv_cache_memory_bytes"}`` (see :mod:`app.sim.deploy.params`; omitted fields take vLLM's
defaults) and returns :meth:`DeployExplainer.public_json`: ``frames[]``, ``kv``
(``page_size_bytes``, ``bytes_per_block``, ``num_gpu_blocks``, ``blocks_per_request``,
``max_concurrency``), ``per_gpu`` (bytes on the GPU with the fewest blocks: ``weights_bytes``,
``kv_cache_bytes``, ``activation_bytes``, ``reserved_bytes``, their sum ``total_bytes``, and the
GPU's ``memory_bytes``), ``fits``, ``reason`` (why vLLM would refuse, in the reader's language;
null when it fits), ``reason_code``, ``step_time`` and ``scheduler`` (the scheduler explainer's
params for this deployment, null when it does not fit).
"""

from __future__ import annotations

from typing import Any, TypeAlias

from app.sim.core import (
    VLLM_0_33,
    Explainer,
    Frame,
    Limits,
    Message,
    Preset,
    Progress,
    ResultKind,
    Trace,
    msg,
)
from app.sim.deploy import params as dp
from app.sim.deploy.handoff import scheduler_params
from app.sim.deploy.narrate import BUILDERS, STEPS, DeployState, frames
from app.sim.deploy.params import DeployParams
from app.sim.deploy.plan import Plan, plan

SIM_VERSION = "deploy-1"
DeployTrace: TypeAlias = Trace[DeployState, None]

PRESETS = (
    Preset(
        slug="8b-one-h100",
        title=msg("An 8B model on one H100"),
        params={"model": "llama-3.1-8b", "gpu": "h100-80gb", "max_model_len": 8192},
        lesson="deploy-8b-one-h100",
    ),
    Preset(
        slug="70b-tp4",
        title=msg("A 70B model: tensor parallel 4 or 8"),
        params={"model": "llama-3.1-70b", "gpu": "h100-80gb", "tensor_parallel_size": 4},
        lesson="deploy-70b-tp4",
    ),
    Preset(
        slug="fp8-kv",
        title=msg("An FP8 KV cache doubles the blocks"),
        params={
            "model": "qwen3-32b",
            "gpu": "h100-80gb",
            "kv_cache_dtype": "fp8",
            "max_model_len": 32768,
        },
        lesson="deploy-fp8-kv",
    ),
    Preset(
        slug="mla",
        title=msg("DeepSeek-V3's MLA against grouped-query attention"),
        params={
            "model": "deepseek-v3",
            "gpu": "h200",
            "tensor_parallel_size": 8,
            "max_model_len": 32768,
        },
        lesson="deploy-mla",
    ),
    Preset(
        slug="does-not-fit",
        title=msg("A model that does not fit, and what to change"),
        params={"model": "llama-3.1-70b", "gpu": "h100-80gb", "tensor_parallel_size": 2},
        lesson="deploy-does-not-fit",
    ),
    Preset(
        slug="long-context",
        title=msg("Long context eats concurrency"),
        params={"model": "llama-3.1-8b", "gpu": "h100-80gb", "max_model_len": 131072},
        lesson="deploy-long-context",
    ),
)


class DeployExplainer(Explainer[DeployParams, DeployState, None]):
    name = "deploy"
    title = msg("Deploying a model with vLLM")
    summary = msg(
        "Does a model fit on these GPUs, and how many requests can run at once? One GPU's "
        "memory filled step by step: weights, activations, the KV budget, vLLM 0.33's "
        "block arithmetic and the maximum concurrency; then hand the result to the scheduler."
    )
    sim_version = SIM_VERSION
    source = VLLM_0_33
    presets = PRESETS
    default_preset = "8b-one-h100"
    limits = Limits(max_work=len(STEPS), unit=msg("steps"), work_per_second=2000.0)
    result_kinds = (
        ResultKind(key="ok", label=msg("ok")),
        ResultKind(key="estimate", label=msg("estimate")),
        ResultKind(key="fits", label=msg("fits")),
        ResultKind(key="refused", label=msg("vLLM refuses"), tone="fatal", ends_run=True),
    )

    def parse(self, raw: Any) -> DeployParams:
        return dp.parse(raw)

    def dump(self, params: DeployParams) -> dict[str, Any]:
        return dp.dump(params)

    def cost(self, params: DeployParams) -> float:
        return float(len(STEPS))

    def expected_bytes(self, params: DeployParams) -> float:
        return len(STEPS) * 2500.0

    def run(self, params: DeployParams, progress: Progress | None = None) -> DeployTrace:
        if progress is not None:
            progress(0, len(STEPS))
        pl = plan(params)
        out = frames(pl)
        if progress is not None:
            progress(len(STEPS), len(STEPS))
        return Trace(
            explainer=self.name,
            sim_version=self.sim_version,
            params=params,
            frames=out,
            series=None,
            summary=summary(pl),
            ended_early=None if pl.fits else pl.failure,
        )

    def public_json(self, trace: DeployTrace) -> dict[str, Any]:
        pl = plan(trace.params)
        return {
            "frames": [frame_json(f) for f in trace.frames],
            **summary(pl),
            "reason": str(reason(pl)) if not pl.fits else None,
        }


def frame_json(f: Frame[DeployState]) -> dict[str, Any]:
    return {
        "index": f.index,
        "op": f.op,
        "result": f.result,
        "narration": f.narration.render(),
        "source": f.source.as_dict() if f.source else None,
        "fields": {x.name: x.value for x in f.fields},
    }


def reason(pl: Plan) -> Message | None:
    """Why vLLM would refuse (the refusing frame's narration), or None when it fits."""
    if pl.fits:
        return None
    return BUILDERS[pl.failed_step](pl)[0]


def summary(pl: Plan) -> dict[str, Any]:
    s, st = pl.limiting, pl.step
    return {
        "kv": {
            "page_size_bytes": pl.layout.page_bytes,
            "bytes_per_block": s.bytes_per_block,
            "num_gpu_blocks": pl.num_gpu_blocks,
            "blocks_per_request": pl.blocks_per_request,
            "max_concurrency": round(pl.max_concurrency, 4),
        },
        "per_gpu": {
            "stage": s.index,
            "weights_bytes": s.weights_bytes,
            "kv_cache_bytes": s.kv_budget,
            "activation_bytes": s.activation_bytes,
            "reserved_bytes": s.reserve_bytes,
            "total_bytes": s.weights_bytes + s.kv_budget + s.activation_bytes + s.reserve_bytes,
            "memory_bytes": pl.params.gpu.memory_bytes,
        },
        "fits": pl.fits,
        "reason_code": pl.failure or None,
        "step_time": {
            "decode_step_s": round(st.decode_one_s, 6),
            "batch": st.batch,
            "batch_decode_step_s": round(st.decode_full_s, 6),
            "prefill_step_s": round(st.prefill_s, 6),
            "allreduce_s": round(st.allreduce_s, 6),
        },
        "scheduler": scheduler_params(pl),
    }
