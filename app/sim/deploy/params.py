"""The deployment's parameters: which model on which GPUs, and vLLM's engine settings.

Omitted fields take vLLM 0.33's defaults: ``gpu_memory_utilization`` 0.92 and ``block_size``
16 (``CacheConfig``), ``max_model_len`` the model's ``max_position_embeddings``, and
``max_num_seqs`` / ``max_num_batched_tokens`` the OpenAI server's defaults for the GPU
(``EngineArgs.get_batch_defaults``: 1024 / 16384 at 160 GiB and up, 1024 / 8192 from 70 GiB
except A100, else 256 / 2048).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from app.sim.core import ParamError, msg
from app.sim.core.validate import Checker, describe
from app.sim.deploy.tables import GPU_BY_ID, MODEL_BY_ID, GiB, GpuSpec, ModelSpec

Dtype = Literal["auto", "bf16", "fp8", "int4"]
KvDtype = Literal["auto", "fp8"]
Loc = tuple[str | int, ...]

DTYPES: tuple[str, ...] = ("auto", "bf16", "fp8", "int4")
KV_DTYPES: tuple[str, ...] = ("auto", "fp8")
GPU_MEMORY_UTILIZATION = 0.92  # CacheConfig.gpu_memory_utilization
BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
MAX_PARALLEL = 64
MAX_LEN = 10_000_000
TOP_KEYS = (
    "model",
    "gpu",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "dtype",
    "kv_cache_dtype",
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "kv_cache_memory_bytes",
)
MODEL_REQUIRED = (
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "vocab_size",
    "num_params",
)
MODEL_OPTIONAL = (
    "name",
    "active_params",
    "intermediate_size",
    "num_experts",
    "experts_per_token",
    "moe_intermediate_size",
    "tie_word_embeddings",
    "sliding_window",
    "full_attention_every",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "max_position_embeddings",
)
GPU_REQUIRED = ("memory_bytes", "hbm_bytes_per_s", "flops")
GPU_OPTIONAL = ("name", "flops_fp8", "link_bytes_per_s")


@dataclass(frozen=True, slots=True, kw_only=True)
class DeployParams:
    model: ModelSpec
    model_custom: bool
    gpu: GpuSpec
    gpu_custom: bool
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    dtype: Dtype = "auto"
    kv_cache_dtype: KvDtype = "auto"
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    max_model_len: int = 131072
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    block_size: int = BLOCK_SIZE
    kv_cache_memory_bytes: int | None = None

    @property
    def num_gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size


def batch_defaults(gpu: GpuSpec) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) of the OpenAI server on this GPU."""
    if gpu.memory_bytes >= 160 * GiB:
        return 1024, 16384
    if gpu.memory_bytes >= 70 * GiB and "a100" not in gpu.name.lower():
        return 1024, 8192
    return 256, 2048


def _text(c: Checker, raw: Mapping[str, Any], key: str, loc: Loc, default: str) -> str:
    v = raw.get(key, default)
    if not isinstance(v, str) or not 0 < len(v) <= 80:
        c.add(
            (*loc, key),
            msg("{key} must be a short text; you gave {what}", key=key, what=describe(v)),
        )
        return default
    return v


def _flag(c: Checker, raw: Mapping[str, Any], key: str, loc: Loc) -> bool:
    v = raw.get(key, False)
    if not isinstance(v, bool):
        c.add(
            (*loc, key),
            msg("{key} must be true or false; you gave {what}", key=key, what=describe(v)),
        )
        return False
    return v


def _custom_model(c: Checker, raw: Mapping[str, Any]) -> ModelSpec | None:
    loc: Loc = ("model",)
    c.unknown(raw, MODEL_REQUIRED + MODEL_OPTIONAL, loc)
    before = len(c.issues)
    for key in MODEL_REQUIRED:
        if key not in raw:
            c.add((*loc, key), msg("{key} is required", key=key))

    def whole(key: str, default: int, lo: int, hi: int) -> int:
        return c.integer(raw, key, loc, default=default, ge=lo, le=hi)

    layers = whole("num_layers", 1, 1, 1000)
    hidden = whole("hidden_size", 1, 1, 1 << 20)
    heads = whole("num_attention_heads", 1, 1, 4096)
    kv = whole("num_kv_heads", 1, 1, 4096)
    head_dim = whole("head_dim", 1, 1, 4096)
    vocab = whole("vocab_size", 1, 1, 1 << 24)
    params = whole("num_params", 1, 1, 10**14)
    active = whole("active_params", params, 1, 10**14)
    experts = whole("num_experts", 0, 0, 4096)
    per_token = whole("experts_per_token", 0, 0, 4096)
    moe_width = whole("moe_intermediate_size", 0, 0, 1 << 20)
    window = whole("sliding_window", 0, 0, MAX_LEN)
    every = whole("full_attention_every", 0, 0, 1000)
    lora = whole("kv_lora_rank", 0, 0, 1 << 16)
    rope = whole("qk_rope_head_dim", 0, 0, 1 << 16)
    spec = ModelSpec(
        id="custom",
        name=_text(c, raw, "name", loc, "custom"),
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv,
        head_dim=head_dim,
        vocab_size=vocab,
        num_params=params,
        active_params=active,
        intermediate_size=whole("intermediate_size", 0, 0, 1 << 22),
        num_experts=experts,
        experts_per_token=per_token,
        moe_intermediate_size=moe_width,
        expert_params=layers * experts * 3 * hidden * moe_width,
        tie_word_embeddings=_flag(c, raw, "tie_word_embeddings", loc),
        sliding_window=window,
        full_attention_every=every,
        kv_lora_rank=lora,
        qk_rope_head_dim=rope,
        max_position_embeddings=whole("max_position_embeddings", 131072, 1, MAX_LEN),
    )
    if len(c.issues) > before:
        return None
    _check_model(c, spec)
    return spec if len(c.issues) == before else None


