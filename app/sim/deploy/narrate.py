"""The frames of a deployment: one per step of the arithmetic, each with its narration (a
``msg``), its vLLM citation and its figures. A deployment vLLM would refuse ends at the step
where vLLM stops, with the reason in our words."""

from __future__ import annotations

from typing import TypedDict

from app.sim.core import Field, Frame, Message, SourceRef, msg
from app.sim.core.i18n import Param
from app.sim.deploy import sources as src
from app.sim.deploy.plan import MFU, Plan, weight_format
from app.sim.deploy.tables import GiB

STEPS: tuple[str, ...] = (
    "parallel",
    "weights",
    "activation",
    "reserve",
    "budget",
    "page",
    "block",
    "blocks",
    "concurrency",
    "decode",
    "prefill",
    "verdict",
)


class DeployState(TypedDict):
    """What the picture draws: the whole plan's figures and how far the walk has got."""

    step: str
    shown: int  # steps revealed so far (the picture fills the bar up to here)
    model: str
    gpu: str
    tp: int
    pp: int
    stage: int  # the pipeline stage drawn (the one with the fewest blocks)
    total: int
    requested: int
    weights: int
    activation: int
    reserve: int
    kv_budget: int
    pinned: bool
    mla: bool
    kv_heads: int
    head_size: int
    head_size_v: int
    dtype_bytes: int
    block_size: int
    page_bytes: int
    layers_per_block: int
    groups: int
    sliding_groups: int
    bytes_per_block: int
    num_gpu_blocks: int
    blocks_per_request: int
    max_model_len: int
    max_concurrency: float
    decode_ms: float
    decode_full_ms: float
    batch: int
    prefill_ms: float
    fits: bool
    failure: str


def gib(n: float) -> str:
    return f"{n / GiB:.2f} GiB"


def num(n: int) -> str:
    return f"{n:,}"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def state(pl: Plan, step: str, shown: int) -> DeployState:
    p, s, lay = pl.params, pl.limiting, pl.layout
    return DeployState(
        step=step,
        shown=shown,
        model=p.model.name,
        gpu=p.gpu.name,
        tp=p.tensor_parallel_size,
        pp=p.pipeline_parallel_size,
        stage=s.index,
        total=p.gpu.memory_bytes,
        requested=s.requested_bytes,
        weights=s.weights_bytes,
        activation=s.activation_bytes,
        reserve=s.reserve_bytes,
        kv_budget=s.kv_budget,
        pinned=p.kv_cache_memory_bytes is not None,
        mla=lay.mla,
        kv_heads=lay.kv_heads_rank,
        head_size=lay.head_size,
        head_size_v=lay.head_size_v,
        dtype_bytes=lay.dtype_bytes,
        block_size=p.block_size,
        page_bytes=lay.page_bytes,
        layers_per_block=s.layers_per_block,
        groups=len(lay.groups),
        sliding_groups=sum(g.kind == "sliding" for g in lay.groups),
        bytes_per_block=s.bytes_per_block,
        num_gpu_blocks=pl.num_gpu_blocks,
        blocks_per_request=pl.blocks_per_request,
        max_model_len=p.max_model_len,
        max_concurrency=round(pl.max_concurrency, 4),
        decode_ms=round(pl.step.decode_one_s * 1e3, 3),
        decode_full_ms=round(pl.step.decode_full_s * 1e3, 3),
        batch=pl.step.batch,
        prefill_ms=round(pl.step.prefill_s * 1e3, 3),
        fits=pl.fits,
        failure=pl.failure,
    )


Step = tuple[Message, SourceRef | None, tuple[Field, ...], str]  # narration, source, fields, result


