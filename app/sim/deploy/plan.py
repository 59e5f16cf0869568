"""The deployment arithmetic: what one GPU holds, how vLLM 0.33 turns the rest into KV-cache
blocks, how many requests of ``max_model_len`` fit, and how long a step takes.

Weights, the KV page size, the grouping of layers, ``num_gpu_blocks`` and the maximum
concurrency follow vLLM's code (``app.sim.deploy.sources`` cites each function). The
activation peak and the runtime reserve are *estimates*: vLLM measures them with a profile
run, which a simulator cannot do. The step times are a roofline estimate of ours, not vLLM's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.sim.deploy.params import DeployParams
from app.sim.deploy.tables import GiB

MIB = 1 << 20
CONTEXT_RESERVE = GiB  # CUDA context, cuBLAS workspaces and other non-PyTorch memory (estimate)
NCCL_RESERVE = 512 * MIB  # communicator buffers when there is more than one GPU (estimate)
MFU = 0.5  # the share of peak FLOP/s a prefill reaches (the scheduler's default)
ALLREDUCE_LATENCY_S = 8e-6  # one small all-reduce over NVLink-class links (estimate)
INT4_BYTES = 0.5 + 2 / 128  # 4-bit weights plus a bf16 scale per group of 128
MXFP4_BYTES = 0.5 + 1 / 32  # 4-bit weights plus an 8-bit scale per block of 32


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    kind: str  # "full" or "sliding"
    layers: tuple[int, ...]  # global layer indices


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    index: int
    start: int  # first layer
    layers: int
    embed_bytes: int
    layer_bytes: int
    expert_bytes: int  # part of layer_bytes
    head_bytes: int
    activation_bytes: int
    reserve_bytes: int
    requested_bytes: int
    kv_budget: int
    layers_per_block: int
    bytes_per_block: int
    num_blocks: int

    @property
    def weights_bytes(self) -> int:
        return self.embed_bytes + self.layer_bytes + self.head_bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    mla: bool
    kv_heads_rank: int
    head_size: int
    head_size_v: int
    dtype_bytes: int
    page_bytes: int
    groups: tuple[Group, ...]
    group_size: int
    num_full: int
    num_sliding: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StepTime:
    compute_flops: float
    weights_read_bytes: int  # per GPU per step (active parameters)
    kv_bytes_per_token: int  # per GPU, full-attention layers
    decode_one_s: float
    decode_full_s: float
    batch: int
    prefill_s: float
    allreduce_s: float  # per decode step of the full batch


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    params: DeployParams
    failure: str  # "" when it fits, else the reason key
    failed_step: str
    stages: tuple[Stage, ...]
    limiting: Stage
    layout: Layout
    num_gpu_blocks: int
    blocks_per_request: int
    max_concurrency: float
    needed_bytes: int  # KV for one max_model_len request (bytes_per_block × its blocks)
    estimated_max_len: int
    step: StepTime

    @property
    def fits(self) -> bool:
        return not self.failure


def pp_partitions(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as vLLM's ``get_pp_indices`` splits them."""
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


def parallel_failure(p: DeployParams) -> str:
    m, tp = p.model, p.tensor_parallel_size
    if m.num_attention_heads % tp:
        return "tp_heads"
    if not m.mla:
        kv = m.num_kv_heads
        if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
            return "tp_kv_heads"
    return ""


def bytes_per_param(p: DeployParams) -> tuple[float, float]:
    """(dense-layer, routed-expert) bytes per parameter of the chosen weight format."""
    fmt = p.model.native if p.dtype == "auto" else p.dtype
    if fmt == "fp8":
        return 1.0, 1.0
    if fmt == "int4":
        return INT4_BYTES, INT4_BYTES
    if fmt == "mxfp4":
        return 2.0, MXFP4_BYTES
    return 2.0, 2.0


def weight_format(p: DeployParams) -> str:
    return p.model.native if p.dtype == "auto" else p.dtype


