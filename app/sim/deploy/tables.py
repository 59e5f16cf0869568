"""The models and GPUs the deployment explainer ships.

Model rows are architecture facts from each model's published ``config.json`` (layers, hidden
size, attention and KV heads, head dim, vocabulary, MoE experts, sliding-window layers, MLA
ranks) and the parameter counts of the model cards, rounded as published. GPU rows are
datasheet figures: memory (GiB), HBM bandwidth, dense (not sparse) BF16 and FP8 FLOP/s, and the
GPU-to-GPU link bandwidth per direction (NVLink / Infinity Fabric / PCIe) the all-reduce uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GiB = 1 << 30

Native = Literal["bf16", "fp8", "mxfp4"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """One model's architecture, as vLLM reads it from the config."""

    id: str
    name: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    num_params: int
    active_params: int  # parameters one token passes through (= num_params unless MoE)
    intermediate_size: int = 0  # dense MLP width
    num_experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    expert_params: int = 0  # parameters in routed experts (all layers)
    tie_word_embeddings: bool = False
    sliding_window: int = 0  # 0: no sliding-window layers
    full_attention_every: int = 0  # with a window: layer i is full attention iff (i+1) % k == 0
    kv_lora_rank: int = 0  # MLA (DeepSeek): the compressed latent cached per token
    qk_rope_head_dim: int = 0
    max_position_embeddings: int = 131072
    native: Native = "bf16"  # the checkpoint's weight format ("auto")

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe(self) -> bool:
        return self.num_experts > 0

    def is_sliding(self, layer: int) -> bool:
        return self.sliding_window > 0 and (layer + 1) % self.full_attention_every != 0

    @property
    def num_sliding_layers(self) -> int:
        return sum(self.is_sliding(i) for i in range(self.num_layers))


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    id: str
    name: str
    memory_bytes: int
    hbm_bytes_per_s: float
    flops: float  # dense BF16 FLOP/s
    flops_fp8: float = 0.0  # dense FP8 FLOP/s (0: no FP8 tensor cores)
    link_bytes_per_s: float = 450e9  # GPU-to-GPU, per direction


def _expert_params(layers: int, experts: int, hidden: int, width: int) -> int:
    """gate, up and down projections of every routed expert of every MoE layer."""
    return layers * experts * 3 * hidden * width