def _parallel(pl: Plan) -> Step:
    p, m = pl.params, pl.params.model
    tp, pp = p.tensor_parallel_size, p.pipeline_parallel_size
    fields = (
        Field(name="tensor_parallel_size", value=tp),
        Field(name="pipeline_parallel_size", value=pp),
        Field(name="num_attention_heads", value=m.num_attention_heads),
        Field(name="num_kv_heads", value=1 if m.mla else m.num_kv_heads),
    )
    if pl.failure == "tp_heads":
        text = msg(
            "Tensor parallel {tp} does not divide the model's {heads} attention heads. vLLM "
            "stops at start-up: each GPU must get the same number of heads. Pick a "
            "tensor_parallel_size that divides {heads}.",
            tp=tp,
            heads=m.num_attention_heads,
        )
        return text, src.VERIFY_PARALLEL, fields, "refused"
    if pl.failure == "tp_kv_heads":
        text = msg(
            "Tensor parallel {tp} and the model's {kv} KV heads do not split evenly: vLLM "
            "needs the KV heads divisible by TP, or TP divisible by the KV heads (then each "
            "KV head is copied to several GPUs). Pick another tensor_parallel_size.",
            tp=tp,
            kv=m.num_kv_heads,
        )
        return text, src.LLAMA_ATTENTION, fields, "refused"
    # the figures both sentences quote (an MLA model has no KV heads to split)
    split: dict[str, Param] = {
        "model": m.name,
        "n": p.num_gpus,
        "gpu": p.gpu.name,
        "mem": gib(p.gpu.memory_bytes),
        "tp": tp,
        "per": m.num_attention_heads // tp,
        "heads": m.num_attention_heads,
        "pp": pp,
        "layers": pl.limiting.layers,
        "total": m.num_layers,
    }
    if m.mla:
        text = msg(
            "{model} on {n} × {gpu} ({mem} each). Tensor parallel {tp} gives each GPU {per} of "
            "the {heads} attention heads; MLA caches one compressed latent per token, the same "
            "on every GPU. Pipeline parallel {pp} gives this GPU {layers} of the {total} layers.",
            **split,
        )
    else:
        text = msg(
            "{model} on {n} × {gpu} ({mem} each). Tensor parallel {tp} gives each GPU {per} of "
            "the {heads} attention heads and {kv_per} of the {kv} KV heads. Pipeline parallel "
            "{pp} gives this GPU {layers} of the {total} layers.",
            **split,
            kv_per=pl.layout.kv_heads_rank,
            kv=m.num_kv_heads,
        )
    return text, src.VERIFY_PARALLEL, fields, "ok"


def _weights(pl: Plan) -> Step:
    p, m, s = pl.params, pl.params.model, pl.limiting
    fields = (
        Field(name="embedding", value=gib(s.embed_bytes)),
        Field(name="layers", value=gib(s.layer_bytes)),
        Field(name="lm_head", value=gib(s.head_bytes)),
        Field(name="weights_bytes", value=s.weights_bytes, unit="B", changed=True),
    )
    if pl.failure == "weights":
        text = msg(
            "The weights alone need {w} on this GPU, more than its {mem}: loading them runs out "
            "of memory before vLLM can size the KV cache. Spread the model over more GPUs "
            "(tensor or pipeline parallel) or store it smaller (fp8, int4).",
            w=gib(s.weights_bytes),
            mem=gib(p.gpu.memory_bytes),
        )
        return text, src.PP_INDICES, fields, "refused"
    text = msg(
        "Weights on this GPU: {w} = embedding {embed} + {layers} layers {layer} + LM head "
        "{head} (with tensor parallel {tp}, each GPU holds 1/{tp} of every matrix); format {fmt}.",
        w=gib(s.weights_bytes),
        embed=gib(s.embed_bytes),
        layers=s.layers,
        layer=gib(s.layer_bytes),
        head=gib(s.head_bytes),
        tp=p.tensor_parallel_size,
        fmt=weight_format(p),
    )
    if m.moe:
        text = text + msg(
            " Of the layers, {experts} are routed experts: all {n} are loaded although each "
            "token uses {k}.",
            experts=gib(s.expert_bytes),
            n=m.num_experts,
            k=m.experts_per_token,
        )
    return text, src.PP_INDICES, fields, "ok"