def _check_model(c: Checker, m: ModelSpec) -> None:
    loc: Loc = ("model",)
    embed = m.vocab_size * m.hidden_size * (1 if m.tie_word_embeddings else 2)
    if m.num_params <= embed:
        c.add(
            (*loc, "num_params"),
            msg(
                "num_params ({n}) must exceed the embedding and LM head ({embed} parameters)",
                n=m.num_params,
                embed=embed,
            ),
        )
    if m.active_params > m.num_params:
        c.add((*loc, "active_params"), msg("active_params cannot exceed num_params"))
    if m.num_experts and not 0 < m.experts_per_token <= m.num_experts:
        c.add(
            (*loc, "experts_per_token"),
            msg("experts_per_token must be between 1 and num_experts ({n})", n=m.num_experts),
        )
    if m.num_experts and not m.moe_intermediate_size:
        c.add((*loc, "moe_intermediate_size"), msg("an MoE model needs moe_intermediate_size"))
    if m.num_experts and m.expert_params >= m.num_params:
        c.add(
            (*loc, "num_params"),
            msg("num_params must exceed the routed experts' {n} parameters", n=m.expert_params),
        )
    if m.sliding_window and m.full_attention_every < 2:
        c.add(
            (*loc, "full_attention_every"),
            msg(
                "with a sliding_window, full_attention_every must be ≥ 2 (every k-th layer is full attention)"
            ),
        )
    if m.kv_lora_rank and not m.qk_rope_head_dim:
        c.add((*loc, "qk_rope_head_dim"), msg("an MLA model (kv_lora_rank) needs qk_rope_head_dim"))
    if m.kv_lora_rank and m.sliding_window:
        c.add((*loc, "sliding_window"), msg("MLA with sliding-window layers is not modelled"))


def _model(c: Checker, raw: Any) -> ModelSpec | None:
    if isinstance(raw, str):
        found = MODEL_BY_ID.get(raw)
        if found is None:
            c.add(
                ("model",),
                msg(
                    "unknown model {model}; valid models: {valid}",
                    model=repr(raw[:40]),
                    valid=", ".join(MODEL_BY_ID),
                ),
            )
        return found
    if isinstance(raw, Mapping):
        return _custom_model(c, raw)
    c.add(
        ("model",),
        msg(
            "model must be a model id or an object of its architecture; you gave {what}",
            what=describe(raw),
        ),
    )
    return None


def _gpu(c: Checker, raw: Any) -> GpuSpec | None:
    if isinstance(raw, str):
        found = GPU_BY_ID.get(raw)
        if found is None:
            c.add(
                ("gpu",),
                msg(
                    "unknown gpu {gpu}; valid GPUs: {valid}",
                    gpu=repr(raw[:40]),
                    valid=", ".join(GPU_BY_ID),
                ),
            )
        return found
    if not isinstance(raw, Mapping):
        c.add(
            ("gpu",), msg("gpu must be a GPU id or an object; you gave {what}", what=describe(raw))
        )
        return None
    loc: Loc = ("gpu",)
    c.unknown(raw, GPU_REQUIRED + GPU_OPTIONAL, loc)
    before = len(c.issues)
    for key in GPU_REQUIRED:
        if key not in raw:
            c.add((*loc, key), msg("{key} is required", key=key))
    memory = c.integer(raw, "memory_bytes", loc, default=GiB, ge=GiB, le=1 << 44)
    bw = c.number(raw, "hbm_bytes_per_s", loc, default=1e12, gt=0, le=1e15)
    flops = c.number(raw, "flops", loc, default=1e14, gt=0, le=1e18)
    fp8 = c.number(raw, "flops_fp8", loc, default=0.0, ge=0, le=1e18)
    link = c.number(raw, "link_bytes_per_s", loc, default=450e9, gt=0, le=1e14)
    name = _text(c, raw, "name", loc, "custom GPU")
    if len(c.issues) > before:
        return None
    return GpuSpec(
        id="custom",
        name=name,
        memory_bytes=memory,
        hbm_bytes_per_s=bw or 1e12,
        flops=flops or 1e14,
        flops_fp8=fp8 or 0.0,
        link_bytes_per_s=link or 450e9,
    )