def layout(p: DeployParams) -> Layout:
    m, tp, bs = p.model, p.tensor_parallel_size, p.block_size
    dtype_bytes = 1 if p.kv_cache_dtype == "fp8" else 2
    if m.mla:
        heads, k, v = 1, m.kv_lora_rank + m.qk_rope_head_dim, 0
    else:
        heads, k, v = max(1, m.num_kv_heads // tp), m.head_dim, m.head_dim
    page = heads * bs * (k + v) * dtype_bytes
    full = [i for i in range(m.num_layers) if not m.is_sliding(i)]
    sliding = [i for i in range(m.num_layers) if m.is_sliding(i)]
    buckets = [(kind, ls) for kind, ls in (("sliding", sliding), ("full", full)) if ls]
    if len(buckets) == 1:
        kind, ls = buckets[0]
        groups: tuple[Group, ...] = (Group(kind=kind, layers=tuple(ls)),)
        size = len(ls)
    else:
        lo, hi = min(len(sliding), len(full)), max(len(sliding), len(full))
        size = hi if hi < lo * 1.5 else lo
        out: list[Group] = []
        for kind, ls in buckets:
            n = cdiv(len(ls), size)
            out.extend(Group(kind=kind, layers=tuple(ls[i::n])) for i in range(n))
        groups = tuple(out)
    return Layout(
        mla=m.mla,
        kv_heads_rank=heads,
        head_size=k,
        head_size_v=v,
        dtype_bytes=dtype_bytes,
        page_bytes=page,
        groups=groups,
        group_size=size,
        num_full=len(full),
        num_sliding=len(sliding),
    )


def blocks_per_request(p: DeployParams, lay: Layout, max_len: int) -> int:
    """Blocks one request of ``max_len`` tokens takes from the shared pool, summed over the
    groups (full attention: all its tokens; sliding window: the window plus the tokens in
    flight, + 1)."""
    in_flight = (p.pipeline_parallel_size + 1) * p.max_num_batched_tokens
    window = p.model.sliding_window
    total = 0
    for g in lay.groups:
        if g.kind == "full":
            total += cdiv(max_len, p.block_size)
        else:
            total += cdiv(min(window - 1 + in_flight, max_len), p.block_size) + 1
    return total


def _stage(p: DeployParams, lay: Layout, index: int, start: int, n: int) -> Stage:
    m, tp, pp = p.model, p.tensor_parallel_size, p.pipeline_parallel_size
    dense_b, expert_b = bytes_per_param(p)
    embed = m.vocab_size * m.hidden_size
    head = 0 if m.tie_word_embeddings else embed
    per_layer = (m.num_params - embed - head) / m.num_layers
    experts = m.expert_params / m.num_layers
    first, last = index == 0, index == pp - 1
    embed_bytes = int(embed * 2 / tp) if first else 0
    head_bytes = int(embed * 2 / tp) if last and (head or pp > 1) else 0
    expert_bytes = int(n * experts * expert_b / tp)
    layer_bytes = int(n * (per_layer - experts) * dense_b / tp) + expert_bytes
    ffn = m.moe_intermediate_size * m.experts_per_token if m.moe else m.intermediate_size
    tokens = p.max_num_batched_tokens
    activation = 2 * tokens * (4 * m.hidden_size + 3 * ffn // tp)
    if last:
        activation += p.max_num_seqs * m.vocab_size * 4  # fp32 logits of the sampler run
    reserve = CONTEXT_RESERVE + (NCCL_RESERVE if p.num_gpus > 1 else 0)
    requested = math.ceil(p.gpu.memory_bytes * p.gpu_memory_utilization)
    weights = embed_bytes + layer_bytes + head_bytes
    if p.kv_cache_memory_bytes is not None:
        budget = p.kv_cache_memory_bytes
    else:
        budget = requested - weights - activation - reserve
    here = range(start, start + n)
    per_block = max(sum(1 for i in g.layers if i in here) for g in lay.groups)
    bpb = per_block * lay.page_bytes
    return Stage(
        index=index,
        start=start,
        layers=n,
        embed_bytes=embed_bytes,
        layer_bytes=layer_bytes,
        expert_bytes=expert_bytes,
        head_bytes=head_bytes,
        activation_bytes=activation,
        reserve_bytes=reserve,
        requested_bytes=requested,
        kv_budget=budget,
        layers_per_block=per_block,
        bytes_per_block=bpb,
        num_blocks=max(0, budget // bpb) if bpb else 0,
    )


def estimate_max_len(p: DeployParams, lay: Layout, stage: Stage) -> int:
    """The longest max_model_len whose one request fits (vLLM's binary search), 0 if none."""
    room = stage.kv_budget - stage.bytes_per_block

    def fits(n: int) -> bool:
        return stage.bytes_per_block * blocks_per_request(p, lay, n) <= room

    if not fits(1):
        return 0
    lo, hi, best = 1, p.max_model_len, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def step_time(p: DeployParams, lay: Layout, stages: tuple[Stage, ...], conc: float) -> StepTime:
    m, g, tp = p.model, p.gpu, p.tensor_parallel_size
    fp8 = weight_format(p) == "fp8" and g.flops_fp8 > 0
    flops = (g.flops_fp8 if fp8 else g.flops) * MFU
    weights_all = sum(s.weights_bytes for s in stages)
    per_param = weights_all * tp / m.num_params
    read = int(m.active_params / tp * per_param)
    kv_token = lay.page_bytes // p.block_size * lay.num_full
    if lay.mla or lay.num_sliding == 0:
        kv_token = lay.page_bytes // p.block_size * m.num_layers
    batch = max(1, min(p.max_num_seqs, int(conc)))

    def allreduce(tokens: int) -> float:
        if tp == 1:
            return 0.0
        moved = 2 * (tp - 1) / tp * tokens * m.hidden_size * 2
        return 2 * m.num_layers * (ALLREDUCE_LATENCY_S + moved / g.link_bytes_per_s)

    def decode(b: int, ctx: int) -> float:
        memory = (read + b * ctx * kv_token) / g.hbm_bytes_per_s
        compute = 2 * m.active_params / tp * b / flops
        return max(memory, compute) + allreduce(b)

    tokens = p.max_num_batched_tokens
    prefill = max(2 * m.active_params / tp * tokens / flops, read / g.hbm_bytes_per_s)
    return StepTime(
        compute_flops=flops / MFU,
        weights_read_bytes=read,
        kv_bytes_per_token=kv_token,
        decode_one_s=decode(1, p.max_model_len),
        decode_full_s=decode(batch, p.max_model_len),
        batch=batch,
        prefill_s=prefill + allreduce(tokens),
        allreduce_s=allreduce(batch),
    )


def _failure(p: DeployParams, limiting: Stage, needed: int) -> tuple[str, str]:
    if limiting.weights_bytes > p.gpu.memory_bytes:
        return "weights", "weights"
    if p.kv_cache_memory_bytes is not None:
        used = (
            limiting.weights_bytes
            + limiting.activation_bytes
            + limiting.reserve_bytes
            + limiting.kv_budget
        )
        if used > p.gpu.memory_bytes:
            return "pinned_oom", "budget"
    if limiting.kv_budget - limiting.bytes_per_block <= 0:
        return "no_kv_memory", "blocks"
    if needed > limiting.kv_budget - limiting.bytes_per_block:
        return "max_model_len", "blocks"
    return "", ""


def plan(p: DeployParams) -> Plan:
    lay = layout(p)
    starts, stages = 0, []
    for i, n in enumerate(pp_partitions(p.model.num_layers, p.pipeline_parallel_size)):
        stages.append(_stage(p, lay, i, starts, n))
        starts += n
    limiting = min(stages, key=lambda s: (s.num_blocks, -s.weights_bytes))
    heaviest = max(stages, key=lambda s: s.weights_bytes)
    per_req = blocks_per_request(p, lay, p.max_model_len)
    needed = limiting.bytes_per_block * per_req
    failure = parallel_failure(p)
    failed_step = "parallel" if failure else ""
    if not failure:
        failure, failed_step = _failure(
            p, heaviest if heaviest.weights_bytes > p.gpu.memory_bytes else limiting, needed
        )
    blocks = min(s.num_blocks for s in stages)
    conc = blocks / per_req if per_req else 0.0
    return Plan(
        params=p,
        failure=failure,
        failed_step=failed_step,
        stages=tuple(stages),
        limiting=heaviest if failure == "weights" else limiting,
        layout=lay,
        num_gpu_blocks=blocks,
        blocks_per_request=per_req,
        max_concurrency=conc,
        needed_bytes=needed,
        estimated_max_len=estimate_max_len(p, lay, limiting) if failure == "max_model_len" else 0,
        step=step_time(p, lay, tuple(stages), conc),
    )