def _activation(pl: Plan) -> Step:
    p, s = pl.params, pl.limiting
    text = msg(
        "Activation peak ≈ {act}: an estimate for a forward pass of max_num_batched_tokens "
        "({tokens}) tokens plus the sampler's logits for max_num_seqs ({seqs}) requests. vLLM "
        "measures it instead, with a profile run of that many dummy tokens.",
        act=gib(s.activation_bytes),
        tokens=num(p.max_num_batched_tokens),
        seqs=num(p.max_num_seqs),
    )
    fields = (Field(name="activation_bytes", value=s.activation_bytes, unit="B", changed=True),)
    return text, src.DETERMINE_MEMORY, fields, "estimate"


def _reserve(pl: Plan) -> Step:
    p, s = pl.params, pl.limiting
    text = msg(
        "Runtime reserve ≈ {reserve}: an estimate for the CUDA context, NCCL buffers and other "
        "memory outside PyTorch, which vLLM's profile also measures. CUDA graphs are captured "
        "after the KV cache is allocated, in the {headroom} gpu_memory_utilization leaves free.",
        reserve=gib(s.reserve_bytes),
        headroom=gib(p.gpu.memory_bytes - s.requested_bytes),
    )
    fields = (Field(name="reserved_bytes", value=s.reserve_bytes, unit="B", changed=True),)
    return text, src.DETERMINE_MEMORY, fields, "estimate"


def _budget(pl: Plan) -> Step:
    p, s = pl.params, pl.limiting
    fields = (
        Field(name="gpu_memory_utilization", value=p.gpu_memory_utilization),
        Field(name="requested_memory", value=s.requested_bytes, unit="B"),
        Field(name="kv_cache_bytes", value=s.kv_budget, unit="B", changed=True),
    )
    if p.kv_cache_memory_bytes is not None:
        text = msg(
            "kv_cache_memory_bytes pins the KV budget at {kv}: vLLM skips the measurement and "
            "ignores gpu_memory_utilization.",
            kv=gib(s.kv_budget),
        )
        if pl.failure == "pinned_oom":
            text = text + msg(
                " With {rest} of weights, activations and reserve that is more than the GPU's "
                "{mem}: the allocation would run out of memory. Pin a smaller budget.",
                rest=gib(s.weights_bytes + s.activation_bytes + s.reserve_bytes),
                mem=gib(p.gpu.memory_bytes),
            )
            return text, src.DETERMINE_MEMORY, fields, "refused"
        return text, src.DETERMINE_MEMORY, fields, "ok"
    text = msg(
        "KV budget = {total} × {util} − weights {w} − activation {act} − reserve {res} = {kv}.",
        total=gib(p.gpu.memory_bytes),
        util=p.gpu_memory_utilization,
        w=gib(s.weights_bytes),
        act=gib(s.activation_bytes),
        res=gib(s.reserve_bytes),
        kv=gib(s.kv_budget),
    )
    return text, src.REQUEST_MEMORY, fields, "ok"


def _page(pl: Plan) -> Step:
    p, lay = pl.params, pl.layout
    fields = (
        Field(name="block_size", value=p.block_size),
        Field(name="kv_cache_dtype", value=p.kv_cache_dtype),
        Field(name="page_size_bytes", value=lay.page_bytes, unit="B", changed=True),
    )
    if lay.mla:
        text = msg(
            "One block of one layer (page_size_bytes) = {bs} tokens × {latent} latent values "
            "({lora} + {rope}) × {dt} bytes = {page} bytes. MLA stores one compressed latent "
            "per token instead of K and V for every head.",
            bs=p.block_size,
            latent=lay.head_size,
            lora=p.model.kv_lora_rank,
            rope=p.model.qk_rope_head_dim,
            dt=lay.dtype_bytes,
            page=num(lay.page_bytes),
        )
        return text, src.MLA_SPEC, fields, "ok"
    text = msg(
        "One block of one layer (page_size_bytes) = {heads} KV heads × {bs} tokens × (K {k} + "
        "V {v}) values × {dt} bytes = {page} bytes.",
        heads=lay.kv_heads_rank,
        bs=p.block_size,
        k=lay.head_size,
        v=lay.head_size_v,
        dt=lay.dtype_bytes,
        page=num(lay.page_bytes),
    )
    return text, src.PAGE_SIZE, fields, "ok"