def parse(raw: Any) -> DeployParams:
    """Validate JSON-shaped params; raise ParamError naming every bad field."""
    if not isinstance(raw, Mapping):
        raise ParamError.single(
            (), msg("parameters must be an object; you gave {what}", what=describe(raw))
        )
    c = Checker()
    c.unknown(raw, TOP_KEYS, ())
    model = _model(c, raw.get("model", "llama-3.1-8b"))
    gpu = _gpu(c, raw.get("gpu", "h100-80gb"))
    tp = c.integer(raw, "tensor_parallel_size", (), default=1, ge=1, le=MAX_PARALLEL)
    pp = c.integer(raw, "pipeline_parallel_size", (), default=1, ge=1, le=MAX_PARALLEL)
    dtype = c.choice(raw, "dtype", (), DTYPES)
    kv_dtype = c.choice(raw, "kv_cache_dtype", (), KV_DTYPES)
    util = c.number(raw, "gpu_memory_utilization", (), default=GPU_MEMORY_UTILIZATION, gt=0, le=1)
    seqs_d, budget_d = batch_defaults(gpu) if gpu else (256, 2048)
    mml_d = model.max_position_embeddings if model else 131072
    mml = c.integer(raw, "max_model_len", (), default=mml_d, ge=1, le=MAX_LEN)
    seqs = c.integer(raw, "max_num_seqs", (), default=seqs_d, ge=1, le=65536)
    budget = c.integer(raw, "max_num_batched_tokens", (), default=budget_d, ge=1, le=MAX_LEN)
    block = c.integer(raw, "block_size", (), default=BLOCK_SIZE, ge=1, le=1024)
    pinned: int | None = None
    if raw.get("kv_cache_memory_bytes") is not None:
        pinned = c.integer(raw, "kv_cache_memory_bytes", (), default=0, ge=1, le=1 << 44)
    if not c.issues and model is not None:
        if mml > model.max_position_embeddings:
            c.add(
                ("max_model_len",),
                msg(
                    "max_model_len ({mml}) is greater than the model's max_position_embeddings "
                    "({limit}); vLLM refuses it",
                    mml=mml,
                    limit=model.max_position_embeddings,
                ),
            )
        if pp > model.num_layers:
            c.add(
                ("pipeline_parallel_size",),
                msg(
                    "pipeline_parallel_size ({pp}) cannot exceed the model's {n} layers",
                    pp=pp,
                    n=model.num_layers,
                ),
            )
    if not c.issues and budget < seqs:
        c.add(
            ("max_num_batched_tokens",),
            msg(
                "max_num_batched_tokens ({budget}) must be ≥ max_num_seqs ({seqs})",
                budget=budget,
                seqs=seqs,
            ),
        )
    if c.issues or model is None or gpu is None:
        raise ParamError(c.issues)
    return DeployParams(
        model=model,
        model_custom=not isinstance(raw.get("model", ""), str),
        gpu=gpu,
        gpu_custom=not isinstance(raw.get("gpu", ""), str),
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        dtype="bf16"
        if dtype == "bf16"
        else "fp8"
        if dtype == "fp8"
        else "int4"
        if dtype == "int4"
        else "auto",
        kv_cache_dtype="fp8" if kv_dtype == "fp8" else "auto",
        gpu_memory_utilization=util if util is not None else GPU_MEMORY_UTILIZATION,
        max_model_len=mml,
        max_num_seqs=seqs,
        max_num_batched_tokens=budget,
        block_size=block,
        kv_cache_memory_bytes=pinned,
    )


def _model_raw(m: ModelSpec) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": m.name,
        **{k: getattr(m, k) for k in MODEL_REQUIRED},
        "active_params": m.active_params,
        "tie_word_embeddings": m.tie_word_embeddings,
        "max_position_embeddings": m.max_position_embeddings,
    }
    for key in (
        "intermediate_size",
        "num_experts",
        "experts_per_token",
        "moe_intermediate_size",
        "sliding_window",
        "full_attention_every",
        "kv_lora_rank",
        "qk_rope_head_dim",
    ):
        if getattr(m, key):
            out[key] = getattr(m, key)
    return out


def dump(p: DeployParams) -> dict[str, Any]:
    g = p.gpu
    out: dict[str, Any] = {
        "model": _model_raw(p.model) if p.model_custom else p.model.id,
        "gpu": {
            "name": g.name,
            "memory_bytes": g.memory_bytes,
            "hbm_bytes_per_s": g.hbm_bytes_per_s,
            "flops": g.flops,
            "flops_fp8": g.flops_fp8,
            "link_bytes_per_s": g.link_bytes_per_s,
        }
        if p.gpu_custom
        else g.id,
        "tensor_parallel_size": p.tensor_parallel_size,
        "pipeline_parallel_size": p.pipeline_parallel_size,
        "dtype": p.dtype,
        "kv_cache_dtype": p.kv_cache_dtype,
        "gpu_memory_utilization": p.gpu_memory_utilization,
        "max_model_len": p.max_model_len,
        "max_num_seqs": p.max_num_seqs,
        "max_num_batched_tokens": p.max_num_batched_tokens,
        "block_size": p.block_size,
    }
    if p.kv_cache_memory_bytes is not None:
        out["kv_cache_memory_bytes"] = p.kv_cache_memory_bytes
    return out