MODELS: tuple[ModelSpec, ...] = (
    ModelSpec(
        id="llama-3.1-8b",
        name="Llama 3.1 8B",
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=128256,
        num_params=8_030_000_000,
        active_params=8_030_000_000,
        intermediate_size=14336,
    ),
    ModelSpec(
        id="llama-3.1-70b",
        name="Llama 3.1 70B",
        num_layers=80,
        hidden_size=8192,
        num_attention_heads=64,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=128256,
        num_params=70_600_000_000,
        active_params=70_600_000_000,
        intermediate_size=28672,
    ),
    ModelSpec(
        id="qwen3-8b",
        name="Qwen3 8B",
        num_layers=36,
        hidden_size=4096,
        num_attention_heads=32,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=151936,
        num_params=8_190_000_000,
        active_params=8_190_000_000,
        intermediate_size=12288,
        max_position_embeddings=40960,
    ),
    ModelSpec(
        id="qwen3-32b",
        name="Qwen3 32B",
        num_layers=64,
        hidden_size=5120,
        num_attention_heads=64,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=151936,
        num_params=32_800_000_000,
        active_params=32_800_000_000,
        intermediate_size=25600,
        max_position_embeddings=40960,
    ),
    ModelSpec(
        id="qwen3-30b-a3b",
        name="Qwen3 30B-A3B (MoE)",
        num_layers=48,
        hidden_size=2048,
        num_attention_heads=32,
        num_kv_heads=4,
        head_dim=128,
        vocab_size=151936,
        num_params=30_500_000_000,
        active_params=3_300_000_000,
        num_experts=128,
        experts_per_token=8,
        moe_intermediate_size=768,
        expert_params=_expert_params(48, 128, 2048, 768),
        max_position_embeddings=40960,
    ),
    ModelSpec(
        id="mixtral-8x7b",
        name="Mixtral 8x7B",
        num_layers=32,
        hidden_size=4096,
        num_attention_heads=32,
        num_kv_heads=8,
        head_dim=128,
        vocab_size=32000,
        num_params=46_700_000_000,
        active_params=12_900_000_000,
        num_experts=8,
        experts_per_token=2,
        moe_intermediate_size=14336,
        expert_params=_expert_params(32, 8, 4096, 14336),
        max_position_embeddings=32768,
    ),
    ModelSpec(
        id="deepseek-v3",
        name="DeepSeek-V3 (MLA)",
        num_layers=61,
        hidden_size=7168,
        num_attention_heads=128,
        num_kv_heads=128,
        head_dim=128,
        vocab_size=129280,
        num_params=671_000_000_000,
        active_params=37_000_000_000,
        intermediate_size=18432,
        num_experts=256,
        experts_per_token=8,
        moe_intermediate_size=2048,
        expert_params=_expert_params(58, 256, 7168, 2048),
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        max_position_embeddings=163840,
        native="fp8",
    ),
    ModelSpec(
        id="gpt-oss-20b",
        name="gpt-oss-20b",
        num_layers=24,
        hidden_size=2880,
        num_attention_heads=64,
        num_kv_heads=8,
        head_dim=64,
        vocab_size=201088,
        num_params=20_900_000_000,
        active_params=3_600_000_000,
        num_experts=32,
        experts_per_token=4,
        moe_intermediate_size=2880,
        expert_params=_expert_params(24, 32, 2880, 2880),
        sliding_window=128,
        full_attention_every=2,
        native="mxfp4",
    ),
    ModelSpec(
        id="gpt-oss-120b",
        name="gpt-oss-120b",
        num_layers=36,
        hidden_size=2880,
        num_attention_heads=64,
        num_kv_heads=8,
        head_dim=64,
        vocab_size=201088,
        num_params=116_800_000_000,
        active_params=5_100_000_000,
        num_experts=128,
        experts_per_token=4,
        moe_intermediate_size=2880,
        expert_params=_expert_params(36, 128, 2880, 2880),
        sliding_window=128,
        full_attention_every=2,
        native="mxfp4",
    ),
    ModelSpec(
        id="gemma-3-27b",
        name="Gemma 3 27B",
        num_layers=62,
        hidden_size=5376,
        num_attention_heads=32,
        num_kv_heads=16,
        head_dim=128,
        vocab_size=262208,
        num_params=27_400_000_000,
        active_params=27_400_000_000,
        intermediate_size=21504,
        tie_word_embeddings=True,
        sliding_window=1024,
        full_attention_every=6,
    ),
)

GPUS: tuple[GpuSpec, ...] = (
    GpuSpec(
        id="h100-80gb",
        name="H100 SXM 80 GB",
        memory_bytes=80 * GiB,
        hbm_bytes_per_s=3.35e12,
        flops=989e12,
        flops_fp8=1979e12,
        link_bytes_per_s=450e9,
    ),
    GpuSpec(
        id="h200",
        name="H200 SXM 141 GB",
        memory_bytes=141 * GiB,
        hbm_bytes_per_s=4.8e12,
        flops=989e12,
        flops_fp8=1979e12,
        link_bytes_per_s=450e9,
    ),
    GpuSpec(
        id="a100-40gb",
        name="A100 SXM 40 GB",
        memory_bytes=40 * GiB,
        hbm_bytes_per_s=1.555e12,
        flops=312e12,
        link_bytes_per_s=300e9,
    ),
    GpuSpec(
        id="a100-80gb",
        name="A100 SXM 80 GB",
        memory_bytes=80 * GiB,
        hbm_bytes_per_s=2.039e12,
        flops=312e12,
        link_bytes_per_s=300e9,
    ),
    GpuSpec(
        id="l40s",
        name="L40S 48 GB",
        memory_bytes=48 * GiB,
        hbm_bytes_per_s=864e9,
        flops=362e12,
        flops_fp8=733e12,
        link_bytes_per_s=32e9,
    ),
    GpuSpec(
        id="b200",
        name="B200 180 GB",
        memory_bytes=180 * GiB,
        hbm_bytes_per_s=8e12,
        flops=2250e12,
        flops_fp8=4500e12,
        link_bytes_per_s=900e9,
    ),
    GpuSpec(
        id="mi300x",
        name="MI300X 192 GB",
        memory_bytes=192 * GiB,
        hbm_bytes_per_s=5.3e12,
        flops=1307e12,
        flops_fp8=2615e12,
        link_bytes_per_s=448e9,
    ),
)

MODEL_BY_ID = {m.id: m for m in MODELS}
GPU_BY_ID = {g.id: g for g in GPUS}