def _block(pl: Plan) -> Step:
    lay, s = pl.layout, pl.limiting
    fields = (
        Field(name="layers_per_block", value=s.layers_per_block),
        Field(name="bytes_per_block", value=s.bytes_per_block, unit="B", changed=True),
    )
    if lay.num_sliding and lay.num_full:
        text = msg(
            "{full} full-attention and {sliding} sliding-window layers make {groups} groups of "
            "up to {size} layers; every group draws block ids from one shared pool, so a block "
            "id holds one page in each layer of a group: {layers} × {page} = {bpb} bytes per "
            "block on this GPU. A sliding-window group keeps only the blocks its window needs.",
            full=lay.num_full,
            sliding=lay.num_sliding,
            groups=len(lay.groups),
            size=lay.group_size,
            layers=s.layers_per_block,
            page=num(lay.page_bytes),
            bpb=num(s.bytes_per_block),
        )
        return text, src.GROUPS_HYBRID, fields, "ok"
    text = msg(
        "A block id stands for the same block in every layer on this GPU: bytes per block = "
        "{layers} layers × {page} = {bpb} bytes.",
        layers=s.layers_per_block,
        page=num(lay.page_bytes),
        bpb=num(s.bytes_per_block),
    )
    return text, src.BYTES_PER_BLOCK, fields, "ok"


def _blocks(pl: Plan) -> Step:
    p, s = pl.params, pl.limiting
    fields = (
        Field(name="kv_cache_bytes", value=s.kv_budget, unit="B"),
        Field(name="bytes_per_block", value=s.bytes_per_block, unit="B"),
        Field(name="num_gpu_blocks", value=pl.num_gpu_blocks, changed=True),
    )
    if pl.failure == "no_kv_memory":
        text = msg(
            "After weights, activations and reserve nothing is left for the KV cache ({kv}). "
            "vLLM refuses to start: no available memory for the cache blocks. Raise "
            "gpu_memory_utilization, use more GPUs or smaller weights.",
            kv=gib(s.kv_budget),
        )
        return text, src.CHECK_ENOUGH, fields, "refused"
    if pl.failure == "max_model_len":
        text = msg(
            "One request of max_model_len ({mml}) tokens needs {need} of KV cache, more than "
            "the {kv} available. vLLM refuses to start and estimates the longest max_model_len "
            "that fits: {est}. Lower max_model_len, raise gpu_memory_utilization or add GPUs.",
            mml=num(p.max_model_len),
            need=gib(pl.needed_bytes),
            kv=gib(s.kv_budget - s.bytes_per_block),
            est=num(pl.estimated_max_len),
        )
        return text, src.CHECK_ENOUGH, fields, "refused"
    text = msg(
        "num_gpu_blocks = {kv} ÷ {bpb} bytes = {blocks} blocks of {bs} tokens (block 0 is the "
        "null block the pool holds back).",
        kv=num(s.kv_budget),
        bpb=num(s.bytes_per_block),
        blocks=num(pl.num_gpu_blocks),
        bs=p.block_size,
    )
    if p.pipeline_parallel_size > 1:
        text = text + msg(
            " Every pipeline stage computes its own; vLLM keeps the smallest (stage {stage}).",
            stage=s.index,
        )
    return text, src.CONFIG_FROM_GROUPS, fields, "ok"


def _concurrency(pl: Plan) -> Step:
    p = pl.params
    fields = (
        Field(name="blocks_per_request", value=pl.blocks_per_request),
        Field(name="max_concurrency", value=round(pl.max_concurrency, 2), changed=True),
    )
    text = msg(
        "A request of max_model_len ({mml}) tokens takes {per} blocks, so {blocks} ÷ {per} = "
        "{conc}: vLLM logs “Maximum concurrency for {mml} tokens per request: {conc}x”.",
        mml=num(p.max_model_len),
        per=num(pl.blocks_per_request),
        blocks=num(pl.num_gpu_blocks),
        conc=f"{pl.max_concurrency:.2f}",
    )
    if pl.max_concurrency < p.max_num_seqs:
        text = text + msg(
            " Fewer than max_num_seqs ({seqs}) such requests fit; shorter ones share the blocks.",
            seqs=num(p.max_num_seqs),
        )
    return text, src.MAX_CONCURRENCY, fields, "ok"


def _decode(pl: Plan) -> Step:
    p, st = pl.params, pl.step
    text = msg(
        "Decode estimate: a step reads this GPU's {w} of active weights at {bw} TB/s: {one} ms "
        "for one request at max_model_len. A batch of {b} such requests also reads all their KV "
        "cache: {full} ms per step, {tps} tokens/s. Tensor parallel all-reduces add {ar} ms.",
        w=gib(st.weights_read_bytes),
        bw=f"{p.gpu.hbm_bytes_per_s / 1e12:.2f}",
        one=ms(st.decode_one_s),
        b=st.batch,
        full=ms(st.decode_full_s),
        tps=num(int(st.batch / st.decode_full_s)),
        ar=ms(st.allreduce_s),
    )
    fields = (
        Field(name="decode_step_ms", value=round(st.decode_one_s * 1e3, 2), changed=True),
        Field(name="batch", value=st.batch),
        Field(name="batch_step_ms", value=round(st.decode_full_s * 1e3, 2)),
    )
    return text, None, fields, "estimate"


def _prefill(pl: Plan) -> Step:
    p, st = pl.params, pl.step
    text = msg(
        "Prefill estimate: {tokens} tokens × 2 FLOPs × {params} billion active parameters per "
        "GPU at {mfu} of {flops} TFLOP/s ≈ {t} ms per full step.",
        tokens=num(p.max_num_batched_tokens),
        params=f"{p.model.active_params / p.tensor_parallel_size / 1e9:.2f}",
        mfu=MFU,
        flops=f"{st.compute_flops / 1e12:.0f}",
        t=ms(st.prefill_s),
    )
    fields = (Field(name="prefill_step_ms", value=round(st.prefill_s * 1e3, 2), changed=True),)
    return text, None, fields, "estimate"


def _verdict(pl: Plan) -> Step:
    p = pl.params
    text = msg(
        "It fits: {blocks} blocks of {bs} tokens ({tokens} tokens of KV cache), room for "
        "{conc} requests of max_model_len at once. Open the scheduler with this deployment to "
        "watch them share the blocks.",
        blocks=num(pl.num_gpu_blocks),
        bs=p.block_size,
        tokens=num(pl.num_gpu_blocks * p.block_size),
        conc=f"{pl.max_concurrency:.2f}",
    )
    fields = (
        Field(name="num_gpu_blocks", value=pl.num_gpu_blocks),
        Field(name="max_concurrency", value=round(pl.max_concurrency, 2)),
    )
    return text, src.CONFIGS, fields, "fits"


BUILDERS = {
    "parallel": _parallel,
    "weights": _weights,
    "activation": _activation,
    "reserve": _reserve,
    "budget": _budget,
    "page": _page,
    "block": _block,
    "blocks": _blocks,
    "concurrency": _concurrency,
    "decode": _decode,
    "prefill": _prefill,
    "verdict": _verdict,
}


def frames(pl: Plan) -> tuple[Frame[DeployState], ...]:
    out: list[Frame[DeployState]] = []
    for i, step in enumerate(STEPS):
        text, source, fields, result = BUILDERS[step](pl)
        refused = result == "refused"
        out.append(
            Frame(
                index=i,
                op=step,
                result=result,
                narration=text,
                source=source,
                state=state(pl, step, i),
                fields=fields,
                mark="refused" if refused else ("fits" if result == "fits" else None),
            )
        )
        if refused:
            break
    return tuple(out)
